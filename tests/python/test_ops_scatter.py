"""Parity with PyTorch eager for the gather, scatter and structure kernels:
gather, scatter.src, scatter.value, scatter.reduce, scatter.value_reduce,
scatter_add, scatter_reduce.two, select_scatter, slice_scatter,
masked_scatter, flip, repeat, diagonal, squeeze.dim, alias, copy,
as_strided, and index.Tensor / index_put with several index tensors (and
index_put with a boolean mask).

Each test builds a tiny module that reaches the op through the public torch
API, exports it, checks that the file runs the expected ATen op, saves, loads
and runs it through the C++ runtime, and compares with eager on the same
inputs. Every dtype the kernels take is covered (float32, float64, int8,
uint8, int16, int32, int64, bool), with empty and 0-d tensors and rank 8.

Tolerance (tests/python/compare.py): floats within 1e-4 of each output's own
largest magnitude plus 1e-4 of each element, NaN and infinities at the same
places; integer and bool outputs exactly.

Run: .venv/bin/python -m pytest -q tests/python/test_ops_scatter.py
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest
import torch
from torch import nn

import tern
from compare import assert_close, assert_outputs_close
from op_testing import Fn

DTYPES = [torch.float32, torch.float64, torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64, torch.bool]
DTYPE_IDS = [str(d).removeprefix("torch.") for d in DTYPES]


def _load(model: nn.Module, args: tuple[torch.Tensor, ...], tmp_path: Path, op: str) -> Any:
    """Exports `model`, checks the file runs `op`, saves and loads it."""
    program = tern.export(model, args, partitioners=())
    used = {name for name, _ in program.op_counts}
    assert op in used, f"expected {op} in the file, got {sorted(used)}"
    path = tmp_path / "model.tern"
    program.save(path)
    return tern.load(str(path))


def _compare(fn: Callable[..., Any], args: tuple[torch.Tensor, ...], tmp_path: Path, op: str) -> None:
    """Exports Fn(fn), runs it and compares each output with eager."""
    model = Fn(fn)
    with torch.no_grad():
        ref = model(*args)
    refs = [ref] if isinstance(ref, torch.Tensor) else list(ref)
    outs = _load(model, args, tmp_path, op)(*args)
    assert_outputs_close(outs, refs)


def _rand(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """Random values that fit `dtype` (floats with a spread of signs)."""
    if dtype == torch.bool:
        return torch.randint(0, 2, shape).bool()
    if dtype.is_floating_point:
        return (torch.randn(shape) * 5).to(dtype)
    lo, hi = (0, 200) if dtype == torch.uint8 else (-100, 100)
    return torch.randint(lo, hi, shape, dtype=dtype)


def _fails_at_run(fn: Callable[..., Any], good: tuple[torch.Tensor, ...], bad: tuple[torch.Tensor, ...],
                  tmp_path: Path, op: str) -> None:
    """Exported on `good`: runs it like eager; `bad` (same shapes) fails with ExecutionFailed."""
    module = _load(Fn(fn), good, tmp_path, op)
    assert_close(module(*good)[0], fn(*good))
    with pytest.raises(ValueError, match="ExecutionFailed"):
        module(*bad)


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


# gather


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_gather_every_dtype_matches_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    x = _rand((3, 4, 5), dtype)
    index = torch.randint(0, 4, (2, 6, 5))  # larger than self along dim, smaller elsewhere
    _compare(lambda x, i: torch.gather(x, 1, i), (x, index), tmp_path, "aten::gather")


@pytest.mark.parametrize(
    "shape,dim,index",
    [
        ((4, 3), 0, torch.tensor([[3, 0, 1], [0, 0, 2]])),
        ((4, 3), -1, torch.tensor([[2], [2], [0], [1]], dtype=torch.int32)),
        ((), 0, torch.tensor(0)),
        ((), 0, torch.tensor([0, 0])),
        ((5,), 0, torch.tensor(4)),
        ((3, 4), 1, torch.zeros(3, 0, dtype=torch.long)),
        ((2,) * 8, 5, torch.randint(0, 2, (2,) * 8)),
    ],
    ids=["dim0", "last_dim_int32_index", "0d", "0d_self_1d_index", "1d_self_0d_index", "empty_index", "rank8"],
)
def test_gather_shapes_match_eager(shape: tuple[int, ...], dim: int, index: torch.Tensor, tmp_path: Path) -> None:
    _compare(lambda x, i: torch.gather(x, dim, i), (torch.randn(shape), index), tmp_path, "aten::gather")


def test_gather_negative_or_too_large_index_fails_at_run(tmp_path: Path) -> None:
    x = torch.randn(2, 3)
    fn = lambda x, i: torch.gather(x, 1, i)  # noqa: E731
    good = torch.tensor([[2, 0], [1, 1]])
    _fails_at_run(fn, (x, good), (x, torch.tensor([[2, 0], [-1, 1]])), tmp_path, "aten::gather")
    _fails_at_run(fn, (x, good), (x, torch.tensor([[3, 0], [0, 1]])), tmp_path, "aten::gather")


# scatter.src, scatter.value, scatter_add


def _scatter_index() -> torch.Tensor:
    """[2, 3] entries into dim 1 of a [3, 4] self, with repeats (index order decides)."""
    return torch.tensor([[0, 3, 0], [2, 2, 2]])


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_scatter_src_and_add_every_dtype_match_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    x, src = _rand((3, 4), dtype), _rand((2, 5), dtype)
    model = lambda x, i, s: (torch.scatter(x, 1, i, s), torch.scatter_add(x, 1, i, s))  # noqa: E731
    _compare(model, (x, _scatter_index(), src), tmp_path, "aten::scatter.src")
    _compare(model, (x, _scatter_index(), src), tmp_path, "aten::scatter_add")


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_scatter_value_every_dtype_matches_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    value = True if dtype == torch.bool else 7 if not dtype.is_floating_point else -2.5
    _compare(lambda x, i: torch.scatter(x, 0, i, value), (_rand((3, 4), dtype), torch.tensor([[2, 0, 1, 2]])),
             tmp_path, "aten::scatter.value")


@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")  # deprecated, still exported
@pytest.mark.parametrize("reduce", ["add", "multiply"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_scatter_with_reduce_every_dtype_matches_eager(dtype: torch.dtype, reduce: str, tmp_path: Path) -> None:
    value = True if dtype == torch.bool else 3 if not dtype.is_floating_point else -1.5
    model = lambda x, i, s: (x.scatter(1, i, s, reduce=reduce), x.scatter(1, i, value, reduce=reduce))  # noqa: E731
    args = (_rand((3, 4), dtype), _scatter_index(), _rand((2, 5), dtype))
    _compare(model, args, tmp_path, "aten::scatter.reduce")
    _compare(model, args, tmp_path, "aten::scatter.value_reduce")


@pytest.mark.parametrize(
    "value,dtype", [(2.7, torch.int64), (-2.7, torch.int8), (3, torch.float32), (2, torch.bool)],
    ids=["float_to_int64", "negative_float_to_int8", "int_to_float", "int_to_bool"],
)
def test_scatter_value_converts_like_eager(value: Any, dtype: torch.dtype, tmp_path: Path) -> None:
    _compare(lambda x, i: x.scatter(1, i, value), (_rand((2, 3), dtype), torch.tensor([[1], [0]])), tmp_path,
             "aten::scatter.value")


@pytest.mark.parametrize(
    "shape,dim,index,src_shape",
    [
        ((), 0, torch.tensor(0), ()),
        ((4,), 0, torch.tensor([3, 1, 3]), (5,)),
        ((3, 4), 0, torch.zeros(0, 4, dtype=torch.long), (2, 4)),
        ((2, 3, 4), -1, torch.tensor([[[3, 0]], [[1, 1]]], dtype=torch.int32), (2, 2, 3)),
        ((2,) * 8, 7, torch.randint(0, 2, (2,) * 8), (2,) * 8),
    ],
    ids=["0d", "1d_repeats", "empty_index", "last_dim_int32", "rank8"],
)
def test_scatter_and_scatter_add_shapes_match_eager(shape: tuple[int, ...], dim: int, index: torch.Tensor,
                                                     src_shape: tuple[int, ...], tmp_path: Path) -> None:
    x, src = torch.randn(shape), torch.randn(src_shape)
    model = lambda x, i, s: (x.scatter(dim, i, s), x.scatter_add(dim, i, s))  # noqa: E731
    _compare(model, (x, index, src), tmp_path, "aten::scatter_add")


def test_scatter_add_wraps_int8_like_eager(tmp_path: Path) -> None:
    x = torch.tensor([[100, -100, 5]], dtype=torch.int8)
    src = torch.tensor([[100, -100, 100, 1]], dtype=torch.int8)
    _compare(lambda x, i, s: x.scatter_add(1, i, s), (x, torch.tensor([[0, 1, 0, 2]]), src), tmp_path,
             "aten::scatter_add")


@pytest.mark.parametrize("op", ["scatter", "scatter_add", "scatter_value"])
def test_scatter_out_of_range_index_fails_at_run(op: str, tmp_path: Path) -> None:
    x, src = torch.randn(3, 4), torch.randn(2, 4)
    fns = {"scatter": (lambda x, i, s: x.scatter(1, i, s), "aten::scatter.src"),
           "scatter_add": (lambda x, i, s: x.scatter_add(1, i, s), "aten::scatter_add"),
           "scatter_value": (lambda x, i, s: x.scatter(1, i, 1.5) + s.sum(), "aten::scatter.value")}
    fn, name = fns[op]
    good = torch.tensor([[0, 3], [1, 1]])
    for bad in (torch.tensor([[0, 4], [1, 1]]), torch.tensor([[0, 3], [-1, 1]])):
        _fails_at_run(fn, (x, good, src), (x, bad, src), tmp_path, name)


# scatter_reduce.two


REDUCES = ["sum", "prod", "mean", "amax", "amin"]


@pytest.mark.parametrize("include_self", [True, False], ids=["include_self", "exclude_self"])
@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_scatter_reduce_every_dtype_matches_eager(dtype: torch.dtype, reduce: str, include_self: bool,
                                                  tmp_path: Path) -> None:
    if dtype == torch.bool and reduce == "mean":
        pytest.skip("torch has no bool mean")
    x = _rand((3, 5), dtype)
    src = _rand((3, 4), dtype) if dtype != torch.int64 or reduce != "prod" else torch.randint(-9, 9, (3, 4))
    index = torch.tensor([[0, 4, 0, 0], [1, 2, 1, 3], [4, 4, 4, 4]])  # repeats; some elements not selected
    _compare(lambda x, i, s: x.scatter_reduce(1, i, s, reduce, include_self=include_self), (x, index, src),
             tmp_path, "aten::scatter_reduce.two")


@pytest.mark.parametrize("reduce", ["amax", "amin", "sum"])
def test_scatter_reduce_nan_and_inf_match_eager(reduce: str, tmp_path: Path) -> None:
    x = torch.tensor([1.0, float("nan"), 3.0, float("-inf"), 0.0])
    src = torch.tensor([float("nan"), 2.0, float("inf"), 5.0, -1.0, 4.0])
    index = torch.tensor([0, 1, 2, 3, 3, 4])
    _compare(lambda x, i, s: x.scatter_reduce(0, i, s, reduce), (x, index, src), tmp_path,
             "aten::scatter_reduce.two")


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int64], ids=["int8", "uint8", "int64"])
def test_scatter_reduce_integer_mean_rounds_down_like_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    signed = dtype != torch.uint8
    x = torch.tensor([[-1, 2, 3, 10, 1]] if signed else [[1, 2, 3, 10, 1]], dtype=dtype)
    src = torch.tensor([[-4, 0, 7, 100, 100, -3]] if signed else [[4, 0, 7, 200, 100, 3]], dtype=dtype)
    index = torch.tensor([[0, 0, 2, 3, 3, 4]])
    model = lambda x, i, s: (x.scatter_reduce(1, i, s, "mean"),  # noqa: E731
                             x.scatter_reduce(1, i, s, "mean", include_self=False))
    _compare(model, (x, index, src), tmp_path, "aten::scatter_reduce.two")


def test_scatter_reduce_0d_and_empty_match_eager(tmp_path: Path) -> None:
    model = lambda x, i, s, y, e, t: (x.scatter_reduce(0, i, s, "amax", include_self=False),  # noqa: E731
                                      y.scatter_reduce(0, e, t, "mean"))
    empty_index = torch.zeros(0, 2, dtype=torch.long)
    args = (torch.tensor(1.5), torch.tensor(0), torch.tensor(4.0), torch.randn(3, 2), empty_index, torch.randn(1, 2))
    _compare(model, args, tmp_path, "aten::scatter_reduce.two")


def test_scatter_reduce_out_of_range_index_fails_at_run(tmp_path: Path) -> None:
    x, src = torch.randn(3, 4), torch.randn(3, 2)
    fn = lambda x, i, s: x.scatter_reduce(1, i, s, "mean", include_self=False)  # noqa: E731
    good = torch.tensor([[0, 3], [1, 1], [2, 0]])
    _fails_at_run(fn, (x, good, src), (x, torch.tensor([[0, 3], [1, 4], [2, 0]]), src), tmp_path,
                  "aten::scatter_reduce.two")


# select_scatter, slice_scatter


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_select_and_slice_scatter_every_dtype_match_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    x = _rand((3, 5, 2), dtype)
    model = lambda x, a, b: (torch.select_scatter(x, a, 1, -2), torch.slice_scatter(x, b, 1, 1, None, 2))  # noqa: E731
    args = (x, _rand((3, 2), dtype), _rand((3, 2, 2), dtype))
    _compare(model, args, tmp_path, "aten::select_scatter")
    _compare(model, args, tmp_path, "aten::slice_scatter")


@pytest.mark.parametrize(
    "dim,start,end,step,src_len",
    [
        (0, None, None, 1, 6),
        (0, -4, -1, 1, 3),
        (0, -100, 100, 4, 2),
        (0, 10, 20, 1, 0),
        (0, 4, 2, 1, 0),
        (1, 1, 3, 3, 1),
    ],
    ids=["whole", "negative_bounds", "clamped_bounds_step4", "start_past_end_of_dim", "empty_range", "dim1_step3"],
)
def test_slice_scatter_bounds_match_eager(dim: int, start: int | None, end: int | None, step: int, src_len: int,
                                          tmp_path: Path) -> None:
    x = torch.randn(6, 3)
    src_shape = (src_len, 3) if dim == 0 else (6, src_len)
    _compare(lambda x, s: torch.slice_scatter(x, s, dim, start, end, step), (x, torch.randn(src_shape)), tmp_path,
             "aten::slice_scatter")


def test_select_and_slice_scatter_convert_src_like_eager(tmp_path: Path) -> None:
    x = torch.randn(4, 3)
    model = lambda x, a, b: (torch.select_scatter(x, a, 0, 3), torch.slice_scatter(x, b, 1, 0, 2))  # noqa: E731
    args = (x, torch.tensor([1, -2, 3]), torch.randn(4, 2, dtype=torch.float64))
    _compare(model, args, tmp_path, "aten::select_scatter")


def test_select_scatter_1d_self_with_0d_src_matches_eager(tmp_path: Path) -> None:
    _compare(lambda x, s: torch.select_scatter(x, s, 0, 0), (torch.randn(3), torch.tensor(9.0)), tmp_path,
             "aten::select_scatter")


# masked_scatter


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_masked_scatter_every_dtype_matches_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    x, mask, source = _rand((3, 4), dtype), torch.rand(3, 4) > 0.5, _rand((2, 7), dtype)
    _compare(lambda x, m, s: x.masked_scatter(m, s), (x, mask, source), tmp_path, "aten::masked_scatter")


@pytest.mark.parametrize(
    "self_shape,mask_shape", [((3, 4), (4,)), ((4,), (3, 4)), ((3, 1), (1, 5)), ((), ()), ((0, 3), (3,))],
    ids=["mask_broadcast", "self_broadcast", "both_broadcast", "0d", "empty"],
)
def test_masked_scatter_broadcast_matches_eager(self_shape: tuple[int, ...], mask_shape: tuple[int, ...],
                                                tmp_path: Path) -> None:
    x, mask, source = torch.randn(self_shape), torch.rand(mask_shape) > 0.3, torch.randn(20)
    _compare(lambda x, m, s: x.masked_scatter(m, s), (x, mask, source), tmp_path, "aten::masked_scatter")


def test_masked_scatter_with_too_few_source_elements_fails_at_run(tmp_path: Path) -> None:
    x, source = torch.randn(2, 3), torch.randn(3)
    good = torch.tensor([[True, False, True], [False, True, False]])
    bad = torch.tensor([[True, False, True], [True, True, False]])
    _fails_at_run(lambda x, m, s: x.masked_scatter(m, s), (x, good, source), (x, bad, source), tmp_path,
                  "aten::masked_scatter")


# flip, repeat


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_flip_and_repeat_every_dtype_match_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    model = lambda x: (torch.flip(x, (0, -1)), x.repeat(2, 1, 3))  # noqa: E731
    _compare(model, (_rand((3, 4), dtype),), tmp_path, "aten::flip")
    _compare(model, (_rand((3, 4), dtype),), tmp_path, "aten::repeat")


@pytest.mark.parametrize(
    "shape,dims",
    [((5,), (0,)), ((2, 3, 4), (1,)), ((2, 3, 4), (2, 0, 1)), ((2, 1, 4), (1, 2)), ((), ()), ((3, 0), (0, 1)),
     ((2,) * 8, (0, 3, 7))],
    ids=["1d", "middle", "all", "size1_and_last", "0d", "empty", "rank8"],
)
def test_flip_shapes_match_eager(shape: tuple[int, ...], dims: tuple[int, ...], tmp_path: Path) -> None:
    _compare(lambda x: torch.flip(x, dims), (torch.randn(shape),), tmp_path, "aten::flip")


@pytest.mark.parametrize(
    "shape,repeats",
    [((3,), (2,)), ((2, 3), (1, 1)), ((2, 3), (2, 1, 2)), ((2, 3), (0, 2)), ((), (3, 2)), ((0, 2), (2, 2)),
     ((2, 1, 3), (1, 4, 1, 1, 1, 1, 1, 2))],
    ids=["1d", "ones", "new_leading_dim", "zero_repeat", "0d", "empty", "rank8"],
)
def test_repeat_shapes_match_eager(shape: tuple[int, ...], repeats: tuple[int, ...], tmp_path: Path) -> None:
    _compare(lambda x: x.repeat(*repeats), (torch.randn(shape),), tmp_path, "aten::repeat")


# diagonal, squeeze.dim, alias


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_diagonal_every_dtype_matches_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    _compare(lambda x: torch.diagonal(x, 1) * 1, (_rand((4, 5), dtype),), tmp_path, "aten::diagonal")


@pytest.mark.parametrize(
    "shape,offset,dim1,dim2",
    [((4, 5), 0, 0, 1), ((4, 5), -2, 0, 1), ((4, 5), 3, 1, 0), ((4, 5), 7, 0, 1), ((4, 5), -9, 0, 1),
     ((2, 3, 4, 5), 1, -1, 1), ((3, 0), 0, 0, 1), ((2,) * 8, -1, 6, 2)],
    ids=["main", "below", "swapped_dims", "past_the_end", "past_the_start", "4d", "empty", "rank8"],
)
def test_diagonal_offsets_and_dims_match_eager(shape: tuple[int, ...], offset: int, dim1: int, dim2: int,
                                               tmp_path: Path) -> None:
    _compare(lambda x: torch.diagonal(x, offset, dim1, dim2).clone(), (torch.randn(shape),), tmp_path,
             "aten::diagonal")


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_squeeze_dim_every_dtype_matches_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    model = lambda x: (x[:1].squeeze(0), x[:, :1].squeeze(-2), x[:1].squeeze(1))  # noqa: E731 (last: size 3, kept)
    _compare(model, (_rand((2, 3, 4), dtype),), tmp_path, "aten::squeeze.dim")


def test_squeeze_dim_on_0d_matches_eager(tmp_path: Path) -> None:
    # Of an input, returned: the one place a squeeze still copies (a view of an
    # intermediate tensor shares its bytes, tern.aliasing).
    _compare(lambda x: x.squeeze(0), (torch.tensor(3.0),), tmp_path, "aten::squeeze.dim")


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_alias_every_dtype_matches_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    _compare(lambda x: torch.ops.aten.alias(x), (_rand((2, 3), dtype),), tmp_path, "aten::alias")


def test_transpose_of_a_1d_tensor_exports_as_alias_and_matches_eager(tmp_path: Path) -> None:
    _compare(lambda x: x.t(), (torch.randn(5),), tmp_path, "aten::alias")


def test_alias_of_0d_and_empty_match_eager(tmp_path: Path) -> None:
    model = lambda x, e: (torch.ops.aten.alias(x), torch.ops.aten.alias(e))  # noqa: E731
    _compare(model, (torch.tensor(2.5), torch.zeros(0, 3)), tmp_path, "aten::alias")


# copy


@pytest.mark.parametrize("src_dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_copy_every_dtype_pair_matches_eager(dtype: torch.dtype, src_dtype: torch.dtype, tmp_path: Path) -> None:
    src = _rand((3, 4), src_dtype)
    if src_dtype.is_floating_point and not dtype.is_floating_point:
        src = src.clamp(0, 100) if dtype == torch.uint8 else src.clamp(-100, 100)  # defined casts only
    _compare(lambda x, s: x.clone().copy_(s), (_rand((3, 4), dtype), src), tmp_path, "aten::copy")


@pytest.mark.parametrize(
    "shape,src_shape,src_dtype",
    [((2, 3), (3,), torch.float32), ((2, 3), (2, 1), torch.int64), ((2, 3), (), torch.float64),
     ((), (), torch.int32), ((0, 3), (3,), torch.float32), ((2,) * 8, (2, 1, 2), torch.float32)],
    ids=["row_broadcast", "column_broadcast_int64", "0d_src_float64", "0d", "empty", "rank8"],
)
def test_copy_broadcasts_src_like_eager(shape: tuple[int, ...], src_shape: tuple[int, ...], src_dtype: torch.dtype,
                                        tmp_path: Path) -> None:
    src = _rand(src_shape, src_dtype)
    _compare(lambda x, s: x.clone().copy_(s), (torch.randn(shape), src), tmp_path, "aten::copy")


# as_strided


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_as_strided_every_dtype_matches_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    _compare(lambda x: torch.as_strided(x, (3, 3), (2, 1), 1), (_rand((4, 2), dtype),), tmp_path, "aten::as_strided")


@pytest.mark.parametrize(
    "shape,size,stride,offset",
    [((10,), (4, 3), (2, 1), 0), ((3, 4), (4, 3), (1, 4), None), ((3, 4), (2, 5), (0, 2), 3), ((6,), (), (), 5),
     ((6,), (0, 3), (100, 1), 0), ((2, 3), (6,), (1,), None), ((256,), (2,) * 8, (128, 64, 32, 16, 8, 4, 2, 1), 0)],
    ids=["overlapping_windows", "transpose", "zero_stride_with_offset", "0d_out", "empty_out", "flatten", "rank8"],
)
def test_as_strided_shapes_match_eager(shape: tuple[int, ...], size: tuple[int, ...], stride: tuple[int, ...],
                                       offset: int | None, tmp_path: Path) -> None:
    _compare(lambda x: torch.as_strided(x, size, stride, offset) * 1, (torch.randn(shape),), tmp_path,
             "aten::as_strided")


def test_as_strided_reading_past_self_is_refused_at_export() -> None:
    # Reads elements 2 to 6 of a 5-element tensor: eager raises when it runs;
    # export (which traces without running) leaves it to the kernel, which
    # refuses it at load.
    model = Fn(lambda x: torch.as_strided(x[1:] * 1, (3,), (2,), 2))
    with pytest.raises(tern.ExportError, match="as_strided"):
        tern.export(model, (torch.randn(6),), partitioners=())


# index.Tensor with several index tensors


def _ix(*values: Any, dtype: torch.dtype = torch.int64) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype)


@pytest.mark.parametrize(
    "fn,indices",
    [
        (lambda x, a, b: x[a, b], (_ix(0, 2, -1), _ix(1, 0, 4))),
        (lambda x, a, b: x[:, a, b], (_ix([0], [2]), _ix(1, 0, 4))),  # [2, 1] with [3] -> [2, 3]
        (lambda x, a, b: x[a, :, b], (_ix(0, 2), _ix(4, -5))),  # separated: broadcast dims first
        (lambda x, a, b: x[a, ..., b], (_ix([1], [0]), _ix(3, 2, 1))),
        (lambda x, a, b: x[..., a, b], (_ix(0, 1), _ix(2, 3, dtype=torch.int32))),
        (lambda x, a, b: x[a, b, a], (_ix(1, 2), _ix(0, 3))),
        # x[t] with a 0-d tensor t is x[int(t)] in Python: call the op itself
        (lambda x, a, b: torch.ops.aten.index(x, [a, b]), (torch.tensor(1), _ix(0, 3))),
        (lambda x, a, b: torch.ops.aten.index(x, [None, a, b]), (torch.tensor(2), torch.tensor(-1))),
        (lambda x, a, b: x[a, b], (torch.zeros(0, dtype=torch.long), _ix(1))),  # empty result
    ],
    ids=["first_two", "adjacent_after_slice", "separated", "separated_ellipsis", "last_two_int32", "three",
         "0d_and_1d", "two_0d", "empty"],
)
def test_index_with_several_tensors_matches_eager(fn: Callable[..., Any], indices: tuple[torch.Tensor, ...],
                                                  tmp_path: Path) -> None:
    _compare(fn, (torch.randn(4, 5, 6, 7), *indices), tmp_path, "aten::index.Tensor")


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_index_with_several_tensors_every_dtype_matches_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    x = _rand((3, 4, 5), dtype)
    model = lambda x, a, b: (x[a, :, b], x[:, a[:, None], b])  # noqa: E731
    _compare(model, (x, _ix(2, 0, 1), _ix(-1, 3, 3)), tmp_path, "aten::index.Tensor")


def test_index_rank8_matches_eager(tmp_path: Path) -> None:
    x = torch.randn((2,) * 8)
    model = lambda x, a, b: (x[:, a, :, :, b], x[a, :, :, b])  # noqa: E731
    _compare(model, (x, _ix([0, 1], [1, 1]), _ix(1, 0)), tmp_path, "aten::index.Tensor")


def test_index_with_several_tensors_out_of_range_fails_at_run(tmp_path: Path) -> None:
    x = torch.randn(3, 4)
    fn = lambda x, a, b: x[a, b]  # noqa: E731
    good = (x, _ix(0, 2), _ix(3, -4))
    _fails_at_run(fn, good, (x, _ix(0, 2), _ix(3, 4)), tmp_path, "aten::index.Tensor")
    _fails_at_run(fn, good, (x, _ix(-4, 2), _ix(3, 1)), tmp_path, "aten::index.Tensor")


def test_index_with_a_mask_is_refused_at_export() -> None:
    # x[mask] has as many rows as true entries: data-dependent, not static.
    with pytest.raises(tern.ExportError, match=r"output of index dim 0: size u0 depends on the data"):
        tern.export(Fn(lambda x, m: x[m]), (torch.randn(3, 4), torch.rand(3) > 0.5), partitioners=())


# index_put with several index tensors, and with a boolean mask


def _put(key: Callable[..., Any], accumulate: bool = False) -> Callable[..., torch.Tensor]:
    """x[key(a, b)] = v (or +=) on a copy of x."""
    def fn(x: torch.Tensor, a: torch.Tensor, b: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.index_put(x, key(a, b), v, accumulate=accumulate)
    return fn


def _setitem(key: Callable[..., Any]) -> Callable[..., torch.Tensor]:
    def fn(x: torch.Tensor, a: torch.Tensor, b: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        y = x.clone()
        y[key(a, b)] = v
        return y
    return fn


@pytest.mark.parametrize(
    "fn,x_shape,a,b,v_shape",
    [
        (_put(lambda a, b: (a, b)), (3, 5, 4), _ix(0, 2, 1), _ix(1, 0, 4), (3, 4)),
        (_put(lambda a, b: (a, b), accumulate=True), (3, 5, 4), _ix(0, 0, 1, 0), _ix(1, 1, 4, 1), (4, 1)),
        (_setitem(lambda a, b: (slice(None), a, b)), (2, 3, 5), _ix([0], [2]), _ix(1, 0, 4), (2, 3)),  # [2, 2, 3]
        (_setitem(lambda a, b: (a, slice(None), b)), (2, 3, 5), _ix(0, 1), _ix(4, -5), (2, 3)),  # separated
        (_setitem(lambda a, b: (a, slice(None), b)), (2, 3, 5), _ix(0, 1), _ix(4, -5), ()),
        (_setitem(lambda a, b: (a, b)), (3, 5, 4), _ix(1, 1, 1, 1), _ix(2, 2, 2, 2), (4, 4)),  # the last one wins
        (_put(lambda a, b: (a, b), accumulate=True), (3, 5, 4), torch.tensor(1), _ix(0, 0, 3, dtype=torch.int32),
         (3, 4)),
        (_put(lambda a, b: (a, b)), (3, 5, 4), torch.zeros(0, dtype=torch.long), _ix(1), (4,)),  # nothing written
    ],
    ids=["two", "accumulate_repeats", "adjacent_after_slice", "separated", "scalar_value", "repeats_last_wins",
         "0d_and_int32_accumulate", "empty"],
)
def test_index_put_with_several_tensors_matches_eager(fn: Callable[..., Any], x_shape: tuple[int, ...],
                                                      a: torch.Tensor, b: torch.Tensor, v_shape: tuple[int, ...],
                                                      tmp_path: Path) -> None:
    _compare(fn, (torch.randn(x_shape), a, b, torch.randn(v_shape)), tmp_path, "aten::index_put")


@pytest.mark.parametrize("accumulate", [False, True], ids=["set", "accumulate"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_index_put_with_several_tensors_every_dtype_matches_eager(dtype: torch.dtype, accumulate: bool,
                                                                  tmp_path: Path) -> None:
    x, v = _rand((3, 4, 5), dtype), _rand((2, 4) if not accumulate else (2, 5), dtype)
    fn = _setitem(lambda a, b: (a, slice(None), b)) if not accumulate else _put(lambda a, b: (a, b), True)
    _compare(fn, (x, _ix(2, 0), _ix(1, 1), v), tmp_path, "aten::index_put")  # [2, 4]: x[a, :, b] and x[a, b]


def test_index_put_with_several_tensors_out_of_range_fails_at_run(tmp_path: Path) -> None:
    x, v = torch.randn(3, 4), torch.randn(2)
    fn = _put(lambda a, b: (a, b))
    _fails_at_run(fn, (x, _ix(0, 2), _ix(3, -4), v), (x, _ix(0, 3), _ix(3, 1), v), tmp_path, "aten::index_put")


def _mask_put(x: torch.Tensor, m: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    y = x.clone()
    y[m] = v
    return y


def _mask_put_dim1(x: torch.Tensor, m: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    y = x.clone()
    y[:, m] = v
    return y


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_index_put_with_a_mask_every_dtype_matches_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    x = _rand((3, 4), dtype)
    _compare(_mask_put, (x, torch.rand(3, 4) > 0.5, _rand((), dtype)), tmp_path, "aten::index_put")


@pytest.mark.parametrize(
    "fn,x_shape,mask,v_shape",
    [
        (_mask_put, (3, 4), torch.tensor([True, False, True]), (4,)),  # rows: v broadcast over them
        (_mask_put, (3, 4), torch.tensor([True, False, True]), (2, 4)),  # rows: one per true entry
        (_mask_put, (3, 4), torch.tensor([True, False, True]), (2, 1)),
        (_mask_put, (2, 3, 2), torch.tensor([[True, False, True], [False, False, True]]), (3, 2)),
        (_mask_put_dim1, (2, 3, 2), torch.tensor([False, True, True]), (2, 2, 1)),
        (_mask_put, (3,), torch.tensor([False, False, False]), ()),
        (_mask_put, (0, 2), torch.zeros(0, dtype=torch.bool), (2,)),
    ],
    ids=["rows_broadcast", "rows_per_entry", "rows_per_entry_broadcast", "2d_mask", "mask_on_dim1", "none_true",
         "empty"],
)
def test_index_put_with_a_mask_matches_eager(fn: Callable[..., Any], x_shape: tuple[int, ...], mask: torch.Tensor,
                                             v_shape: tuple[int, ...], tmp_path: Path) -> None:
    _compare(fn, (torch.randn(x_shape), mask, torch.randn(v_shape)), tmp_path, "aten::index_put")


def test_index_put_with_a_mask_accumulates_like_eager(tmp_path: Path) -> None:
    fn = lambda x, m, v: torch.index_put(x, (m,), v, accumulate=True)  # noqa: E731
    _compare(fn, (torch.randn(3, 4), torch.rand(3, 4) > 0.5, torch.randn(())), tmp_path, "aten::index_put")


def test_index_put_with_a_mask_and_values_per_entry_fails_at_run_on_a_count_mismatch(tmp_path: Path) -> None:
    x, v = torch.randn(3, 4), torch.randn(2, 4)
    good = torch.tensor([True, False, True])
    _fails_at_run(_mask_put, (x, good, v), (x, torch.tensor([True, True, True]), v), tmp_path, "aten::index_put")
