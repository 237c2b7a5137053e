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
sys.path.insert(0, os.path.join(ROOT, "examples", "vad"))

torch = pytest.importorskip("torch")
pytest.importorskip("silero_vad", reason="silero-vad not installed (requirements.txt)")
for tool in ("espeak-ng", "sox"):
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} not installed (apt-get install {tool}; scripts/setup_env.sh)", allow_module_level=True)

import compare  # noqa: E402  examples/vad/compare.py
import convert  # noqa: E402  examples/vad/convert.py
import make_audio  # noqa: E402  examples/vad/make_audio.py


@pytest.fixture(scope="module")
def model_file(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("vad") / "vad.tern")
    convert.export(path)
    return path


@pytest.fixture(scope="module")
def audio_dir(tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("vad-audio"))
    sys_argv, sys.argv = sys.argv, ["make_audio.py", "--out", out]
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
    np.testing.assert_allclose(ours, ref, atol=1e-4, rtol=0)


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
