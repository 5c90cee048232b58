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
