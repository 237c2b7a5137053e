"""Control flow: torch.cond and torch.while_loop lowered to jumps in the
instruction list (forward around a branch, backward to the top of a loop),
alone, nested and with state, against PyTorch eager on the same inputs; and
the loop budget that keeps a file from running forever.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch._higher_order_ops import while_loop

import tern
from compare import assert_outputs_close
from tern.inspect import read_program


class Branches(nn.Module):
    """A different layer stack on each side of torch.cond, chosen by the data."""

    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Linear(8, 8)
        self.down = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.cond(x.mean() > 0, lambda v: torch.relu(self.up(v)) * 2, lambda v: self.down(v) - 1, (x,))
        return y + x


class Iterate(nn.Module):
    """v = 0.5 v + tanh(W v) while i < n: n is an input, so each call runs
    its own number of iterations."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(6, 6)

    def forward(self, v: torch.Tensor, n: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        def cond(i: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            return i < n

        def body(i: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return i + 1, 0.5 * v + torch.tanh(self.lin(v))

        i, v = while_loop(cond, body, (torch.zeros((), dtype=torch.int64), v))
        return v, i


class Nested(nn.Module):
    """A loop whose body branches, inside a branch."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
        def loop(x: torch.Tensor) -> torch.Tensor:
            def cond(i: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
                return i < n

            def body(i: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
                w = torch.cond(i % 2 == 0, lambda u: self.a(u).sigmoid(), lambda u: self.b(u) * 0.5, (v,))
                return i + 1, w

            return while_loop(cond, body, (torch.zeros((), dtype=torch.int64), x))[1]

        return torch.cond(x.sum() > 0, loop, lambda u: u.neg(), (x,))


def _export(model: nn.Module, args: tuple[Any, ...], tmp_path: Path, **kw: Any) -> tuple[tern.Program, Path]:
    program = tern.export(model, args, **kw)
    path = tmp_path / "model.tern"
    program.save(path)
    return program, path


def _check(module: tern.Module, model: nn.Module, args: tuple[torch.Tensor, ...]) -> None:
    with torch.no_grad():
        want = model(*args)
    wants = [want] if isinstance(want, torch.Tensor) else list(want)
    assert_outputs_close(module(*args), wants)


def _kinds(program: tern.Program) -> list[Any]:
    return [i["kind"] for i in read_program(program.data)["methods"][0]["instructions"]]


@pytest.mark.parametrize("partitioners", [None, ()], ids=["cpu_backend", "portable"])
def test_cond_takes_the_branch_the_data_chooses(partitioners: Any, tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = Branches().eval()
    program, path = _export(model, (torch.randn(2, 8),), tmp_path, partitioners=partitioners)
    assert "JumpFalse" in _kinds(program)
    module = tern.load(str(path))
    for sign in (1.0, -1.0, 1.0, -1.0):
        x = torch.randn(2, 8).abs() * sign
        _check(module, model, (x,))
    # a file with forward jumps only needs no newer runtime than 1.1
    assert read_program(program.data)["header"]["version_minor"] == 1


@pytest.mark.parametrize("partitioners", [None, ()], ids=["cpu_backend", "portable"])
def test_while_loop_runs_as_many_iterations_as_the_input_says(partitioners: Any, tmp_path: Path) -> None:
    torch.manual_seed(1)
    model = Iterate().eval()
    v = torch.randn(3, 6)
    program, path = _export(model, (v, torch.tensor(3)), tmp_path, partitioners=partitioners)
    info = read_program(program.data)
    jumps = [(k, i) for k, i in enumerate(info["methods"][0]["instructions"]) if i["kind"] == "JumpFalse"]
    assert any(i["target"] <= k for k, i in jumps), "a backward jump: the loop"
    assert info["header"]["version_minor"] == 2
    module = tern.load(str(path))
    for n in (0, 1, 5, 2, 17):
        _check(module, model, (torch.randn(3, 6), torch.tensor(n)))
    assert int(module(v, torch.tensor(17))[1]) == 17


def test_nested_cond_and_while_loop(tmp_path: Path) -> None:
    torch.manual_seed(2)
    model = Nested().eval()
    _, path = _export(model, (torch.randn(2, 4), torch.tensor(2)), tmp_path)
    module = tern.load(str(path))
    for sign, n in ((1.0, 0), (1.0, 1), (1.0, 4), (-1.0, 3), (1.0, 7)):
        _check(module, model, (torch.randn(2, 4).abs() * sign, torch.tensor(n)))


def test_a_loop_past_the_budget_raises_and_the_next_call_works(tmp_path: Path) -> None:
    torch.manual_seed(3)
    model = Iterate().eval()
    _, path = _export(model, (torch.randn(1, 6), torch.tensor(3)), tmp_path, partitioners=())
    per_iteration = 12  # more than one iteration's instructions: the condition, the body, the moves, the jumps
    module = tern.load(str(path), max_loop_instructions=10 * per_iteration)
    _check(module, model, (torch.randn(1, 6), torch.tensor(5)))
    with pytest.raises(ValueError, match="ExecutionFailed.*max_loop_instructions"):
        module(torch.randn(1, 6), torch.tensor(1000))
    _check(module, model, (torch.randn(1, 6), torch.tensor(4)))
    # the default budget (2**26 instructions) lets long loops finish
    _check(tern.load(str(path)), model, (torch.randn(1, 6), torch.tensor(1000)))
    with pytest.raises(ValueError, match="max_loop_instructions"):
        tern.load(str(path), max_loop_instructions=-1)


class Scheduled(nn.Module):
    """State and control flow together: a step counter buffer picks the
    branch, and every third call resets an accumulator."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("step", torch.zeros((), dtype=torch.int64))
        self.register_buffer("acc", torch.zeros(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        acc = torch.cond(self.step % 3 == 0, lambda a, v: v.clone(), lambda a, v: a + v, (self.acc, x))
        self.acc.copy_(acc)
        self.step.add_(1)
        return acc * 2


def test_state_decides_the_branch(tmp_path: Path) -> None:
    model = Scheduled()
    eager = copy.deepcopy(model)
    _, path = _export(model, (torch.zeros(3),), tmp_path)
    module = tern.load(str(path))
    for i in range(10):
        _check(module, eager, (torch.full((3,), float(i + 1)),))


class Unsupported(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cond(x.sum() > 0, lambda v: torch.lgamma(v), lambda v: v * 2, (x,))


def test_an_op_without_kernel_inside_a_branch_is_an_export_error_naming_it() -> None:
    with pytest.raises(tern.ExportError, match=r"aten::lgamma .*\n.*test_control_flow.py"):
        tern.export(Unsupported(), (torch.randn(3),))
