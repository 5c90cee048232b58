"""The autofix machinery (`--fix`, `--diff`, `--unsafe-fixes`): idempotent, parse-checked, conflict-free,
atomic, and leaves everything it does not fix byte for byte as it was.

The machinery is tested with rules defined here (registered only for the test that asks for them), so
it is checked independently of which real rules offer fixes; the real rules with fixes are checked on
their own examples, and everything together on a bundled mini-corpus and, when PERFLINT_CORPUS names a
folder, on a large real one.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import stat
import subprocess
import textwrap
from pathlib import Path

import libcst as cst
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import perflint.fix as fix_module
import perflint.rule as rule_module
from perflint.cli import main
from perflint.engine import Linter
from perflint.cache import digest
from perflint.files import SourceFile
from perflint.fix import apply_edits, fix_source, write_atomically
from perflint.runner import Run
from perflint.rule import Edit, Finding, Fix, Rule, all_rules
from tests.expect import reported_fixtures

MINI_CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "mini_corpus"


# ---- rules that exist only in these tests --------------------------------------------------------------
class ToCuda(Rule):
    """Safe: `x.cuda()` -> `x.to("cuda")`; reported at `cuda`, the fix replaces the whole call (fix_node)."""

    code, name, summary, fix_safety = "PFL990", "test-to-cuda", "test rule: .cuda()", "safe"
    torch_only = False  # the fix machinery under test does not care what the file is

    def visit_Call(self, node: cst.Call, ctx) -> None:
        f = node.func
        if isinstance(f, cst.Attribute) and f.attr.value == "cuda" and not node.args:
            new = node.with_changes(func=f.with_changes(attr=cst.Name("to")),
                                    args=[cst.Arg(cst.SimpleString('"cuda"'))])
            self.report(ctx, f.attr, replacement=new, fix_node=node)


class FlushPrint(Rule):
    """Unsafe: `print(...)` -> `print(..., flush=True)`; keeps the call's own layout and comments."""

    code, name, summary, fix_safety = "PFL991", "test-flush-print", "test rule: print", "unsafe"
    torch_only = False  # the fix machinery under test does not care what the file is

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "print" \
                and not any(a.keyword is not None and a.keyword.value == "flush" for a in node.args):
            flush = cst.Arg(cst.Name("True"), keyword=cst.Name("flush"),
                            equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
            self.report(ctx, node, replacement=node.with_changes(args=[*node.args, flush]))


class DuplicateKeyword(Rule):
    """A broken fix: `dup(...)` or `x.to(...)` gets `a=a, a=a` added, which libcst parses and Python's
    compiler rejects (keyword argument repeated)."""

    code, name, summary, fix_safety = "PFL992", "test-duplicate-keyword", "test rule: broken fix", "safe"
    torch_only = False  # the fix machinery under test does not care what the file is

    def visit_Call(self, node: cst.Call, ctx) -> None:
        f = node.func
        if (isinstance(f, cst.Name) and f.value == "dup") or (isinstance(f, cst.Attribute) and f.attr.value == "to"):
            twice = [cst.Arg(cst.Name("a"), keyword=cst.Name("a")) for _ in range(2)]
            self.report(ctx, node, replacement=node.with_changes(args=[*node.args, *twice]))


class PingPong(Rule):
    """Fixes that undo each other: `ping()` -> `pong()` -> `ping()`; they never settle."""

    code, name, summary, fix_safety = "PFL993", "test-ping-pong", "test rule: cycle", "safe"
    torch_only = False  # the fix machinery under test does not care what the file is

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if isinstance(node.func, cst.Name) and node.func.value in ("ping", "pong"):
            other = "pong" if node.func.value == "ping" else "ping"
            self.report(ctx, node, replacement=node.with_changes(func=cst.Name(other)))


TEST_RULES = {r.code: r for r in (ToCuda, FlushPrint, DuplicateKeyword, PingPong)}


@pytest.fixture
def project(tmp_path, monkeypatch):
    """An empty working directory in which the test rules are registered next to the real ones."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(rule_module, "_registry", {**all_rules(), **TEST_RULES})
    return tmp_path


def run(capsys, *argv):
    code = main(["--no-cache", "--jobs", "1", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def fix(capsys, *argv):
    """--fix with the two well-behaved test rules only (a later --select wins)."""
    return run(capsys, "--select", "PFL990,PFL991", "--fix", *argv)


def compiles(source: bytes) -> bool:
    try:
        compile(source, "<fixed>", "exec", dont_inherit=True)
        return True
    except SyntaxError:
        return False


SCRIPT = textwrap.dedent("""\
    # A training script with comments, odd spacing and blank lines that a fix must not touch.
    import torch   # aligned comment


    def step(model,x ,  y):   # odd spacing
        x = x.cuda()  # move the batch
        y=y.cuda()
        \"\"\"a string with x.cuda() inside stays as it is\"\"\"
        # x.cuda() in a comment stays too
        return model(x) , y
    """)


# ---- the basic properties -------------------------------------------------------------------------------
def test_fix_changes_only_the_fixed_expressions_and_a_second_run_changes_nothing(project, capsys):
    path = project / "train.py"
    path.write_text(SCRIPT)
    code, out, err = fix(capsys)
    fixed = path.read_text()
    assert fixed == SCRIPT.replace("x = x.cuda()", 'x = x.to("cuda")').replace("y=y.cuda()", 'y=y.to("cuda")')
    assert "Fixed 2 findings." in err and code == 0 and "All clear" in out
    assert compiles(path.read_bytes())
    before = path.stat().st_mtime_ns
    code, _, err = fix(capsys)
    assert "Fixed 0 findings." in err and path.read_text() == fixed and path.stat().st_mtime_ns == before


def test_several_fixes_on_one_line_and_across_lines(project, capsys):
    path = project / "a.py"
    path.write_text("a, b = x.cuda(), y.cuda()\nc = [t.cuda() for t in ts]\nd = {k: v.cuda() for k, v in kv}\n")
    _, _, err = fix(capsys)
    assert path.read_text() == ('a, b = x.to("cuda"), y.to("cuda")\nc = [t.to("cuda") for t in ts]\n'
                                'd = {k: v.to("cuda") for k, v in kv}\n')
    assert "Fixed 4 findings." in err


def test_nested_fixes_overlap_one_wins_and_the_other_is_applied_on_the_next_pass(project, capsys):
    path = project / "a.py"
    path.write_text("z = x.cuda().cuda()\nprint(print(1))\n")
    _, _, err = fix(capsys, "--unsafe-fixes")
    assert path.read_text() == 'z = x.to("cuda").to("cuda")\nprint(print(1, flush=True), flush=True)\n'
    assert "Fixed 4 findings." in err


def test_apply_edits_keeps_the_earliest_of_overlapping_edits_and_drops_the_rest():
    def finding(start, end, content, applicability="safe"):
        return Finding("a.py", *start, *end, "PFL990", "t", "m",
                       fix=Fix(applicability, "m", (Edit(content, start, end),)))

    text = "abcdef\nghij\n"
    found = [finding((1, 3), (1, 5), "X"), finding((1, 2), (1, 4), "Y"), finding((1, 5), (2, 2), "Z"),
             finding((2, 4), (2, 5), "W", "unsafe")]
    assert apply_edits(text, found, unsafe=False) == ("aYdZhij\n", 2)
    assert apply_edits(text, found, unsafe=True) == ("aYdZhiW\n", 3)


def test_comments_inside_a_rewritten_multiline_call_are_kept(project, capsys):
    src = "print(\n    'loss',  # the label\n    loss,\n)\nx = 1  # unrelated\n"
    path = project / "a.py"
    path.write_text(src)
    fix(capsys, "--unsafe-fixes")
    assert path.read_text() == "print(\n    'loss',  # the label\n    loss,\nflush=True)\nx = 1  # unrelated\n"


def test_a_multiline_fix_inside_a_block_keeps_its_indentation(project, capsys):
    src = "def f():\n    if a:\n        print(\n            'loss',\n            loss)\n"
    path = project / "a.py"
    path.write_text(src)
    fix(capsys, "--unsafe-fixes")
    assert path.read_text() == src.replace("loss)", "loss, flush=True)")


def test_noqa_line_is_not_fixed(project, capsys):
    path = project / "a.py"
    path.write_text("a = x.cuda()  # noqa: PFL990\nb = y.cuda()\n")
    fix(capsys)
    assert path.read_text() == 'a = x.cuda()  # noqa: PFL990\nb = y.to("cuda")\n'


# ---- safety: never break a file -------------------------------------------------------------------------
def test_file_with_a_syntax_error_is_never_touched(project, capsys):
    src = b"a = x.cuda()\ndef broken(:\n    pass\n"
    path = project / "a.py"
    path.write_bytes(src)
    before = path.stat().st_mtime_ns
    code, out, _ = fix(capsys, "--unsafe-fixes")
    assert code == 1 and "PFL001" in out
    assert path.read_bytes() == src and path.stat().st_mtime_ns == before


def test_a_fix_that_would_not_compile_is_refused(project, capsys):
    src = "dup(1)\nb = y.cuda()\n"
    path = project / "a.py"
    path.write_text(src)
    code, out, _ = fix(capsys, "--select", "PFL990,PFL992")
    assert path.read_text() == src  # both fixes are in the same pass, which is dropped as a whole
    assert code == 1 and "PFL992" in out and "PFL990" in out


def test_a_later_pass_that_would_not_compile_keeps_the_earlier_passes():
    # pass 1 turns .cuda() into .to("cuda"); pass 2 would apply the broken fix to that .to(): dropped
    linter = Linter([ToCuda, DuplicateKeyword])
    assert fix_source("y = x.cuda()\n", "a.py", linter, unsafe=False) == ('y = x.to("cuda")\n', 1)


def test_fixes_that_never_settle_leave_the_file_untouched(project, capsys):
    path = project / "a.py"
    path.write_text("ping()\n")
    _, _, err = fix(capsys, "--select", "PFL993")
    assert path.read_text() == "ping()\n" and "Fixed 0 findings." in err


# ---- what a written file keeps ----------------------------------------------------------------------------
def test_mode_is_kept_and_a_symlink_stays_a_symlink(project, capsys):
    target = project / "real.py"
    target.write_text("a = x.cuda()\n")
    target.chmod(0o751)
    (project / "link.py").symlink_to(target)
    fix(capsys, "link.py")
    assert (project / "link.py").is_symlink() and target.read_text() == 'a = x.to("cuda")\n'
    assert stat.S_IMODE(target.stat().st_mode) == 0o751
    assert not [p for p in project.iterdir() if p.name.endswith(".perflint-tmp")]


@pytest.mark.parametrize("name,raw,expected", [
    ("crlf", b"import torch\r\nprint(\r\n    x.cuda(),\r\n)\r\n# end\r\n",
     b'import torch\r\nprint(\r\n    x.to("cuda"),\r\nflush=True)\r\n# end\r\n'),
    ("latin1", b"# -*- coding: latin-1 -*-\n# caf\xe9\nprint('\xe9t\xe9', x.cuda())\n",
     b"# -*- coding: latin-1 -*-\n# caf\xe9\nprint('\xe9t\xe9', x.to(\"cuda\"), flush=True)\n"),
    ("bom", b"\xef\xbb\xbf# \xc3\xa9\nprint(x.cuda())\n", b'\xef\xbb\xbf# \xc3\xa9\nprint(x.to("cuda"), flush=True)\n'),
    ("formfeed", b"\x0c\nimport torch\n\x0c\nprint(x.cuda())\n",
     b'\x0c\nimport torch\n\x0c\nprint(x.to("cuda"), flush=True)\n'),
    ("unicode_separator_in_string", "s = 'a\u2028b'\nprint(x.cuda())\n".encode(),
     "s = 'a\u2028b'\nprint(x.to(\"cuda\"), flush=True)\n".encode()),
    ("no_final_newline", b"y = 1\nprint(x.cuda())", b'y = 1\nprint(x.to("cuda"), flush=True)'),
    ("tabs_and_cr", b"if a:\r\tprint(x.cuda())\r", b'if a:\r\tprint(x.to("cuda"), flush=True)\r'),
])
def test_encoding_bom_and_newline_style_are_kept(project, capsys, name, raw, expected):
    path = project / f"{name}.py"
    path.write_bytes(raw)
    fix(capsys, "--unsafe-fixes")
    assert path.read_bytes() == expected
    fix(capsys, "--unsafe-fixes")
    assert path.read_bytes() == expected


@pytest.mark.parametrize("failure", [OSError("disk full"), KeyboardInterrupt()])
def test_a_crash_mid_write_leaves_the_original_intact(project, capsys, monkeypatch, failure):
    path = project / "a.py"
    path.write_text("a = x.cuda()\n")
    path.chmod(0o640)

    def crash(*args):
        raise failure

    monkeypatch.setattr(fix_module.os, "replace", crash)
    code, _, err = fix(capsys)
    assert path.read_text() == "a = x.cuda()\n" and stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in project.iterdir()] == ["a.py"]  # no temporary file left behind
    if isinstance(failure, KeyboardInterrupt):
        assert code == 130
    else:
        assert code == 1 and "a.py: not fixed: disk full" in err


def test_write_atomically_replaces_in_one_rename(tmp_path, monkeypatch):
    path = tmp_path / "a.py"
    path.write_bytes(b"old\n")
    renames = []
    real_replace = os.replace
    monkeypatch.setattr(fix_module.os, "replace", lambda a, b: (renames.append((a, b)), real_replace(a, b)))
    write_atomically(path, b"new\n")
    assert path.read_bytes() == b"new\n" and len(renames) == 1
    tmp, dest = renames[0]
    assert Path(tmp).parent == tmp_path and Path(dest) == path.resolve() and not Path(tmp).exists()


def test_a_file_that_cannot_take_the_fix_in_its_encoding_is_left_alone(project, capsys, monkeypatch):
    class ToCafe(ToCuda):
        def visit_Call(self, node, ctx):
            if isinstance(node.func, cst.Name) and node.func.value == "cafe":
                self.report(ctx, node, replacement=node.with_changes(func=cst.Name("caf\u0107")))

    monkeypatch.setitem(rule_module._registry, "PFL990", ToCafe)
    src = b"# -*- coding: latin-1 -*-\ncafe()\n"
    path = project / "a.py"
    path.write_bytes(src)
    code, _, err = fix(capsys)
    assert path.read_bytes() == src and "a.py: not fixed:" in err and code == 1


# ---- --diff, --unsafe-fixes, JSON ---------------------------------------------------------------------------
def test_diff_changes_nothing_and_prints_a_patch_that_git_applies(project, capsys):
    src = SCRIPT + "print('done')"  # no final newline
    (project / "a.py").write_text(src)
    (project / "clean.py").write_text("x = 1\n")
    code, out, err = run(capsys, "--select", "PFL990,PFL991", "--diff", "--unsafe-fixes")
    assert code == 1 and "Would fix 3 findings." in err
    assert (project / "a.py").read_text() == src
    assert out.startswith("--- a/a.py\n+++ b/a.py\n@@ ") and "clean.py" not in out
    assert "\n-    x = x.cuda()  # move the batch\n" in out and "\n+    x = x.to(\"cuda\")  # move the batch\n" in out
    assert out.endswith("+print('done', flush=True)\n\\ No newline at end of file\n")
    subprocess.run(["git", "init", "-q"], check=True)
    subprocess.run(["git", "apply", "-"], input=out, text=True, check=True)
    patched = (project / "a.py").read_text()
    (project / "a.py").write_text(src)
    fix(capsys, "--unsafe-fixes")
    assert (project / "a.py").read_text() == patched


def test_diff_with_nothing_to_fix_exits_0(project, capsys):
    (project / "a.py").write_text("print(1)\n")
    code, out, err = run(capsys, "--select", "PFL990,PFL991", "--diff")  # only an unsafe fix is available
    assert code == 0 and out == "" and "Would fix 0 findings." in err


def test_unsafe_fixes_only_with_the_flag(project, capsys):
    path = project / "a.py"
    path.write_text("print(x.cuda())\n")
    code, out, _ = fix(capsys)
    assert path.read_text() == 'print(x.to("cuda"))\n' and code == 1 and "PFL991" in out
    fix(capsys, "--unsafe-fixes")
    assert path.read_text() == 'print(x.to("cuda"), flush=True)\n'


def test_json_reports_fix_applicability_and_edit_ranges(project, capsys):
    src = "a = 1\nb = (x.cuda(), print(\n  2))\n"
    (project / "a.py").write_text(src)
    _, out, _ = run(capsys, "--select", "PFL990,PFL991", "--output-format", "json")
    by_code = {item["code"]: item for item in json.loads(out)}
    cuda, printed = by_code["PFL990"], by_code["PFL991"]
    assert cuda["fix"]["applicability"] == "safe" and printed["fix"]["applicability"] == "unsafe"
    assert cuda["location"] == {"row": 2, "column": 8}  # the reported node: `cuda`
    (edit,) = cuda["fix"]["edits"]
    assert edit == {"content": 'x.to("cuda")', "location": {"row": 2, "column": 6},
                    "end_location": {"row": 2, "column": 14}}  # the fix node: the whole call
    (edit,) = printed["fix"]["edits"]
    assert (edit["location"], edit["end_location"]) == ({"row": 2, "column": 16}, {"row": 3, "column": 5})
    lines = src.splitlines(keepends=True)
    start = sum(map(len, lines[:1])) + 15
    end = sum(map(len, lines[:2])) + 4
    assert src[:start] + edit["content"] + src[end:] == "a = 1\nb = (x.cuda(), print(\n  2, flush=True))\n"


def test_findings_without_a_fix_have_fix_null(project, capsys):
    (project / "a.py").write_text("import torch\nfor x in loader:\n    model(x.cuda()).item()\n")
    _, out, _ = run(capsys, "--select", "PFL101", "--output-format", "json")
    assert [item["fix"] for item in json.loads(out)] == [None]


def test_per_file_ignored_codes_are_neither_fixed_nor_reported(project):
    src = "a = x.cuda()\nprint(1)\n"
    (project / "a.py").write_text(src)
    linter = Linter([ToCuda, FlushPrint])
    findings = [f for f in linter.lint_source(src, "a.py") if f.code != "PFL990"]  # as the runner filters them
    file = SourceFile(project / "a.py", "a.py", "a.py", ("PFL001", "PFL991"))  # per-file-ignores took PFL990
    run = Run(findings, {"a.py": file}, {"a.py": digest(src.encode())})
    remaining, fixed = fix_module.apply_fixes(run, unsafe=True, write=True, out=None, notice=print)
    assert (remaining, fixed) == ([], 1)
    assert (project / "a.py").read_text() == "a = x.cuda()\nprint(1, flush=True)\n"


def test_cli_fix_respects_per_file_ignores(project, capsys):
    (project / "pyproject.toml").write_text('[tool.perflint]\nper-file-ignores = {"gen/*" = ["PFL990"]}\n')
    (project / "gen").mkdir()
    (project / "gen" / "t.py").write_text("a = x.cuda()\nprint(1)\n")
    fix(capsys, "--unsafe-fixes")
    assert (project / "gen" / "t.py").read_text() == "a = x.cuda()\nprint(1, flush=True)\n"


# ---- the real rules that offer fixes ----------------------------------------------------------------------
FIXING_RULES = [r for r in all_rules().values() if r.fix_safety != "none"]


@pytest.mark.parametrize("rule", FIXING_RULES, ids=lambda r: r.code)
def test_real_rule_fixes_parse_settle_and_remove_their_findings(rule):
    examples = reported_fixtures(rule.code)
    assert examples, f"{rule.code} offers a fix but has no fixtures to check it on"
    linter = Linter([rule])
    fixed_any = False
    for example in examples:
        findings = linter.lint_source(example, "example.py")
        assert all(f.fix.applicability == rule.fix_safety for f in findings if f.fix)
        new, count = fix_source(example, "example.py", linter, unsafe=True)
        fixed_any |= count > 0
        assert compiles(new.encode()) == compiles(example.encode())
        assert fix_source(new, "example.py", linter, unsafe=True) == (new, 0)
        assert not [f for f in linter.lint_source(new, "example.py") if f.fix]
    assert fixed_any, f"{rule.code} says its fix is {rule.fix_safety} but fixed none of its examples"


@pytest.mark.parametrize("rule", all_rules().values(), ids=lambda r: r.code)
def test_a_rule_that_attaches_fixes_declares_their_safety(rule):
    linter = Linter([rule])
    with_fix = [f for ex in reported_fixtures(rule.code) for f in linter.lint_source(ex, "example.py") if f.fix]
    assert not with_fix or rule.fix_safety in ("safe", "unsafe")


# ---- corpora: everything together ------------------------------------------------------------------------
CORPUS_SELECTION = ("--select", "ALL", "--ignore", "PFL992,PFL993")  # every rule but the broken test ones


def _newline_style(data: bytes) -> set[str]:
    """Which of CRLF, LF and CR the file uses."""
    bare = data.replace(b"\r\n", b"")
    return {name for name, present in (("crlf", b"\r\n" in data), ("lf", b"\n" in bare), ("cr", b"\r" in bare))
            if present}


def _fix_corpus_twice(corpus: Path, project: Path, capsys, crlf_copies: bool = False) -> None:
    """Copy the corpus, fix it with every rule (real and test) and unsafe fixes, then check that a second
    run changes nothing, every file that compiled still compiles and keeps its newline style, and files
    without fixes are byte-identical."""
    work = project / "corpus"
    shutil.copytree(corpus, work, ignore=shutil.ignore_patterns(".git", "__pycache__"))
    if crlf_copies:
        for p in list(work.rglob("*.py")):
            p.with_name(p.stem + "_crlf.py").write_bytes(p.read_bytes().replace(b"\n", b"\r\n"))
    files = sorted(work.rglob("*.py"))
    before = {p: p.read_bytes() for p in files}

    def perflint(*argv):  # with the cache, as users run it: keyed by content, so never stale
        code = main(["corpus", *CORPUS_SELECTION, "--jobs", "0", *argv])
        return (code, *capsys.readouterr())

    _, out, _ = perflint("--output-format", "json")
    with_fixes = {Path(item["filename"]) for item in json.loads(out) if item["fix"]}
    _, _, err = perflint("--fix", "--unsafe-fixes")
    assert "not fixed" not in err
    after = {p: p.read_bytes() for p in files}
    _, out, err = perflint("--diff", "--unsafe-fixes")
    assert out == "" and "Would fix 0 findings." in err
    perflint("--fix", "--unsafe-fixes", "--no-cache", "-q")
    assert {p: p.read_bytes() for p in files} == after, "a second --fix changed files"
    changed = {p.resolve() for p in files if after[p] != before[p]}
    assert changed, "nothing was fixed: the corpus no longer exercises the fixer"
    assert changed <= with_fixes, "a file without fixable findings was changed"
    for p in files:
        if compiles(before[p]):
            assert compiles(after[p]), f"{p} no longer compiles"
        assert _newline_style(after[p]) == _newline_style(before[p]), f"{p} changed its newline style"


def test_mini_corpus(project, capsys):
    assert len(list(MINI_CORPUS.glob("*.py"))) >= 3
    _fix_corpus_twice(MINI_CORPUS, project, capsys, crlf_copies=True)


@pytest.mark.skipif(not os.environ.get("PERFLINT_CORPUS"), reason="set PERFLINT_CORPUS to a folder of real code")
def test_real_corpus(project, capsys):
    _fix_corpus_twice(Path(os.environ["PERFLINT_CORPUS"]), project, capsys)


class _ExpectedFixes(ast.NodeTransformer):
    """The test rules' rewrites, done on Python's own syntax tree, independently of libcst."""

    def visit_Call(self, node: ast.Call) -> ast.Call:
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr == "cuda" and not node.args and not node.keywords:
            node.func.attr, node.args = "to", [ast.Constant("cuda")]
        if isinstance(f, ast.Name) and f.id == "print" and not any(k.arg == "flush" for k in node.keywords):
            node.keywords.append(ast.keyword("flush", ast.Constant(True)))
        return node


STATEMENTS = ("x = a.cuda()", "print(a.cuda(), b)", "print(\n    a,  # why\n)", "y = [t.cuda() for t in ts]",
              "# a comment with x.cuda()", "s = 'print(x)'", "if a:\n    print(a.cuda().cuda())",
              "z = f(a.cuda(), print(1))", "", "\x0c", "t = 'a\u2028b'  # trailing", "w = (a .cuda ())")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(STATEMENTS), max_size=12), st.sampled_from(["\n", "\r\n"]))
def test_random_files_fix_to_the_expected_tree_in_one_run(statements, newline):
    src = newline.join(s.replace("\n", newline) for s in statements) + newline
    linter = Linter([ToCuda, FlushPrint])
    new, count = fix_source(src, "r.py", linter, unsafe=True)
    assert ast.dump(ast.parse(new)) == ast.dump(_ExpectedFixes().visit(ast.parse(src)))
    assert fix_source(new, "r.py", linter, unsafe=True) == (new, 0)
    assert _newline_style(new.encode()) == _newline_style(src.encode())
    assert (count == 0) == (new == src)


def test_fixed_mini_corpus_equals_the_expected_rewrite_of_its_syntax_tree(project, capsys):
    """Nothing but the fixed calls changed: the new tree is the old one with exactly those rewrites."""
    work = project / "corpus"
    shutil.copytree(MINI_CORPUS, work)
    before = {p: p.read_text() for p in work.glob("*.py")}
    _, _, err = run(capsys, "corpus", "--select", "PFL990,PFL991", "--fix", "--unsafe-fixes")
    assert int(err.split("Fixed ")[1].split()[0]) >= 10
    for p, src in before.items():
        expected = ast.dump(_ExpectedFixes().visit(ast.parse(src)))
        assert ast.dump(ast.parse(p.read_text())) == expected, p.name
