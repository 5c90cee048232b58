"""Shapes that several rules share, so that each rule file states only what is its own."""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from perflint.context import Context, may_be_tensor
from perflint.rule import Rule


class TensorMethodInHotLoop(Rule):
    """Reports `x.<method>(...)` that runs on every loop iteration when `x` may be a tensor.

    Quiet in compiled code (PFL402 covers graph breaks there) and in logging blocks gated by a step
    condition (`if step % k == 0:`), where the cost is paid once every k steps.
    """

    methods: ClassVar[frozenset[str]]
    proof_metric = "syncs"

    def visit_Call(self, node: cst.Call, ctx: Context) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in self.methods and ctx.in_hot_loop \
                and not ctx.in_compiled and may_be_tensor(ctx, func.value) and self.applies(node, ctx):
            self.report(ctx, node, self.message.format(method=func.attr.value))

    def applies(self, node: cst.Call, ctx: Context) -> bool:
        return True
