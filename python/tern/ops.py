"""The operator names the runtime has kernels for, and ATen op naming.

Names follow the runtime's registry: "aten::add.Tensor", and "aten::relu" for
a default overload (no suffix). This module does not import torch.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

# kernels/portable/ops.def in a repository checkout (python/tern/ops.py -> repo root).
OPS_DEF = Path(__file__).resolve().parents[2] / "kernels" / "portable" / "ops.def"

_TERN_OP = re.compile(r'^\s*TERN_OP\(\s*"([^"]+)"', re.MULTILINE)
# TERN_OP("aten::add.Tensor", 1, add_tensor_prepare, op_add.cpp, "floating integral bool")
_TERN_OP_DTYPES = re.compile(r'^\s*TERN_OP\(\s*"([^"]+)"[^\n]*,\s*"([\w ]+)"\s*\)', re.MULTILINE)

# Tern's dtype names (runtime/core/scalar_type.h) and the groups ops.def may use
# (runtime/kernel/kernel.h, dtype_set).
DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16", "int32", "int64", "bool")
DTYPE_GROUPS = {"floating": ("float32", "float64"), "half": ("float16", "bfloat16"), "integral": ("int8", "uint8", "int16", "int32", "int64")}


def expand_dtypes(words: str) -> frozenset[str] | None:
    """The dtypes of an ops.def dtype list ("floating integral bool"); None for "any"."""
    if words.split() == ["any"]:
        return None
    out: set[str] = set()
    for w in words.split():
        if w not in DTYPES and w not in DTYPE_GROUPS:
            raise ValueError(f"unknown dtype {w!r} in {words!r}")
        out.update(DTYPE_GROUPS.get(w, (w,)))
    return frozenset(out)


def parse_ops_def(path: Path) -> frozenset[str]:
    """The op names listed by TERN_OP(...) lines of an ops.def file."""
    return frozenset(_TERN_OP.findall(path.read_text()))


def parse_ops_dtypes(path: Path) -> dict[str, frozenset[str] | None]:
    """Op name -> the dtypes its kernel takes (of its first tensor argument),
    None for any, from the TERN_OP lines of an ops.def file."""
    return {name: expand_dtypes(words) for name, words in _TERN_OP_DTYPES.findall(path.read_text())}


def supported_dtypes() -> dict[str, frozenset[str] | None]:
    """Op name -> the dtypes of its first tensor argument that some kernel of
    the runtime takes (None: any, the kernel's prepare decides). Like
    supported_ops(): the compiled runtime's registry, else ops.def."""
    try:
        import tern._runtime as _runtime
    except ImportError:
        if OPS_DEF.is_file():
            return parse_ops_dtypes(OPS_DEF)
        raise RuntimeError(f"tern: the compiled runtime is not importable and {OPS_DEF} does not exist") from None
    out: dict[str, frozenset[str] | None] = {}
    for name, dtypes in _runtime.registered_op_dtypes():
        if name in out and out[name] is None:
            continue
        out[name] = None if not dtypes else frozenset(dtypes) | (out.get(name) or frozenset())
    return out


def _runtime_ops() -> frozenset[str] | None:
    try:
        import tern._runtime as _runtime  # the compiled bindings, when built
    except ImportError:
        return None
    return frozenset(_runtime.registered_ops())


def supported_ops() -> frozenset[str]:
    """The ops the runtime can run.

    Prefers the compiled runtime's registry (the exact build the model will
    meet); falls back to kernels/portable/ops.def in a repository checkout.
    """
    ops = _runtime_ops()
    if ops is not None:
        return ops
    if OPS_DEF.is_file():
        return parse_ops_def(OPS_DEF)
    raise RuntimeError(
        "tern: cannot tell which ops the runtime supports: the compiled runtime "
        f"(tern._runtime) is not importable and {OPS_DEF} does not exist; "
        "pass supported_ops= to tern.export"
    )


def op_name(target: Any) -> str:
    """The runtime's name of an fx call_function target.

    torch.ops.aten.add.Tensor -> "aten::add.Tensor"; torch.ops.aten.relu.default
    -> "aten::relu". Targets that are not ATen overloads get their Python name.
    """
    schema = getattr(target, "_schema", None)
    if schema is None:
        return getattr(target, "__qualname__", None) or str(target)
    return f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name


def split_op_name(name: str) -> tuple[str, str]:
    """"aten::add.Tensor" -> ("aten::add", "Tensor"); "aten::relu" -> ("aten::relu", "")."""
    ns, _, rest = name.partition("::")
    base, _, overload = rest.partition(".")
    return f"{ns}::{base}", overload
