"""The backend path end to end: a partitioner hands subgraphs to a backend at
export (tern.Partitioner), the file carries them as format 1.1 delegates, and
the runtime runs them on the registered backend.

The backend is tests/cpp/test_backend.h ("tern_test"), which the shipped
bindings do not have: the file runs through build/tests/cpp/test_backend_run,
a C++ program that registers it. Outputs are compared with eager PyTorch."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

import tern
from compare import assert_close, assert_outputs_close
from tern_test_backend import TestPartitioner, describe

BUILD = Path(os.environ.get("TERN_BUILD_DIR", Path(__file__).resolve().parents[2] / "build"))
RUNNER = BUILD / "tests" / "cpp" / "test_backend_run"


class Mixed(torch.nn.Module):
    """Elementwise chains the test backend takes, around a linear layer it does not."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 8))
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a = torch.relu(x * self.w + y)
        b = self.fc(a)
        return torch.relu(b - a) * y, a


def run_with_test_backend(path: Path, inputs: list[np.ndarray], tmp_path: Path, threads: int = 1) -> list[np.ndarray]:
    """Runs `path` with the portable kernels and the tern_test backend."""
    if not RUNNER.exists():
        pytest.fail(f"{RUNNER} is missing: build the C++ side first (make build)")
    files = []
    for i, x in enumerate(inputs):
        files.append(tmp_path / f"in{i}.npy")
        np.save(files[-1], x)
    r = subprocess.run([str(RUNNER), str(path), str(tmp_path / "out"), "--threads", str(threads), *map(str, files)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    outs = sorted(tmp_path.glob("out*.npy"), key=lambda p: int(p.stem[3:]))
    return [np.load(p) for p in outs]


@pytest.fixture()
def exported(tmp_path: Path) -> tuple[Path, list[torch.Tensor], list[np.ndarray]]:
    torch.manual_seed(0)
    model = Mixed().eval()
    args = [torch.randn(4, 8), torch.randn(4, 8)]
    path = tmp_path / "mixed.tern"
    tern.export(model, tuple(args), partitioners=[TestPartitioner()]).save(path)
    with torch.no_grad():
        want = [t.numpy() for t in model(*args)]
    return path, args, want


def test_claimed_subgraphs_become_delegates_and_the_rest_kernels(exported: tuple) -> None:
    path, _, _ = exported
    delegates = describe(path)
    assert [d["backend"] for d in delegates] == ["tern_test", "tern_test"]
    # the parameter w moved into the payload: the first delegate reads x and y only
    assert len(delegates[0]["inputs"]) == 2 and len(delegates[0]["outputs"]) == 1
    from tern.inspect import read_program

    m = read_program(str(path))["methods"][0]
    kernel_ops = {m["operators"][i["op"]] for i in m["instructions"] if i["kind"] == "KernelCall"}
    assert kernel_ops == {"aten::addmm"}


@pytest.mark.parametrize("threads", [1, 3])
def test_delegated_model_matches_eager(exported: tuple, tmp_path: Path, threads: int) -> None:
    path, args, want = exported
    outs = run_with_test_backend(path, [a.numpy() for a in args], tmp_path, threads)
    assert_outputs_close(outs, want, rtol=1e-5)


class _Chain(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.relu(x * y - x) + y


def test_large_delegate_splits_over_threads_with_the_same_bits(tmp_path: Path) -> None:
    x, y = torch.randn(64, 1000), torch.randn(64, 1000)
    path = tmp_path / "big.tern"
    tern.export(_Chain(), (x, y), partitioners=[TestPartitioner()]).save(path)
    assert len(describe(path)) == 1
    runs = {}
    for threads in (1, 3):
        (tmp_path / str(threads)).mkdir()
        runs[threads] = run_with_test_backend(path, [x.numpy(), y.numpy()], tmp_path / str(threads), threads)[0]
    np.testing.assert_array_equal(runs[1], runs[3])
    assert_close(runs[1], torch.relu(x * y - x) + y, rtol=1e-6, atol=0.0)  # elementwise: each against itself


def test_runtime_without_the_backend_names_it(exported: tuple) -> None:
    path, _, _ = exported
    with pytest.raises(ValueError, match="backend 'tern_test' is not registered"):
        tern.load(str(path))


def test_inspect_lists_the_delegates(exported: tuple) -> None:
    from tern.cli import inspect_file

    path, _, _ = exported
    text = inspect_file(str(path))
    assert "Tern format 1.1" in text
    assert "delegate 0: backend tern_test, 2 inputs, 1 outputs" in text


def test_partitioner_without_backend_name_is_an_export_error() -> None:
    class NoName(TestPartitioner):
        backend = ""

    with pytest.raises(tern.ExportError, match="backend name"):
        tern.export(_Chain(), (torch.randn(2), torch.randn(2)), partitioners=[NoName()])


def test_partitioner_that_claims_nothing_changes_nothing() -> None:
    class Nothing(TestPartitioner):
        def supports(self, node: torch.fx.Node) -> bool:
            return False

    args = (torch.randn(3, 4), torch.randn(3, 4))
    with_hook = tern.export(_Chain(), args, partitioners=[Nothing()])
    assert with_hook.data == tern.export(_Chain(), args, partitioners=()).data


def test_payload_that_is_not_bytes_is_an_export_error() -> None:
    class Broken(TestPartitioner):
        def preprocess(self, subgraph: torch.fx.GraphModule) -> bytes:
            return "TTB1"  # type: ignore[return-value]

    with pytest.raises(tern.ExportError, match="returned str, not bytes"):
        tern.export(_Chain(), (torch.randn(2), torch.randn(2)), partitioners=[Broken()])
