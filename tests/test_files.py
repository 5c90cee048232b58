"""One SourceFile per file, from discovery to report: its root-relative name, the name reports show, and
the rules that apply to it, decided before it is linted."""

from __future__ import annotations

import libcst as cst

import perflint.rule as rule_module
from perflint.cli import main
from perflint.config import load
from perflint.files import discover
from perflint.rule import Rule, all_rules
from tests.conftest import SYNC_LOOP


class Boom(Rule):
    """Raises on every call: if it runs on a file, that file gets PFL002."""

    code, name, summary = "PFL994", "test-boom", "test rule: raises"

    def visit_Call(self, node: cst.Call, ctx) -> None:
        raise ValueError("boom")


def test_a_source_file_knows_its_names_and_rules(project, monkeypatch):
    (project / "pyproject.toml").write_text('[tool.perflint]\nper-file-ignores = {"tests/*" = ["PFL1"]}\n')
    (project / "tests").mkdir()
    (project / "tests" / "t.py").write_text("x = 1\n")
    (project / "src").mkdir()
    (project / "src" / "a.py").write_text("x = 1\n")
    monkeypatch.chdir(project / "src")
    config = load(start=project / "src")
    found = {f.name: f for f in discover(["..", "a.py"], config, print)}
    assert set(found) == {"src/a.py", "tests/t.py"}
    assert found["src/a.py"].shown == "a.py" and found["tests/t.py"].shown == "../tests/t.py"
    assert "PFL101" in found["src/a.py"].codes and not any(c.startswith("PFL1") for c in found["tests/t.py"].codes)


def test_per_file_ignores_decide_the_rules_before_linting(project, capsys, monkeypatch):
    all_rules()
    monkeypatch.setitem(rule_module._registry, "PFL994", Boom)
    (project / "pyproject.toml").write_text('[tool.perflint]\nper-file-ignores = {"skip/*" = ["PFL994"]}\n')
    (project / "skip").mkdir()
    (project / "skip" / "a.py").write_text(SYNC_LOOP)
    (project / "b.py").write_text(SYNC_LOOP)
    main(["--no-cache", "--select", "PFL994"])
    out = capsys.readouterr().out
    assert "b.py:1:1: PFL002 PFL994 (test-boom) raised ValueError: boom" in out
    assert "skip/a.py" not in out  # the rule never ran there: no crash to report
