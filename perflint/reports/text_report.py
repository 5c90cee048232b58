"""`path:line:col: CODE message`, the format editors and terminals understand; colour only on a TTY."""

from __future__ import annotations


def render(findings, rules, color: bool = False) -> str:
    lines = []
    for f in findings:
        if color:
            lines.append(f"\033[1m{f.path}\033[0m:{f.line}:{f.col}: \033[1;31m{f.code}\033[0m {f.message}")
        else:
            lines.append(f"{f.path}:{f.line}:{f.col}: {f.code} {f.message}")
    return "\n".join(lines)
