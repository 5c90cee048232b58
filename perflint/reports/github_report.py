"""GitHub Actions workflow commands: each finding becomes an annotation on the pull request's diff."""

from __future__ import annotations

from perflint.measures.github import annotation
from perflint.reports import explained

_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def render(findings, rules) -> str:
    return "\n".join(annotation(_LEVEL.get(f.severity, "warning"), explained(f), file=f.path, line=f.line, col=f.col,
                                end_line=f.end_line, end_col=f.end_col, title=f"{f.code} ({f.name})")
                     for f in findings)
