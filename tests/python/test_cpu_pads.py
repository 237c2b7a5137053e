"""Zero pads taken into the convolution after them (issue 25: the scene
app's EfficientNet-Lite0, whose stride-2 "same" convolutions pad 0 before
and 1 after, were cut into 6 subgraphs with layout changes between).

The cpu backend claims a zero pad of the spatial dims whose only user is a
convolution it runs, float (fusion.choose_pads) or int8 between its
quantize / dequantize pairs (quantized._x_input): the Conv / QConv reads the
pad's input with padding before (top, left) and padding_end (bottom,
right). The oracle: PyTorch eager on the same module (the converted PT2E
module for int8), with 1, 2 and 3 threads, on every ISA this machine has.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn import functional as F

import tern
from compare import assert_close
from tern.backends.cpu import CpuPartitioner
from tern.inspect import read_program
from test_cpu_backend import ISAS, _payload_ops, load_on_isa

# (pad: left, right, top, bottom; conv) and an input size: each pad's amounts differ on the two sides
CASES = {
    "dense_3x3_stride2_same": ((0, 1, 0, 1), nn.Conv2d(5, 12, 3, stride=2)),
    "depthwise_5x5_stride2_same": ((1, 2, 1, 2), nn.Conv2d(12, 12, 5, stride=2, groups=12)),
    "depthwise_3x3_stride2_pad_and_own_padding": ((0, 1, 0, 1), nn.Conv2d(12, 12, 3, stride=2, padding=1, groups=12)),
    "wide_3x3_stride1_winograd": ((0, 1, 2, 0), nn.Conv2d(32, 32, 3)),
    "grouped_3x3": ((2, 0, 0, 1), nn.Conv2d(12, 12, 3, groups=3)),
    "pointwise_after_a_pad": ((1, 0, 0, 2), nn.Conv2d(12, 16, 1)),
}


class PadConv(nn.Module):
    def __init__(self, pad: tuple[int, int, int, int], conv: nn.Conv2d) -> None:
        super().__init__()
        self.pad, self.conv = pad, conv
        self.first = nn.Conv2d(3, conv.in_channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu6(self.conv(F.pad(F.relu6(self.first(x)), self.pad)))


def _operators(program: "tern.Program") -> list[str]:
    return read_program(program.data)["methods"][0]["operators"]


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("hw", [(17, 17), (24, 31)])
def test_a_zero_pad_is_taken_into_the_convolution_and_matches_eager(name: str, hw: tuple[int, int],
                                                                      tmp_path: Path) -> None:
    torch.manual_seed(0)
    model, x = PadConv(*CASES[name]).eval(), torch.randn(1, 3, *hw)
    program = tern.export(model, (x,), partitioners=[CpuPartitioner()])
    assert "aten::constant_pad_nd" not in _operators(program)
    path = tmp_path / "m.tern"
    program.save(path)
    (ops,) = _payload_ops(path)
    padded = {nodes for kind, nodes in ops if "constant_pad_nd" in nodes}  # a grouped one: a Conv per group
    assert len(padded) == 1 and "convolution" in padded.pop(), ops  # the pad is part of the conv's op
    with torch.no_grad():
        want = model(x)
    outs = [tern.load(str(path), threads=t)(x)[0] for t in (1, 2, 3)]
    for t, got in zip((2, 3), outs[1:]):
        np.testing.assert_array_equal(got, outs[0], err_msg=f"{t} threads differ from 1")
    assert_close(outs[0], want, rtol=1e-4)


@pytest.mark.parametrize("isa", ISAS)
def test_padded_depthwise_and_dense_convolutions_match_eager_on_each_isa(isa: str, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(PadConv(*CASES["dense_3x3_stride2_same"]), nn.Conv2d(12, 12, 1),
                          nn.ZeroPad2d((1, 2, 1, 2)), nn.Conv2d(12, 12, 5, stride=2, groups=12)).eval()
    x = torch.randn(1, 3, 29, 26)
    path = tmp_path / "m.tern"
    program = tern.export(model, (x,), partitioners=[CpuPartitioner()])
    assert "aten::constant_pad_nd" not in _operators(program)
    program.save(path)
    m = load_on_isa(path, isa, monkeypatch)
    with torch.no_grad():
        assert_close(m(x)[0], model(x), rtol=1e-4, what=f"TERN_CPU_ISA={isa}")


class NotTaken(nn.Module):
    """Pads the backend leaves to the portable kernels: a value other than 0,
    and a pad read by two ops."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Conv2d(4, 4, 3, stride=2), nn.Conv2d(4, 4, 3, stride=2)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        ones = self.a(F.pad(x, (0, 1, 0, 1), value=1.0))
        shared = F.pad(x, (0, 1, 0, 1))
        return ones, self.b(shared) + shared.sum()


def test_pads_other_than_a_convolutions_own_zeros_stay_portable(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model, x = NotTaken().eval(), torch.randn(1, 4, 9, 9)
    cpu = CpuPartitioner()
    program = tern.export(model, (x,), partitioners=[cpu])
    refused = {node for node, op, _ in cpu.refused if op == "aten::constant_pad_nd"}
    assert len(refused) == 2, cpu.report()
    program.save(tmp_path / "m.tern")
    got = tern.load(str(tmp_path / "m.tern"))(x)
    with torch.no_grad():
        want = model(x)
    for g, w in zip(got, want):
        assert_close(g, w, rtol=1e-4)


def test_int8_asymmetric_zero_pad_is_taken_into_the_qconv(tmp_path: Path) -> None:
    # In a quantized graph the pad sits between two quantize / dequantize
    # pairs of its input's parameters; its zeros are the zero point, what
    # QConv reads outside x.
    torch.manual_seed(0)
    model = nn.Sequential(PadConv(*CASES["dense_3x3_stride2_same"]), nn.Conv2d(12, 12, 1),
                          nn.ZeroPad2d((1, 2, 1, 2)), nn.Conv2d(12, 12, 5, stride=2, groups=12)).eval()
    xs = [torch.randn(1, 3, 23, 20) for _ in range(4)]
    qmodel = tern.quantize(model, (xs[0],), calibration=[(x,) for x in xs], progress=False)
    program = tern.export(qmodel, (xs[0],), partitioners=[CpuPartitioner()])
    assert "aten::constant_pad_nd" not in _operators(program)
    path = tmp_path / "q.tern"
    program.save(path)
    (ops,) = _payload_ops(path)
    assert sum("constant_pad_nd" in nodes for kind, nodes in ops if kind == "QConv") == 2, ops
    got = tern.load(str(path))(xs[1])[0]
    want = qmodel(xs[1])
    step = float(want.abs().max()) / 127  # about one step of the output's int8 grid
    assert_close(got, want, rtol=0, atol=step)
