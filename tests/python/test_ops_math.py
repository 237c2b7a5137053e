"""Parity with PyTorch eager for the math kernels (batch 2): each case is a
tiny module using one public torch function, exported, saved, loaded and run
through the C++ runtime, then compared with eager on the same inputs.

Each case also pins the ATen ops the exporter emits for it, so a change in
torch's decompositions (or in which ops the runtime registers) shows up here.

Tolerance (tests/python/compare.py): each floating element of an elementwise
op within 1e-4 of its own eager value (atol 0: expm1 of 1e-3 inputs is
checked at its own scale, not at 1e-4 absolute); the MLP within 1e-4 of its
output's largest magnitude; NaN and infinities in the same places; integer
and bool outputs exactly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest
import torch
import torch.nn.functional as F

import tern
from compare import assert_close
from op_testing import Fn


def _g() -> torch.Generator:
    return torch.Generator().manual_seed(0)


def _randn(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=_g())


def _positive(*shape: int) -> torch.Tensor:
    return torch.rand(*shape, generator=_g()) * 4 + 0.1


def _ints(*shape: int, dtype: torch.dtype = torch.int32) -> torch.Tensor:
    return torch.randint(-6, 7, shape, generator=_g(), dtype=dtype)


def _halves() -> torch.Tensor:
    # -3.0, -2.5, ..., 3.0 and some non-halves: round's ties-to-even cases.
    return torch.cat([torch.arange(-6, 7) * 0.5, _randn(11) * 3]).reshape(4, 6)


# name -> (function, inputs, ops the exported file must contain exactly)
CASES: dict[str, tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...], set[str]]] = {
    "exp": (torch.exp, (_randn(3, 5),), {"aten::exp"}),
    "exp_int": (torch.exp, (_ints(7),), {"aten::exp"}),
    "exp2": (torch.exp2, (_randn(3, 5),), {"aten::exp2"}),
    "log": (torch.log, (_positive(2, 3, 4),), {"aten::log"}),
    "expm1": (torch.expm1, (_randn(3, 5) * 1e-3,), {"aten::expm1"}),  # near 0, where exp(x) - 1 loses digits
    "expm1_int": (torch.expm1, (_ints(7),), {"aten::expm1"}),
    "log1p": (torch.log1p, (_positive(2, 3, 4) * 1e-4,), {"aten::log1p"}),
    "trunc": (torch.trunc, (_halves(),), {"aten::trunc"}),
    "trunc_int": (torch.trunc, (_ints(9, dtype=torch.int64),), {"aten::trunc"}),
    "sqrt": (torch.sqrt, (_positive(17),), {"aten::sqrt"}),
    "rsqrt": (torch.rsqrt, (_positive(17),), {"aten::rsqrt"}),
    "reciprocal": (torch.reciprocal, (_positive(4, 4),), {"aten::reciprocal"}),
    "sin": (torch.sin, (_randn(300) * 5,), {"aten::sin"}),
    "cos": (torch.cos, (_randn(300) * 5,), {"aten::cos"}),
    "erf": (torch.erf, (_randn(3, 100),), {"aten::erf"}),
    "bitwise_not_bool": (lambda x: ~(x > 0), (_randn(3, 5),), {"aten::bitwise_not", "aten::gt.Scalar"}),
    "bitwise_not_int64": (torch.bitwise_not, (_ints(9, dtype=torch.int64),), {"aten::bitwise_not"}),
    "bitwise_not_uint8": (torch.bitwise_not, (torch.tensor([0, 1, 7, 255], dtype=torch.uint8),),
                          {"aten::bitwise_not"}),
    "abs": (torch.abs, (_randn(3, 5),), {"aten::abs"}),
    "abs_int": (torch.abs, (_ints(9, dtype=torch.int64),), {"aten::abs"}),
    "neg": (torch.neg, (_randn(3, 5),), {"aten::neg"}),
    "neg_operator_int": (lambda x: -x, (_ints(9),), {"aten::neg"}),
    "floor": (torch.floor, (_halves(),), {"aten::floor"}),
    "ceil": (torch.ceil, (_halves(),), {"aten::ceil"}),
    "round": (torch.round, (_halves(),), {"aten::round"}),
    "round_int": (torch.round, (_ints(5),), {"aten::round"}),
    "pow_square": (lambda x: x**2, (_randn(2, 8),), {"aten::pow.Tensor_Scalar"}),
    "pow_cube": (lambda x: torch.pow(x, 3), (_randn(2, 8),), {"aten::pow.Tensor_Scalar"}),
    "pow_half": (lambda x: x**0.5, (_positive(2, 8),), {"aten::pow.Tensor_Scalar"}),
    "pow_minus_one": (lambda x: x**-1, (_positive(2, 8),), {"aten::pow.Tensor_Scalar"}),
    "pow_general": (lambda x: x**2.7, (_positive(2, 8),), {"aten::pow.Tensor_Scalar"}),
    "torch_square": (torch.square, (_randn(2, 8),), {"aten::pow.Tensor_Scalar"}),
    "pow_int": (lambda x: x**3, (_ints(8),), {"aten::pow.Tensor_Scalar"}),
    "pow_int_to_float": (lambda x: x**0.5, (_ints(8).abs(),), {"aten::pow.Tensor_Scalar"}),
    "pow_tensor_tensor": (torch.pow, (_positive(3, 4), _randn(4)), {"aten::pow.Tensor_Tensor"}),
    "pow_scalar_base": (lambda x: 2**x, (_randn(3, 4),), {"aten::pow.Scalar"}),
    "maximum": (torch.maximum, (_randn(3, 4), _randn(1, 4) * 0.5), {"aten::maximum"}),
    "minimum": (torch.minimum, (_randn(3, 4), _randn(3, 1)), {"aten::minimum"}),
    "max_of_two": (torch.max, (_randn(5), _randn(5) + 0.1), {"aten::maximum"}),
    "minimum_int": (torch.minimum, (_ints(6), _ints(6, dtype=torch.int64) + 1), {"aten::minimum"}),
    # Floating clamps become hardtanh (passes/lower_clamp.py); integer ones reach aten::clamp.
    "clamp_int": (lambda x: torch.clamp(x, -2, 3), (_ints(4, 5),), {"aten::clamp"}),
    "clamp_min_int": (lambda x: torch.clamp(x, min=0), (_ints(12, dtype=torch.int64),), {"aten::clamp"}),
    "clamp_max_int": (lambda x: x.clamp(max=1), (_ints(12),), {"aten::clamp"}),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), (_randn(4, 6),), {"aten::leaky_relu"}),
    "leaky_relu_module": (torch.nn.LeakyReLU(), (_randn(4, 6),), {"aten::leaky_relu"}),
    "elu": (lambda x: F.elu(x, alpha=0.7), (_randn(4, 6) * 3,), {"aten::elu"}),
    "selu": (F.selu, (_randn(4, 6) * 3,), {"aten::elu"}),
    "silu": (F.silu, (_randn(4, 6) * 5,), {"aten::silu"}),
    "softplus": (F.softplus, (_randn(4, 6) * 10,), {"aten::softplus"}),
    "softplus_beta": (lambda x: F.softplus(x, beta=2.0, threshold=5.0), (_randn(4, 6) * 5,), {"aten::softplus"}),
    "mish": (F.mish, (_randn(4, 6) * 5,), {"aten::mish"}),
    # compared in the common dtype, as torch: -1 wraps to 255 in uint8
    "eq_uint8_negative_scalar": (lambda x: x == -1, (torch.tensor([0, 1, 255, 3], dtype=torch.uint8),),
                                 {"aten::eq.Scalar"}),
    "lt_int8_scalar_out_of_range": (lambda x: x < 200, (torch.tensor([-128, 0, 127], dtype=torch.int8),),
                                    {"aten::lt.Scalar"}),
    # Python's modulo: the sign of the divisor, broadcasting, int and float
    "remainder_scalar_int": (lambda x: x % 3, (_ints(13, dtype=torch.int64),), {"aten::remainder.Scalar"}),
    "remainder_negative_divisor": (lambda x: x % -4, (_ints(13),), {"aten::remainder.Scalar"}),
    "remainder_float": (lambda x: torch.remainder(x, 0.75), (_randn(4, 6) * 4,), {"aten::remainder.Scalar"}),
    "remainder_tensor_broadcast": (torch.remainder, (_randn(4, 6) * 5, _randn(6).abs() + 0.5 - 2 * (_randn(6) > 0)),
                                   {"aten::remainder.Tensor"}),
    "remainder_tensor_int": (torch.remainder, (_ints(3, 4), torch.tensor([1, -2, 3, -5], dtype=torch.int32)),
                             {"aten::remainder.Tensor"}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_math_op_matches_eager(name: str, tmp_path: Path) -> None:
    fn, args, ops = CASES[name]
    model = Fn(fn).eval()
    with torch.no_grad():
        want = model(*args)
    program = tern.export(model, args, partitioners=())
    assert {op for op, _ in program.op_counts} == ops
    path = tmp_path / f"{name}.tern"
    program.save(path)
    (got,) = tern.load(str(path))(*args)
    assert_close(got, want, atol=0.0)  # elementwise: each element against its own value


def test_silu_softplus_mish_stay_single_ops_in_a_block(tmp_path: Path) -> None:
    # A small MLP using several of the new activations together.
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(8, 16), torch.nn.SiLU(), torch.nn.Linear(16, 16), torch.nn.Mish(),
        torch.nn.Linear(16, 16), torch.nn.Softplus(), torch.nn.Linear(16, 4), torch.nn.ELU(),
    ).eval()
    x = torch.randn(5, 8)
    program = tern.export(model, (x,), partitioners=())
    counts = dict(program.op_counts)
    assert counts["aten::silu"] == counts["aten::mish"] == counts["aten::softplus"] == counts["aten::elu"] == 1
    path = tmp_path / "mlp.tern"
    program.save(path)
    with torch.no_grad():
        want = model(x)
    (got,) = tern.load(str(path))(x)
    assert_close(got, want)


@pytest.mark.parametrize("fn", [torch.expm1, torch.log1p])
def test_expm1_and_log1p_keep_their_digits_near_zero(fn: Callable[..., torch.Tensor], tmp_path: Path) -> None:
    """Near 0, exp(x) - 1 and log(1 + x) in float32 lose most digits; the ops
    exist to keep them: relative error as torch's."""
    x = torch.logspace(-9, -3, 40) * torch.tensor([1.0, -1.0]).repeat(20)
    model = Fn(fn).eval()
    path = tmp_path / "m.tern"
    tern.export(model, (x,), partitioners=()).save(path)
    got = tern.load(str(path))(x)[0]
    assert_close(got, fn(x), rtol=1e-6, atol=0.0)
