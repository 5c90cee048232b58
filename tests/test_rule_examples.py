"""Every registered rule's embedded examples: invalid samples are reported exactly on their
`# expect:` lines, valid samples are not reported. Adding a rule adds its cases here automatically."""

import pytest

from perflint.rule import FAMILIES, SEVERITIES, all_rules
from tests.expect import expected, reported

RULES = list(all_rules().values())
CASES = [(r.code, i, s) for r in RULES for i, s in enumerate(r.invalid)]
VALID = [(r.code, i, s) for r in RULES for i, s in enumerate(r.valid)]


@pytest.mark.parametrize("code,index,source", CASES, ids=[f"{c}-invalid{i}" for c, i, _ in CASES])
def test_invalid_example_is_reported_on_expected_lines(code, index, source):
    want = {(line, c) for line, c in expected(source) if c == code}
    assert want, "an invalid example must mark at least one line with # expect: CODE"
    assert reported(source, {code}) == want


@pytest.mark.parametrize("code,index,source", VALID, ids=[f"{c}-valid{i}" for c, i, _ in VALID])
def test_valid_example_is_not_reported(code, index, source):
    assert reported(source, {code}) == set()


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_rule_metadata_is_complete(rule):
    assert rule.code[:3] == "PFL" and rule.code[3:].isdigit() and len(rule.code) == 6
    assert rule.code[3] in FAMILIES and rule.code[3] != "0"
    assert rule.name == rule.name.lower() and " " not in rule.name and "_" not in rule.name
    assert rule.summary and "\n" not in rule.summary
    assert rule.severity in SEVERITIES and rule.fix_safety in ("safe", "unsafe", "none")
    assert rule.why.strip() and rule.example.strip() and rule.instead.strip()
    assert rule.valid and rule.invalid, "each rule embeds valid and invalid examples"


def test_rule_names_are_unique():
    names = [r.name for r in RULES]
    assert len(names) == len(set(names))
