"""One runtime, one model file, one thread count, in its own process: the
worker that bench/run.py drives, one JSON line per command and reply.

    python bench/worker.py --runtime tern --model FILE --threads 1 --inputs inputs.npz --reference reference.npz

Commands (stdin) and replies (stdout):
    {"cmd": "load", "warmup": 2, "slow_ms": 3000}
        -> {"load_ms", "first_output_ms", "first_run_ms", "warmup_ms", "rss_after_imports_mb",
            "rss_growth_mb", "max_abs_diff", "max_abs_ref"}
        (warm-up runs only if the first run took less than slow_ms)
    {"cmd": "run", "iters": 5}   -> {"ms": [..5 latencies..]}
    {"cmd": "quit"}
Any failure -> {"error": "..."} (and the worker stays up for "quit").

The process is fresh when "load" comes: it has imported what its runtime
needs and nothing else, so "load" measures load-to-first-output (from before
the file is opened to the first output in hand) and peak memory growth over
the process after imports (peak RSS reset after the imports, through
/proc/self/clear_refs). Inputs are made ready before any timing; a timed
call is the runtime's own call from Python on those inputs.

Runs in either environment: the main one (tern, torch, onnxruntime) or the
ExecuTorch one; it imports only what its runtime needs (no torch for tern or
onnxruntime).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Callable

import numpy as np

Runner = Callable[[], list]  # runs the model once on the prepared inputs; returns numpy outputs


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _reset_peak_rss() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS (Linux >= 4.0)
    except OSError:
        pass


# ---- runtimes: each returns a Runner after loading `path` ------------------


def load_tern(path: str, threads: int, inputs: list[np.ndarray]) -> Runner:
    import tern

    m = tern.load(path, threads=threads)
    return lambda: m(*inputs)


def load_torch(path: str, threads: int, inputs: list[np.ndarray], model: str) -> Runner:
    import torch

    torch.set_num_threads(threads)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from models import build_empty

    module = build_empty(model)
    module.load_state_dict(torch.load(path, mmap=True, weights_only=True), assign=True)
    args = [torch.from_numpy(x) for x in inputs]

    def run() -> list:
        with torch.inference_mode():
            out = module(*args)
        return [t.numpy() for t in (out if isinstance(out, (tuple, list)) else [out])]

    return run


def load_ort(path: str, threads: int, inputs: list[np.ndarray]) -> Runner:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    feed = {i.name: x for i, x in zip(session.get_inputs(), inputs)}
    return lambda: session.run(None, feed)


def load_executorch(path: str, threads: int, inputs: list[np.ndarray]) -> Runner:
    import torch
    from executorch.extension.pybindings.portable_lib import _load_for_executorch, _unsafe_reset_threadpool

    _unsafe_reset_threadpool(threads)  # XNNPACK's pool; the portable kernels run on the caller
    module = _load_for_executorch(path)
    args = tuple(torch.from_numpy(x) for x in inputs)
    return lambda: [t.numpy() for t in module.forward(args)]


RUNTIMES = {
    "tern": load_tern,
    "torch": load_torch,
    "ort": load_ort,
    "et_xnnpack": load_executorch,
    "et_portable": load_executorch,
}


def base_runtime(runtime: str) -> str:
    """The runtime that runs a file: "tern_q" (a quantized model, bench/quant.py)
    and "tern_base" (Tern at the --baseline commit, run.py) are tern."""
    return "tern" if runtime == "tern_base" else runtime.removesuffix("_q")


def preimport(runtime: str) -> None:
    """Imports the runtime's modules before the baseline is taken."""
    runtime = base_runtime(runtime)
    if runtime == "tern":
        import tern
        import tern.runtime  # noqa: F401 - the compiled bindings
    elif runtime == "torch":
        import torch  # noqa: F401
        import torchvision  # noqa: F401 - models.build_empty imports it for the vision models
    elif runtime == "ort":
        import onnxruntime  # noqa: F401
    else:
        import torch  # noqa: F401
        import executorch.extension.pybindings.portable_lib  # noqa: F401


# ---- the command loop ------------------------------------------------------


class Worker:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        data = np.load(args.inputs)
        self.inputs = [data[k] for k in sorted(data.files)]
        ref = np.load(args.reference)
        self.reference = [ref[k] for k in sorted(ref.files)]
        self.run: Runner | None = None

    def load(self, warmup: int, slow_ms: float) -> dict:
        a = self.args
        loader = RUNTIMES[base_runtime(a.runtime)]
        extra = {"model": a.model_name} if a.runtime == "torch" else {}
        base = _status_kb("VmRSS")
        _reset_peak_rss()
        t0 = time.perf_counter()
        self.run = loader(a.model, a.threads, self.inputs, **extra)
        t1 = time.perf_counter()
        outputs = self.run()
        t2 = time.perf_counter()
        peak = _status_kb("VmHWM")
        diff, scale, signal, noise = self.compare(outputs)
        warm = []
        if (t2 - t1) * 1e3 < slow_ms:  # a slow runtime's first run is its warm-up
            warm = self.timed(warmup)["ms"]
        module = sys.modules.get(base_runtime(a.runtime))  # which copy ran (run.py checks tern's)
        return {
            "module_path": getattr(module, "__file__", None),
            "warmup_ms": warm,
            "load_ms": (t1 - t0) * 1e3,
            "first_output_ms": (t2 - t0) * 1e3,
            "first_run_ms": (t2 - t1) * 1e3,
            "rss_after_imports_mb": base / 1024,
            "rss_growth_mb": (peak - base) / 1024,
            "max_abs_diff": diff,
            "max_abs_ref": scale,
            # output SNR against eager (bench/quant.py): 10 log10(signal / noise)
            "sum_sq_ref": signal,
            "sum_sq_err": noise,
        }

    def compare(self, outputs: list) -> tuple[float, float, float, float]:
        if len(outputs) != len(self.reference):
            raise ValueError(f"{len(outputs)} outputs, PyTorch eager gives {len(self.reference)}")
        diff, scale, signal, noise = 0.0, 0.0, 0.0, 0.0
        for got, want in zip(outputs, self.reference):
            got = np.asarray(got)
            if got.shape != want.shape:
                raise ValueError(f"output shape {got.shape}, PyTorch eager gives {want.shape}")
            d = np.abs(got.astype(np.float64) - want.astype(np.float64))
            diff = max(diff, float(np.nanmax(d)) if not np.isnan(d).any() else float("inf"))
            scale = max(scale, float(np.abs(want).max()))
            signal += float(np.sum(want.astype(np.float64) ** 2))
            noise += float(np.sum(d * d))
        return diff, scale, signal, noise

    def timed(self, iters: int) -> dict:
        ms = []
        for _ in range(iters):
            t0 = time.perf_counter()
            self.run()
            ms.append((time.perf_counter() - t0) * 1e3)
        return {"ms": ms}

    def handle(self, msg: dict[str, Any]) -> dict:
        if msg["cmd"] == "load":
            return self.load(int(msg.get("warmup", 0)), float(msg.get("slow_ms", 3000)))
        if msg["cmd"] == "run":
            return self.timed(int(msg["iters"]))
        raise ValueError(f"unknown command {msg['cmd']!r}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runtime", choices=sorted(RUNTIMES) + ["tern_base"]
                        + [f"{r}_q" for r in ("tern", "ort", "et_xnnpack")],
                        required=True)
    parser.add_argument("--model", required=True, help="the runtime's model file")
    parser.add_argument("--model-name", default="", help="the bench model's name (torch: to build its structure)")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--inputs", required=True, help=".npz of the inputs, in key order")
    parser.add_argument("--reference", required=True, help=".npz of PyTorch eager's outputs")
    args = parser.parse_args()

    # Replies go to the original stdout; anything a library prints goes to stderr.
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    try:
        preimport(args.runtime)
        worker = Worker(args)
        reply.write(json.dumps({"ready": True, "pid": os.getpid()}) + "\n")
    except Exception as e:  # noqa: BLE001 - reported to the driver
        reply.write(json.dumps({"error": f"{type(e).__name__}: {e}"}) + "\n")
        return 1
    for line in sys.stdin:
        msg = json.loads(line)
        if msg["cmd"] == "quit":
            break
        try:
            out = worker.handle(msg)
        except Exception as e:  # noqa: BLE001 - reported to the driver
            import traceback

            traceback.print_exc()
            out = {"error": f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"}
        reply.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
