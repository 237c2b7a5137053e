"""Parity with PyTorch eager for the reduction, scan and sorting kernels
(batch 3): cumsum, prod (all, dim_int), var (correction, dim) and std
through it, any (all, dim, dims), mean (all), sort (default, stable), topk.

Each case is a tiny module calling the public torch API; it is exported,
checked to run the expected ATen op, saved, loaded, run through the C++
runtime and compared with eager on the same inputs.

Tolerance (tests/python/compare.py): floats within 1e-4 of each output's own
largest magnitude plus 1e-4 of each element (no floor at 1: a variance of
8e-6 is checked at 8e-10), NaN and infinities in the same places; integers,
bools and indices exactly.

Run: .venv/bin/python -m pytest -q tests/python/test_ops_reductions.py
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import torch

import tern
from compare import assert_outputs_close
from op_testing import Fn

INTS = [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64]
FLOATS = [torch.float32, torch.float64]
ALL = [*FLOATS, *INTS, torch.bool]
RANK8 = (2, 1, 3, 1, 2, 2, 1, 3)
# x.var(dim) exports as aten::var.dim, x.var() and torch.var(x, dim, correction=c) as
# aten::var.correction.
VAR = {"aten::var.correction", "aten::var.dim"}


def _g() -> torch.Generator:
    return torch.Generator().manual_seed(0)


def _make(shape: tuple[int, ...], dtype: torch.dtype, low: int = -9, high: int = 10) -> torch.Tensor:
    """Random values of `dtype`: normal floats, integers in [low, high) (uint8 from 0), bools."""
    if dtype.is_floating_point:
        return torch.randn(shape, generator=_g(), dtype=dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=_g()).bool()
    return torch.randint(max(low, 0) if dtype == torch.uint8 else low, high, shape, generator=_g(), dtype=dtype)


def _run(fn: Callable[..., Any], args: tuple[torch.Tensor, ...], ops: set[str], tmp_path: Path,
         threads: int | None = 1, atol: float | None = None,
         want_fn: Callable[..., Any] | None = None) -> list[np.ndarray]:
    """Exports Fn(fn), checks that `ops` are in the file (for VAR: one of them), runs it, compares
    every output with eager (compare.py: relative to each output's own scale unless `atol`), or
    with `want_fn` where eager is not the oracle."""
    model = Fn(fn).eval()
    with torch.no_grad():
        want = model(*args) if want_fn is None else want_fn(*args)
    wants = [want] if isinstance(want, torch.Tensor) else list(want)
    program = tern.export(model, args, partitioners=())
    used = {op for op, _ in program.op_counts}
    assert (ops & used if ops is VAR else ops <= used), f"expected {sorted(ops)} in the file, got {sorted(used)}"
    path = tmp_path / "model.tern"
    program.save(path)
    got = tern.load(str(path), threads=threads)(*args)
    assert_outputs_close(got, wants, atol=atol)
    return got


# ---------------------------------------------------------------------------
# cumsum


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_cumsum_each_dtype_matches_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    x = _make((3, 4, 5), dtype)
    _run(lambda t: (t.cumsum(0), t.cumsum(1), t.cumsum(-1)), (x,), {"aten::cumsum"}, tmp_path)


def test_cumsum_integers_and_bools_accumulate_in_int64(tmp_path: Path) -> None:
    x = torch.full((300,), 100, dtype=torch.int8)  # int8 would wrap at the second element
    b = torch.ones(1000, dtype=torch.bool)
    got = _run(lambda t, u: (t.cumsum(0), u.cumsum(0)), (x, b), {"aten::cumsum"}, tmp_path)
    assert got[0].dtype == np.int64 and got[0][-1] == 30000 and got[1][-1] == 1000


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.int32, torch.int16, torch.int8], ids=str)
def test_cumsum_dtype_argument_converts_first(dtype: torch.dtype, tmp_path: Path) -> None:
    x = _make((4, 6), torch.int64, -100, 100)
    f = torch.randn(4, 6, generator=_g()) * 50
    _run(lambda t, u: (t.cumsum(1, dtype=dtype), u.cumsum(0, dtype=dtype)), (x, f), {"aten::cumsum"}, tmp_path)


def test_int16_conversions_wrap_as_torch(tmp_path: Path) -> None:
    # cumsum converts through util/copy.h's select_convert, which _to_copy shares.
    x = torch.tensor([70000.5, -1.0, 40000.0, -40000.7, 300.0, -129.0])
    _run(lambda t: (t.to(torch.int16), t.to(torch.int16).to(torch.float32), t.cumsum(0, dtype=torch.int16)), (x,),
         {"aten::_to_copy", "aten::cumsum"}, tmp_path)


def test_cumsum_int8_dtype_wraps_as_torch(tmp_path: Path) -> None:
    x = torch.full((10,), 100, dtype=torch.int8)
    _run(lambda t: t.cumsum(0, dtype=torch.int8), (x,), {"aten::cumsum"}, tmp_path)


def test_cumsum_float32_sums_in_double_over_long_rows(tmp_path: Path) -> None:
    x = torch.rand(3, 200000, generator=_g()) + 1000
    _run(lambda t: t.cumsum(1), (x,), {"aten::cumsum"}, tmp_path)
    y = torch.rand(3000, 1500, generator=_g())  # strided dim, more than one accumulator block
    _run(lambda t: t.cumsum(0), (y,), {"aten::cumsum"}, tmp_path)


def test_cumsum_zero_d_empty_and_rank_8(tmp_path: Path) -> None:
    _run(lambda t: t.cumsum(0), (torch.tensor(2.5),), {"aten::cumsum"}, tmp_path)
    _run(lambda t: t.cumsum(-1), (torch.tensor(7, dtype=torch.int32),), {"aten::cumsum"}, tmp_path)
    _run(lambda t: (t.cumsum(0), t.cumsum(1)), (torch.randn(0, 3),), {"aten::cumsum"}, tmp_path)
    x = _make(RANK8, torch.float32)
    _run(lambda t: (t.cumsum(0), t.cumsum(4), t.cumsum(7)), (x,), {"aten::cumsum"}, tmp_path)


def test_cumsum_propagates_nan_and_inf(tmp_path: Path) -> None:
    x = torch.tensor([[1.0, float("nan"), 2.0], [float("inf"), 1.0, float("-inf")]])
    _run(lambda t: (t.cumsum(1), t.cumsum(0)), (x,), {"aten::cumsum"}, tmp_path)


# ---------------------------------------------------------------------------
# prod


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_prod_each_dtype_matches_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    x = _make((3, 4, 5), dtype, -3, 4)
    _run(lambda t: (t.prod(), t.prod(1), t.prod(-1, keepdim=True), t.prod(0)), (x,),
         {"aten::prod", "aten::prod.dim_int"}, tmp_path)


@pytest.mark.parametrize("dtype", [torch.float64, torch.int32, torch.bool, torch.int8], ids=str)
def test_prod_dtype_argument(dtype: torch.dtype, tmp_path: Path) -> None:
    x = _make((4, 6), torch.int32, -3, 4)
    f = torch.randn(4, 6, generator=_g()).abs() + 0.5
    fns = [lambda t, u: t.prod(dtype=dtype), lambda t, u: t.prod(1, dtype=dtype)]
    if dtype.is_floating_point:
        fns += [lambda t, u: u.prod(0, dtype=dtype)]
    _run(lambda t, u: tuple(fn(t, u) for fn in fns), (x, f), {"aten::prod", "aten::prod.dim_int"}, tmp_path)


def test_prod_integers_wrap_as_torch(tmp_path: Path) -> None:
    x = torch.full((3, 70), 3, dtype=torch.int64)  # 3**70 overflows int64
    y = torch.full((5, 40), -7, dtype=torch.int32)
    _run(lambda t, u: (t.prod(1), u.prod(), u.prod(0), u.prod(1, dtype=torch.int32)), (x, y),
         {"aten::prod", "aten::prod.dim_int"}, tmp_path)


def test_prod_floats_overflow_zero_and_nan(tmp_path: Path) -> None:
    x = torch.tensor([[1e30, 1e30, 2.0], [0.0, float("inf"), 1.0], [float("nan"), 0.0, 3.0], [-0.5, 4.0, -2.0]])
    _run(lambda t: (t.prod(1), t.prod(0), t.prod()), (x,), {"aten::prod", "aten::prod.dim_int"}, tmp_path)


def test_prod_zero_d_empty_and_rank_8(tmp_path: Path) -> None:
    _run(lambda t: (t.prod(), t.prod(0), t.prod(-1, keepdim=True)), (torch.tensor(-1.5),),
         {"aten::prod", "aten::prod.dim_int"}, tmp_path)
    _run(lambda t: (t.prod(), t.prod(0), t.prod(1)), (torch.randn(0, 3),), {"aten::prod", "aten::prod.dim_int"},
         tmp_path)
    x = torch.rand(RANK8, generator=_g()) + 0.5
    _run(lambda t: (t.prod(), t.prod(0), t.prod(5, keepdim=True), t.prod(7)), (x,),
         {"aten::prod", "aten::prod.dim_int"}, tmp_path)


# ---------------------------------------------------------------------------
# var, std


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_var_dims_corrections_and_keepdim(dtype: torch.dtype, tmp_path: Path) -> None:
    x = _make((3, 4, 5, 6), dtype)
    _run(lambda t: (t.var(), t.var(1), t.var((0, 2)), t.var((-1, 1), keepdim=True), t.var(0, unbiased=False),
                    torch.var(t, dim=(1, 3), correction=2), torch.var(t, dim=None, correction=0.5),
                    torch.var(t, dim=[3, 0, 2], correction=0, keepdim=True)),
         (x,), {"aten::var.correction", "aten::var.dim"}, tmp_path)


def test_var_keeps_digits_under_a_large_mean(tmp_path: Path) -> None:
    # The one-pass sum-of-squares formula would lose every digit of the variance.
    x = torch.rand(4, 3000, generator=_g(), dtype=torch.float64) + 1e8
    y = torch.rand(3000, 4, generator=_g()) * 0.01 + 1e4
    _run(lambda t, u: (t.var(1), u.var(0)), (x, y), VAR, tmp_path)
    # Over all 12000 elements eager float32 loses the digits itself: 9.62e-6 where float64 (and
    # tern) give 8.41e-6 (the old bound, absolute 1e-4, passed either, or 0). The oracle is float64.
    _run(lambda u: u.var(), (y,), VAR, tmp_path, want_fn=lambda u: u.double().var().float())


def test_var_with_correction_at_or_above_count_is_inf_or_nan(tmp_path: Path) -> None:
    x = torch.tensor([[1.0, 2.0], [3.0, 3.0]])
    _run(lambda t: (t.var(1, correction=2), t.var(1, correction=3), t.var(0, correction=5), t[:, :1].var(1)),
         (x,), VAR, tmp_path)


def test_var_zero_d_empty_rank_8_and_nan(tmp_path: Path) -> None:
    _run(lambda t: (t.var(), t.var(correction=0), t.var(0)), (torch.tensor(3.0),), VAR,
         tmp_path)
    _run(lambda t: (t.var(1), t.var(0), t.var()), (torch.randn(2, 0),), VAR, tmp_path)
    _run(lambda t: (t.var(), t.var((0, 3, 7)), t.var(5, keepdim=True)), (_make(RANK8, torch.float32),),
         VAR, tmp_path)
    x = torch.tensor([[1.0, float("nan"), 2.0], [float("inf"), 1.0, 0.0], [1.0, 2.0, 4.0]])
    _run(lambda t: (t.var(1), t.var(0)), (x,), VAR, tmp_path)


def test_var_dim_overload_matches_eager(tmp_path: Path) -> None:
    # torch's Python API reaches var.correction; var.dim is reachable through the op itself.
    x = _make((3, 4, 5), torch.float32)
    _run(lambda t: (torch.ops.aten.var.dim(t, [1], True, False), torch.ops.aten.var.dim(t, [0, 2], False, True),
                    torch.ops.aten.var.dim(t, None)),
         (x,), {"aten::var.dim"}, tmp_path)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_std_exports_as_var_and_sqrt(dtype: torch.dtype, tmp_path: Path) -> None:
    x = _make((4, 5, 6), dtype)
    _run(lambda t: (t.std(), t.std(1), torch.std(t, dim=(0, 2), correction=0, keepdim=True),
                    (t - t.mean(-1, keepdim=True)) / t.std(-1, keepdim=True)),
         (x,), {"aten::var.correction", "aten::sqrt"}, tmp_path)


def test_var_rejects_integer_self() -> None:
    with pytest.raises(tern.ExportError, match=r"aten::var.correction: int32 is not supported \(it takes float32"):
        tern.export(Fn(lambda t: torch.ops.aten.var.correction(t, [0])), (torch.ones(3, dtype=torch.int32),),
                    partitioners=())


# ---------------------------------------------------------------------------
# any


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_any_each_dtype_matches_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    x = _make((3, 4, 5), dtype, -1, 2)
    x[1] = 0
    _run(lambda t: (t.any(), t.any(1), t.any(dim=(0, 2)), t.any(dim=(-1, 0), keepdim=True)), (x,),
         {"aten::any", "aten::any.dim", "aten::any.dims"}, tmp_path)


def test_any_negative_zero_is_zero_and_nan_is_not(tmp_path: Path) -> None:
    x = torch.tensor([[-0.0, 0.0], [float("nan"), 0.0], [0.0, -1e-30]])
    _run(lambda t: (t.any(), t.any(dim=(1,)), t.any(dim=(0, 1))), (x,), {"aten::any", "aten::any.dims"}, tmp_path)


def test_any_dims_none_reduces_all_and_empty_list_none(tmp_path: Path) -> None:
    x = torch.tensor([[0, 3, 0], [0, 0, 0]], dtype=torch.uint8)
    got = _run(lambda t: (torch.any(t, dim=None), torch.any(t, dim=()), torch.any(t, dim=(), keepdim=True)),
               (x,), {"aten::any.dims"}, tmp_path)
    assert got[1].shape == (2, 3) and got[1].dtype == np.uint8


def test_any_zero_d_empty_and_rank_8(tmp_path: Path) -> None:
    _run(lambda t: (t.any(), t.any(0), t.any(dim=(0,))), (torch.tensor(0.5),), {"aten::any"}, tmp_path)
    _run(lambda t: (t.any(), t.any(0), t.any(dim=(1,)), t.any(dim=(0,))), (torch.randn(0, 3),), {"aten::any"},
         tmp_path)
    x = _make(RANK8, torch.int32, 0, 2)
    _run(lambda t: (t.any(), t.any(dim=(1, 3, 6)), t.any(dim=(0, 7), keepdim=True), t.any(4)), (x,),
         {"aten::any", "aten::any.dims"}, tmp_path)


# ---------------------------------------------------------------------------
# mean over every element


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_mean_all_matches_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    x = _make((3, 4, 5), dtype)
    program_ops = {"aten::mean"}
    _run(lambda t: (t.mean(), torch.mean(t, dtype=torch.float64)), (x,), program_ops, tmp_path)


def test_mean_all_of_integers_with_dtype(tmp_path: Path) -> None:
    x = _make((7, 9), torch.int64)
    _run(lambda t: (t.mean(dtype=torch.float32), (t > 0).mean(dtype=torch.float64)), (x,), {"aten::mean"}, tmp_path)


def test_mean_all_zero_d_empty_rank_8_and_full_dim_form(tmp_path: Path) -> None:
    _run(lambda t: t.mean(), (torch.tensor(4.0),), {"aten::mean"}, tmp_path)
    _run(lambda t: t.mean(), (torch.randn(0, 3),), {"aten::mean"}, tmp_path)  # NaN, as torch
    x = _make(RANK8, torch.float32)
    _run(lambda t: (t.mean(), t.mean(dim=(0, 1, 2, 3, 4, 5, 6, 7)), t.mean((1, 5))), (x,),
         {"aten::mean", "aten::mean.dim"}, tmp_path)


def test_mean_all_in_a_cond_predicate(tmp_path: Path) -> None:
    x = torch.randn(3, 4, generator=_g())
    _run(lambda t: torch.cond(t.mean() > 0, lambda v: v * 2, lambda v: v - 1, (t,)), (x,), {"aten::mean"},
         tmp_path)


# ---------------------------------------------------------------------------
# sort


def _distinct(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """A random permutation of distinct values of `dtype` (no ties)."""
    n = int(np.prod(shape))
    limit = {torch.int8: 120, torch.uint8: 250}.get(dtype, 10 * n)
    assert n <= limit
    values = torch.randperm(limit, generator=_g())[:n] - (limit // 2 if dtype != torch.uint8 else 0)
    return values.to(dtype).reshape(shape)


@pytest.mark.parametrize("dtype", [*FLOATS, *INTS], ids=str)
def test_sort_each_dtype_matches_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    x = _distinct((4, 5, 6), dtype)
    _run(lambda t: (*t.sort(), *t.sort(0), *t.sort(1, descending=True), *torch.sort(t, dim=-1, descending=True)),
         (x,), {"aten::sort"}, tmp_path)


def test_sort_bool_matches_eager(tmp_path: Path) -> None:
    x = _make((4, 9), torch.bool)  # short rows: even torch's unstable sort keeps ties in order
    _run(lambda t: (*t.sort(), *t.sort(0, descending=True), *torch.sort(t, stable=True, dim=1)), (x,),
         {"aten::sort", "aten::sort.stable"}, tmp_path)


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_sort_stable_keeps_equal_values_in_index_order(dtype: torch.dtype, tmp_path: Path) -> None:
    x = _make((3, 500), dtype, -3, 3)
    _run(lambda t: (*torch.sort(t, stable=True), *torch.sort(t, dim=0, stable=True, descending=True),
                    *torch.sort(t, stable=True, dim=1, descending=True)),
         (x,), {"aten::sort.stable"}, tmp_path)


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16, torch.bool], ids=str)
def test_unstable_sort_orders_ties_as_torch(dtype: torch.dtype, tmp_path: Path) -> None:
    # torch sorts these dtypes with std::sort; the kernel runs the same algorithm.
    x = _make((3, 2000), dtype, -5, 5)
    _run(lambda t: (*t.sort(), *t.sort(0, descending=True), *t.sort(1, descending=True)), (x,), {"aten::sort"},
         tmp_path)


def test_sort_nan_inf_and_signed_zeros(tmp_path: Path) -> None:
    nan, inf = float("nan"), float("inf")
    x = torch.tensor([[3.0, nan, -inf, 0.0, -0.0, inf, nan, 1.0], [nan, nan, nan, 2.0, -0.0, 0.0, -0.0, -1.0]])
    _run(lambda t: (*t.sort(), *t.sort(descending=True), *torch.sort(t, stable=True),
                    *torch.sort(t, stable=True, descending=True), *t.sort(0)),
         (x,), {"aten::sort", "aten::sort.stable"}, tmp_path)


def test_sort_zero_d_empty_rank_8_and_threads(tmp_path: Path) -> None:
    _run(lambda t: t.sort(), (torch.tensor(2.0),), {"aten::sort"}, tmp_path)
    _run(lambda t: (*t.sort(0), *t.sort(1)), (torch.randn(0, 4),), {"aten::sort"}, tmp_path)
    x = _distinct(RANK8, torch.float32)
    _run(lambda t: (*t.sort(0), *t.sort(4, descending=True), *t.sort(-1)), (x,), {"aten::sort"}, tmp_path)
    y = _make((64, 300), torch.int16, -20, 20)
    _run(lambda t: (*torch.sort(t, stable=True, dim=1), *torch.sort(t, stable=True, dim=0)), (y,),
         {"aten::sort.stable"}, tmp_path, threads=2)


# ---------------------------------------------------------------------------
# topk


@pytest.mark.parametrize("dtype", [*FLOATS, *INTS], ids=str)
def test_topk_each_dtype_matches_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    x = _distinct((4, 5, 6), dtype)
    _run(lambda t: (*t.topk(3), *t.topk(2, 0), *t.topk(4, 1, largest=False), *t.topk(6, -1, largest=False),
                    *t.topk(1, 2)),
         (x,), {"aten::topk"}, tmp_path)


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("dtype", [torch.int64, torch.float32, torch.int8], ids=str)
def test_topk_orders_ties_as_torch(dtype: torch.dtype, largest: bool, tmp_path: Path) -> None:
    # k * 64 <= n: a partial sort; k * 64 > n: nth_element, then a sort of the first k - 1 (sorted=True).
    x = _make((3, 700), dtype, -4, 4)
    _run(lambda t: (*t.topk(5, largest=largest), *t.topk(50, largest=largest), *t.topk(3, 0, largest=largest)),
         (x,), {"aten::topk"}, tmp_path)


def test_topk_unsorted_matches_eager(tmp_path: Path) -> None:
    x = _distinct((3, 40), torch.float32)
    _run(lambda t: (*t.topk(10, sorted=False), *t.topk(2, sorted=False), *t.topk(7, largest=False, sorted=False)),
         (x,), {"aten::topk"}, tmp_path)


def test_topk_nan_counts_as_largest(tmp_path: Path) -> None:
    nan = float("nan")
    x = torch.tensor([[3.0, nan, -1.0, float("inf"), 0.5, nan], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]])
    _run(lambda t: (*t.topk(3), *t.topk(3, largest=False), *t.topk(1, 0), *t.topk(6)), (x,), {"aten::topk"},
         tmp_path)


def test_topk_zero_d_k_zero_empty_and_rank_8(tmp_path: Path) -> None:
    _run(lambda t: (*t.topk(1), *t.topk(0)), (torch.tensor(2.0),), {"aten::topk"}, tmp_path)  # k=0 too, as torch
    _run(lambda t: (*t.topk(0, 1), *t.topk(2, 1)), (torch.randn(3, 4),), {"aten::topk"}, tmp_path)
    _run(lambda t: t.topk(2, 1), (torch.randn(0, 4),), {"aten::topk"}, tmp_path)
    x = _distinct(RANK8, torch.float64)
    _run(lambda t: (*t.topk(2, 0), *t.topk(1, 3), *t.topk(2, 7, largest=False)), (x,), {"aten::topk"}, tmp_path,
         threads=2)


def test_topk_with_k_outside_the_dim_is_an_export_error_naming_k_the_size_and_the_line() -> None:
    # torch.export's own shape check refuses it (as eager does) before any node exists, with
    # "k not in range for dimension": tern names the op, k, the dim's size and the user's line
    with pytest.raises(tern.ExportError, match=r"^aten::topk: k = 5 is larger than the size 4 of dim 1 of its "
                                               r"input \[2, 4\] \(torch: k not in range for dimension\), at:\n"
                                               r'    File ".*test_ops_reductions.py", line \d+, in <lambda>\n'
                                               r"      .*torch.ops.aten.topk\(t, 5, 1\)"):
        tern.export(Fn(lambda t: torch.ops.aten.topk(t, 5, 1)), (torch.randn(2, 4),), partitioners=())
    with pytest.raises(tern.ExportError, match=r"^aten::topk: k = 3 is larger than the size 1 of dim -1 of its "
                                               r"input \[\]"):
        tern.export(Fn(lambda t: t.topk(3)), (torch.tensor(2.0),), partitioners=())
    with pytest.raises(tern.ExportError, match=r"^aten::topk: k = -1 is negative"):
        tern.export(Fn(lambda t: t.topk(-1, 0)), (torch.randn(3),), partitioners=())
