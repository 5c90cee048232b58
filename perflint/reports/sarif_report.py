"""SARIF 2.1.0, the format GitHub code scanning uploads: one `rules` entry per enabled rule and results
with repository-relative URIs."""

from __future__ import annotations

import json
from pathlib import Path

from perflint import __version__
from perflint.reports import message

_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _uri(path: str) -> str:
    p = Path(path)
    if p.is_absolute():
        try:
            p = p.resolve().relative_to(Path.cwd().resolve())
        except ValueError:
            return p.as_uri()
    return p.as_posix()


def render(findings, rules) -> str:
    rules = list(rules)
    index = {r.code: i for i, r in enumerate(rules)}
    driver = {
        "name": "perflint",
        "informationUri": "https://github.com/torch-perflint/torch-perflint",
        "version": __version__,
        "rules": [{
            "id": r.code,
            "name": r.name,
            "shortDescription": {"text": r.summary},
            "fullDescription": {"text": " ".join((r.why or r.summary).split())},
            "helpUri": r.url(),
            "defaultConfiguration": {"level": _LEVEL[r.severity]},
            "properties": {"family": r.family(), "gpu_only": r.gpu_only, "fix": r.fix_safety},
        } for r in rules],
    }
    results = []
    for f in findings:
        result = {
            "ruleId": f.code,
            "level": _LEVEL.get(f.severity, "warning"),
            "message": {"text": message(f)},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": _uri(f.path), "uriBaseId": "%SRCROOT%"},
                "region": {"startLine": f.line, "startColumn": f.col, "endLine": f.end_line,
                           "endColumn": f.end_col},
            }}],
        }
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        if getattr(f, "evidence", ()):
            result["properties"] = {"evidence": list(f.evidence)}
        results.append(result)
    sarif = {"$schema": SCHEMA, "version": "2.1.0",
             "runs": [{"tool": {"driver": driver}, "results": results,
                       "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().resolve().as_uri() + "/"}}}]}
    return json.dumps(sarif, indent=2)
