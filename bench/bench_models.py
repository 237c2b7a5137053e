"""Latency of Tern against PyTorch eager, measured side by side in one run.

    .venv/bin/python bench/bench_models.py [--rounds 15] [--models mobilenet_v2,resnet18]

For each model: export once, then alternate runs of the Tern runtime (through
the Python bindings, the portable kernels) with 1 thread and with all physical
cores, and of PyTorch eager with 1 thread and with all threads, so that
machine noise hits all alike. Reports medians, Tern's thread speed-up, and the
ratios tern / torch at equal thread counts (below 1 means Tern is faster).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import torch
import torchvision

import tern

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))
from test_parity import CNN, MLP  # noqa: E402


def models() -> dict[str, tuple[torch.nn.Module, tuple[torch.Tensor, ...]]]:
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256, batch_first=True)
    return {
        "mlp": (MLP(), (torch.randn(4, 16),)),
        "cnn": (CNN(), (torch.randn(2, 3, 32, 32),)),
        "transformer_layer": (layer, (torch.randn(1, 32, 128),)),
        "mobilenet_v2": (torchvision.models.mobilenet_v2(), (torch.randn(1, 3, 224, 224),)),
        "resnet18": (torchvision.models.resnet18(), (torch.randn(1, 3, 224, 224),)),
    }


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e3


def bench(name: str, model: torch.nn.Module, args: tuple[torch.Tensor, ...], rounds: int, tmp: Path) -> dict:
    model.eval()
    path = tmp / f"{name}.tern"
    tern.export(model, args).save(path)
    threads = torch.get_num_threads()
    m1 = tern.load(str(path), threads=1)
    mn = tern.load(str(path), threads=threads)
    np_args = [a.numpy() for a in args]
    runs: dict[str, list[float]] = {"tern_1t": [], f"tern_{threads}t": [], "torch_1t": [], f"torch_{threads}t": []}
    with torch.no_grad():
        for _ in range(3):  # warm up
            m1(*np_args)
            mn(*np_args)
            model(*args)
        for _ in range(rounds):
            runs["tern_1t"].append(timed(lambda: m1(*np_args)))
            runs[f"tern_{threads}t"].append(timed(lambda: mn(*np_args)))
            torch.set_num_threads(1)
            runs["torch_1t"].append(timed(lambda: model(*args)))
            torch.set_num_threads(threads)
            runs[f"torch_{threads}t"].append(timed(lambda: model(*args)))
    return {k: statistics.median(v) for k, v in runs.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--models", default=",".join(models()))
    args = parser.parse_args()
    wanted = args.models.split(",")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, (model, inputs) in models().items():
            if name in wanted:
                print(f"{name} ...", file=sys.stderr, flush=True)
                rows.append((name, bench(name, model, inputs, args.rounds, Path(tmp))))
    t1, tn, p1, pn = list(rows[0][1])
    print(f"| model | {t1} ms | {tn} ms | {p1} ms | {pn} ms | {t1} / {tn} | {t1} / {p1} | {tn} / {pn} |")
    print("|---" * 8 + "|")
    for name, r in rows:
        cells = " | ".join(f"{r[k]:.3f}" for k in (t1, tn, p1, pn))
        print(f"| {name} | {cells} | {r[t1] / r[tn]:.2f} | {r[t1] / r[p1]:.2f} | {r[tn] / r[pn]:.2f} |")
    print(f"\nmedians of {args.rounds} interleaved rounds; torch {torch.__version__}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
