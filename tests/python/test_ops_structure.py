"""Parity with PyTorch eager for the structure kernels: split_with_sizes,
upsample_nearest2d.vec, upsample_bilinear2d.vec, native_group_norm,
constant_pad_nd, amax, amin, argmax, argmin, max.dim, min.dim, index_select,
index.Tensor, index_put.

Each test builds a tiny module that reaches the op through the public torch
API, exports it, checks that the file runs the expected ATen op (what
torch.export + run_decompositions emits), saves, loads and runs it through
the C++ runtime, and compares with eager.

Tolerance (tests/python/compare.py): floats within 1e-4 of each output's own
largest magnitude plus 1e-4 of each element, NaN and infinities in the same
places; integer and bool outputs exactly.

Run: .venv/bin/python -m pytest -q tests/python/test_ops_structure.py
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import tern
from compare import assert_close, assert_outputs_close
from op_testing import Fn
from tern.inspect import read_program


def _export_and_compare(model: nn.Module, args: tuple[torch.Tensor, ...], tmp_path: Path,
                        ops: set[str]) -> tern.Program:
    """Exports `model`, checks it uses every op in `ops`, runs it and compares with eager."""
    model.eval()
    with torch.no_grad():
        ref = model(*args)
    refs = [ref] if isinstance(ref, torch.Tensor) else list(ref)
    program = tern.export(model, args, partitioners=())
    used = {op for op, _ in program.op_counts}
    assert ops <= used, f"expected {sorted(ops)} in the file, got {sorted(used)}"
    path = tmp_path / "model.tern"
    program.save(path)
    outs = tern.load(str(path))(*args)
    assert_outputs_close(outs, refs)
    return program


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


# split_with_sizes (torch.chunk, torch.split)


def test_chunk_glu_block_exports_one_split_and_matches_eager(tmp_path: Path) -> None:
    def glu(x: torch.Tensor) -> torch.Tensor:
        a, b = x.chunk(2, -1)
        return a * torch.sigmoid(b)

    program = _export_and_compare(Fn(glu), (torch.randn(3, 16),), tmp_path, {"aten::split_with_sizes"})
    assert dict(program.op_counts)["aten::split_with_sizes"] == 1


SPLIT = {"aten::split_with_sizes"}


@pytest.mark.parametrize(
    "fn,ops",
    [
        (lambda x: torch.split(x, 2, 0), SPLIT),  # 5 rows -> 2, 2, 1
        (lambda x: torch.split(x, [1, 0, 3], 1), SPLIT),  # an empty item
        (lambda x: x.chunk(3, 2), SPLIT),  # 7 -> 3, 3, 1
        (lambda x: x.unbind(1), {"aten::slice.Tensor"}),  # not split; each squeeze aliases its slice
    ],
    ids=["split_size", "split_sections_with_empty", "chunk_uneven", "unbind"],
)
def test_split_and_chunk_outputs_match_eager(fn: Callable[..., Any], ops: set[str], tmp_path: Path) -> None:
    _export_and_compare(Fn(fn), (torch.randn(5, 4, 7),), tmp_path, ops)


def test_split_items_are_planned_tensors_live_until_their_last_use(tmp_path: Path) -> None:
    def late_use(x: torch.Tensor) -> torch.Tensor:
        a, b, c = x.chunk(3, -1)
        return torch.relu(b) * c + a  # `a` is read by the last instruction only

    program = _export_and_compare(Fn(late_use), (torch.randn(2, 9),), tmp_path, {"aten::split_with_sizes"})
    (method,) = read_program(program.to_bytes())["methods"]
    values, instructions = method["values"], method["instructions"]
    split = instructions[0]
    out = values[split["args"][-1]]
    assert out["kind"] == "TensorList" and len(out["items"]) == 3
    items = out["items"]
    assert all(values[i]["kind"] == "Tensor" and values[i]["storage"] == "Planned" for i in items)
    assert len({values[i]["offset"] for i in items}) == 3
    intervals = {it.value: it for it in program.memory_plan.intervals}
    for item in items:
        uses = [step for step, ins in enumerate(instructions) if item in ins["args"]]  # the getitem's readers
        assert intervals[item].start == 0 and intervals[item].end >= max(uses, default=0)
    assert intervals[items[0]].end == len(instructions) - 1


# upsample_nearest2d.vec, upsample_bilinear2d.vec (F.interpolate, nn.Upsample)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(scale_factor=2),
        dict(scale_factor=1.7),  # samples with 1 / 1.7, not 5 / 8
        dict(scale_factor=(0.5, 3)),
        dict(size=(7, 9)),
        dict(size=(3, 4)),
        dict(scale_factor=1.7, recompute_scale_factor=True),
    ],
    ids=["x2", "x1.7", "x0.5_x3", "size_up", "size_down", "recompute"],
)
def test_interpolate_nearest_matches_eager(kwargs: dict[str, Any], tmp_path: Path) -> None:
    model = Fn(lambda x: F.interpolate(x, mode="nearest", **kwargs))
    _export_and_compare(model, (torch.randn(2, 3, 5, 6),), tmp_path, {"aten::upsample_nearest2d.vec"})


def test_upsample_module_nearest_on_uint8_image_matches_eager(tmp_path: Path) -> None:
    x = torch.randint(0, 256, (1, 3, 4, 5), dtype=torch.uint8)
    _export_and_compare(nn.Upsample(scale_factor=2), (x,), tmp_path, {"aten::upsample_nearest2d.vec"})


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize(
    "kwargs",
    [dict(scale_factor=2), dict(scale_factor=1.7), dict(size=(7, 9)), dict(size=(3, 4)), dict(size=(5, 11))],
    ids=["x2", "x1.7", "size_up", "size_down", "one_dim_same"],
)
def test_interpolate_bilinear_matches_eager(kwargs: dict[str, Any], align_corners: bool, tmp_path: Path) -> None:
    model = Fn(lambda x: F.interpolate(x, mode="bilinear", align_corners=align_corners, **kwargs))
    _export_and_compare(model, (torch.randn(2, 3, 5, 6),), tmp_path, {"aten::upsample_bilinear2d.vec"})


# native_group_norm (nn.GroupNorm, F.group_norm)


@pytest.mark.parametrize("shape,groups", [((2, 6, 5, 4), 3), ((3, 4, 7), 2), ((2, 8), 8), ((1, 6, 3, 3), 1)])
def test_group_norm_module_matches_eager(shape: tuple[int, ...], groups: int, tmp_path: Path) -> None:
    gn = nn.GroupNorm(groups, shape[1])
    with torch.no_grad():
        gn.weight.normal_()
        gn.bias.normal_()
    x = torch.randn(shape) * 3 + 1
    _export_and_compare(gn, (x,), tmp_path, {"aten::native_group_norm"})


def test_group_norm_without_affine_matches_eager(tmp_path: Path) -> None:
    model = Fn(lambda x: F.group_norm(x, 2, eps=1e-3))
    _export_and_compare(model, (torch.randn(2, 4, 3, 3),), tmp_path, {"aten::native_group_norm"})


# constant_pad_nd (F.pad)


@pytest.mark.parametrize(
    "pad,value",
    [((1, 2), 0.0), ((1, 2, 3, 0), -1.5), ((-1, 2, 1, -2), 0.25), ((0, 0, 0, 0, 1, 1), 2.0), ((-2, -3), 0.0)],
    ids=["last_dim", "two_dims", "mixed_negative", "three_dims", "crop_only"],
)
def test_pad_constant_matches_eager(pad: tuple[int, ...], value: float, tmp_path: Path) -> None:
    model = Fn(lambda x: F.pad(x, pad, mode="constant", value=value))
    _export_and_compare(model, (torch.randn(2, 3, 4, 6),), tmp_path, {"aten::constant_pad_nd"})


def test_pad_int64_input_matches_eager_exactly(tmp_path: Path) -> None:
    model = Fn(lambda x: F.pad(x, (2, -1), value=7))
    _export_and_compare(model, (torch.arange(12).reshape(3, 4),), tmp_path, {"aten::constant_pad_nd"})


# amax, amin


@pytest.mark.parametrize(
    "fn,op",
    [
        (lambda x: x.amax(dim=(1, 2)), "aten::amax"),
        (lambda x: torch.amin(x, -1, keepdim=True), "aten::amin"),
        (lambda x: x.amax(dim=0), "aten::amax"),
        (lambda x: torch.amax(x, dim=(0, 3)), "aten::amax"),
    ],
    ids=["amax_middle", "amin_last_keepdim", "amax_first", "amax_outer_and_last"],
)
def test_amax_amin_match_eager(fn: Callable[..., Any], op: str, tmp_path: Path) -> None:
    _export_and_compare(Fn(fn), (torch.randn(2, 3, 4, 5),), tmp_path, {op})


def test_amax_amin_on_int32_match_eager_exactly(tmp_path: Path) -> None:
    x = torch.randint(-50, 50, (3, 4, 5), dtype=torch.int32)
    model = Fn(lambda x: (x.amax(1), x.amin((0, 2), keepdim=True)))
    _export_and_compare(model, (x,), tmp_path, {"aten::amax", "aten::amin"})


# argmax, argmin, max.dim, min.dim


@pytest.mark.parametrize(
    "fn,op",
    [
        (lambda x: x.argmax(1), "aten::argmax"),
        (lambda x: x.argmin(-1, keepdim=True), "aten::argmin"),
        (lambda x: x.argmax(), "aten::argmax"),
        (lambda x: torch.argmin(x), "aten::argmin"),
    ],
    ids=["argmax_dim", "argmin_keepdim", "argmax_flat", "argmin_flat"],
)
def test_argmax_argmin_match_eager(fn: Callable[..., Any], op: str, tmp_path: Path) -> None:
    _export_and_compare(Fn(fn), (torch.randn(3, 4, 5),), tmp_path, {op})


def test_argmax_ties_give_first_index_like_eager(tmp_path: Path) -> None:
    x = torch.randint(0, 3, (4, 6, 5)).to(torch.float32)  # many ties
    model = Fn(lambda x: (x.argmax(1), x.argmin(2), x.argmax()))
    _export_and_compare(model, (x,), tmp_path, {"aten::argmax", "aten::argmin"})


def test_torch_max_min_with_dim_return_values_and_indices(tmp_path: Path) -> None:
    def fn(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        mx = torch.max(x, 1)
        mn = torch.min(x, -1, keepdim=True)
        return mx.values, mx.indices, mn.values, mn.indices

    x = torch.randint(-3, 3, (3, 5, 4)).to(torch.float32)
    _export_and_compare(Fn(fn), (x,), tmp_path, {"aten::max.dim", "aten::min.dim"})


def test_max_dim_values_only_feeds_next_op(tmp_path: Path) -> None:
    model = Fn(lambda x: torch.relu(torch.max(x, -1)[0]))
    _export_and_compare(model, (torch.randn(4, 7),), tmp_path, {"aten::max.dim"})


def test_torch_max_min_of_every_element_match_eager(tmp_path: Path) -> None:
    """torch.max(x) / torch.min(x): a 0-d result; a NaN wins; integers exact."""
    x = torch.randn(3, 5, 4)
    x[1, 2, 3] = float("nan")
    model = Fn(lambda x, i, s: (torch.max(x), torch.min(x[0]), torch.max(i), torch.min(i), torch.max(s)))
    args = (x, torch.randint(-50, 50, (4, 7), dtype=torch.int32), torch.tensor(2.5))
    program = tern.export(model, args, partitioners=())
    assert {"aten::max", "aten::min"} <= {op for op, _ in program.op_counts}
    program.save(tmp_path / "m.tern")
    outs = tern.load(str(tmp_path / "m.tern"))(*args)
    assert_outputs_close(outs, model(*args), rtol=0.0, atol=0.0)  # exact; NaN in the same place
    assert np.isnan(outs[0])


# index_select, index.Tensor


def test_index_select_with_repeated_indices_matches_eager(tmp_path: Path) -> None:
    model = Fn(lambda x, i: torch.index_select(x, 1, i))
    args = (torch.randn(2, 5, 3), torch.tensor([4, 0, 4, 2]))
    _export_and_compare(model, args, tmp_path, {"aten::index_select"})


@pytest.mark.parametrize(
    "fn,index",
    [
        (lambda x, i: x[i], torch.tensor([[2, 0], [-1, 1]])),
        (lambda x, i: x[:, i], torch.tensor([3, -4, 0])),
        (lambda x, i: x[..., i], torch.tensor([1, 1, 2])),
    ],
    ids=["first_dim_2d_index", "second_dim_negative", "last_dim"],
)
def test_advanced_indexing_with_one_tensor_matches_eager(fn: Callable[..., Any], index: torch.Tensor,
                                                        tmp_path: Path) -> None:
    _export_and_compare(Fn(fn), (torch.randn(3, 4, 5), index), tmp_path, {"aten::index.Tensor"})


def _put(dim: int, accumulate: bool = False) -> Callable[..., Any]:
    """x[(:,) * dim, i] = v (or +=) on a copy of x: aten::index_put."""
    def fn(x: torch.Tensor, i: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        y = x.clone()
        if accumulate:
            return y.index_put_((i,), v, accumulate=True) if dim == 0 else y.index_add_(dim, i, v)
        y[(slice(None),) * dim + (i,)] = v
        return y
    return fn


@pytest.mark.parametrize(
    "fn,x,index,values",
    [
        (_put(0), torch.randn(5, 3), torch.tensor([4, 0, -2]), torch.randn(3, 3)),
        (_put(1), torch.randn(2, 6, 3), torch.tensor([[5, 1], [0, 2]]), torch.randn(2, 2, 2, 3)),
        (_put(2), torch.randn(2, 3, 4), torch.tensor([3]), torch.randn(2, 3, 1)),
        (_put(1), torch.randn(3, 4), torch.tensor([0, 2]), torch.randn(2)),  # values broadcast
        (_put(0, accumulate=True), torch.randn(4, 2), torch.tensor([1, 1, 3, 1]), torch.randn(4, 2)),
        (_put(1), torch.arange(12).reshape(3, 4), torch.tensor([3, 0], dtype=torch.int32),
         torch.tensor([[-1, -2]])),
        (lambda x, i, v: x.index_copy(2, i, v), torch.randn(1, 2, 8, 4), torch.tensor([5]), torch.randn(1, 2, 1, 4)),
    ],
    ids=["first_dim", "middle_dim_2d_index", "last_dim_broadcast", "scalar_row_broadcast", "accumulate_repeats",
         "int64_self_int32_index", "index_copy"],
)
def test_index_put_matches_eager(fn: Callable[..., Any], x: torch.Tensor, index: torch.Tensor, values: torch.Tensor,
                                 tmp_path: Path) -> None:
    _export_and_compare(Fn(fn), (x, index, values), tmp_path, {"aten::index_put"})


def test_index_put_out_of_range_fails_at_run(tmp_path: Path) -> None:
    x, v = torch.randn(3, 2), torch.randn(1, 2)
    path = tmp_path / "model.tern"
    tern.export(Fn(_put(0)), (x, torch.tensor([0]), v), partitioners=()).save(path)
    module = tern.load(str(path))
    with pytest.raises(ValueError, match="ExecutionFailed"):
        module(x, torch.tensor([3]), v)
    assert_close(module(x, torch.tensor([-1]), v)[0], _put(0)(x, torch.tensor([-1]), v), rtol=0.0, atol=0.0)


@pytest.mark.parametrize(
    "fn,bad",
    [(lambda x, i: torch.index_select(x, 0, i), torch.tensor([0, 3])),
     (lambda x, i: torch.index_select(x, 0, i), torch.tensor([-1, 0])),
     (lambda x, i: x[i], torch.tensor([0, -4]))],
    ids=["index_select_too_large", "index_select_negative", "index_too_negative"],
)
def test_out_of_range_index_fails_at_run(fn: Callable[..., Any], bad: torch.Tensor, tmp_path: Path) -> None:
    x = torch.randn(3, 2)
    path = tmp_path / "model.tern"
    tern.export(Fn(fn), (x, torch.tensor([0, 1])), partitioners=()).save(path)
    module = tern.load(str(path))
    with pytest.raises(ValueError, match="ExecutionFailed"):
        module(x, bad)
    assert_close(module(x, torch.tensor([2, 0]))[0], x[[2, 0]], rtol=0.0, atol=0.0)
