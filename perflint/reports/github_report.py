"""GitHub Actions workflow commands: each finding becomes an annotation on the pull request's diff."""

from __future__ import annotations

_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, path: str, line: int, col: int | None, title: str, message: str,
               end_line: int | None = None, end_col: int | None = None) -> str:
    props = [f"file={escape_property(path)}", f"line={line}"]
    if col is not None:
        props.append(f"col={col}")
    if end_line is not None:
        props.append(f"endLine={end_line}")
    if end_col is not None and end_line == line:
        props.append(f"endColumn={end_col}")
    props.append(f"title={escape_property(title)}")
    return f"::{level} {','.join(props)}::{escape_data(message)}"


def render(findings, rules) -> str:
    return "\n".join(annotation(_LEVEL.get(f.severity, "warning"), f.path, f.line, f.col,
                                f"{f.code} ({f.name})", f.message, f.end_line, f.end_col) for f in findings)
