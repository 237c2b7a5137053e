"""tern-run, the command-line runner: --threads, --verbose and the Chrome
trace (--trace), checked against the file's own instructions."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import torch

import tern
from op_testing import Fn
from tern.inspect import read_program

from conftest import built_tool  # noqa: E402
ROOT = Path(__file__).resolve().parents[2]


def _tern_run() -> str:
    return built_tool("tern-run")


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


def test_verbose_and_trace_name_the_microkernels_each_delegate_runs(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """--verbose prints each delegate's kernel sets and one line per
    microkernel ("float.igemm_main  f32_igemm_ukernel_4x16__scalar"); the
    trace's delegate event carries the same pairs. Forced to scalar, every
    name is a scalar kernel's."""
    torch.manual_seed(0)
    path = tmp_path / "cpu.tern"
    tern.export(Small().eval(), (torch.randn(1, 3, 16, 16),)).save(path)  # the cpu backend
    out = tmp_path / "trace.json"
    monkeypatch.setenv("TERN_CPU_ISA", "scalar")
    r = _run(str(path), "--iterations", "1", "--warmup", "0", "--verbose", "--trace", str(out))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "method forward: 1 delegate" in lines, r.stdout
    assert "  delegate 0: backend cpu, float=scalar int8=scalar" in lines, r.stdout
    kernels = dict(m.groups() for m in map(re.compile(r"^    ([\w.\[\]]+) +(\w+)$").match, lines) if m)
    assert kernels["float.igemm_main"] == "f32_igemm_ukernel_4x16__scalar", kernels
    assert kernels["int8.igemm[0]"] == "qs8_igemm_ukernel_4x16__scalar", kernels
    assert kernels["qb.gemm[0]"] == "qb_q4_0_gemm_ukernel_4x1__scalar", kernels  # BlockLinear's (GGUF blocks)
    # 11 float, 7 int8, 4 block-quantized (scalar has no tiles of 16 rows)
    assert len(kernels) == 22 and all(name.endswith("__scalar") for name in kernels.values()), kernels
    events = json.loads(out.read_text())["traceEvents"]
    delegates = [e for e in events if e.get("cat") == "delegate"]
    assert len(delegates) == 1 and delegates[0]["name"] == "cpu delegate 0"
    args = delegates[0]["args"]
    assert args["backend"] == "cpu" and args["description"] == "float=scalar int8=scalar"
    assert {k: v for k, v in args.items() if "." in k} == kernels


def test_verbose_is_off_by_default(model: Path) -> None:
    r = _run(str(model), "--iterations", "1")
    assert r.returncode == 0 and "delegate" not in r.stdout, r.stdout


def test_trace_shows_a_row_chain_as_one_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An inverted residual block (expand, depthwise, project) runs as one
    backend step named after the three convolutions it chains."""
    from tern.backends.cpu import CpuOptions, CpuPartitioner

    torch.manual_seed(0)
    block = torch.nn.Sequential(torch.nn.Conv2d(4, 16, 1), torch.nn.ReLU6(),
                                torch.nn.Conv2d(16, 16, 3, padding=1, groups=16), torch.nn.ReLU6(),
                                torch.nn.Conv2d(16, 4, 1))
    path = tmp_path / "chain.tern"
    cpu = CpuPartitioner(options=CpuOptions(row_chain_min_bytes=0))  # the block's tensors are small
    tern.export(block.eval(), (torch.randn(1, 4, 12, 12),), partitioners=[cpu]).save(path)
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


KITCHEN_SINK = ROOT / "tests" / "data" / "v1" / "kitchen_sink.tern"  # inputs: float32 [1, 3, 16, 16], int64 [1, 6]


def _npy(header: str, data: bytes = b"", major: int = 1, header_len: int | None = None) -> bytes:
    """An .npy file as numpy writes it (the header padded so that the data is
    64-byte aligned), or with a header length that lies (`header_len`)."""
    pre = 10 if major == 1 else 12
    h = header.encode()
    h += b" " * ((64 - (pre + len(h) + 1) % 64) % 64) + b"\n"
    n = len(h) if header_len is None else header_len
    return b"\x93NUMPY" + bytes([major, 0]) + n.to_bytes(2 if major == 1 else 4, "little") + h + data


def _dict(shape: str, descr: str = "<f4") -> str:
    return f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}"


# Issue 22: the first four printed stack garbage, aborted (exit 134), reported
# a wrapped shape, or printed "tern-run: " and nothing after.
@pytest.mark.parametrize(("content", "message"), [
    (_npy(_dict("(" + ", ".join(["1"] * 12) + ")"), bytes(4)), "shape has 12 dims, at most 8"),
    (_npy(_dict("(2, -3)"), bytes(24)), "dim 1 is -3"),
    (_npy(_dict("(4294967296, 4294967296)")), "shape (4294967296, 4294967296) of float32 spans more than 2^48 bytes"),
    (_npy(_dict("(1,)"), bytes(4), major=2, header_len=0xFFFFFFFF), "header of 4294967295 bytes, at most 65536"),
    (_npy(_dict("(1,)"), major=1, header_len=1000), "header of 1000 bytes runs past the end of the file"),
    (_npy(_dict("(1, 3, 16, 16)"), bytes(100)), "needs 3072 data bytes, the file has 100"),
    (_npy(_dict("(1048576, 1048576)"), bytes(16)), "needs 4398046511104 data bytes, the file has 16"),
    (_npy(_dict("(3, x)"), bytes(12)), "shape: expected a size (digits) for dim 1"),
    (_npy(_dict("(1,)", descr="<c8"), bytes(8)), "descr '<c8' is not one of"),
], ids=["12-dims", "negative-dim", "overflowing-shape", "v2-header-4gib", "header-past-end", "short-data",
        "terabyte-data", "malformed-shape", "unknown-descr"])
def test_a_malformed_npy_input_is_refused_with_its_reason_and_no_crash(tmp_path: Path, content: bytes,
                                                                      message: str) -> None:
    bad = tmp_path / "x.npy"
    bad.write_bytes(content)
    good = str(KITCHEN_SINK.with_suffix(".input1.npy"))
    r = _run(str(KITCHEN_SINK), "--input", str(bad), "--input", good, "--iterations", "1")
    assert r.returncode == 1, f"exit {r.returncode}: {r.stderr}"
    line = next((ln for ln in r.stderr.splitlines() if ln.startswith("tern-run: ")), "")
    assert line.startswith(f"tern-run: '{bad}': ") and message in line, r.stderr


def test_the_frozen_files_npy_inputs_run(tmp_path: Path) -> None:
    inputs = [str(KITCHEN_SINK.with_suffix(f".input{i}.npy")) for i in range(2)]
    out = tmp_path / "out.npy"
    r = _run(str(KITCHEN_SINK), "--input", inputs[0], "--input", inputs[1], "--iterations", "1", "--output", str(out))
    assert r.returncode == 0, r.stderr
    assert "input 0: float32 [1, 3, 16, 16]" in r.stdout and "input 1: int64 [1, 6]" in r.stdout, r.stdout
    assert out.read_bytes().startswith(b"\x93NUMPY\x01\x00")
