"""tern inspect --plot: the memory plan read back from a file (lifetimes,
offsets, the lower bound) and drawn. Oracle: lifetimes and sizes worked out
by hand for a small chain of ops, and the exporter's own plan
(tern.memory_plan) for a larger model."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import tern
from compare import assert_close
from tern.inspect import read_program
from tern.plots import live_bytes, lower_bound, memory_spans

pytest.importorskip("matplotlib")


class Chain(nn.Module):
    """x [1, 256] float32 (1 KB): a = x * 2, b = a + 1, c = b * a (3 kernels)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = x * 2.0
        b = a + 1.0
        return b * a


def test_lifetimes_and_the_lower_bound_of_a_chain_by_hand(tmp_path: Path) -> None:
    path = tmp_path / "chain.tern"
    tern.export(Chain(), (torch.randn(1, 256),), partitioners=()).save(str(path))
    (m,) = read_program(str(path))["methods"]
    assert [i["kind"] for i in m["instructions"]] == ["KernelCall"] * 3
    spans = {s.value: s for s in memory_spans(m)}
    (x,), (c,) = m["inputs"], m["outputs"]
    a, b = m["instructions"][0]["args"][-1], m["instructions"][1]["args"][-1]
    assert (spans[x].start, spans[x].end) == (0, 0)  # read by the first kernel only
    assert (spans[a].start, spans[a].end) == (0, 2)  # written by the first, read by the last
    assert (spans[b].start, spans[b].end) == (1, 2)
    assert (spans[c].start, spans[c].end) == (2, 2)
    assert all(s.nbytes == 1024 for s in spans.values())
    assert [live_bytes(list(spans.values()), 0, t) for t in range(3)] == [2048, 2048, 3072]
    assert lower_bound(list(spans.values()), 0) == 3072
    assert m["arena_sizes"][0] >= 3072  # no plan beats the bound


class Mlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(64, 64) for _ in range(6))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip = x
        for i, layer in enumerate(self.layers):
            x = torch.relu(layer(x)) + (skip if i % 2 else 0.0)
        return x


def test_the_read_back_bound_is_the_exporters(tmp_path: Path) -> None:
    """The bound from the file equals tern.memory_plan's for the same program
    (each tensor a multiple of 64 bytes here, so the two definitions agree)."""
    from tern import memory_plan

    path = tmp_path / "mlp.tern"
    program = tern.export(Mlp(), (torch.randn(4, 64),), partitioners=())
    program.save(str(path))
    (m,) = read_program(str(path))["methods"]
    spans = memory_spans(m)
    intervals = [memory_plan.Interval(s.value, s.nbytes, s.start, s.end) for s in spans]
    want = max(sum(i.nbytes for i in intervals if i.start <= t <= i.end) for t in range(len(m["instructions"])))
    assert lower_bound(spans, 0) == want
    for s in spans:  # every tensor inside the arena, and no two live ones sharing bytes
        assert s.offset + s.nbytes <= m["arena_sizes"][s.arena]
    for i, s in enumerate(spans):
        for t in spans[i + 1:]:
            if s.start <= t.end and t.start <= s.end:
                assert s.offset + s.nbytes <= t.offset or t.offset + t.nbytes <= s.offset, (s, t)


def test_tern_inspect_plot_writes_a_png(tmp_path: Path) -> None:
    path, png = tmp_path / "mlp.tern", tmp_path / "memory.png"
    tern.export(Mlp(), (torch.randn(4, 64),)).save(str(path))
    r = subprocess.run([sys.executable, "-m", "tern.cli", "inspect", str(path), "--plot", str(png)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert f"wrote {png}: method 'forward', arena 0:" in r.stdout and "lower bound" in r.stdout
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    r = subprocess.run([sys.executable, "-m", "tern.cli", "inspect", str(path), "--plot", str(png), "--method", "nope"],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "has no method 'nope' (it has forward)" in r.stderr


def _x(name: str, cat: str, dur_ms: float, run: int, instruction: int | None = None, node: str | None = None) -> dict:
    args = {"run": run}
    if instruction is not None:
        args["instruction"] = instruction
    if node is not None:
        args["node"] = node
    return {"name": name, "cat": cat, "ph": "X", "ts": 0, "dur": dur_ms * 1e3, "args": args}


def test_a_trace_is_summed_per_op_kind_and_layer_by_hand() -> None:
    from tern.plots import profile_of_trace

    events = []
    for run, scale in ((0, 1.0), (1, 3.0), (2, 2.0)):  # medians: the run of scale 2
        events += [
            _x("forward", "run", 10 * scale, run),
            _x("aten::mul", "kernel", 1 * scale, run, 0, "mul"),
            _x("aten::mul", "kernel", 0.5 * scale, run, 1, "mul_1"),
            _x("cpu", "backend", 6 * scale, run, 2, "fused_0"),
            _x("Conv: conv+relu", "backend step", 3 * scale, run, 2, "fused_0"),
            _x("Conv: conv_1", "backend step", 2 * scale, run, 2, "fused_0"),
            _x("Pool: pool", "backend step", 0.25 * scale, run, 2, "fused_0"),
            _x("xnn", "backend", 1.5 * scale, run, 3, "fused_1"),  # no steps reported: one layer
        ]
    p = profile_of_trace({"traceEvents": events + [{"name": "process_name", "ph": "M", "args": {}}]})
    assert p.runs == 3
    kinds = {"cpu Conv": 10.0, "aten::mul": 3.0, "xnn (backend call)": 3.0, "cpu Pool": 0.5}
    assert sorted(dict(p.kinds)) == sorted(kinds) and p.kinds[0][0] == "cpu Conv" and p.kinds[-1][0] == "cpu Pool"
    layers = {("cpu Conv", "Conv: conv+relu"): 6.0, ("cpu Conv", "Conv: conv_1"): 4.0, ("aten::mul", "mul"): 2.0,
              ("aten::mul", "mul_1"): 1.0, ("xnn (backend call)", "fused_1"): 3.0, ("cpu Pool", "Pool: pool"): 0.5}
    got = {(k, n): ms for k, n, ms in p.layers}
    assert sorted(got) == sorted(layers)
    assert_close(np.array([p.run_ms] + [dict(p.kinds)[k] for k in kinds] + [got[k] for k in layers]),
                 np.array([20.0] + list(kinds.values()) + list(layers.values())), rtol=1e-9)
    assert [n for _, n, _ in p.layers][:2] == ["Conv: conv+relu", "Conv: conv_1"]


@pytest.mark.parametrize("backend", [True, False], ids=["cpu", "portable"])
def test_tern_profile_prints_and_plots(tmp_path: Path, backend: bool) -> None:
    path, png = tmp_path / "mlp.tern", tmp_path / "profile.png"
    tern.export(Mlp(), (torch.randn(4, 64),), **({} if backend else {"partitioners": ()})).save(str(path))
    r = subprocess.run([sys.executable, "-m", "tern.cli", "profile", str(path), "--iterations", "5", "--plot", str(png)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "ms a run (median of 5)" in r.stdout and "time per op kind:" in r.stdout, r.stdout
    assert ("cpu " if backend else "aten::addmm") in r.stdout.split("time per op kind:")[1], r.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r = subprocess.run([sys.executable, "-m", "tern.cli", "profile", str(tmp_path / "nope.tern")],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "tern-run failed" in r.stderr
