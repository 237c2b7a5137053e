"""Lowers the exporter's GraphModule (see tern.graph) to one method of the file.

The result, `MethodIR`, mirrors schema/tern.fbs's Method in plain Python:
  - values: user inputs first (in argument order), then for each node in graph
    order its argument values (schema order, defaults filled in, each non-tensor
    argument its own value) and its out tensors; constants get a value when
    their get_attr node is reached;
  - one KernelCall per call_function node (operator.getitem is not an op: it
    names one of its producer's out tensors; a result that is None, such as
    a gradient that output_mask leaves out, gets an empty placeholder out);
  - one BackendCall per call_module node of a delegated subgraph
    (tern.backend), with a Delegate entry: backend, payload, input and output
    values;
  - outputs that are inputs, constants or repeats get an aten::clone into a
    fresh tensor, so every output has storage of its own;
  - torch.cond and torch.while_loop (tern.control_flow) inline their
    branches, condition and body, joined by JumpFalse instructions: forward
    around a branch, backward to the top of a loop (format 1.2); results
    and carried values are tensors of their own that Moves write;
  - the model's state (format 1.2; tern.graph.StateBuffer): one tensor value
    per state placeholder, kept between calls, with its initial value as a
    constant; the method ends with one Move per state, new value -> state.
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
    dyn: tuple[int, ...] = ()  # format 1.3: per dim, its size expression (tern.shapes) or -1; () if static


@dataclass
class Value:
    kind: str  # a member of schema/tern.fbs's Value union, or "None"
    data: Any = None  # TensorInfo, a Python scalar, str or list of them
    expr: Any = None  # format 1.3: an Int's size expression, or an IntList's per item (-1: constant)


@dataclass
class Instr:
    op: int  # index into MethodIR.operators; -1 for a backend call
    args: list[int]  # value indices: schema arguments, then out values (delegate: inputs, then outputs)
    node: str  # fx node name
    source: str  # "file.py:LINE in fn: code", or ""
    delegate: int | None = None  # index into MethodIR.delegates, for a backend call
    move: bool = False  # a Move: args = [from, to]
    jump: int | None = None  # a JumpFalse: args = [condition], jump = the target instruction


@dataclass
class DelegateIR:
    backend: str  # the runtime backend's registered name
    payload: bytes
    inputs: list[int]  # value indices
    outputs: list[int]


@dataclass
class StateIR:
    value: int  # the state tensor (State storage: planned, kept between calls)
    initial: int  # a constant tensor value: its value at load and reset
    name: str  # the buffer's name in the user's module


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
    state: list[StateIR] = field(default_factory=list)  # sorted by value
    symbols: list[Any] = field(default_factory=list)  # format 1.3: tern.shapes.SymbolIR
    size_exprs: list[list[int]] = field(default_factory=list)  # format 1.3: postfix code

    @property
    def state_values(self) -> list[int]:
        return [s.value for s in self.state]

    def instr_name(self, instr: Instr) -> str:
        """The op of a kernel call, "backend:<name>" for a backend call, "move" for a move."""
        if instr.move:
            return "move"
        if instr.jump is not None:
            return "jump"
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


# ATen's c10::ScalarType numbers (a dtype argument may arrive as one) -> torch dtype names.
_ATEN_SCALAR_TYPES = {0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "float16", 6: "float32",
                      7: "float64", 11: "bool", 15: "bfloat16"}


def scalar_type_of(dtype: "torch.dtype | int") -> int:
    """Tern's ScalarType number for a torch dtype (or ATen's number of one);
    ExportError if it has none."""
    import torch

    if isinstance(dtype, int) and not isinstance(dtype, bool) and dtype in _ATEN_SCALAR_TYPES:
        dtype = getattr(torch, _ATEN_SCALAR_TYPES[dtype])

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
        from tern.shapes import SymbolTable

        self.gm = gm
        self.m = MethodIR(name)
        self.shapes: SymbolTable = gm.meta.get("tern_symbols") or SymbolTable({}, {})
        self.ints: dict[Any, Any] = {}  # fx node computing an integer from sizes -> its torch.SymInt
        self.env: dict[Any, int | list[int]] = {}  # fx node -> value index (or indices)
        self.op_index: dict[str, int] = {}
        self.const_index: dict[bytes, int] = {}
        self.state_slots: list[StateIR | None] = []  # per state placeholder; None: empty, not kept
        self.prefix = ""  # inside a branch or loop: where (see _name)

    def run(self) -> MethodIR:
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                self._input(node)
            elif node.op == "output":
                self._outputs(node)
            else:
                self._node(node)
        self.m.symbols = self.shapes.symbols
        self.m.size_exprs = self.shapes.exprs
        return self.m

    def _node(self, node: "torch.fx.Node") -> None:
        if node.op == "get_attr":
            attr = getattr(self.gm, node.target)
            if not _is_module(attr):  # a module: a branch or loop body, read by its cond / while_loop
                self.env[node] = self._constant(attr)
        elif node.op == "call_function":
            self._call(node)
        elif node.op == "call_module":
            self._backend_call(node)
        else:
            raise ExportError(f"node {node.name}: fx op {node.op!r} is not supported")

    def _name(self, node: "torch.fx.Node") -> str:
        """The node's name in debug info: inside a branch or loop, prefixed
        with where it is ("cond.true.relu")."""
        return self.prefix + node.name

    # control flow (tern.control_flow): both ops become jumps

    def _subgraph(self, gm: "torch.fx.GraphModule", args: list[int], prefix: str) -> list[int]:
        """Emits a branch, loop condition or loop body inline, its placeholders
        bound to `args`; returns the values of its results."""
        saved = self.gm, self.env, self.prefix
        self.gm, self.env, self.prefix = gm, {}, prefix
        try:
            placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
            if len(placeholders) != len(args):
                raise ExportError(f"{prefix}: {len(placeholders)} inputs, given {len(args)}")
            self.env.update(zip(placeholders, args))
            results: list[int] = []
            for node in gm.graph.nodes:
                if node.op == "output":
                    out = node.args[0]
                    items = list(out) if isinstance(out, (tuple, list)) else [out]
                    results = [self._tensor_arg(a, f"{prefix} result {i}") for i, a in enumerate(items)]
                elif node.op != "placeholder":
                    self._node(node)
            return results
        finally:
            self.gm, self.env, self.prefix = saved

    def _jump(self, cond: int, node: "torch.fx.Node", target: int = -1) -> Instr:
        """JumpFalse(cond, target); -1: patched by the caller."""
        ins = Instr(-1, [cond], self._name(node), _source(node), jump=target)
        self.m.instructions.append(ins)
        return ins

    def _goto(self, node: "torch.fx.Node", target: int = -1) -> Instr:
        return self._jump(self._add("Bool", False), node, target)

    def _condition(self, v: int, what: str) -> int:
        info = self.m.values[v].data
        if self.m.values[v].kind != "Tensor" or info.scalar_type != scalar_type_of_name("bool") or info.nbytes != 1:
            raise ExportError(f"{what} must be a bool tensor with one element")
        return v

    def _moves(self, srcs: list[int], dsts: list[int], node: "torch.fx.Node") -> None:
        for src, dst in zip(srcs, dsts):
            if src != dst:
                self.m.instructions.append(Instr(-1, [src, dst], self._name(node), _source(node), move=True))

    def _cond(self, node: "torch.fx.Node") -> None:
        """torch.cond: JumpFalse pred -> else; true branch; results; Jump -> end;
        else: false branch; results; end."""
        from tern.control_flow import branch_modules

        true_gm, false_gm = branch_modules(self.gm, node)
        pred = self._condition(self._tensor_arg(node.args[0], f"node {node.name} predicate"),
                               f"the predicate of torch.cond (node {node.name})")
        operands = [self._tensor_arg(a, f"node {node.name} operand {i}") for i, a in enumerate(node.args[3])]
        results = [self._tensor(v, f"output {i} of {node.name}") for i, v in enumerate(node.meta["val"])]
        to_false = self._jump(pred, node)
        self._moves(self._subgraph(true_gm, operands, f"{self._name(node)}.true."), results, node)
        to_end = self._goto(node)
        to_false.jump = len(self.m.instructions)
        self._moves(self._subgraph(false_gm, operands, f"{self._name(node)}.false."), results, node)
        to_end.jump = len(self.m.instructions)
        self.env[node] = results

    def _while_loop(self, node: "torch.fx.Node") -> None:
        """torch.while_loop: carried <- initial values; top: condition;
        JumpFalse -> end; body; carried <- body results; Jump -> top; end.
        The carried values are the results."""
        from tern.control_flow import branch_modules

        cond_gm, body_gm = branch_modules(self.gm, node)
        initial = [self._tensor_arg(a, f"node {node.name} carried input {i}") for i, a in enumerate(node.args[2])]
        additional = [self._tensor_arg(a, f"node {node.name} input {i}") for i, a in enumerate(node.args[3])]
        carried = [self._tensor(v, f"carried value {i} of {node.name}") for i, v in enumerate(node.meta["val"])]
        self._moves(initial, carried, node)
        top = len(self.m.instructions)
        (pred,) = self._subgraph(cond_gm, carried + additional, f"{self._name(node)}.cond.")
        to_end = self._jump(self._condition(pred, f"the condition of torch.while_loop (node {node.name})"), node)
        new = self._subgraph(body_gm, carried + additional, f"{self._name(node)}.body.")
        # A body result that is another carried value is copied first, so the
        # moves do not see each other's writes.
        targets = set(carried)
        new = [self._clone(v, node) if v in targets and v != c else v for v, c in zip(new, carried)]
        self._moves(new, carried, node)
        self._goto(node, top)
        to_end.jump = len(self.m.instructions)
        self.env[node] = carried

    # values

    def _add(self, kind: str, data: Any = None) -> int:
        self.m.values.append(Value(kind, data))
        return len(self.m.values) - 1

    def _add_expr(self, kind: str, data: Any, expr: Any) -> int:
        """An Int (or IntList) whose value (items) the runtime computes from the input shapes."""
        self.m.values.append(Value(kind, data, expr))
        return len(self.m.values) - 1

    def _tensor(self, t: Any, what: str, constant: int | None = None) -> int:
        import torch

        if not isinstance(t, torch.Tensor):
            raise ExportError(f"{what}: expected a tensor, got {type(t).__name__}")
        if t.dim() > MAX_DIMS:
            raise ExportError(f"{what}: {t.dim()} dimensions, at most {MAX_DIMS} supported by format v1")
        bounds = [self.shapes.size(s, f"{what} dim {d}") for d, s in enumerate(t.shape)]
        sizes = tuple(b for b, _ in bounds)
        dyn = tuple(e for _, e in bounds) if any(e >= 0 for _, e in bounds) else ()
        numel = 1
        for n in sizes:
            numel *= n
        info = TensorInfo(scalar_type_of(t.dtype), sizes, numel * t.element_size(), constant, dyn)
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
        state = node.meta.get("tern_state")
        if state is not None and state.initial.numel() == 0:  # nothing to keep
            self.env[node] = self._constant(state.initial)
            self.state_slots.append(None)
            return
        if state is not None:
            v = self._tensor(node.meta.get("val"), f"state {state.name}")
            self.m.state.append(StateIR(v, self._constant(state.initial), state.name))
            self.state_slots.append(self.m.state[-1])
            self.env[node] = v
            return
        v = self._tensor(node.meta.get("val"), f"input {node.name} (only tensor inputs are supported)")
        self.env[node] = v
        self.m.inputs.append(v)
        self.m.input_names.append(node.name)

    # instructions

    def _call(self, node: "torch.fx.Node") -> None:
        from tern.control_flow import is_cond, is_while_loop

        if is_cond(node):
            return self._cond(node)
        if is_while_loop(node):
            return self._while_loop(node)
        from tern.shapes import is_symbolic

        if is_symbolic(node):  # an integer from sizes: an expression where it is used, not an op
            self.ints[node] = node.meta["val"]
            return
        if node.target is operator.getitem:
            src = self.env[node.args[0]]
            self.env[node] = src[node.args[1]] if isinstance(src, list) else src
            return
        schema = node.target._schema
        args = self._schema_args(node, schema)
        outs, self.env[node] = self._outs(node, schema)
        self._instr(op_name(node.target), args + outs, self._name(node), _source(node))

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
        self.m.instructions.append(Instr(-1, inputs + outputs, self._name(node), source, len(self.m.delegates) - 1))

    def _instr(self, name: str, args: list[int], node: str, source: str) -> None:
        op = self.op_index.setdefault(name, len(self.m.operators))
        if op == len(self.m.operators):
            self.m.operators.append(name)
        self.m.instructions.append(Instr(op, args, node, source))

    def _schema_args(self, node: "torch.fx.Node", schema: Any) -> list[int]:
        out = []
        number_dtype = _wrapped_number_dtype(node)
        for i, a in enumerate(schema.arguments):
            if not a.kwarg_only and i < len(node.args):
                v = node.args[i]
            elif a.name in node.kwargs:
                v = node.kwargs[a.name]
            elif a.has_default_value():
                v = a.default_value
            else:
                raise ExportError(f"node {node.name}: missing argument {a.name!r} of {schema}")
            out.append(self._arg(a.real_type, v, a.N, f"node {node.name} argument {a.name}", number_dtype))
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
            elif v is None:  # an optional result not computed (e.g. a gradient its output_mask leaves out)
                outs.append(self._absent_out(vals))
                elems.append(outs[-1])
            else:
                outs.append(self._tensor(v, f"output of {node.name}"))
                elems.append(outs[-1])
        single = len(schema.returns) == 1 and schema.returns[0].real_type.kind() != "ListType"
        return outs, (elems[0] if single else elems)

    def _absent_out(self, vals: list[Any]) -> int:
        """The out value of a result that is None (aten::convolution_backward
        with output_mask [True, False, False] returns (grad_input, None,
        None)): an empty tensor [0], so that every out stays planned tensor
        memory, as the runtime checks at load. The kernel sees from its own
        arguments (the mask; for layer norm also a missing weight or bias)
        that it has nothing to write there. Its dtype is
        that of the node's first tensor result, so a float16 node stays
        float16 throughout."""
        import torch

        like = next((v for v in vals if isinstance(v, torch.Tensor)), None)
        dtype = like.dtype if like is not None else torch.float32
        return self._add("Tensor", TensorInfo(scalar_type_of(dtype), (0,), 0))

    def _outputs(self, node: "torch.fx.Node") -> None:
        results = list(node.args[0])
        split = len(results) - len(self.state_slots)
        self._user_outputs(results[:split])
        kept = [(st, new) for st, new in zip(self.state_slots, results[split:]) if st is not None]
        self._state_moves(kept, node)

    def _state_moves(self, new_values: list[tuple[StateIR, Any]], node: "torch.fx.Node") -> None:
        """state <- its new value, for each state (tern.graph.to_graph_module
        puts them in the order of the state placeholders). A new value that is
        another state's old value is copied first, so the moves do not see
        each other's writes."""
        targets = set(self.m.state_values)
        sources: list[int] = []
        for state, new in new_values:
            src = self.env.get(new) if hasattr(new, "op") else None
            if not isinstance(src, int):
                raise ExportError(f"state {state.name}: its new value is not a tensor ({new!r})")
            a, b = self.m.values[src].data, self.m.values[state.value].data
            if (a.scalar_type, a.sizes) != (b.scalar_type, b.sizes):
                raise ExportError(f"state {state.name}: forward assigns it a {SCALAR_TYPE_NAMES[a.scalar_type]}"
                                  f"{list(a.sizes)} value, but it is {SCALAR_TYPE_NAMES[b.scalar_type]}{list(b.sizes)}; "
                                  "a buffer keeps its dtype and shape between calls")
            if src in targets and src != state.value:
                src = self._clone(src, new)
            sources.append(src)
        for (state, _), src in zip(new_values, sources):
            if src != state.value:
                self.m.instructions.append(Instr(-1, [src, state.value], f"{node.name}_state_{state.name}", "",
                                                 move=True))

    def _user_outputs(self, results: list[Any]) -> None:
        seen: set[int] = set()
        for i, arg in enumerate(results):
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
        out = self._add("Tensor", TensorInfo(info.scalar_type, info.sizes, info.nbytes, dyn=info.dyn))
        self._instr("aten::clone", [src, self._add("None"), out], f"{self._name(node)}_output_copy", _source(node))
        return out

    # arguments

    def _arg(self, t: Any, v: Any, n: int | None, what: str, number_dtype: Any = None) -> int:
        kind = t.kind()
        if kind == "OptionalType":
            t, kind = t.getElementType(), t.getElementType().kind()
        if v is None or kind in ("LayoutType", "DeviceObjType", "MemoryFormatType", "GeneratorType"):
            return self._add("None")
        if kind == "TensorType":
            return self._tensor_arg(v, what, number_dtype)
        if kind == "ListType":
            return self._list_arg(t.getElementType(), v, n, what)
        if kind == "ScalarTypeType":
            return self._add("Int", scalar_type_of(v))
        if kind in ("IntType", "SymIntType", "NumberType") and v in self.ints:
            value, expr = self.shapes.size(self.ints[v], what)
            return self._add("Int", value) if expr < 0 else self._add_expr("Int", value, expr)
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

    def _tensor_arg(self, v: Any, what: str, number_dtype: Any = None) -> int:
        if hasattr(v, "op") and v in self.ints:  # an integer from sizes: a wrapped number, as a Python int
            value, expr = self.shapes.size(self.ints[v], what)
            return self._add("Int", value) if expr < 0 else self._add_expr("Int", value, expr)
        if isinstance(v, (bool, int, float)):
            import torch

            # A number where a tensor goes (sub.Tensor(3.5, x)): a 0-d tensor of the
            # dtype that gives the kernel's type promotion eager's result for a
            # wrapped number (3.5 - half x is half, not float32).
            try:
                return self._constant(torch.tensor(v, dtype=number_dtype(v) if number_dtype else None))
            except (RuntimeError, OverflowError):  # 300 as int8: keep torch's own dtype for it
                return self._constant(torch.tensor(v))
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
        if kind in ("IntType", "SymIntType") and all(_is_int(x) or x in self.ints for x in items):
            sized = [(int(x), -1) if _is_int(x) else self.shapes.size(self.ints[x], what) for x in items]
            values, exprs = [a for a, _ in sized], [e for _, e in sized]
            return self._add_expr("IntList", values, exprs) if any(e >= 0 for e in exprs) else self._add("IntList", values)
        if kind == "FloatType" and all(isinstance(x, (int, float)) for x in items):
            return self._add("DoubleList", [float(x) for x in items])
        if kind == "BoolType" and all(isinstance(x, bool) for x in items):
            return self._add("BoolList", items)
        raise ExportError(f"{what}: cannot encode {v!r} as List[{elem}]")


def _is_module(v: Any) -> bool:
    import torch

    return isinstance(v, torch.nn.Module)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _source(node: "torch.fx.Node") -> str:
    frame = user_frame(node)
    return frame.short() if frame else ""


def _tensor_bytes(t: "torch.Tensor") -> bytes:
    """The tensor's elements, contiguous row-major, in the host's (little-endian) byte order."""
    import torch

    if t.numel() == 0:
        return b""
    # A fresh tensor: contiguous() keeps a stride of 0 on size-1 dims (an
    # expanded scalar), which view(uint8) refuses.
    flat = torch.empty(t.numel(), dtype=t.dtype).copy_(t.detach().cpu().reshape(-1))
    return flat.view(torch.uint8).numpy().tobytes()


def _wrapped_number_dtype(node: "torch.fx.Node") -> Any:
    """For a node whose tensor arguments may be Python numbers: a function
    from such a number to the dtype its 0-d constant should have, i.e. the
    result of eager's promotion of the node's tensor arguments with the
    number as a wrapped number (of lowest priority); None if the node has
    no tensor argument to promote with."""
    import torch
    import torch.utils._pytree as pytree

    tensors = [x.meta["val"] for x in pytree.tree_leaves((node.args, node.kwargs))
               if hasattr(x, "meta") and isinstance(x.meta.get("val"), torch.Tensor)]
    if not tensors:
        return None
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = torch.promote_types(dtype, t.dtype)
    return lambda v: torch.result_type(torch.empty((), dtype=dtype), v)
