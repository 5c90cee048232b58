"""The `# expect: CODE` convention shared by the rule examples and the reference pairs."""

from __future__ import annotations

import re
from pathlib import Path

from perflint.engine import Linter
from perflint.rule import all_rules

_EXPECT = re.compile(r"#\s*expect:\s*([A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)")


def expected(source: str) -> set[tuple[int, str]]:
    """(line, code) pairs that the source's `# expect: CODE` comments ask for."""
    out = set()
    for number, line in enumerate(source.splitlines(), 1):
        m = _EXPECT.search(line)
        if m:
            out |= {(number, code.strip()) for code in m.group(1).split(",")}
    return out


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "rules"


def fixture_files(code: str | None = None) -> list[Path]:
    """The rule fixtures (fixtures/rules/<CODE>/*.py), of one rule or all."""
    return sorted(FIXTURES.glob(f"{code or 'PFL*'}/*.py"))


def reported_fixtures(code: str) -> list[str]:
    """The sources of a rule's fixtures that expect findings."""
    return [p.read_text() for p in fixture_files(code) if expected(p.read_text())]


_ALL = None


def lint_all(source: str, path: str = "example.py"):
    """Findings of every registered rule, on or off by default."""
    global _ALL
    if _ALL is None:
        _ALL = Linter(all_rules().values())
    return _ALL.lint_source(source, path)


def reported(source: str, codes: set[str] | None = None) -> set[tuple[int, str]]:
    return {(f.line, f.code) for f in lint_all(source) if codes is None or f.code in codes}
