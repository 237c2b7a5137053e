"""`make app-scene`'s report (issue 25): the C++ program against PyTorch eager.

    python examples/scene/compare.py [--out out] [--scene build/examples/scene]
                                     [--threads 1] [--rounds 5] [--runs 10]

1. Quality, for each sample photo in --out (convert.py --samples): the
   program's fp32 top-5 against eager's on the same pixels and preprocessing
   (convert.preprocess on Pillow's decoding of the same file), the int8
   top-1 against fp32's.
2. Latency of one forward at --threads threads, in one run, side by side:
   Tern fp32 and int8 (the program's --time), PyTorch eager, ONNX Runtime
   (in .venv-bench; torch.onnx.export of the same torch.export graph) and
   ExecuTorch with XNNPACK (in .venv-executorch; the same graph lowered by
   bench/et_lower.py); both environments are made by
   scripts/setup_bench_env.sh, as for make bench. Each round measures every
   runtime --runs times and keeps the median; the table shows the median of
   the rounds.
Exit status 1 if a quality goal is missed.
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


def run_scene(scene: str, image: str, *extra: str) -> tuple[list[tuple[int, str, float]], str]:
    r = subprocess.run([scene, image, *extra], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"compare: {scene} {image} {' '.join(extra)} failed:\n{r.stderr}")
    rows = [line.split("\t") for line in r.stdout.splitlines()]
    return [(int(i), label, float(p)) for i, label, p in rows], r.stderr


def quality(a: argparse.Namespace, photos: list[str]) -> bool:
    import torch

    import convert

    model, names = convert.build_model(), convert.labels()
    ok = True
    print("\n| photo | PyTorch eager top-5 | Tern fp32 top-5 | fp32 = eager | max abs. diff | Tern int8 top-1 | int8 = fp32 |")
    print("|---|---|---|---|---|---|---|")
    for path in photos:
        with torch.no_grad():
            eager = convert.top5(model(convert.preprocess(convert.read_image(path))))
        fp32, _ = run_scene(a.scene, path, "--model", os.path.join(a.out, "scene.tern"))
        int8, _ = run_scene(a.scene, path, "--model", os.path.join(a.out, "scene-int8.tern"))
        same = [i for i, _ in eager] == [i for i, _, _ in fp32]
        diff = max(abs(p - q) for (_, q), (_, _, p) in zip(eager, fp32))
        same_p = all(abs(p - q) <= max(1e-3 * q, 5e-5) for (_, q), (_, _, p) in zip(eager, fp32))
        top1 = int8[0][0] == fp32[0][0]
        ok = ok and same and same_p and top1
        fmt = lambda rows: ", ".join(f"{names[i]} {p:.4f}" for i, p in rows)  # noqa: E731
        print(f"| {os.path.basename(path)} | {fmt(eager)} | {fmt([(i, p) for i, _, p in fp32])} | "
              f"{'yes' if same and same_p else 'NO'} | {diff:.1e} | {names[int8[0][0]]} {int8[0][2]:.4f} | "
              f"{'yes' if top1 else 'NO'} |")
    print("(max abs. diff: the largest |Tern - eager| over the five probabilities, Tern's as printed with 4 decimals,\n"
          " so up to 5e-5 is rounding; equal: same classes in the same order, each probability within 1e-3 relative)")
    return ok


class PeerWorker:
    """A peer runtime in its own environment (peer_worker below), one
    process for the whole run, timing one input on request."""

    def __init__(self, python: str, *args: str):
        self.p = subprocess.Popen([python, __file__, "--peer-worker", *args],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        reply = self.p.stdout.readline()
        if not reply.startswith("ready"):
            raise RuntimeError(f"{args[0]} worker: {reply!r}")

    def median_ms(self, runs: int) -> float:
        self.p.stdin.write(f"{runs}\n")
        self.p.stdin.flush()
        return float(self.p.stdout.readline())

    def close(self) -> None:
        self.p.stdin.close()
        self.p.wait()


def peer_worker(kind: str, pt2: str, model: str, threads: int) -> None:
    """The worker's side. kind "ort": the torch.export graph pt2 -> ONNX
    (written to model) -> a session; kind "executorch": model is the .pte
    bench/et_lower.py wrote from pt2. Checks the peer's output against the
    graph's before timing."""
    import numpy as np
    import torch

    ep = torch.export.load(pt2)
    x = ep.example_inputs[0][0]
    if kind == "ort":
        import onnxruntime as ort

        torch.onnx.export(ep, (x,), model, dynamo=True, verbose=False)
        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        feed = {session.get_inputs()[0].name: x.numpy()}
        run = lambda: session.run(None, feed)[0]  # noqa: E731
    else:
        from executorch.extension.pybindings.portable_lib import _load_for_executorch, _unsafe_reset_threadpool

        _unsafe_reset_threadpool(threads)  # XNNPACK's pool
        module = _load_for_executorch(model)
        run = lambda: module.forward((x,))[0].numpy()  # noqa: E731
    ref = ep.module()(x).detach().numpy()
    assert np.abs(run() - ref).max() < 1e-3, f"{kind} differs from the graph"
    print("ready", flush=True)
    for line in sys.stdin:
        ms = []
        for _ in range(int(line)):
            t0 = time.perf_counter()
            run()
            ms.append((time.perf_counter() - t0) * 1e3)
        print(statistics.median(ms), flush=True)


def executorch_worker(a: argparse.Namespace, pt2: str) -> PeerWorker | None:
    """ExecuTorch (XNNPACK) on the graph pt2, lowered in its environment; None
    (saying why) where it has none or the graph does not lower."""
    if not os.path.exists(a.executorch_python):
        print("compare: ExecuTorch not measured: no .venv-executorch (scripts/setup_bench_env.sh makes it)")
        return None
    pte = os.path.join(a.out, "scene-xnnpack.pte")
    r = subprocess.run([a.executorch_python, os.path.join(ROOT, "bench", "et_lower.py"), pt2, "--xnnpack", pte],
                       capture_output=True, text=True)
    status = json.loads(r.stdout.strip().splitlines()[-1])["et_xnnpack"]["status"] if r.returncode == 0 else r.stderr
    if status != "ok":
        print(f"compare: ExecuTorch not measured: lowering failed: {status[-400:]}")
        return None
    return PeerWorker(a.executorch_python, "executorch", pt2, pte, str(a.threads))


def latency(a: argparse.Namespace, photo: str) -> None:
    import torch

    import convert

    torch.set_num_threads(a.threads)
    model = convert.build_model()
    x = convert.preprocess(convert.read_image(photo))
    pt2 = os.path.join(a.out, "scene.pt2")
    torch.export.save(torch.export.export(model, (x,)), pt2)
    peers = {}
    if os.path.exists(a.bench_python):
        peers["ONNX Runtime"] = PeerWorker(a.bench_python, "ort", pt2, os.path.join(a.out, "scene.onnx"),
                                           str(a.threads))
    else:
        print("compare: ONNX Runtime not measured: no .venv-bench (scripts/setup_bench_env.sh makes it)")
    et = executorch_worker(a, pt2)
    if et is not None:
        peers["ExecuTorch XNNPACK"] = et

    def eager(runs: int) -> float:
        ms = []
        with torch.inference_mode():
            for _ in range(runs + 1):
                t0 = time.perf_counter()
                model(x)
                ms.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(ms[1:])

    def tern(model_file: str) -> float:
        _, err = run_scene(a.scene, photo, "--model", model_file, "--threads", str(a.threads), "--time", str(a.runs))
        return float(err.split("forward_ms_median\t")[1].split()[0])

    rows = {"Tern fp32": lambda: tern(os.path.join(a.out, "scene.tern")),
            "Tern int8": lambda: tern(os.path.join(a.out, "scene-int8.tern")),
            "PyTorch eager": lambda: eager(a.runs)}
    for name, worker in peers.items():
        rows[name] = lambda worker=worker: worker.median_ms(a.runs)
    got = {name: [] for name in rows}
    for _ in range(a.rounds):
        for name, measure in rows.items():
            got[name].append(measure())
    for worker in peers.values():
        worker.close()
    base = statistics.median(got["Tern fp32"])
    print(f"\nLatency of one forward (1x3x224x224), {a.threads} thread(s), median of {a.rounds} rounds "
          f"of {a.runs} runs each, one process per runtime, in one run:\n")
    print("| runtime | ms | time / Tern fp32 |")
    print("|---|---|---|")
    for name, ms in got.items():
        m = statistics.median(ms)
        print(f"| {name} | {m:.2f} | {m / base:.2f} |")
    print(json.dumps({name: statistics.median(ms) for name, ms in got.items()}))


def main() -> int:
    if len(sys.argv) == 6 and sys.argv[1] == "--peer-worker":
        peer_worker(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
        return 0
    sys.path.insert(0, HERE)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="out")
    ap.add_argument("--scene", default="build/examples/scene")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--bench-python", default=os.path.join(ROOT, ".venv-bench", "bin", "python"),
                    help="the Python of the environment with onnxruntime (scripts/setup_bench_env.sh)")
    ap.add_argument("--executorch-python", default=os.path.join(ROOT, ".venv-executorch", "bin", "python"),
                    help="the Python of the environment with executorch (scripts/setup_bench_env.sh)")
    a = ap.parse_args()
    import convert

    photos = [os.path.join(a.out, f"{n}.{ext}") for n, ext in convert.SAMPLES.items()]
    missing = [p for p in photos if not os.path.exists(p)]
    if missing:
        raise SystemExit(f"compare: missing {missing}: run examples/scene/convert.py --samples")
    for path in photos:
        rows, _ = run_scene(a.scene, path)
        print(f"\n$ {a.scene} {path}")
        for i, label, p in rows:
            print(f"{i}\t{label}\t{p:.4f}")
    ok = quality(a, photos)
    latency(a, photos[0])
    print("\ncompare: quality goals " + ("met" if ok else "MISSED (see the table)"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
