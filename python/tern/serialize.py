"""Writes a .tern file: header | flatbuffer | segment table | data segments.

    offset 0    header (64 bytes, runtime/format/header.h)
    64          flatbuffer (schema/tern.fbs, root Program)
    align 8     segment table: segment_count x {u64 offset, u64 size}
    align 64    the constants segment (if any constant): every constant
                tensor, each at a 64-aligned offset; identical payloads are
                stored once
    align 64    one segment per delegate payload (format 1.1), in order

The flatbuffer is built with the generated code in tern.fb (flatc --python,
a build output). Everything is written in a fixed order from the MethodIR, so
the same model gives byte-identical files.
"""
from __future__ import annotations

import struct
import zlib
from typing import Any, Callable, Sequence

import flatbuffers

from tern.emit import DelegateIR, Instr, MethodIR, StateIR, Value, scalar_type_of_name
from tern.fb import (
    BackendCall, Bool, BoolList, DebugInfo, Delegate, Double, DoubleList, EValue, Instruction, Int, IntList,
    BundledTensor, JumpFalse, KernelCall, Metadata, Method, Move, Operator, OptionalTensorList, Program, SelfTest,
    SizeExpr, StateTensor, String, Symbol, Tensor, TensorList,
)
from tern.fb.InstructionKind import InstructionKind
from tern.fb.TensorStorage import TensorStorage
from tern.fb.Value import Value as ValueType
from tern.memory_plan import ALIGNMENT, MemoryPlan, align
from tern.ops import split_op_name
from tern.program import BundledTest

MAGIC = b"TERN"
HEADER_FORMAT = "<4sIHHIQQQQQQ"  # magic, header_size, major, minor, crc32, fb off/size, table off, count, file size, reserved
HEADER_SIZE = struct.calcsize(HEADER_FORMAT)  # 64
VERSION_MAJOR, VERSION_MINOR = 1, 3
# The version a file is written with: the oldest that can run it. A file with
# dynamic shapes needs 1.3; with state (a 1.1 runtime would run it without
# its state) or a loop (a backward jump) 1.2; any other file stays 1.1, so
# runtimes that read 1.1 keep loading it.
VERSION_MINOR_1_1, VERSION_MINOR_1_2 = 1, 2


def minor_version(method: MethodIR) -> int:
    """The oldest format minor version that runs `method` (see above)."""
    if method.size_exprs:
        return 3
    return VERSION_MINOR_1_2 if method.state or _has_loop(method) else VERSION_MINOR_1_1


def _has_loop(method: MethodIR) -> bool:
    return any(ins.jump is not None and ins.jump <= i for i, ins in enumerate(method.instructions))

Builder = flatbuffers.Builder


def constant_layout(constants: Sequence[bytes]) -> tuple[list[int], bytes]:
    """Offsets of each constant inside the one constants segment, and its bytes."""
    offsets, out = [], bytearray()
    for data in constants:
        out.extend(b"\0" * (align(len(out)) - len(out)))
        offsets.append(len(out))
        out.extend(data)
    return offsets, bytes(out)


def serialize(method: MethodIR, plan: MemoryPlan, producer: str,
              metadata: Sequence[tuple[bytes, bytes]] = (), self_tests: Sequence[BundledTest] = ()) -> bytes:
    """The whole .tern file for a one-method program. `metadata`: (key, value)
    pairs sorted by key, each key once (tern.program.check_metadata);
    `self_tests`: bundled tests (tern.program.BundledTest), stored inline in
    the flatbuffer (Program.self_tests)."""
    offsets, segment = constant_layout(method.constants)
    segments = ([segment] if segment else []) + [d.payload for d in method.delegates]
    first_payload = 1 if segment else 0
    test_bytes = sum(len(t.data) + 256 for test in self_tests for t in (*test.inputs, *test.expected))
    b = Builder(1024 + sum(len(v) + 64 for _, v in metadata) + test_bytes)
    m = _method(b, method, plan, offsets, first_payload)
    methods = offsets_vector(b, [m])
    prod = b.CreateString(producer)
    entries = offsets_vector(b, [_metadata(b, k, v) for k, v in metadata]) if metadata else None
    tests = offsets_vector(b, [_self_test(b, t) for t in self_tests]) if self_tests else None
    Program.Start(b)
    Program.AddMethods(b, methods)
    Program.AddProducer(b, prod)
    # none: the bytes of a file without metadata or tests stay as they were
    if entries is not None:
        Program.AddMetadata(b, entries)
    if tests is not None:
        Program.AddSelfTests(b, tests)
    b.Finish(Program.End(b))
    return assemble(bytes(b.Output()), segments, minor_version(method))


# Metadata values start on this boundary of the file (the flatbuffer starts
# 64-aligned), so an application may read a table of integers in place.
METADATA_ALIGNMENT = 16


def _aligned_bytes(b: Builder, value: bytes) -> int:
    """A [ubyte] vector of `value` starting on a METADATA_ALIGNMENT boundary."""
    # CreateByteVector with an alignment: one copy of the bytes, not a prepend per byte.
    b.StartVector(1, len(value), METADATA_ALIGNMENT)
    b.head = b.Head() - len(value)
    b.Bytes[b.Head():b.Head() + len(value)] = value
    return b.EndVector()


def _metadata(b: Builder, key: bytes, value: bytes) -> int:
    k = b.CreateString(key)
    v = _aligned_bytes(b, value)
    Metadata.Start(b)
    Metadata.AddKey(b, k)
    Metadata.AddValue(b, v)
    return Metadata.End(b)


def _self_test(b: Builder, test: BundledTest) -> int:
    def tensor(t: Any) -> int:
        sizes = _scalar_vector(b, b.PrependInt64, 8, list(t.shape))
        data = _aligned_bytes(b, t.data)  # test data, like metadata values, start 16-aligned
        BundledTensor.Start(b)
        BundledTensor.AddScalarType(b, scalar_type_of_name(t.dtype))
        BundledTensor.AddSizes(b, sizes)
        BundledTensor.AddData(b, data)
        return BundledTensor.End(b)

    name = b.CreateString(test.method)
    inputs = offsets_vector(b, [tensor(t) for t in test.inputs])
    expected = offsets_vector(b, [tensor(t) for t in test.expected])
    rtol = _scalar_vector(b, b.PrependFloat64, 8, list(test.rtol))
    atol = _scalar_vector(b, b.PrependFloat64, 8, list(test.atol))
    SelfTest.Start(b)
    SelfTest.AddMethod(b, name)
    SelfTest.AddInputs(b, inputs)
    SelfTest.AddExpected(b, expected)
    SelfTest.AddRtol(b, rtol)
    SelfTest.AddAtol(b, atol)
    return SelfTest.End(b)


def assemble(flatbuffer: bytes, segments: Sequence[bytes], minor: int = VERSION_MINOR) -> bytes:
    """Lays out header, flatbuffer, segment table and segments (see module doc)."""
    table_offset = align(HEADER_SIZE + len(flatbuffer), 8)
    cursor = table_offset + 16 * len(segments)
    entries = []
    for seg in segments:
        cursor = align(cursor, ALIGNMENT)
        entries.append((cursor, len(seg)))
        cursor += len(seg)
    header = struct.pack(
        HEADER_FORMAT, MAGIC, HEADER_SIZE, VERSION_MAJOR, minor, zlib.crc32(flatbuffer) & 0xFFFFFFFF,
        HEADER_SIZE, len(flatbuffer), table_offset, len(segments), cursor, 0,
    )
    out = bytearray(header + flatbuffer)
    out.extend(b"\0" * (table_offset - len(out)))
    for offset, size in entries:
        out.extend(struct.pack("<QQ", offset, size))
    for (offset, _), seg in zip(entries, segments):
        out.extend(b"\0" * (offset - len(out)))
        out.extend(seg)
    if len(out) != cursor:  # not an assert: checks must survive python -O
        raise RuntimeError(f"internal error: the file is {len(out)} bytes, its header says {cursor}")
    return bytes(out)


# flatbuffer tables


def _method(b: Builder, m: MethodIR, plan: MemoryPlan, const_offsets: list[int], first_payload: int) -> int:
    name = b.CreateString(m.name)
    state = set(m.state_values)
    values = offsets_vector(b, [_evalue(b, i, v, plan, const_offsets, i in state) for i, v in enumerate(m.values)])
    inputs = _scalar_vector(b, b.PrependUint32, 4, m.inputs)
    outputs = _scalar_vector(b, b.PrependUint32, 4, m.outputs)
    instructions = offsets_vector(b, [_instruction(b, ins) for ins in m.instructions])
    operators = offsets_vector(b, [_operator(b, name_) for name_ in m.operators])
    arenas = _scalar_vector(b, b.PrependUint64, 8, [plan.planned_bytes] if plan.planned_bytes else [])
    debug = offsets_vector(b, [_debug(b, ins) for ins in m.instructions])
    delegates = offsets_vector(b, [_delegate(b, d, first_payload + i) for i, d in enumerate(m.delegates)])
    states = offsets_vector(b, [_state(b, s) for s in m.state])
    symbols = offsets_vector(b, [_symbol(b, s) for s in m.symbols])
    exprs = offsets_vector(b, [_size_expr(b, code) for code in m.size_exprs])
    Method.Start(b)
    Method.AddName(b, name)
    Method.AddValues(b, values)
    Method.AddInputs(b, inputs)
    Method.AddOutputs(b, outputs)
    Method.AddInstructions(b, instructions)
    Method.AddOperators(b, operators)
    Method.AddArenaSizes(b, arenas)
    Method.AddDebug(b, debug)
    if m.delegates:
        Method.AddDelegates(b, delegates)
    if m.state:
        Method.AddState(b, states)
    if m.symbols:
        Method.AddSymbols(b, symbols)
    if m.size_exprs:
        Method.AddSizeExprs(b, exprs)
    return Method.End(b)


def _symbol(b: Builder, s: Any) -> int:
    name = b.CreateString(s.name)
    Symbol.Start(b)
    Symbol.AddName(b, name)
    Symbol.AddMin(b, s.min)
    Symbol.AddMax(b, s.max)
    return Symbol.End(b)


def _size_expr(b: Builder, code: list[int]) -> int:
    vec = _scalar_vector(b, b.PrependInt64, 8, code)
    SizeExpr.Start(b)
    SizeExpr.AddCode(b, vec)
    return SizeExpr.End(b)


def _state(b: Builder, s: StateIR) -> int:
    name = b.CreateString(s.name)
    StateTensor.Start(b)
    StateTensor.AddValue(b, s.value)
    StateTensor.AddInitial(b, s.initial)
    StateTensor.AddName(b, name)
    return StateTensor.End(b)


def _delegate(b: Builder, d: DelegateIR, segment: int) -> int:
    backend = b.CreateString(d.backend)
    inputs = _scalar_vector(b, b.PrependUint32, 4, d.inputs)
    outputs = _scalar_vector(b, b.PrependUint32, 4, d.outputs)
    Delegate.Start(b)
    Delegate.AddBackend(b, backend)
    Delegate.AddPayloadSegment(b, segment)
    Delegate.AddInputs(b, inputs)
    Delegate.AddOutputs(b, outputs)
    return Delegate.End(b)


def _evalue(b: Builder, index: int, v: Value, plan: MemoryPlan, const_offsets: list[int], state: bool) -> int:
    if v.kind == "None":
        EValue.Start(b)
        return EValue.End(b)
    if v.kind == "Tensor":
        table = _tensor(b, index, v, plan, const_offsets, state)
    elif v.expr is not None:
        table = _int_expr(b, v)
    else:
        table = _SCALARS[v.kind](b, v.data)
    EValue.Start(b)
    EValue.AddValueType(b, getattr(ValueType, v.kind))
    EValue.AddValue(b, table)
    return EValue.End(b)


def _int_expr(b: Builder, v: Value) -> int:
    """An Int or IntList whose value the runtime computes (format 1.3)."""
    if v.kind == "Int":
        Int.Start(b)
        Int.AddValue(b, v.data)
        Int.AddExpr(b, v.expr)
        return Int.End(b)
    items = _scalar_vector(b, b.PrependInt64, 8, list(v.data))
    exprs = _scalar_vector(b, b.PrependInt32, 4, list(v.expr))
    IntList.Start(b)
    IntList.AddItems(b, items)
    IntList.AddExprs(b, exprs)
    return IntList.End(b)


def _tensor(b: Builder, index: int, v: Value, plan: MemoryPlan, const_offsets: list[int], state: bool) -> int:
    info = v.data
    sizes = _scalar_vector(b, b.PrependInt64, 8, list(info.sizes))
    dyn = _scalar_vector(b, b.PrependInt32, 4, list(info.dyn)) if info.dyn else None
    Tensor.Start(b)
    Tensor.AddScalarType(b, info.scalar_type)
    Tensor.AddSizes(b, sizes)
    if dyn is not None:
        Tensor.AddDynSizes(b, dyn)
    if info.constant is not None:
        Tensor.AddStorage(b, TensorStorage.Constant)
        Tensor.AddSegment(b, 0)
        Tensor.AddOffset(b, const_offsets[info.constant])
    elif index in plan.offsets:
        Tensor.AddStorage(b, TensorStorage.State if state else TensorStorage.Planned)
        Tensor.AddArena(b, 0)
        Tensor.AddOffset(b, plan.offsets[index])
    elif info.nbytes:
        raise AssertionError(f"value {index}: a non-empty tensor has neither constant nor planned storage")
    return Tensor.End(b)


def _scalar_table(module: Any, add: Callable[[Builder, Any], None]) -> Callable[[Builder, Any], int]:
    def build(b: Builder, data: Any) -> int:
        module.Start(b)
        add(b, data)
        return module.End(b)

    return build


def _list_table(module: Any, prepend: str, size: int) -> Callable[[Builder, Any], int]:
    def build(b: Builder, items: Any) -> int:
        vec = _scalar_vector(b, getattr(b, prepend), size, list(items))
        module.Start(b)
        module.AddItems(b, vec)
        return module.End(b)

    return build


def _string_table(b: Builder, s: str) -> int:
    off = b.CreateString(s)
    String.Start(b)
    String.AddValue(b, off)
    return String.End(b)


_SCALARS: dict[str, Callable[[Builder, Any], int]] = {
    "Int": _scalar_table(Int, Int.AddValue),
    "Double": _scalar_table(Double, Double.AddValue),
    "Bool": _scalar_table(Bool, Bool.AddValue),
    "String": _string_table,
    "IntList": _list_table(IntList, "PrependInt64", 8),
    "DoubleList": _list_table(DoubleList, "PrependFloat64", 8),
    "BoolList": _list_table(BoolList, "PrependBool", 1),
    "TensorList": _list_table(TensorList, "PrependUint32", 4),
    "OptionalTensorList": _list_table(OptionalTensorList, "PrependInt32", 4),
}


def _instruction(b: Builder, ins: Instr) -> int:
    if ins.jump is not None:
        JumpFalse.Start(b)
        JumpFalse.AddCond(b, ins.args[0])
        JumpFalse.AddTarget(b, ins.jump)
        return _wrap(b, InstructionKind.JumpFalse, JumpFalse.End(b))
    if ins.move:
        Move.Start(b)
        Move.AddFrom(b, ins.args[0])
        Move.AddTo(b, ins.args[1])
        return _wrap(b, InstructionKind.Move, Move.End(b))
    if ins.delegate is not None:
        BackendCall.Start(b)
        BackendCall.AddDelegate(b, ins.delegate)
        return _wrap(b, InstructionKind.BackendCall, BackendCall.End(b))
    args = _scalar_vector(b, b.PrependUint32, 4, ins.args)
    KernelCall.Start(b)
    KernelCall.AddOp(b, ins.op)
    KernelCall.AddArgs(b, args)
    return _wrap(b, InstructionKind.KernelCall, KernelCall.End(b))


def _wrap(b: Builder, kind: int, table: int) -> int:
    """An Instruction whose `kind` union holds `table`."""
    Instruction.Start(b)
    Instruction.AddKindType(b, kind)
    Instruction.AddKind(b, table)
    return Instruction.End(b)


def _operator(b: Builder, full_name: str) -> int:
    name, overload = split_op_name(full_name)
    n, o = b.CreateString(name), b.CreateString(overload)
    Operator.Start(b)
    Operator.AddName(b, n)
    Operator.AddOverload(b, o)
    return Operator.End(b)


def _debug(b: Builder, ins: Instr) -> int:
    node, source = b.CreateString(ins.node), b.CreateString(ins.source)
    DebugInfo.Start(b)
    DebugInfo.AddNode(b, node)
    DebugInfo.AddSource(b, source)
    return DebugInfo.End(b)


def _scalar_vector(b: Builder, prepend: Callable[[Any], None], size: int, items: list[Any]) -> int:
    b.StartVector(size, len(items), size)
    for x in reversed(items):
        prepend(x)
    return b.EndVector()


def offsets_vector(b: Builder, offsets: list[int]) -> int:
    b.StartVector(4, len(offsets), 4)
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return b.EndVector()
