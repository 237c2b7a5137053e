"""Which nodes are an activation or an affine map (x op number) the
backend computes: an elementwise family of its own, and what an op's
epilogue may take in (fusion.py).
"""
from __future__ import annotations

import math
from typing import Any

from tern.backends.cpu.ir import INF, name_of

# Elementwise activations an op can end with: op -> (Activation, min, max).
_ACTIVATIONS = {
    "aten::relu": ("Clamp", 0.0, INF),
    "aten::hardswish": ("Hardswish", -INF, INF),
    "aten::sigmoid": ("Sigmoid", -INF, INF),
    "aten::tanh": ("Tanh", -INF, INF),
    "aten::gelu": ("Gelu", -INF, INF),
    "aten::silu": ("Silu", -INF, INF),
}
ACTIVATIONS = tuple(_ACTIVATIONS) + ("aten::hardtanh", "aten::clamp")

# x op number as y = x * scale + shift: op -> (scale, shift) of the number s
# and alpha a.
_AFFINE = {
    "aten::add.Scalar": lambda s, a: (1.0, s * a),
    "aten::sub.Scalar": lambda s, a: (1.0, -s * a),
    "aten::mul.Scalar": lambda s, a: (s, 0.0),
    "aten::div.Scalar": lambda s, a: (1.0 / s, 0.0),
    "aten::neg": lambda s, a: (-1.0, 0.0),  # exact: a sign flip (rotary embeddings' rotate_half)
}
AFFINE = tuple(_AFFINE)


def affine_of(node: Any) -> tuple[float, float] | None:
    """(scale, shift) of an op.Scalar node with a finite nonzero number, or
    of a neg, else None."""
    name = name_of(node)
    if name == "aten::neg":
        return _AFFINE[name](-1.0, 1.0)
    if name not in _AFFINE or len(node.args) < 2 or not isinstance(node.args[1], (int, float)):
        return None
    s = float(node.args[1])
    alpha = float(node.kwargs.get("alpha", node.args[2] if len(node.args) > 2 else 1))
    if not math.isfinite(s) or (name == "aten::div.Scalar" and s == 0.0):
        return None
    return _AFFINE[name](s, alpha)


def activation_of(node: Any) -> tuple[str, float, float] | None:
    """The activation a call node computes, or None (hardtanh and scalar
    clamp are clamps)."""
    name = name_of(node)
    if name == "aten::hardtanh":
        lo = node.args[1] if len(node.args) > 1 else node.kwargs.get("min_val", -1.0)
        hi = node.args[2] if len(node.args) > 2 else node.kwargs.get("max_val", 1.0)
        return ("Clamp", float(lo), float(hi))
    if name == "aten::clamp":
        lo = node.args[1] if len(node.args) > 1 else node.kwargs.get("min")
        hi = node.args[2] if len(node.args) > 2 else node.kwargs.get("max")
        return ("Clamp", -INF if lo is None else float(lo), INF if hi is None else float(hi))
    if name == "aten::gelu" and (node.kwargs.get("approximate", node.args[1] if len(node.args) > 1 else "none") != "none"):
        return None
    return _ACTIVATIONS.get(name)


def epilogue(act: tuple[str, float, float]) -> dict[str, Any]:
    """An op's activation fields (cpu.fbs)."""
    return {"activation": act[0], "min": act[1], "max": act[2]}
