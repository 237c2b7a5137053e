"""Calls that torch.export refuses while it traces, as eager does, turned into
an ExportError that says what is wrong and where.

torch checks an op's arguments in its meta function, before any graph node
exists, and its message names neither the values nor the user's line
(torch.topk(x, 5) of a [2, 4] x: "k not in range for dimension"). The op and
its arguments are in the traceback: the innermost frame that dispatched an
ATen overload (locals `func` and `args`, FakeTensorMode's or the tracer's);
the user's line is the innermost frame outside torch and tern. For the ops
in _EXPLAIN, refused_call() rebuilds the message from them. Anything it does
not recognise (another op, another torch's frames) gives None: the caller
re-raises torch's error as it was.

This module imports torch only when it looks at an error.
"""
from __future__ import annotations

import linecache
import os
from types import TracebackType
from typing import Any, Callable

from tern.errors import ExportError
from tern.graph import Frame


def refused_call(error: BaseException) -> ExportError | None:
    """The ExportError for `error`, raised by torch.export.export while it
    traced a call whose arguments the op refuses; None if it is not one the
    exporter can explain (see _EXPLAIN)."""
    from tern.ops import op_name

    call = _failing_call(error.__traceback__)
    if call is None:
        return None
    func, args, kwargs = call
    explain = _EXPLAIN.get(op_name(func))
    why = explain(args, kwargs) if explain is not None else None
    if why is None:
        return None
    frame = _user_frame(error.__traceback__)
    where = frame.long(indent="  ") if frame else "(no source location)"
    return ExportError(f"{op_name(func)}: {why} (torch: {error}), at:\n    {where}")


def _failing_call(tb: TracebackType | None) -> tuple[Any, tuple[Any, ...], dict[str, Any]] | None:
    """(ATen overload, args, kwargs) of the innermost frame of `tb` that
    dispatched one, or None."""
    import torch

    found = None
    while tb is not None:
        local = tb.tb_frame.f_locals
        func, args = local.get("func"), local.get("args")
        if isinstance(func, torch._ops.OpOverload) and isinstance(args, tuple):
            kwargs = local.get("kwargs")
            found = (func, args, kwargs if isinstance(kwargs, dict) else {})
        tb = tb.tb_next
    return found


def _user_frame(tb: TracebackType | None) -> Frame | None:
    """The innermost frame of `tb` outside torch, tern and generated code."""
    import torch

    skip = (os.path.dirname(torch.__file__) + os.sep, os.path.dirname(__file__) + os.sep)
    found = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if not code.co_filename.startswith(skip) and not code.co_filename.startswith("<"):
            line = linecache.getline(code.co_filename, tb.tb_lineno).strip()
            found = Frame(code.co_filename, tb.tb_lineno, code.co_name, line)
        tb = tb.tb_next
    return found


def _argument(args: tuple[Any, ...], kwargs: dict[str, Any], i: int, name: str, default: Any) -> Any:
    return args[i] if i < len(args) else kwargs.get(name, default)


def _topk(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """aten::topk(Tensor self, SymInt k, int dim=-1, ...): 0 <= k <= self.size(dim)
    (a 0-d self has one element along dim 0 or -1)."""
    import torch

    self = args[0] if args else None
    k, dim = _argument(args, kwargs, 1, "k", None), _argument(args, kwargs, 2, "dim", -1)
    if not isinstance(self, torch.Tensor) or not isinstance(k, int) or not isinstance(dim, int):
        return None
    shape = list(self.shape)
    if shape and not -len(shape) <= dim < len(shape):
        return None
    size = shape[dim] if shape else 1
    if not isinstance(size, int):
        return None  # a dynamic dim: torch's own error names the Dim and its range
    if k < 0:
        return f"k = {k} is negative"
    if k > size:
        return f"k = {k} is larger than the size {size} of dim {dim} of its input {shape}"
    return None


# ATen op -> what is wrong with the arguments torch refused (None: not known).
_EXPLAIN: dict[str, Callable[[tuple[Any, ...], dict[str, Any]], str | None]] = {
    "aten::topk": _topk,
}
