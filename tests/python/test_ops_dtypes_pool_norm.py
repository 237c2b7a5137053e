"""The dtypes of 2-d pooling, layer/group norm, relu and the pooling gradients
beyond float32: each op in each dtype its portable kernel claims in
kernels/portable/ops.def and PyTorch's CPU kernel takes, exported, run and
compared with eager on the same inputs.

Integers compare exactly; the inputs span the type's whole range (the
avg_pool2d int64 sums wrap, as eager's do). Floats through
tests/python/compare.py, relative to each output's own largest magnitude
(no floor at 1): float64 to 1e-12 (the kernels sum in double, as eager
does, in another order); the 16-bit types to 8 ulps of it
(tests/python/test_half_precision.py).
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
from compare import assert_close
from op_testing import Fn

aten = torch.ops.aten

INTS = [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64]
TOL = {torch.float64: 1e-12, torch.float32: 1e-5, torch.float16: 8 * 2.0**-10, torch.bfloat16: 8 * 2.0**-7}


def _export_and_compare(fn: Callable[..., Any], args: tuple[torch.Tensor, ...], op: str, tmp_path: Path) -> None:
    """Exports fn, checks that the file calls `op`, runs it and compares every output with eager."""
    model = Fn(fn).eval()
    with torch.no_grad():
        ref = model(*args)
    refs = [ref] if isinstance(ref, torch.Tensor) else list(ref)
    program = tern.export(model, args, partitioners=())
    used = {name for name, _ in program.op_counts}
    assert op in used, f"expected {op} in the file, got {sorted(used)}"
    program.save(tmp_path / "m.tern")
    outs = tern.load(str(tmp_path / "m.tern"))(*args)
    assert len(outs) == len(refs), f"{len(outs)} outputs, eager has {len(refs)}"
    for i, (got, want) in enumerate(zip(outs, refs)):
        assert_close(got, want, rtol=TOL.get(want.dtype, 0.0), what=f"output {i}")


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _data(shape: tuple[int, ...], dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    """Floats: normal. Integers: uniform over the whole range, with the type's
    min planted in a 3x3 corner of each plane (windows of equal minima) and
    its max beside it."""
    if dtype.is_floating_point:
        return torch.randn(*shape, generator=_gen(seed), dtype=torch.float64).to(dtype)
    info = torch.iinfo(dtype)
    x = torch.randint(info.min, info.max, shape, generator=_gen(seed), dtype=dtype)
    if x.dim() >= 2:
        x[..., :3, :3] = info.min
        x[..., :2, 3:5] = info.max
    return x


# max_pool2d_with_indices: float64 and the integer types

MAX_KWARGS = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), dilation=(2, 1)),
    dict(kernel_size=2, stride=3, padding=1, dilation=2, ceil_mode=True),
]


@pytest.mark.parametrize("dtype", [torch.float64, *INTS], ids=str)
@pytest.mark.parametrize("kwargs", MAX_KWARGS, ids=["k2", "k3_s2_p1_ceil", "k3x2_dilated", "dilated_ceil"])
def test_max_pool2d_dtypes_match_eager(kwargs: dict[str, Any], dtype: torch.dtype, tmp_path: Path) -> None:
    x = _data((2, 3, 9, 8), dtype)
    _export_and_compare(lambda x: F.max_pool2d(x, return_indices=True, **kwargs), (x,),
                        "aten::max_pool2d_with_indices", tmp_path)


def test_max_pool2d_float64_nan_wins_and_ties_keep_the_first(tmp_path: Path) -> None:
    x = torch.tensor([[[[1.0, 1.0, 2.0, float("nan")], [1.0, 0.0, float("nan"), 2.0], [-1.0, -1.0, 5.0, 5.0]]]],
                     dtype=torch.float64)
    _export_and_compare(lambda x: F.max_pool2d(x, 2, 1, return_indices=True), (x,),
                        "aten::max_pool2d_with_indices", tmp_path)


@pytest.mark.parametrize("dtype", [torch.int8, torch.int64], ids=str)
def test_max_pool2d_unbatched_integers(dtype: torch.dtype, tmp_path: Path) -> None:
    _export_and_compare(lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True), (_data((3, 7, 6), dtype),),
                        "aten::max_pool2d_with_indices", tmp_path)


# avg_pool2d: float64 and int64 (eager: int64 sum, divided truncating toward zero)

AVG_KWARGS = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=(3, 2), stride=(1, 2), padding=(1, 0), divisor_override=4),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, divisor_override=-3),
]
AVG_IDS = ["k2", "pad", "pad_no_count", "ceil", "ceil_no_count", "divisor", "negative_divisor_ceil"]


@pytest.mark.parametrize("dtype", [torch.float64, torch.int64], ids=str)
@pytest.mark.parametrize("kwargs", AVG_KWARGS, ids=AVG_IDS)
def test_avg_pool2d_dtypes_match_eager(kwargs: dict[str, Any], dtype: torch.dtype, tmp_path: Path) -> None:
    _export_and_compare(lambda x: F.avg_pool2d(x, **kwargs), (_data((2, 3, 9, 8), dtype),), "aten::avg_pool2d",
                        tmp_path)


@pytest.mark.parametrize("kwargs", AVG_KWARGS, ids=AVG_IDS)
def test_avg_pool2d_int64_small_values_round_toward_zero(kwargs: dict[str, Any], tmp_path: Path) -> None:
    # No overflow here: every window sum is exact, so this checks the division.
    x = torch.randint(-7, 8, (1, 2, 7, 9), generator=_gen(1))
    _export_and_compare(lambda x: F.avg_pool2d(x, **kwargs), (x,), "aten::avg_pool2d", tmp_path)


def test_avg_pool2d_int64_rounding_is_eager_rounding() -> None:
    # The rule the kernel follows, checked on eager itself: -7 / 2 gives -3.
    x = torch.tensor([[[[-4, -3]]]])
    assert F.avg_pool2d(x, (1, 2)).item() == -3


# _adaptive_avg_pool2d: float64


@pytest.mark.parametrize("out_size,shape", [((3, 4), (2, 3, 7, 10)), ((5, 2), (1, 2, 9, 9)), ((4, 3), (3, 8, 6))],
                         ids=["overlapping", "shrink", "unbatched"])
def test_adaptive_avg_pool2d_float64_matches_eager(out_size: tuple[int, int], shape: tuple[int, ...],
                                                    tmp_path: Path) -> None:
    _export_and_compare(lambda x: F.adaptive_avg_pool2d(x, out_size), (_data(shape, torch.float64),),
                        "aten::_adaptive_avg_pool2d", tmp_path)


# native_layer_norm, native_group_norm: float64, mean and rstd in float64 too


@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
@pytest.mark.parametrize("shape,normalized", [((4, 7), (7,)), ((2, 3, 5, 6), (5, 6)), ((3, 1, 9), (1, 9))],
                         ids=["2d", "4d_last2", "3d_single_row"])
def test_native_layer_norm_float64_matches_eager(shape: tuple[int, ...], normalized: tuple[int, ...], affine: bool,
                                                  tmp_path: Path) -> None:
    x = _data(shape, torch.float64) * 3 + 1
    args = (x, _data(normalized, torch.float64, 1), _data(normalized, torch.float64, 2)) if affine else (x,)

    def fn(x: torch.Tensor, *wb: torch.Tensor) -> Any:
        w, b = wb if wb else (None, None)
        return aten.native_layer_norm(x, list(normalized), w, b, 1e-5)

    _export_and_compare(fn, args, "aten::native_layer_norm", tmp_path)


def test_layer_norm_module_float64(tmp_path: Path) -> None:
    model = nn.LayerNorm(6).double()
    with torch.no_grad():
        model.weight.copy_(_data((6,), torch.float64, 3))
        model.bias.copy_(_data((6,), torch.float64, 4))
    _export_and_compare(model, (_data((2, 4, 6), torch.float64),), "aten::native_layer_norm", tmp_path)


@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
@pytest.mark.parametrize("shape,groups", [((2, 6, 5, 4), 3), ((3, 4, 7), 4), ((2, 4), 2)], ids=["4d", "3d", "2d"])
def test_native_group_norm_float64_matches_eager(shape: tuple[int, ...], groups: int, affine: bool,
                                                  tmp_path: Path) -> None:
    c = shape[1]
    x = _data(shape, torch.float64) * 2 - 1
    hxw = int(np.prod(shape[2:], dtype=np.int64))
    args = (x, _data((c,), torch.float64, 1), _data((c,), torch.float64, 2)) if affine else (x,)

    def fn(x: torch.Tensor, *wb: torch.Tensor) -> Any:
        w, b = wb if wb else (None, None)
        return aten.native_group_norm(x, w, b, shape[0], c, hxw, groups, 1e-5)

    _export_and_compare(fn, args, "aten::native_group_norm", tmp_path)


def test_group_norm_module_float64(tmp_path: Path) -> None:
    model = nn.GroupNorm(2, 4).double()
    _export_and_compare(model, (_data((3, 4, 5, 5), torch.float64),), "aten::native_group_norm", tmp_path)


# relu: float64, int8, uint8, int16 (and the dtypes it took before)


@pytest.mark.parametrize("dtype", [torch.float64, torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64],
                         ids=str)
def test_relu_dtypes_match_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    x = _data((3, 50), dtype)
    if dtype.is_floating_point:
        x[0, :4] = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0], dtype=dtype)
    _export_and_compare(torch.relu, (x,), "aten::relu", tmp_path)


def test_relu_of_bool_is_refused_by_eager() -> None:
    # So ops.def does not claim bool for aten::relu.
    with pytest.raises(NotImplementedError, match="Boolean inputs not supported for relu"):
        torch.relu(torch.tensor([True, False]))


# the gradients of 2-d pooling: float64, float16, bfloat16

GRAD_DTYPES = [torch.float64, torch.float16, torch.bfloat16]


@pytest.mark.parametrize("dtype", GRAD_DTYPES, ids=str)
@pytest.mark.parametrize("ceil_mode,count_include_pad,divisor", [(False, True, None), (True, False, None),
                                                                 (True, True, 3)], ids=["pad", "ceil_no_count", "divisor"])
def test_avg_pool2d_backward_dtypes_match_eager(ceil_mode: bool, count_include_pad: bool, divisor: int | None,
                                                dtype: torch.dtype, tmp_path: Path) -> None:
    x = _data((2, 3, 9, 8), dtype)
    gy = _data(tuple(F.avg_pool2d(x.float(), 3, 2, 1, ceil_mode).shape), dtype, 1)
    fn = lambda g, s: aten.avg_pool2d_backward(g, s, [3, 3], [2, 2], [1, 1], ceil_mode, count_include_pad,  # noqa: E731
                                               divisor)
    _export_and_compare(fn, (gy, x), "aten::avg_pool2d_backward", tmp_path)


@pytest.mark.parametrize("dtype", GRAD_DTYPES, ids=str)
def test_max_pool2d_with_indices_backward_dtypes_match_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    x = _data((2, 3, 10, 9), dtype)
    _, idx = F.max_pool2d(x, 3, 2, 1, dilation=2, ceil_mode=True, return_indices=True)
    gy = _data(tuple(idx.shape), dtype, 1)
    fn = lambda g, s, i: aten.max_pool2d_with_indices_backward(g, s, [3, 3], [2, 2], [1, 1], [2, 2], True, i)  # noqa: E731
    _export_and_compare(fn, (gy, x, idx), "aten::max_pool2d_with_indices_backward", tmp_path)


@pytest.mark.parametrize("dtype", GRAD_DTYPES, ids=str)
@pytest.mark.parametrize("size", [(3, 4), (7, 5)], ids=["overlapping", "grow"])
def test_adaptive_avg_pool2d_backward_dtypes_match_eager(size: tuple[int, int], dtype: torch.dtype,
                                                         tmp_path: Path) -> None:
    x = _data((2, 3, 7, 10), dtype)
    gy = _data((2, 3, *size), dtype, 1)
    _export_and_compare(lambda g, s: aten._adaptive_avg_pool2d_backward(g, s), (gy, x),
                        "aten::_adaptive_avg_pool2d_backward", tmp_path)


# empty batches

EMPTY_CASES: dict[str, tuple[Callable[..., Any], tuple[torch.Tensor, ...], str]] = {
    "max_pool2d_int8": (lambda x: F.max_pool2d(x, 2, return_indices=True), (_data((0, 2, 4, 4), torch.int8),),
                        "aten::max_pool2d_with_indices"),
    "max_pool2d_float64": (lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True),
                           (_data((0, 2, 5, 4), torch.float64),), "aten::max_pool2d_with_indices"),
    "avg_pool2d_int64": (lambda x: F.avg_pool2d(x, 2, divisor_override=3), (_data((0, 2, 4, 4), torch.int64),),
                         "aten::avg_pool2d"),
    "avg_pool2d_float64": (lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), (_data((0, 2, 5, 4), torch.float64),),
                           "aten::avg_pool2d"),
    "adaptive_float64": (lambda x: F.adaptive_avg_pool2d(x, (2, 3)), (_data((0, 2, 5, 4), torch.float64),),
                         "aten::_adaptive_avg_pool2d"),
    "layer_norm_float64": (lambda x: aten.native_layer_norm(x, [4], None, None, 1e-5),
                           (_data((0, 3, 4), torch.float64),), "aten::native_layer_norm"),
    "group_norm_float64": (lambda x: aten.native_group_norm(x, None, None, 0, 4, 6, 2, 1e-5),
                           (_data((0, 4, 2, 3), torch.float64),), "aten::native_group_norm"),
    "relu_int16": (torch.relu, (_data((0, 5), torch.int16),), "aten::relu"),
    "relu_uint8": (torch.relu, (_data((2, 0), torch.uint8),), "aten::relu"),
    "avg_pool2d_backward_float64": (lambda g, s: aten.avg_pool2d_backward(g, s, [2, 2], [2, 2], [0, 0], False, True,
                                                                          None),
                                    (_data((0, 2, 2, 2), torch.float64), _data((0, 2, 4, 4), torch.float64)),
                                    "aten::avg_pool2d_backward"),
    "adaptive_backward_float16": (lambda g, s: aten._adaptive_avg_pool2d_backward(g, s),
                                  (_data((0, 2, 2, 3), torch.float16), _data((0, 2, 4, 5), torch.float16)),
                                  "aten::_adaptive_avg_pool2d_backward"),
}


@pytest.mark.parametrize("name", sorted(EMPTY_CASES))
def test_empty_batch_matches_eager(name: str, tmp_path: Path) -> None:
    fn, args, op = EMPTY_CASES[name]
    _export_and_compare(fn, args, op, tmp_path)
