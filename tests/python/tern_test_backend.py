"""The Python side of the "tern_test" backend (tests/cpp/test_backend.h): a
partitioner that claims float32 elementwise chains (add, sub, mul, relu on
same-shaped tensors) and writes the payload that backend reads.

It exists to prove the backend path end to end (exporter hook -> format 1.1
delegate -> runtime backend); it is not shipped.
"""
from __future__ import annotations

import struct
from typing import Any

import torch

import tern

OPCODES = {
    "aten::add.Tensor": 0,
    "aten::sub.Tensor": 1,
    "aten::mul.Tensor": 2,
    "aten::relu": 3,
}


class TestPartitioner(tern.Partitioner):
    backend = "tern_test"

    def supports(self, node: torch.fx.Node) -> bool:
        from tern.ops import op_name

        if op_name(node.target) not in OPCODES or node.kwargs.get("alpha", 1) != 1 or len(node.args) > 2:
            return False
        out = node.meta.get("val")
        tensors = [a.meta.get("val") for a in node.args if isinstance(a, torch.fx.Node)]
        if len(tensors) != len(node.args) or not isinstance(out, torch.Tensor):
            return False  # a Python number operand
        return all(
            isinstance(t, torch.Tensor) and t.dtype == torch.float32 and t.shape == out.shape
            for t in (out, *tensors)
        )

    def preprocess(self, subgraph: torch.fx.GraphModule) -> bytes:
        from tern.ops import op_name

        nodes = list(subgraph.graph.nodes)
        inputs = [n for n in nodes if n.op == "placeholder"]
        consts = [n for n in nodes if n.op == "get_attr"]
        calls = [n for n in nodes if n.op == "call_function"]
        out_node = next(n for n in nodes if n.op == "output")
        outs = list(out_node.args[0]) if isinstance(out_node.args[0], (tuple, list)) else [out_node.args[0]]
        temps = [n for n in calls if n not in outs]
        order = inputs + consts + temps + outs
        slot = {n: i for i, n in enumerate(order)}
        numel = outs[0].meta["val"].numel()
        data = bytearray(b"TTB1")
        data += struct.pack("<5Iq", len(inputs), len(consts), len(temps), len(outs), len(calls), numel)
        for c in consts:
            data += getattr(subgraph, c.target).detach().to(torch.float32).contiguous().numpy().tobytes()
        for n in calls:
            a = slot[n.args[0]]
            b = slot[n.args[1]] if len(n.args) > 1 else 0
            data += struct.pack("<4I", OPCODES[op_name(n.target)], slot[n], a, b)
        return bytes(data)


def describe(path: Any) -> list[dict[str, Any]]:
    """The delegates of a file's forward method (tern.inspect)."""
    from tern.inspect import read_program

    return read_program(str(path))["methods"][0]["delegates"]
