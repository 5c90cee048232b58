"""libcst rewrites that several rules' fixes share."""

from __future__ import annotations

import libcst as cst

_NO_SPACE = cst.SimpleWhitespace("")


def with_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """`f(a)` -> `f(a, name=value)`; an existing `name=` gets the new value. Keeps the argument layout:
    a trailing comma or its missing space are mended so the result reads `f(a, name=value)`."""
    args = list(call.args)
    for i, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == name:
            args[i] = arg.with_changes(value=value)
            return call.with_changes(args=args)
    if args:
        last = args[-1]
        if last.comma is cst.MaybeSentinel.DEFAULT:
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        elif type(last.comma) is cst.Comma and last.comma.whitespace_after.empty:
            args[-1] = last.with_changes(comma=last.comma.with_changes(whitespace_after=cst.SimpleWhitespace(" ")))
    args.append(cst.Arg(value=value, keyword=cst.Name(name),
                        equal=cst.AssignEqual(whitespace_before=_NO_SPACE, whitespace_after=_NO_SPACE)))
    return call.with_changes(args=args)
