"""Bad input never crashes, hangs or misleads the linter: one bad file costs only itself, special files are
never read, discovery trouble is a notice, a bad cache is rebuilt, `--fix` respects what it cannot
safely write, and nothing ends in a traceback.

Tests that could take down or hang the test process on a broken build run perflint in a subprocess with
a timeout. Tests run as root here, where permission bits do not stop reading: an unreadable folder is
simulated by making `os.scandir` and `os.stat` raise PermissionError for it.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

import perflint.fix as fix_module
import perflint.rule as rule_module
from perflint.cli import main
from perflint.rule import all_rules
from tests.conftest import SYNC_LOOP
from tests.test_fix import ToCuda

# As limits.py and config.py set them; written out so that this file also runs (and fails) on a perflint
# without them.
MAX_DEPTH = 1000
DEFAULT_MAX_FILE_SIZE = 1024 * 1024

ROOT = Path(__file__).resolve().parents[1]
FIXABLE = "import torch\ny = x.cuda()\n"  # PFL990 (tests/test_fix.py's ToCuda): a safe fix, whatever the real rules do


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def perflint(*argv, cwd, timeout=120, **kwargs):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "perflint", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env, **kwargs)


def no_traceback(text: str) -> bool:
    return "Traceback" not in text and "Error:" not in text.replace("perflint: error:", "")


# ---- a file that crashes or exhausts the parser -----------------------------------------------------------
DEEP = {  # each imports torch: perflint parses only PyTorch code
    "sum": "x = " + " + ".join(["a"] * 7500) + "\n",  # valid Python; libcst segfaults after ~22 s
    "calls": "x = " + "f(" * 2000 + ")" * 2000 + "\n",  # libcst segfaults in 0.4 s
    "attributes": "x = a" + ".b" * (MAX_DEPTH + 5) + "\n",
    "methods": "x = a" + ".f()" * (MAX_DEPTH // 2 + 5) + "\n",
    "nots": "x = " + "not " * (MAX_DEPTH + 5) + "a\n",
    "ands": "x = " + " and ".join(["a"] * (MAX_DEPTH + 5)) + "\n",
    "elifs": "if a:\n    pass\n" + "elif a:\n    pass\n" * (MAX_DEPTH + 5),
    "across_blank_lines": "x = (a\n\n" + "".join("  + a\n\n" for _ in range(MAX_DEPTH + 5)) + ")\n",
}


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_file_that_would_crash_the_parser_is_pfl001_and_every_other_file_is_reported(tmp_path, jobs):
    for name, source in DEEP.items():
        (tmp_path / f"deep_{name}.py").write_text("import torch\n" + source)
    for i in range(3):
        (tmp_path / f"ok{i}.py").write_text(SYNC_LOOP)
    r = perflint("--no-cache", "--jobs", jobs, ".", cwd=tmp_path)
    assert r.returncode == 1 and no_traceback(r.stderr), r.stderr
    for name in DEEP:
        assert f"deep_{name}.py:" in r.stdout and "PFL001 cannot parse" in r.stdout.split(f"deep_{name}.py:")[1]
    assert all(f"ok{i}.py:7:18: PFL101" in r.stdout for i in range(3))


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_worker_that_dies_costs_only_its_file(tmp_path, jobs):
    """The backstop behind the depth guard: with the guard switched off, libcst really segfaults on 2,000
    nested calls; the worker that dies is replaced and the other files are still linted."""
    (tmp_path / "crash.py").write_text("import torch\n" + DEEP["calls"])
    for i in range(4):
        (tmp_path / f"ok{i}.py").write_text(SYNC_LOOP)
    script = ("import sys, perflint.engine as e; e.too_deep = lambda text: None; from perflint.cli import main; "
              f"sys.exit(main(['--no-cache', '--jobs', '{jobs}', '.']))")
    r = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 1 and no_traceback(r.stderr), r.stderr
    assert "crash.py:1:1: PFL001 cannot analyse: the worker process linting it was killed by SIGSEGV" in r.stdout
    assert all(f"ok{i}.py:7:18: PFL101" in r.stdout for i in range(4))


def test_the_depth_guard_lets_real_code_through_and_stops_at_max_depth():
    from perflint.limits import MAX_DEPTH as limit, too_deep

    assert limit == MAX_DEPTH
    for path in [*ROOT.glob("perflint/**/*.py"), *ROOT.glob("examples/*.py"), *ROOT.glob("fixtures/**/*.py")]:
        assert too_deep(path.read_text(encoding="utf-8", errors="replace")) is None, path
    assert too_deep("x = " + " + ".join(["a"] * (MAX_DEPTH - 10)) + "\n") is None
    assert too_deep("x = " + " + ".join(["a"] * (MAX_DEPTH + 10)) + "\n")[1].startswith("nested more than")
    big_flat_table = "T = [\n" + "".join(f"    ({i}, -{i}.5, 'n{i}', f(x)),\n" for i in range(5000)) + "]\n"
    assert too_deep(big_flat_table) is None  # flagged by the cheap bound, cleared by the exact depth


# ---- special files ----------------------------------------------------------------------------------------
def _attention_layers(n: int) -> str:
    """n attention methods in the shape of a Hugging Face model file (Reformer's `_attend`): two index
    tensors bound in four branches, each from the other or from helpers whose results depend on their
    callers' arguments, chained through `forward`."""
    lines = ["import torch", "", "class Attention(torch.nn.Module):",
             "    def split(self, x, dim, size):", "        return x.reshape(x.shape[:dim] + (size, -1))",
             "    def adjacent(self, x, before, after):", "        if before == 0 and after == 0:",
             "            return x", "        return torch.cat([x.roll(1, 2), x], dim=3)"]
    for i in range(n):
        lines += [f"    def attend{i}(self, q, k, v, idx, standard, cached):",
                  "        if not standard:", "            k = self.adjacent(k, 1, 0)",
                  "            v = self.adjacent(v, 1, 0)", "        dots = torch.matmul(q, k.transpose(-1, -2))",
                  "        if not standard:", "            qi = self.split(idx, -1, 4)",
                  "            ki = self.adjacent(qi, 1, 0)", "        elif cached and dots.ndim > 4:",
                  "            ki = idx", "            qi = ki.new_ones(ki.shape[:-1] + (1,)) * ki.max()",
                  "        elif cached:", "            qi = (dots.shape[-1] - 1) * torch.ones_like(dots)[:, :, :, -1]",
                  "            ki = torch.arange(dots.shape[-1], device=dots.device).expand(qi.shape[:2] + (-1,))",
                  "        else:", "            qi = ki = idx",
                  "        mask = torch.ne(qi.unsqueeze(-1), ki.unsqueeze(-2)).to(qi.device)",
                  "        dots = torch.where(mask, dots, -1e4)",
                  "        return torch.matmul(dots.softmax(-1), v), qi, ki"]
    lines += ["    def forward(self, q, k, v, idx):", "        out = q"]
    for i in range(n):
        lines += [f"        out, idx, k = self.attend{i}(out, k, v, idx, False, True)",
                  "        v = self.adjacent(out, 0, 0)"]
    return "\n".join(lines + ["        return out", ""])


def test_values_that_refer_to_each_other_are_answered_in_polynomial_work(monkeypatch):
    """Where value questions form cycles (each index tensor bound from the other, helpers whose results depend
    on their callers), the answers under a cut cycle were recomputed at every turn: 1,107 questions for one
    such method, 179,579 for two, minutes for Reformer's 2,600-line file (a worker timeout, PFL001). Within
    one outermost question they are now kept: the work grows with the square of the methods."""
    from perflint.engine import Linter
    from perflint.model.values import Values

    asked = []
    real = Values._answer
    monkeypatch.setattr(Values, "_answer", lambda self, *a: asked.append(1) or real(self, *a))
    linter = Linter(r for r in all_rules().values() if r.default)
    counts = []
    for n in (2, 4):
        asked.clear()
        linter.lint_source(_attention_layers(n), "attention.py")
        counts.append(len(asked))
    assert counts[0] < 10_000 and counts[1] < 5 * counts[0]


def test_a_global_statement_at_module_level_is_a_no_op_not_an_endless_lookup():
    """facebookresearch/msn's logistic_eval.py writes `global args` under `if __name__ == "__main__":`. The
    module scope then listed `args` as global, and looking the name up from the module scope went back to the
    module scope forever: the worker timed out after 60 s (PFL001). The lookup must end, and find the loop."""
    from perflint.engine import Linter

    src = """
import torch
parser = None

def main(device):
    loader = torch.utils.data.DataLoader([1])
    for x in loader:
        x = x.to(device)
    torch.zeros(1, device=args.device)

if __name__ == "__main__":
    global args
    args = parser.parse_args()
    main(args.device)
"""
    linter = Linter(r for r in all_rules().values() if r.default)
    found = [(f.line, f.code) for f in linter.lint_source(src, "logistic_eval.py")]
    assert (8, "PFL203") in found


def test_a_buffer_whose_name_is_no_identifier_is_read_not_a_crash():
    """FastVideo's LTX-2 VAE registers `self.register_buffer("std-of-means", ...)` and reads it back with
    `get_buffer`: the program model made `self.std-of-means` of it, which libcst refuses (CSTValidationError),
    and the file was left unanalysed. Such a buffer is simply not an attribute."""
    from perflint.engine import Linter

    src = """
import torch

class Vae(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_buffer("std-of-means", torch.ones(n))
        self.register_buffer("scale", torch.ones(n))

    def forward(self, x):
        return x * self.get_buffer("std-of-means") * self.scale
"""
    linter = Linter(all_rules().values())
    assert isinstance(linter.lint_source(src, "vae.py"), list)


def test_a_fifo_in_a_folder_is_skipped_with_a_notice_not_read(tmp_path):
    (tmp_path / "a.py").write_text(SYNC_LOOP)
    os.mkfifo(tmp_path / "x.py")
    os.mkfifo(tmp_path / "nb.ipynb")
    r = perflint("--no-cache", ".", cwd=tmp_path, timeout=60)
    assert r.returncode == 1 and "a.py:7:18: PFL101" in r.stdout
    assert "perflint: x.py: skipped: not a regular file" in r.stderr and no_traceback(r.stderr)


def test_a_special_file_named_explicitly_is_a_one_line_error(tmp_path):
    os.mkfifo(tmp_path / "x.py")
    r = perflint("x.py", cwd=tmp_path, timeout=60)
    assert r.returncode == 2 and r.stderr.strip() == "perflint: error: x.py: not a regular file or folder"
    r = perflint("/dev/null", cwd=tmp_path, timeout=60)
    assert r.returncode == 2 and "not a regular file" in r.stderr


def test_a_folder_named_like_a_file_is_walked(project, capsys):
    (project / "pkg.py").mkdir()
    (project / "pkg.py" / "inner.py").write_text(SYNC_LOOP)
    code, out, _ = run(capsys, "--no-cache", "pkg.py")
    assert code == 1 and "pkg.py/inner.py:7:18: PFL101" in out


def test_reading_refuses_a_fifo_that_took_a_files_place(tmp_path):
    import perflint.files as files_module

    os.mkfifo(tmp_path / "x.py")
    start = time.monotonic()
    with pytest.raises(OSError, match="not a regular file"):
        files_module.read(tmp_path / "x.py")
    assert time.monotonic() - start < 5


# ---- discovery ---------------------------------------------------------------------------------------------
def test_a_self_looping_symlink_is_a_finding_not_a_traceback(project, capsys):
    (project / "a.py").write_text(SYNC_LOOP)
    (project / "loop.py").symlink_to(project / "loop.py")
    (project / "loopdir").symlink_to(project / "loopdir")
    code, out, err = run(capsys, "--no-cache")
    assert code == 1 and "a.py:7:18: PFL101" in out
    assert "loop.py:1:1: PFL001 cannot read: Too many levels of symbolic links" in out


def test_an_unreadable_folder_is_skipped_with_a_notice(project, capsys, monkeypatch):
    """Simulated (root reads anything): listing or stat-ing anything below `locked/` raises PermissionError."""
    (project / "a.py").write_text(SYNC_LOOP)
    (project / "locked").mkdir()
    (project / "locked" / "b.py").write_text(SYNC_LOOP)
    locked = str(project / "locked")
    real_scandir, real_stat = os.scandir, os.stat

    def guarded(real):
        def call(path, *args, **kwargs):
            if os.path.abspath(path).startswith(locked):
                raise PermissionError(13, "Permission denied", str(path))
            return real(path, *args, **kwargs)
        return call

    monkeypatch.setattr(os, "scandir", guarded(real_scandir))
    monkeypatch.setattr(os, "stat", guarded(real_stat))
    code, out, err = run(capsys, "--no-cache", "--jobs", "1")
    assert code == 1 and "a.py:7:18: PFL101" in out and "b.py" not in out
    assert "perflint: locked: skipped: Permission denied" in err


# ---- the cache ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("content", [
    "[]", "null", "5", '{"k": 5}',
    "ROWS:[[7, 18]]",  # a short row
    'ROWS:[["a", "b", 5, 7, "PFL101", "item-in-loop", "m", "warning", null, [], [], null]]',  # mistyped
    'ROWS:[[7, 18, 7, 29, "PFL101", "item-in-loop", "m", "warning", {"applicability": 1}, [], [], null]]',
    'ROWS:[[7, 18, 7, 29, "PFL101", "item-in-loop", "m", "warning", null, [], [], "cell 1"]]',
    "ROWS:{}",
    'ENTRY:[]', 'ENTRY:{"findings": []}',  # an entry of the old shape (a list), one without its calls out
    'CALLS:[[0, "m", null, [], [], ["f", "g", 1]]]',  # a call out whose place is short
    'CALLS:[[0, "m", 5, [], [], ["f", "g", 1, 0]]]',  # a mistyped imported name
])
def test_a_cache_of_the_wrong_shape_is_ignored_and_rebuilt(project, capsys, content):
    (project / "a.py").write_text(SYNC_LOOP)
    first = run(capsys)
    (cache_file,) = (project / ".perflint_cache").glob("findings-*.json")
    kind, _, value = content.partition(":")
    if kind in ("ROWS", "ENTRY", "CALLS"):
        entries = json.loads(cache_file.read_text())
        value = json.loads(value)
        content = json.dumps({key: {"findings": value, "calls": []} if kind == "ROWS" else value
                              if kind == "ENTRY" else {**entry, "calls": value} for key, entry in entries.items()})
    cache_file.write_text(content)
    assert run(capsys) == first
    assert run(capsys) == first  # and it was rebuilt right
    (entry,) = [v for v in json.loads(cache_file.read_text()).values() if isinstance(v, dict) and v["findings"]]
    assert entry["findings"][0][:2] == [7, 18]


# ---- --fix and what the user owns --------------------------------------------------------------------------
@pytest.fixture
def fixing(project, monkeypatch):
    monkeypatch.setattr(rule_module, "_registry", {**all_rules(), "PFL990": ToCuda})
    return project


def fix(capsys, *argv):
    return run(capsys, "--no-cache", "--fix", "--select", "PFL990", *argv)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_fix_keeps_owner_and_group(fixing, capsys):
    project = fixing
    path = project / "a.py"
    path.write_text(FIXABLE)
    os.chown(path, 1234, 5678)
    fix(capsys)
    assert '.to("cuda")' in path.read_text()
    assert (path.stat().st_uid, path.stat().st_gid) == (1234, 5678)


def test_fix_does_not_split_hard_links(fixing, capsys):
    project = fixing
    path = project / "a.py"
    path.write_text(FIXABLE)
    os.link(path, project / "b.py")
    code, out, err = fix(capsys, "a.py")
    assert "a.py: not fixed: it has 2 hard links" in err
    assert path.read_text() == FIXABLE == (project / "b.py").read_text()
    assert path.stat().st_ino == (project / "b.py").stat().st_ino and code == 1


def test_fix_does_not_rewrite_a_read_only_file(fixing, capsys):
    project = fixing
    path = project / "a.py"
    path.write_text(FIXABLE)
    path.chmod(0o444)
    code, out, err = fix(capsys)
    assert path.read_text() == FIXABLE and stat.S_IMODE(path.stat().st_mode) == 0o444
    assert "a.py: not fixed: it is read-only" in err and code == 1


def test_fix_removes_leftovers_of_a_killed_run_but_not_a_live_ones(fixing, capsys):
    project = fixing
    path = project / "a.py"
    path.write_text(FIXABLE)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    leftover = project / f".a.py.{dead.pid}.x1y2z3.perflint-tmp"
    leftover.write_text("half")
    live = project / f".a.py.{os.getppid()}.a1b2c3.perflint-tmp"
    live.write_text("in progress")
    fix(capsys)
    assert '.to("cuda")' in path.read_text() and not leftover.exists() and live.exists()


def test_fix_leaves_a_file_that_changes_under_it(fixing, capsys, monkeypatch):
    project = fixing
    path = project / "a.py"
    path.write_text(FIXABLE)
    real = fix_module.fix_source

    def edit_meanwhile(*args, **kwargs):
        path.write_text(FIXABLE + "y = 1  # typed by the user meanwhile\n")
        return real(*args, **kwargs)

    monkeypatch.setattr(fix_module, "fix_source", edit_meanwhile)
    code, out, err = fix(capsys)
    assert path.read_text().endswith("meanwhile\n") and ".cuda()" in path.read_text()
    assert "a.py: not fixed: it changed" in err


# ---- small tracebacks --------------------------------------------------------------------------------------
@pytest.mark.parametrize("content,message", [
    ("[tool]\nperflint = 3\n", "[tool.perflint] must be a table"),
    ("tool = 3\n", "[tool] must be a table"),
    ('[tool.perflint]\nmax-file-size = "big"\n', "max-file-size must be"),
])
def test_config_of_the_wrong_shape_is_a_one_line_error(project, capsys, content, message):
    (project / "pyproject.toml").write_text(content)
    (project / "a.py").write_text(SYNC_LOOP)
    code, out, err = run(capsys, "--no-cache")
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_output_file_in_a_missing_folder_is_a_one_line_error(project, capsys):
    (project / "a.py").write_text(SYNC_LOOP)
    code, out, err = run(capsys, "--no-cache", "-o", "missing/report.json")
    assert code == 2 and "no such folder" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("argv", [["--no-cache", "."], ["--explain", "PFL101"], ["--list-rules"]])
def test_a_closed_pipe_ends_quietly(tmp_path, argv):
    (tmp_path / "a.py").write_text("import torch\nfor x in xs:\n    t = torch.ones(3).to('cuda')\n" * 3000)
    proc = subprocess.Popen([sys.executable, "-m", "perflint", *argv], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    proc.stdout.close()  # as `| head` does once it has what it wants
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and err == ""


def test_ctrl_c_with_workers_prints_one_line(tmp_path):
    """One worker still parsing a big file, the other idle and waiting for work: a terminal's Ctrl-C reaches
    all three processes. (With a concurrent.futures pool, the idle worker printed a KeyboardInterrupt
    traceback.)"""
    source = (ROOT / "examples" / "train_antipattern.py").read_text()
    (tmp_path / "big.py").write_text("\n".join(source.replace("def ", f"def v{i}_") for i in range(250)))
    (tmp_path / "small.py").write_text(source)
    proc = subprocess.Popen([sys.executable, "-m", "perflint", "--no-cache", "--jobs", "2", "."], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    time.sleep(1.5)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err.decode().strip() == "perflint: interrupted"


# ---- huge files ---------------------------------------------------------------------------------------------
def test_a_file_over_max_file_size_is_skipped_with_a_notice(project, capsys):
    from perflint.config import DEFAULT_MAX_FILE_SIZE as default

    assert default == DEFAULT_MAX_FILE_SIZE
    (project / "a.py").write_text(SYNC_LOOP)
    (project / "generated.py").write_text("T = [" + "1, " * (DEFAULT_MAX_FILE_SIZE // 3 + 10) + "]\n")
    code, out, err = run(capsys, "--no-cache")
    assert code == 1 and "a.py:7:18: PFL101" in out and "generated.py" not in out
    assert "perflint: generated.py: skipped: 1.0 MiB of code is over max-file-size (1.0 MiB)" in err
    assert "Found 1 finding in 1 file. 1 skipped (see above)." in out


def test_max_file_size_is_configurable(project, capsys):
    (project / "pyproject.toml").write_text('[tool.perflint]\nmax-file-size = "100 B"\n')
    (project / "a.py").write_text(SYNC_LOOP)
    code, out, err = run(capsys, "--no-cache")
    assert code == 0 and "a.py: skipped" in err and "All clear: 0 files checked. 1 skipped" in out
    (project / "pyproject.toml").write_text("[tool.perflint]\nmax-file-size = 0\n")  # no limit
    assert run(capsys, "--no-cache")[0] == 1


# ---- inputs of every odd kind --------------------------------------------------------------------------------
ODD = {
    "empty.py": b"",
    "bom.py": b"\xef\xbb\xbfimport torch\n",
    "crlf.py": SYNC_LOOP.replace("\n", "\r\n").encode(),
    "nul.py": b"import torch\nx = 1\x00\n",
    "latin1_no_cookie.py": b"# caf\xe9\nimport torch\n",
    "bad_cookie.py": b"# -*- coding: klingon -*-\nimport torch\n",
    "utf16.py": "import torch\n".encode("utf-16"),
    "huge_line.py": b"x = '" + b"a" * 2_000_000 + b"'\n",
    "only_comments.py": b"# nothing\n" * 10,
    "tabs_spaces.py": b"import torch\nif a:\n\tx = 1\n        y = 2\n",
    "binary.py": bytes(range(256)) * 10,  # no torch import to be seen: not PyTorch code, not parsed
    "not_json.ipynb": b"{cells: oops",
    "wrong_shape.ipynb": b'{"cells": 5}',
    "empty.ipynb": b"",
}


def test_odd_inputs_are_findings_or_clean_never_tracebacks(project, capsys):
    for name, data in ODD.items():
        (project / name).write_bytes(data)
    (project / "good.py").write_text(SYNC_LOOP)
    code, out, err = run(capsys, "--no-cache", "--jobs", "2")
    assert code == 1 and no_traceback(err) and "good.py:7:18: PFL101" in out
    broken = {line.split(":")[0] for line in out.splitlines() if "PFL001" in line}
    assert broken == {"nul.py", "bad_cookie.py", "latin1_no_cookie.py", "tabs_spaces.py", "not_json.ipynb",
                      "wrong_shape.ipynb", "empty.ipynb"}, out
    assert "perflint: huge_line.py: skipped: 1.9 MiB of code is over max-file-size" in err


def test_a_file_name_with_a_newline_cannot_pass_for_another_finding(project, capsys):
    (project / "x\ny.py:1:1: PFL101 fake.py").write_text(SYNC_LOOP)
    code, out, _ = run(capsys, "--no-cache")
    assert out.splitlines()[0].startswith("x\\x0ay.py:1:1: PFL101 fake.py:7:18: PFL101")


def test_concurrent_runs_share_a_cache_safely(tmp_path):
    for i in range(30):
        (tmp_path / f"m{i}.py").write_text(SYNC_LOOP.replace("def train", f"def train{i}"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-m", "perflint", "--jobs", "1", "."], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for _ in range(3)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert {o for o, _ in outs} == {outs[0][0]} and outs[0][0].count(b"PFL101") == 30
    assert all(e == b"" for _, e in outs) and perflint(".", cwd=tmp_path).stdout.encode() == outs[0][0]


def test_a_file_that_takes_too_long_is_stopped_and_the_others_are_reported(project, capsys, monkeypatch):
    """`file-timeout` stops a worker stuck on one file (a super-linear analysis, a parser that crawls)."""
    import perflint.runner as runner

    real = runner._lint_one

    def slow_on_one(item):
        if item[0].name == "slow.py":
            time.sleep(60)
        return real(item)

    monkeypatch.setattr(runner, "_lint_one", slow_on_one)
    (project / "pyproject.toml").write_text("[tool.perflint]\nfile-timeout = 1.5\n")
    (project / "slow.py").write_text(SYNC_LOOP)
    for i in range(3):
        (project / f"ok{i}.py").write_text(SYNC_LOOP)
    start = time.monotonic()
    code, out, err = run(capsys, "--no-cache", "--jobs", "2")
    assert time.monotonic() - start < 30 and code == 1
    assert "slow.py:1:1: PFL001 cannot analyse: the worker process linting it took longer than 1.5 s" in out
    assert all(f"ok{i}.py:7:18: PFL101" in out for i in range(3))
