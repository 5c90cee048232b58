"""Rule pages and the rule index, rendered from the rule classes so the docs cannot drift from the code:
what `perflint --explain` prints, and what `python -m tests.rule_pages` writes to `rules/` (a test
fails when those are stale). The measured effect of each rule comes from `perflint/effects.json`, which
the proof tests check against a fresh measurement (`tests/test_rule_pairs.py`).
"""

from __future__ import annotations

import functools
import json
import textwrap
from importlib import resources

from perflint.rule import TOOL_RULES, all_rules

FIX_TEXT = {"safe": "safe (`perflint --fix`)", "unsafe": "unsafe (`perflint --fix --unsafe-fixes`)",
            "none": "none: the rewrite needs a human"}


def _block(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


def effect_line(effect: dict | None) -> str:
    if not effect or "metric" not in effect:
        return "not measured"
    return (f"{effect['metric']}: {effect['antipattern']} -> {effect['optimized']} "
            f"(`{effect['command']}`)")


def rule_page(rule, effect: dict | None = None) -> str:
    """The Markdown page of one rule: what, why, example, instead, fix safety, known problems, effect."""
    parts = [f"# {rule.code} {rule.name}", "", rule.summary[:1].upper() + rule.summary[1:] + ".", "",
             f"Family: {rule.family()}. Severity: {rule.severity}. "
             f"On by default: {'yes' if rule.default else 'no'}. GPU only: {'yes' if rule.gpu_only else 'no'}.", ""]
    if rule.why:
        parts += ["## Why it is slow", "", _block(rule.why), ""]
    if rule.example:
        parts += ["## Example", "", "```python", _block(rule.example), "```", ""]
    if rule.instead:
        parts += ["## Use instead", "", "```python", _block(rule.instead), "```", ""]
    parts += ["## Fix safety", "", FIX_TEXT[rule.fix_safety], ""]
    if rule.known_problems:
        parts += ["## Known problems and when it stays quiet", "", _block(rule.known_problems), ""]
    if rule.proof_metric:
        parts += ["## Measured effect", "", effect_line(effect), ""]
    elif rule.proof_note:
        parts += ["## Measured effect", "", f"No deterministic count applies: {rule.proof_note}", ""]
    if effect and effect.get("benchmark"):
        parts += [effect["benchmark"], ""]
    parts += ["## On real code", "", accuracy_line(rule), ""]
    return "\n".join(parts)


def accuracy_line(rule) -> str:
    """What the accuracy benchmark measured for a rule: its findings on real repositories and how many a
    reviewer judged right, on the labelled repositories and on the hold-out ones reviewed blind."""
    measured = accuracy()
    figures = measured.get("rules", {}).get(rule.code)
    if not figures:
        return f"No findings on the {len(measured.get('repositories', ()))} repositories of the accuracy benchmark."
    parts = []
    for role, name in (("labelled", "labelled repositories"), ("holdout", "hold-out repositories (blind review)")):
        c = figures.get(role)
        if not c:
            continue
        judged = c.get("right", 0) + c.get("wrong", 0)
        share = f" ({100 * c.get('right', 0) / judged:.0f}%)" if judged else ""
        found = f"{c['findings']} finding{'s' if c['findings'] != 1 else ''}"
        parts.append(f"{name}: {found}, {c.get('right', 0)} of {judged} judged right{share}")
    right = sum(figures.get(role, {}).get("right", 0) for role in ("labelled", "holdout"))
    judged = right + sum(figures.get(role, {}).get("wrong", 0) for role in ("labelled", "holdout"))
    line = "; ".join(parts) + f" (`{measured['command']}`)." if parts else \
        f"No findings on the {len(measured.get('repositories', ()))} repositories of the accuracy benchmark."
    seen = figures.get("reviewed")
    if seen:  # the blind reviews' verdicts as each found the rules: the figure for code they were not tuned on
        fresh = seen.get("right", 0) + seen.get("wrong", 0)
        line += (f" In the blind reviews, on the rules as each review found them: {seen.get('right', 0)} of "
                 f"{fresh} judged right ({100 * seen.get('right', 0) / fresh:.0f}%).")
        if rule.default and fresh >= 5 and seen.get("right", 0) < 0.8 * fresh:
            line += " On by default all the same (README, \"Accuracy on real code\", says why)."
        right, judged = seen.get("right", 0), fresh
    if not rule.default and judged and right < 0.8 * judged:
        line += " Off by default: it does not reach 80% right on real code."
    return line


@functools.cache
def accuracy() -> dict:
    """Precision per rule on real repositories (written by `benchmarks/accuracy/run.py --write`)."""
    return json.loads(resources.files("perflint").joinpath("accuracy.json").read_text(encoding="utf-8"))


def effects() -> dict:
    """The measured effect of each rule (written by `python -m tests.pairs`), packaged with perflint so that
    `--explain` quotes it from an installed wheel too."""
    return json.loads(resources.files("perflint").joinpath("effects.json").read_text(encoding="utf-8"))


def index_page(measured: dict) -> str:
    rows = ["# Rule index", "",
            "Generated by `python -m tests.rule_pages` from the rule classes in `perflint/rules/`. Each rule's",
            "folder holds its page, an `antipattern.py` and an `optimized.py`; the measured effect is a",
            "deterministic count from `tests/test_rule_pairs.py` (CPU profiler), checked in CI.", "",
            "| code | name | family | default | GPU only | autofix | measured effect |",
            "|---|---|---|---|---|---|---|"]
    for rule in [*TOOL_RULES, *all_rules().values()]:
        effect = measured.get(rule.code)
        effect_text = f"{effect['metric']} {effect['antipattern']} -> {effect['optimized']}" \
            if effect and "metric" in effect else ("GPU only" if rule.gpu_only else "-")
        link = f"[{rule.name}]({rule.code}-{rule.name}/README.md)" if rule.code not in ("PFL001", "PFL002") \
            else rule.name
        rows.append(f"| {rule.code} | {link} | {rule.family()} | {'on' if rule.default else 'off'} | "
                    f"{'yes' if rule.gpu_only else 'no'} | {rule.fix_safety} | {effect_text} |")
    return "\n".join(rows) + "\n"
