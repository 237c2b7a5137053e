"""The audio apps' test audio (issue 25: examples/vad at 16 kHz,
examples/denoise at 48 kHz): espeak-ng speech with silences between
utterances, mixed with white and pink noise at 0, 5 and 20 dB SNR.

    python examples/common/make_audio.py --rate 16000 --out out/vad-audio

Writes mono 16-bit WAVs at --rate Hz: clean.wav and {white,pink}-{0,5,20}db.wav.
espeak-ng speaks each sentence (22050 Hz), sox resamples it to --rate mono
16-bit; sox makes the noise (`sox -R`: the same noise on every run); the
mixing is done here, the noise scaled so that speech power / noise power =
SNR, the speech power taken over the utterances only (not the silences).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import wave

import numpy as np

SENTENCES = [
    "The weather will be sunny this afternoon, with a light wind from the west.",
    "Please call me back when you have a minute.",
    "Seven hundred and twenty three people came to the concert on Saturday.",
    "Turn left at the next corner.",
]
# Seconds of silence before each sentence, and after the last one.
GAPS = [0.8, 1.2, 0.6, 1.5, 1.0]
SNRS_DB = [0, 5, 20]
NOISES = ["white", "pink"]


def write_wav(path: str, samples: np.ndarray, rate: int) -> None:
    pcm = np.clip(np.round(samples * 32768.0), -32768, 32767).astype("<i2")
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.tobytes())


def read_wav(path: str, rate: int) -> np.ndarray:
    with wave.open(path, "rb") as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (rate, 1, 2), path
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float64) / 32768.0


def speak(text: str, tmp: str, i: int, rate: int) -> np.ndarray:
    raw, out = os.path.join(tmp, f"s{i}.wav"), os.path.join(tmp, f"s{i}-rs.wav")
    subprocess.run(["espeak-ng", "-v", "en-us", "-s", "160", "-w", raw, text], check=True)
    subprocess.run(["sox", raw, "-r", str(rate), "-c", "1", "-b", "16", out], check=True)
    return read_wav(out, rate)


def noise(kind: str, n: int, tmp: str, rate: int) -> np.ndarray:
    path = os.path.join(tmp, f"{kind}.wav")
    subprocess.run(["sox", "-R", "-n", "-r", str(rate), "-c", "1", "-b", "16", path,
                    "synth", f"{n / rate:.6f}", f"{kind}noise", "vol", "0.5"], check=True)
    x = read_wav(path, rate)
    return np.pad(x, (0, max(0, n - len(x))))[:n]


def clean_track(tmp: str, rate: int) -> tuple[np.ndarray, np.ndarray]:
    """The speech with its silences, and a mask of the utterances' samples."""
    parts, mask = [], []
    for i, text in enumerate(SENTENCES):
        gap = np.zeros(int(GAPS[i] * rate))
        s = speak(text, tmp, i, rate)
        parts += [gap, s]
        mask += [np.zeros(len(gap), bool), np.ones(len(s), bool)]
    tail = np.zeros(int(GAPS[-1] * rate))
    parts.append(tail)
    mask.append(np.zeros(len(tail), bool))
    return np.concatenate(parts), np.concatenate(mask)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rate", type=int, required=True, help="sample rate in Hz (the model's: 16000 vad, 48000 denoise)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rate = args.rate
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        speech, mask = clean_track(tmp, rate)
        speech *= 0.5 / np.abs(speech).max()
        write_wav(os.path.join(args.out, "clean.wav"), speech, rate)
        p_speech = float(np.mean(speech[mask] ** 2))
        for kind in NOISES:
            n = noise(kind, len(speech), tmp, rate)
            p_noise = float(np.mean(n ** 2))
            for snr in SNRS_DB:
                mixed = speech + n * np.sqrt(p_speech / (p_noise * 10 ** (snr / 10)))
                mixed *= min(1.0, 0.95 / np.abs(mixed).max())  # no clipping
                write_wav(os.path.join(args.out, f"{kind}-{snr}db.wav"), mixed, rate)
    print(f"wrote {args.out}/clean.wav and {len(NOISES) * len(SNRS_DB)} noisy files "
          f"({len(speech) / rate:.1f} s each, {len(SENTENCES)} utterances)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
