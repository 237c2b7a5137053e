"""make app-vad's report (issue 25): build/examples/vad against the package's
own get_speech_timestamps on each test file, segments side by side.

    python examples/vad/compare.py --vad build/examples/vad --model out/vad.tern out/vad-audio/*.wav

Agreement (the goal): the same number of segments, each start and end within
one chunk (512 samples, 32 ms) of the package's. Speed, measured in this run,
one thread each: Tern's microseconds per chunk (the program's --time: model
calls only, the median of 5 passes over the file) against the package's
TorchScript model called the way get_speech_timestamps calls it (one chunk
per call; the median of 5 passes), and each one's real-time factor (time per
chunk / 32 ms). With --ort-python (.venv-bench's python, which has
onnxruntime), ONNX Runtime too, on the wheel's own silero_vad.onnx
(examples/vad/ort_time.py: one chunk a call from Python, as the package's
OnnxWrapper). Exit status 1 if a file disagrees.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch


def _load_convert():
    """examples/vad/convert.py as the module `vad_convert` (another app's
    convert.py may be `convert` in the same process: the tests)."""
    if "vad_convert" not in sys.modules:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "convert.py")
        spec = importlib.util.spec_from_file_location("vad_convert", path)
        sys.modules["vad_convert"] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules["vad_convert"]


convert = _load_convert()

TOLERANCE = convert.CHUNK  # samples: one chunk


def package_segments(model, audio: np.ndarray) -> list[tuple[int, int]]:
    """get_speech_timestamps with its defaults, in samples."""
    from silero_vad import get_speech_timestamps
    ts = get_speech_timestamps(torch.from_numpy(audio), model, sampling_rate=convert.SAMPLE_RATE)
    return [(t["start"], t["end"]) for t in ts]


def program_segments(vad: str, model: str, wav: str, timed: bool = False) -> tuple[list[tuple[int, int]], float]:
    args = [vad, wav, "--model", model] + (["--time"] if timed else [])
    r = subprocess.run(args, capture_output=True, text=True, check=True)
    segs = [tuple(round(float(v) * convert.SAMPLE_RATE) for v in line.split("\t"))
            for line in r.stdout.splitlines()]
    m = re.search(r"([0-9.]+) us per chunk", r.stderr)
    return segs, float(m.group(1)) if m else float("nan")


def agree(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> bool:
    return len(a) == len(b) and all(abs(x0 - y0) <= TOLERANCE and abs(x1 - y1) <= TOLERANCE
                                    for (x0, x1), (y0, y1) in zip(a, b))


def package_us_per_chunk(model, audio: np.ndarray, rounds: int = 5) -> float:
    cs = list(convert.chunks(audio))
    per = []
    with torch.no_grad():
        for _ in range(rounds):
            model.reset_states()
            t0 = time.perf_counter()
            for c in cs:
                model(c, convert.SAMPLE_RATE).item()
            per.append((time.perf_counter() - t0) * 1e6 / len(cs))
    return statistics.median(per)


def ort_us_per_chunk(python: str, model, audio_path: str, audio: np.ndarray) -> tuple[float, float]:
    """ONNX Runtime's us per chunk on the wheel's silero_vad.onnx, and its
    largest probability difference from the package's TorchScript model."""
    import silero_vad
    onnx = os.path.join(os.path.dirname(silero_vad.__file__), "data", "silero_vad.onnx")
    with tempfile.TemporaryDirectory() as tmp:
        probs = os.path.join(tmp, "probs.npy")
        np.save(probs, convert.package_probs(model, audio))
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ort_time.py")
        r = subprocess.run([python, script, onnx, audio_path, probs], capture_output=True, text=True, check=True)
    us, diff = r.stdout.split()
    return float(us), float(diff)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vad", default="build/examples/vad")
    ap.add_argument("--model", default="out/vad.tern")
    ap.add_argument("--ort-python", help="a python with onnxruntime (.venv-bench/bin/python)")
    ap.add_argument("wavs", nargs="+")
    args = ap.parse_args()
    torch.set_num_threads(1)
    model = convert.package_model()
    torch.set_num_threads(1)
    sec = lambda s: f"{s / convert.SAMPLE_RATE:.3f}"  # noqa: E731
    ok_files, tern_us, pkg_us, ort_us, ort_diff = 0, [], [], [], 0.0
    for wav in args.wavs:
        audio = convert.read_wav(wav)
        ours, us = program_segments(args.vad, args.model, wav, timed=True)
        ref = package_segments(model, audio)
        tern_us.append(us)
        pkg_us.append(package_us_per_chunk(model, audio))
        if args.ort_python:
            us_o, d = ort_us_per_chunk(args.ort_python, model, wav, audio)
            ort_us.append(us_o)
            ort_diff = max(ort_diff, d)
        ok = agree(ours, ref)
        ok_files += ok
        print(f"{os.path.basename(wav)}: {'agree' if ok else 'DISAGREE'} within one chunk "
              f"({len(ours)} segments / package {len(ref)}); us per chunk Tern {us:.1f}, PyTorch {pkg_us[-1]:.1f}")
        print("  Tern (build/examples/vad)   package (get_speech_timestamps)")
        for i in range(max(len(ours), len(ref))):
            a = f"{sec(ours[i][0])}\t{sec(ours[i][1])}" if i < len(ours) else "-\t-"
            b = f"{sec(ref[i][0])}\t{sec(ref[i][1])}" if i < len(ref) else "-\t-"
            print(f"  {a:<26}  {b}")
    chunk_us = 1e6 * convert.CHUNK / convert.SAMPLE_RATE
    t, p = statistics.median(tern_us), statistics.median(pkg_us)
    print(f"\nagreement within one chunk (32 ms): {ok_files}/{len(args.wavs)} files")
    print(f"us per chunk (median over files, 1 thread): Tern {t:.1f}, PyTorch (TorchScript) {p:.1f}; "
          f"Tern / PyTorch {t / p:.2f}x")
    print(f"real-time factor (time per chunk / 32 ms): Tern {t / chunk_us:.5f}, PyTorch {p / chunk_us:.5f}")
    if ort_us:
        o = statistics.median(ort_us)
        print(f"ONNX Runtime (silero_vad.onnx, 1 thread): {o:.1f} us per chunk, real-time factor "
              f"{o / chunk_us:.5f}; Tern / ONNX Runtime {t / o:.2f}x; its probabilities within "
              f"{ort_diff:.1e} of the TorchScript model's")
    return 0 if ok_files == len(args.wavs) else 1


if __name__ == "__main__":
    sys.exit(main())
