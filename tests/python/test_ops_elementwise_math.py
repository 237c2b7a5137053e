"""Parity with PyTorch eager for the elementwise math and bitwise kernels:
acos, acosh, asin, asinh, atan, atanh, cosh, sinh, tan, log10,
log2, sign, isinf, isnan, atan2, fmod (.Tensor, .Scalar), bitwise_and /
bitwise_or / bitwise_xor (.Tensor, .Scalar), logical_xor, clamp.Tensor,
div.Scalar_mode, fill.Scalar, scalar_tensor.

Each case is a tiny module calling the public torch API; it is exported,
the ATen ops in the file are pinned, then it is saved, loaded, run through
the C++ runtime and compared with eager on the same inputs: every supported
dtype (float32, float64, int8, uint8, int16, int32, int64, bool where torch
takes it), broadcasting and type promotion, empty, 0-d and rank-8 tensors,
NaN / inf / -0.0, and data errors at run (integer division by zero).

Tolerance (tests/python/compare.py): each finite floating element within
1e-4 of its own eager value, relative (atol 0: cosh(40) ~ 1.2e17 sits
beside 1e-30 in one output, and a bound from the largest would check
nothing else); NaN and infinities in the same places; integer and bool
outputs exactly.

Run: .venv/bin/python -m pytest -q tests/python/test_ops_elementwise_math.py
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest
import torch

import tern
from compare import assert_close, assert_outputs_close
from op_testing import Fn

DTYPES = [torch.float32, torch.float64, torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64, torch.bool]
FLOATS = [torch.float32, torch.float64]
INTEGERS = [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64]


def _name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _values(dtype: torch.dtype, shape: tuple[int, ...], seed: int = 0, lo: float = -3.0, hi: float = 3.0) -> torch.Tensor:
    """Deterministic values of `dtype`: floats uniform in [lo, hi); integers
    in [lo, hi] (from 0 for uint8); bools half true."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dtype)
    low = 0 if dtype == torch.uint8 else int(lo)
    return torch.randint(low, int(hi) + 1, shape, generator=g, dtype=dtype)


def _with_specials(x: torch.Tensor, specials: list[float]) -> torch.Tensor:
    """x (1-d, floating) with its first elements replaced by `specials`."""
    x = x.clone()
    x[: len(specials)] = torch.tensor(specials, dtype=x.dtype)
    return x


SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, float("inf"), -float("inf"), float("nan"), 1e-30, 40.0, -40.0]


# Each element against its own value (atol=0): the outputs span many decades
# (cosh(40) ~ 1.2e17 beside values near 1e-30), so a bound from the largest
# output would leave every other element unchecked.
ATOL = 0.0


def _export(fn: Callable[..., Any], args: tuple[torch.Tensor, ...], ops: set[str], tmp_path: Path) -> tern.Module:
    """Exports fn(*args), checks the file runs exactly `ops`, saves and loads it."""
    program = tern.export(Fn(fn), args, partitioners=())
    used = {op for op, _ in program.op_counts}
    assert used == ops, f"expected {sorted(ops)} in the file, got {sorted(used)}"
    path = tmp_path / "model.tern"
    program.save(path)
    return tern.load(str(path))


def _run(fn: Callable[..., Any], args: tuple[torch.Tensor, ...], ops: set[str], tmp_path: Path) -> None:
    with torch.no_grad():
        want = fn(*args)
    wants = [want] if isinstance(want, torch.Tensor) else list(want)
    outs = _export(fn, args, ops, tmp_path)(*args)
    assert_outputs_close(outs, wants, atol=ATOL)


# ---------------------------------------------------------------------------
# Unary math: floating results, integer and bool inputs promote to float32

UNARY_FLOAT = {
    "acos": torch.acos,
    "acosh": torch.acosh,
    "asin": torch.asin,
    "asinh": torch.asinh,
    "atan": torch.atan,
    "atanh": torch.atanh,
    "cosh": torch.cosh,
    "sinh": torch.sinh,
    "tan": torch.tan,
    "log10": torch.log10,
    "log2": torch.log2,
}


def _unary_input(name: str, dtype: torch.dtype) -> torch.Tensor:
    """Values inside and outside the op's domain (out of it eager gives NaN)."""
    if not dtype.is_floating_point:
        return _values(dtype, (4, 5), seed=1, lo=-3, hi=9)
    lo, hi = {"acos": (-1.2, 1.2), "asin": (-1.2, 1.2), "atanh": (-1.2, 1.2), "acosh": (0.5, 6.0),
              "log10": (-0.5, 50.0), "log2": (-0.5, 50.0), "cosh": (-10.0, 10.0), "sinh": (-10.0, 10.0),
              "tan": (-1.5, 1.5)}.get(name, (-20.0, 20.0))
    return _with_specials(_values(dtype, (60,), seed=2, lo=lo, hi=hi), SPECIALS).reshape(3, 4, 5)


@pytest.mark.parametrize("name", sorted(UNARY_FLOAT))
def test_unary_float_op_matches_eager_on_every_dtype(name: str, tmp_path: Path) -> None:
    # one input per dtype (output i is DTYPES[i]), in one file
    fn = UNARY_FLOAT[name]
    _run(lambda *xs: tuple(fn(x) for x in xs), tuple(_unary_input(name, d) for d in DTYPES), {f"aten::{name}"}, tmp_path)


@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3), (1, 2, 1, 2, 1, 2, 1, 2)], ids=["0d", "empty", "empty_3d", "rank8"])
@pytest.mark.parametrize("name", ["asinh", "log2", "tan"])
def test_unary_float_op_on_edge_shapes_matches_eager(name: str, shape: tuple[int, ...], tmp_path: Path) -> None:
    _run(UNARY_FLOAT[name], (_values(torch.float32, shape, lo=0.1, hi=1.0),), {f"aten::{name}"}, tmp_path)


def test_unary_float_ops_chained_in_a_block_match_eager(tmp_path: Path) -> None:
    fn = lambda x: torch.log2(torch.cosh(torch.atan(x)) + 1) + torch.asinh(torch.sinh(x * 0.1)) - torch.log10(x.abs() + 1)
    x = _values(torch.float32, (4, 8), lo=-5, hi=5)
    _run(fn, (x,), {"aten::log2", "aten::cosh", "aten::atan", "aten::add.Scalar", "aten::add.Tensor", "aten::asinh",
                    "aten::sinh", "aten::mul.Scalar", "aten::sub.Tensor", "aten::log10", "aten::abs"}, tmp_path)


# ---------------------------------------------------------------------------
# sign, isnan, isinf


def _mixed(dtype: torch.dtype) -> torch.Tensor:
    if dtype.is_floating_point:
        return _with_specials(_values(dtype, (24,), seed=3, lo=-5, hi=5), SPECIALS).reshape(2, 3, 4)
    return _values(dtype, (2, 3, 4), seed=3, lo=-5, hi=5)


@pytest.mark.parametrize("dtype", DTYPES, ids=_name)
def test_sign_matches_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    # NaN and -0.0 give +0.0, as in torch; bool is its own sign.
    _run(torch.sign, (_mixed(dtype),), {"aten::sign"}, tmp_path)


def test_sgn_of_real_tensor_runs_sign(tmp_path: Path) -> None:
    _run(torch.sgn, (_mixed(torch.float32),), {"aten::sign"}, tmp_path)


def test_sign_of_min_int_and_extremes_matches_eager(tmp_path: Path) -> None:
    x = torch.tensor([-(2**63), 2**63 - 1, -1, 0, 1], dtype=torch.int64)
    _run(torch.sign, (x,), {"aten::sign"}, tmp_path)


@pytest.mark.parametrize("dtype", DTYPES, ids=_name)
@pytest.mark.parametrize("fn,op", [(torch.isnan, "aten::isnan"), (torch.isinf, "aten::isinf")], ids=["isnan", "isinf"])
def test_isnan_isinf_match_eager(fn: Callable[..., Any], op: str, dtype: torch.dtype, tmp_path: Path) -> None:
    _run(fn, (_mixed(dtype),), {op}, tmp_path)


@pytest.mark.parametrize("shape", [(), (0, 4), (1, 1, 2, 1, 2, 1, 1, 3)], ids=["0d", "empty", "rank8"])
def test_isnan_isinf_sign_on_edge_shapes_match_eager(shape: tuple[int, ...], tmp_path: Path) -> None:
    x = _values(torch.float64, shape)
    if x.numel():
        x.view(-1)[0] = float("nan")
    _run(lambda t: (torch.isnan(t), torch.isinf(t), torch.sign(t)), (x,),
         {"aten::isnan", "aten::isinf", "aten::sign"}, tmp_path)


def test_isnan_masks_values_in_a_model(tmp_path: Path) -> None:
    # the common use: replace NaN / inf before a reduction
    fn = lambda x: torch.where(torch.isnan(x) | torch.isinf(x), torch.zeros_like(x), x).sum(dim=1)
    x = _with_specials(_values(torch.float32, (20,)), SPECIALS).reshape(4, 5)
    _run(fn, (x,), {"aten::isnan", "aten::isinf", "aten::bitwise_or.Tensor", "aten::full_like", "aten::where.self",
                    "aten::sum.dim_IntList"}, tmp_path)


# ---------------------------------------------------------------------------
# atan2: broadcasting, promotion to a floating dtype


ATAN2_CASES = {
    "float32": (_values(torch.float32, (3, 4), seed=4), _values(torch.float32, (3, 4), seed=5)),
    "float64_broadcast": (_values(torch.float64, (2, 1, 4), seed=4), _values(torch.float64, (3, 1), seed=5)),
    "int32_int64": (_values(torch.int32, (3, 4), seed=4), _values(torch.int64, (4,), seed=5)),
    "int8_bool": (_values(torch.int8, (5,), seed=4), _values(torch.bool, (5,), seed=5)),
    "bool_bool": (_values(torch.bool, (6,), seed=4), _values(torch.bool, (6,), seed=5)),
    "uint8_int16": (_values(torch.uint8, (2, 3), seed=4), _values(torch.int16, (2, 3), seed=5)),
    "int_float64": (_values(torch.int64, (3,), seed=4), _values(torch.float64, (3,), seed=5)),
    "float32_0d_float64": (_values(torch.float32, (3,), seed=4), torch.tensor(-2.0, dtype=torch.float64)),
    "0d_0d": (torch.tensor(1.0), torch.tensor(-1.0)),
    "empty": (torch.empty(0, 3), _values(torch.float32, (3,))),
    "rank8": (_values(torch.float32, (1, 2, 1, 2, 1, 2, 1, 2)), _values(torch.float32, (2, 1), seed=1)),
    "signed_zeros_and_infs": (
        torch.tensor([0.0, -0.0, 0.0, -0.0, 1.0, -1.0, float("inf"), -float("inf"), float("nan"), 2.0]),
        torch.tensor([0.0, 0.0, -0.0, -0.0, float("inf"), -float("inf"), float("inf"), 3.0, 1.0, float("nan")]),
    ),
}


@pytest.mark.parametrize("case", sorted(ATAN2_CASES))
def test_atan2_matches_eager(case: str, tmp_path: Path) -> None:
    _run(torch.atan2, ATAN2_CASES[case], {"aten::atan2"}, tmp_path)


# ---------------------------------------------------------------------------
# fmod: C remainder, sign of the dividend


def _nonzero(dtype: torch.dtype, shape: tuple[int, ...], seed: int) -> torch.Tensor:
    x = _values(dtype, shape, seed=seed, lo=-6, hi=6)
    return torch.where(x == 0, torch.ones_like(x), x)


@pytest.mark.parametrize("dtype", FLOATS + INTEGERS, ids=_name)
def test_fmod_tensor_matches_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    a = _values(dtype, (3, 5), seed=6, lo=-20, hi=20)
    _run(torch.fmod, (a, _nonzero(dtype, (5,), seed=7)), {"aten::fmod.Tensor"}, tmp_path)


@pytest.mark.parametrize("dtype", FLOATS + INTEGERS + [torch.bool], ids=_name)
def test_fmod_scalar_matches_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    # a bool tensor with an Int gives int64, an integer tensor with 2.5 float32
    fn = lambda x: (torch.fmod(x, 3), torch.fmod(x, -4), torch.fmod(x, 2.5))
    _run(fn, (_values(dtype, (4, 6), seed=8, lo=-20, hi=20),), {"aten::fmod.Scalar"}, tmp_path)


FMOD_CASES = {
    "float_by_zero_and_specials": (
        torch.tensor([5.0, -5.0, 0.0, -0.0, float("inf"), 3.0, -7.5, 7.5, float("nan"), 1.0]),
        torch.tensor([0.0, 0.0, 2.0, 2.0, 2.0, float("inf"), 2.0, -2.0, 1.0, float("nan")]),
    ),
    "int8_min_by_minus_one": (torch.tensor([-128, 127, -7, 7], dtype=torch.int8), torch.tensor([-1, -1, 2, -2], dtype=torch.int8)),
    "int64_min_by_minus_one": (torch.tensor([-(2**63), 5], dtype=torch.int64), torch.tensor([-1, -3], dtype=torch.int64)),
    "uint8_int8_to_int16": (_values(torch.uint8, (2, 3), seed=1, hi=200), _nonzero(torch.int8, (3,), seed=2)),
    "int32_float64_broadcast": (_values(torch.int32, (4, 1), seed=1, lo=-50, hi=50), _nonzero(torch.float64, (1, 3), seed=2)),
    "float32_with_0d_int": (_values(torch.float32, (5,), seed=1, lo=-9, hi=9), torch.tensor(4)),
    "0d_0d": (torch.tensor(-7.5), torch.tensor(2.0)),
    "empty": (torch.empty(3, 0), torch.ones(1)),
    "rank8": (_values(torch.int64, (2, 1, 2, 1, 2, 1, 2, 1), lo=-30, hi=30), _nonzero(torch.int64, (2, 1), seed=2)),
}


@pytest.mark.parametrize("case", sorted(FMOD_CASES))
def test_fmod_tensor_edge_cases_match_eager(case: str, tmp_path: Path) -> None:
    _run(torch.fmod, FMOD_CASES[case], {"aten::fmod.Tensor"}, tmp_path)


def test_fmod_integer_by_zero_fails_at_run(tmp_path: Path) -> None:
    a, b = _values(torch.int32, (2, 3), lo=-9, hi=9), torch.tensor([1, 2, 3], dtype=torch.int32)
    module = _export(torch.fmod, (a, b), {"aten::fmod.Tensor"}, tmp_path)
    with pytest.raises(ValueError, match="ExecutionFailed"):
        module(a, torch.tensor([1, 0, 3], dtype=torch.int32))
    assert_close(module(a, b)[0], torch.fmod(a, b), atol=ATOL)


def test_fmod_integer_by_zero_scalar_fails_at_run(tmp_path: Path) -> None:
    a = _values(torch.int64, (4,), lo=-9, hi=9)
    module = _export(lambda x: torch.fmod(x, 0), (a,), {"aten::fmod.Scalar"}, tmp_path)
    with pytest.raises(ValueError, match="ExecutionFailed"):
        module(a)


# ---------------------------------------------------------------------------
# bitwise_and / bitwise_or / bitwise_xor

BITWISE = {"and": (torch.bitwise_and, lambda a, b: a & b), "or": (torch.bitwise_or, lambda a, b: a | b),
           "xor": (torch.bitwise_xor, lambda a, b: a ^ b)}


def _bits(dtype: torch.dtype, shape: tuple[int, ...], seed: int) -> torch.Tensor:
    if dtype == torch.bool:
        return _values(dtype, shape, seed=seed)
    info = torch.iinfo(dtype)
    g = torch.Generator().manual_seed(seed)
    return torch.randint(info.min, info.max, shape, generator=g, dtype=dtype)


@pytest.mark.parametrize("dtype", INTEGERS + [torch.bool], ids=_name)
@pytest.mark.parametrize("op", sorted(BITWISE))
def test_bitwise_tensor_matches_eager(op: str, dtype: torch.dtype, tmp_path: Path) -> None:
    fn, operator_fn = BITWISE[op]
    a, b = _bits(dtype, (3, 4), seed=1), _bits(dtype, (3, 4), seed=2)
    _run(fn, (a, b), {f"aten::bitwise_{op}.Tensor"}, tmp_path)
    _run(operator_fn, (a, b[0]), {f"aten::bitwise_{op}.Tensor"}, tmp_path)  # broadcast row


@pytest.mark.parametrize("dtype", INTEGERS + [torch.bool], ids=_name)
@pytest.mark.parametrize("op", sorted(BITWISE))
def test_bitwise_scalar_matches_eager(op: str, dtype: torch.dtype, tmp_path: Path) -> None:
    # uint8 & 300 is uint8 & 44 (the Int wraps to the result dtype); bool & 5 is int64
    fn = BITWISE[op][1]
    _run(lambda x: tuple(fn(x, other) for other in (5, -3, 300, True)), (_bits(dtype, (2, 5), seed=3),),
         {f"aten::bitwise_{op}.Scalar"}, tmp_path)


BITWISE_CASES = {
    "int8_uint8_to_int16": (_bits(torch.int8, (4,), 1), _bits(torch.uint8, (4,), 2)),
    "int32_int64": (_bits(torch.int32, (2, 3), 1), _bits(torch.int64, (3,), 2)),
    "bool_int16": (_bits(torch.bool, (3, 1), 1), _bits(torch.int16, (1, 4), 2)),
    "int32_with_0d_int64": (_bits(torch.int32, (5,), 1), torch.tensor(2**40 + 6)),
    "0d_0d": (torch.tensor(12), torch.tensor(10)),
    "empty": (torch.empty(0, 2, dtype=torch.int64), _bits(torch.int64, (2,), 2)),
    "rank8": (_bits(torch.uint8, (1, 2, 1, 2, 1, 2, 1, 2), 1), _bits(torch.uint8, (2, 1, 1), 2)),
}


@pytest.mark.parametrize("op", sorted(BITWISE))
@pytest.mark.parametrize("case", sorted(BITWISE_CASES))
def test_bitwise_promotion_and_shapes_match_eager(case: str, op: str, tmp_path: Path) -> None:
    _run(BITWISE[op][0], BITWISE_CASES[case], {f"aten::bitwise_{op}.Tensor"}, tmp_path)


# ---------------------------------------------------------------------------
# logical_xor: any dtypes in, bool out


@pytest.mark.parametrize("dtype", DTYPES, ids=_name)
def test_logical_xor_matches_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    a = _mixed(dtype)  # NaN counts as true
    b = _values(dtype, (3, 4), seed=9, lo=-1, hi=1)
    _run(torch.logical_xor, (a, b), {"aten::logical_xor"}, tmp_path)


LOGICAL_XOR_CASES = {
    "float32_int8": (_mixed(torch.float32), _values(torch.int8, (4,), seed=1, lo=-1, hi=1)),
    "uint8_bool": (_values(torch.uint8, (2, 3), hi=2), _values(torch.bool, (2, 1), seed=1)),
    "int64_float64": (_values(torch.int64, (3,), lo=-1, hi=1), torch.tensor([0.0, -0.0, 0.1])),
    "0d": (torch.tensor(0.0), torch.tensor(True)),
    "empty": (torch.empty(0, dtype=torch.int32), torch.ones(1)),
    "rank8": (_values(torch.bool, (1, 2, 1, 2, 1, 2, 1, 2)), _values(torch.int16, (2, 1), lo=-1, hi=1)),
}


@pytest.mark.parametrize("case", sorted(LOGICAL_XOR_CASES))
def test_logical_xor_mixed_dtypes_and_shapes_match_eager(case: str, tmp_path: Path) -> None:
    _run(torch.logical_xor, LOGICAL_XOR_CASES[case], {"aten::logical_xor"}, tmp_path)


# ---------------------------------------------------------------------------
# clamp with tensor bounds


@pytest.mark.parametrize("dtype", FLOATS + INTEGERS, ids=_name)
def test_clamp_tensor_bounds_match_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    x = _values(dtype, (3, 4), seed=1, lo=-10, hi=10)
    lo, hi = _values(dtype, (4,), seed=2, lo=-5, hi=0), _values(dtype, (3, 1), seed=3, lo=0, hi=6)
    _run(torch.clamp, (x, lo, hi), {"aten::clamp.Tensor"}, tmp_path)


@pytest.mark.parametrize("dtype", DTYPES, ids=_name)
def test_clamp_tensor_one_bound_matches_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    # one bound is torch's maximum / minimum: bool is allowed there
    x, bound = _values(dtype, (3, 4), seed=1, lo=-10, hi=10), _values(dtype, (3, 4), seed=2, lo=-3, hi=3)
    _run(lambda a, b: torch.clamp(a, min=b), (x, bound), {"aten::clamp.Tensor"}, tmp_path)
    _run(lambda a, b: torch.clamp(a, max=b), (x, bound), {"aten::clamp.Tensor"}, tmp_path)
    _run(torch.clamp_min, (x, bound), {"aten::clamp.Tensor"}, tmp_path)


NAN_X = torch.tensor([1.0, float("nan"), 3.0, -2.0, 5.0, 0.5])
CLAMP_CASES: dict[str, tuple[Callable[..., Any], tuple[torch.Tensor, ...]]] = {
    # a NaN bound gives NaN at its element only; a NaN in self stays NaN
    "nan_bounds": (torch.clamp, (NAN_X, torch.tensor([float("nan"), 0, 5, 0, 0, 0]), torch.tensor([2, 2, 2, float("nan"), 4, 1]))),
    "nan_min_only": (lambda x, lo: torch.clamp(x, min=lo), (NAN_X, torch.tensor([float("nan"), 0, 5, 0, 0, 0]))),
    "nan_max_only": (lambda x, hi: torch.clamp(x, max=hi), (NAN_X, torch.tensor([2, 2, 2, float("nan"), 4, 1.0]))),
    "min_above_max": (torch.clamp, (_values(torch.float32, (5,)), torch.full((5,), 2.0), torch.full((5,), -1.0))),
    # out takes the broadcast shape of all three, larger than self
    "bounds_widen_out": (torch.clamp, (_values(torch.float32, (4,)), _values(torch.float32, (3, 1), seed=1, lo=-3, hi=0),
                                       _values(torch.float32, (2, 1, 1), seed=2, lo=0, hi=3))),
    "int32_float_bounds": (torch.clamp, (_values(torch.int32, (2, 5), lo=-9, hi=9), torch.tensor([-2.5]), torch.tensor([3.5]))),
    "uint8_int64_bounds": (torch.clamp, (_values(torch.uint8, (6,), hi=20), torch.tensor([-1]), torch.tensor([9]))),
    "bool_int_bound": (lambda x, lo: torch.clamp(x, min=lo), (_values(torch.bool, (4,)), torch.tensor(2))),
    "float32_0d_float64_bounds": (torch.clamp, (_values(torch.float32, (5,)), torch.tensor(-1.0, dtype=torch.float64),
                                                torch.tensor(1.0, dtype=torch.float64))),
    "int64_0d_self": (torch.clamp, (torch.tensor(7), _values(torch.int64, (3,), lo=-9, hi=9), torch.tensor([5]))),
    "0d": (torch.clamp, (torch.tensor(7.5), torch.tensor(-1.0), torch.tensor(2.0))),
    "empty": (torch.clamp, (torch.empty(0, 3), torch.zeros(3), torch.ones(1))),
    "rank8": (torch.clamp, (_values(torch.float64, (1, 2, 1, 2, 1, 2, 1, 2)), _values(torch.float64, (2, 1), lo=-2, hi=0),
                            _values(torch.float64, (2,), lo=0, hi=2))),
}


@pytest.mark.parametrize("case", sorted(CLAMP_CASES))
def test_clamp_tensor_edge_cases_match_eager(case: str, tmp_path: Path) -> None:
    fn, args = CLAMP_CASES[case]
    _run(fn, args, {"aten::clamp.Tensor"}, tmp_path)


# ---------------------------------------------------------------------------
# div with a rounding mode and a Scalar divisor


@pytest.mark.parametrize("dtype", FLOATS + INTEGERS, ids=_name)
def test_div_scalar_rounding_mode_matches_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    # an Int divisor keeps the dtype, 2.5 makes an integer tensor float32
    x = _values(dtype, (3, 5), seed=4, lo=-20, hi=20)
    fn = lambda t: tuple(torch.div(t, other, rounding_mode=mode) for mode in ("floor", "trunc") for other in (3, -4, 2.5))
    _run(fn, (x,), {"aten::div.Scalar_mode"}, tmp_path)


def test_floor_divide_operator_uses_scalar_mode(tmp_path: Path) -> None:
    x = _values(torch.int64, (2, 6), lo=-20, hi=20)
    _run(lambda t: t // 3, (x,), {"aten::div.Scalar_mode"}, tmp_path)


DIV_CASES = {
    "int8_min_by_minus_one": (torch.tensor([-128, 127, -7], dtype=torch.int8), -1, "trunc"),
    "int64_min_floor_by_minus_one": (torch.tensor([-(2**63), 9], dtype=torch.int64), -1, "floor"),
    "uint8_by_wrapped_int": (torch.tensor([7, 249, 0], dtype=torch.uint8), -1, "trunc"),  # -1 is 255 as uint8
    "float_by_zero": (torch.tensor([1.0, -1.0, 0.0, float("nan")]), 0.0, "floor"),
    "float_specials_trunc": (torch.tensor([float("inf"), -7.5, -0.5, 0.5, float("nan")]), -2, "trunc"),
    "bool_with_int": (torch.tensor([True, False]), 2, "floor"),
    "0d": (torch.tensor(-7), 2, "floor"),
    "empty": (torch.empty(0, 4), 2.0, "trunc"),
    "rank8": (_values(torch.int32, (1, 2, 1, 2, 1, 2, 1, 2), lo=-30, hi=30), 4, "floor"),
}


@pytest.mark.parametrize("case", sorted(DIV_CASES))
def test_div_scalar_mode_edge_cases_match_eager(case: str, tmp_path: Path) -> None:
    x, other, mode = DIV_CASES[case]
    _run(lambda t: torch.div(t, other, rounding_mode=mode), (x,), {"aten::div.Scalar_mode"}, tmp_path)


def test_div_scalar_mode_integer_by_zero_fails_at_run(tmp_path: Path) -> None:
    x = _values(torch.int32, (5,), lo=-9, hi=9)
    module = _export(lambda t: torch.div(t, 0, rounding_mode="floor"), (x,), {"aten::div.Scalar_mode"}, tmp_path)
    with pytest.raises(ValueError, match="ExecutionFailed"):
        module(x)


def test_div_tensor_mode_with_tensor_divisor_stays_tensor_mode(tmp_path: Path) -> None:
    a, b = _values(torch.int64, (3, 4), lo=-20, hi=20), _nonzero(torch.int64, (4,), seed=1)
    _run(lambda x, y: torch.div(x, y, rounding_mode="floor"), (a, b), {"aten::div.Tensor_mode"}, tmp_path)


# ---------------------------------------------------------------------------
# fill.Scalar and scalar_tensor


@pytest.mark.parametrize("dtype", DTYPES, ids=_name)
def test_fill_matches_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    # uint8 takes -1 as 255, integer dtypes truncate 2.7, bool is value != 0
    fn = lambda t: tuple(torch.fill(t, value) for value in (3, -1, 2.7, True))
    _run(fn, (_values(dtype, (2, 3, 4)),), {"aten::fill.Scalar"}, tmp_path)


@pytest.mark.parametrize("shape", [(), (0, 3), (1, 2, 1, 2, 1, 2, 1, 2)], ids=["0d", "empty", "rank8"])
def test_fill_in_place_on_edge_shapes_matches_eager(shape: tuple[int, ...], tmp_path: Path) -> None:
    _run(lambda t: t.clone().fill_(-2.5) * t, (_values(torch.float32, shape),),
         {"aten::clone", "aten::fill.Scalar", "aten::mul.Tensor"}, tmp_path)


def test_fill_value_that_does_not_fit_fails_at_export(tmp_path: Path) -> None:
    # eager refuses to fill an int8 tensor with 300 only when it runs; the
    # kernel refuses the file at load, which export checks
    x = torch.zeros(3, dtype=torch.int8)
    with pytest.raises(tern.ExportError, match="does not fit"):
        tern.export(Fn(lambda t: torch.ops.aten.fill.Scalar(t, 300)), (x,), partitioners=())


@pytest.fixture
def no_constant_folding(monkeypatch: pytest.MonkeyPatch) -> None:
    """scalar_tensor reads no tensor, so fold_constants computes it at export
    time; without that pass the op stays in the file and the kernel runs."""
    import tern.passes as passes

    run_passes = passes.run_passes
    kept = tuple(p for p in passes.DEFAULT_PASSES if p is not passes.fold_constants)
    monkeypatch.setattr(passes, "run_passes", lambda gm: run_passes(gm, kept))


@pytest.mark.parametrize("dtype", [None, *DTYPES], ids=lambda d: "default" if d is None else _name(d))
def test_scalar_tensor_matches_eager(dtype: torch.dtype | None, tmp_path: Path, no_constant_folding: None) -> None:
    # without dtype: float32 whatever the Scalar; uint8 takes -1 as 255
    kwargs = {} if dtype is None else {"dtype": dtype}
    fn = lambda t: tuple(torch.scalar_tensor(value, **kwargs) for value in (5, -1, 1.5, True))
    _run(fn, (torch.zeros(3),), {"aten::scalar_tensor"}, tmp_path)


def test_where_with_number_operand_uses_scalar_tensor(tmp_path: Path, no_constant_folding: None) -> None:
    x = _values(torch.float32, (3, 4))
    _run(lambda t: torch.where(t > 0, t, -1.5), (x,), {"aten::gt.Scalar", "aten::scalar_tensor", "aten::where.self"},
         tmp_path)
