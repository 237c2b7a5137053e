"""aten::mm, aten::bmm, aten::addmm and aten::convolution in the dtypes beyond
float32 / float16 / bfloat16: float64 and the integer types for the matrix
multiplies (util/matmul.h), float64 and int64 for convolution
(util/conv_direct.h), against PyTorch eager on the same inputs.

Integer inputs span the whole range of their type, so products and sums
overflow and the test checks that results wrap modulo 2^bits as eager's do.
Each case is a tiny module, exported with tern.export (no backend), checked to
run the expected ATen op, saved, loaded (one thread and two) and run.

Tolerance (tests/python/compare.py): float64 within 1e-10 of each output's
own largest magnitude plus 1e-10 of each element, NaN and infinities in the
same places; integers exactly.

Run: PYTHONPATH=pylib .venv/bin/python -m pytest -q tests/python/test_ops_dtypes_matmul_conv.py
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import tern
from compare import assert_close
from op_testing import Fn

INTS = [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64]
MATMUL_DTYPES = [torch.float64, *INTS]
CONV_DTYPES = [torch.float64, torch.int64]


def _check(fn: Callable[..., torch.Tensor], args: tuple[torch.Tensor, ...], op: str, tmp_path: Path) -> None:
    """Exports fn(*args), checks the file runs `op`, runs it on 1 and 2 threads, compares with eager."""
    model = Fn(fn).eval()
    with torch.no_grad():
        want = model(*args)
    program = tern.export(model, args, partitioners=())
    used = {name for name, _ in program.op_counts}
    assert op in used, f"expected {op} in the file, got {sorted(used)}"
    path = tmp_path / "model.tern"
    program.save(path)
    for threads in (1, 2):
        (got,) = tern.load(str(path), threads=threads)(*args)
        assert_close(got, want, rtol=1e-10, what=f"{threads} threads")


def _data(shape: tuple[int, ...], dtype: torch.dtype, seed: int) -> torch.Tensor:
    """Normal floats; integers over the type's whole range (so sums of products overflow)."""
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, shape, generator=g, dtype=dtype)


# mm, bmm, addmm


@pytest.mark.parametrize("dtype", MATMUL_DTYPES, ids=str)
@pytest.mark.parametrize("m,k,n", [(5, 7, 3), (1, 9, 4), (6, 1, 1), (0, 4, 3), (4, 0, 3), (3, 4, 0)],
                         ids=["5x7x3", "row", "k1", "m0", "k0", "n0"])
def test_mm_matches_eager_and_wraps_integers(dtype: torch.dtype, m: int, k: int, n: int, tmp_path: Path) -> None:
    _check(torch.mm, (_data((m, k), dtype, 1), _data((k, n), dtype, 2)), "aten::mm", tmp_path)


def test_mm_of_int8_overflows_like_eager(tmp_path: Path) -> None:
    a = torch.full((2, 3), 100, dtype=torch.int8)  # each row sum is 3 * 100 * 100 = 30000 -> 48 mod 256
    b = torch.full((3, 2), 100, dtype=torch.int8)
    assert int(torch.mm(a, b)[0, 0]) == 48
    _check(torch.mm, (a, b), "aten::mm", tmp_path)


def test_mm_of_int64_wraps_modulo_2_to_the_64(tmp_path: Path) -> None:
    big = torch.tensor([[2**62, 2**62, -(2**63)]], dtype=torch.int64)
    _check(torch.mm, (big, big.T.contiguous() * 3), "aten::mm", tmp_path)


@pytest.mark.parametrize("dtype", MATMUL_DTYPES, ids=str)
@pytest.mark.parametrize("b,m,k,n", [(3, 4, 5, 2), (1, 2, 3, 4), (0, 2, 3, 4), (2, 3, 0, 4), (2, 0, 3, 4)],
                         ids=["3x4x5x2", "b1", "b0", "k0", "m0"])
def test_bmm_matches_eager_and_wraps_integers(dtype: torch.dtype, b: int, m: int, k: int, n: int,
                                              tmp_path: Path) -> None:
    _check(torch.bmm, (_data((b, m, k), dtype, 3), _data((b, k, n), dtype, 4)), "aten::bmm", tmp_path)


@pytest.mark.parametrize("dtype", MATMUL_DTYPES, ids=str)
@pytest.mark.parametrize("self_shape", [(4, 3), (3,), (1, 3), (4, 1), ()], ids=["full", "row", "1xn", "mx1", "0d"])
def test_addmm_broadcasts_self_like_eager(dtype: torch.dtype, self_shape: tuple[int, ...], tmp_path: Path) -> None:
    args = (_data(self_shape, dtype, 5), _data((4, 6), dtype, 6), _data((6, 3), dtype, 7))
    _check(lambda s, a, b: torch.addmm(s, a, b, beta=3, alpha=-2), args, "aten::addmm", tmp_path)


@pytest.mark.parametrize("dtype", MATMUL_DTYPES, ids=str)
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0, 1), (1, 0)], ids=["plain", "beta0", "alpha0"])
def test_addmm_scales_like_eager(dtype: torch.dtype, beta: int, alpha: int, tmp_path: Path) -> None:
    args = (_data((3,), dtype, 5), _data((4, 6), dtype, 6), _data((6, 3), dtype, 7))
    _check(lambda s, a, b: torch.addmm(s, a, b, beta=beta, alpha=alpha), args, "aten::addmm", tmp_path)


@pytest.mark.parametrize("dtype", INTS, ids=str)
@pytest.mark.parametrize("beta,alpha", [(2.5, -1.7), (0.5, 3.0), (1, 0.9)], ids=["trunc", "beta_to_0", "alpha_to_0"])
def test_addmm_of_integers_truncates_float_scalars_like_eager(dtype: torch.dtype, beta: float, alpha: float,
                                                              tmp_path: Path) -> None:
    if dtype == torch.uint8:  # eager refuses a negative float scalar for uint8
        alpha = abs(alpha)
    args = (_data((2, 3), dtype, 8), _data((2, 5), dtype, 9), _data((5, 3), dtype, 10))
    _check(lambda s, a, b: torch.addmm(s, a, b, beta=beta, alpha=alpha), args, "aten::addmm", tmp_path)


def test_addmm_float64_with_beta_0_ignores_nan_in_self(tmp_path: Path) -> None:
    s = torch.full((3, 2), float("nan"), dtype=torch.float64)
    args = (s, _data((3, 4), torch.float64, 11), _data((4, 2), torch.float64, 12))
    _check(lambda s, a, b: torch.addmm(s, a, b, beta=0.0, alpha=2.0), args, "aten::addmm", tmp_path)


def test_addmm_float64_with_alpha_0_ignores_inf_in_mat1(tmp_path: Path) -> None:
    a = _data((3, 4), torch.float64, 13)
    a[1, 2] = float("inf")
    args = (_data((3, 2), torch.float64, 14), a, _data((4, 2), torch.float64, 15))
    _check(lambda s, a, b: torch.addmm(s, a, b, beta=0.5, alpha=0.0), args, "aten::addmm", tmp_path)


@pytest.mark.parametrize("dtype", MATMUL_DTYPES, ids=str)
def test_addmm_with_k_0_gives_beta_self(dtype: torch.dtype, tmp_path: Path) -> None:
    args = (_data((3,), dtype, 16), _data((2, 0), dtype, 17), _data((0, 3), dtype, 18))
    _check(lambda s, a, b: torch.addmm(s, a, b, beta=3), args, "aten::addmm", tmp_path)


# convolution

CONV_CASES = {
    # name: (input shape, weight shape, keyword arguments of F.conv{1,2,3}d)
    "1d": ((2, 3, 9), (4, 3, 3), {}),
    "1d_stride_pad_dil": ((1, 2, 11), (3, 2, 3), dict(stride=2, padding=2, dilation=3)),
    "2d": ((2, 3, 6, 5), (4, 3, 3, 2), {}),
    "2d_grouped_strided": ((1, 4, 7, 8), (6, 2, 3, 3), dict(stride=(2, 1), padding=(1, 2), groups=2)),
    "2d_dilated": ((1, 2, 9, 9), (2, 2, 3, 2), dict(dilation=(2, 3), padding=1)),
    "2d_depthwise": ((2, 3, 5, 5), (3, 1, 3, 3), dict(groups=3, padding=1)),
    "2d_pointwise": ((1, 5, 4, 4), (2, 5, 1, 1), {}),
    "2d_empty_batch": ((0, 2, 4, 4), (3, 2, 3, 3), {}),
    "3d": ((1, 2, 4, 5, 4), (3, 2, 2, 3, 2), dict(stride=(1, 2, 1), padding=(1, 0, 1))),
    "3d_grouped_dilated": ((2, 4, 5, 5, 5), (2, 2, 2, 2, 2), dict(groups=2, dilation=2)),
}

CONV_TRANSPOSE_CASES = {
    # name: (input shape, weight shape [c, oc / groups, k...], keyword arguments of F.conv_transpose{1,2,3}d)
    "1d": ((2, 3, 6), (3, 4, 3), {}),
    "1d_stride_out_pad": ((1, 2, 5), (2, 3, 4), dict(stride=3, padding=1, output_padding=2)),
    "2d_grouped": ((1, 4, 4, 5), (4, 3, 3, 2), dict(groups=2, stride=2, padding=(1, 0))),
    "2d_dilated": ((2, 2, 3, 4), (2, 2, 3, 3), dict(dilation=(2, 3), stride=(1, 2), output_padding=(1, 1))),
    "3d": ((1, 2, 3, 3, 4), (2, 2, 2, 3, 2), dict(stride=2, padding=(0, 1, 0), output_padding=(1, 0, 1))),
}

_CONV = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}
_CONV_T = {3: F.conv_transpose1d, 4: F.conv_transpose2d, 5: F.conv_transpose3d}


def _conv_args(x_shape: tuple[int, ...], w_shape: tuple[int, ...], bias: int, dtype: torch.dtype
               ) -> tuple[torch.Tensor, ...]:
    x, w = _data(x_shape, dtype, 20), _data(w_shape, dtype, 21)
    return (x, w, _data((bias,), dtype, 22)) if bias else (x, w)


@pytest.mark.parametrize("dtype", CONV_DTYPES, ids=str)
@pytest.mark.parametrize("with_bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("case", list(CONV_CASES))
def test_convolution_matches_eager(case: str, with_bias: bool, dtype: torch.dtype, tmp_path: Path) -> None:
    x_shape, w_shape, kw = CONV_CASES[case]
    conv = _CONV[len(x_shape)]
    args = _conv_args(x_shape, w_shape, w_shape[0] if with_bias else 0, dtype)
    _check(lambda *a: conv(*a, **kw), args, "aten::convolution", tmp_path)


@pytest.mark.parametrize("dtype", CONV_DTYPES, ids=str)
@pytest.mark.parametrize("with_bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("case", list(CONV_TRANSPOSE_CASES))
def test_transposed_convolution_matches_eager(case: str, with_bias: bool, dtype: torch.dtype,
                                              tmp_path: Path) -> None:
    x_shape, w_shape, kw = CONV_TRANSPOSE_CASES[case]
    conv = _CONV_T[len(x_shape)]
    oc = w_shape[1] * kw.get("groups", 1)
    args = _conv_args(x_shape, w_shape, oc if with_bias else 0, dtype)
    _check(lambda *a: conv(*a, **kw), args, "aten::convolution", tmp_path)


def test_int64_convolution_wraps_modulo_2_to_the_64(tmp_path: Path) -> None:
    x = torch.full((1, 2, 3, 3), 2**40, dtype=torch.int64)
    w = torch.full((1, 2, 2, 2), 2**30 + 7, dtype=torch.int64)
    b = torch.tensor([-(2**63)], dtype=torch.int64)
    _check(F.conv2d, (x, w, b), "aten::convolution", tmp_path)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_float32_and_16_bit_transposed_and_3d_convolution_take_the_direct_path(dtype: torch.dtype,
                                                                               tmp_path: Path) -> None:
    # not the GEMM paths (util/conv.h: 1-d/2-d forward only) but util/conv_direct.h;
    # the 16-bit types staged through float32
    x2, w2 = torch.randn(2, 4, 5, 6).to(dtype), torch.randn(4, 3, 3, 2).to(dtype)
    x3, w3 = torch.randn(1, 2, 5, 4, 6).to(dtype), torch.randn(6, 1, 2, 3, 2).to(dtype)
    b = torch.randn(6).to(dtype)
    cases = [
        (lambda x, w: F.conv_transpose2d(x, w, stride=(2, 3), padding=1, output_padding=(1, 0)), (x2, w2)),
        (lambda x, w: F.conv_transpose2d(x, w, groups=2, dilation=2), (x2, w2)),
        (lambda x, w, b: F.conv3d(x, w, b, stride=(1, 2, 1), padding=(1, 0, 1), groups=2), (x3, w3, b)),
        (lambda x, w: F.conv_transpose3d(x, w.reshape(2, 3, 2, 3, 2), stride=2), (x3, w3)),
    ]
    for fn, args in cases:
        program = tern.export(Fn(fn), args, partitioners=())
        assert "aten::convolution" in dict(program.op_counts)
        program.save(tmp_path / "m.tern")
        (got,) = tern.load(str(tmp_path / "m.tern"))(*args)
        tol = {torch.float32: 1e-4, torch.float16: 4 * 2.0**-10, torch.bfloat16: 4 * 2.0**-7}[dtype]
        assert_close(got, fn(*args), rtol=tol)
