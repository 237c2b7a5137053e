"""Writes a compiled cpu program as the backend's payload (the layout is in
backends/cpu/schema/cpu.fbs; backends/cpu/loader.cpp reads it):

    "TCPU" | u32 version | u64 flatbuffer size | flatbuffer | pad to 64 | weights blob
"""
from __future__ import annotations

import struct
from typing import Any

import flatbuffers

from tern.backends.cpu.ir import Op, Program
from tern.memory_plan import align
from tern.serialize import offsets_vector

VERSION = 2  # 2: Attention (a runtime reads 1 and 2)
VERSION_INT8 = 3  # 3: int8 values and the ops on them (QConv, QPool, ...); written only by programs that use them
VERSION_BOOL = 4  # 4: bool values (an Attention's mask computed at run time); written only by programs that have one
# 5: Winograd kernels the runtime transforms at load (Conv.winograd_element); written only by programs that have one
VERSION_WINOGRAD_KERNEL = 5
HEADER = struct.Struct("<4sIQ")


def serialize(p: Program) -> bytes:
    from tern.backends.cpu.fb import Op as FbOp
    from tern.backends.cpu.fb import Program as FbProgram
    from tern.backends.cpu.fb import Value as FbValue
    from tern.backends.cpu.fb.DType import DType
    from tern.backends.cpu.fb.Storage import Storage

    b = flatbuffers.Builder(1024)
    values = []
    for v in p.values:
        sizes = _ints(b, FbValue.StartSizesVector, b.PrependInt64, v.sizes)
        FbValue.Start(b)
        FbValue.AddSizes(b, sizes)
        FbValue.AddStorage(b, getattr(Storage, v.storage))
        FbValue.AddIndex(b, v.index)
        FbValue.AddOffset(b, v.offset)
        if v.dtype != "Float32":
            FbValue.AddDtype(b, getattr(DType, v.dtype))
        values.append(FbValue.End(b))
    ops = []
    for op in p.ops:
        table, kind = _op_table(b, op)
        nodes = b.CreateString(op.nodes)
        FbOp.Start(b)
        FbOp.AddKindType(b, kind)
        FbOp.AddKind(b, table)
        FbOp.AddNodes(b, nodes)
        ops.append(FbOp.End(b))
    values_vec, ops_vec = offsets_vector(b, values), offsets_vector(b, ops)
    FbProgram.Start(b)
    FbProgram.AddValues(b, values_vec)
    FbProgram.AddOps(b, ops_vec)
    FbProgram.AddNumInputs(b, p.num_inputs)
    FbProgram.AddNumOutputs(b, p.num_outputs)
    FbProgram.AddWorkspaceBytes(b, p.workspace_bytes)
    b.Finish(FbProgram.End(b))
    fb = bytes(b.Output())
    version = _version(p)
    head = HEADER.pack(b"TCPU", version, len(fb)) + fb
    return head + b"\0" * (align(len(head)) - len(head)) + p.weights


def _version(p: Program) -> int:
    """The lowest payload version that holds p (a runtime reads every version up to its own)."""
    dtypes = {v.dtype for v in p.values}
    if any(op.kind == "Conv" and "winograd_element" in op.fields for op in p.ops):
        return VERSION_WINOGRAD_KERNEL
    return VERSION_BOOL if "Bool" in dtypes else VERSION_INT8 if "Int8" in dtypes else VERSION


def _ints(b: Any, start: Any, prepend: Any, items: Any) -> int:
    start(b, len(items))
    for x in reversed(list(items)):
        prepend(int(x))
    return b.EndVector()


def _op_table(b: Any, op: Op) -> tuple[int, int]:
    """The op's table and its OpKind."""
    import importlib

    from tern.backends.cpu.fb.Activation import Activation
    from tern.backends.cpu.fb.BinaryKind import BinaryKind
    from tern.backends.cpu.fb.OpKind import OpKind
    from tern.backends.cpu.fb.PoolKind import PoolKind

    f = op.fields
    module = importlib.import_module(f"tern.backends.cpu.fb.{op.kind}")
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
            add(b, value)
    return module.End(b), getattr(OpKind, op.kind)


def _camel(key: str) -> str:
    return "".join(part.capitalize() for part in key.split("_"))
