"""Views without copies (tern.aliasing): view, reshape, squeeze, unsqueeze,
flatten, slice, select and a no-op expand of contiguous memory share their
source's bytes in the memory plan instead of running a copy kernel.

Each test checks the file (which view instructions are gone, which tensors
share bytes), the result against eager, and that the memory plan with views
is no larger than the one where every view copies (tern.aliasing switched
off with monkeypatch). bench/views.py measures the bytes and the time saved
on whole models.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import tern
import tern.aliasing
from compare import assert_outputs_close
from tern.inspect import read_program


def _export(model: nn.Module, args: tuple[Any, ...], tmp_path: Path, **kw: Any) -> tuple[tern.Program, tern.Module]:
    program = tern.export(model, args, partitioners=(), **kw)
    program.save(tmp_path / "m.tern")
    return program, tern.load(str(tmp_path / "m.tern"))


def _without_views(model: nn.Module, args: tuple[Any, ...], monkeypatch: pytest.MonkeyPatch, **kw: Any) -> tern.Program:
    with monkeypatch.context() as m:
        m.setattr(tern.aliasing, "alias_views", lambda method: {})
        return tern.export(model, args, partitioners=(), **kw)


def _check(module: tern.Module, model: nn.Module, args: tuple[torch.Tensor, ...]) -> None:
    with torch.no_grad():
        ref = model(*args)
    assert_outputs_close(module(*args), ref, rtol=1e-5)


class Reshapes(nn.Module):
    """Views between computing ops: every one is a whole-tensor alias."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(x)                     # [2, 3, 4, 8]
        y = y.view(2, 12, 8).unsqueeze(1)     # [2, 1, 12, 8]
        y = torch.flatten(y, 2).squeeze(1)    # [2, 96]
        y = y.reshape(2, 96, 1).expand(2, 96, 1)
        return torch.sigmoid(y) * 2


def test_views_between_ops_run_no_kernel_and_share_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    x = torch.randn(2, 3, 4, 8)
    program, module = _export(Reshapes(), (x,), tmp_path)
    ops = {op for op, _ in program.op_counts}
    assert ops.isdisjoint({"aten::view", "aten::unsqueeze", "aten::squeeze.dims", "aten::squeeze.dim",
                           "aten::expand", "aten::_unsafe_view"}), ops
    assert program.memory_plan.aliases, "no view was aliased"
    # Every alias lies at its root's bytes.
    for v, (root, offset) in program.memory_plan.aliases.items():
        assert program.memory_plan.offsets[v] == program.memory_plan.offsets[root] + offset
    copies = _without_views(Reshapes(), (x,), monkeypatch)
    assert {op for op, _ in copies.op_counts} & {"aten::view", "aten::unsqueeze"}
    assert program.num_instructions < copies.num_instructions
    assert program.planned_bytes <= copies.planned_bytes
    _check(module, Reshapes(), (x,))


class Slices(nn.Module):
    """Slices and selects: contiguous runs (leading dims of size 1) alias at
    their offset when it is a multiple of 64 bytes; the others copy."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = torch.tanh(x)           # [1, 8, 32] float32: one row is 128 bytes
        rows = y[:, 2:6]            # offset 256: aliased
        row = y[0, 5]               # offset 640: aliased
        odd = y[:, :, 1:]           # not contiguous: copies
        tail = y[:, -2:]            # offset 768: aliased
        step = y[:, ::2]            # step 2: copies
        return rows * 1, row + 1, odd * 1, tail - 1, step * 1


def test_contiguous_slices_and_selects_alias_at_their_offset(tmp_path: Path) -> None:
    x = torch.randn(1, 8, 32)
    program, module = _export(Slices(), (x,), tmp_path)
    # (y[:, :, 1:] starts with a slice of the whole first dim: an alias at 0.)
    offsets = sorted(offset for _, offset in program.memory_plan.aliases.values() if offset)
    assert offsets == [256, 640, 768], program.memory_plan.aliases
    ops = dict(program.op_counts)
    assert ops.get("aten::slice.Tensor") == 2  # the non-contiguous and the strided one
    assert "aten::select.int" not in ops
    _check(module, Slices(), (x,))


class Misaligned(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)[1:] * 2  # [7, 3] float32: offset 12 bytes


def test_a_slice_at_an_unaligned_offset_copies(tmp_path: Path) -> None:
    x = torch.randn(8, 3)
    program, module = _export(Misaligned(), (x,), tmp_path)
    assert not program.memory_plan.aliases
    assert "aten::slice.Tensor" in dict(program.op_counts)
    _check(module, Misaligned(), (x,))


class ViewOfInputIsOutput(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x.view(-1), x.unsqueeze(0) + 1


def test_an_output_that_views_an_input_keeps_its_own_bytes(tmp_path: Path) -> None:
    x = torch.randn(4, 16)
    program, module = _export(ViewOfInputIsOutput(), (x,), tmp_path)
    (method,) = read_program(program.to_bytes())["methods"]
    out = method["values"][method["outputs"][0]]
    inp = method["values"][method["inputs"][0]]
    assert out["offset"] != inp["offset"] or out["storage"] != "Planned"
    _check(module, ViewOfInputIsOutput(), (x,))


class LoopWithViews(nn.Module):
    """Views inside a loop body, of the carried value (written by moves:
    copied) and of values computed in the body (aliased)."""

    def forward(self, x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
        from torch._higher_order_ops import while_loop

        def cond(i: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            return i < n

        def body(i: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            flat = v.view(-1)
            w = torch.tanh(flat * 0.5).view(4, 16)
            return i + 1, w + v.unsqueeze(0).squeeze(0)

        return while_loop(cond, body, (torch.zeros((), dtype=torch.int64), x))[1]


def test_views_inside_a_loop_give_eager_results(tmp_path: Path) -> None:
    x = torch.randn(4, 16)
    program, module = _export(LoopWithViews(), (x, torch.tensor(3)), tmp_path)
    for n in (0, 1, 3, 7):
        _check(module, LoopWithViews(), (x, torch.tensor(n)))


class Branches(nn.Module):
    """A branch whose first instruction is a view: the jump around it must
    land on the right instruction once the view is gone."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(x)
        return torch.cond(y.sum() > 4, lambda t: t.view(-1).view(8, 4) * 3, lambda t: t.view(4, 8).view(8, 4) - 1,
                          (y,))


def test_a_view_at_the_start_of_a_branch(tmp_path: Path) -> None:
    _, module = _export(Branches(), (torch.randn(8, 4),), tmp_path)
    for scale in (0.01, 10.0):
        _check(module, Branches(), (torch.randn(8, 4) * scale,))


class DynamicViews(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        y = torch.relu(x).reshape(b * t, c)
        return torch.softmax(y, -1).view(b, t, c)[:, :1]


def test_views_of_dynamic_shapes_alias_and_follow_the_sizes(tmp_path: Path) -> None:
    dims = {"x": {0: torch.export.Dim("b", max=4), 1: torch.export.Dim("t", min=2, max=16)}}
    program, module = _export(DynamicViews(), (torch.randn(2, 5, 8),), tmp_path, dynamic_shapes=dims)
    assert len(program.memory_plan.aliases) >= 2
    for b, t in ((2, 5), (4, 16), (1, 2), (3, 9)):
        _check(module, DynamicViews(), (torch.randn(b, t, 8),))
