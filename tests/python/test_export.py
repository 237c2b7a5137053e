"""Tests of the exporter (python/tern/): export, passes, memory plan, file layout.

Run: cd /work/main && PYTHONPATH=python .venv/bin/python -m pytest tests/python/test_export.py -q
"""
from __future__ import annotations

import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any, Callable

import pytest
import torch
import torchvision
from torch import nn

import tern
from tern.export import lower_to_graph
from tern.graph import to_graph_module
from tern.inspect import read_program
from tern.memory_plan import Interval, PlanError, check_plan, lifetimes, lower_bound, plan
from tern.ops import op_name, parse_ops_def, supported_ops
from tern.passes import conv1d_as_conv2d, eliminate_dead_code, fold_batch_norm, fold_pad_into_conv, remove_noops

from compare import assert_close, assert_outputs_close

REPO = Path(__file__).resolve().parents[2]


# models


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.conv2, self.bn2 = nn.Conv2d(8, 8, 3, padding=1, bias=False, groups=2), nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        y = torch.relu(self.bn2(self.conv2(y)))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(y, 1), 1))


def _randomize_batch_norm(model: nn.Module) -> nn.Module:
    """Non-trivial running stats and affine parameters, so folding is really tested."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            with torch.no_grad():
                m.running_mean.uniform_(-1, 1)
                m.running_var.uniform_(0.5, 2)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
    return model


def _make(name: str) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    builders: dict[str, Callable[[], tuple[nn.Module, tuple[torch.Tensor, ...]]]] = {
        "mlp": lambda: (MLP(), (torch.randn(2, 16),)),
        "cnn": lambda: (_randomize_batch_norm(SmallCNN()), (torch.randn(1, 3, 16, 16),)),
        "transformer_layer": lambda: (
            nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, batch_first=True),
            (torch.randn(2, 5, 32),),
        ),
        "mobilenet_v2": lambda: (torchvision.models.mobilenet_v2(), (torch.randn(1, 3, 224, 224),)),
        "resnet18": lambda: (torchvision.models.resnet18(), (torch.randn(1, 3, 224, 224),)),
    }
    model, args = builders[name]()
    return model.eval(), args


MODELS = ["mlp", "cnn", "transformer_layer", "mobilenet_v2", "resnet18"]
_cache: dict[str, tuple[nn.Module, tuple[torch.Tensor, ...], tern.Program]] = {}


def _exported(name: str) -> tuple[nn.Module, tuple[torch.Tensor, ...], tern.Program]:
    if name not in _cache:
        model, args = _make(name)
        _cache[name] = (model, args, tern.export(model, args, partitioners=()))
    return _cache[name]


# export of real models


@pytest.mark.parametrize("name", MODELS)
def test_export_model_succeeds_with_matching_specs(name: str) -> None:
    model, args, program = _exported(name)
    expected = model(*args)
    assert program.to_bytes()[:4] == b"TERN"
    assert [s.shape for s in program.input_specs] == [tuple(a.shape) for a in args]
    assert [s.dtype for s in program.input_specs] == ["float32"] * len(args)
    assert [s.shape for s in program.output_specs] == [tuple(expected.shape)]
    assert program.num_instructions > 0 and "planned memory" in program.summary()


@pytest.mark.parametrize("name", MODELS)
def test_export_twice_gives_identical_bytes(name: str) -> None:
    _, _, first = _exported(name)
    model, args = _make(name)
    assert tern.export(model, args, partitioners=()).to_bytes() == first.to_bytes()


@pytest.mark.parametrize("name", MODELS)
def test_passes_keep_graph_outputs_equal_to_eager(name: str) -> None:
    model, args = _make(name)
    gm = lower_to_graph(model, args, supported_ops())
    assert_close(gm(*args)[0], model(*args), rtol=1e-5)


@pytest.mark.parametrize("name", MODELS)
def test_read_program_round_trips(name: str, tmp_path: Path) -> None:
    _, _, program = _exported(name)
    path = tmp_path / "model.tern"
    program.save(path)
    info = read_program(path)
    assert info == read_program(program.to_bytes())
    data = program.to_bytes()
    h = info["header"]
    assert (h["magic"], h["header_size"], h["version_major"], h["version_minor"]) == (b"TERN", 64, 1, 1)
    assert h["file_size"] == len(data) and h["flatbuffer_offset"] == 64 and h["reserved"] == 0
    fb = data[h["flatbuffer_offset"] : h["flatbuffer_offset"] + h["flatbuffer_size"]]
    assert h["flatbuffer_crc32"] == zlib.crc32(fb)
    assert h["segment_table_offset"] % 8 == 0
    assert all(s["offset"] % 64 == 0 and s["offset"] + s["size"] <= len(data) for s in info["segments"])
    assert info["producer"] == f"tern {tern.__version__} / torch {torch.__version__}"
    (method,) = info["methods"]
    assert method["name"] == "forward"
    assert len(method["values"]) == program.num_values
    assert len(method["instructions"]) == program.num_instructions == len(method["debug"])
    assert method["arena_sizes"] == [program.planned_bytes]
    for v, spec in zip(method["inputs"] + method["outputs"], program.input_specs + program.output_specs):
        assert method["values"][v]["kind"] == "Tensor" and tuple(method["values"][v]["sizes"]) == spec.shape
    ops = sorted({op for op, _ in program.op_counts})
    assert sorted(method["operators"]) == ops


@pytest.mark.parametrize("name", MODELS)
def test_file_values_are_in_range_and_constants_inside_segments(name: str) -> None:
    _, _, program = _exported(name)
    (method,) = read_program(program.to_bytes())["methods"]
    segments = read_program(program.to_bytes())["segments"]
    n = len(method["values"])
    for ins in method["instructions"]:
        assert ins["kind"] == "KernelCall" and ins["op"] < len(method["operators"])
        assert all(a < n for a in ins["args"])
    for v in method["values"]:
        if v["kind"] == "Tensor" and v["storage"] == "Constant":
            nbytes = _numel(v["sizes"]) * _ELEMENT_SIZE[v["scalar_type"]]
            assert v["offset"] % 64 == 0 and v["offset"] + nbytes <= segments[v["segment"]]["size"]


# memory plan


_ELEMENT_SIZE = {0: 4, 1: 8, 2: 2, 3: 2, 4: 1, 5: 1, 6: 2, 7: 4, 8: 8, 9: 1}


def _numel(sizes: list[int]) -> int:
    n = 1
    for s in sizes:
        n *= s
    return n


def _plan_from_file(method: dict[str, Any]) -> tuple[list[Interval], dict[int, int]]:
    """Lifetimes and offsets of the planned tensors, recomputed from the file alone."""
    values = method["values"]
    planned = {
        i: _numel(v["sizes"]) * _ELEMENT_SIZE[v["scalar_type"]]
        for i, v in enumerate(values)
        if v["kind"] == "Tensor" and v["storage"] == "Planned"
    }

    def tensors(a: int) -> list[int]:
        if values[a]["kind"] == "Tensor":
            return [a]
        if values[a]["kind"] in ("TensorList", "OptionalTensorList"):
            return [j for j in values[a]["items"] if j >= 0]
        return []

    def args(ins: dict[str, Any]) -> list[int]:
        if ins["kind"] == "BackendCall":
            d = method["delegates"][ins["delegate"]]
            return d["inputs"] + d["outputs"]
        if ins["kind"] == "Move":
            return [ins["from"], ins["to"]]
        return ins.get("args", [])

    steps = [[t for a in args(ins) for t in tensors(a)] for ins in method["instructions"]]
    offsets = {i: values[i]["offset"] for i in planned}
    # Views (tern.aliasing): planned tensors that no instruction writes. Each
    # lies inside the bytes of the last tensor written there before the view
    # is first read; that tensor stays live while the view is read (so
    # check_plan fails if anything overwrites it in between).
    written = set(method["inputs"])
    for ins in method["instructions"]:
        if ins["kind"] == "KernelCall":
            name, _, overload = method["operators"][ins["op"]].partition(".")
            returns = len(getattr(getattr(torch.ops.aten, name.split("::")[1]), overload or "default")._schema.returns)
            written.update(t for a in ins["args"][-returns:] for t in tensors(a))
        elif ins["kind"] == "Move":
            written.add(ins["to"])
        elif ins["kind"] == "BackendCall":
            written.update(method["delegates"][ins["delegate"]]["outputs"])
    views = [v for v in planned if v not in written]
    base = lifetimes({v: n for v, n in planned.items() if v not in views}, steps, method["inputs"], method["outputs"])
    root: dict[int, int] = {}
    for v in views:
        first = next((i for i, step in enumerate(steps) if v in step), len(steps) - 1)  # or an output only
        inside = [it for it in base if it.start <= first and
                  offsets[it.value] <= offsets[v] and offsets[v] + planned[v] <= offsets[it.value] + it.nbytes]
        assert inside, f"view value {v} lies inside no tensor written before step {first}"
        root[v] = max(inside, key=lambda it: it.start).value
    steps = [[root.get(t, t) for t in step] for step in steps]
    outputs = [root.get(t, t) for t in method["outputs"]]
    planned = {v: n for v, n in planned.items() if v not in root}
    intervals = lifetimes(planned, steps, method["inputs"], outputs)
    return intervals, offsets


@pytest.mark.parametrize("name", MODELS)
def test_memory_plan_of_exported_model_passes_check(name: str) -> None:
    _, _, program = _exported(name)
    mem = program.memory_plan
    check_plan(mem.intervals, mem.offsets, mem.planned_bytes)
    (method,) = read_program(program.to_bytes())["methods"]
    intervals, offsets = _plan_from_file(method)
    check_plan(intervals, offsets, method["arena_sizes"][0])
    assert program.planned_bytes >= program.lower_bound_bytes == lower_bound(intervals) > 0


def test_check_plan_overlapping_live_tensors_raises() -> None:
    a, b = Interval(0, 100, 0, 2), Interval(1, 100, 1, 3)
    with pytest.raises(PlanError, match="share memory"):
        check_plan([a, b], {0: 0, 1: 64}, 256)


def test_check_plan_misaligned_or_outside_arena_raises() -> None:
    with pytest.raises(PlanError, match=r"value 0 at \[32, 42\) is misaligned or outside the 128-byte arena"):
        check_plan([Interval(0, 10, 0, 0)], {0: 32}, 128)
    with pytest.raises(PlanError, match=r"value 0 at \[64, 164\) is misaligned or outside the 128-byte arena"):
        check_plan([Interval(0, 100, 0, 0)], {0: 64}, 128)


def test_check_plan_disjoint_lifetimes_may_share_memory() -> None:
    check_plan([Interval(0, 100, 0, 1), Interval(1, 100, 2, 3)], {0: 0, 1: 0}, 128)


def test_plan_reuses_memory_and_reports_lower_bound() -> None:
    # x(0) -> a(1) -> b(2) -> out(3): a chain needs two live tensors at a time.
    sizes = {0: 1000, 1: 1000, 2: 1000, 3: 10}
    intervals = lifetimes(sizes, [[0, 1], [1, 2], [2, 3]], inputs=[0], outputs=[3])
    assert [(i.start, i.end) for i in intervals] == [(0, 0), (0, 1), (1, 2), (2, 2)]
    mem = plan(intervals)
    check_plan(mem.intervals, mem.offsets, mem.planned_bytes)
    assert mem.lower_bound_bytes == 1024 + 1024
    assert mem.planned_bytes == 2048 and all(o % 64 == 0 for o in mem.offsets.values())


def test_lifetimes_of_tensors_read_inside_a_loop_extend_to_its_end() -> None:
    # steps: 0 writes a, 1-3 a loop (3 jumps back to 1) that reads a at 1 and
    # uses b (written and read inside it) at 2, and c written at 0 read at 5.
    sizes = {0: 64, 1: 64, 2: 64, 3: 64}
    steps = [[0, 2], [0, 1], [1], [3], [], [2]]
    flat = {i.value: (i.start, i.end) for i in lifetimes(sizes, steps, inputs=[], outputs=[])}
    assert flat[0] == (0, 1)
    looped = {i.value: (i.start, i.end) for i in lifetimes(sizes, steps, inputs=[], outputs=[], loops=[(1, 3)])}
    assert looped[0] == (0, 3), "read again by the next iteration"
    assert looped[1] == (1, 2), "lives inside one iteration"
    assert looped[2] == (0, 5) and looped[3] == (3, 3)
    # nested: extending into the inner loop's end reaches into the outer one
    nested = {i.value: (i.start, i.end)
              for i in lifetimes({0: 64}, [[0], [], [0], [], [], []], [], [], loops=[(1, 4), (2, 3)])}
    assert nested[0] == (0, 4)


def test_lifetimes_zero_byte_tensors_are_not_planned() -> None:
    assert lifetimes({0: 0, 1: 8}, [[0, 1]], inputs=[0], outputs=[1]) == [Interval(1, 8, 0, 0)]


# errors


class UsesUnsupportedOps(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.kthvalue(x, 2, dim=-1).values  # line checked by the test below
        return torch.special.erfinv(y.clamp(-0.5, 0.5))


def _line_of(marker: str) -> int:
    return next(i for i, text in enumerate(Path(__file__).read_text().splitlines(), 1) if marker in text)


def test_unsupported_ops_raise_one_export_error_naming_ops_and_lines() -> None:
    with pytest.raises(tern.ExportError, match=r"^2 operator\(s\) have no kernel in the Tern runtime:\n"
                                               r"  aten::kthvalue \(aten.kthvalue.default\), used by:") as err:
        tern.export(UsesUnsupportedOps(), (torch.randn(3, 4),))
    msg = str(err.value)
    assert "aten::kthvalue" in msg and "aten::erfinv" in msg
    assert "test_export.py" in msg and f"line {_line_of('# line checked by the test below')}" in msg
    assert "torch.kthvalue(x, 2, dim=-1)" in msg


def test_export_with_custom_supported_ops_rejects_missing_op() -> None:
    with pytest.raises(tern.ExportError, match="aten::relu"):
        tern.export(MLP().eval(), (torch.randn(2, 16),), supported_ops={"aten::addmm", "aten::permute"}, partitioners=())


def test_dynamic_shapes_without_an_upper_bound_raise_export_error() -> None:
    # Bounded dims export (tests/python/test_dynamic_shapes.py); the plan needs a max.
    dims = {"x": {0: torch.export.Dim("batch")}}
    with pytest.raises(tern.ExportError, match="dynamic dim batch has no upper bound"):
        tern.export(MLP(), (torch.randn(2, 16),), dynamic_shapes=dims)


def test_tensor_with_more_than_8_dims_raises_export_error() -> None:
    # The runtime rejects such a file at load (kMaxDims, runtime/core/tensor.h);
    # the exporter must say so first, not leave a surprise for the device.
    with pytest.raises(tern.ExportError, match="9 dimensions, at most 8"):
        tern.export(nn.ReLU(), (torch.randn([1] * 9),))


class AttentionDropout(nn.Module):
    def forward(self, q: torch.Tensor) -> torch.Tensor:
        return nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=0.5)  # refused: the line the error names


def test_a_model_the_runtime_would_refuse_fails_at_export_with_its_reason_and_line() -> None:
    """The attention kernel takes no dropout (random, for training): export
    loads the file in the runtime and reports the kernel's own reason, the op
    and the user's line (kept across run_decompositions, which drops it for the
    ops it keeps whole), instead of a file that fails on the device."""
    with pytest.raises(tern.ExportError, match=r"^the Tern runtime would refuse to load this model: "
                                               r"aten::scaled_dot_product_attention "
                                               r"\(node scaled_dot_product_attention\): "
                                               r"portable: dropout_p=0.5 is not supported") as err:
        tern.export(AttentionDropout().eval(), (torch.randn(1, 2, 4, 8),), partitioners=())
    msg = str(err.value)
    assert "aten::scaled_dot_product_attention" in msg and "dropout_p=0.5 is not supported" in msg
    assert "test_export.py" in msg and f"line {_line_of('# refused: the line the error names')}" in msg


def test_a_dtype_no_kernel_takes_fails_at_export_naming_it() -> None:
    with pytest.raises(tern.ExportError,
                       match=r"aten::convolution: int32 is not supported \(it takes float32, float64, float16, "
                             r"bfloat16, int64\), used by:\n    node convolution"):
        tern.export(Int32Conv().eval(), (torch.ones(1, 2, 5, 5, dtype=torch.int32),))


class Int32Conv(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("w", torch.ones(3, 2, 3, 3, dtype=torch.int32))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.conv2d(x, self.w)


# passes


def _graph(model: nn.Module, args: tuple[torch.Tensor, ...]) -> torch.fx.GraphModule:
    return to_graph_module(torch.export.export(model.eval(), args).run_decompositions())


def _targets(gm: torch.fx.GraphModule) -> list[str]:
    return [op_name(n.target) for n in gm.graph.nodes if n.op == "call_function"]


def test_fold_batch_norm_keeps_graph_output_equal_to_eager() -> None:
    model, (x,) = _make("cnn")
    gm = _graph(model, (x,))
    assert _targets(gm).count("aten::_native_batch_norm_legit_no_training") == 2
    gm = eliminate_dead_code(fold_batch_norm(gm))
    gm.recompile()
    assert "aten::_native_batch_norm_legit_no_training" not in _targets(gm)
    x2 = torch.randn(1, 3, 16, 16)  # static shapes: same shape, new data
    assert_close(gm(x2)[0], model(x2), rtol=1e-5)


def test_fold_batch_norm_skips_conv_with_other_users() -> None:
    class ConvUsedTwice(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv, self.bn = nn.Conv2d(3, 4, 1), nn.BatchNorm2d(4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.conv(x)
            return self.bn(y) + y

    model, x = _randomize_batch_norm(ConvUsedTwice()).eval(), torch.randn(1, 3, 4, 4)
    gm = fold_batch_norm(_graph(model, (x,)))
    assert "aten::_native_batch_norm_legit_no_training" in _targets(gm)
    assert_close(gm(x)[0], model(x), rtol=1e-5)


class _PadConv(nn.Module):
    """A zero pad, then a conv (TF "same" padding as PyTorch ports write it)."""

    def __init__(self, pad: tuple[int, ...], stride: int = 1, padding: int = 0, groups: int = 1) -> None:
        super().__init__()
        self.pad = nn.ZeroPad2d(pad)
        self.conv = nn.Conv2d(4, 4, 3, stride=stride, padding=padding, groups=groups)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(self.pad(x))


@pytest.mark.parametrize("pad,padding,groups", [((1, 1, 1, 1), 0, 1), ((2, 2, 1, 1), 1, 4), ((0, 0, 3, 3), 0, 1)])
def test_fold_pad_into_conv_symmetric_pad_folded_and_output_equal(pad, padding, groups) -> None:
    model, x = _PadConv(pad, padding=padding, groups=groups).eval(), torch.randn(1, 4, 9, 10)
    gm = fold_pad_into_conv(_graph(model, (x,)))
    gm.recompile()
    assert "aten::constant_pad_nd" not in _targets(gm)
    assert_close(gm(x)[0], model(x), rtol=1e-5, atol=1e-6)


CONV1D_CASES = [dict(), dict(stride=2, padding=1), dict(dilation=2, padding=2, bias=False),
                dict(groups=4, padding=1), dict(stride=3)]


@pytest.mark.parametrize("kwargs", CONV1D_CASES, ids=lambda k: ",".join(f"{a}={v}" for a, v in k.items()) or "plain")
def test_conv1d_as_conv2d_every_conv1d_rewritten_and_output_equal(kwargs) -> None:
    model, x = nn.Sequential(nn.Conv1d(8, 12, 3, **kwargs), nn.ReLU()).eval(), torch.randn(2, 8, 19)
    gm = conv1d_as_conv2d(_graph(model, (x,)))
    gm.graph.lint()
    gm.recompile()
    convs = [n for n in gm.graph.nodes if n.op == "call_function" and op_name(n.target) == "aten::convolution"]
    assert len(convs) == 1 and convs[0].meta["val"].dim() == 4
    assert_close(gm(x)[0], model(x), rtol=1e-5, atol=1e-6)


def test_conv1d_as_conv2d_exported_conv1d_runs_on_the_cpu_backend_equal_to_eager(tmp_path: Path) -> None:
    model = nn.Sequential(nn.Conv1d(4, 16, 5, padding=2), nn.ReLU(), nn.Conv1d(16, 8, 3, stride=2)).eval()
    x = torch.randn(1, 4, 64)
    prog = tern.export(model, (x,))
    assert "aten::convolution" not in dict(prog.op_counts)  # claimed by the cpu backend
    prog.save(tmp_path / "m.tern")
    assert_close(torch.from_numpy(tern.load(str(tmp_path / "m.tern"))(x.numpy())[0]), model(x), rtol=1e-5, atol=1e-5)


def test_fold_pad_into_conv_asymmetric_pad_kept() -> None:
    model, x = _PadConv((0, 1, 0, 1), stride=2).eval(), torch.randn(1, 4, 8, 8)
    gm = fold_pad_into_conv(_graph(model, (x,)))
    gm.recompile()
    assert "aten::constant_pad_nd" in _targets(gm)
    assert_close(gm(x)[0], model(x), rtol=1e-5, atol=1e-6)


def test_fold_pad_into_conv_quantized_pad_and_its_pair_folded_and_output_equal() -> None:
    class ConvPadConv(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.first, self.pad, self.conv = nn.Conv2d(3, 4, 1), nn.ZeroPad2d(1), nn.Conv2d(4, 4, 3, groups=4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.conv(self.pad(torch.relu(self.first(x))))

    x = torch.randn(1, 3, 8, 8)
    qmodel = tern.quantize(ConvPadConv().eval(), (x,), calibration=[(x,)], progress=False)
    before = to_graph_module(torch.export.export(qmodel, (x,)).run_decompositions())  # no .eval() on it
    want = before(x)[0]
    assert _targets(before).count("quantized_decomposed::quantize_per_tensor") == 4
    gm = eliminate_dead_code(fold_pad_into_conv(before))
    gm.recompile()
    assert "aten::constant_pad_nd" not in _targets(gm)
    assert _targets(gm).count("quantized_decomposed::quantize_per_tensor") == 3  # the pad's pair is gone
    assert_close(gm(x)[0], want, rtol=0, atol=1e-6)


def test_fold_pad_into_conv_pad_with_other_users_kept() -> None:
    class PadUsedTwice(_PadConv):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.pad(x)
            return self.conv(y).sum() + y.sum()

    model, x = PadUsedTwice((1, 1, 1, 1)).eval(), torch.randn(1, 4, 6, 6)
    gm = fold_pad_into_conv(_graph(model, (x,)))
    assert "aten::constant_pad_nd" in _targets(gm)


def test_remove_noops_drops_inner_copies_and_keeps_output_copies() -> None:
    class Copies(nn.Module):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            y = (x + 1).clone().to(torch.float32)
            return torch.relu(y), x.clone()

    model, x = Copies(), torch.randn(2, 3)
    gm = remove_noops(_graph(model, (x,)))
    gm.recompile()
    assert _targets(gm).count("aten::clone") == 1  # x.clone() is an output of an input: kept
    assert_outputs_close(gm(x), model(x), rtol=0.0, atol=0.0)  # copies and one add: exact


def test_clamp_is_lowered_to_hardtanh_with_equal_output() -> None:
    model, x = nn.Sequential(nn.Conv2d(3, 4, 1), nn.Hardsigmoid()).eval(), torch.randn(1, 3, 5, 5) * 4
    gm = lower_to_graph(model, (x,), supported_ops())
    assert "aten::clamp" not in _targets(gm) and "aten::hardtanh" in _targets(gm)
    assert_close(gm(x)[0], model(x), rtol=1e-5)


# outputs, modes, imports


def test_outputs_that_are_inputs_constants_or_repeats_get_their_own_copy() -> None:
    class Aliases(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.randn(3))

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
            y = x * 2
            return x, y, y, self.w

    program = tern.export(Aliases(), (torch.randn(3),))
    (method,) = read_program(program.to_bytes())["methods"]
    outputs = method["outputs"]
    assert len(set(outputs)) == 4 and method["inputs"][0] not in outputs
    assert all(method["values"][v]["storage"] == "Planned" for v in outputs)
    ops = [method["operators"][i["op"]] for i in method["instructions"] if "op" in i]
    assert ops.count("aten::clone") == 3


def test_export_runs_in_eval_mode_and_restores_training_flags() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.ReLU()).train()
    model[2].eval()
    program = tern.export(model, (torch.randn(1, 4),))
    assert "aten::native_dropout" not in dict(program.op_counts)
    assert model.training and model[1].training and not model[2].training


def test_import_tern_does_not_import_torch() -> None:
    code = "import sys, tern; assert 'torch' not in sys.modules, 'torch imported'"
    env = {"PYTHONPATH": str(REPO / "python")}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


def test_supported_ops_default_overload_has_no_suffix() -> None:
    ops = parse_ops_def(REPO / "kernels" / "portable" / "ops.def")
    assert {"aten::relu", "aten::add.Tensor", "aten::convolution"} <= ops
    assert ops <= supported_ops()  # the runtime's registry (when built) or the same ops.def
    assert op_name(torch.ops.aten.relu.default) == "aten::relu"
    assert op_name(torch.ops.aten.add.Tensor) == "aten::add.Tensor"


class StridedOfSlice(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.as_strided(x[2:], (2,), (1,), 0)


def test_as_strided_of_a_view_is_refused_at_export_not_answered_differently() -> None:
    # eager reads the storage behind x[2:] ([0, 1]); the runtime has only the slice
    with pytest.raises(tern.ExportError, match=r"aten::as_strided of a view \(aten::slice.Tensor\)"):
        tern.export(StridedOfSlice(), (torch.arange(6.0),), partitioners=())
    program = tern.export(StridedOfProduct(), (torch.arange(6.0),), partitioners=())
    assert ("aten::as_strided", 1) in program.op_counts


class StridedOfProduct(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.as_strided(x * 2, (2, 2), (1, 2), 1)


class _CiaMix(nn.Module):
    """Composite-implicit ops of every kind run_decompositions treats: kept
    whole by tern (scaled_dot_product_attention, var.dim), kept whole by
    torch's default (upsample_nearest2d.vec), decomposed the op's own way
    (linear, layer_norm, flatten/unflatten, dropout in eval), decomposed by a
    function of torch's table (gelu's and softmax's neighbours)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.norm = nn.LayerNorm(8)
        self.drop = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor, img: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.drop(torch.nn.functional.gelu(self.norm(self.fc(x))))
        q = h.unflatten(-1, (2, 4)).transpose(0, 1)
        a = torch.nn.functional.scaled_dot_product_attention(q, q, q).transpose(0, 1).flatten(1)
        up = torch.nn.functional.interpolate(img, scale_factor=2, mode="nearest")
        return a.softmax(-1) + torch.var(h, dim=1, keepdim=True), up.log_softmax(1)


@pytest.mark.parametrize("case", ["cia_mix", "mobilenet_v2", "dynamic_mlp"])
def test_fast_decompositions_give_the_plain_calls_program_node_for_node(case: str) -> None:
    # tern.export.run_decompositions patches only the composite ops whose
    # treatment differs from the dispatcher's: the program must be the one
    # torch's own run_decompositions gives with the full table.
    from tern.export import run_decompositions

    dynamic_shapes = None
    if case == "cia_mix":
        model, args = _CiaMix().eval(), (torch.randn(3, 8), torch.randn(1, 2, 4, 4))
    elif case == "mobilenet_v2":
        model, args = torchvision.models.mobilenet_v2().eval(), (torch.randn(1, 3, 32, 32),)
    else:
        model, args = MLP(), (torch.randn(4, 16),)
        dynamic_shapes = ({0: torch.export.Dim("batch", min=1, max=64)},)
    ep = torch.export.export(model, args, dynamic_shapes=dynamic_shapes)
    supported = frozenset(supported_ops())
    plain = run_decompositions(ep, supported, fast=False)
    fast = run_decompositions(ep, supported, fast=True)
    assert str(fast.graph) == str(plain.graph)
    assert fast.graph_signature == plain.graph_signature
    assert str(fast.range_constraints) == str(plain.range_constraints)
    targets = {op_name(n.target) for n in fast.graph.nodes if n.op == "call_function"}
    if case == "cia_mix":  # the test covers what it says it covers
        assert {"aten::scaled_dot_product_attention", "aten::var.dim", "aten::upsample_nearest2d.vec"} <= targets
