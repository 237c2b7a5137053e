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


def parse_ops_def(path: Path) -> frozenset[str]:
    """The op names listed by TERN_OP(...) lines of an ops.def file."""
    return frozenset(_TERN_OP.findall(path.read_text()))


def _runtime_ops() -> frozenset[str] | None:
    try:
        from tern import _runtime  # the compiled bindings, when built
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
