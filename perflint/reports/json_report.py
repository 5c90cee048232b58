"""ruff's JSON schema (code, message, filename, location, end_location, fix, url, noqa_row), plus
`name`, `severity`, `evidence` (why the rule thinks so, most telling first) and `assumed` (it holds only
if a module's forward that no seen loop runs does run every step: `assume-forward-per-step`), so tools
that read ruff's output can read ours."""

from __future__ import annotations

import json
from pathlib import Path


def _fix(f) -> dict | None:
    if f.fix is None:
        return None
    return {
        "applicability": f.fix.applicability,
        "message": f.fix.message,
        "edits": [{"content": e.content, "location": {"row": e.start[0], "column": e.start[1]},
                   "end_location": {"row": e.end[0], "column": e.end[1]}} for e in f.fix.edits],
    }


def as_dicts(findings) -> list[dict]:
    return [{
        "cell": getattr(f, "cell", None),
        "code": f.code,
        "name": f.name,
        "severity": f.severity,
        "message": f.message,
        "filename": str(Path(f.path).resolve()),
        "location": {"row": f.line, "column": f.col},
        "end_location": {"row": f.end_line, "column": f.end_col},
        "fix": _fix(f),
        "evidence": list(getattr(f, "evidence", ())),
        "assumed": getattr(f, "assumed", False),
        "url": f.url,
        "noqa_row": f.line,
    } for f in findings]


def render(findings, rules) -> str:
    return json.dumps(as_dicts(findings), indent=2)
