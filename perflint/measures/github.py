"""GitHub Actions workflow commands (`::error file=...,line=...::message`): the one escaping for every
report that annotates, lint findings and budget verdicts alike."""

from __future__ import annotations


def escape(text: str, prop: bool = False) -> str:
    """Escape a message (`prop=False`) or a property value such as `file=` or `title=` (`prop=True`,
    where `:` and `,` would end the value)."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def annotation(level: str, message: str, *, file: str | None = None, line: int | None = None,
               col: int | None = None, end_line: int | None = None, end_col: int | None = None,
               title: str | None = None) -> str:
    """One workflow command; `level` is "error", "warning" or "notice". Properties that are None are left
    out (an end column only makes sense on a one-line range)."""
    props = []
    if file is not None:
        props.append(f"file={escape(file, prop=True)}")
    for name, value in (("line", line), ("col", col), ("endLine", end_line)):
        if value is not None:
            props.append(f"{name}={value}")
    if end_col is not None and end_line == line:
        props.append(f"endColumn={end_col}")
    if title is not None:
        props.append(f"title={escape(title, prop=True)}")
    return f"::{level} {','.join(props)}::{escape(message)}" if props else f"::{level}::{escape(message)}"
