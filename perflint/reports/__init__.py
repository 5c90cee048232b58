"""Report formats for findings: one module each, each with `render(findings, rules) -> str`.

`rules` are the enabled rule classes (SARIF lists them); the others ignore it. A finding in a notebook
carries its cell: text and JSON have a place for it, the others say it in the message.
"""

from __future__ import annotations

import importlib

FORMATS = ("text", "json", "github", "sarif", "gitlab")


def render(fmt: str, findings, rules, **options) -> str:
    module = importlib.import_module(f"perflint.reports.{fmt}_report")
    return module.render(findings, rules, **options)


def message(f) -> str:
    """The message, led by the notebook cell where a format has no field for it."""
    cell = getattr(f, "cell", None)
    return f"cell {cell}: {f.message}" if cell is not None else f.message
