"""Which operators .tern files call, with which dtypes: the input of a selective build.

    paths = ["a.tern", "b.tern"]
    usage = ops_used(paths)                      # {"aten::convolution": OpUsage(...), ...}
    missing = set(usage) - kernel_ops()[0]       # ops a runtime from ops.def cannot run
    print(format_table(usage, missing, paths))    # `tern ops --for a.tern b.tern`
    print(format_def(usage, paths))              # `... --format def`, for -DTERN_SELECT_OPS=

The dtype of a kernel call is the dtype of its first tensor argument, inputs
before outs (the items of a tensor list count as tensors), so an op with no
tensor input (e.g. aten::arange) gets the dtype of its out. Only kernel calls
are counted. Does not import torch.
"""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, Iterable

from tern.ops import OPS_DEF, parse_ops_def, supported_ops

DTYPE_NAMES = [  # by ScalarType value (schema/tern.fbs)
    "float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16", "int32", "int64", "bool"]


class UsageError(Exception):
    """A file that cannot be read (a .tern file or a kernel list); the message names it."""


@dataclasses.dataclass
class OpUsage:
    """How the given files use one operator."""

    dtypes: set[str] = dataclasses.field(default_factory=set)
    calls: int = 0
    files: set[str] = dataclasses.field(default_factory=set)


def ops_used(paths: Iterable[str]) -> dict[str, OpUsage]:
    """The union over `paths` of the ops their kernel calls use. Raises UsageError."""
    usage: dict[str, OpUsage] = {}
    for path in paths:
        for op, dtype in _kernel_calls(path):
            u = usage.setdefault(op, OpUsage())
            u.calls += 1
            u.files.add(path)
            if dtype is not None:
                u.dtypes.add(dtype)
    return usage


def backends_used(paths: Iterable[str]) -> dict[str, int]:
    """Backend name -> how many delegates of `paths` it runs (format 1.1):
    their ops run on the backend, not on kernels. Raises UsageError."""
    used: dict[str, int] = {}
    for path in paths:
        for m in _read(path)["methods"]:
            for d in m.get("delegates", []):
                used[d["backend"]] = used.get(d["backend"], 0) + 1
    return used


def _read(path: str) -> dict[str, Any]:
    from tern.inspect import read_program

    if not os.path.isfile(path):
        raise UsageError(f"{path}: no such file")
    try:
        return read_program(path)
    except OSError as e:
        raise UsageError(f"{path}: {e.strerror or e}") from e
    except ValueError as e:  # the reader's own checks: "not a .tern file (bad magic)", ...
        raise UsageError(f"{path}: {e}") from e
    except Exception as e:  # struct.error, flatbuffers' errors on a damaged flatbuffer
        raise UsageError(f"{path}: not a valid .tern file ({type(e).__name__}: {e})") from e


def _kernel_calls(path: str) -> list[tuple[str, str | None]]:
    """(op name, dtype or None) for every kernel call of every method of `path`."""
    calls = []
    for m in _read(path)["methods"]:
        for i, ins in enumerate(m["instructions"]):
            if ins["kind"] != "KernelCall":
                continue
            try:
                calls.append((m["operators"][ins["op"]], instruction_dtype(m["values"], ins["args"])))
            except (IndexError, KeyError, TypeError) as e:
                raise UsageError(f"{path}: not a valid .tern file (method '{m['name']}', "
                                 f"instruction {i}: index out of range)") from e
    return calls


def instruction_dtype(values: list[dict[str, Any]], args: list[int]) -> str | None:
    """The dtype of a kernel call: that of its first tensor argument (see the
    module's docstring); `values` and `args` as tern.inspect.read_program
    gives them. None if no argument is a tensor."""
    for a in args:
        v = values[a]
        if v["kind"] == "Tensor":
            return _dtype_name(v["scalar_type"])
        if v["kind"] in ("TensorList", "OptionalTensorList"):
            items = [values[i] for i in v["items"] if i >= 0]  # -1 is None in an optional list
            if items:
                return _dtype_name(items[0]["scalar_type"])
    return None


def _dtype_name(scalar_type: int) -> str:
    return DTYPE_NAMES[scalar_type] if 0 <= scalar_type < len(DTYPE_NAMES) else f"dtype{scalar_type}"


def kernel_ops(ops_def: str | None = None, prefer_ops_def: bool = True) -> tuple[frozenset[str], str]:
    """The ops with a kernel, and where that list came from.

    From `ops_def` when given; else, with `prefer_ops_def`, from the checkout's
    kernels/portable/ops.def when there is one; else from tern.ops.supported_ops()
    (the compiled runtime's registry, or that ops.def).
    """
    if ops_def is not None:
        if not os.path.isfile(ops_def):
            raise UsageError(f"{ops_def}: no such file")
        return parse_ops_def(Path(ops_def)), ops_def
    if prefer_ops_def and OPS_DEF.is_file():
        return parse_ops_def(OPS_DEF), str(OPS_DEF)
    try:
        return supported_ops(), "this runtime (tern.ops.supported_ops())"
    except RuntimeError as e:
        raise UsageError(str(e)) from e


def format_table(usage: dict[str, OpUsage], missing: set[str], paths: list[str],
                 backends: dict[str, int] | None = None) -> str:
    """One line per op, sorted: name, dtypes, a mark on ops in `missing`; then a
    totals comment, and one for the backends the files' delegates need."""
    width = max((len(op) for op in usage), default=0) + 2
    lines = []
    for op in sorted(usage):
        mark = "  # no portable kernel" if op in missing else ""
        lines.append(f"{op:<{width}}{', '.join(sorted(usage[op].dtypes)) or '-'}{mark}")
    calls = sum(u.calls for u in usage.values())
    total = f"# {_count(len(usage), 'op')}, {_count(calls, 'kernel call')} in {_count(len(paths), 'file')}"
    if missing:
        total += f"; {len(missing)} without a portable kernel"
    lines.append(total)
    for name, n in sorted((backends or {}).items()):
        lines.append(f"# backend {name}: {_count(n, 'delegate')} (the runtime must register it)")
    return "\n".join(lines)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def format_def(usage: dict[str, OpUsage], paths: list[str]) -> str:
    """A selection file for CMake's -DTERN_SELECT_OPS: one op per line, its dtypes as a comment."""
    width = max((len(op) for op in usage), default=0) + 2
    lines = [
        "# Tern op selection: cmake -DTERN_SELECT_OPS=<this file> builds only these kernels.",
        f"# The ops used by {' '.join(paths)}" if paths else "# Every op of the runtime.",
        "# One ATen op per line; '#' starts a comment.",
    ]
    for op in sorted(usage):
        dtypes = ", ".join(sorted(usage[op].dtypes))
        lines.append(f"{op:<{width}}# {dtypes}" if dtypes else op)
    return "\n".join(lines)
