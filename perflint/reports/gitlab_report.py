"""GitLab Code Quality report (a JSON list of issues), shown in merge requests."""

from __future__ import annotations

import hashlib
import json

from perflint.reports import explained, message

_SEVERITY = {"error": "major", "warning": "minor", "info": "info"}


def render(findings, rules) -> str:
    issues = []
    for f in findings:
        identity = f"{f.path}:{f.code}:{f.line}:{f.col}:{message(f)}".encode()
        issues.append({
            "description": f"{f.code} {explained(f)}",
            "check_name": f.code,
            "fingerprint": hashlib.sha256(identity).hexdigest(),
            "severity": _SEVERITY.get(f.severity, "minor"),
            "location": {"path": f.path, "lines": {"begin": f.line, "end": f.end_line}},
        })
    return json.dumps(issues, indent=2)
