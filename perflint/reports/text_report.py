"""`path:line:col: CODE message [why]` (in a notebook `path:cell N:line:col: ...`), the format editors
and terminals understand, with the finding's evidence in one short clause; `[*]` marks a finding that `--fix` can fix, as in ruff; colour only on a TTY."""

from __future__ import annotations

import re

from perflint.reports import why

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def location(f) -> str:
    """Where, on one line: a control character in a file name (a newline) is escaped, so that a name can
    never pass for another finding."""
    path = _CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}", f.path)
    cell = getattr(f, "cell", None)
    return f"{path}:cell {cell}:{f.line}:{f.col}" if cell is not None else f"{path}:{f.line}:{f.col}"


def render(findings, rules, color: bool = False, unsafe: bool = False) -> str:
    lines = []
    for f in findings:
        fix = getattr(f, "fix", None)
        mark = " [*]" if fix is not None and (unsafe or fix.applicability == "safe") else ""
        clause = why(f)
        if color:
            lines.append(f"\033[1m{location(f)}\033[0m: \033[1;31m{f.code}\033[0m{mark} {f.message}"
                         + (f" \033[2m[{clause}]\033[0m" if clause else ""))
        else:
            lines.append(f"{location(f)}: {f.code}{mark} {f.message}" + (f" [{clause}]" if clause else ""))
    return "\n".join(lines)
