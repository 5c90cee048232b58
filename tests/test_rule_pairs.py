"""Every rule's reference pair proves the rule: the antipattern is reported where planted, the optimized
version is clean, both compute the same result, and the optimized one is strictly better in the
deterministic count the rule names (a budget set at the optimized count fails the antipattern)."""

from __future__ import annotations

import json

import pytest

from perflint.measures.budgets import KEYS, check, parse_budget
from perflint.rule import all_rules
from tests.expect import expected, lint_all
from tests.pairs import EFFECTS, ISOLATED, code_of, measure_pair, measure_pair_isolated, pair_dirs

DIRS = pair_dirs()
RULES = all_rules()
IDS = [d.name for d in DIRS]


def test_every_rule_has_a_reference_pair():
    have = {code_of(d) for d in DIRS}
    assert sorted(set(RULES) - have) == []


@pytest.mark.parametrize("directory", DIRS, ids=IDS)
def test_pair_lints_as_planted(directory):
    rule = RULES[code_of(directory)]
    anti = (directory / "antipattern.py").read_text()
    found = {(f.line, f.code) for f in lint_all(anti, str(directory / "antipattern.py"))}
    want = expected(anti)
    assert any(code == rule.code for _, code in want), "the antipattern must plant its own rule"
    assert want <= found
    assert {x for x in found if x[1] == rule.code} == {x for x in want if x[1] == rule.code}
    opt = directory / "optimized.py"
    noisy = [f for f in lint_all(opt.read_text(), str(opt)) if RULES[f.code].default or f.code == rule.code]
    assert noisy == []


@pytest.fixture(scope="module")
def effects():
    return json.loads(EFFECTS.read_text()) if EFFECTS.exists() else {}


@pytest.mark.parametrize("directory", DIRS, ids=IDS)
def test_optimized_wins_and_computes_the_same(directory, effects):
    torch = pytest.importorskip("torch")
    rule = RULES[code_of(directory)]
    measure = measure_pair_isolated if rule.code in ISOLATED else measure_pair
    anti, opt, anti_result, opt_result = measure(directory, rule.proof_metric)
    if rule.code in ISOLATED:
        anti_result, opt_result = torch.tensor(anti_result), torch.tensor(opt_result)
    if isinstance(anti_result, torch.Tensor) or isinstance(opt_result, torch.Tensor):
        torch.testing.assert_close(opt_result, anti_result, rtol=1e-4, atol=1e-5)
    else:
        assert opt_result == pytest.approx(anti_result, rel=1e-4, abs=1e-6)
    if not rule.proof_metric:
        assert rule.proof_note, f"{rule.code} has no proof_metric: its proof_note must say why no count applies"
        pytest.skip(f"{rule.code}: {rule.proof_note}")
    if rule.gpu_only:
        pytest.skip(f"{rule.code} is GPU-only: its effect is documented with GPU trace evidence")
    metric = rule.proof_metric
    key = next(k for k, spec in KEYS.items() if spec.metric == metric)
    assert opt[metric] < anti[metric]
    verdicts = check(parse_budget({key: opt[metric]}), anti)
    assert [v.status for v in verdicts] == ["fail"]
    recorded = effects.get(rule.code)
    assert recorded is not None, f"run `python -m tests.pairs` to record {rule.code}'s effect"
    assert (recorded["antipattern"], recorded["optimized"]) == (anti[metric], opt[metric])
