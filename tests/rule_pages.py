"""Writes the rule pages and the rule index into `rules/` from the rule classes: `python -m tests.rule_pages`.

The pages are rendered by `perflint.docs` (what `perflint --explain` prints); writing them into the
repository is a development task, so it lives here and not in the installed package.
`tests/test_readme.py` fails when a page is stale.
"""

from __future__ import annotations

import sys
from pathlib import Path

from perflint.docs import effects, index_page, rule_page
from perflint.rule import all_rules

ROOT = Path(__file__).resolve().parents[1]


def expected_files(root: Path = ROOT) -> dict[Path, str]:
    measured = effects()
    files = {root / "rules" / "README.md": index_page(measured)}
    for rule in all_rules().values():
        files[root / "rules" / f"{rule.code}-{rule.name}" / "README.md"] = rule_page(rule, measured.get(rule.code))
    return files


def main() -> int:
    for path, text in expected_files().items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
