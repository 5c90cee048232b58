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


def why(f, width: int = 120) -> str:
    """The finding's evidence as one short clause: its first reason (what the value is, where it came from)
    and the one that says why it runs every step, cut at `width` characters. JSON and SARIF carry all."""
    evidence = getattr(f, "evidence", ())
    if not evidence:
        return ""
    step = next((e for e in evidence[1:] if "every step" in e), None)
    clause = "; ".join(e for e in (evidence[0], step) if e)
    return clause if len(clause) <= width else clause[:width - 1] + "\u2026"


def explained(f) -> str:
    """The message with its evidence clause, for formats with one line per finding."""
    clause = why(f)
    return f"{message(f)} [{clause}]" if clause else message(f)
