"""The quantized rows of `make bench`: Tern's quantized models against Tern
fp32, ONNX Runtime's quantized (QDQ) models and ExecuTorch's XNNPACK
quantized ones, in the same run (bench/README.md, "Quantized rows").

    .venv-bench/bin/python bench/quant.py [--models mobilenet_v2,resnet18] [--threads 1,2] [--rounds 7]

For each model (bench/models.py, the same weights and input as the float
rows), its scheme, and the calibration inputs (the bench input and
--calibration - 1 more drawn like it, from seed 5):

| model | scheme | Tern | ONNX Runtime | ExecuTorch XNNPACK |
|---|---|---|---|---|
| mobilenet_v2, resnet18 | static int8 | tern.quantize "int8" | quantize_static, QDQ, per-channel int8 weights, int8 activations (MinMax) | XNNPACKQuantizer, symmetric per-channel |
| bert_encoder | dynamic int8 linear | "int8-dynamic" | quantize_dynamic, int8 weights | XNNPACKQuantizer, dynamic |
| decoder_4x512 | int4 weight-only | "int4-weight", groups of 32 (and the file sizes at 64 and 128) | MatMul4BitsQuantizer, blocks of 32, symmetric | not run (its int4 path is torchao's quantize_ API, not a PT2E quantizer) |

Each runtime runs in its own worker process (bench/worker.py, as in
bench/run.py, interleaved rounds); each file's output is compared with
PyTorch eager's float output on the bench input: SNR in dB. Writes
bench/results/<date>-quant.{json,md}.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from models import MODELS, build  # noqa: E402
from prepare import Artifacts, _prepare_onnx, first_line, new_artifacts  # noqa: E402
from run import Group, log, machine_info, versions  # noqa: E402

SCHEMES = {"mobilenet_v2": "int8", "resnet18": "int8", "bert_encoder": "int8-dynamic", "decoder_4x512": "int4-weight"}
RUNTIMES = ["tern", "tern_q", "ort_q", "et_xnnpack_q"]
LABELS = {"tern": "Tern fp32", "tern_q": "Tern quantized", "ort_q": "ONNX Runtime quantized",
          "et_xnnpack_q": "ExecuTorch XNNPACK quantized"}
_QUANT_VERSION = "1"  # bump when a peer's quantization call changes


def calibration_for(inputs: tuple[torch.Tensor, ...], n: int) -> list[tuple[torch.Tensor, ...]]:
    """The bench input and n - 1 more like it (token ids: from the same range)."""
    g = torch.Generator().manual_seed(5)
    out = [inputs]
    for _ in range(n - 1):
        batch = []
        for x in inputs:
            if x.is_floating_point():
                batch.append(torch.randn(x.shape, generator=g) * x.std() + x.mean())
            else:
                batch.append(torch.randint(int(x.min()), int(x.max()) + 1, x.shape, generator=g, dtype=x.dtype))
        out.append(tuple(batch))
    return out


def prepare(name: str, work: Path, cache_root: Path, et_python: str | None, n_cal: int) -> Artifacts:
    import tern

    module, inputs = build(name)
    scheme = SCHEMES[name]
    art = new_artifacts(name, module, inputs, cache_root)
    cache = art.inputs.parent
    calibration = calibration_for(inputs, n_cal)

    t0 = time.perf_counter()
    art.files["tern"] = work / f"{name}.tern"
    tern.export(module, inputs).save(str(art.files["tern"]))
    art.status["tern"], art.notes["tern"] = "ok", "tern.export(module, inputs)"
    art.files["tern_q"] = work / f"{name}-q.tern"
    group = {"group_size": 32} if scheme == "int4-weight" else {}
    qmodel = tern.quantize(module, inputs, calibration=calibration, scheme=scheme, progress=False, **group)
    tern.export(qmodel, inputs).save(str(art.files["tern_q"]))
    art.status["tern_q"] = "ok"
    art.notes["tern_q"] = f"tern.quantize(scheme={scheme!r}{', group_size=32' if group else ''}) + tern.export; " \
                          f"{qmodel.meta['tern_quantization']}"
    if group:  # the timed file matches ONNX Runtime's blocks of 32; the file sizes of the larger groups too
        fp32 = art.files["tern"].stat().st_size
        sizes = []
        for g in (64, 128):
            wider = work / f"{name}-q{g}.tern"
            tern.export(tern.quantize(module, inputs, calibration=calibration, scheme=scheme, progress=False,
                                      group_size=g), inputs).save(str(wider))
            sizes.append(f"group_size={g}: {wider.stat().st_size / 1e6:.2f} MB ({fp32 / wider.stat().st_size:.1f}x)")
            wider.unlink()
        art.notes["tern_q"] += "; files at " + ", ".join(sizes)
    log(f"  tern, tern_q: {time.perf_counter() - t0:.1f} s")

    _prepare_ort_quantized(art, module, inputs, calibration, scheme, cache)
    _prepare_et_quantized(art, module, inputs, calibration, scheme, cache, et_python)
    return art


def _prepare_ort_quantized(art: Artifacts, module, inputs, calibration, scheme: str, cache: Path) -> None:
    out = cache / f"ort_q-{_QUANT_VERSION}.onnx"
    t0 = time.perf_counter()
    if out.exists():
        art.files["ort_q"], art.status["ort_q"] = out, "ok"
    else:
        _prepare_onnx(art, module, inputs, cache, log)  # the float model.onnx (cached)
        if art.status.get("ort") != "ok":
            art.files["ort_q"], art.status["ort_q"] = None, f"not run: {art.status.get('ort')}"
            return
        try:
            _quantize_onnx(cache / "model.onnx", out, calibration, scheme)
            art.files["ort_q"], art.status["ort_q"] = out, "ok"
        except Exception as e:  # noqa: BLE001 - any quantization failure
            art.files["ort_q"], art.status["ort_q"] = None, f"unsupported: {first_line(e)}"
    art.notes["ort_q"] = {
        "int8": "quantize_static(QDQ, per_channel=True, QInt8 weights and activations, MinMax calibration), "
                "after quant_pre_process",
        "int8-dynamic": "quantize_dynamic(weight_type=QInt8, per_channel=True)",
        "int4-weight": "MatMul4BitsQuantizer(block_size=32, is_symmetric=True)",
    }[scheme]
    log(f"  ort_q: {art.status['ort_q']} ({time.perf_counter() - t0:.1f} s)")


def _quantize_onnx(src: Path, out: Path, calibration, scheme: str) -> None:
    import onnx
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_dynamic,
        quantize_static,
    )

    if scheme == "int8-dynamic":
        quantize_dynamic(str(src), str(out), weight_type=QuantType.QInt8, per_channel=True)
        return
    if scheme == "int4-weight":
        from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

        q = MatMulNBitsQuantizer(onnx.load(str(src)), block_size=32, is_symmetric=True)
        q.process()
        q.model.save_model_to_file(str(out), use_external_data_format=False)
        return
    from onnxruntime.quantization.shape_inference import quant_pre_process

    pre = out.with_suffix(".pre.onnx")
    quant_pre_process(str(src), str(pre))
    names = [i.name for i in onnx.load(str(pre)).graph.input]

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter([{n: x.numpy() for n, x in zip(names, batch)} for batch in calibration])

        def get_next(self):
            return next(self.it, None)

    quantize_static(str(pre), str(out), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    pre.unlink()


def _prepare_et_quantized(art: Artifacts, module, inputs, calibration, scheme: str, cache: Path,
                          et_python: str | None) -> None:
    if scheme == "int4-weight":
        art.files["et_xnnpack_q"] = None
        art.status["et_xnnpack_q"] = "not run: ExecuTorch's int4 weight-only path is torchao's quantize_ API, " \
                                     "not a PT2E quantizer (not set up here)"
        return
    if et_python is None:
        art.files["et_xnnpack_q"], art.status["et_xnnpack_q"] = None, "not run: no ExecuTorch environment"
        return
    out = cache / f"et_xnnpack_q-{_QUANT_VERSION}.pte"
    art.notes["et_xnnpack_q"] = (f"XNNPACKQuantizer(get_symmetric_quantization_config(is_per_channel=True"
                                 f"{', is_dynamic=True' if scheme == 'int8-dynamic' else ''})), prepare_pt2e, "
                                 "calibration, convert_pt2e, XnnpackPartitioner (bench/et_quant.py)")
    if out.exists():
        art.files["et_xnnpack_q"], art.status["et_xnnpack_q"] = out, "ok"
        return
    program = cache / "model.pt2"
    if not program.exists():
        torch.export.save(torch.export.export(module, inputs), str(program))
    cal = cache / "calibration.npz"
    np.savez(cal, **{f"b{i}_{j}": x.numpy() for i, b in enumerate(calibration) for j, x in enumerate(b)})
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    t0 = time.perf_counter()
    with open(cache / "et_xnnpack_q.log", "w") as err:
        proc = subprocess.run([et_python, str(BENCH / "et_quant.py"), str(program), str(cal), str(out),
                               "--scheme", scheme], stdout=subprocess.PIPE, stderr=err, text=True, env=env,
                              timeout=1800)
    lines = proc.stdout.strip().splitlines()
    status = json.loads(lines[-1])["status"] if proc.returncode == 0 and lines else \
        f"error: et_quant.py exited {proc.returncode} (see {cache / 'et_xnnpack_q.log'})"
    art.status["et_xnnpack_q"] = status
    art.files["et_xnnpack_q"] = out if status == "ok" else None
    log(f"  et_xnnpack_q: {status} ({time.perf_counter() - t0:.0f} s)")


def snr_db(res: dict) -> float | None:
    if "sum_sq_err" not in res:
        return None
    if res["sum_sq_err"] == 0:
        return math.inf
    return 10 * math.log10(res["sum_sq_ref"] / res["sum_sq_err"])


def markdown(results: dict) -> str:
    lines = [f"# Quantized rows, {results['date']}", "",
             f"`{results['command']}`; {results['machine'].get('cpu', '')}; medians of "
             f"{results['settings']['rounds']} interleaved rounds; SNR of each output against PyTorch eager's "
             "float output on the bench input.", ""]
    lines += ["| model | scheme | threads | runtime | median ms | vs Tern fp32 | vs fastest quantized peer | "
              "file MB | SNR dB | status |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name, entry in results["models"].items():
        for threads, res in entry["threads"].items():
            fp32 = res.get("tern", {}).get("median_ms")
            peers = [res[r]["median_ms"] for r in ("ort_q", "et_xnnpack_q") if res.get(r, {}).get("median_ms")]
            best_peer = min(peers) if peers else None
            for rt in RUNTIMES:
                r = res.get(rt, {})
                ms = r.get("median_ms")
                vs_fp32 = f"{ms / fp32:.2f}x" if ms and fp32 else ""
                vs_peer = f"{ms / best_peer:.2f}x" if ms and best_peer and rt == "tern_q" else ""
                mb = f"{r['file_bytes'] / 1e6:.2f}" if r.get("file_bytes") else ""
                snr = snr_db(r)
                snr_s = "" if snr is None else ("inf" if math.isinf(snr) else f"{snr:.1f}")
                lines.append(f"| {name} | {entry['scheme']} | {threads} | {LABELS[rt]} | "
                             f"{ms:.2f} | {vs_fp32} | {vs_peer} | {mb} | {snr_s} | {r.get('status', '')} |"
                             if ms else f"| {name} | {entry['scheme']} | {threads} | {LABELS[rt]} | | | | {mb} | "
                                        f"{snr_s} | {r.get('status', '')} |")
    lines += ["", "How each file was made:", ""]
    for name, entry in results["models"].items():
        for rt in RUNTIMES:
            note = entry["export"].get(rt, {}).get("note")
            if note:
                lines.append(f"- {name}, {LABELS[rt]}: {note}")
    return "\n".join(lines) + "\n"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(SCHEMES), help=f"comma-separated, of: {', '.join(SCHEMES)}")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--calibration", type=int, default=8, help="calibration batches (the bench input among them)")
    p.add_argument("--round-ms", type=float, default=400)
    p.add_argument("--max-iters", type=int, default=25)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--slow-ms", type=float, default=3000)
    p.add_argument("--slow-rounds", type=int, default=2)
    p.add_argument("--max-ms", type=float, default=60000)
    p.add_argument("--pause-ms", type=float, default=50)
    p.add_argument("--load-timeout", type=float, default=900)
    p.add_argument("--et-python", default=str(ROOT / ".venv-executorch" / "bin" / "python"))
    p.add_argument("--cache-dir", default=os.path.join(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"),
                                                      "tern", "bench-models"))
    p.add_argument("--out", help="output path without extension (default bench/results/<date>-quant)")
    a = p.parse_args()
    a.models = a.models.split(",")
    unknown = [m for m in a.models if m not in SCHEMES]
    if unknown:
        p.error(f"unknown models {unknown}; known: {list(SCHEMES)}")
    a.threads = [int(t) for t in a.threads.split(",")]
    a.runtimes = RUNTIMES
    a.atol, a.rtol = math.inf, 0.0  # quantized outputs differ from eager's: SNR is reported instead
    if not Path(a.et_python).exists():
        log(f"no ExecuTorch environment at {a.et_python}: ExecuTorch is not run")
        a.et_python = None
    return a


def main() -> int:
    warnings.filterwarnings("ignore")
    args = parse_args()
    started = time.time()
    today = datetime.date.today().isoformat()
    out = Path(args.out) if args.out else BENCH / "results" / f"{today}-quant"
    out.parent.mkdir(parents=True, exist_ok=True)
    results: dict = {"date": today, "command": " ".join(sys.argv), "machine": machine_info(),
                     "versions": versions(args.et_python),
                     "settings": {k: v for k, v in vars(args).items() if k in ("threads", "rounds", "calibration")},
                     "models": {}}
    with tempfile.TemporaryDirectory(prefix="tern-bench-quant-") as tmp:
        work, logs = Path(tmp), out.parent / "logs"
        logs.mkdir(exist_ok=True)
        for i, name in enumerate(args.models):
            log(f"[{i + 1}/{len(args.models)}] {name} ({SCHEMES[name]}): quantizing and exporting ...")
            art = prepare(name, work, Path(args.cache_dir), args.et_python, args.calibration)
            entry = {"description": MODELS[name].description, "scheme": SCHEMES[name],
                     "export": {rt: {"status": art.status.get(rt), "note": art.notes.get(rt)} for rt in RUNTIMES},
                     "threads": {}}
            for threads in args.threads:
                log(f"[{i + 1}/{len(args.models)}] {name}, {threads} thread(s) ...")
                group = Group(art, threads, args, logs, {})
                for r in range(args.rounds):
                    group.round(r)
                entry["threads"][str(threads)] = group.finish()
            results["models"][name] = entry
            results["duration_s"] = round(time.time() - started)
            Path(str(out) + ".json").write_text(json.dumps(results, indent=1))
            Path(str(out) + ".md").write_text(markdown(results))
    log(f"done in {(time.time() - started) / 60:.1f} min: {out}.json, {out}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
