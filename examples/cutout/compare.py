"""`make app-cutout`'s report (issue 25): build/examples/cutout against
MobileSAM's SamPredictor with the same weights.

    python examples/cutout/compare.py [--out out] [--cutout build/examples/cutout]
                                      [--threads 1] [--rounds 3] [--runs 3]

1. Quality, for each sample photo in --out (convert.py --samples) and each of
   its point sets (convert.SAMPLES): the program's mask (its --logits, at the
   photo's size) against SamPredictor's (predict(..., return_logits=True), the
   mask chosen as the program chooses it), IoU of the masks thresholded at 0
   (goal >= 0.99). Beside it, what makes the figure meaningful with random
   weights: the foreground share, and the share of pixels whose reference
   logit is within 1% of the logits' standard deviation of the threshold.
   Also writes out/cutout-<photo>.png, the program's sticker of the first
   point set.
2. Latency of the encoder and of the decoder (one point), --threads threads,
   side by side in one run: Tern (the program's --time), PyTorch eager,
   ONNX Runtime (.venv-bench: torch.onnx.export of the same torch.export
   graphs) and ExecuTorch with XNNPACK (.venv-executorch: the graphs lowered
   with XnnpackPartitioner, as bench/et_lower.py). Each round measures every
   runtime --runs times and keeps the median; the table shows the median of
   the rounds. The peers' decoder takes exactly one point (N = 2 with the
   padding point, a static graph); Tern's is the app's file (N dynamic).
Exit status 1 if the quality goal is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def run_cutout(cutout: str, image: str, points, *extra: str) -> subprocess.CompletedProcess:
    args = [cutout, image, *[f"{x},{y}" for x, y in points], *extra]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"compare: {' '.join(args)} failed:\n{r.stderr}")
    return r


def iou(a, b) -> float:
    union = (a | b).sum()
    return float((a & b).sum() / union) if union else 1.0


def quality(a: argparse.Namespace, convert) -> bool:
    import numpy as np
    import torch
    from mobile_sam import SamPredictor

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    sam = convert.build_sam(a.seed)
    ok = True
    rows = []
    for name, (ext, point_sets) in convert.SAMPLES.items():
        path = os.path.join(a.out, f"{name}.{ext}")
        rgb = convert.read_image(path)
        predictor = SamPredictor(sam)
        predictor.set_image(rgb)
        for i, points in enumerate(point_sets):
            ref = convert.predictor_logits(sam, rgb, points, predictor)
            logits = os.path.join(a.out, f"cutout-{name}-{i}.f32")
            extra = ["-o", os.path.join(a.out, f"cutout-{name}.png" if i == 0 else f"cutout-{name}-{i}.png"),
                     "--logits", logits, "--model", a.model]
            run_cutout(a.cutout, path, points, *extra)
            got = np.fromfile(logits, dtype=np.float32).reshape(ref.shape)
            os.remove(logits)
            if i == 0 and name == a.picture_photo:
                picture(a.picture, rgb, points, got > 0, ref > 0)
            v = iou(got > 0, ref > 0)
            near = float((np.abs(ref) < 0.01 * ref.std()).mean())
            diff = float(np.abs(got - ref).max() / np.abs(ref).max())
            ok = ok and v >= 0.99
            rows.append((f"{name}.{ext}", " ".join(f"{x},{y}" for x, y in points), v, float((ref > 0).mean()), near,
                         diff))
    print("\n| photo | points | mask IoU, Tern vs SamPredictor (goal >= 0.99) | foreground | "
          "pixels near the threshold | max abs. logit diff / max abs. logit |")
    print("|---|---|---:|---:|---:|---:|")
    for photo, pts, v, fg, near, diff in rows:
        print(f"| {photo} | {pts} | {v:.4f} | {fg:.1%} | {near:.2%} | {diff:.1e} |")
    print("(near the threshold: |reference logit| < 1% of the logits' standard deviation)")
    return ok


def picture(path: str, rgb, points, mask, ref_mask) -> None:
    """The README's picture: the photo with the points, the program's sticker
    over a checkerboard, and the masks' disagreement with SamPredictor's in red."""
    import numpy as np
    from PIL import Image, ImageDraw

    h, w = mask.shape
    photo = Image.fromarray(rgb)
    draw = ImageDraw.Draw(photo)
    for x, y in points:
        draw.ellipse((x - 6, y - 6, x + 6, y + 6), fill=(0, 255, 0), outline=(0, 0, 0), width=2)
    yy, xx = np.mgrid[0:h, 0:w]
    board = np.where(((yy // 16 + xx // 16) % 2 == 0)[..., None], 200, 255).astype(np.uint8).repeat(3, -1)
    sticker = np.where(mask[..., None], rgb, board)
    diff = np.full((h, w, 3), 255, np.uint8)
    diff[mask] = (120, 120, 120)
    diff[mask != ref_mask] = (255, 0, 0)
    out = np.concatenate([np.asarray(photo), sticker, diff], 1)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    Image.fromarray(out).save(path)
    print(f"compare: wrote {path} (photo and points | Tern's sticker | Tern's mask grey, "
          f"pixels where SamPredictor's differs red: {int((mask != ref_mask).sum())})")


# ---- latency --------------------------------------------------------------------------

class Worker:
    """A peer runtime in its own environment, one process for the whole run:
    this file with --worker KIND. Asks 'encoder RUNS' / 'decoder RUNS',
    gets the median milliseconds."""

    def __init__(self, kind: str, python: str, enc_pt2: str, dec_pt2: str, out: str, threads: int):
        self.kind = kind
        self.p = subprocess.Popen([python, __file__, "--worker", kind, enc_pt2, dec_pt2, out, str(threads)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        reply = self.p.stdout.readline()
        if not reply.startswith("ready"):
            raise RuntimeError(f"{kind} worker: {reply!r}")
        print(f"compare: {kind}: {reply.strip()}")

    def median_ms(self, what: str, runs: int) -> float:
        self.p.stdin.write(f"{what} {runs}\n")
        self.p.stdin.flush()
        return float(self.p.stdout.readline())

    def close(self) -> None:
        self.p.stdin.close()
        self.p.wait()


def worker(kind: str, enc_pt2: str, dec_pt2: str, out: str, threads: int) -> None:
    """The worker's side: ONNX Runtime ("ort") or ExecuTorch XNNPACK ("et")
    on the saved torch.export graphs, checked against them once."""
    import warnings

    import numpy as np
    import torch

    warnings.filterwarnings("ignore")
    torch.set_num_threads(threads)
    runners, notes = {}, []
    for what, pt2 in (("encoder", enc_pt2), ("decoder", dec_pt2)):
        ep = torch.export.load(pt2)
        args = ep.example_inputs[0]
        with torch.no_grad():
            ref = [t.numpy() for t in ep.module()(*args)] if what == "decoder" else [ep.module()(*args).numpy()]
        if kind == "ort":
            import onnxruntime as ort

            path = os.path.join(out, f"cutout-{what}.onnx")
            torch.onnx.export(ep, args, path, dynamo=True, verbose=False)
            options = ort.SessionOptions()
            options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
            options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
            feed = {i.name: x.numpy() for i, x in zip(session.get_inputs(), args)}
            run = (lambda s, f: lambda: s.run(None, f))(session, feed)
        else:
            from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
            from executorch.exir import to_edge_transform_and_lower
            from executorch.extension.pybindings.portable_lib import _load_for_executorch, _unsafe_reset_threadpool

            path = os.path.join(out, f"cutout-{what}-xnnpack.pte")
            t0 = time.perf_counter()
            program = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch()
            with open(path, "wb") as f:
                program.write_to_file(f)
            notes.append(f"{what} lowered in {time.perf_counter() - t0:.0f} s")
            _unsafe_reset_threadpool(threads)
            module = _load_for_executorch(path)
            run = (lambda m, a: lambda: [t.numpy() for t in m.forward(a)])(module, tuple(args))
        got = run()
        err = max(float(np.abs(g - r).max() / np.abs(r).max()) for g, r in zip(got, ref))
        notes.append(f"{what} max |diff| / max |ref| {err:.1e}")
        runners[what] = run
    print("ready " + "; ".join(notes), flush=True)
    for line in sys.stdin:
        what, runs = line.split()
        ms = []
        for _ in range(int(runs)):
            t0 = time.perf_counter()
            runners[what]()
            ms.append((time.perf_counter() - t0) * 1e3)
        print(statistics.median(ms), flush=True)


def latency(a: argparse.Namespace, convert) -> None:
    import torch

    torch.set_num_threads(a.threads)
    sam = convert.build_sam(a.seed)
    name, (ext, point_sets) = next(iter(convert.SAMPLES.items()))
    photo, points = os.path.join(a.out, f"{name}.{ext}"), point_sets[0]
    rgb = convert.read_image(photo)
    encoder, decoder = convert.Encoder(sam).eval(), convert.Decoder(sam).eval()
    x = convert.preprocess(rgb)
    with torch.no_grad():
        emb = encoder(x)
    dec_args = (emb, *convert.prompt(points, *rgb.shape[:2]))
    enc_pt2, dec_pt2 = os.path.join(a.out, "cutout-encoder.pt2"), os.path.join(a.out, "cutout-decoder.pt2")
    torch.export.save(torch.export.export(encoder, (x,)), enc_pt2)
    torch.export.save(torch.export.export(decoder, dec_args), dec_pt2)

    workers = {}
    for kind, label, python in (("ort", "ONNX Runtime", a.bench_python),
                                ("et", "ExecuTorch (XNNPACK)", a.et_python)):
        if os.path.exists(python):
            workers[label] = Worker(kind, python, enc_pt2, dec_pt2, a.out, a.threads)
        else:
            print(f"compare: {label} not measured: no {python}")

    def eager(what: str, runs: int) -> float:
        model, args = (encoder, (x,)) if what == "encoder" else (decoder, dec_args)
        ms = []
        with torch.inference_mode():
            for _ in range(runs + 1):
                t0 = time.perf_counter()
                model(*args)
                ms.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(ms[1:])

    def tern(runs: int) -> tuple[float, float]:
        r = run_cutout(a.cutout, photo, points, "-o", os.path.join(a.out, "cutout-timing.png"), "--model", a.model,
                       "--threads", str(a.threads), "--time", str(runs))
        fields = dict(line.split("\t") for line in r.stderr.splitlines() if "_ms_median\t" in line)
        return float(fields["encoder_ms_median"]), float(fields["decoder_ms_median"])

    got = {"Tern": ([], [])}
    got["PyTorch eager"] = ([], [])
    for label in workers:
        got[label] = ([], [])
    for _ in range(a.rounds):
        e, d = tern(a.runs)
        got["Tern"][0].append(e), got["Tern"][1].append(d)
        got["PyTorch eager"][0].append(eager("encoder", a.runs))
        got["PyTorch eager"][1].append(eager("decoder", a.runs))
        for label, w in workers.items():
            got[label][0].append(w.median_ms("encoder", a.runs))
            got[label][1].append(w.median_ms("decoder", a.runs))
    for w in workers.values():
        w.close()
    med = {label: (statistics.median(e), statistics.median(d)) for label, (e, d) in got.items()}
    base_e, base_d = med["Tern"]
    print(f"\nLatency, {a.threads} thread(s), median of {a.rounds} rounds of {a.runs} runs each, "
          "one process per runtime, in one run (encoder: 1x3x1024x1024; decoder: one point):\n")
    print("| runtime | encoder ms | encoder time / Tern | decoder ms | decoder time / Tern |")
    print("|---|---:|---:|---:|---:|")
    for label, (e, d) in med.items():
        print(f"| {label} | {e:.1f} | {e / base_e:.2f} | {d:.2f} | {d / base_d:.2f} |")
    print(json.dumps({label: {"encoder_ms": e, "decoder_ms": d} for label, (e, d) in med.items()}))


def main() -> int:
    if len(sys.argv) == 7 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]))
        return 0
    sys.path.insert(0, HERE)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="out")
    ap.add_argument("--cutout", default="build/examples/cutout")
    ap.add_argument("--model", default="out/cutout", help="the files' prefix: PREFIX-encoder.tern, PREFIX-decoder.tern")
    ap.add_argument("--seed", type=int, default=0, help="the weights' seed (as convert.py --seed)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-latency", action="store_true")
    ap.add_argument("--picture", default="out/cutout-picture.png", help="where to write the README's picture")
    ap.add_argument("--picture-photo", default="chelsea", help="the sample photo it shows")
    ap.add_argument("--bench-python", default=os.path.join(ROOT, ".venv-bench", "bin", "python"),
                    help="the Python of the environment with onnxruntime (scripts/setup_bench_env.sh)")
    ap.add_argument("--et-python", default=os.path.join(ROOT, ".venv-executorch", "bin", "python"),
                    help="the Python of the environment with executorch (bench/README.md)")
    a = ap.parse_args()
    import convert

    missing = [f"{n}.{ext}" for n, (ext, _) in convert.SAMPLES.items() if not os.path.exists(os.path.join(a.out, f"{n}.{ext}"))]
    if missing:
        raise SystemExit(f"compare: missing {missing} in {a.out}: run examples/cutout/convert.py --samples")
    print(f"compare: weights: {convert.weights_origin(a.seed)}")
    ok = quality(a, convert)
    if not a.no_latency:
        latency(a, convert)
    print("\ncompare: quality goal " + ("met" if ok else "MISSED (see the table)"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
