"""Quantizes a saved torch.export program with ExecuTorch's own XNNPACK
quantizer and lowers it to an XNNPACK .pte (runs in the ExecuTorch
environment, like et_lower.py; see bench/README.md "Quantized rows").

    python bench/et_quant.py MODEL.pt2 CALIBRATION.npz OUT.pte --scheme int8|int8-dynamic

int8: XNNPACKQuantizer with get_symmetric_quantization_config(is_per_channel=True)
(static, per-channel int8 weights, per-tensor int8 activations); int8-dynamic:
the same with is_dynamic=True (linear layers on activations quantized per
call). prepare_pt2e, one call per calibration batch (CALIBRATION.npz holds
arrays "b<i>_<j>": batch i, input j), convert_pt2e, torch.export,
to_edge_transform_and_lower(XnnpackPartitioner()). Prints one JSON line:
{"status": "ok", "seconds": ...} or {"status": "unsupported: ..."}.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
import warnings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("program")
    parser.add_argument("calibration")
    parser.add_argument("out")
    parser.add_argument("--scheme", choices=["int8", "int8-dynamic"], required=True)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    import numpy as np
    import torch

    t0 = time.perf_counter()
    try:
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
        from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
            XNNPACKQuantizer,
            get_symmetric_quantization_config,
        )
        from executorch.exir import to_edge_transform_and_lower
        from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

        ep = torch.export.load(args.program)
        data = np.load(args.calibration)
        batches: dict[int, dict[int, torch.Tensor]] = {}
        for key in data.files:
            i, j = (int(p) for p in key[1:].split("_"))
            batches.setdefault(i, {})[j] = torch.from_numpy(data[key])
        calibration = [tuple(b[j] for j in sorted(b)) for _, b in sorted(batches.items())]
        quantizer = XNNPACKQuantizer().set_global(
            get_symmetric_quantization_config(is_per_channel=True, is_dynamic=args.scheme == "int8-dynamic"))
        prepared = prepare_pt2e(ep.module(), quantizer)
        for batch in calibration:
            prepared(*batch)
        converted = convert_pt2e(prepared)
        qep = torch.export.export(converted, calibration[0])
        program = to_edge_transform_and_lower(qep, partitioner=[XnnpackPartitioner()]).to_executorch()
        with open(args.out, "wb") as f:
            program.write_to_file(f)
    except Exception as e:  # noqa: BLE001 - any failure means this model does not quantize or lower
        traceback.print_exc(file=sys.stderr)
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        print(json.dumps({"status": f"unsupported: {type(e).__name__}: {first[:300]}"}), flush=True)
        return 0
    print(json.dumps({"status": "ok", "seconds": round(time.perf_counter() - t0, 1)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
