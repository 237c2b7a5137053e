"""Lowers saved torch.export programs to ExecuTorch .pte files (runs in the
ExecuTorch environment: torch 2.13.0 + executorch 1.5.1, see bench/README.md).

    python bench/et_lower.py MODEL.pt2 --xnnpack OUT_XNNPACK.pte --portable OUT_PORTABLE.pte

The program comes from `torch.export.save` in the main environment (torch
2.14.1 + torchvision, which do not import beside ExecuTorch); it is loaded with
`torch.export.load` and lowered with `to_edge_transform_and_lower`: with
`XnnpackPartitioner()` (fp32) for the XNNPACK file, without a partitioner (the
portable kernels) for the other. Prints one JSON line: for each file, "ok" and
the seconds lowering took, or "unsupported: <first line of the error>".
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
import warnings


def lower(ep, out: str, xnnpack: bool) -> dict:
    from executorch.exir import to_edge_transform_and_lower

    partitioner = []
    if xnnpack:
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

        partitioner = [XnnpackPartitioner()]
    t0 = time.perf_counter()
    try:
        program = to_edge_transform_and_lower(ep, partitioner=partitioner).to_executorch()
    except Exception as e:  # noqa: BLE001 - any failure means this model does not lower
        traceback.print_exc(file=sys.stderr)
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        return {"status": f"unsupported: {type(e).__name__}: {first[:300]}"}
    with open(out, "wb") as f:
        program.write_to_file(f)
    return {"status": "ok", "seconds": round(time.perf_counter() - t0, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("program", help="a torch.export.save file (.pt2)")
    parser.add_argument("--xnnpack", help="write the XNNPACK-delegated .pte here")
    parser.add_argument("--portable", help="write the portable-kernel .pte here")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    import torch

    ep = torch.export.load(args.program)
    result = {}
    if args.xnnpack:
        result["et_xnnpack"] = lower(ep, args.xnnpack, xnnpack=True)
    if args.portable:
        result["et_portable"] = lower(ep, args.portable, xnnpack=False)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
