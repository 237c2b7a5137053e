"""Views without copies (tern.aliasing): planned bytes and latency before and
after, measured side by side in one run.

    .venv/bin/python bench/views.py [--rounds 15] [--threads 1]

For mobilenet_v2 (224x224) and a transformer (2 encoder layers, d_model 256,
sequence 128), each on the portable kernels alone and with the cpu backend:
export twice, with views aliasing their source and with every view copying
(tern.aliasing.alias_views switched off), then alternate runs of the two
files so that machine noise hits both alike. Prints planned bytes, view
copies left in the file, median latency of each and the ratio after/before.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
import torchvision

import tern
import tern.aliasing

VIEW_OPS = {"aten::view", "aten::_unsafe_view", "aten::squeeze.dim", "aten::squeeze.dims", "aten::unsqueeze",
            "aten::alias", "aten::expand", "aten::slice.Tensor", "aten::select.int"}


def models() -> dict[str, tuple[torch.nn.Module, tuple[torch.Tensor, ...]]]:
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=512, batch_first=True)
    return {
        "mobilenet_v2": (torchvision.models.mobilenet_v2().eval(), (torch.randn(1, 3, 224, 224),)),
        "transformer": (torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval(),
                        (torch.randn(1, 128, 256),)),
    }


def export(model: torch.nn.Module, args: tuple[Any, ...], views: bool, partitioners: Any) -> tern.Program:
    if views:
        return tern.export(model, args, partitioners=partitioners)
    saved = tern.aliasing.alias_views
    tern.aliasing.alias_views = lambda method: {}
    try:
        return tern.export(model, args, partitioners=partitioners)
    finally:
        tern.aliasing.alias_views = saved


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, (model, inputs) in models().items():
            for backend, partitioners in (("portable", ()), ("cpu", None)):
                programs, modules = {}, {}
                for views in (False, True):
                    programs[views] = export(model, inputs, views, partitioners)
                    path = Path(tmp) / f"{name}-{backend}-{views}.tern"
                    programs[views].save(path)
                    modules[views] = tern.load(str(path), threads=args.threads)
                    modules[views](*inputs)  # warm up
                times: dict[bool, list[float]] = {False: [], True: []}
                for _ in range(args.rounds):
                    for views in (False, True):
                        start = time.perf_counter()
                        modules[views](*inputs)
                        times[views].append((time.perf_counter() - start) * 1e3)
                copies = {v: sum(n for op, n in p.op_counts if op in VIEW_OPS) for v, p in programs.items()}
                med = {v: statistics.median(t) for v, t in times.items()}
                rows.append((name, backend, programs[False].planned_bytes, programs[True].planned_bytes,
                             copies[False], copies[True], med[False], med[True]))
                print(f"{name:13} {backend:8} done", file=sys.stderr)
    print(f"threads {args.threads}, {args.rounds} rounds, medians; before = every view copies, after = views alias")
    print(f"| model | kernels | planned bytes before | after | view copies before | after | ms before | after | after/before |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, backend, b0, b1, c0, c1, t0, t1 in rows:
        print(f"| {name} | {backend} | {b0:,} | {b1:,} | {c0} | {c1} | {t0:.2f} | {t1:.2f} | {t1 / t0:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
