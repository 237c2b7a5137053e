"""The vad app (issue 25, examples/vad): the exported model and the C++
program against the silero-vad package's own model and get_speech_timestamps.

Needs silero-vad (requirements.txt), espeak-ng and sox (scripts/setup_env.sh)
and build/examples/vad; skips with the reason when one is absent. Exports
the model itself (a few seconds) and makes its own audio (espeak-ng).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import wave

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VAD = os.path.join(ROOT, "build", "examples", "vad")

torch = pytest.importorskip("torch")
pytest.importorskip("silero_vad", reason="silero-vad not installed (requirements.txt)")
for tool in ("espeak-ng", "sox"):
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} not installed (apt-get install {tool}; scripts/setup_env.sh)", allow_module_level=True)

from app_modules import app_module  # noqa: E402
from compare import assert_close  # noqa: E402  tests/python/compare.py

convert = app_module("vad", "convert")  # examples/vad/convert.py
compare = app_module("vad", "compare")  # examples/vad/compare.py: the package's segments beside Tern's
make_audio = app_module("common", "make_audio")  # examples/common/make_audio.py


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("vad") / "vad.tern")
    _, program = convert.export(path)
    return path, program


@pytest.fixture(scope="module")
def model_file(exported) -> str:
    return exported[0]


@pytest.fixture(scope="module")
def audio_dir(tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("vad-audio"))
    sys_argv, sys.argv = sys.argv, ["make_audio.py", "--rate", str(convert.SAMPLE_RATE), "--out", out]
    try:
        assert make_audio.main() == 0
    finally:
        sys.argv = sys_argv
    return out


@pytest.fixture(scope="module")
def package_model():
    return convert.package_model()


def test_probabilities_with_state_carried_equal_package(model_file, audio_dir, package_model):
    import tern

    audio = convert.read_wav(os.path.join(audio_dir, "pink-5db.wav"))[:4 * convert.SAMPLE_RATE]
    method = tern.load(model_file)
    assert set(method.state()) == {"h", "c", "context"}
    ours = convert.tern_probs(method, audio)
    ref = convert.package_probs(package_model, audio)
    assert len(ours) == len(ref) == 125
    assert ref.max() > 0.9 and ref.min() < 0.1  # speech and silence both in the excerpt
    assert_close(ours, ref, rtol=0, atol=1e-4, what="speech probabilities, chunk by chunk")


@pytest.mark.skipif(not os.path.exists(VAD), reason="build/examples/vad not built (make build)")
def test_program_segments_on_noisy_speech_equal_package_within_one_chunk(model_file, audio_dir, package_model):
    wav = os.path.join(audio_dir, "white-5db.wav")
    ours, _ = compare.program_segments(VAD, model_file, wav)
    ref = compare.package_segments(package_model, convert.read_wav(wav))
    assert len(ref) >= 3
    assert compare.agree(ours, ref), (ours, ref)


@pytest.mark.skipif(not os.path.exists(VAD), reason="build/examples/vad not built (make build)")
def test_wav_at_44100_hz_refused_with_its_rate(model_file, tmp_path):
    path = str(tmp_path / "cd.wav")
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(44100)
        w.writeframes(np.zeros(44100, dtype="<i2").tobytes())
    r = subprocess.run([VAD, path, "--model", model_file], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert r.stdout == ""
    assert "44100 Hz" in r.stderr and "16000 Hz" in r.stderr, r.stderr


def synthetic_probs(rng: np.random.Generator) -> np.ndarray:
    """Runs of 1 to 16 chunks, each above the threshold, between the two
    thresholds or below the lower one (never on them), so that every branch
    of the segment logic is taken: short and long speech, short and long
    silences, gaps shorter and longer than twice the padding (the first
    runs: speech with silences of 2 and 3 chunks)."""
    levels = [0.93, 0.62, 0.51, 0.49, 0.42, 0.36, 0.34, 0.2, 0.01]
    runs = [np.full(n, p) for n, p in [(10, 0.93), (2, 0.01), (10, 0.93), (3, 0.2), (10, 0.93), (40, 0.01)]]
    runs += [np.full(rng.integers(1, 17), rng.choice(levels)) for _ in range(150)]
    return np.concatenate(runs).astype(np.float32)


# get_speech_timestamps' defaults, and settings under which a gap between two
# segments can be shorter than twice the padding (it is split in half; with
# the defaults, a segment ends only after 100 ms of silence, more than 2 x 30 ms).
SETTINGS = [{}, {"min_silence_duration_ms": 20, "speech_pad_ms": 50, "min_speech_duration_ms": 60,
                "threshold": 0.6, "neg_threshold": 0.3}]


@pytest.mark.skipif(not os.path.exists(VAD), reason="build/examples/vad not built (make build)")
@pytest.mark.parametrize("settings", SETTINGS, ids=["defaults", "short_silences"])
@pytest.mark.parametrize("seed", range(3))
def test_segments_from_probabilities_equal_package_logic_exactly(exported, tmp_path, seed, settings):
    from silero_vad import get_speech_timestamps_from_probs

    model_file = str(tmp_path / "vad.tern")
    exported[1].with_metadata({"vad.settings": convert.settings_text(**settings).encode()}).save(model_file)
    probs = synthetic_probs(np.random.default_rng(seed))
    length = len(probs) * convert.CHUNK - 100  # the last chunk partial, as in a real file
    wav, txt = str(tmp_path / "len.wav"), str(tmp_path / "probs.txt")
    make_audio.write_wav(wav, np.zeros(length), convert.SAMPLE_RATE)
    with open(txt, "w") as f:
        f.write("".join(f"{p:.9g}\n" for p in probs))
    r = subprocess.run([VAD, wav, "--model", model_file, "--probs-in", txt],
                       capture_output=True, text=True, timeout=60, check=True)
    ref = get_speech_timestamps_from_probs([float(p) for p in probs], sampling_rate=convert.SAMPLE_RATE,
                                           audio_length_samples=length, **settings)
    assert len(ref) >= 5
    sec = lambda n: f"{n / convert.SAMPLE_RATE:.3f}"  # noqa: E731  the program's format
    assert r.stdout.splitlines() == [f"{sec(t['start'])}\t{sec(t['end'])}" for t in ref]
