"""Lowers the exporter's GraphModule (see tern.graph) to one method of the file.

The result, `MethodIR`, mirrors schema/tern.fbs's Method in plain Python:
  - values: user inputs first (in argument order), then for each node in graph
    order its argument values (schema order, defaults filled in, each non-tensor
    argument its own value) and its out tensors; constants get a value when
    their get_attr node is reached;
  - one KernelCall per call_function node (operator.getitem is not an op: it
    names one of its producer's out tensors);
  - one BackendCall per call_module node of a delegated subgraph
    (tern.backend), with a Delegate entry: backend, payload, input and output
    values;
  - outputs that are inputs, constants or repeats get an aten::clone into a
    fresh tensor, so every output has storage of its own.
Everything is numbered in graph order, so exporting twice gives the same
method (no dict-order or id() dependence).
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tern.errors import ExportError
from tern.graph import user_frame
from tern.ops import op_name

if TYPE_CHECKING:
    import torch
    import torch.fx


@dataclass
class TensorInfo:
    scalar_type: int  # Tern ScalarType number (runtime/core/scalar_type.h)
    sizes: tuple[int, ...]
    nbytes: int
    constant: int | None = None  # index into MethodIR.constants, for constant tensors


@dataclass
class Value:
    kind: str  # a member of schema/tern.fbs's Value union, or "None"
    data: Any = None  # TensorInfo, a Python scalar, str or list of them


@dataclass
class Instr:
    op: int  # index into MethodIR.operators; -1 for a backend call
    args: list[int]  # value indices: schema arguments, then out values (delegate: inputs, then outputs)
    node: str  # fx node name
    source: str  # "file.py:LINE in fn: code", or ""
    delegate: int | None = None  # index into MethodIR.delegates, for a backend call


@dataclass
class DelegateIR:
    backend: str  # the runtime backend's registered name
    payload: bytes
    inputs: list[int]  # value indices
    outputs: list[int]


@dataclass
class MethodIR:
    name: str
    values: list[Value] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    input_names: list[str] = field(default_factory=list)
    output_names: list[str] = field(default_factory=list)
    instructions: list[Instr] = field(default_factory=list)
    operators: list[str] = field(default_factory=list)  # "aten::add.Tensor"
    constants: list[bytes] = field(default_factory=list)  # distinct constant payloads
    delegates: list[DelegateIR] = field(default_factory=list)

    def instr_name(self, instr: Instr) -> str:
        """The op of a kernel call, or "backend:<name>" for a backend call."""
        if instr.delegate is not None:
            return f"backend:{self.delegates[instr.delegate].backend}"
        return self.operators[instr.op]

    def tensor_args(self, instr: Instr) -> list[int]:
        """The tensor values an instruction reads or writes (list items included)."""
        out: list[int] = []
        for i in instr.args:
            v = self.values[i]
            if v.kind == "Tensor":
                out.append(i)
            elif v.kind in ("TensorList", "OptionalTensorList"):
                out.extend(j for j in v.data if j >= 0)
        return out


# The most dimensions a tensor may have (runtime/core/tensor.h, kMaxDims); the
# runtime rejects a file with more at load, so the exporter refuses it first.
MAX_DIMS = 8

# Tern ScalarType number -> name, as in runtime/core/scalar_type.h.
SCALAR_TYPE_NAMES = ("float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16", "int32", "int64", "bool")


def scalar_type_of_name(name: str) -> int:
    """Tern's ScalarType number for a dtype name ("uint8")."""
    return SCALAR_TYPE_NAMES.index(name)


def scalar_type_of(dtype: "torch.dtype") -> int:
    """Tern's ScalarType number for a torch dtype; ExportError if it has none."""
    import torch

    table = {
        torch.float32: 0, torch.float64: 1, torch.float16: 2, torch.bfloat16: 3, torch.int8: 4,
        torch.uint8: 5, torch.int16: 6, torch.int32: 7, torch.int64: 8, torch.bool: 9,
    }
    if dtype not in table:
        raise ExportError(f"dtype {dtype} is not supported by format v1")
    return table[dtype]


def emit_method(gm: "torch.fx.GraphModule", name: str = "forward") -> MethodIR:
    """Builds the method for `gm` (passes already run, ops already checked)."""
    return _Emitter(gm, name).run()


class _Emitter:
    def __init__(self, gm: "torch.fx.GraphModule", name: str) -> None:
        self.gm = gm
        self.m = MethodIR(name)
        self.env: dict[Any, int | list[int]] = {}  # fx node -> value index (or indices)
        self.op_index: dict[str, int] = {}
        self.const_index: dict[bytes, int] = {}

    def run(self) -> MethodIR:
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                self._input(node)
            elif node.op == "get_attr":
                self.env[node] = self._constant(getattr(self.gm, node.target))
            elif node.op == "call_function":
                self._call(node)
            elif node.op == "call_module":
                self._backend_call(node)
            elif node.op == "output":
                self._outputs(node)
            else:
                raise ExportError(f"node {node.name}: fx op {node.op!r} is not supported")
        return self.m

    # values

    def _add(self, kind: str, data: Any = None) -> int:
        self.m.values.append(Value(kind, data))
        return len(self.m.values) - 1

    def _tensor(self, t: Any, what: str, constant: int | None = None) -> int:
        import torch

        if not isinstance(t, torch.Tensor):
            raise ExportError(f"{what}: expected a tensor, got {type(t).__name__}")
        sizes = tuple(int(s) for s in t.shape)
        if len(sizes) > MAX_DIMS:
            raise ExportError(f"{what}: {len(sizes)} dimensions, at most {MAX_DIMS} supported by format v1")
        info = TensorInfo(scalar_type_of(t.dtype), sizes, t.numel() * t.element_size(), constant)
        return self._add("Tensor", info)

    def _constant(self, t: "torch.Tensor") -> int:
        data = _tensor_bytes(t)
        index = None
        if data:
            index = self.const_index.setdefault(data, len(self.m.constants))
            if index == len(self.m.constants):
                self.m.constants.append(data)
        return self._tensor(t, "constant", index)

    def _input(self, node: "torch.fx.Node") -> None:
        v = self._tensor(node.meta.get("val"), f"input {node.name} (only tensor inputs are supported)")
        self.env[node] = v
        self.m.inputs.append(v)
        self.m.input_names.append(node.name)

    # instructions

    def _call(self, node: "torch.fx.Node") -> None:
        if node.target is operator.getitem:
            src = self.env[node.args[0]]
            self.env[node] = src[node.args[1]] if isinstance(src, list) else src
            return
        schema = node.target._schema
        args = self._schema_args(node, schema)
        outs, self.env[node] = self._outs(node, schema)
        self._instr(op_name(node.target), args + outs, node.name, _source(node))

    def _backend_call(self, node: "torch.fx.Node") -> None:
        """A delegated subgraph (tern.backend): its inputs are the call's
        arguments, its outputs new tensors (node.meta["val"], one or a tuple)."""
        from tern.backend import delegate_of

        found = delegate_of(self.gm.get_submodule(node.target))
        if found is None:
            raise ExportError(f"node {node.name}: call_module {node.target!r} is not a delegated subgraph")
        backend, payload, workspace = found
        inputs = [self._tensor_arg(a, f"node {node.name} input {i}") for i, a in enumerate(node.args)]
        val = node.meta.get("val")
        vals = list(val) if isinstance(val, (tuple, list)) else [val]
        outputs = [self._tensor(v, f"output {i} of {node.name}") for i, v in enumerate(vals)]
        self.env[node] = outputs if isinstance(val, (tuple, list)) else outputs[0]
        if workspace >= 0:  # planned like any tensor, live only during this call
            outputs.append(self._add("Tensor", TensorInfo(scalar_type_of_name("uint8"), (workspace,), workspace)))
        self.m.delegates.append(DelegateIR(backend, payload, inputs, outputs))
        covered = [n.name for n in self.gm.get_submodule(node.target).graph.nodes if n.op == "call_function"]
        source = f"backend {backend}: " + " ".join(covered)
        if len(source) > 300:
            source = source[:297] + "..."
        self.m.instructions.append(Instr(-1, inputs + outputs, node.name, source, len(self.m.delegates) - 1))

    def _instr(self, name: str, args: list[int], node: str, source: str) -> None:
        op = self.op_index.setdefault(name, len(self.m.operators))
        if op == len(self.m.operators):
            self.m.operators.append(name)
        self.m.instructions.append(Instr(op, args, node, source))

    def _schema_args(self, node: "torch.fx.Node", schema: Any) -> list[int]:
        out = []
        for i, a in enumerate(schema.arguments):
            if not a.kwarg_only and i < len(node.args):
                v = node.args[i]
            elif a.name in node.kwargs:
                v = node.kwargs[a.name]
            elif a.has_default_value():
                v = a.default_value
            else:
                raise ExportError(f"node {node.name}: missing argument {a.name!r} of {schema}")
            out.append(self._arg(a.real_type, v, a.N, f"node {node.name} argument {a.name}"))
        return out

    def _outs(self, node: "torch.fx.Node", schema: Any) -> tuple[list[int], int | list[int]]:
        """Out values to append to the args, and what the node's value is in env."""
        val = node.meta.get("val")
        vals = [val] if len(schema.returns) == 1 else list(val)
        outs: list[int] = []
        elems: list[int] = []
        for r, v in zip(schema.returns, vals):
            if r.real_type.kind() == "ListType":
                items = [self._tensor(t, f"output of {node.name}") for t in v]
                outs.append(self._add("TensorList", items))
                elems.extend(items)
            else:
                outs.append(self._tensor(v, f"output of {node.name}"))
                elems.append(outs[-1])
        single = len(schema.returns) == 1 and schema.returns[0].real_type.kind() != "ListType"
        return outs, (elems[0] if single else elems)

    def _outputs(self, node: "torch.fx.Node") -> None:
        seen: set[int] = set()
        for i, arg in enumerate(node.args[0]):
            if not hasattr(arg, "op") or not isinstance(self.env.get(arg), int):
                raise ExportError(f"output {i} is not a tensor ({arg!r}); only tensor outputs are supported")
            v = self.env[arg]
            if arg.op in ("placeholder", "get_attr") or v in seen:
                v = self._clone(v, arg)
            seen.add(v)
            self.m.outputs.append(v)
            self.m.output_names.append(arg.name)

    def _clone(self, src: int, node: "torch.fx.Node") -> int:
        """out = aten::clone(src, memory_format=None) into a fresh tensor."""
        info = self.m.values[src].data
        out = self._add("Tensor", TensorInfo(info.scalar_type, info.sizes, info.nbytes))
        self._instr("aten::clone", [src, self._add("None"), out], f"{node.name}_output_copy", _source(node))
        return out

    # arguments

    def _arg(self, t: Any, v: Any, n: int | None, what: str) -> int:
        kind = t.kind()
        if kind == "OptionalType":
            t, kind = t.getElementType(), t.getElementType().kind()
        if v is None or kind in ("LayoutType", "DeviceObjType", "MemoryFormatType", "GeneratorType"):
            return self._add("None")
        if kind == "TensorType":
            return self._tensor_arg(v, what)
        if kind == "ListType":
            return self._list_arg(t.getElementType(), v, n, what)
        if kind == "ScalarTypeType":
            return self._add("Int", scalar_type_of(v))
        if kind in ("IntType", "SymIntType") and _is_int(v):
            return self._add("Int", int(v))
        if kind in ("FloatType", "SymFloatType") and isinstance(v, (int, float)):
            return self._add("Double", float(v))
        if kind in ("BoolType", "SymBoolType") and isinstance(v, bool):
            return self._add("Bool", v)
        if kind == "NumberType" and isinstance(v, (bool, int, float)):
            return self._scalar(v)
        if kind == "StringType" and isinstance(v, str):
            return self._add("String", v)
        raise ExportError(f"{what}: cannot encode {v!r} as {t}")

    def _scalar(self, v: bool | int | float) -> int:
        if isinstance(v, bool):
            return self._add("Bool", v)
        return self._add("Int", v) if isinstance(v, int) else self._add("Double", float(v))

    def _tensor_arg(self, v: Any, what: str) -> int:
        if isinstance(v, (bool, int, float)):
            import torch

            return self._constant(torch.tensor(v))  # a 0-d tensor of the dtype torch gives the number
        idx = self.env.get(v) if hasattr(v, "op") else None
        if not isinstance(idx, int):
            raise ExportError(f"{what}: expected a tensor, got {v!r}")
        return idx

    def _list_arg(self, elem: Any, v: Any, n: int | None, what: str) -> int:
        kind = elem.kind()
        if kind == "TensorType":
            return self._add("TensorList", [self._tensor_arg(x, what) for x in v])
        if kind == "OptionalType":
            return self._add("OptionalTensorList", [-1 if x is None else self._tensor_arg(x, what) for x in v])
        items = [v] * (n or 1) if not isinstance(v, (list, tuple)) else list(v)
        if kind in ("IntType", "SymIntType") and all(_is_int(x) for x in items):
            return self._add("IntList", [int(x) for x in items])
        if kind == "FloatType" and all(isinstance(x, (int, float)) for x in items):
            return self._add("DoubleList", [float(x) for x in items])
        if kind == "BoolType" and all(isinstance(x, bool) for x in items):
            return self._add("BoolList", items)
        raise ExportError(f"{what}: cannot encode {v!r} as List[{elem}]")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _source(node: "torch.fx.Node") -> str:
    frame = user_frame(node)
    return frame.short() if frame else ""


def _tensor_bytes(t: "torch.Tensor") -> bytes:
    """The tensor's elements, contiguous row-major, in the host's (little-endian) byte order."""
    import torch

    t = t.detach().cpu().contiguous()
    if t.numel() == 0:
        return b""
    return t.reshape(-1).view(torch.uint8).numpy().tobytes()
