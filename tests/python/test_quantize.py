"""Quantization: the quantize/dequantize kernels against PyTorch's own
implementations of the same ops, and tern.quantize's models against
PyTorch's execution of the converted model (the reference the PT2E flow
defines), each through export, save, load and the C++ runtime."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
import torchao.quantization.pt2e  # noqa: F401  (defines the quantized_decomposed and torchao ops)
from torch import nn

import tern
from compare import assert_close, assert_outputs_close
from tern.passes.pack_int4 import pack_int4, unpack_int4

qd = torch.ops.quantized_decomposed
BACKENDS = {"cpu": None, "kernels": ()}


def _run(model: nn.Module, args: tuple[torch.Tensor, ...], tmp_path: Path, partitioners=None, threads: int = 2):
    path = tmp_path / "model.tern"
    tern.export(model, args, partitioners=partitioners).save(path)
    outs = tern.load(str(path), threads=threads)(*args)
    return [torch.as_tensor(np.asarray(o)) for o in outs], path


def _eager(model: nn.Module, args: tuple[torch.Tensor, ...]) -> list[torch.Tensor]:
    with torch.no_grad():
        out = model(*args)
    return [out] if isinstance(out, torch.Tensor) else list(out)


class Fn(nn.Module):
    def __init__(self, fn, **buffers: torch.Tensor) -> None:
        super().__init__()
        self.fn = fn
        for k, v in buffers.items():
            self.register_buffer(k, v)

    def forward(self, *args):
        return self.fn(self, *args)


# ---- the kernels, against eager's quantized_decomposed / torchao ops

QUANT_DTYPES = [(torch.int8, -128, 127), (torch.uint8, 0, 255), (torch.int16, -32768, 32767),
                (torch.int8, -127, 127), (torch.int32, -(2 ** 31), 2 ** 31 - 1)]


@pytest.mark.parametrize("dtype,qmin,qmax", QUANT_DTYPES)
def test_quantize_and_dequantize_per_tensor_match_eager(dtype, qmin, qmax, tmp_path: Path) -> None:
    g = torch.Generator().manual_seed(0)
    scale, zp = 0.0371, (3 if qmin < 0 else 100)
    x = torch.randn(3, 5, 17, generator=g) * 4
    # halfway cases (round half to even) and values far outside the range
    x[0, 0, :6] = torch.tensor([0.5, 1.5, 2.5, -0.5, -2.5, 1e6]) * scale
    model = Fn(lambda self, x: (qd.quantize_per_tensor(x, scale, zp, qmin, qmax, dtype),
                                qd.dequantize_per_tensor(qd.quantize_per_tensor(x, scale, zp, qmin, qmax, dtype),
                                                         scale, zp, qmin, qmax, dtype)))
    got, _ = _run(model, (x,), tmp_path, partitioners=())
    want = _eager(model, (x,))
    assert_outputs_close(got, want, rtol=0.0, atol=0.0)


def test_dequantize_per_tensor_of_an_input_matches_eager(tmp_path: Path) -> None:
    q = torch.randint(0, 256, (4, 33), dtype=torch.uint8, generator=torch.Generator().manual_seed(1))
    model = Fn(lambda self, q: qd.dequantize_per_tensor(q, 0.125, 131, 0, 255, torch.uint8))
    got, _ = _run(model, (q,), tmp_path, partitioners=())
    assert_close(got[0], _eager(model, (q,))[0], rtol=0.0, atol=0.0)


@pytest.mark.parametrize("shape", [(7,), (2, 300), (1, 3, 8, 8)])
def test_dynamic_choose_quantize_dequantize_match_eager(shape, tmp_path: Path) -> None:
    def f(self, x):
        s, zp = qd.choose_qparams.tensor(x, -128, 127, 2 ** -12, torch.int8)
        q = qd.quantize_per_tensor.tensor(x, s, zp, -128, 127, torch.int8)
        return s, zp, q, qd.dequantize_per_tensor.tensor(q, s, zp, -128, 127, torch.int8)

    model = Fn(f)
    for seed, offset in [(2, 0.0), (3, 5.0), (4, -5.0)]:  # ranges across 0, all positive, all negative
        x = torch.randn(*shape, generator=torch.Generator().manual_seed(seed)) + offset
        got, _ = _run(model, (x,), tmp_path, partitioners=())
        assert_outputs_close(got, _eager(model, (x,)), rtol=0.0, atol=0.0)


@pytest.mark.parametrize("overload", ["default", "tensor"])
@pytest.mark.parametrize("dtype,qmin,qmax", QUANT_DTYPES)
def test_quantize_beyond_the_range_matches_eager_where_defined_and_saturates_elsewhere(
        overload, dtype, qmin, qmax, tmp_path: Path) -> None:
    # Eager clamps in float32 and then converts: float(2 ** 31 - 1) is 2 ** 31,
    # which int32 cannot hold, and a NaN converts to no integer; both are
    # undefined in C++ (x86 gives INT32_MIN, aarch64 INT32_MAX and 0). Tern
    # saturates there, NaN -> 0; everywhere else it is eager's result.
    x = torch.tensor([1e10, 3e9, 2147483647.0, 2147483520.0, math.inf, -1e10, -math.inf, -2147483648.0,
                      math.nan, 0.5, 1.5, -2.5, 7.0, 40000.0, -40000.0, 300.0, -300.0])
    if overload == "default":
        model = Fn(lambda self, x: qd.quantize_per_tensor(x, 1.0, 0, qmin, qmax, dtype))
    else:
        model = Fn(lambda self, x, s, zp: qd.quantize_per_tensor.tensor(x, s, zp, qmin, qmax, dtype))
    args = (x,) if overload == "default" else (x, torch.tensor([1.0], dtype=torch.float64), torch.tensor([0]))
    got = _run(model, args, tmp_path, partitioners=())[0][0]
    want = _eager(model, args)[0]
    clamped = x.double().round().clamp(qmin, qmax).float().double()  # eager's float32 clamp, exactly
    defined = ~x.isnan() & (clamped <= torch.iinfo(dtype).max)
    assert got.dtype == dtype
    assert_close(got[defined], want[defined], rtol=0.0, atol=0.0)
    assert got[x.isnan()].tolist() == [0]
    assert (got[~defined & ~x.isnan()] == torch.iinfo(dtype).max).all()
    assert got[0].item() == qmax  # 1e10: quant_max, never a flipped sign


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("with_zp", [True, False])
def test_dequantize_per_channel_matches_eager(axis: int, with_zp: bool, tmp_path: Path) -> None:
    g = torch.Generator().manual_seed(5)
    q = torch.randint(-127, 128, (6, 5, 4), dtype=torch.int8, generator=g)
    c = q.shape[axis]
    scales = torch.rand(c, generator=g) * 0.1 + 0.01
    zps = torch.randint(-3, 4, (c,), generator=g)

    def f(self, x):
        w = qd.dequantize_per_channel(self.q, self.scales, self.zps if with_zp else None, axis, -127, 127, torch.int8)
        return w + x

    model = Fn(f, q=q, scales=scales, zps=zps)
    x = torch.zeros(6, 5, 4)
    got, _ = _run(model, (x,), tmp_path, partitioners=())
    assert_close(got[0], _eager(model, (x,))[0], rtol=0.0, atol=0.0)


@pytest.mark.parametrize("shape,block", [((8, 64), (1, 32)), ((6, 12), (2, 4)), ((3, 4, 6), (1, 2, 3)), ((5, 7), (5, 7))])
def test_dequantize_affine_matches_eager(shape, block, tmp_path: Path) -> None:
    g = torch.Generator().manual_seed(6)
    q = torch.randint(-128, 128, shape, dtype=torch.int8, generator=g)
    blocks = [s // b for s, b in zip(shape, block)]
    scale = torch.rand(blocks, generator=g) + 0.05
    zp = torch.randint(-4, 5, blocks, generator=g).to(torch.int32)

    def f(self, x):
        return torch.ops.torchao.dequantize_affine(self.q, list(block), self.scale, self.zp, torch.int8, -128, 127) + x

    model = Fn(f, q=q, scale=scale, zp=zp)
    x = torch.zeros(shape)
    got, _ = _run(model, (x,), tmp_path, partitioners=())
    assert_close(got[0], _eager(model, (x,))[0], rtol=0.0, atol=0.0)


@pytest.mark.parametrize("qmin,qmax,with_zp", [(-8, 7, False), (-8, 7, True), (0, 15, True)])
def test_int4_weights_are_packed_two_per_byte_and_match_eager(qmin, qmax, with_zp, tmp_path: Path) -> None:
    g = torch.Generator().manual_seed(7)
    n, k, group = 16, 256, 32
    q = torch.randint(qmin, qmax + 1, (n, k), dtype=torch.int8, generator=g)
    scale = torch.rand(n, k // group, generator=g) + 0.01
    zp = torch.randint(qmin, qmax + 1, (n, k // group), generator=g).float()

    def f(self, x):
        w = torch.ops.torchao.dequantize_affine(self.q, [1, group], self.scale, self.zp if with_zp else None,
                                                torch.int8, qmin, qmax)
        return x @ w.t()

    model = Fn(f, q=q, scale=scale, zp=zp)
    x = torch.randn(3, k, generator=g)
    got, path = _run(model, (x,), tmp_path, partitioners=())
    assert_close(got[0], _eager(model, (x,))[0], rtol=1e-5)
    # the n * k weights take n * k / 2 bytes, and the file shows it
    program = tern.export(model, (x,), partitioners=())
    assert "tern::dequantize_affine_int4" in dict(program.op_counts)
    assert program.constant_bytes < n * k  # int8 storage alone would take n * k


def test_pack_int4_round_trips() -> None:
    q = torch.arange(-8, 8, dtype=torch.int8).repeat(3, 2)
    packed = pack_int4(q)
    assert packed.dtype == torch.uint8 and packed.shape == (3, 16)
    assert torch.equal(unpack_int4(packed, True).to(torch.int8), q)
    u = torch.arange(0, 16, dtype=torch.uint8).repeat(2, 1)
    assert torch.equal(unpack_int4(pack_int4(u), False).to(torch.uint8), u)


def test_a_zero_scale_is_refused_at_export_naming_it() -> None:
    model = Fn(lambda self, x: qd.quantize_per_tensor(x, 0.0, 0, -128, 127, torch.int8))
    with pytest.raises(tern.ExportError, match="scale must be positive"):
        tern.export(model, (torch.randn(4),), partitioners=())


def test_a_quant_range_outside_the_dtype_is_refused() -> None:
    model = Fn(lambda self, q: qd.dequantize_per_tensor(q, 0.5, 0, -300, 127, torch.int8))
    with pytest.raises(tern.ExportError, match=r"quant range \[-300, 127\]"):
        tern.export(model, (torch.zeros(4, dtype=torch.int8),), partitioners=())


# ---- tern.quantize, against PyTorch's execution of the converted model


class SmallCnn(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.pw = nn.Conv2d(16, 16, 1)
        self.pool = nn.MaxPool2d(2)
        self.head = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.bn1(self.conv1(x)))
        y = nn.functional.relu6(self.dw(x))
        x = x + self.pw(y)  # a residual add
        x = self.pool(x)
        x = nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.head(x)


class Mlp(nn.Module):
    def __init__(self, vocab: int = 50, d: int = 64, hidden: int = 128) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.fc1 = nn.Linear(d, hidden)
        self.fc2 = nn.Linear(hidden, 24)  # 24: no group of 32 divides it... for fc3's input
        self.fc3 = nn.Linear(24, 5)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(self.emb(ids)).mean(1)))))


def _cnn() -> tuple[nn.Module, tuple[torch.Tensor, ...], list[tuple[torch.Tensor, ...]]]:
    torch.manual_seed(0)
    model = SmallCnn().eval()
    model.bn1.running_mean.uniform_(-0.2, 0.2)
    model.bn1.running_var.uniform_(0.5, 2.0)
    calibration = [(torch.randn(2, 3, 16, 16),) for _ in range(4)]
    return model, (torch.randn(2, 3, 16, 16),), calibration


def _mlp() -> tuple[nn.Module, tuple[torch.Tensor, ...], list[tuple[torch.Tensor, ...]]]:
    torch.manual_seed(0)
    ids = lambda: (torch.randint(0, 50, (3, 7)),)  # noqa: E731
    return Mlp().eval(), ids(), [ids() for _ in range(3)]


def _last_quantize_scale(qmodel: torch.fx.GraphModule) -> float | None:
    """The scale of the quantize op nearest the output (the output's quantization step)."""
    scale = None
    for node in qmodel.graph.nodes:
        if node.op == "call_function" and node.target in (qd.quantize_per_tensor.default,):
            scale = float(node.args[1])
    return scale


@pytest.mark.parametrize("backend", sorted(BACKENDS))
@pytest.mark.parametrize("scheme,make", [("int8", _cnn), ("int8-dynamic", _mlp), ("int8-weight", _mlp),
                                         ("int4-weight", _mlp)])
def test_quantized_models_match_pytorchs_converted_model_within_one_step(scheme, make, backend, tmp_path: Path) -> None:
    model, args, calibration = make()
    qmodel = tern.quantize(model, args, calibration=calibration, scheme=scheme, progress=False)
    got, _ = _run(qmodel, args, tmp_path, partitioners=BACKENDS[backend])
    want = _eager(qmodel, args)[0]
    step = _last_quantize_scale(qmodel)
    if step is not None:  # the output is quantized: one step of it
        assert_close(got[0], want, rtol=0.0, atol=step * 1.0001, what=f"output (one quantization step {step})")
    else:  # float output of quantized weights: float rounding only
        assert_close(got[0], want)
    report = qmodel.meta["tern_quantization"]
    assert report.scheme == scheme and sum(report.quantized.values()) > 0


def test_the_report_measures_the_quantized_model_against_the_float_one() -> None:
    model, args, calibration = _cnn()
    qmodel = tern.quantize(model, args, calibration=calibration, scheme="int8", progress=False)
    report = qmodel.meta["tern_quantization"]
    with torch.no_grad():
        ref = torch.cat([model(*b) for b in calibration]).double()
        out = torch.cat([qmodel(*b) for b in calibration]).double()
    snr = 10 * math.log10(float((ref ** 2).sum()) / float(((ref - out) ** 2).sum()))
    assert_close(report.snr_db, snr, rtol=1e-6, atol=0.0, what="snr_db")
    agree = float((ref.argmax(-1) == out.argmax(-1)).double().mean())
    assert_close(report.top1_agreement, agree, rtol=1e-6, atol=0.0, what="top1_agreement")
    assert report.batches == len(calibration)
    assert report.quantized == {"add": 1, "conv": 3, "linear": 1, "pool": 2}
    assert 20 < report.snr_db < 80  # quantized, so not equal; but close


def test_int4_weight_leaves_layers_that_groups_do_not_divide_in_float_and_says_so(tmp_path: Path) -> None:
    model, args, calibration = _mlp()
    qmodel = tern.quantize(model, args, calibration=calibration, scheme="int4-weight", progress=False)
    report = qmodel.meta["tern_quantization"]
    assert report.quantized == {"embedding": 1, "linear": 2}
    assert len(report.skipped) == 1 and "fc3" in report.skipped[0] and "group_size 32" in report.skipped[0]
    got, _ = _run(qmodel, args, tmp_path)  # a file with float and quantized layers
    assert_close(got[0], _eager(qmodel, args)[0], rtol=1e-5)


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_files_shrink_about_4x_for_int8_and_more_for_int4(backend: str, tmp_path: Path) -> None:
    # on the cpu backend too: its payload keeps the integers (a weights value
    # and its views share their bytes in the payload's blob)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 512)).eval()
    x = torch.randn(2, 512)
    sizes = {}
    for scheme in ("fp32", "int8-weight", "int4-weight"):
        m = model if scheme == "fp32" else tern.quantize(model, (x,), scheme=scheme, group_size=128, progress=False)
        path = tmp_path / f"{scheme}.tern"
        tern.export(m, (x,), partitioners=BACKENDS[backend]).save(path)
        sizes[scheme] = path.stat().st_size
    assert sizes["fp32"] / sizes["int8-weight"] > 3.8
    assert sizes["fp32"] / sizes["int4-weight"] > 7.0


def test_progress_bar_and_report_are_shown(capsys: pytest.CaptureFixture[str]) -> None:
    model, args, calibration = _cnn()
    tern.quantize(model, args, calibration=calibration, scheme="int8")
    err = capsys.readouterr().err
    assert "calibrating" in err and "output SNR" in err and "top-1 agreement" in err


def test_the_quantizer_drives_prepare_and_convert_directly(tmp_path: Path) -> None:
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    model, args, calibration = _cnn()
    prepared = prepare_pt2e(torch.export.export(model, args).module(), tern.TernQuantizer("int8"))
    for batch in calibration:
        prepared(*batch)
    qmodel = convert_pt2e(prepared)
    got, _ = _run(qmodel, args, tmp_path)
    step = _last_quantize_scale(qmodel)
    assert_close(got[0], _eager(qmodel, args)[0], rtol=0.0, atol=step * 1.0001,
                 what=f"output (one quantization step {step})")


def test_bad_arguments_are_refused_naming_what_was_expected() -> None:
    model, args, calibration = _cnn()
    with pytest.raises(ValueError, match="unknown scheme 'int3'.*int8, int8-dynamic, int8-weight, int4-weight"):
        tern.quantize(model, args, calibration=calibration, scheme="int3")
    with pytest.raises(ValueError, match="group_size 48 is not one of"):
        tern.quantize(model, args, scheme="int4-weight", group_size=48)
    with pytest.raises(ValueError, match="calibration"):
        tern.quantize(model, args, scheme="int8")


def test_int4_packs_when_a_float_model_was_exported_first_in_the_process() -> None:
    # torchao registers its ops when tern.quantize first imports it; an export
    # before that must not make later ones decompose dequantize_affine.
    import subprocess
    import sys

    code = (
        "import torch, tern\n"
        "m = torch.nn.Linear(64, 8).eval(); x = torch.randn(2, 64)\n"
        "tern.export(m, (x,), partitioners=())\n"
        "q = tern.quantize(m, (x,), scheme='int4-weight', progress=False)\n"
        "print(dict(tern.export(q, (x,), partitioners=()).op_counts))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "tern::dequantize_affine_int4" in out.stdout


# ---- the cpu backend's integer kernels


def _payload_kinds(path: Path) -> list[str]:
    from test_cpu_backend import _payload_ops

    return [kind for ops in _payload_ops(path) for kind, _ in ops]


# The int8 kernel sets TERN_CPU_ISA picks (avx512: VNNI; amx: AMX tiles for the
# deep GEMMs, VNNI for the rest); a test skips the ones this CPU lacks.
QISAS = ["scalar", "avx2", "avx512", "amx"]


def _assert_within_one_step(got: torch.Tensor, want: torch.Tensor, step: float) -> None:
    """Every output within one quantization step of PyTorch's, and at most 1%
    of them more than half a step off (rounding of a halfway value). The one
    comparison outside compare.py (test_compare.py's allowlist feeds it NaN and inf)."""
    assert_close(got, want, rtol=0.0, atol=step * 1.0001, what=f"output (one quantization step {step})")
    off = (got.double() - want.double()).abs() > step / 2  # NaN and inf were refused just above
    assert int(off.sum()) * 100 <= off.numel(), "more than 1% of outputs a step off"


class QuantLayers(nn.Module):
    """Every kind of QConv: general (stride 2, padding, relu), depthwise (relu6),
    pointwise, dilated, and a linear layer over a 3-d input (a reshape before it;
    over a non-contiguous one, torch decomposes linear into bmm, which stays
    float); and a QBinary add (+ relu) and mul."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 24, 3, stride=2, padding=1)
        self.dw = nn.Conv2d(24, 24, 3, padding=1, groups=24)
        self.pw = nn.Conv2d(24, 40, 1)
        self.pw2 = nn.Conv2d(40, 40, 1)
        self.gate = nn.Conv2d(40, 40, 1)
        self.dil = nn.Conv2d(40, 17, 3, padding=2, dilation=2)
        self.fc = nn.Linear(17, 33)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.stem(x))
        x = self.pw(nn.functional.relu6(self.dw(x)))
        x = torch.relu(x + self.pw2(x))
        x = x * self.gate(x)
        x = self.dil(x)
        return self.fc(x.flatten(2).transpose(1, 2).contiguous())


@pytest.mark.parametrize("isa", QISAS)
def test_the_cpu_backend_runs_quantized_convolutions_and_linear_layers_on_integers(
        isa: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(0)
    model = QuantLayers().eval()
    calibration = [(torch.randn(2, 3, 18, 18),) for _ in range(3)]
    args = (torch.randn(2, 3, 18, 18),)
    qmodel = tern.quantize(model, args, calibration=calibration, scheme="int8", progress=False)
    path = tmp_path / "q.tern"
    program = tern.export(qmodel, args)
    program.save(path)
    assert [op for op, _ in program.op_counts if op != "backend:cpu"] == []  # all of it in the backend
    kinds = _payload_kinds(path)
    assert kinds.count("QConv") == 7 and kinds.count("QBinary") == 2 and "Conv" not in kinds, kinds
    from test_cpu_backend import load_on_isa

    got = torch.as_tensor(load_on_isa(path, isa, monkeypatch)(*args)[0])
    want = _eager(qmodel, args)[0]
    _assert_within_one_step(got, want, _last_quantize_scale(qmodel))
    for threads in (1, 3):  # the same bytes whatever the thread count
        np.testing.assert_array_equal(tern.load(str(path), threads=threads)(*args)[0], got.numpy())


class PoolLayers(nn.Module):
    """Every kind of QPool: a max pool with padding (its padding taps read the
    window's own), average pools with padding counted and not, and a mean over
    the image, kept 4-d (adaptive pool, then flatten) or not."""

    def __init__(self, head: str) -> None:
        super().__init__()
        self.head = head
        self.stem = nn.Conv2d(3, 24, 3, padding=1)
        self.mid = nn.Conv2d(24, 19, 3, padding=1)
        self.fc = nn.Linear(19, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.max_pool2d(torch.relu(self.stem(x)), 3, 2, 1)
        x = nn.functional.avg_pool2d(x, 3, 1, 1, count_include_pad=False)
        x = nn.functional.avg_pool2d(self.mid(x), 2, 2, 1, count_include_pad=True)
        if self.head == "mean":
            return self.fc(x.mean((2, 3)))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


@pytest.mark.parametrize("isa", QISAS)
@pytest.mark.parametrize("head", ["mean", "adaptive"])
def test_the_cpu_backend_pools_on_integers(head: str, isa: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from test_cpu_backend import load_on_isa

    torch.manual_seed(0)
    model = PoolLayers(head).eval()
    calibration = [(torch.randn(2, 3, 21, 17),) for _ in range(3)]
    args = (torch.randn(2, 3, 21, 17),)
    qmodel = tern.quantize(model, args, calibration=calibration, scheme="int8", progress=False)
    path = tmp_path / "q.tern"
    tern.export(qmodel, args).save(path)
    kinds = _payload_kinds(path)
    assert kinds.count("QPool") == 4 and "Pool" not in kinds, kinds
    got = torch.as_tensor(load_on_isa(path, isa, monkeypatch)(*args)[0])
    want = _eager(qmodel, args)[0]
    _assert_within_one_step(got, want, _last_quantize_scale(qmodel))


class DynamicLayers(nn.Module):
    """Two linear layers reading one input (one DynamicQuantize for both), a
    3-d input (reshapes around each), and one after a float op."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.c = nn.Linear(64, 300), nn.Linear(64, 300), nn.Linear(300, 33, bias=False)  # c: deep

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c(torch.relu(self.a(x) + self.b(x)))


@pytest.mark.parametrize("isa", QISAS)
def test_the_cpu_backend_runs_dynamically_quantized_linear_layers_on_integers(
        isa: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from test_cpu_backend import load_on_isa

    torch.manual_seed(0)
    model = DynamicLayers().eval()
    args = (torch.randn(2, 7, 64) * 3,)
    qmodel = tern.quantize(model, args, scheme="int8-dynamic", progress=False)
    path = tmp_path / "q.tern"
    program = tern.export(qmodel, args)
    program.save(path)
    assert [op for op, _ in program.op_counts if op != "backend:cpu"] == []
    kinds = _payload_kinds(path)
    assert kinds.count("DynamicQuantize") == 2 and kinds.count("QLinear") == 3, kinds
    got = load_on_isa(path, isa, monkeypatch)(*args)[0]
    want = _eager(qmodel, args)[0].numpy()
    # integer products summed exactly, then scaled: float rounding only
    assert_close(got, want, rtol=1e-5)
    for threads in (1, 3):
        np.testing.assert_array_equal(tern.load(str(path), threads=threads)(*args)[0], got)


@pytest.mark.parametrize("scheme", ["int8-weight", "int4-weight"])
def test_weight_only_linear_layers_run_in_the_cpu_backend_and_embeddings_gather_before_dequantizing(
        scheme: str, tmp_path: Path) -> None:
    model, args, calibration = _mlp()
    qmodel = tern.quantize(model, args, calibration=calibration, scheme=scheme, progress=False)
    path = tmp_path / "w.tern"
    program = tern.export(qmodel, args)
    program.save(path)
    kinds = _payload_kinds(path)
    # fc1, fc2 and, in int8, fc3 quantized: each a WLinear (dequantized at load); in int4,
    # fc3's 24 inputs are no multiple of the group: a float linear layer (Conv)
    expected = (3, 0) if scheme == "int8-weight" else (2, 1)
    assert (kinds.count("WLinear"), kinds.count("Conv")) == expected, kinds
    ops = dict(program.op_counts)
    # the embedding gathers the quantized rows and their scales, then dequantizes 3 x 7 rows, not 50
    assert ops["aten::embedding"] == 2
    got = tern.load(str(path))(*args)[0]
    assert_close(got, _eager(qmodel, args)[0], rtol=1e-5)


def test_an_int4_embedding_of_one_group_per_row_is_gathered_too(tmp_path: Path) -> None:
    # rows of exactly group_size: torchao keeps one scale per row, in a shape of its own
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(16, 32), nn.Flatten(), nn.Linear(5 * 32, 8)).eval()
    ids = (torch.randint(0, 16, (1, 5)),)
    qmodel = tern.quantize(model, ids, scheme="int4-weight", progress=False)
    program = tern.export(qmodel, ids)
    assert dict(program.op_counts)["aten::embedding"] == 2
    path = tmp_path / "e.tern"
    program.save(path)
    assert_close(tern.load(str(path))(*ids)[0], _eager(qmodel, ids)[0], rtol=1e-5)


@pytest.mark.parametrize("scheme", ["int8-weight", "int4-weight"])
def test_an_embedding_bag_of_a_dynamic_number_of_ids_is_gathered_too(scheme: str, tmp_path: Path) -> None:
    # 1-d ids of a torch.export.Dim length (the langid app's bag of rows): no
    # view of the ids is needed, and the export used to fail on the symbolic size
    torch.manual_seed(0)

    class Bag(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(40, 32)

        def forward(self, ids: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
            return w @ self.emb(ids)

    n = torch.export.Dim("n", min=1, max=64)
    dynamic = {"ids": {0: n}, "w": {0: n}}
    args = (torch.randint(0, 40, (7,)), torch.rand(7))
    qmodel = tern.quantize(Bag().eval(), args, scheme=scheme, dynamic_shapes=dynamic, progress=False)
    program = tern.export(qmodel, args, dynamic_shapes=dynamic)
    ops = dict(program.op_counts)
    assert ops["aten::embedding"] == 2 and "aten::view" not in ops, ops  # rows and scales gathered, 1-d ids as they are
    path = tmp_path / "bag.tern"
    program.save(path)
    m = tern.load(str(path))
    for size in (1, 7, 64):
        x = (torch.randint(0, 40, (size,)), torch.rand(size))
        assert_close(m(*x)[0], _eager(qmodel, x)[0], rtol=1e-5)


def test_int8_zero_pad_shares_input_params_and_folds_into_conv(tmp_path: Path) -> None:
    # EfficientNet-Lite's "same" padding: ReLU6, a zero pad, a depthwise conv. The pad keeps its
    # input's quantization parameters, so it folds into the conv (passes/fold_pad_into_conv.py)
    # and the graph is not cut there (the scene app, issue 25).
    class SamePad(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.first, self.pad = nn.Conv2d(3, 8, 1), nn.ZeroPad2d(2)
            self.dw = nn.Conv2d(8, 8, 5, groups=8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.dw(self.pad(nn.functional.relu6(self.first(x))))

    torch.manual_seed(0)
    model, xs = SamePad().eval(), [torch.randn(1, 3, 12, 12) for _ in range(4)]
    qmodel = tern.quantize(model, (xs[0],), calibration=[(x,) for x in xs], progress=False)
    from tern.inspect import read_program

    program = tern.export(qmodel, (xs[0],))
    assert "aten::constant_pad_nd" not in read_program(program.data)["methods"][0]["operators"]
    program.save(tmp_path / "samepad.tern")
    got = torch.from_numpy(tern.load(str(tmp_path / "samepad.tern"))(xs[1].numpy())[0])
    want = qmodel(xs[1])
    step = float(want.abs().max()) / 127  # about one step of the output's int8 grid
    assert_close(got, want, rtol=0, atol=step)
