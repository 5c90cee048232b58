"""A rule is one small class; this module defines its shape, the findings it makes and the registry.

A rule subclasses `Rule`, sets its metadata and documentation as class attributes, and implements
`visit_<NodeType>(self, node, ctx)` (and optionally `leave_<NodeType>` or `finish(ctx)`) for the libcst
node types it cares about. The engine calls every rule from one traversal. Each rule's examples live in
`fixtures/rules/<CODE>/`: every line ending in `# expect: CODE` must be reported and no other line, with
the messages, evidence and fixed text the snapshots beside them pin (tests/test_rule_fixtures.py).
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import ClassVar

import libcst as cst

FAMILIES = {
    "0": "tool", "1": "hidden syncs", "2": "transfers", "3": "fusion and vectorization", "4": "compile",
    "5": "data loading", "6": "autograd, inference, memory", "7": "distributed",
    "8": "numerics and tensor cores", "9": "benchmarking hygiene",
}
RULES_URL = "https://github.com/torch-perflint/torch-perflint/blob/main/rules/"


@dataclass(frozen=True)
class Edit:
    """Replace the text between two (line, 1-based column) positions with `content`."""

    content: str
    start: tuple[int, int]
    end: tuple[int, int]


@dataclass(frozen=True)
class Fix:
    applicability: str  # "safe" or "unsafe"
    message: str
    edits: tuple[Edit, ...] = ()


@dataclass(frozen=True)
class Finding:
    path: str
    line: int  # 1-based
    col: int  # 1-based
    end_line: int
    end_col: int
    code: str
    name: str
    message: str
    severity: str = "warning"
    fix: Fix | None = None
    evidence: tuple[str, ...] = ()  # why the rule thinks so: where the value came from, why it runs every step
    # Functions of this file (qualified names) of which one must run every step for the finding to hold:
    # their callers are in other files. The runner keeps the finding if one is (model/crossfile.py). For an
    # `assumed` finding: the forwards whose run by another file's loop would make it hold without assuming.
    requires: tuple[str, ...] = ()
    cell: int | None = None  # in a notebook: the cell (from 1) that `line` counts in
    # It holds only if a module's `forward` runs every step (no loop the linter sees runs it: Step.assumed).
    # A run shows it only with `assume-forward-per-step = true` (for libraries of modules).
    assumed: bool = False
    # The function of this file (qualified name) around the finding that this file never calls: other files
    # decide whether it runs at all. A run whose every call of it lies where the defaults never go (`elif
    # args.sample_type == "ddpm_noisy":` with another default) drops the finding (model/crossfile.py).
    within: str = ""

    @property
    def url(self) -> str:
        return rule_url(self.code, self.name)

    def sort_key(self) -> tuple:
        return (self.path, self.cell or 0, self.line, self.col, self.code)


def rule_url(code: str, name: str) -> str:
    return f"{RULES_URL}{code}-{name}/README.md"


@dataclass
class Pending:
    """A finding before positions are known (they are computed only for files that have findings)."""

    rule: "Rule"
    node: cst.CSTNode
    message: str
    replacement: cst.CSTNode | None = None
    fix_node: cst.CSTNode | None = None  # the node the replacement takes the place of (default: node)
    evidence: tuple = ()  # (text, node) pairs: "{}" in the text becomes the node's code, and its line is added
    end_node: cst.CSTNode | None = None  # where the finding's range ends, when it spans several statements
    requires: tuple[str, ...] = ()  # see Finding.requires
    assumed: bool = False  # see Finding.assumed


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]  # kebab-case
    summary: ClassVar[str]  # one line: what it reports
    message: ClassVar[str] = ""  # default finding message; defaults to the summary
    severity: ClassVar[str] = "warning"
    default: ClassVar[bool] = True  # on unless selected explicitly when False
    gpu_only: ClassVar[bool] = False  # the cost exists only when the code runs on an accelerator
    torch_only: ClassVar[bool] = True  # looks only at PyTorch code (model/project.py says which files are)
    # Reports in test files too (test_*.py, *_test.py, tests/, conftest.py, numerical_tests.py). Most rules
    # judge training code, which a test is not: a sync in an assert or a loop of three checks costs nothing
    # that matters. `lint-tests = true` in the settings lints tests like any other code.
    in_tests: ClassVar[bool] = False
    # `visit_Call` only for calls whose callee's last name (through import aliases) is one of these; None:
    # every call. Most rules look for a few names, and a call hook on every call is most of a walk's cost.
    call_names: ClassVar[frozenset[str] | None] = None
    fix_safety: ClassVar[str] = "none"  # "safe", "unsafe" or "none"
    why: ClassVar[str] = ""  # why it is slow (compute, memory bandwidth, overhead; sync, copy)
    example: ClassVar[str] = ""  # the antipattern
    instead: ClassVar[str] = ""  # what to write instead
    known_problems: ClassVar[str] = ""  # when the rule is wrong, and when it stays quiet on purpose
    proof_metric: ClassVar[str] = ""  # the deterministic count its reference pair improves
    proof_note: ClassVar[str] = ""  # without proof_metric: why no count can prove it (GPU speed, correctness)

    def report(self, model, node: cst.CSTNode, message: str | None = None, *,
               replacement: cst.CSTNode | None = None, fix_node: cst.CSTNode | None = None,
               evidence: tuple = (), end_node: cst.CSTNode | None = None, step=None) -> None:
        """Record a finding at `node` (its range ending at `end_node`, if given); with `replacement`, a fix
        that puts it in place of `fix_node`; `evidence`: (text, node) pairs saying why (see `Pending`). With
        a `step` that is not hot here but may be from another file (`Step.unless`), the finding holds only
        if it is; with a step hot only as a module's forward (`Step.assumed`), the finding is marked so."""
        assumed = step is not None and step.hot and step.assumed
        requires = tuple(f.qualname for f in step.unless) if step is not None and (assumed or not step.hot) else ()
        model.findings.append(Pending(self, node, message or self.message or self.summary, replacement, fix_node,
                                      tuple(evidence), end_node, requires, assumed))

    @classmethod
    def family(cls) -> str:
        return FAMILIES[cls.code[3]]

    @classmethod
    def url(cls) -> str:
        return rule_url(cls.code, cls.name)


@dataclass
class ToolRule:
    """PFL001 and PFL002 are made by the engine, not by a visitor; they share the rule metadata shape."""

    code: str
    name: str
    summary: str
    severity: str = "error"
    default: bool = True
    gpu_only: bool = False
    fix_safety: str = "none"
    why: str = ""
    example: str = ""
    instead: str = ""
    known_problems: str = ""
    proof_metric: str = ""
    proof_note: str = ""

    def family(self) -> str:
        return FAMILIES["0"]

    def finding(self, path: str, line: int, message: str, cell: int | None = None) -> Finding:
        return Finding(path, line, 1, line, 1, self.code, self.name, message, self.severity, cell=cell)

    def url(self) -> str:
        return rule_url(self.code, self.name)


SYNTAX_ERROR = ToolRule(
    "PFL001", "syntax-error", "the file cannot be read or parsed, so it was not analysed",
    why="A file perflint cannot parse is a file it cannot check; the finding says where the parser stopped.",
    instead="Fix the syntax error, or exclude the file (`exclude` in `[tool.perflint]`).")
RULE_CRASHED = ToolRule(
    "PFL002", "rule-crashed", "a rule raised an exception on this file; the other rules still ran",
    why="A bug in perflint, never in your code. The message names the rule and the exception.",
    instead="Report it with the file that triggers it; meanwhile `# perflint: noqa` or `--ignore` the rule.")
TOOL_RULES = (SYNTAX_ERROR, RULE_CRASHED)

_registry: dict[str, type[Rule]] | None = None


def all_rules() -> dict[str, type[Rule]]:
    """Every rule class in perflint.rules and its family packages, by code. Each rule module defines one
    rule; a family's helper modules define none."""
    global _registry
    if _registry is None:
        import perflint.rules as package

        found: dict[str, type[Rule]] = {}
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}."):
            module = importlib.import_module(info.name)
            for value in vars(module).values():
                if isinstance(value, type) and issubclass(value, Rule) and value is not Rule \
                        and value.__module__ == module.__name__ and getattr(value, "code", None):
                    if value.code in found:
                        raise RuntimeError(f"duplicate rule code {value.code}")
                    found[value.code] = value
        _registry = dict(sorted(found.items()))
    return _registry


def rule_info(code: str):
    """The rule class (or tool rule) for a code."""
    for tool in TOOL_RULES:
        if tool.code == code:
            return tool
    return all_rules()[code]
