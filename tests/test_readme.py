"""Generated documentation must match the code it is generated from."""

from pathlib import Path

from perflint.measures.events import markdown_table
from tests.rule_pages import expected_files

ROOT = Path(__file__).resolve().parents[1]


def test_readme_event_table_is_generated_from_events():
    assert markdown_table() in (ROOT / "README.md").read_text()


def test_rule_pages_and_index_are_up_to_date():
    stale = [str(p.relative_to(ROOT)) for p, text in expected_files(ROOT).items()
             if not p.exists() or p.read_text() != text]
    assert stale == [], "run `python -m tests.rule_pages`"


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python -m pytest -n 2 --timeout 600" in readme and "python -m pytest -q -n 2 --timeout 600" in ci
    assert 'pip install torch==2.13.0 -e ".[dev]"' in readme and '"torch==2.13.0" -e ".[dev]"' in ci


def test_a_rule_page_quotes_the_blind_reviews_as_they_found_the_rules(monkeypatch):
    from perflint import docs
    from perflint.rule import all_rules

    figures = {"command": "run.py", "repositories": ["a@1"], "rules": {
        "PFL203": {"labelled": {"findings": 10, "right": 10}, "holdout": {"findings": 20, "right": 9, "wrong": 1},
                   "reviewed": {"right": 7, "wrong": 3}},
        "PFL301": {"reviewed": {"right": 2, "wrong": 3}}}}
    monkeypatch.setattr(docs, "accuracy", lambda: figures)
    rules = all_rules()
    line = docs.accuracy_line(rules["PFL203"])
    assert "labelled repositories: 10 findings, 10 of 10 judged right (100%)" in line
    assert "on the rules as each review found them: 7 of 10 judged right (70%). On by default all the same" in line
    line = docs.accuracy_line(rules["PFL301"])  # no finding now, still its reviews; off by default below 80%
    assert line.startswith("No findings on the 1 repositories")
    assert line.endswith("2 of 5 judged right (40%). Off by default: it does not reach 80% right on real code.")
