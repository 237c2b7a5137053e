"""The cpu backend (python/tern/backends/cpu/, backends/cpu/): what it
claims, how it compiles (layout, fusion, packing), and parity with PyTorch
eager for each op it runs, on every ISA this machine has, with the same bits
for 1, 2 and 3 threads."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

import tern
from compare import assert_close, assert_outputs_close
from tern.backends.cpu import CpuOptions, CpuPartitioner
from tern.inspect import read_program

ISAS = ["scalar", "avx2", "avx512"]


def _payloads(path: Path) -> list[tuple[int, Any]]:
    """For each delegate: its payload version and its program (flatbuffer)."""
    from tern.backends.cpu.fb.Program import Program

    data = Path(path).read_bytes()
    info = read_program(data)
    out = []
    for d in info["methods"][0]["delegates"]:
        seg = info["segments"][d["payload_segment"]]
        payload = data[seg["offset"] : seg["offset"] + seg["size"]]
        size = int.from_bytes(payload[8:16], "little")
        out.append((int.from_bytes(payload[4:8], "little"), Program.GetRootAs(payload[16 : 16 + size], 0)))
    return out


def _payload_ops(path: Path) -> list[list[tuple[str, str]]]:
    """For each delegate: (op kind, covered nodes) of its program."""
    from tern.backends.cpu.fb.OpKind import OpKind

    kinds = {v: k for k, v in vars(OpKind).items() if not k.startswith("_")}
    return [[(kinds[prog.Ops(i).KindType()], prog.Ops(i).Nodes().decode()) for i in range(prog.OpsLength())]
            for _, prog in _payloads(path)]


def _check(model: nn.Module, args: tuple[torch.Tensor, ...], tmp_path: Path, tol: float = 1e-4,
           options: CpuOptions | None = None) -> Path:
    """Exports with the cpu backend (with `options`), runs with 1/2/3 threads
    (identical bits) and compares with eager."""
    model.eval()
    with torch.no_grad():
        ref = model(*args)
    refs = [ref] if isinstance(ref, torch.Tensor) else list(ref)
    path = tmp_path / "model.tern"
    tern.export(model, args, partitioners=[CpuPartitioner(options=options)]).save(path)
    outs = tern.load(str(path), threads=1)(*args)
    for threads in (2, 3):
        for a, b in zip(tern.load(str(path), threads=threads)(*args), outs):
            np.testing.assert_array_equal(a, b, err_msg=f"{threads} threads differ from 1")
    assert_outputs_close(outs, refs, rtol=tol)  # relative to each output's own scale (compare.py)
    return path


class Conv(nn.Module):
    def __init__(self, cin: int, cout: int, k: int, stride: int = 1, padding: int = 0, dilation: int = 1,
                 groups: int = 1, bias: bool = True, act: Any = None) -> None:
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, stride, padding, dilation, groups, bias)
        self.act = act or nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.conv(x))


CONVS = {
    "3x3_pad1_relu": (Conv(3, 16, 3, padding=1, act=nn.ReLU()), (1, 3, 13, 11)),
    "3x3_stride2_relu6": (Conv(8, 33, 3, stride=2, padding=1, act=nn.ReLU6()), (2, 8, 15, 16)),
    "1x1_nobias": (Conv(24, 40, 1, bias=False), (1, 24, 9, 9)),
    "7x7_stride2_pad3": (Conv(3, 20, 7, stride=2, padding=3), (1, 3, 32, 30)),
    "3x3_dilation2_hardswish": (Conv(5, 17, 3, padding=2, dilation=2, act=nn.Hardswish()), (1, 5, 12, 12)),
    "depthwise_3x3": (Conv(32, 32, 3, padding=1, groups=32, act=nn.ReLU6()), (1, 32, 14, 14)),
    "depthwise_5x5_stride2": (Conv(20, 20, 5, stride=2, padding=2, groups=20), (1, 20, 17, 17)),
    "sigmoid": (Conv(4, 8, 3, act=nn.Sigmoid()), (1, 4, 8, 8)),
    "tanh": (Conv(4, 8, 1, act=nn.Tanh()), (1, 4, 8, 8)),
    "gelu": (Conv(4, 8, 1, act=nn.GELU()), (1, 4, 8, 8)),
    "silu": (Conv(4, 8, 1, act=nn.SiLU()), (1, 4, 8, 8)),
    "one_channel_in": (Conv(1, 6, 3, padding=1), (2, 1, 9, 10)),
    "two_channels_in": (Conv(2, 6, 1), (1, 2, 7, 5)),
}


@pytest.mark.parametrize("name", sorted(CONVS))
def test_convolution_matches_eager_as_one_fused_op(name: str, tmp_path: Path) -> None:
    torch.manual_seed(0)
    model, shape = CONVS[name]
    path = _check(model, (torch.randn(*shape),), tmp_path)
    (ops,) = _payload_ops(path)
    # NCHW in and out (one channel in: already NHWC), one fused conv
    assert [k for k, _ in ops] == ["Transpose"] * (shape[1] > 1) + ["Conv", "Transpose"]
    if not isinstance(model.act, nn.Identity):
        assert "+" in ops[1][1]  # the activation fused into the convolution


class ResidualBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(16, 16, 3, padding=1)
        self.b = nn.Conv2d(16, 16, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.a(x))
        return torch.relu(self.b(y) + y)


def test_residual_add_and_relu_fuse_into_the_convolution(tmp_path: Path) -> None:
    torch.manual_seed(0)
    path = _check(ResidualBlock(), (torch.randn(2, 16, 10, 10),), tmp_path)
    (ops,) = _payload_ops(path)
    assert [k for k, _ in ops] == ["Transpose", "Conv", "Conv", "Transpose"]
    assert ops[2][1].startswith("convolution") and "add" in ops[2][1] and "relu" in ops[2][1]


class Head(nn.Module):
    """Pools, a flatten and linear layers: the end of most classifiers."""

    def __init__(self, pool: nn.Module) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 24, 3, padding=1)
        self.pool = pool
        self.fc1 = nn.Linear(24, 40)
        self.fc2 = nn.Linear(40, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.pool(torch.relu(self.conv(x)))
        y = torch.flatten(nn.functional.adaptive_avg_pool2d(y, 1), 1)
        return self.fc2(torch.relu(self.fc1(y)))


@pytest.mark.parametrize("pool", ["max3s2p1", "avg2", "avg3p1_count_pad", "avg3p1_no_count_pad", "none"])
def test_pooling_flatten_and_linear_layers_match_eager(pool: str, tmp_path: Path) -> None:
    torch.manual_seed(0)
    pools = {
        "max3s2p1": nn.MaxPool2d(3, 2, 1),
        "avg2": nn.AvgPool2d(2),
        "avg3p1_count_pad": nn.AvgPool2d(3, 1, 1, count_include_pad=True),
        "avg3p1_no_count_pad": nn.AvgPool2d(3, 1, 1, count_include_pad=False),
        "none": nn.Identity(),
    }
    path = _check(Head(pools[pool]), (torch.randn(2, 3, 16, 16),), tmp_path)
    (ops,) = _payload_ops(path)
    kinds = [k for k, _ in ops]
    assert kinds.count("Conv") == 3 and "Pool" in kinds and kinds[-1] == "Copy"


class Elementwise(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(2, 8, 5, 5))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a = torch.sigmoid(x * y - self.w)  # mul, a constant operand, sub + sigmoid fused
        return a + x, torch.nn.functional.silu(a.reshape(2, -1))


def test_elementwise_ops_constants_and_reshapes_match_eager(tmp_path: Path) -> None:
    torch.manual_seed(0)
    path = _check(Elementwise(), (torch.randn(2, 8, 5, 5), torch.randn(2, 8, 5, 5)), tmp_path)
    (ops,) = _payload_ops(path)
    assert [k for k, _ in ops].count("Binary") == 3  # mul, sub(+sigmoid), add
    assert "Transpose" not in [k for k, _ in ops]  # no convolution: the graph's layout throughout


class SqueezeExcite(nn.Module):
    """mobilenet_v3 / efficientnet's gate: a per-channel [n, c, 1, 1] scale
    (a broadcast mul in NHWC), hardsigmoid as x + 3, clamp, / 6 (scalar ops)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(8, 24, 1)
        self.fc1 = nn.Conv2d(24, 6, 1)
        self.fc2 = nn.Conv2d(6, 24, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = nn.functional.silu(self.conv(x))
        s = nn.functional.adaptive_avg_pool2d(y, 1)
        s = nn.functional.hardsigmoid(self.fc2(torch.relu(self.fc1(s))))
        return y * s - 0.5 * y


def test_squeeze_excite_gate_broadcasts_per_channel(tmp_path: Path) -> None:
    torch.manual_seed(0)
    path = _check(SqueezeExcite(), (torch.randn(2, 8, 9, 7),), tmp_path)
    m = read_program(str(path))["methods"][0]
    assert not [i for i in m["instructions"] if i["kind"] == "KernelCall"]  # all of it on the backend
    (ops,) = _payload_ops(path)
    assert [k for k, _ in ops].count("Binary") >= 2 and [k for k, _ in ops].count("Unary") >= 1


class WindowAttentionBias(nn.Module):
    """Window attention with a relative position bias (TinyViT, Swin): scores
    [windows, heads, n, n] plus a bias [heads, n, n], a 4-d add that
    broadcasts in the plain layout only (no image: no NHWC)."""

    def __init__(self) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.randn(3, 7, 7))

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return torch.softmax(q @ k.transpose(-2, -1) * 0.5 + self.bias, dim=-1)


def test_window_attention_bias_add_runs_on_the_backend(tmp_path: Path) -> None:
    torch.manual_seed(0)
    path = _check(WindowAttentionBias(), (torch.randn(5, 3, 7, 4), torch.randn(5, 3, 7, 4)), tmp_path)
    m = read_program(str(path))["methods"][0]
    assert not [i for i in m["instructions"] if i["kind"] == "KernelCall"]  # the add too
    (ops,) = _payload_ops(path)
    assert "Binary" in [k for k, _ in ops]


class MiddleBroadcast(nn.Module):
    """Operands that equal the output on leading and trailing dims and are 1
    between (rotary angles [1, t, 1, d] over [1, t, heads, d]; [s, 1, d]
    over [s, h, d]), in mul, add and sub."""

    def forward(self, x: torch.Tensor, c: torch.Tensor, g: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        y = x * c - torch.tanh(x) * c + c * x  # the broadcast operand first too
        return (y.reshape(2, 15, 32) + g) - b


def test_a_broadcast_between_leading_and_trailing_dims_runs_on_the_backend(tmp_path: Path) -> None:
    torch.manual_seed(0)
    x, c = torch.randn(2, 5, 3, 32), torch.randn(2, 5, 1, 32)
    g, b = torch.randn(2, 1, 32), torch.randn(1, 15, 32)
    path = _check(MiddleBroadcast(), (x, c, g, b), tmp_path)
    m = read_program(str(path))["methods"][0]
    assert not [i for i in m["instructions"] if i["kind"] == "KernelCall"]  # all of it on the backend
    (ops,) = _payload_ops(path)
    assert [k for k, _ in ops].count("Binary") >= 5


class BiasAndScale(nn.Module):
    """Broadcasts over the last dims in the graph's layout: a bias [d] over
    [b, s, d], a [s, d] table, a scalar tensor; and arithmetic with numbers."""

    def __init__(self) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.randn(16))
        self.table = nn.Parameter(torch.randn(5, 16))

    def forward(self, x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        y = torch.tanh((x + self.bias) * self.table) / 3.0 + 1.5
        return torch.nn.functional.gelu(y * s - 2.0)


def test_last_dim_bias_scalar_tensor_and_number_arithmetic_match_eager(tmp_path: Path) -> None:
    torch.manual_seed(0)
    _check(BiasAndScale(), (torch.randn(3, 5, 16), torch.randn(())), tmp_path)


def test_what_the_backend_does_not_take_runs_on_kernels(tmp_path: Path) -> None:
    class Mixed(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = torch.relu(self.conv(x))
            return torch.softmax(y, dim=1).amax(dim=2)  # softmax over a dim not last, amax: kernels

    torch.manual_seed(0)
    path = _check(Mixed(), (torch.randn(1, 3, 6, 6),), tmp_path)
    m = read_program(str(path))["methods"][0]
    kernels = {m["operators"][i["op"]] for i in m["instructions"] if i["kind"] == "KernelCall"}
    assert len(m["delegates"]) == 1 and {"aten::_softmax", "aten::amax"} <= kernels


@pytest.mark.parametrize("isa", ISAS)
def test_each_isa_gives_eager_results(isa: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tern import _runtime  # noqa: F401  (the runtime reads TERN_CPU_ISA when a method loads)

    torch.manual_seed(0)
    _check_on_isa(ResidualBlock().eval(), (torch.randn(1, 16, 9, 9),), isa, tmp_path, monkeypatch)


def load_on_isa(path: Path, isa: str, monkeypatch: pytest.MonkeyPatch, threads: int = 2) -> "tern.runtime.Module":
    """The file loaded with TERN_CPU_ISA=isa, its cpu subgraphs checked to run
    the kernel sets isa names (Module.kernel_sets). Skips the test only where
    the runtime says this CPU lacks isa and /proc/cpuinfo agrees (conftest.py:
    an oracle independent of the runtime); a build without isa's kernels
    ("compiled out"), or any other refusal, fails it."""
    from conftest import cpu_runs_isa, expected_kernel_sets

    monkeypatch.setenv("TERN_CPU_ISA", isa)
    has = cpu_runs_isa(isa)  # None: unknown here (no /proc/cpuinfo)
    try:
        m = tern.load(str(path), threads=threads)
    except ValueError as e:
        if f"TERN_CPU_ISA={isa}: this CPU lacks it" not in str(e):
            raise  # "this build has no ... kernels (compiled out)", or another error
        assert has is not True, f"the runtime says this CPU lacks {isa}; /proc/cpuinfo says it has it: {e}"
        pytest.skip(f"this CPU has no {isa}")
    assert has is not False, f"TERN_CPU_ISA={isa} loaded, but /proc/cpuinfo says this CPU lacks it"
    sets = [k for b, k in zip(m.backends(), m.kernel_sets()) if b == "cpu"]
    assert sets, "the method has no cpu backend subgraph: TERN_CPU_ISA changes nothing in it"
    want = expected_kernel_sets(isa)
    for got in sets:
        assert {key: got.get(key) for key in want} == want, f"TERN_CPU_ISA={isa}: the cpu backend runs {got}"
    return m


def _check_on_isa(model: nn.Module, args: tuple[torch.Tensor, ...], isa: str, tmp_path: Path,
                  monkeypatch: pytest.MonkeyPatch, options: CpuOptions | None = None) -> None:
    """Exports (with `options`), loads with TERN_CPU_ISA=isa (skips if this
    CPU lacks it), compares with eager."""
    path = tmp_path / "m.tern"
    tern.export(model, args, partitioners=[CpuPartitioner(options=options)]).save(path)
    m = load_on_isa(path, isa, monkeypatch)
    with torch.no_grad():
        assert_close(m(*args)[0], model(*args), what=f"TERN_CPU_ISA={isa}")


class InvertedResiduals(nn.Module):
    """MobileNet-style blocks: expand 1x1, depthwise, project 1x1 (+ the
    block's input at stride 1); the last one's depthwise output also feeds a
    squeeze-excite gate, so only expand and depthwise can chain there."""

    def __init__(self) -> None:
        super().__init__()

        def block(c: int, e: int, o: int, k: int, s: int) -> nn.ModuleList:
            return nn.ModuleList([nn.Conv2d(c, e, 1), nn.Conv2d(e, e, k, s, k // 2, groups=e), nn.Conv2d(e, o, 1)])

        self.b1, self.b2, self.b3 = block(8, 24, 8, 3, 1), block(8, 36, 12, 5, 2), block(12, 40, 16, 3, 1)
        self.gate = nn.Conv2d(40, 40, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e, d, p = self.b1
        x = p(nn.functional.relu6(d(nn.functional.relu6(e(x))))) + x
        e, d, p = self.b2
        x = p(nn.functional.hardswish(d(nn.functional.hardswish(e(x)))))
        e, d, p = self.b3
        y = torch.relu(d(torch.relu(e(x))))
        return p(y * torch.sigmoid(self.gate(y.mean((2, 3), keepdim=True))))


def _fuse_next(path: Path) -> list[tuple[str, bool]]:
    """(covered nodes, fuse_next) of each Conv of the only delegate."""
    from tern.backends.cpu.fb.Conv import Conv
    from tern.backends.cpu.fb.OpKind import OpKind
    from tern.backends.cpu.fb.Program import Program

    data = Path(path).read_bytes()
    info = read_program(data)
    (d,) = info["methods"][0]["delegates"]
    seg = info["segments"][d["payload_segment"]]
    payload = data[seg["offset"] : seg["offset"] + seg["size"]]
    prog = Program.GetRootAs(payload[16 : 16 + int.from_bytes(payload[8:16], "little")], 0)
    out = []
    for i in range(prog.OpsLength()):
        op = prog.Ops(i)
        if op.KindType() == OpKind.Conv:
            conv = Conv()
            conv.Init(op.Kind().Bytes, op.Kind().Pos)
            out.append((op.Nodes().decode(), conv.FuseNext()))
    return out


def test_inverted_residual_blocks_run_as_row_chains(tmp_path: Path) -> None:
    """Expand, depthwise and projection convolutions whose outputs only the
    next one reads are marked to run row by row (Conv.fuse_next); the results
    match eager and are the bits the same model gives unchained."""
    torch.manual_seed(0)
    model, x = InvertedResiduals().eval(), torch.randn(2, 8, 15, 13)
    path = _check(model, (x,), tmp_path, options=CpuOptions(row_chain_min_bytes=0))  # the test's tensors are small
    flags = [f for _, f in _fuse_next(path)]
    # b1: expand, depthwise chain into the projection; b2 likewise; b3: expand
    # into the depthwise only (its output also feeds the gate); gate, projection
    assert flags == [True, True, False, True, True, False, True, False, False, False]
    plain = tmp_path / "plain.tern"
    tern.export(model, (x,), partitioners=[CpuPartitioner(options=CpuOptions(row_chains=False))]).save(plain)
    assert not any(f for _, f in _fuse_next(plain))
    for threads in (1, 2):
        np.testing.assert_array_equal(tern.load(str(path), threads=threads)(x)[0],
                                      tern.load(str(plain), threads=threads)(x)[0])


def test_a_row_chain_flag_on_convolutions_that_cannot_chain_fails_to_load(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """fuse_next on a pointwise Conv followed by a full 3x3 Conv (not a
    depthwise one) is refused when the runtime loads the payload, naming the
    op: at export already, which loads the file to check it."""
    from tern.backends.cpu import compile as cpu_compile

    def mark_all(p: Any, options: CpuOptions) -> None:  # a broken row-chain pass
        for op in p.ops:
            if op.kind == "Conv":
                op.fields["fuse_next"] = True

    monkeypatch.setattr(cpu_compile, "mark_row_chains", mark_all)
    model = nn.Sequential(nn.Conv2d(4, 8, 1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1)).eval()
    with pytest.raises(tern.ExportError, match=r"op \d+ \(convolution[^)]*\): fuse_next needs a pointwise Conv"):
        tern.export(model, (torch.randn(1, 4, 6, 6),))


@pytest.mark.parametrize("isa", ISAS)
def test_row_chains_on_each_isa_give_eager_results(isa: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(0)
    _check_on_isa(InvertedResiduals().eval(), (torch.randn(1, 8, 17, 10),), isa, tmp_path, monkeypatch,
                  CpuOptions(row_chain_min_bytes=0))


def test_weights_are_packed_in_the_payload_and_used_in_place(tmp_path: Path) -> None:
    """The payload carries the packed weights (no separate constants), and
    re-export gives the same bytes."""
    torch.manual_seed(0)
    model = ResidualBlock().eval()
    x = torch.randn(1, 16, 8, 8)
    a, b = tern.export(model, (x,)), tern.export(model, (x,))
    assert a.data == b.data and a.constant_bytes == 0
    path = tmp_path / "m.tern"
    a.save(path)
    info = read_program(str(path))
    (seg,) = info["segments"]
    weights = 2 * 16 * (1 + 9 * 16)  # two 3x3 convs, 16 in, one panel of 16 out: bias, then 9 x 16 rows
    assert seg["size"] >= 4 * weights and seg["offset"] % 64 == 0


class Attention(nn.Module):
    """Scaled dot-product attention spelled out: bmm, softmax, permutes,
    layer norm with and without affine parameters."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(32, 96)
        self.ln = nn.LayerNorm(32)
        self.ln_plain = nn.LayerNorm(32, elementwise_affine=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln(x)).reshape(b, s, 3, 4, 8).permute(2, 0, 3, 1, 4).reshape(3, b * 4, s, 8)
        att = torch.softmax(torch.bmm(q, k.transpose(1, 2)) * 8**-0.5, dim=-1)
        y = torch.bmm(att, v).reshape(b, 4, s, 8).permute(0, 2, 1, 3).reshape(b, s, d)
        return self.ln_plain(x + y)


def test_attention_pieces_match_eager(tmp_path: Path) -> None:
    torch.manual_seed(0)
    path = _check(Attention(), (torch.randn(2, 9, 32),), tmp_path)
    kinds = {k for ops in _payload_ops(path) for k, _ in ops}
    assert {"LayerNorm", "Softmax", "MatMul", "Transpose"} <= kinds, kinds


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_encoder_layer_matches_eager(activation: str, tmp_path: Path) -> None:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, batch_first=True, activation=activation)
    path = _check(layer, (torch.randn(2, 7, 32),), tmp_path)
    assert read_program(str(path))["methods"][0]["delegates"]


class Sdpa(nn.Module):
    """F.scaled_dot_product_attention(q, k, v, mask) with fixed keywords; a
    constant mask (a buffer) when given one."""

    def __init__(self, mask: torch.Tensor | None = None, **kw: Any) -> None:
        super().__init__()
        self.kw = kw
        self.register_buffer("mask", mask)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *mask: torch.Tensor) -> torch.Tensor:
        m = mask[0] if mask else self.mask
        return nn.functional.scaled_dot_product_attention(q, k, v, m, **self.kw)


def _qkv(b: tuple[int, ...], l: int, s: int, e: int, ev: int, kv_heads: int | None = None) -> tuple[torch.Tensor, ...]:
    kvb = b[:-1] + (kv_heads,) if kv_heads else b
    return torch.randn(*b, l, e), torch.randn(*kvb, s, e), torch.randn(*kvb, s, ev)


_NO_ROW_2 = torch.ones(9, 21, dtype=torch.bool)
_NO_ROW_2[2] = False  # query 2 sees no key: eager gives zeros
SDPAS = {
    # name: (module, q/k/v, extra inputs); sizes straddle the 8- and 16-row/column tiles
    "plain": (Sdpa(), _qkv((2, 3), 33, 47, 16, 24), ()),
    "one_query_one_key": (Sdpa(), _qkv((1, 2), 1, 1, 8, 8), ()),
    "causal": (Sdpa(is_causal=True), _qkv((1, 3), 40, 40, 64, 64), ()),
    "causal_more_keys": (Sdpa(is_causal=True), _qkv((1, 2), 9, 30, 16, 16), ()),
    "scale_rank3": (Sdpa(scale=0.3), _qkv((3,), 17, 9, 8, 5), ()),
    "grouped_query": (Sdpa(enable_gqa=True), _qkv((1, 8), 20, 20, 16, 16, kv_heads=2), ()),
    "float_mask_input": (Sdpa(), _qkv((2, 4), 33, 47, 16, 24), (torch.randn(33, 47),)),
    "float_mask_per_batch_key": (Sdpa(), _qkv((2, 4), 5, 19, 16, 8), (torch.randn(2, 1, 1, 19),)),
    "bool_mask_const": (Sdpa(mask=_NO_ROW_2), _qkv((1, 2), 9, 21, 16, 16), ()),
}


@pytest.mark.parametrize("name", sorted(SDPAS))
def test_scaled_dot_product_attention_runs_as_one_op(name: str, tmp_path: Path) -> None:
    torch.manual_seed(0)
    model, qkv, extra = SDPAS[name]
    path = _check(model, qkv + extra, tmp_path)
    (ops,) = _payload_ops(path)
    assert [k for k, _ in ops].count("Attention") == 1, ops


def test_transformer_layers_run_attention_as_one_op(tmp_path: Path) -> None:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, batch_first=True)
    path = _check(nn.TransformerEncoder(layer, 2, enable_nested_tensor=False), (torch.randn(2, 19, 64),), tmp_path)
    kinds = [k for ops in _payload_ops(path) for k, _ in ops]
    assert kinds.count("Attention") == 2 and "MatMul" not in kinds, kinds

    class Causal(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.att = nn.MultiheadAttention(48, 6, batch_first=True)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
            return self.att(x, x, x, attn_mask=mask, need_weights=False)[0]

    path = _check(Causal(), (torch.randn(1, 23, 48),), tmp_path)
    assert "Attention" in [k for ops in _payload_ops(path) for k, _ in ops]


@pytest.mark.parametrize("mask_shape", [(6, 10), (2, 1, 1, 10), (2, 3, 6, 10)])
def test_attention_with_a_bool_mask_computed_at_run_time_runs_as_one_op(mask_shape: tuple[int, ...],
                                                                        tmp_path: Path) -> None:
    # A tokenizer's padding mask becomes a bool mask at run time (Hugging Face
    # models): the delegate takes it as a Bool input, false masking the key out.
    class RuntimeMask(nn.Module):
        def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
            return nn.functional.scaled_dot_product_attention(q, k, v, w > 0)

    torch.manual_seed(0)
    w = torch.randn(*mask_shape)
    w[..., -3:] = -1.0  # padding: the last 3 keys masked for every query
    w[..., 0, :] = -1.0  # and query 0 of every head sees no key: eager gives zeros
    path = _check(RuntimeMask(), _qkv((2, 3), 6, 10, 8, 8) + (w,), tmp_path)
    ops = [k for ops in _payload_ops(path) for k, _ in ops]
    assert ops.count("Attention") == 1, ops
    assert "aten::scaled_dot_product_attention" not in read_program(str(path))["methods"][0]["operators"]


@pytest.mark.parametrize("isa", ISAS)
def test_attention_on_each_isa_gives_eager_results(isa: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tern import _runtime  # noqa: F401

    torch.manual_seed(0)
    model, qkv, extra = SDPAS["float_mask_input"]
    _check_on_isa(model, qkv + extra, isa, tmp_path, monkeypatch)


class GroupsAndConcats(nn.Module):
    """A fire module (two convolutions concatenated), grouped convolutions
    (4 groups, and depthwise with a channel multiplier) and concats the
    backend must copy (an input also used elsewhere, a flattened one)."""

    def __init__(self) -> None:
        super().__init__()
        self.squeeze = nn.Conv2d(16, 8, 1)
        self.e1, self.e3 = nn.Conv2d(8, 12, 1), nn.Conv2d(8, 20, 3, padding=1)
        self.grouped = nn.Conv2d(32, 48, 3, padding=1, groups=4)
        self.multiplier = nn.Conv2d(48, 96, 3, groups=48)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        z = torch.relu(self.squeeze(x))
        y = torch.relu(self.grouped(torch.cat([torch.relu(self.e1(z)), torch.relu(self.e3(z))], 1)))
        return self.multiplier(y), torch.cat([x.flatten(1), y.flatten(1)], 1), torch.cat([y, x, y], 1)


def test_grouped_convolutions_and_concats_match_eager(tmp_path: Path) -> None:
    torch.manual_seed(0)
    path = _check(GroupsAndConcats(), (torch.randn(2, 16, 9, 11),), tmp_path)
    (ops,) = _payload_ops(path)
    kinds = [k for k, _ in ops]
    # the fire concat is written in place by its two convolutions; the other two copy
    assert [n for k, n in ops if k == "Concat"] == ["cat_1", "cat_2"], ops
    assert kinds.count("Conv") == 3 + 4 + 48, kinds


class ClassToken(nn.Module):
    """ViT's start: patches, a learned token concatenated in front, positions."""

    def __init__(self) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, 32, 4, stride=4)
        self.token = nn.Parameter(torch.randn(1, 1, 32))
        self.pos = nn.Parameter(torch.randn(1, 17, 32))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = self.patch(x).flatten(2).transpose(1, 2)
        return torch.cat([self.token.expand(x.shape[0], -1, -1), p], dim=1) + self.pos


def test_concat_along_a_plain_axis_matches_eager(tmp_path: Path) -> None:
    torch.manual_seed(0)
    path = _check(ClassToken(), (torch.randn(1, 3, 16, 16),), tmp_path)
    assert len(_payload_ops(path)) == 1 and "Concat" in [k for k, _ in _payload_ops(path)[0]]


class WinogradBlock(nn.Module):
    """3x3 stride-1 convolutions wide enough for Winograd F(2x2, 3x3): with
    and without bias, a residual, relu, an odd output size (edge tiles)."""

    def __init__(self, c: int = 128) -> None:
        super().__init__()
        self.a = nn.Conv2d(c, c, 3, padding=1)
        self.b = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.c = nn.Conv2d(c, 136, 3)  # no padding: 10x11 -> 8x9 (at least 64 pixels, odd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.a(x))
        return torch.sigmoid(self.c(torch.relu(self.b(y) + y)))


class Recurrent(nn.Module):
    """A 2-layer GRU and an LSTM: torch.export unrolls them over the
    sequence, each step a linear layer over one row, split into gates."""

    def __init__(self) -> None:
        super().__init__()
        self.gru = nn.GRU(12, 40, num_layers=2, batch_first=True)
        self.lstm = nn.LSTM(40, 24, batch_first=True)
        self.head = nn.Linear(24, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.lstm(self.gru(x)[0])[0])


def test_recurrent_layers_run_as_one_delegate_with_each_weight_stored_once(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model, steps = Recurrent(), 9
    path = _check(model, (torch.randn(2, steps, 12),), tmp_path)
    m = read_program(str(path))["methods"][0]
    assert len(m["delegates"]) == 1, "the gate splits run in the backend, not between delegates"
    assert not [i for i in m["instructions"] if i["kind"] == "KernelCall"]
    kinds = [k for ops in _payload_ops(path) for k, _ in ops]
    assert kinds.count("Conv") >= 3 * steps  # a recurrent linear per step and layer
    # each recurrent weight packed once, not once per step: the file holds
    # about the parameters (packing pads 40 and 24 outputs to panels of 16)
    params = sum(p.numel() for p in model.parameters())
    assert path.stat().st_size < 4 * 3 * params, (path.stat().st_size, params)


@pytest.mark.parametrize("isa", ISAS)
def test_recurrent_layers_on_each_isa_give_eager_results(isa: str, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(0)
    _check_on_isa(Recurrent().eval(), (torch.randn(1, 7, 12),), isa, tmp_path, monkeypatch)


class _PartlyPortable(nn.Module):
    """A convolution the backend runs, then three nodes it refuses, each for its own reason."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = nn.functional.max_pool2d(self.conv(x), 2, ceil_mode=True)
        return nn.functional.gelu(y, approximate="tanh"), y.to(torch.float64) * 2


def test_the_partitioner_reports_each_refused_node_with_its_reason() -> None:
    cpu = CpuPartitioner()
    tern.export(_PartlyPortable().eval(), (torch.randn(1, 3, 9, 9),), partitioners=[cpu])
    assert sorted(cpu.refused) == [
        ("_to_copy", "aten::_to_copy", "no cpu backend op for it"),
        ("gelu", "aten::gelu", "gelu with the tanh approximation"),
        ("max_pool2d_with_indices", "aten::max_pool2d_with_indices", "a pool with ceil_mode"),
        ("mul_scalar", "aten::mul.Scalar", "the backend runs float32 tensors; this op has float64"),
    ]
    report = cpu.report().splitlines()
    assert report[0] == "cpu backend: left on the portable kernels"
    assert "  aten::max_pool2d_with_indices: a pool with ceil_mode [max_pool2d_with_indices]" in report
    assert not any("convolution" in line for line in report)  # claimed: not listed


def test_every_family_refusal_names_the_failed_condition() -> None:
    """supports(node) of each family: None when claimed, else the condition."""
    from tern.backends.cpu import SUPPORTS
    from tern.backends.cpu.ir import name_of
    from tern.export import lower_to_graph
    from tern.ops import supported_ops

    class Two(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            a = nn.functional.avg_pool2d(x, 3, stride=1, padding=1, divisor_override=2)
            return torch.softmax(a, 1) + x.permute(0, 1, 3, 2)

    gm = lower_to_graph(Two().eval(), (torch.randn(1, 2, 4, 4),), frozenset(supported_ops()))
    why = {n.name: SUPPORTS[name_of(n)](n) for n in gm.graph.nodes if name_of(n) in SUPPORTS}
    assert why == {"avg_pool2d": "an average pool with divisor_override",
                   "_softmax": "a softmax over a dim other than the last",
                   "permute": None, "add": None}, why


class _KeepPrograms(CpuPartitioner):
    """The cpu partitioner, keeping each subgraph's compiled program."""

    def __init__(self, options: CpuOptions | None = None) -> None:
        super().__init__(options)
        self.programs: list[Any] = []
        self.subgraphs: list[Any] = []

    def preprocess(self, subgraph: Any) -> Any:
        from tern.backends.cpu.compile import compile_subgraph

        self.subgraphs.append(subgraph)
        self.programs.append(compile_subgraph(subgraph, self.options))
        return super().preprocess(subgraph)


def test_fusion_passes_record_their_decisions_on_the_ops() -> None:
    """Winograd and the epilogues (both chosen before lowering) name what
    they took in; with Winograd off the same convolutions are
    direct Convs that record the same epilogue."""
    torch.manual_seed(0)
    x = torch.randn(1, 128, 10, 11)
    on, off = _KeepPrograms(), _KeepPrograms(CpuOptions(winograd=False))
    for cpu in (on, off):
        tern.export(WinogradBlock().eval(), (x,), partitioners=[cpu])
    (wino,), (direct,) = on.programs, off.programs
    outputs = [op for op in wino.ops if op.kind == "WinogradOutput"]
    assert [op.decisions for op in outputs] == [
        {"activation": "relu", "winograd": True},
        {"residual": "add", "activation": "relu_1", "winograd": True},
        {"activation": "sigmoid", "winograd": True},
    ]
    convs = [op for op in direct.ops if op.kind == "Conv"]
    assert [op.decisions for op in convs] == [{"activation": "relu"}, {"residual": "add", "activation": "relu_1"},
                                              {"activation": "sigmoid"}]


class _Interleaved(nn.Module):
    """Two residual blocks whose branches torch.export orders differently."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.c, self.d = (nn.Conv2d(8, 8, 1) for _ in range(4))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a0 = self.a(x)
        h = self.b(x)
        y = h + torch.relu(a0)  # relu comes after b, but a takes it in, and a's op runs before b's
        h2 = self.c(x)
        b0 = self.d(x)
        return y, h2 + torch.relu(b0)  # relu(b0) is computed after c's op: c takes nothing in


def test_the_epilogue_pass_records_on_the_head_what_its_op_takes_in(tmp_path: Path) -> None:
    """fusion.choose_epilogues decides before lowering, in the compiler's
    order: a residual only of a value an op before the head's computes."""
    from tern.backends.cpu.ir import EPILOGUE

    torch.manual_seed(0)
    cpu = _KeepPrograms()
    x = torch.randn(1, 8, 5, 6)
    tern.export(_Interleaved().eval(), (x,), partitioners=[cpu])
    (program,) = cpu.programs
    assert [(op.kind, op.nodes, op.decisions) for op in program.ops if op.kind in ("Conv", "Binary")] == [
        ("Conv", "convolution+relu", {"activation": "relu"}),
        ("Conv", "convolution_1+add", {"residual": "add"}),
        ("Conv", "convolution_2", {}),
        ("Conv", "convolution_3+relu_1", {"activation": "relu_1"}),
        ("Binary", "add_1", {}),
    ]
    (subgraph,) = cpu.subgraphs
    b = next(n for n in subgraph.graph.nodes if n.name == "convolution_1")
    assert b.meta[EPILOGUE].residual_value.name == "relu" and b.meta[EPILOGUE].last.name == "add"
    _check(_Interleaved(), (x,), tmp_path)


def test_row_chains_record_head_and_stages() -> None:
    torch.manual_seed(0)
    cpu = _KeepPrograms(CpuOptions(row_chain_min_bytes=0))
    tern.export(InvertedResiduals().eval(), (torch.randn(1, 8, 15, 13),), partitioners=[cpu])
    (program,) = cpu.programs
    chained = [(op.decisions.get("row_chain"), op.fields.get("fuse_next", False)) for op in program.ops
               if op.kind == "Conv"]
    # as in test_inverted_residual_blocks_run_as_row_chains: b1, b2 whole chains, b3 expand + depthwise
    assert chained[:8] == [("head", True), ("stage", True), ("stage", False), ("head", True), ("stage", True),
                           ("stage", False), ("head", True), ("stage", False)]

