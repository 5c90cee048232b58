"""What the command says: summaries that count right, fixable findings marked and summed up as in ruff,
`--diff` explaining a zero, progress and colour only where they belong, formats honoured or refused,
rule names wherever codes go, and a cache in the project root."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import perflint.cli as cli
import perflint.rule as rule_module
from perflint.cli import main
from perflint.rule import all_rules
from tests.conftest import SYNC_LOOP
from tests.test_fix import ToCuda

ROOT = Path(__file__).resolve().parents[1]
SAFE = "import torch\ny = x.cuda()\n"  # tests/test_fix.py's ToCuda (PFL990): a safe fix, whatever the real rules do


@pytest.fixture
def project(project, monkeypatch):
    monkeypatch.setattr(rule_module, "_registry", {**all_rules(), "PFL990": ToCuda})
    return project


def run(capsys, *argv):
    code = main(["--no-cache", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_summary_counts_the_files_with_findings_and_says_file_once(project, capsys):
    (project / "a.py").write_text("".join(SYNC_LOOP.replace("def train", f"def train{i}") for i in range(5)))
    for i in range(4):
        (project / f"clean{i}.py").write_text("x = 1\n")
    _, out, _ = run(capsys)
    assert "Found 5 findings in 1 of 5 files." in out
    _, out, _ = run(capsys, "clean0.py")
    assert out.strip() == "All clear: 1 file checked."


def test_fixable_findings_are_marked_and_summed_up(project, capsys):
    (project / "a.py").write_text(SAFE + SYNC_LOOP)
    _, out, _ = run(capsys)
    assert re.search(r"a.py:2:7: PFL990 \[\*\] ", out) and re.search(r"a.py:\d+:18: PFL101 `", out)
    assert "[*] 1 fixable with `perflint --fix`." in out
    (project / "a.py").write_text(SYNC_LOOP)
    _, out, _ = run(capsys)
    assert "[*]" not in out and "fixable" not in out


def test_unsafe_fixes_are_counted_apart_unless_asked_for(project, capsys, monkeypatch):
    from perflint.rule import Finding, Fix
    from perflint.runner import Run

    fix = Fix("unsafe", "m")
    findings = [Finding("a.py", 1, 1, 1, 2, "PFL203", "n", "m", fix=fix), Finding("a.py", 2, 1, 2, 2, "PFL101", "n", "m")]
    monkeypatch.setattr("perflint.runner.lint_paths", lambda *a, **k: Run(findings, {"a.py": None}))
    (project / "a.py").write_text("x = 1\n")
    _, out, _ = run(capsys)
    assert "[*]" not in out and "1 unsafe fix can be applied with `--unsafe-fixes`." in out
    _, out, _ = run(capsys, "--unsafe-fixes")
    assert "a.py:1:1: PFL203 [*] m" in out and "[*] 1 fixable with `perflint --fix --unsafe-fixes`." in out


def test_diff_says_why_it_would_fix_nothing(project, capsys):
    (project / "a.py").write_text(SYNC_LOOP)
    code, out, err = run(capsys, "--diff")
    assert code == 0 and out == "" and err.strip() == "Would fix 0 findings. 1 finding without an automatic fix."
    (project / "a.py").write_text("x = 1\n")
    assert run(capsys, "--diff")[2].strip() == "Would fix 0 findings. Nothing was found."


def test_progress_only_on_a_terminal_and_only_for_long_runs(project, capsys, monkeypatch):
    (project / "a.py").write_text(SYNC_LOOP)
    run(capsys)
    assert "files" not in capsys.readouterr().err
    class StartedLongAgo(cli._Progress):
        def __init__(self):
            super().__init__()
            self.start -= 5

    monkeypatch.setattr(cli, "_Progress", StartedLongAgo)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    _, _, err = run(capsys)
    assert "\rperflint: 1/1 files" in err and err.endswith("\r\033[K")
    _, _, err = run(capsys, "-q")
    assert "files" not in err


def test_colour_only_on_a_terminal_and_never_with_no_color(project, capsys, monkeypatch):
    (project / "a.py").write_text(SYNC_LOOP)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert "\033[" in run(capsys)[1]
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\033[" not in run(capsys)[1]


def test_statistics_follow_the_output_format(project, capsys):
    (project / "a.py").write_text(SAFE + SYNC_LOOP)
    code, out, _ = run(capsys, "--statistics", "--output-format", "json")
    assert code == 1 and json.loads(out) == [
        {"code": "PFL101", "name": "item-in-loop", "count": 1, "fixable": 0},
        {"code": "PFL990", "name": "test-to-cuda", "count": 1, "fixable": 1}]
    code, _, err = run(capsys, "--statistics", "--output-format", "sarif")
    assert code == 2 and "--statistics prints text or json" in err


def test_diff_refuses_a_format_it_cannot_honour(project, capsys):
    (project / "a.py").write_text(SAFE)
    code, out, err = run(capsys, "--diff", "--output-format", "json")
    assert code == 2 and out == "" and "--diff prints a patch" in err and len(err.splitlines()) == 1


def test_rule_names_work_where_codes_do(project, capsys):
    (project / "a.py").write_text(SAFE + SYNC_LOOP)
    code, out, _ = run(capsys, "--explain", "item-in-loop")
    assert code == 0 and out.startswith("# PFL101 item-in-loop")
    _, out, _ = run(capsys, "-q", "--select", "item-in-loop")
    assert "PFL101" in out and "PFL990" not in out
    _, out, _ = run(capsys, "-q", "--ignore", "item-in-loop,test-to-cuda")
    assert out == ""
    (project / "pyproject.toml").write_text('[tool.perflint]\nper-file-ignores = {"a.py" = ["item-in-loop"]}\n')
    _, out, _ = run(capsys, "-q")
    assert "PFL101" not in out and "PFL990" in out


def test_usage_line_names_the_trace_subcommand(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    usage = capsys.readouterr().out.split("\n\n")[0]
    assert "perflint [OPTIONS] [PATH ...]" in usage and "perflint trace" in usage


def test_the_cache_lives_in_the_project_root(tmp_path, monkeypatch, capsys):
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    (project / "src" / "a.py").write_text(SYNC_LOOP)
    monkeypatch.chdir(project / "src")
    main(["."])
    assert (project / ".perflint_cache").is_dir() and not (project / "src" / ".perflint_cache").exists()
    other = tmp_path / "other"
    (other / "code").mkdir(parents=True)
    (other / "pyproject.toml").write_text("[tool.perflint]\n")
    (other / "code" / "b.py").write_text(SYNC_LOOP)
    monkeypatch.chdir(tmp_path)
    main([str(other / "code")])  # linting a project from outside it: its settings, its cache
    assert (other / ".perflint_cache").is_dir() and not (tmp_path / ".perflint_cache").exists()
    capsys.readouterr()


def test_docs_cite_no_absolute_paths_of_the_machine_they_were_written_on():
    texts = [ROOT / "README.md", *ROOT.glob("docs/*.md"), *ROOT.glob("rules/**/README.md"),
             *ROOT.glob("perflint/rules/**/*.py")]
    # The folders this checkout and its user live in, whatever the machine: a doc must not name them.
    local = sorted({str(ROOT.resolve().parent) + os.sep, str(Path.home()) + os.sep} - {os.sep})
    offenders = [str(p.relative_to(ROOT)) for p in texts if any(d in p.read_text() for d in local)]
    assert offenders == []


def test_readme_says_how_to_run_the_tests_that_need_recorded_traces():
    readme = (ROOT / "README.md").read_text()
    assert "PERFLINT_TRACES" in readme.split("Set up and run the tests")[1].split("## ")[0]


def test_explain_works_from_an_installed_wheel(tmp_path):
    """The measured effect comes from package data, not from a source checkout: build the wheel, install it
    (no dependencies: libcst and tabulate come from this environment) into a fresh venv, and ask from
    outside the checkout."""
    source = tmp_path / "src"
    subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--", "pyproject.toml", "README.md", "perflint",
                    "pytest_perf"], check=True, capture_output=True)
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard", "-z", "--",
                            "pyproject.toml", "README.md", "perflint", "pytest_perf"],
                           check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, files):
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((ROOT / name).read_bytes())
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp_path / "dist"), str(source)], check=True, capture_output=True)
    (wheel,) = (tmp_path / "dist").glob("torch_perflint-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    import libcst
    import tabulate

    deps = {str(Path(libcst.__file__).parents[1]), str(Path(tabulate.__file__).parent)}
    Path(site, "deps.pth").write_text("\n".join(sorted(deps)) + "\n")  # the dependencies, not this checkout
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
                    "-q", str(wheel)], check=True, capture_output=True)
    r = subprocess.run([str(venv / "bin" / "perflint"), "--explain", "PFL101"], cwd=tmp_path, capture_output=True,
                       text=True, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    where = subprocess.run([str(python), "-c", "import perflint; print(perflint.__file__)"], cwd=tmp_path,
                           capture_output=True, text=True).stdout
    assert where.startswith(site), where  # the wheel's copy, not this checkout
    assert r.returncode == 0 and "## Measured effect" in r.stdout
    assert "not measured" not in r.stdout and "syncs:" in r.stdout.split("## Measured effect")[1]
