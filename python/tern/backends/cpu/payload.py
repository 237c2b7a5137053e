"""Writes a compiled cpu program as the backend's payload (the layout is in
backends/cpu/schema/cpu.fbs; backends/cpu/loader.cpp reads it):

    "TCPU" | u32 version | u64 flatbuffer size | flatbuffer | pad to 64 | weights blob
"""
from __future__ import annotations

import struct
from typing import Any

import flatbuffers

from tern.backends.cpu.ir import Op, Program, SymDim
from tern.errors import ExportError
from tern.memory_plan import align
from tern.serialize import offsets_vector
from tern.shapes import SymbolTable

VERSION = 2  # 2: Attention (a runtime reads 1 and 2)
VERSION_INT8 = 3  # 3: int8 values and the ops on them (QConv, QPool, ...); written only by programs that use them
VERSION_BOOL = 4  # 4: bool values (an Attention's mask computed at run time); written only by programs that have one
# 5: sizes that are expressions of the delegate's input sizes, and Winograd kernels the runtime transforms
# at load (Conv.winograd_element); written only by programs that have one or the other
VERSION_DYNAMIC = VERSION_WINOGRAD_KERNEL = 5
VERSION_BLOCK_LINEAR = 6  # 6: BlockLinear (GGUF's blocks read in place); written only by programs that have one
VERSION_KV_SEQ_MAJOR = 7  # 7: Attention.kv_seq_major; written only by programs that have one
VERSION_KV_ROWS = 8  # 8: Attention.kv_rows; written only by programs that have one
# The size fields of each op kind that has them: its scalar long fields, in
# its cpu.fbs table's order, which is the order of its `exprs` (the runtime
# reads slot i as field i, backends/cpu/ops/).
SIZE_FIELDS = {
    "Binary": ("b_inner", "b_block"),
    "LayerNorm": ("inner",),
    "RmsNorm": ("inner",),
    "Softmax": ("inner",),
    "MatMul": ("batch", "m", "k", "n"),
    "Attention": ("batch", "heads", "kv_heads", "l", "s", "e", "ev", "kv_rows"),
    "Concat": ("outer",),
    "Slice": ("outer", "offset"),
}
HEADER = struct.Struct("<4sIQ")


def serialize(p: Program) -> bytes:
    from tern.backends.cpu.fb import Op as FbOp
    from tern.backends.cpu.fb import Program as FbProgram
    from tern.backends.cpu.fb import Value as FbValue
    from tern.backends.cpu.fb.DType import DType
    from tern.backends.cpu.fb.Storage import Storage

    b = flatbuffers.Builder(1024)
    dyn = _Dynamic()
    values = []
    for i, v in enumerate(p.values):
        exprs = [dyn.index(s, f"value {i} dim {d}") for d, s in enumerate(v.sizes)]
        if isinstance(v.offset, SymDim) or isinstance(v.within, SymDim):
            raise ExportError(f"cpu backend: value {i} starts at a place that depends on the dynamic dims "
                              f"({v.offset!r})")
        sizes = _ints(b, FbValue.StartSizesVector, b.PrependInt64, v.sizes)
        dyn_sizes = _ints(b, FbValue.StartDynSizesVector, b.PrependInt32, exprs) if any(e >= 0 for e in exprs) else None
        FbValue.Start(b)
        FbValue.AddSizes(b, sizes)
        if dyn_sizes is not None:
            FbValue.AddDynSizes(b, dyn_sizes)
        FbValue.AddStorage(b, getattr(Storage, v.storage))
        FbValue.AddIndex(b, v.index)
        FbValue.AddOffset(b, v.offset)
        if v.dtype != "Float32":
            FbValue.AddDtype(b, getattr(DType, v.dtype))
        values.append(FbValue.End(b))
    ops = []
    for op in p.ops:
        table, kind = _op_table(b, op, dyn)
        nodes = b.CreateString(op.nodes)
        FbOp.Start(b)
        FbOp.AddKindType(b, kind)
        FbOp.AddKind(b, table)
        FbOp.AddNodes(b, nodes)
        if op.out >= 0:  # for debuggers; readers that predate it ignore it
            FbOp.AddOut(b, op.out)
            FbOp.AddOutNhwc(b, op.out_nhwc)
        ops.append(FbOp.End(b))
    values_vec, ops_vec = offsets_vector(b, values), offsets_vector(b, ops)
    symbols_vec, exprs_vec = dyn.tables(b, p) if dyn.table is not None and dyn.table.exprs else (None, None)
    FbProgram.Start(b)
    if symbols_vec is not None:
        FbProgram.AddSymbols(b, symbols_vec)
        FbProgram.AddExprs(b, exprs_vec)
    FbProgram.AddValues(b, values_vec)
    FbProgram.AddOps(b, ops_vec)
    FbProgram.AddNumInputs(b, p.num_inputs)
    FbProgram.AddNumOutputs(b, p.num_outputs)
    FbProgram.AddWorkspaceBytes(b, p.workspace_bytes)
    b.Finish(FbProgram.End(b))
    fb = bytes(b.Output())
    version = max(VERSION_DYNAMIC if symbols_vec is not None else VERSION, _version(p))
    head = HEADER.pack(b"TCPU", version, len(fb)) + fb
    return head + b"\0" * (align(len(head)) - len(head)) + p.weights


def _version(p: Program) -> int:
    """The lowest payload version that holds p (a runtime reads every version up to its own)."""
    dtypes = {v.dtype for v in p.values}
    if any(op.kind == "Attention" and op.fields.get("kv_rows") for op in p.ops):
        return VERSION_KV_ROWS
    if any(op.kind == "Attention" and op.fields.get("kv_seq_major") for op in p.ops):
        return VERSION_KV_SEQ_MAJOR
    if any(op.kind == "BlockLinear" for op in p.ops):
        return VERSION_BLOCK_LINEAR
    if any(op.kind == "Conv" and "winograd_element" in op.fields for op in p.ops):
        return VERSION_WINOGRAD_KERNEL
    return VERSION_BOOL if "Bool" in dtypes else VERSION_INT8 if "Int8" in dtypes else VERSION


def _ints(b: Any, start: Any, prepend: Any, items: Any) -> int:
    start(b, len(items))
    for x in reversed(list(items)):
        prepend(int(x))
    return b.EndVector()


class _Dynamic:
    """The payload's symbols and size expressions (cpu.fbs, version 5), built
    as the values and ops are written: a SymDim becomes the index of its
    expression, its upper bound the size written."""

    def __init__(self) -> None:
        self.table: SymbolTable | None = None

    def index(self, size: Any, what: str) -> int:
        """The expression index of a size (-1 for an int)."""
        if not isinstance(size, SymDim):
            return -1
        if self.table is None:
            ranges = {s: (int(r.lower), int(r.upper)) for s, r in size.env.var_to_range.items()
                      if getattr(r.lower, "is_Integer", isinstance(r.lower, int))
                      and getattr(r.upper, "is_Integer", isinstance(r.upper, int))}
            self.table = SymbolTable(ranges, {})
        return self.table.size(size.expr, f"cpu backend: {what}")[1]

    def tables(self, b: Any, p: Program) -> tuple[int, int]:
        """The Program's symbols (each bound to an input dim that is exactly
        it) and exprs vectors."""
        from tern.backends.cpu.fb import SizeExpr as FbSizeExpr
        from tern.backends.cpu.fb import Symbol as FbSymbol

        if self.table is None:
            raise ExportError("cpu backend: a payload without dynamic sizes has no symbols")
        found: dict[Any, tuple[int, int]] = {}
        for v in p.values:
            if v.storage == "Input":
                for d, s in enumerate(v.sizes):
                    if isinstance(s, SymDim) and s.expr.is_Symbol:
                        found.setdefault(s.expr, (v.index, d))
        symbols = []
        for sym in self.table.symbol_exprs():
            if sym not in found:
                raise ExportError(f"cpu backend: the dynamic size {sym} is no dim of the delegate's inputs "
                                  "(the backend reads each dynamic size from its inputs' shapes)")
            FbSymbol.Start(b)
            FbSymbol.AddInput(b, found[sym][0])
            FbSymbol.AddDim(b, found[sym][1])
            symbols.append(FbSymbol.End(b))
        exprs = []
        for code in self.table.exprs:
            vec = _ints(b, FbSizeExpr.StartCodeVector, b.PrependInt64, code)
            FbSizeExpr.Start(b)
            FbSizeExpr.AddCode(b, vec)
            exprs.append(FbSizeExpr.End(b))
        return offsets_vector(b, symbols), offsets_vector(b, exprs)


def _op_table(b: Any, op: Op, dyn: _Dynamic) -> tuple[int, int]:
    """The op's table and its OpKind."""
    import importlib

    from tern.backends.cpu.fb.Activation import Activation
    from tern.backends.cpu.fb.BinaryKind import BinaryKind
    from tern.backends.cpu.fb.OpKind import OpKind
    from tern.backends.cpu.fb.PoolKind import PoolKind

    f = op.fields
    module = importlib.import_module(f"tern.backends.cpu.fb.{op.kind}")
    size_fields = SIZE_FIELDS.get(op.kind, ())
    for key, value in f.items():
        dynamic = isinstance(value, SymDim) or (isinstance(value, (tuple, list)) and any(
            isinstance(x, SymDim) for x in value))
        if dynamic and key not in size_fields:
            raise ExportError(f"cpu backend: op {op.kind} ({op.nodes}): its field {key} = {value!r} depends on the "
                              "dynamic dims, which the runtime does not evaluate there")
    exprs = [dyn.index(f.get(k, 0), f"op {op.kind} ({op.nodes}) field {k}") for k in size_fields]
    exprs_vec = _ints(b, module.StartExprsVector, b.PrependInt32, exprs) if any(e >= 0 for e in exprs) else None
    prepend = {"xs": b.PrependUint32, "offsets": b.PrependInt64}  # the rest are [int]
    lists = {k: _ints(b, getattr(module, f"Start{_camel(k)}Vector"), prepend.get(k, b.PrependInt32), f[k])
             for k in ("kernel", "stride", "padding", "padding_end", "dilation", "perm", "xs", "offsets") if k in f}
    module.Start(b)
    for key, value in f.items():
        add = getattr(module, f"Add{_camel(key)}")
        if key in lists:
            add(b, lists[key])
        elif key == "activation":
            add(b, getattr(Activation, "None_" if value == "None" else value))
        elif key == "kind":
            add(b, getattr(PoolKind if op.kind in ("Pool", "QPool") else BinaryKind, value))  # Binary, QBinary: BinaryKind
        else:
            add(b, int(value) if isinstance(value, SymDim) else value)
    if exprs_vec is not None:
        module.AddExprs(b, exprs_vec)
    return module.End(b), getattr(OpKind, op.kind)


def _camel(key: str) -> str:
    return "".join(part.capitalize() for part in key.split("_"))
