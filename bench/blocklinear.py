"""BlockLinear (the cpu backend's linear layer over GGUF rows, read in place)
against the float paths, one linear layer at a time, at 1 and 2 threads.
Not part of `make test` or `make bench`:

    PYTHONPATH=<where tern is installed> python bench/blocklinear.py [--rounds 200] [--m 1]

For each layer (n rows of k elements in a GGUF block format) it exports
y = F.linear(x, tern::gguf_dequantize(rows, fmt, k)) three ways and times
one call (the median of --rounds, after warm-up) of each:
  block    the default: one BlockLinear over the rows as the file holds them
  dequant  CpuOptions(block_linear=False): the portable dequantize kernel
           writes the float weight at each call, the float linear layer reads it
  f32      the same weight dequantized at export into a plain float32 linear
           layer (4 bytes a weight, packed for the float GEMM)
and prints the milliseconds, the GB/s of weight bytes each reads (the rows'
bytes for block and dequant, the float32 bytes for f32), and the ratio of
each float path's time to BlockLinear's.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

import tern
from tern.backends.cpu import CpuOptions, CpuPartitioner
from tern.llm.blocks import FORMATS, dequantize_numpy, gguf_dequantize_op, row_bytes

LAYERS = (  # (format, n, k): SmolLM2-135M's shapes (k 576: d_model; 1536: the FFN's)
    ("Q8_0", 49152, 576),  # the output layer (tied embeddings)
    ("Q4_1", 1536, 576),  # ffn_gate / ffn_up
    ("Q4_0", 1536, 576),
    ("Q8_0", 1536, 576),
    ("Q4_0", 576, 1536),  # ffn_down
    ("Q4_0", 4096, 4096),  # a 7B model's attention projection
)


def rows_of(fmt: str, n: int, k: int) -> torch.Tensor:
    """Random rows with a trained layer's scales (about 0.01)."""
    f = FORMATS[fmt]
    gen = torch.Generator().manual_seed(0)
    rows = torch.randint(0, 256, (n, row_bytes(f, k)), dtype=torch.uint8, generator=gen)
    blocks = rows.view(n, k // 32, f.bytes)
    blocks[..., 0:2] = (torch.rand(n, k // 32, generator=gen) * 0.02).half().view(torch.uint8).view(n, k // 32, 2)
    if fmt == "Q4_1":
        blocks[..., 2:4] = (-torch.rand(n, k // 32, generator=gen) * 0.1).half().view(torch.uint8).view(n, k // 32, 2)
    return rows


class GGUFLinear(nn.Module):
    def __init__(self, rows: torch.Tensor, code: int, k: int) -> None:
        super().__init__()
        self.register_buffer("rows", rows)
        self.code, self.k = code, k

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, gguf_dequantize_op()(self.rows, self.code, self.k))


def time_call(path: Path, x: torch.Tensor, threads: int, rounds: int) -> float:
    """Median seconds of one call."""
    module = tern.load(str(path), threads=threads)
    for _ in range(max(3, rounds // 10)):
        module(x)
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        module(x)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--m", type=int, default=1, help="rows of x (1: a decode step's GEMV)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--layers", default="", help="indices into LAYERS, e.g. 0,2 (default: all)")
    ap.add_argument("--paths", default="block,dequant,f32", help="which of block, dequant, f32 to time")
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    print(f"m = {args.m}; ms a call (median of {args.rounds}), GB/s of weight bytes read, "
          "time / BlockLinear's")
    print(f"{'layer':24} {'thr':>3} {'block ms':>9} {'GB/s':>6} {'dequant ms':>10} {'GB/s':>6} {'x':>6} "
          f"{'f32 ms':>8} {'GB/s':>6} {'x':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        chosen = [LAYERS[int(i)] for i in args.layers.split(",")] if args.layers else LAYERS
        wanted = args.paths.split(",")
        for fmt, n, k in chosen:
            rows = rows_of(fmt, n, k)
            model = GGUFLinear(rows, FORMATS[fmt].code, k).eval()
            w = torch.from_numpy(dequantize_numpy(rows.numpy(), FORMATS[fmt], k))
            f32 = nn.Linear(k, n, bias=False).eval()
            with torch.no_grad():
                f32.weight.copy_(w)
            x = torch.randn(args.m, k)
            paths = {}
            for name, m, options in (("block", model, None), ("dequant", model, CpuOptions(block_linear=False)),
                                     ("f32", f32, None)):
                if name not in wanted:
                    continue
                paths[name] = Path(tmp) / f"{name}.tern"
                tern.export(m, (x,), partitioners=[CpuPartitioner(options=options)]).save(paths[name])
            nbytes = {"block": rows.numel(), "dequant": rows.numel(), "f32": 4 * n * k}
            for t in threads:
                s = {name: time_call(p, x, t, args.rounds) for name, p in paths.items()}
                cells = []
                for name, width in (("block", 9), ("dequant", 10), ("f32", 8)):
                    if name not in s:
                        cells.append(f"{'-':>{width}} {'-':>6}" + (f" {'-':>6}" if name != "block" else ""))
                        continue
                    cells.append(f"{s[name] * 1e3:>{width}.3f} {nbytes[name] / s[name] / 1e9:>6.1f}")
                    if name != "block":
                        cells[-1] += f" {s[name] / s['block']:>6.1f}" if "block" in s else f" {'-':>6}"
                print(f"{fmt + f' {n}x{k}':24} {t:>3} " + " ".join(cells), flush=True)


if __name__ == "__main__":
    main()
