"""Dynamic shapes (format 1.3): symbols and size expressions.

    batch = torch.export.Dim("batch", max=8)
    program = tern.export(model, (x,), dynamic_shapes={"x": {0: batch}})

torch.export gives every dynamic dim a symbol (s17) with a range, and every
size that depends on them a sympy expression (4*s17, s27 - 1). The file keeps:
  - the symbols, each with its Dim's name and bounds (Method.symbols);
  - each distinct expression in postfix (Method.size_exprs; opcodes in
    schema/tern.fbs, SizeExpr, and runtime/core/size_expr.h);
  - for each tensor dim, integer argument or list item that is not a
    constant, the index of its expression; the tensor's `sizes` are the dims'
    upper bounds (bound_sympy over the symbols' ranges), which the memory plan
    reserves.
The runtime reads the symbols from the inputs at each call and evaluates the
rest. An expression the runtime cannot evaluate (a data-dependent size, a
float) is an ExportError naming it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tern.errors import ExportError

if TYPE_CHECKING:
    import sympy
    import torch

# Opcodes of a size expression (schema/tern.fbs, SizeExpr).
CONST, SYMBOL, ADD, SUB, MUL, FLOORDIV, MOD, MAX, MIN, CEILDIV = range(10)
# The runtime's limits (runtime/core/size_expr.h).
MAX_STACK = 16
MAX_LENGTH = 256
# The largest bound the runtime takes (runtime/format/verify.cpp).
MAX_SYMBOL_VALUE = 1 << 40


@dataclass(frozen=True)
class SymbolIR:
    name: str  # the Dim's name ("batch"), or where it is read ("x.shape[0]")
    min: int
    max: int


class SymbolTable:
    """The method's symbols and size expressions, built while emitting."""

    def __init__(self, ranges: dict["sympy.Symbol", tuple[int, int | None]], names: dict["sympy.Symbol", str]) -> None:
        self._ranges = ranges
        self._names = names
        self._index: dict[Any, int] = {}  # sympy symbol -> index in symbols
        self.symbols: list[SymbolIR] = []
        self._expr_index: dict[tuple[int, ...], int] = {}
        self.exprs: list[list[int]] = []  # postfix code, (opcode, operand) pairs flattened

    @property
    def dynamic(self) -> bool:
        return bool(self.exprs)

    def symbol_exprs(self) -> list["sympy.Symbol"]:
        """The sympy symbol of each of `symbols`, in their order."""
        return sorted(self._index, key=self._index.__getitem__)

    def size(self, s: Any, what: str) -> tuple[int, int]:
        """(value at the upper bounds, expression index or -1) of a size or
        integer (an int, a torch.SymInt or a sympy expression)."""
        import sympy
        import torch

        if isinstance(s, torch.SymInt):
            s = s.node.expr
        if isinstance(s, bool):
            raise ExportError(f"{what}: expected an integer, got {s!r}")
        if isinstance(s, int):
            return s, -1
        if not isinstance(s, sympy.Expr):
            raise ExportError(f"{what}: expected an integer, got {type(s).__name__} {s!r}")
        if s.is_Integer:
            return int(s), -1
        code: list[int] = []
        self._postfix(s, code, what)
        _check_stack(code, s, what)
        key = tuple(code)
        index = self._expr_index.setdefault(key, len(self.exprs))
        if index == len(self.exprs):
            self.exprs.append(code)
        return self.upper_bound(s, what), index

    def lower_bound(self, e: "sympy.Expr") -> Any:
        """The smallest value `e` takes over the symbols' ranges (the Dims'
        own: torch's shape environment may assume 2 for a Dim of min 0)."""
        from torch.utils._sympy.value_ranges import ValueRanges, bound_sympy

        ranges = {s: ValueRanges(*self._ranges[s]) for s in e.free_symbols if s in self._ranges}
        return bound_sympy(e, ranges).lower

    def upper_bound(self, e: "sympy.Expr", what: str) -> int:
        """The largest value `e` takes over the symbols' ranges."""
        from torch.utils._sympy.value_ranges import ValueRanges, bound_sympy

        ranges = {s: ValueRanges(*self._ranges[s]) for s in e.free_symbols if s in self._ranges}
        upper = bound_sympy(e, ranges).upper
        if not _finite(upper):
            raise ExportError(f"{what}: size {e} has no upper bound over the dynamic dims' ranges")
        return int(upper)

    def _symbol(self, s: "sympy.Symbol", what: str) -> int:
        if s not in self._index:
            from torch.utils._sympy.symbol import SymT, symbol_is_type

            if s not in self._ranges or symbol_is_type(s, (SymT.UNBACKED_INT, SymT.UNBACKED_FLOAT)):
                raise ExportError(f"{what}: size {s} depends on the data (no input dim gives it); "
                                  "Tern needs every size to follow from the input shapes")
            lo, hi = self._ranges[s]
            if hi is None:
                raise ExportError(f"dynamic dim {self._names.get(s, s)} has no upper bound (or one above 2**40): "
                                  "give torch.export.Dim(..., max=N); the memory plan is made for the largest shape")
            self._index[s] = len(self.symbols)
            self.symbols.append(SymbolIR(self._names.get(s, str(s)), lo, hi))
        return self._index[s]

    def _postfix(self, e: "sympy.Expr", code: list[int], what: str) -> None:
        import sympy
        from torch.utils._sympy import functions as F

        def fold(args: Any, op: int) -> None:
            args = list(args)
            self._postfix(args[0], code, what)
            for a in args[1:]:
                self._postfix(a, code, what)
                code.extend((op, 0))

        if e.is_Integer:
            code.extend((CONST, int(e)))
        elif e.is_Symbol:
            code.extend((SYMBOL, self._symbol(e, what)))
        elif isinstance(e, sympy.Add):
            fold(e.args, ADD)
        elif isinstance(e, sympy.Mul):
            fold(e.args, MUL)
        elif isinstance(e, (F.FloorDiv, F.CleanDiv)):
            fold(e.args, FLOORDIV)
        elif isinstance(e, F.CeilDiv):
            fold(e.args, CEILDIV)
        elif isinstance(e, (F.PythonMod, F.Mod)) or type(e) is sympy.Mod:
            fold(e.args, MOD)
        elif isinstance(e, F.ModularIndexing):  # (base // divisor) % modulus
            base, divisor, modulus = e.args
            fold([base, divisor], FLOORDIV)
            self._postfix(modulus, code, what)
            code.extend((MOD, 0))
        elif isinstance(e, (sympy.Max, F.Max)):
            fold(e.args, MAX)
        elif isinstance(e, (sympy.Min, F.Min)):
            fold(e.args, MIN)
        elif isinstance(e, (sympy.Pow, F.PowByNatural)) and e.args[1].is_Integer and 0 < int(e.args[1]) <= 8:
            fold([e.args[0]] * int(e.args[1]), MUL)
        else:
            raise ExportError(f"{what}: the size expression {e} ({type(e).__name__}) is not supported "
                              "(sums, products, floor/ceil division, modulo, min and max of integers are)")


def _finite(x: Any) -> bool:
    """An integer bound, not torch's int_oo (whose sympy is_finite says True)."""
    return isinstance(x, int) or bool(getattr(x, "is_Integer", False))


def _check_stack(code: list[int], e: Any, what: str) -> None:
    depth = peak = 0
    for i in range(0, len(code), 2):
        depth += 1 if code[i] in (CONST, SYMBOL) else -1
        peak = max(peak, depth)
    if peak > MAX_STACK or len(code) // 2 > MAX_LENGTH:
        raise ExportError(f"{what}: the size expression {e} is too long for the runtime "
                          f"(at most {MAX_LENGTH} steps and a stack of {MAX_STACK})")


def is_symbolic(node: Any) -> bool:
    """True for an fx node that computes an integer from sizes (aten.sym_size,
    operator.mul on SymInts, ...): an expression in the file, not an op."""
    import torch

    return getattr(node, "op", None) == "call_function" and isinstance(
        node.meta.get("val"), (torch.SymInt, torch.SymBool, torch.SymFloat))


def has_dynamic_shape(node: Any) -> bool:
    """True if the node's value, or a tensor it reads, has a symbolic size,
    or it reads an integer computed from sizes."""
    import torch
    import torch.utils._pytree as pytree

    vals = list(pytree.tree_leaves(node.meta.get("val")))
    for a in node.all_input_nodes:
        vals += pytree.tree_leaves(a.meta.get("val"))
    return any(isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)) or
               (isinstance(v, torch.Tensor) and not all(isinstance(s, int) for s in v.shape)) for v in vals)


def output_sizes_from_data(node: Any) -> str | None:
    """The sizes of the node's first tensor output whose size depends on the
    data ("[u0, 1]" for torch.nonzero: torch.export's unbacked symbols, which
    no input dim gives), or None if every output's size follows from the
    inputs' shapes."""
    import torch
    import torch.utils._pytree as pytree
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    for v in pytree.tree_leaves(node.meta.get("val")):
        if isinstance(v, torch.Tensor) and free_unbacked_symbols(v.shape):
            return "[" + ", ".join(map(str, v.shape)) + "]"
    return None


def symbol_table(ep: "torch.export.ExportedProgram", dynamic_shapes: Any, args: tuple[Any, ...],
                 module: Any) -> SymbolTable:
    """The symbols of `ep` with their bounds and the Dims' names. A symbol
    without an upper bound is an ExportError when a size uses it
    (run_decompositions can leave unused ones in range_constraints)."""
    names = _dim_names(ep, dynamic_shapes, args, module)
    ranges: dict[Any, tuple[int, int | None]] = {}
    for s, vr in ep.range_constraints.items():
        lo = int(vr.lower) if _finite(vr.lower) else 0
        hi = int(vr.upper) if _finite(vr.upper) and int(vr.upper) <= MAX_SYMBOL_VALUE else None
        ranges[s] = (max(lo, 0), hi)
    return SymbolTable(ranges, names)


def _dim_names(ep: "torch.export.ExportedProgram", dynamic_shapes: Any, args: tuple[Any, ...],
               module: Any) -> dict[Any, str]:
    """sympy symbol -> a name for errors: the torch.export.Dim's name where
    the dynamic_shapes spec gives one, else "<input>.shape[<dim>]"."""
    import inspect

    import torch

    from torch.export.graph_signature import InputKind

    user_inputs = [s.arg.name for s in ep.graph_signature.input_specs if s.kind == InputKind.USER_INPUT]
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    specs: list[Any] = []
    if isinstance(dynamic_shapes, dict):
        try:
            params = list(inspect.signature(module.forward if hasattr(module, "forward") else module).parameters)
        except (TypeError, ValueError):
            params = []
        specs = [dynamic_shapes.get(p) for p in params[:len(args)]]
    elif isinstance(dynamic_shapes, (tuple, list)):
        specs = list(dynamic_shapes)
    names: dict[Any, str] = {}
    derived: list[tuple[str, int, Any, Any]] = []  # input, dim, its size, its Dim's name
    for i, name in enumerate(user_inputs):
        val = placeholders[name].meta.get("val") if name in placeholders else None
        if not isinstance(val, torch.Tensor):
            continue
        spec = specs[i] if i < len(specs) else None
        for d, s in enumerate(val.shape):
            if not isinstance(s, torch.SymInt):
                continue
            dim = spec.get(d) if isinstance(spec, dict) else (spec[d] if isinstance(spec, (tuple, list))
                                                             and d < len(spec) else None)
            dim_name = getattr(dim, "__name__", None)
            if not s.node.expr.is_Symbol:
                derived.append((name, d, s.node.expr, dim_name))
            elif s.node.expr not in names:
                names[s.node.expr] = dim_name if isinstance(dim_name, str) else f"{name}.shape[{d}]"
    for name, d, expr, dim_name in derived:
        if not expr.free_symbols <= names.keys():
            # The runtime binds each symbol to the size of an input dim (runtime/format/verify.cpp).
            raise ExportError(
                f"input '{name}' dim {d} is {dim_name or expr}, a derived Dim whose Dim is no input dim: Tern "
                "binds each Dim to the size of an input dim (reshape the input so that the Dim is one of its "
                "dims, e.g. (..., n, 2) for 2 * n)")
    return names
