"""The cpu backend's program as the exporter builds it (the ops of
backends/cpu/schema/cpu.fbs over values), and what every op family asks of
an fx node. Imports nothing else of the backend: every family may use it.
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

import numpy as np

from tern.errors import ExportError
from tern.ops import op_name

NHWC, PLAIN = "nhwc", "plain"
TO_NHWC, TO_NCHW = (0, 2, 3, 1), (0, 3, 1, 2)
INF = float("inf")
NO_ACTIVATION = ("None", -INF, INF)  # an op's activation fields (cpu.fbs Activation, min, max) when it has none
VIEWS = ("aten::view", "aten::_unsafe_view", "aten::reshape")
ELEMENT_BYTES = {"Float32": 4, "Int8": 1, "Bool": 1, "UInt8": 1}


@dataclass
class Value:
    sizes: tuple[int, ...]
    storage: str  # "Input", "Output", "Workspace" or "Weights"
    index: int = 0  # Input / Output
    buffer: int = -1  # Workspace: the buffer (aliases share one)
    data: np.ndarray | None = None  # Weights
    offset: int = 0  # set by the compiler's plan
    within: int = 0  # Workspace: bytes into its buffer (a part of a larger value)
    dtype: str = "Float32"  # cpu.fbs DType: "Float32", "Int8", "Bool" or "UInt8"

    @property
    def nbytes(self) -> int:
        return ELEMENT_BYTES[self.dtype] * math.prod(self.sizes)


@dataclass
class Op:
    kind: str  # a member of cpu.fbs's OpKind
    fields: dict[str, Any]
    nodes: str
    reads: list[int]
    writes: list[int]
    # what fusion passes decided for it (fusion.py): {"activation": node name, ...};
    # for readers and tests, not serialized
    decisions: dict[str, Any] = field(default_factory=dict)
    last: Any = None  # the last of its nodes (not serialized)
    # for debuggers (cpu.fbs Op.out): the value holding `last` once the op
    # ran, or -1, and whether a 4-d one holds it as NHWC (Compiler.mark_outs)
    out: int = -1
    out_nhwc: bool = False


EPILOGUE = "tern_cpu_epilogue"  # node.meta key of a head node: its Epilogue


@dataclass
class Epilogue:
    """What a head op (a float convolution, linear layer, binary op or x op
    number) takes in after its own node, as fusion.choose_epilogues decided
    it (node.meta[EPILOGUE]); the family's lowering only reads it."""
    nodes: list[Any]  # the head, then each node taken in (reshapes passed included), in order
    bias: Any = None  # the add of a constant over the last dim (linear layers) ...
    bias_value: Any = None  # ... and that constant (a get_attr)
    residual: Any = None  # the add of a value computed before the head's op ...
    residual_value: Any = None  # ... and the node of that value
    activation: Any = None  # the activation node taken in
    act: tuple[str, float, float] = NO_ACTIVATION  # its (Activation, min, max)

    @property
    def last(self) -> Any:
        """The node whose value the op writes."""
        return self.nodes[-1]

    def decisions(self) -> dict[str, Any]:
        """For Op.decisions: {"bias" | "residual" | "activation": the node's name}."""
        taken = (("bias", self.bias), ("residual", self.residual), ("activation", self.activation))
        return {key: n.name for key, n in taken if n is not None}


def epilogue_of(node: Any) -> Epilogue:
    """The Epilogue recorded on a head node (fusion.choose_epilogues runs
    before lowering and records one on every head)."""
    ep = node.meta.get(EPILOGUE)
    if ep is None:
        raise ExportError(f"cpu backend: node {node.name} was lowered without its epilogue decision "
                          "(fusion.choose_epilogues)")
    return ep


@dataclass
class Program:
    values: list[Value] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)
    num_inputs: int = 0
    num_outputs: int = 0
    workspace_bytes: int = 0
    weights: bytes = b""


class Builder(Protocol):
    """What a family's lower(c, node) asks of the compiler (compile.Compiler)."""

    gm: Any  # the claimed subgraph (torch.fx.GraphModule)
    options: Any  # the partitioner's CpuOptions
    p: Program
    env: dict[Any, tuple[int, str]]  # node -> (value, layout NHWC or PLAIN)
    done: set[Any]  # nodes an op already covers
    lazy_dq: dict[Any, tuple[Any, float, int]]
    dynamic: dict[Any, tuple[int, int]]

    def workspace(self, sizes: tuple[int, ...], dtype: str = "Float32") -> int: ...
    def alias(self, v: int, sizes: tuple[int, ...]) -> int: ...
    def part(self, v: int, start: int, sizes: tuple[int, ...]) -> int: ...
    def weights(self, data: np.ndarray) -> int: ...
    def weights_int8(self, data: np.ndarray) -> int: ...
    def const(self, node: Any) -> np.ndarray: ...
    def const_bool(self, node: Any) -> np.ndarray: ...
    def op(self, kind: str, fields: dict[str, Any], nodes: list[Any], reads: list[int], writes: list[int],
           decisions: dict[str, Any] | None = None) -> None: ...
    def get(self, node: Any) -> tuple[int, str]: ...
    def nhwc(self, node: Any) -> int: ...
    def plain(self, node: Any) -> int: ...


# node helpers


def name_of(node: Any) -> str:
    """The op name of a call_function node, else ""."""
    return op_name(node.target) if getattr(node, "op", None) == "call_function" else ""


def val(node: Any) -> Any:
    return node.meta.get("val") if hasattr(node, "meta") else None


def rank(node: Any) -> int:
    v = val(node)
    return v.dim() if v is not None and hasattr(v, "dim") else -1


class SymDim(int):
    """A size that depends on the method's dynamic dims (torch.export.Dim),
    in a subgraph of dynamic shapes. As an int it is its upper bound: what
    the workspace plan reserves, and what a decision made on its value
    assumes. `expr` is its sympy expression over torch.export's symbols,
    which the payload stores (payload.py) for the runtime to evaluate at each
    call's input sizes. Sums, differences, products, floor divisions and
    remainders with ints and SymDims are SymDims (ints when constant); two
    SymDims are equal when their expressions are, and never equal an int:
    a size that only may be 1 is not 1."""

    expr: Any
    env: Any  # the ShapeEnv of the export, for bounds

    def __new__(cls, bound: int, expr: Any, env: Any) -> "SymDim":
        obj = super().__new__(cls, bound)
        obj.expr, obj.env = expr, env
        return obj

    def _with(self, other: Any, op: Callable[[Any, Any], Any], reflected: bool = False) -> Any:
        if not isinstance(other, int) or isinstance(other, bool):
            return NotImplemented
        a, b = self.expr, other.expr if isinstance(other, SymDim) else other
        return sym_dim(op(b, a) if reflected else op(a, b), self.env)

    def __add__(self, o: Any) -> Any: return self._with(o, operator.add)
    def __radd__(self, o: Any) -> Any: return self._with(o, operator.add, True)
    def __sub__(self, o: Any) -> Any: return self._with(o, operator.sub)
    def __rsub__(self, o: Any) -> Any: return self._with(o, operator.sub, True)
    def __mul__(self, o: Any) -> Any: return self._with(o, operator.mul)
    def __rmul__(self, o: Any) -> Any: return self._with(o, operator.mul, True)
    def __floordiv__(self, o: Any) -> Any: return self._with(o, _floordiv)
    def __rfloordiv__(self, o: Any) -> Any: return self._with(o, _floordiv, True)
    def __mod__(self, o: Any) -> Any: return self._with(o, _mod)
    def __rmod__(self, o: Any) -> Any: return self._with(o, _mod, True)

    def __eq__(self, o: object) -> bool:
        return isinstance(o, SymDim) and (self.expr - o.expr).expand() == 0

    def __ne__(self, o: object) -> bool:
        return not self.__eq__(o)

    def __hash__(self) -> int:
        return hash(self.expr)

    def __repr__(self) -> str:
        return f"{self.expr}(<={int(self)})"


def _floordiv(a: Any, b: Any) -> Any:
    from torch.utils._sympy.functions import FloorDiv

    return FloorDiv(a, b)


def _mod(a: Any, b: Any) -> Any:
    from torch.utils._sympy.functions import PythonMod

    return PythonMod(a, b)


class UnboundedSize(ExportError):
    """A dynamic size without an upper bound (a Dim without max): the
    partitioner leaves its node portable, and the emitter says what to do."""


def sym_dim(expr: Any, env: Any) -> int:
    """A SymDim of a sympy expression, or the int it is when constant."""
    import sympy

    expr = sympy.sympify(expr)
    if expr.is_Integer:
        return int(expr)
    # bound_sympy takes ~0.1 ms and a language model asks for the same few
    # sizes tens of thousands of times: remembered with the ShapeEnv (its
    # ranges are final once torch.export is done).
    bounds = env.__dict__.setdefault("_tern_upper_bounds", {})
    upper = bounds.get(expr)
    if upper is None:
        upper = bounds[expr] = env.bound_sympy(expr).upper
    if not (isinstance(upper, int) or getattr(upper, "is_Integer", False)):
        raise UnboundedSize(f"size {expr} has no upper bound over the dynamic dims' ranges")
    return SymDim(int(upper), expr, env)


def dim_of(s: Any) -> int:
    """A tensor's size as the backend computes with it: an int, or a SymDim
    for a torch.SymInt that is not constant."""
    import torch

    if isinstance(s, torch.SymInt):
        node = s.node
        return sym_dim(node.expr, node.shape_env)
    return int(s)


def dims(t: Any) -> tuple[int, ...]:
    """A tensor's (fake tensor's) sizes: ints and SymDims (dim_of)."""
    return tuple(dim_of(s) for s in t.shape)


def is_dynamic(sizes: Any) -> bool:
    return any(isinstance(s, SymDim) for s in sizes)


def shape(node: Any) -> tuple[int, ...]:
    return dims(node.meta["val"])


def is_const(node: Any) -> bool:
    return getattr(node, "op", None) == "get_attr"


def dtype_of(node: Any) -> str:
    import torch

    dtype = node.meta["val"].dtype
    # UInt8: GGUF rows a BlockLinear reads from a delegate input (linear.py)
    return {torch.int8: "Int8", torch.bool: "Bool", torch.uint8: "UInt8"}.get(dtype, "Float32")


def not_float32(node: Any) -> str | None:
    """None if every tensor the node reads and writes is float32 (max pool's
    int64 indices allowed: never used), else what is not."""
    import torch

    vals = [val(a) for a in node.all_input_nodes] + [val(node)]
    tensors = []
    for v in vals:
        tensors += list(v) if isinstance(v, (tuple, list)) else [v]
    tensors = [t for t in tensors if isinstance(t, torch.Tensor)]
    if tensors and all(t.dtype in (torch.float32, torch.int64) for t in tensors) and any(
            t.dtype == torch.float32 for t in tensors):
        return None
    dtypes = sorted({str(t.dtype).replace("torch.", "") for t in tensors})
    return f"the backend runs float32 tensors; this op has {', '.join(dtypes) or 'none'}"


def only_user(node: Any) -> Any:
    """node's one user if it has one and it is a call, else None."""
    users = list(node.users)
    return users[0] if len(users) == 1 and users[0].op == "call_function" else None


def only_values_used(node: Any) -> bool:
    return all(u.target is operator.getitem and u.args[1] == 0 for u in node.users)


def before(a: Any, b: Any) -> bool:
    """Node a comes before node b in their graph."""
    n = a
    while n is not None and n.op != "root":
        if n is b:
            return True
        n = n.next
    return False


def pair(v: Any) -> tuple[int, int]:
    v = tuple(int(x) for x in v)
    return (v[0], v[0]) if len(v) == 1 else (v[0], v[1])


def pad_amounts(node: Any) -> tuple[int, int, int, int] | None:
    """(top, left, bottom, right) of an aten.constant_pad_nd that adds zeros
    to the last two dims of a 4-d tensor and nothing to the others; None
    for any other pad (another value, a crop, other dims) or node."""
    if name_of(node) != "aten::constant_pad_nd" or len(shape(node)) != 4:
        return None
    pad = list(node.args[1])
    value = node.args[2] if len(node.args) > 2 else node.kwargs.get("value", 0)
    if value != 0 or len(pad) not in (2, 4, 6, 8) or any(not isinstance(p, int) or p < 0 for p in pad):
        return None
    if any(pad[4:]):
        return None  # pads of the batch or channel dims
    left, right = pad[0], pad[1]
    top, bottom = (pad[2], pad[3]) if len(pad) > 2 else (0, 0)
    return top, left, bottom, right
