"""tern-run, the command-line runner: --threads and the Chrome trace
(--trace), checked against the file's own instructions."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

import tern
from op_testing import Fn
from tern.inspect import read_program

ROOT = Path(__file__).resolve().parents[2]


def _tern_run() -> str:
    built = Path(os.environ.get("TERN_BUILD_DIR", ROOT / "build")) / "tern-run"
    found = str(built) if built.exists() else shutil.which("tern-run")
    if found is None:
        pytest.fail("tern-run is not built (make build)")
    return found


class Small(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.relu(self.conv(x)).mean(dim=(2, 3)))


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("run") / "small.tern"
    tern.export(Small().eval(), (torch.randn(1, 3, 16, 16),), partitioners=()).save(path)
    return path


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([_tern_run(), *args], capture_output=True, text=True, timeout=120)


def test_trace_has_one_event_per_instruction_of_each_run_nested_in_its_run(model: Path, tmp_path: Path) -> None:
    out = tmp_path / "trace.json"
    r = _run(str(model), "--iterations", "3", "--warmup", "1", "--threads", "2", "--trace", str(out))
    assert r.returncode == 0, r.stderr
    assert f"to {out}" in r.stdout
    events = json.loads(out.read_text())["traceEvents"]
    method = read_program(str(model))["methods"][0]
    runs = [e for e in events if e.get("cat") == "run"]
    calls = [e for e in events if e.get("cat") == "kernel"]
    assert [e["args"]["run"] for e in runs] == [0, 1, 2]
    assert len(calls) == 3 * len(method["instructions"])
    for e in calls:
        i = e["args"]["instruction"]
        ins = method["instructions"][i]
        assert e["ph"] == "X" and e["dur"] >= 0
        assert e["name"] == method["operators"][ins["op"]]
        assert e["args"]["node"] == method["debug"][i]["node"]
        run = runs[e["args"]["run"]]
        assert run["ts"] <= e["ts"] and e["ts"] + e["dur"] <= run["ts"] + run["dur"] + 1e-3
    threads = [e for e in events if e.get("name") == "thread_name"]
    assert threads and "2 threads" in threads[0]["args"]["name"]


def test_threads_option_is_reported_and_validated(model: Path) -> None:
    r = _run(str(model), "--iterations", "1", "--threads", "3")
    assert r.returncode == 0 and "3 threads" in r.stdout, r.stdout + r.stderr
    bad = _run(str(model), "--threads", "0")
    assert bad.returncode == 2 and "--threads takes a whole number >= 1" in bad.stderr


def test_unwritable_trace_path_fails_with_its_name(model: Path, tmp_path: Path) -> None:
    target = tmp_path / "missing_dir" / "t.json"
    r = _run(str(model), "--iterations", "1", "--trace", str(target))
    assert r.returncode == 1 and str(target) in r.stderr


def test_trace_and_profile_show_the_cpu_backends_fused_ops(tmp_path: Path) -> None:
    torch.manual_seed(0)
    path = tmp_path / "cpu.tern"
    tern.export(Small().eval(), (torch.randn(1, 3, 16, 16),)).save(path)  # the cpu backend
    out = tmp_path / "trace.json"
    r = _run(str(path), "--iterations", "2", "--warmup", "0", "--trace", str(out), "--profile")
    assert r.returncode == 0, r.stderr
    events = json.loads(out.read_text())["traceEvents"]
    calls = [e for e in events if e.get("cat") == "backend"]
    steps = [e for e in events if e.get("cat") == "backend step"]
    assert len(calls) == 2 and calls[0]["name"] == "cpu"
    names = {e["name"] for e in steps}
    assert any(n.startswith("Conv: convolution") and "relu" in n for n in names), names  # conv + relu, fused
    for s in steps:
        call = next(c for c in calls if c["args"]["run"] == s["args"]["run"])
        assert call["ts"] <= s["ts"] and s["ts"] + s["dur"] <= call["ts"] + call["dur"] + 1e-3
    assert "cpu Conv" in r.stdout and "slowest backend steps" in r.stdout


def test_trace_shows_a_row_chain_as_one_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An inverted residual block (expand, depthwise, project) runs as one
    backend step named after the three convolutions it chains."""
    from tern.backends.cpu import compile as cpu_compile

    monkeypatch.setattr(cpu_compile, "ROW_CHAIN_MIN_BYTES", 0)
    torch.manual_seed(0)
    block = torch.nn.Sequential(torch.nn.Conv2d(4, 16, 1), torch.nn.ReLU6(),
                                torch.nn.Conv2d(16, 16, 3, padding=1, groups=16), torch.nn.ReLU6(),
                                torch.nn.Conv2d(16, 4, 1))
    path = tmp_path / "chain.tern"
    tern.export(block.eval(), (torch.randn(1, 4, 12, 12),)).save(path)
    out = tmp_path / "trace.json"
    r = _run(str(path), "--iterations", "1", "--warmup", "0", "--trace", str(out))
    assert r.returncode == 0, r.stderr
    names = [e["name"] for e in json.loads(out.read_text())["traceEvents"] if e.get("cat") == "backend step"]
    convs = [n for n in names if n.startswith("Conv")]
    assert len(convs) == 1 and convs[0].count(" > Conv: ") == 2, names


def test_a_file_the_runtime_refuses_is_reported_once_with_the_kernels_reason(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A file that an exporter without the load check wrote (attention with
    dropout on the portable kernels): tern-run prints the kernel's reason
    once, not also as a log line."""
    import importlib

    monkeypatch.setattr(importlib.import_module("tern.export"), "check_loads", lambda program, gm: None)
    model = Fn(lambda q: torch.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=0.5))
    path = tmp_path / "refused.tern"
    tern.export(model, (torch.randn(1, 2, 4, 8),), partitioners=()).save(path)
    r = _run(str(path), "--iterations", "1")
    assert r.returncode == 1
    assert r.stderr.count("dropout_p=0.5 is not supported") == 1, r.stderr
    assert "aten::scaled_dot_product_attention" in r.stderr and str(path) in r.stderr


def test_a_0_d_output_is_printed_without_reading_a_dim_it_lacks(tmp_path: Path) -> None:
    # print_output read sizes[dim - 1] of a 0-d output before checking dim >= 1
    # (caught by UBSan's bounds check in a sanitizer build: make test-sanitize).
    class Scalar(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return x.sum(), x * 2

    path = tmp_path / "scalar.tern"
    tern.export(Scalar(), (torch.randn(5),), partitioners=()).save(path)
    r = _run(str(path), "--iterations", "1")
    assert r.returncode == 0, r.stderr
    assert "  0: float32 []  min" in r.stdout and "  1: float32 [5]" in r.stdout, r.stdout
    assert r.stdout.count("top-5:") == 1  # only the 1-d output of 5 "classes"

