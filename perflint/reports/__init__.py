"""Report formats for findings: one module each, each with `render(findings, rules) -> str`.

`rules` are the enabled rule classes (SARIF lists them); the others ignore it.
"""

from __future__ import annotations

import importlib

FORMATS = ("text", "json", "github", "sarif", "gitlab")


def render(fmt: str, findings, rules, **options) -> str:
    module = importlib.import_module(f"perflint.reports.{fmt}_report")
    return module.render(findings, rules, **options)
