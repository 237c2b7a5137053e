"""The Tern demo: export torchvision's mobilenet_v2 and run it with tern-run.

Run with `make demo`. Steps: build mobilenet_v2 with fixed-seed random weights
(no download), export it to out/mobilenet_v2.tern, run the file with the C++
command-line tool on a fixed input, and compare with PyTorch eager.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torchvision

import tern


def calibrated(model: torch.nn.Module) -> torch.nn.Module:
    """Fixed-seed random weights, with batch-norm statistics measured on random
    images (as training would), so activations keep a realistic scale instead
    of fading to ~1e-9 through 50 layers of unnormalized random convolutions."""
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()
            m.momentum = None  # a plain average over the calibration batches
    model.train()
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for _ in range(2):
            model(torch.randn(8, 3, 224, 224, generator=g))
    return model.eval()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tern-run", default="build/tern-run", help="path of the tern-run tool")
    parser.add_argument("--out", default="out", help="folder for the exported file and arrays")
    parser.add_argument("--iterations", type=int, default=20)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(exist_ok=True)

    torch.manual_seed(0)
    model = calibrated(torchvision.models.mobilenet_v2(weights=None))
    x = torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(1))

    print("exporting mobilenet_v2 ...", flush=True)
    t0 = time.perf_counter()
    program = tern.export(model, (x,))
    path = out / "mobilenet_v2.tern"
    program.save(path)
    print(f"exported {path} in {time.perf_counter() - t0:.1f} s: {path.stat().st_size / 1e6:.2f} MB, "
          f"planned memory {program.planned_bytes / 1e6:.2f} MB "
          f"(lower bound {program.lower_bound_bytes / 1e6:.2f} MB)")

    np.save(out / "input.npy", x.numpy())
    cmd = [args.tern_run, str(path), "--input", str(out / "input.npy"), "--output", str(out / "output.npy"),
           "--iterations", str(args.iterations), "--warmup", "3"]
    print("$ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)

    with torch.no_grad():
        ref = model(x).numpy()
    got = np.load(out / "output.npy")
    diff = float(np.max(np.abs(got - ref)))
    tol = 1e-4 * max(1.0, float(np.max(np.abs(ref))))
    print(f"PyTorch eager top-5: {np.argsort(-ref[0])[:5].tolist()}   tern top-5: {np.argsort(-got[0])[:5].tolist()}")
    print(f"largest difference from PyTorch eager: {diff:.3g} (tolerance {tol:.3g})")
    if diff > tol:
        print("FAIL: tern's output differs from PyTorch eager beyond the tolerance", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
