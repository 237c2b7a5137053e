"""Reads a .tern file back into plain Python data (tests, `tern inspect`).

    info = read_program("model.tern")
    info["header"]["version_major"], info["methods"][0]["instructions"][0]
    info["metadata"]   # [("langid.vocab", b"..."), ...]
    info["self_tests"] # [{"method": "forward", "inputs": [...], "expected": [...]}, ...]

Checks the magic, sizes and the flatbuffer's CRC; raises ValueError on a
malformed file. Does not import torch.
"""
from __future__ import annotations

import os
import struct
import zlib
from typing import Any

from tern.fb import (
    BackendCall, Bool, BoolList, Double, DoubleList, EValue, Instruction, Int, IntList, JumpFalse, KernelCall, Method,
    Move, OptionalTensorList, Program, String, Tensor, TensorList,
)
from tern.fb.InstructionKind import InstructionKind
from tern.fb.Value import Value as ValueType
from tern.serialize import HEADER_FORMAT, HEADER_SIZE, MAGIC

_VALUE_KINDS = {getattr(ValueType, k): k for k in dir(ValueType) if not k.startswith("_") and k != "NONE"}
_STORAGE = {0: "None", 1: "Constant", 2: "Planned", 3: "State"}


def read_program(source: bytes | str | os.PathLike[str]) -> dict[str, Any]:
    """Header, segments and methods of a .tern file (bytes or a path)."""
    data = source if isinstance(source, (bytes, bytearray, memoryview)) else open(source, "rb").read()
    data = bytes(data)
    header = read_header(data)
    start, size = header["flatbuffer_offset"], header["flatbuffer_size"]
    fb = data[start : start + size]
    if zlib.crc32(fb) != header["flatbuffer_crc32"]:
        raise ValueError("flatbuffer checksum mismatch")
    table = header["segment_table_offset"]
    segments = [
        dict(zip(("offset", "size"), struct.unpack_from("<QQ", data, table + 16 * i)))
        for i in range(header["segment_count"])
    ]
    root = Program.Program.GetRootAs(fb, 0)
    methods = [_method(root.Methods(i)) for i in range(root.MethodsLength())]
    return {"header": header, "segments": segments, "producer": _str(root.Producer()), "methods": methods,
            "metadata": _metadata(root), "self_tests": _self_tests(root, start)}


def _self_tests(root: Program.Program, fb_start: int) -> list[dict[str, Any]]:
    """Program.self_tests: per test its method, and per input and expected
    output its dtype, shape and where its bytes lie in the file (offset,
    size); expected outputs with their rtol and atol."""
    from tern.emit import SCALAR_TYPE_NAMES

    def tensor(t: Any) -> dict[str, Any]:
        st = t.ScalarType()
        data_at = t._tab.Vector(t._tab.Offset(8)) if t.DataLength() else 0  # field 2, `data`
        return {"dtype": SCALAR_TYPE_NAMES[st] if 0 <= st < len(SCALAR_TYPE_NAMES) else f"type {st}",
                "shape": tuple(int(x) for x in t.SizesAsNumpy()) if t.SizesLength() else (),
                "offset": fb_start + data_at, "size": t.DataLength()}

    out = []
    for i in range(root.SelfTestsLength()):
        t = root.SelfTests(i)
        expected = [tensor(t.Expected(k)) for k in range(t.ExpectedLength())]
        for k, e in enumerate(expected):
            e["rtol"] = t.Rtol(k) if k < t.RtolLength() else None
            e["atol"] = t.Atol(k) if k < t.AtolLength() else None
        out.append({"method": _str(t.Method()), "inputs": [tensor(t.Inputs(k)) for k in range(t.InputsLength())],
                    "expected": expected})
    return out


def _metadata(root: Program.Program) -> list[tuple[str, bytes]]:
    """Program.metadata as (key, value) pairs in the file's order; keys that
    are not UTF-8 keep their bytes as backslash escapes."""
    out = []
    for i in range(root.MetadataLength()):
        e = root.Metadata(i)
        key = (e.Key() or b"").decode("utf-8", "backslashreplace")
        out.append((key, e.ValueAsNumpy().tobytes() if e.ValueLength() else b""))
    return out


def read_header(data: bytes) -> dict[str, Any]:
    """The fixed header's fields (runtime/format/header.h), range-checked."""
    if len(data) < 8 or data[:4] != MAGIC:
        raise ValueError("not a .tern file (bad magic)")
    if len(data) < HEADER_SIZE:
        raise ValueError("truncated header")
    fields = struct.unpack_from(HEADER_FORMAT, data, 0)
    names = ("magic", "header_size", "version_major", "version_minor", "flatbuffer_crc32", "flatbuffer_offset",
             "flatbuffer_size", "segment_table_offset", "segment_count", "file_size", "reserved")
    header = dict(zip(names, fields))
    if header["file_size"] > len(data):
        raise ValueError(f"truncated file: {len(data)} bytes, header says {header['file_size']}")
    if header["flatbuffer_offset"] + header["flatbuffer_size"] > header["file_size"]:
        raise ValueError("flatbuffer out of range")
    return header


def _str(b: bytes | None) -> str:
    return b.decode() if b is not None else ""


def _method(m: Method.Method) -> dict[str, Any]:
    ins = [_instruction(m.Instructions(i)) for i in range(m.InstructionsLength())]
    return {
        "name": _str(m.Name()),
        "values": [_value(m.Values(i)) for i in range(m.ValuesLength())],
        "inputs": [m.Inputs(i) for i in range(m.InputsLength())],
        "outputs": [m.Outputs(i) for i in range(m.OutputsLength())],
        "instructions": ins,
        "operators": [_operator(m.Operators(i)) for i in range(m.OperatorsLength())],
        "arena_sizes": [m.ArenaSizes(i) for i in range(m.ArenaSizesLength())],
        "debug": [{"node": _str(d.Node()), "source": _str(d.Source())} for d in map(m.Debug, range(m.DebugLength()))],
        "delegates": [_delegate(m.Delegates(i)) for i in range(m.DelegatesLength())],
        "state": [{"value": s.Value(), "initial": s.Initial(), "name": _str(s.Name())}
                  for s in map(m.State, range(m.StateLength()))],
    }


def _delegate(d: Any) -> dict[str, Any]:
    return {
        "backend": _str(d.Backend()),
        "payload_segment": d.PayloadSegment(),
        "inputs": [d.Inputs(i) for i in range(d.InputsLength())],
        "outputs": [d.Outputs(i) for i in range(d.OutputsLength())],
    }


def _operator(op: Any) -> str:
    name, overload = _str(op.Name()), _str(op.Overload())
    return f"{name}.{overload}" if overload else name


def _instruction(ins: Instruction.Instruction) -> dict[str, Any]:
    if ins.KindType() == InstructionKind.BackendCall:
        call = BackendCall.BackendCall()
        call.Init(ins.Kind().Bytes, ins.Kind().Pos)
        return {"kind": "BackendCall", "delegate": call.Delegate()}
    if ins.KindType() == InstructionKind.JumpFalse:
        jump = JumpFalse.JumpFalse()
        jump.Init(ins.Kind().Bytes, ins.Kind().Pos)
        return {"kind": "JumpFalse", "cond": jump.Cond(), "target": jump.Target()}
    if ins.KindType() == InstructionKind.Move:
        move = Move.Move()
        move.Init(ins.Kind().Bytes, ins.Kind().Pos)
        return {"kind": "Move", "from": move.From(), "to": move.To()}
    if ins.KindType() != InstructionKind.KernelCall:
        return {"kind": ins.KindType()}
    call = KernelCall.KernelCall()
    call.Init(ins.Kind().Bytes, ins.Kind().Pos)
    return {"kind": "KernelCall", "op": call.Op(), "args": [call.Args(i) for i in range(call.ArgsLength())]}


_TABLES = {"Tensor": Tensor.Tensor, "Int": Int.Int, "Double": Double.Double, "Bool": Bool.Bool, "String": String.String,
           "IntList": IntList.IntList, "DoubleList": DoubleList.DoubleList, "BoolList": BoolList.BoolList,
           "TensorList": TensorList.TensorList, "OptionalTensorList": OptionalTensorList.OptionalTensorList}


def _value(ev: EValue.EValue) -> dict[str, Any]:
    kind = _VALUE_KINDS.get(ev.ValueType())
    if kind is None:
        return {"kind": "None"}
    t = _TABLES[kind]()
    t.Init(ev.Value().Bytes, ev.Value().Pos)
    if kind == "Tensor":
        return {"kind": kind, "scalar_type": t.ScalarType(), "sizes": [t.Sizes(i) for i in range(t.SizesLength())],
                "storage": _STORAGE.get(t.Storage(), t.Storage()), "segment": t.Segment(), "arena": t.Arena(),
                "offset": t.Offset()}
    if kind == "String":
        return {"kind": kind, "value": _str(t.Value())}
    if hasattr(t, "ItemsLength"):
        return {"kind": kind, "items": [t.Items(i) for i in range(t.ItemsLength())]}
    return {"kind": kind, "value": t.Value()}
