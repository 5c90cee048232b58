"""flake8 plugin: perflint's rules as flake8 codes, so flake8's own `select`, `extend-ignore`,
`per-file-ignores` and `# noqa` apply to them.

Registered as the `PFL` entry in the `flake8.extension` group (or `[flake8:local-plugins]`). The rules
that are on by default in perflint run; a rule that is off by default runs when flake8's `select` or
`extend-select` names its code or a prefix longer than `PFL` (`PFL2`), so that the common
`select = E,F,W,PFL` does not switch on the rules perflint keeps off. `[tool.perflint]` is
not read: under flake8, flake8's configuration decides. PFL001 is left to flake8's own E999.
"""

from __future__ import annotations

import ast
from typing import ClassVar, Iterator

from perflint import __version__
from perflint.engine import Linter
from perflint.rule import SYNTAX_ERROR, all_rules


class Plugin:
    name = "torch-perflint"
    version = __version__
    _linter: ClassVar[Linter | None] = None
    _explicit: ClassVar[tuple[str, ...]] = ()

    def __init__(self, tree: ast.AST, lines: list[str], filename: str) -> None:
        # flake8 treats a plugin that takes `tree` as an AST plugin: it runs once per file that parses.
        self.lines = lines
        self.filename = filename

    @classmethod
    def parse_options(cls, options) -> None:
        explicit = [*(getattr(options, "select", None) or ()), *(getattr(options, "extend_select", None) or ())]
        cls._explicit = tuple(e.strip().upper() for e in explicit if len(e.strip()) > len("PFL"))
        cls._linter = None

    @classmethod
    def linter(cls) -> Linter:
        if cls._linter is None:
            cls._linter = Linter(rule for code, rule in all_rules().items()
                                 if rule.default or any(code.startswith(e) for e in cls._explicit))
        return cls._linter

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        for f in self.linter().lint_source("".join(self.lines), self.filename):
            if f.code != SYNTAX_ERROR.code and not f.assumed:  # perflint's default (`assume-forward-per-step`)
                yield f.line, f.col - 1, f"{f.code} {f.message}", type(self)
