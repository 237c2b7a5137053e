"""Parity with PyTorch eager for the batch-h4 kernels: reflection_pad{1,2,3}d,
replication_pad{1,2,3}d, avg_pool3d, max_pool3d_with_indices,
_adaptive_avg_pool3d, grid_sampler_2d, col2im, _embedding_bag(_forward_only),
_cdist_forward, _pdist_forward.

Each case is a tiny module calling the public torch API (F.pad, F.avg_pool3d,
F.grid_sample, F.fold, nn.EmbeddingBag, torch.cdist, F.pdist, ...), exported
with tern.export, checked to run the expected ATen op, saved, loaded, run
through the C++ runtime and compared with eager on the same inputs.

Tolerance (tests/python/compare.py): floats within 1e-4 of each output's own
largest magnitude plus 1e-4 of each element, NaN and infinities in the same
places; integer and bool outputs exactly.

Run: PYTHONPATH=pylib .venv/bin/python -m pytest -q tests/python/test_ops_h4.py
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.utils._pytree import tree_leaves
from torch import nn

import tern
from compare import assert_close, assert_outputs_close
from op_testing import Fn


def _export_and_compare(model: nn.Module, args: tuple[torch.Tensor, ...], tmp_path: Path,
                        ops: set[str]) -> tern.Module:
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
    module = tern.load(str(path))
    outs = module(*args)
    assert_outputs_close(outs, refs)
    return module


def _gen() -> torch.Generator:
    return torch.Generator().manual_seed(0)


def _randn(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=_gen(), dtype=torch.float64).to(dtype)


def _data(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """Distinct-looking values of `dtype` (floats: normal; integers: within the type's range)."""
    if dtype.is_floating_point:
        return _randn(*shape, dtype=dtype)
    lo = 0 if dtype == torch.uint8 else -100
    return torch.randint(lo, 100, shape, generator=_gen(), dtype=dtype)


PAD_DTYPES = [torch.float32, torch.float64, torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64]
FLOATS = [torch.float32, torch.float64]


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


# reflection_pad{1,2,3}d, replication_pad{1,2,3}d (F.pad)


@pytest.mark.parametrize("dtype", PAD_DTYPES, ids=str)
@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize(
    "shape,pad",
    [((2, 3, 7), (2, 3)), ((3, 7), (0, 6)), ((2, 3, 5, 6), (1, 2, 4, 0)), ((3, 5, 6), (3, 3, 2, 2)),
     ((1, 2, 4, 5, 3), (1, 2, 3, 0, 2, 1)), ((2, 4, 5, 3), (2, 2, 1, 1, 3, 3))],
    ids=["1d", "1d_unbatched", "2d", "2d_unbatched", "3d", "3d_unbatched"],
)
def test_reflect_and_replicate_pad_match_eager(shape: tuple[int, ...], pad: tuple[int, ...], mode: str,
                                               dtype: torch.dtype, tmp_path: Path) -> None:
    spatial = len(pad) // 2
    op = f"aten::{'reflection' if mode == 'reflect' else 'replication'}_pad{spatial}d"
    _export_and_compare(Fn(lambda x: F.pad(x, pad, mode=mode)), (_data(shape, dtype),), tmp_path, {op})


@pytest.mark.parametrize(
    "mode,shape,pad",
    [("replicate", (2, 3, 7), (-2, 3)), ("replicate", (2, 3, 7), (-2, -4)), ("replicate", (1, 2, 5, 6), (-1, 2, 3, -4)),
     ("replicate", (1, 2, 3, 5, 6), (-1, 2, 0, -4, 1, -1)), ("reflect", (2, 3, 7), (-2, 3)),
     ("reflect", (1, 2, 5, 6), (2, -3, -1, 4))],
    ids=["replicate_crop_left", "replicate_crop_both", "replicate_2d_mixed", "replicate_3d_mixed",
         "reflect_crop_left", "reflect_2d_mixed"],
)
def test_negative_pads_crop_like_eager(mode: str, shape: tuple[int, ...], pad: tuple[int, ...],
                                       tmp_path: Path) -> None:
    op = f"aten::{'reflection' if mode == 'reflect' else 'replication'}_pad{len(pad) // 2}d"
    _export_and_compare(Fn(lambda x: F.pad(x, pad, mode=mode)), (_randn(*shape),), tmp_path, {op})


def test_pad_of_an_empty_batch_gives_an_empty_out(tmp_path: Path) -> None:
    fn = lambda x: (F.pad(x, (1, 2), mode="reflect"), F.pad(x, (3, 0), mode="replicate"))  # noqa: E731
    _export_and_compare(Fn(fn), (torch.randn(0, 2, 4),), tmp_path,
                        {"aten::reflection_pad1d", "aten::replication_pad1d"})


def test_reflection_pad_in_a_conv_block(tmp_path: Path) -> None:
    model = nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(3, 4, 3), nn.ReplicationPad2d((0, 1, 2, 0)), nn.ReLU())
    _export_and_compare(model, (torch.randn(1, 3, 8, 8),), tmp_path,
                        {"aten::reflection_pad2d", "aten::replication_pad2d"})


def test_reflect_pad_as_large_as_the_dim_is_refused_by_torch_first() -> None:
    with pytest.raises(RuntimeError, match=r"Padding size should be less than the corresponding input dimension"):
        F.pad(torch.randn(1, 2, 3), (3, 0), mode="reflect")


# max_pool3d_with_indices, avg_pool3d, _adaptive_avg_pool3d


MAXPOOL3D = {"aten::max_pool3d_with_indices"}


@pytest.mark.parametrize("dtype", PAD_DTYPES, ids=str)
def test_max_pool3d_dtypes_match_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    x = _data((2, 3, 5, 6, 7), dtype)
    _export_and_compare(Fn(lambda x: F.max_pool3d(x, 2, return_indices=True)), (x,), tmp_path, MAXPOOL3D)


@pytest.mark.parametrize(
    "kwargs,shape",
    [(dict(kernel_size=3, stride=2, padding=1), (1, 2, 7, 8, 9)),
     (dict(kernel_size=(2, 3, 2), stride=(1, 2, 3), padding=(1, 1, 0), ceil_mode=True), (2, 2, 6, 7, 8)),
     (dict(kernel_size=2, dilation=(2, 1, 3), padding=1), (1, 3, 6, 5, 9)),
     (dict(kernel_size=3, stride=2, ceil_mode=True), (3, 6, 6, 6)),  # unbatched, last window ragged
     (dict(kernel_size=(1, 1, 4), stride=1), (1, 1, 1, 1, 9))],
    ids=["padded_stride", "ceil_mode_mixed", "dilation", "unbatched_ceil", "line"],
)
def test_max_pool3d_window_arguments_match_eager(kwargs: dict[str, Any], shape: tuple[int, ...],
                                                  tmp_path: Path) -> None:
    fn = lambda x: F.max_pool3d(x, return_indices=True, **kwargs)  # noqa: E731
    _export_and_compare(Fn(fn), (_randn(*shape),), tmp_path, MAXPOOL3D)


def test_max_pool3d_nan_wins_and_ties_keep_the_first(tmp_path: Path) -> None:
    x = torch.zeros(1, 1, 4, 4, 4)
    x[0, 0, 0, 0, 1] = float("nan")
    x[0, 0, 3, 3, 3] = float("nan")
    x[0, 0, 2, 2, 2] = -float("inf")
    _export_and_compare(Fn(lambda x: F.max_pool3d(x, 2, 1, return_indices=True)), (x,), tmp_path, MAXPOOL3D)


def test_max_pool3d_module_without_indices(tmp_path: Path) -> None:
    model = nn.Sequential(nn.Hardtanh(-0.5, 0.5), nn.MaxPool3d(2), nn.ReLU())
    _export_and_compare(model, (torch.randn(1, 2, 6, 6, 6),), tmp_path, MAXPOOL3D)


AVGPOOL3D = {"aten::avg_pool3d"}


@pytest.mark.parametrize(
    "kwargs",
    [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
     dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
     dict(kernel_size=(2, 3, 3), stride=(2, 2, 1), padding=(1, 1, 0), ceil_mode=True),
     dict(kernel_size=(2, 3, 3), stride=2, padding=1, ceil_mode=True, count_include_pad=False),
     dict(kernel_size=3, padding=1, divisor_override=5), dict(kernel_size=2, stride=3, divisor_override=-3)],
    ids=["kernel", "padded", "exclude_pad", "ceil_mode", "ceil_exclude_pad", "divisor", "negative_divisor"],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64], ids=str)
def test_avg_pool3d_matches_eager(kwargs: dict[str, Any], dtype: torch.dtype, tmp_path: Path) -> None:
    x = _data((2, 3, 6, 7, 8), dtype)
    _export_and_compare(Fn(lambda x: F.avg_pool3d(x, **kwargs)), (x,), tmp_path, AVGPOOL3D)


def test_avg_pool3d_unbatched_and_module(tmp_path: Path) -> None:
    model = nn.Sequential(nn.ReLU(), nn.AvgPool3d(3, stride=2, padding=1))
    _export_and_compare(model, (torch.randn(2, 5, 6, 7),), tmp_path, AVGPOOL3D)


@pytest.mark.parametrize(
    "out_size,shape",
    [((2, 3, 4), (2, 3, 5, 7, 9)), ((3, 3, 3), (2, 4, 7, 5)), ((4, None, 2), (1, 2, 6, 5, 4)),
     ((7, 1, 9), (1, 1, 5, 3, 4))],
    ids=["uneven", "unbatched", "keep_a_dim", "upsample"],
)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_adaptive_avg_pool3d_matches_eager(out_size: tuple[Any, ...], shape: tuple[int, ...], dtype: torch.dtype,
                                           tmp_path: Path) -> None:
    _export_and_compare(Fn(lambda x: F.adaptive_avg_pool3d(x, out_size)), (_randn(*shape, dtype=dtype),), tmp_path,
                        {"aten::_adaptive_avg_pool3d"})


# grid_sampler_2d (F.grid_sample)


def _grid(n: int, h: int, w: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    # beyond [-1, 1] too, so that every padding mode matters
    return ((torch.rand(n, h, w, 2, generator=_gen(), dtype=torch.float64) * 2 - 1) * 1.4).to(dtype)


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample_matches_eager(mode: str, padding_mode: str, align_corners: bool, tmp_path: Path) -> None:
    fn = lambda x, g: F.grid_sample(x, g, mode=mode, padding_mode=padding_mode,  # noqa: E731
                                    align_corners=align_corners)
    _export_and_compare(Fn(fn), (_randn(2, 3, 5, 7), _grid(2, 4, 6)), tmp_path, {"aten::grid_sampler_2d"})


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample_float64_matches_eager(mode: str, tmp_path: Path) -> None:
    fn = lambda x, g: F.grid_sample(x, g, mode=mode, padding_mode="reflection", align_corners=False)  # noqa: E731
    args = (_randn(1, 2, 6, 4, dtype=torch.float64), _grid(1, 5, 3, torch.float64))
    _export_and_compare(Fn(fn), args, tmp_path, {"aten::grid_sampler_2d"})


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_edge_coordinates(padding_mode: str, tmp_path: Path) -> None:
    # exact corners, far outside, a 1-pixel axis, NaN
    g = torch.tensor([[[[-1.0, -1.0], [1.0, 1.0], [0.0, 0.0], [5.0, -7.0]],
                       [[-3.5, 0.25], [1.0, -1.0], [float("nan"), 0.5], [0.5, float("nan")]]]])
    for x in (_randn(1, 2, 4, 5), _randn(1, 2, 1, 5)):
        for mode in ("bilinear", "nearest", "bicubic"):
            for align in (False, True):
                fn = lambda x, g: F.grid_sample(x, g, mode=mode, padding_mode=padding_mode,  # noqa: E731
                                                align_corners=align)
                _export_and_compare(Fn(fn), (x, g), tmp_path, {"aten::grid_sampler_2d"})


def test_affine_grid_and_grid_sample_warp(tmp_path: Path) -> None:
    def warp(x: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
        return F.grid_sample(x, F.affine_grid(theta, [2, 3, 6, 8], align_corners=False), align_corners=False)

    theta = torch.tensor([[[0.9, -0.2, 0.1], [0.15, 1.1, -0.05]], [[1.0, 0.0, 0.3], [0.0, 0.8, 0.0]]])
    _export_and_compare(Fn(warp), (torch.randn(2, 3, 6, 8), theta), tmp_path, {"aten::grid_sampler_2d"})


# col2im (F.fold)


@pytest.mark.parametrize(
    "out_size,kwargs,shape",
    [((4, 5), dict(kernel_size=2), (2, 12, 12)),
     ((7, 6), dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0)), (1, 12, 20)),
     ((6, 6), dict(kernel_size=2, dilation=2, padding=1, stride=2), (2, 8, 9)),
     ((5, 4), dict(kernel_size=(2, 3), stride=(3, 1)), (6, 4))],
    ids=["overlap", "stride_pad", "dilation", "unbatched"],
)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_fold_matches_eager(out_size: tuple[int, int], kwargs: dict[str, Any], shape: tuple[int, ...],
                            dtype: torch.dtype, tmp_path: Path) -> None:
    fn = lambda x: F.fold(x, out_size, **kwargs)  # noqa: E731
    _export_and_compare(Fn(fn), (_randn(*shape, dtype=dtype),), tmp_path, {"aten::col2im"})


def test_fold_bool_is_a_logical_or(tmp_path: Path) -> None:
    x = torch.rand(2, 12, 12, generator=_gen()) > 0.7
    _export_and_compare(Fn(lambda x: F.fold(x, (4, 5), 2)), (x,), tmp_path, {"aten::col2im"})


def test_fold_after_a_linear_layer(tmp_path: Path) -> None:
    # patches [n, L, c * k * k] from a token model, back into an image
    model = nn.Linear(4, 12)
    fn = lambda x: F.fold(model(x).transpose(1, 2), (6, 8), 2, stride=2)  # noqa: E731
    _export_and_compare(Fn(fn), (torch.randn(2, 12, 4),), tmp_path, {"aten::col2im"})


# _embedding_bag (nn.EmbeddingBag, F.embedding_bag)


# torch.export emits _embedding_bag_forward_only for a weight without
# gradient (F.embedding_bag on a constant) and _embedding_bag for a parameter
# (nn.EmbeddingBag), even in eval mode.
BAG = {"aten::_embedding_bag_forward_only"}
BAG_PARAM = {"aten::_embedding_bag"}


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32], ids=str)
def test_embedding_bag_modes_match_eager(mode: str, dtype: torch.dtype, index_dtype: torch.dtype,
                                         tmp_path: Path) -> None:
    weight = _randn(10, 4, dtype=dtype)
    fn = lambda i, o: F.embedding_bag(i, weight, o, mode=mode)  # noqa: E731
    indices = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 0], dtype=index_dtype)
    offsets = torch.tensor([0, 2, 2, 5, 8], dtype=index_dtype)  # an empty bag, a 1-row bag
    _export_and_compare(Fn(fn), (indices, offsets), tmp_path, BAG)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2, -1])
@pytest.mark.parametrize("include_last_offset", [False, True])
def test_embedding_bag_module_options_match_eager(mode: str, padding_idx: int | None, include_last_offset: bool,
                                                  tmp_path: Path) -> None:
    bag = nn.EmbeddingBag(10, 3, mode=mode, padding_idx=padding_idx, include_last_offset=include_last_offset)
    indices = torch.tensor([1, 2, 2, 9, 4, 2, 2, 7])  # bag 1 holds only padding rows (padding_idx 2)
    offsets = torch.tensor([0, 2, 4, 8]) if include_last_offset else torch.tensor([0, 2, 4, 6])
    _export_and_compare(bag, (indices, offsets), tmp_path, BAG_PARAM)


def test_embedding_bag_per_sample_weights_match_eager(tmp_path: Path) -> None:
    bag = nn.EmbeddingBag(10, 5, mode="sum")
    args = (torch.tensor([3, 1, 4, 1, 5, 9]), torch.tensor([0, 3, 3]), torch.rand(6, generator=_gen()))
    _export_and_compare(bag, args, tmp_path, BAG_PARAM)


def test_embedding_bag_per_sample_weights_float64_padding(tmp_path: Path) -> None:
    weight = _randn(10, 3, dtype=torch.float64)
    fn = lambda i, o, w: F.embedding_bag(i, weight, o, mode="sum", per_sample_weights=w,  # noqa: E731
                                         padding_idx=4)
    args = (torch.tensor([3, 4, 4, 1, 5, 9]), torch.tensor([0, 3]), _randn(6, dtype=torch.float64))
    _export_and_compare(Fn(fn), args, tmp_path, BAG)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_2d_input_is_one_bag_per_row(mode: str, tmp_path: Path) -> None:
    bag = nn.EmbeddingBag(12, 4, mode=mode)
    _export_and_compare(bag, (torch.randint(0, 12, (3, 5), generator=_gen()),), tmp_path, BAG_PARAM)


def test_embedding_bag_text_classifier(tmp_path: Path) -> None:
    class Classifier(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bag = nn.EmbeddingBag(50, 8, mode="mean")
            self.fc = nn.Linear(8, 3)

        def forward(self, text: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
            return self.fc(self.bag(text, offsets))

    args = (torch.randint(0, 50, (20,), generator=_gen()), torch.tensor([0, 4, 9, 15]))
    _export_and_compare(Classifier(), args, tmp_path, BAG_PARAM)


def test_embedding_bag_aten_op_returns_four_outputs(tmp_path: Path) -> None:
    # all four outputs have torch's sizes and match eager here
    weight = _randn(10, 3)

    def fn(i: torch.Tensor, o: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.ops.aten._embedding_bag(weight, i, o, False, 2)

    args = (torch.tensor([1, 2, 4, 5, 4]), torch.tensor([0, 2, 2]))
    module = _export_and_compare(Fn(fn), args, tmp_path, {"aten::_embedding_bag"})
    assert [o.shape for o in module(*args)] == [(3, 3), (5,), (3,), (3, 3)]


@pytest.mark.parametrize(
    "indices,offsets",
    [([0, 10], [0, 1]), ([-1, 2], [0, 1]), ([1, 2], [1, 1]), ([1, 2], [0, 3]), ([1, 2, 3], [0, 2, 1])],
    ids=["index_too_large", "index_negative", "first_offset_not_0", "offset_past_end", "offsets_decrease"],
)
def test_embedding_bag_bad_data_fails_at_run(indices: list[int], offsets: list[int], tmp_path: Path) -> None:
    bag = nn.EmbeddingBag(10, 3, mode="mean")
    n, m = len(indices), len(offsets)
    path = tmp_path / "model.tern"
    tern.export(bag, (torch.zeros(n, dtype=torch.int64), torch.arange(m)), partitioners=()).save(path)
    module = tern.load(str(path))
    with pytest.raises(ValueError, match="ExecutionFailed"):
        module(torch.tensor(indices), torch.tensor(offsets))
    good = (torch.arange(n), torch.arange(m))
    assert_close(module(*good)[0], bag(*good).detach())


def test_embedding_bag_last_offset_must_end_the_indices(tmp_path: Path) -> None:
    bag = nn.EmbeddingBag(10, 3, mode="sum", include_last_offset=True)
    path = tmp_path / "model.tern"
    tern.export(bag, (torch.arange(4), torch.tensor([0, 2, 4])), partitioners=()).save(path)
    with pytest.raises(ValueError, match="ExecutionFailed"):
        tern.load(str(path))(torch.arange(4), torch.tensor([0, 2, 3]))


# _cdist_forward (torch.cdist), _pdist_forward (F.pdist)


CDIST = {"aten::_cdist_forward"}
P_VALUES = [2.0, 1.0, 0.0, float("inf"), 3.0, 0.5]


@pytest.mark.parametrize("p", P_VALUES, ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_cdist_p_norms_match_eager(p: float, dtype: torch.dtype, tmp_path: Path) -> None:
    x1, x2 = _randn(5, 4, dtype=dtype), _randn(7, 4, dtype=dtype)
    x2[1] = x1[2]  # a zero distance
    x2[3, :2] = x1[0, :2]  # equal coordinates (the 0-norm counts the others)
    _export_and_compare(Fn(lambda a, b: torch.cdist(a, b, p=p)), (x1, x2), tmp_path, CDIST)


@pytest.mark.parametrize(
    "s1,s2",
    [((2, 5, 3), (2, 6, 3)), ((3, 1, 4, 2), (5, 6, 2)), ((4, 3), (2, 2, 5, 3)), ((2, 1, 3, 4), (1, 3, 2, 4))],
    ids=["batched", "broadcast_batch", "broadcast_rank", "broadcast_both"],
)
def test_cdist_batches_broadcast_like_eager(s1: tuple[int, ...], s2: tuple[int, ...], tmp_path: Path) -> None:
    for p in (2.0, 1.5):
        _export_and_compare(Fn(lambda a, b: torch.cdist(a, b, p=p)), (_randn(*s1), _randn(*s2) + 0.5), tmp_path,
                            CDIST)


def test_cdist_many_rows_without_mm(tmp_path: Path) -> None:
    fn = lambda a, b: torch.cdist(a, b, compute_mode="donot_use_mm_for_euclid_dist")  # noqa: E731
    _export_and_compare(Fn(fn), (_randn(30, 6), _randn(27, 6)), tmp_path, CDIST)


@pytest.mark.parametrize("mode", [None, 0, 1])
def test_cdist_forward_matrix_product_form(mode: int | None, tmp_path: Path) -> None:
    # what _cdist_forward itself does for p = 2 with more than 25 rows or
    # compute_mode 1 (torch.cdist decomposes those cases before export)
    fn = lambda a, b: torch.ops.aten._cdist_forward(a, b, 2.0, mode)  # noqa: E731
    _export_and_compare(Fn(fn), (_randn(3, 30, 5), _randn(3, 4, 5) + 1), tmp_path, CDIST)


def test_cdist_empty_columns_give_zeros(tmp_path: Path) -> None:
    _export_and_compare(Fn(lambda a, b: torch.cdist(a, b)), (torch.randn(3, 0), torch.randn(4, 0)), tmp_path, CDIST)


@pytest.mark.parametrize("p", P_VALUES, ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_pdist_matches_eager(p: float, dtype: torch.dtype, tmp_path: Path) -> None:
    x = _randn(7, 5, dtype=dtype)
    x[4] = x[1]
    x[5, 2:] = x[0, 2:]
    _export_and_compare(Fn(lambda a: F.pdist(a, p=p)), (x,), tmp_path, {"aten::_pdist_forward"})


def test_pdist_of_one_row_is_empty(tmp_path: Path) -> None:
    _export_and_compare(Fn(lambda a: F.pdist(a)), (torch.randn(1, 3),), tmp_path, {"aten::_pdist_forward"})


def test_distances_propagate_nan_like_eager(tmp_path: Path) -> None:
    x = torch.tensor([[1.0, float("nan")], [2.0, 3.0], [0.0, 0.0]])
    for p in P_VALUES:
        _export_and_compare(Fn(lambda a, b: (torch.cdist(a, b, p=p), F.pdist(a, p=p))), (x, torch.zeros(2, 2)),
                            tmp_path, CDIST | {"aten::_pdist_forward"})


# every op: empty inputs, and results independent of the thread count

_W = torch.randn(5, 3, generator=_gen())

EMPTY_CASES: dict[str, tuple[Callable[..., Any], tuple[torch.Tensor, ...], str]] = {
    "max_pool3d_no_batch": (lambda x: F.max_pool3d(x, 2, return_indices=True), (torch.randn(0, 2, 4, 4, 4),),
                            "aten::max_pool3d_with_indices"),
    "avg_pool3d_no_batch": (lambda x: F.avg_pool3d(x, 2), (torch.randn(0, 2, 4, 4, 4),), "aten::avg_pool3d"),
    "adaptive_no_batch": (lambda x: F.adaptive_avg_pool3d(x, 2), (torch.randn(0, 2, 4, 4, 4),),
                          "aten::_adaptive_avg_pool3d"),
    "adaptive_out_0": (lambda x: F.adaptive_avg_pool3d(x, (0, 2, 2)), (torch.randn(1, 2, 4, 4, 4),),
                       "aten::_adaptive_avg_pool3d"),
    "grid_no_batch": (lambda x, g: F.grid_sample(x, g, align_corners=False),
                      (torch.randn(0, 2, 4, 4), torch.randn(0, 3, 3, 2)), "aten::grid_sampler_2d"),
    "grid_no_channels": (lambda x, g: F.grid_sample(x, g, align_corners=False),
                         (torch.randn(1, 0, 4, 4), torch.randn(1, 3, 3, 2)), "aten::grid_sampler_2d"),
    "grid_no_points": (lambda x, g: F.grid_sample(x, g, align_corners=False),
                       (torch.randn(1, 2, 4, 4), torch.randn(1, 0, 3, 2)), "aten::grid_sampler_2d"),
    "fold_no_batch": (lambda x: F.fold(x, (4, 5), 2), (torch.randn(0, 12, 12),), "aten::col2im"),
    "cdist_no_rows": (lambda a, b: torch.cdist(a, b), (torch.randn(0, 3), torch.randn(4, 3)), "aten::_cdist_forward"),
    "cdist_no_batch": (lambda a, b: torch.cdist(a, b), (torch.randn(0, 2, 3), torch.randn(4, 3)),
                       "aten::_cdist_forward"),
    "pdist_no_rows": (lambda a: F.pdist(a), (torch.randn(0, 3),), "aten::_pdist_forward"),
    "pdist_no_columns": (lambda a: F.pdist(a, p=0.5), (torch.randn(4, 0),), "aten::_pdist_forward"),
    "bag_no_indices": (lambda i, o: F.embedding_bag(i, _W, o, mode="mean"),
                       (torch.zeros(0, dtype=torch.int64), torch.tensor([0, 0])), "aten::_embedding_bag_forward_only"),
    "bag_no_bags": (lambda i, o: F.embedding_bag(i, _W, o, mode="sum"),
                    (torch.tensor([1, 2]), torch.zeros(0, dtype=torch.int64)), "aten::_embedding_bag_forward_only"),
}


@pytest.mark.parametrize("name", sorted(EMPTY_CASES))
def test_empty_inputs_match_eager(name: str, tmp_path: Path) -> None:
    fn, args, op = EMPTY_CASES[name]
    _export_and_compare(Fn(fn), args, tmp_path, {op})


THREAD_CASES: dict[str, tuple[Callable[..., Any], tuple[torch.Tensor, ...]]] = {
    "pads": (lambda x: (F.pad(x, (2, 3, 1, 1, 2, 0), mode="reflect"), F.pad(x, (1, 4, 0, 2, 3, 3), mode="replicate")),
             (torch.randn(3, 4, 5, 9, 33),)),
    "pool3d": (lambda x: (F.max_pool3d(x, 3, 2, 1, return_indices=True), F.avg_pool3d(x, 2, ceil_mode=True),
                          F.adaptive_avg_pool3d(x, (3, 4, 5))), (torch.randn(2, 5, 9, 10, 11),)),
    "grid_sample": (lambda x, g: F.grid_sample(x, g, mode="bicubic", align_corners=True),
                    (torch.randn(2, 3, 9, 10), torch.rand(2, 17, 19, 2) * 2 - 1)),
    "fold": (lambda x: F.fold(x, (20, 21), 3, padding=1), (torch.randn(3, 18, 420),)),
    "distances": (lambda a, b: (torch.cdist(a, b, p=1), torch.cdist(a, b, compute_mode="donot_use_mm_for_euclid_dist"),
                                F.pdist(a[0], p=3)), (torch.randn(2, 40, 7), torch.randn(2, 33, 7))),
}


@pytest.mark.parametrize("name", sorted(THREAD_CASES))
def test_results_do_not_depend_on_the_thread_count(name: str, tmp_path: Path) -> None:
    fn, args = THREAD_CASES[name]
    path = tmp_path / "model.tern"
    tern.export(Fn(fn), args, partitioners=()).save(path)
    one = tern.load(str(path), threads=1)(*args)
    for threads in (2, 3):
        for a, b in zip(one, tern.load(str(path), threads=threads)(*args)):
            np.testing.assert_array_equal(a, b)
    with torch.no_grad():
        refs = tree_leaves(fn(*args))
    assert_outputs_close(one, refs)
