"""DataLoader constructions and the loops that iterate them."""

from __future__ import annotations

import libcst as cst

from perflint.model import torchapi as api
from perflint.model.names import dotted, keyword, positional
from perflint.model.program import FileModel
from perflint.rule import Rule

def is_data_loader(model: FileModel, call: cst.Call) -> bool:
    qual = model.call_name(call)
    return qual is not None and (qual in api.DATA_LOADERS or qual.endswith(".DataLoader")) \
        and not any(a.star for a in call.args)


def loop_source(model: FileModel, iterable: cst.BaseExpression) -> str | None:
    """The dotted name a loop really iterates: `enumerate(L)`, `tqdm(L)`, `iter(L)`, `zip(L, ...)` -> "L"."""
    while type(iterable) is cst.Call and iterable.args and type(iterable.func) in (cst.Name, cst.Attribute):
        head = (dotted(iterable.func) or "").rsplit(".", 1)[-1]
        if head not in ("enumerate", "tqdm", "iter", "zip", "trange", "track", "progress_bar"):
            return None
        iterable = iterable.args[0].value
    return dotted(iterable)


class DataLoaderRule(Rule):
    """Collects the `DataLoader(...)` calls of a file (by the name they are bound to, when they are) and
    the loops over data loaders; subclasses decide in `finish` which constructions to report."""

    def visit_Module(self, node: cst.Module, model: FileModel) -> None:
        self.loaders: list[tuple[cst.Call, str | None]] = []
        self._bound: set[cst.Call] = set()

    def visit_Assign(self, node: cst.Assign, model: FileModel) -> None:
        if type(node.value) is cst.Call and is_data_loader(model, node.value) and len(node.targets) == 1:
            self.loaders.append((node.value, dotted(node.targets[0].target)))
            self._bound.add(node.value)

    def visit_Call(self, node: cst.Call, model: FileModel) -> None:
        if is_data_loader(model, node) and node not in self._bound:
            self.loaders.append((node, None))


def workers_arg(call: cst.Call) -> cst.Arg | None:
    return keyword(call, "num_workers") or positional(call, 5)
