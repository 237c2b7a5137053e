"""ONNX Runtime on the silero-vad wheel's own ONNX model (silero_vad.onnx),
one chunk a call as the package's OnnxWrapper makes it, 1 thread: prints
`us_per_chunk<TAB>max_abs_prob_diff` for make app-vad's report.

    .venv-bench/bin/python examples/vad/ort_time.py MODEL.onnx WAV PROBS.npy

Runs in .venv-bench (onnxruntime, numpy; no torch): compare.py passes it
the wheel's ONNX file, a WAV and the package's probabilities on it.
"""

from __future__ import annotations

import statistics
import sys
import time
import wave

import numpy as np
import onnxruntime as ort

CHUNK, CONTEXT, RATE = 512, 64, 16000


def main() -> int:
    model, wav, probs = sys.argv[1:4]
    with wave.open(wav, "rb") as w:
        audio = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768.0
    audio = np.pad(audio, (0, -len(audio) % CHUNK))
    opts = ort.SessionOptions()
    opts.inter_op_num_threads = opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(model, sess_options=opts, providers=["CPUExecutionProvider"])
    sr = np.array(RATE, dtype=np.int64)
    rounds, out = [], []
    for _ in range(5):
        state, context, out = np.zeros((2, 1, 128), np.float32), np.zeros((1, CONTEXT), np.float32), []
        t0 = time.perf_counter()
        for i in range(0, len(audio), CHUNK):
            x = np.concatenate([context, audio[None, i:i + CHUNK]], axis=1)
            p, state = sess.run(None, {"input": x, "state": state, "sr": sr})
            context = x[:, -CONTEXT:]
            out.append(float(p.reshape(-1)[0]))
        rounds.append((time.perf_counter() - t0) * 1e6 * CHUNK / len(audio))
    diff = float(np.abs(np.array(out) - np.load(probs)).max())
    print(f"{statistics.median(rounds):.1f}\t{diff:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
