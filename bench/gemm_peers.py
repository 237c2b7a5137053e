"""GFLOP/s of ONNX Runtime's f32 MatMul + Add (MLAS) on gemm_bench's shapes,
beside Tern's cpu backend GEMM on the same shapes.

    /work/main/.venv-bench/bin/python bench/gemm_peers.py [--build build] [--threads 1 2] [--rounds 3]

Each shape is a one-node-pair ONNX model, y[m][n] = x[m][k] @ w[k][n] + b[n]
with w and b initializers (ORT packs constant weights once, at session
creation, as Tern's exporter does), run with 1 and 2 intra-op threads. The
Tern figures come from build/bench/gemm_bench in the same rounds (ORT, then
Tern, then ORT, ...), and each figure is the median over the rounds of each
round's median call: the machine is shared, so read the ratios, not the
absolute numbers. Prints a table, then one JSON line with both sets.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def matmul_add_model(m: int, n: int, k: int) -> bytes:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((k, n)).astype(np.float32) * 0.05, "w")
    b = numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "b")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["t"]), helper.make_node("Add", ["t", "b"], ["y"])],
        "gemm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])],
        initializer=[w, b],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def time_ort(m: int, n: int, k: int, threads: int, seconds: float = 0.5) -> float:
    """Median milliseconds of one run over about `seconds` of runs."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(matmul_add_model(m, n, k), so, providers=["CPUExecutionProvider"])
    x = {"x": np.random.default_rng(1).standard_normal((m, k)).astype(np.float32)}
    sess.run(None, x)
    ms: list[float] = []
    start = time.perf_counter()
    while len(ms) < 5 or time.perf_counter() - start < seconds:
        t = time.perf_counter()
        sess.run(None, x)
        ms.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ms)


def run_tern(build: Path, threads: list[int]) -> list[dict]:
    out = subprocess.run([str(build / "bench" / "gemm_bench"), *map(str, threads)], check=True,
                         capture_output=True, text=True).stdout
    return [r for r in json.loads(out)["results"] if r["gemm"] == "cpu"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", type=Path, default=Path(__file__).resolve().parent.parent / "build")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    tern_runs: dict[tuple, list[float]] = {}
    ort_runs: dict[tuple, list[float]] = {}
    for _ in range(args.rounds):
        shapes = []
        for r in run_tern(args.build, args.threads):
            key = (r["m"], r["n"], r["k"], r["threads"])
            tern_runs.setdefault(key, []).append(r["gflops"])
            shapes.append(key)
        for m, n, k, t in shapes:
            ort_runs.setdefault((m, n, k, t), []).append(2.0 * m * n * k / (time_ort(m, n, k, t) * 1e6))

    rows = []
    print(f"{'m':>5} {'n':>5} {'k':>5} {'thr':>3} {'tern GF/s':>10} {'ort GF/s':>9} {'tern/ort':>8}")
    for key in tern_runs:
        tern = statistics.median(tern_runs[key])
        peer = statistics.median(ort_runs[key])
        m, n, k, t = key
        print(f"{m:5d} {n:5d} {k:5d} {t:3d} {tern:10.1f} {peer:9.1f} {tern / peer:8.2f}")
        rows.append({"m": m, "n": n, "k": k, "threads": t, "tern_gflops": round(tern, 2),
                     "ort_gflops": round(peer, 2)})
    print(json.dumps({"gemm_peers": f"onnxruntime {ort.__version__}", "rounds": args.rounds, "results": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
