"""Batch norm over the batch's own statistics (nn.InstanceNorm,
F.batch_norm(training=True)), empty tensors, and the random ops.

Norms and empty are checked against PyTorch eager. The random ops cannot
be (eager's generator stream is its own): they are checked against the
distributions they promise, with bounds several standard errors wide, on
enough samples that a wrong distribution fails.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import torch
from torch import nn

import tern
from compare import assert_close, assert_outputs_close
from op_testing import Fn


def _load(model: nn.Module, args: tuple[torch.Tensor, ...], tmp_path: Path, op: str) -> tern.Module:
    program = tern.export(model, args, partitioners=())
    assert op in dict(program.op_counts), program.op_counts
    program.save(tmp_path / "m.tern")
    return tern.load(str(tmp_path / "m.tern"))


def _check(module: tern.Module, model: nn.Module, args: tuple[torch.Tensor, ...], rtol: float = 1e-5) -> None:
    """Runs `module` and `model` on `args`: outputs within `rtol` of each output's own scale (compare.py)."""
    with torch.no_grad():
        ref = model(*args)
    assert_outputs_close(module(*args), ref, rtol=rtol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_instance_norm_matches_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.InstanceNorm2d(6, affine=True), nn.Hardtanh(-2, 2)).to(dtype).eval()
    with torch.no_grad():
        model[0].weight.uniform_(0.5, 2)
        model[0].bias.uniform_(-1, 1)
    x = torch.randn(2, 6, 9, 9, dtype=dtype) * 3 + 1
    module = _load(model, (x,), tmp_path, "aten::_native_batch_norm_legit.no_stats")
    _check(module, model, (x,))
    plain = nn.InstanceNorm1d(5).eval()
    y = torch.randn(3, 5, 7, dtype=dtype)
    _check(_load(plain, (y,), tmp_path, "aten::_native_batch_norm_legit.no_stats"), plain, (y,))


def test_batch_norm_in_training_mode_uses_the_batch_statistics(tmp_path: Path) -> None:
    torch.manual_seed(0)
    w, b = torch.rand(4) + 0.5, torch.randn(4)
    model = Fn(lambda x: nn.functional.batch_norm(x, None, None, w, b, training=True, eps=1e-3))
    x = torch.randn(8, 4, 5) * torch.tensor([1.0, 10.0, 0.1, 3.0])[:, None] + 2
    module = _load(model, (x,), tmp_path, "aten::_native_batch_norm_legit.no_stats")
    _check(module, model, (x,))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_batch_statistics_in_16_bit_types_match_eager(dtype: torch.dtype, tmp_path: Path) -> None:
    """Staged through float32 (torch.export gives the overload with running
    statistics only in its functional form, which has no kernel)."""
    torch.manual_seed(0)
    x = (torch.randn(4, 3, 6, 5) * 2 + 1).to(dtype)
    w, b = (torch.rand(3) + 0.5).to(dtype), torch.randn(3).to(dtype)
    for op, model in [
        ("aten::_native_batch_norm_legit.no_stats",
         Fn(lambda x: torch.ops.aten._native_batch_norm_legit.no_stats(x, w, b, True, 0.1, 1e-5))),
    ]:
        module = _load(model, (x,), tmp_path, op)
        with torch.no_grad():
            refs = model(x)
        outs = module(x)
        # 16-bit outputs: a few units in the last place at the output's scale; the saved
        # statistics stay float32 in eager too, so compare the values, not the dtypes
        ulp = 2.0**-10 if dtype == torch.float16 else 2.0**-7
        assert_outputs_close([o.astype(np.float32) for o in outs], [r.float() for r in refs], rtol=4 * ulp,
                             what=f"{op} ")


def test_batch_norm_in_eval_mode_takes_float64(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = nn.BatchNorm2d(4).double().eval()
    with torch.no_grad():
        model.running_mean.uniform_(-1, 1)
        model.running_var.uniform_(0.5, 2)
        model.weight.uniform_(0.5, 2)
        model.bias.uniform_(-1, 1)
    x = torch.randn(2, 4, 5, 5, dtype=torch.float64) * 3
    _check(_load(model, (x,), tmp_path, "aten::_native_batch_norm_legit_no_training"), model, (x,), rtol=1e-12)


def test_empty_tensors_are_created_with_their_shape_and_dtype(tmp_path: Path) -> None:
    # With static sizes the exporter computes empty(...).fill_(v) itself; a
    # dynamic size leaves aten::empty to the runtime.
    model = Fn(lambda x: (torch.empty(x.shape[0], 3, dtype=torch.int32).fill_(7) + x.shape[0],
                          torch.empty_strided((x.shape[0], 2), (2, 1)).fill_(0.5) * x[:, :2]))
    x = torch.randn(4, 5)
    program = tern.export(model, (x,), partitioners=(), dynamic_shapes={"args": ({0: torch.export.Dim("n", max=9)},)})
    ops = dict(program.op_counts)
    assert "aten::empty.memory_format" in ops and "aten::empty_strided" in ops, ops
    program.save(tmp_path / "m.tern")
    module = tern.load(str(tmp_path / "m.tern"))
    for n in (4, 9, 1):
        _check(module, model, (torch.randn(n, 5),))


def _random(fn: Callable[..., Any], tmp_path: Path, op: str, *args: torch.Tensor) -> tern.Module:
    return _load(Fn(fn), args, tmp_path, op)


def test_rand_is_uniform_on_zero_to_one(tmp_path: Path) -> None:
    module = _random(lambda x: torch.rand(200, 500) + x, tmp_path, "aten::rand", torch.zeros(()))
    (a,) = module(torch.zeros(()))
    (b,) = module(torch.zeros(()))
    assert a.shape == (200, 500) and a.dtype == np.float32
    assert a.min() >= 0 and a.max() < 1
    n = a.size  # mean 1/2 and variance 1/12: standard error of the mean 0.29 / sqrt(n) ~ 0.0004
    assert_close(float(a.mean()), 0.5, rtol=0.0, atol=0.003, what="mean")
    assert_close(float(a.var()), 1 / 12, rtol=0.0, atol=0.002, what="variance")
    counts, _ = np.histogram(a, bins=10, range=(0, 1))
    assert_close(counts.astype(np.float64), np.full(10, n / 10), rtol=0.0, atol=6 * np.sqrt(n / 10), what="histogram")
    assert not np.array_equal(a, b), "each call draws new numbers"
    again = tern.load(module.path)
    assert np.array_equal(again(torch.zeros(()))[0], a), "a new load starts the same stream"


def test_randn_is_standard_normal(tmp_path: Path) -> None:
    module = _random(lambda x: torch.randn(100001, dtype=torch.float64) + x, tmp_path, "aten::randn",
                     torch.zeros((), dtype=torch.float64))
    (a,) = module(torch.zeros((), dtype=torch.float64))
    assert a.shape == (100001,) and a.dtype == np.float64
    assert_close(float(a.mean()), 0.0, rtol=0.0, atol=0.02, what="mean")
    assert_close(float(a.std()), 1.0, rtol=0.0, atol=0.02, what="standard deviation")
    assert_close(float(np.mean(np.abs(a) < 1)), 0.6827, rtol=0.0, atol=0.01, what="within one sigma")
    assert_close(float(np.mean(a ** 3)), 0.0, rtol=0.0, atol=0.05, what="third moment")  # symmetric
    assert_close(float(np.mean(a ** 4)), 3.0, rtol=0.0, atol=0.1, what="fourth moment")  # normal tails


def test_randperm_is_a_permutation(tmp_path: Path) -> None:
    module = _random(lambda x: torch.randperm(1000) + x, tmp_path, "aten::randperm", torch.zeros((), dtype=torch.int64))
    firsts = []
    for _ in range(5):
        (p,) = module(torch.zeros((), dtype=torch.int64))
        assert p.dtype == np.int64 and np.array_equal(np.sort(p), np.arange(1000))
        firsts.append(p[0])
    assert len(set(firsts)) > 1


@pytest.mark.parametrize("p", [0.0, 0.3, 1.0])
def test_dropout_in_training_mode_zeroes_p_and_scales_the_rest(p: float, tmp_path: Path) -> None:
    x = torch.rand(200, 100) + 1
    module = _random(lambda x: torch.ops.aten.native_dropout(x, p, True), tmp_path, "aten::native_dropout", x)
    y, mask = module(x)
    assert mask.dtype == np.bool_ and y.shape == x.shape
    kept = mask.mean()
    assert_close(float(kept), 1 - p, rtol=0.0, atol=0.01, what="kept fraction")
    scale = 1 / (1 - p) if p < 1 else 0.0
    assert_close(y[mask], x.numpy()[mask] * scale, rtol=1e-6, atol=0.0, check_dtype=False,  # float64 oracle
                 what="kept values")
    assert np.all(y[~mask] == 0)


def test_dropout_outside_training_is_the_identity(tmp_path: Path) -> None:
    x = torch.randn(3, 7)
    module = _random(lambda x: torch.ops.aten.native_dropout(x, 0.5, False), tmp_path, "aten::native_dropout", x)
    y, mask = module(x)
    assert_close(y, x, rtol=0.0, atol=0.0)
    assert mask.all()
