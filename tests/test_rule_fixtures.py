"""Every rule's fixture files (fixtures/rules/<CODE>/*.py), as ruff and Fixit check theirs: the lines that
end in `# expect: CODE` are reported and no others; the messages and evidence match the snapshot beside
the file (`<name>.py.snap`); and where the findings carry fixes, applying them all gives `<name>.py.fixed`
exactly. A fixture is linted on its own, as a file that is the whole project.

PERFLINT_UPDATE_FIXTURES=1 rewrites the snapshots and fixed files from what the rules do now: review the
diff before committing it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from perflint.engine import Linter
from perflint.fix import fix_source
from perflint.rule import FAMILIES, all_rules
from tests.expect import expected, fixture_files

RULES = all_rules()
FIXTURES = fixture_files()
UPDATE = os.environ.get("PERFLINT_UPDATE_FIXTURES") == "1"


def _check(path: Path, want: str) -> None:
    if UPDATE:
        if want:
            path.write_text(want, encoding="utf-8")
        elif path.exists():
            path.unlink()
        return
    have = path.read_text(encoding="utf-8") if path.exists() else ""
    assert have == want, f"{path.name} is out of date (PERFLINT_UPDATE_FIXTURES=1 rewrites it; review the diff)"


@pytest.mark.parametrize("path", FIXTURES, ids=[f"{p.parent.name}/{p.name}" for p in FIXTURES])
def test_fixture(path: Path) -> None:
    code = path.parent.name
    linter = Linter([RULES[code]])
    source = path.read_text(encoding="utf-8")
    findings = [f for f in linter.lint_source(source, path.name) if f.code == code]
    assert {(f.line, f.code) for f in findings} == {(line, c) for line, c in expected(source) if c == code}
    snapshot = "".join(f"{f.line}:{f.col} {f.code} {f.message}\n" + "".join(f"    {e}\n" for e in f.evidence)
                       for f in findings)
    _check(path.with_name(path.name + ".snap"), snapshot)
    fixed, count = fix_source(source, path.name, linter, unsafe=True)
    assert count == sum(1 for f in findings if f.fix is not None) or count > 0
    _check(path.with_name(path.name + ".fixed"), fixed if count else "")


@pytest.mark.parametrize("rule", RULES.values(), ids=list(RULES))
def test_rule_has_fixtures_and_metadata(rule) -> None:
    files = [p for p in FIXTURES if p.parent.name == rule.code]
    assert any(expected(p.read_text()) for p in files), "each rule has a fixture with a reported line"
    assert any(not expected(p.read_text()) for p in files), "each rule has a fixture that stays quiet"
    assert rule.code[:3] == "PFL" and rule.code[3:].isdigit() and len(rule.code) == 6
    assert rule.code[3] in FAMILIES and rule.code[3] != "0"
    assert rule.name == rule.name.lower() and " " not in rule.name and "_" not in rule.name
    assert rule.summary and "\n" not in rule.summary
    assert rule.severity in ("error", "warning", "info") and rule.fix_safety in ("safe", "unsafe", "none")
    assert rule.why.strip() and rule.example.strip() and rule.instead.strip()
    if rule.fix_safety != "none":
        assert any(p.with_name(p.name + ".fixed").exists() for p in files), "a rule with a fix pins its fixed text"


def test_rule_names_are_unique() -> None:
    names = [r.name for r in RULES.values()]
    assert len(names) == len(set(names))


def test_every_fixture_folder_is_a_rule() -> None:
    assert {p.parent.name for p in FIXTURES} <= set(RULES)
