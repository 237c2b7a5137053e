"""The cutout app (issue 25, examples/cutout): MobileSAM's encoder and decoder
files against the PyTorch modules, the C++ program's mask against SamPredictor's.

Needs build/examples/cutout (libpng, libjpeg) and mobilesam-mirror (with timm,
requirements.txt); skips with the reason when one is absent. The weights are
random (seed 0, as convert.py): the masks are what this architecture
computes with them, not objects. Uses out/cutout-{encoder,decoder}.tern when
make app-cutout wrote them, else exports both once for the module (about
20 s). The encoder always takes 1024x1024: TinyViT's 64x64 embedding is
written into mobile_sam's code, so there is no smaller configuration to
test, and each program run encodes one image (2-3 s at one thread; the
images themselves are small). The file takes about 60 s with out/'s files,
80 s without, on the shared 2-core machine.
"""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CUTOUT = os.path.join(ROOT, "build", "examples", "cutout")
PREFIX = os.path.join(ROOT, "out", "cutout")

torch = pytest.importorskip("torch")
PIL = pytest.importorskip("PIL.Image")
pytest.importorskip("timm", reason="timm not installed (requirements.txt, mobilesam-mirror imports it)")
pytest.importorskip("mobile_sam", reason="mobilesam-mirror not installed (requirements.txt)")
if not os.path.exists(CUTOUT):
    pytest.skip("build/examples/cutout not built (libpng-dev, libjpeg62-turbo-dev; make app-cutout)",
                allow_module_level=True)

from app_modules import app_module  # noqa: E402
from compare import assert_close  # noqa: E402

convert = app_module("cutout", "convert")  # examples/cutout/convert.py


def shapes_image(h: int, w: int, seed: int = 0) -> np.ndarray:
    """A small fixed photo-like image: a gradient with a disc and a box."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    img = np.stack([x * 200 // w + 20, y * 180 // h + 30, np.full_like(x, 90)], -1).astype(np.int64)
    disc = (y - h * 0.4) ** 2 + (x - w * 0.35) ** 2 < (min(h, w) * 0.25) ** 2
    img[disc] = (230, 40, 50)
    img[int(h * 0.6):int(h * 0.9), int(w * 0.55):int(w * 0.9)] = (30, 60, 220)
    return np.clip(img + rng.integers(-12, 13, img.shape), 0, 255).astype(np.uint8)


@pytest.fixture(scope="module")
def sam():
    return convert.build_sam(convert.SEED)


@pytest.fixture(scope="module")
def prefix(sam, tmp_path_factory) -> str:
    if os.path.exists(PREFIX + "-encoder.tern") and os.path.exists(PREFIX + "-decoder.tern"):
        return PREFIX
    import tern

    path = str(tmp_path_factory.mktemp("cutout") / "cutout")
    meta = convert.cutout_metadata(convert.SEED)
    x = torch.zeros(1, 3, convert.IMG_SIZE, convert.IMG_SIZE)
    tern.export(convert.Encoder(sam), (x,), metadata=meta).save(path + "-encoder.tern")
    tern.export(convert.Decoder(sam), convert.example_decoder_inputs(1),
                dynamic_shapes=convert.decoder_dynamic_shapes(), metadata=meta).save(path + "-decoder.tern")
    return path


@pytest.fixture
def run(prefix):
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([CUTOUT, *args, "--model", prefix, "--threads", "1"], capture_output=True, text=True,
                              timeout=300)

    return run


@pytest.fixture(scope="module")
def embedding(sam, prefix):
    """The encoder file's and PyTorch's embeddings of the shapes image."""
    import tern

    x = convert.preprocess(shapes_image(90, 120))
    with torch.no_grad():
        want = sam.image_encoder(x).numpy()
    got = tern.load(prefix + "-encoder.tern", threads=1)(x.numpy())[0]
    return got, want


def test_encoder_file_equals_pytorch(embedding):
    got, want = embedding
    # relative to the embedding's scale (LayerNorm'd, about 1): float32 rounding
    # through 4 stages of convolutions and attention
    assert_close(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()), what="image embeddings")


@pytest.mark.parametrize("n_points", [1, 3])
def test_decoder_file_equals_pytorch(sam, prefix, embedding, n_points):
    import tern

    _, emb = embedding
    rng = np.random.default_rng(n_points)
    points = [(float(x), float(y)) for x, y in rng.uniform(0, 80, (n_points, 2))]
    coords, labels = convert.prompt(points, 90, 120)
    with torch.no_grad():
        masks, iou = convert.Decoder(sam)(torch.from_numpy(emb), coords, labels)
    got = tern.load(prefix + "-decoder.tern", threads=1)(emb, coords.numpy(), labels.numpy())
    scale = float(masks.abs().max())
    assert_close(got[0], masks.numpy(), rtol=1e-4, atol=1e-5 * scale, what="low-res mask logits")
    assert_close(got[1], iou.numpy(), rtol=1e-4, atol=1e-6, what="IoU predictions")


@pytest.mark.parametrize("points", [[(40, 30)], [(30, 40), (100, 70)]])
def test_program_mask_equals_predictor(tmp_path, run, sam, points):
    rgb = shapes_image(90, 120)
    path, sticker, logits = str(tmp_path / "shapes.png"), str(tmp_path / "sticker.png"), str(tmp_path / "l.f32")
    PIL.fromarray(rgb).save(path)
    r = run(path, *[f"{x},{y}" for x, y in points], "-o", sticker, "--logits", logits)
    assert r.returncode == 0, r.stderr
    want = convert.predictor_logits(sam, rgb, points)
    got = np.fromfile(logits, dtype=np.float32).reshape(want.shape)
    assert_close(got, want, rtol=1e-3, atol=1e-4 * float(np.abs(want).max()), what="mask logits")
    a, b = got > 0, want > 0
    assert 0.02 < b.mean() < 0.98, f"degenerate reference mask ({b.mean():.1%} foreground): the test would say nothing"
    iou = (a & b).sum() / (a | b).sum()
    assert iou >= 0.99, f"mask IoU {iou:.4f} against SamPredictor's"
    with PIL.open(sticker) as im:
        assert im.mode == "RGBA" and im.size == (120, 90)
        px = np.asarray(im)
    np.testing.assert_array_equal(px[..., :3], rgb)
    np.testing.assert_array_equal(px[..., 3], np.where(a, 255, 0))


@pytest.mark.parametrize("h,w", [(23, 37), (1300, 500), (1100, 1200)])
def test_resize_normalize_pad_equal_predictor(tmp_path, run, h, w):
    # upscaling; downscaling (PIL widens its filter), vertical pass first (Pillow 13) and not
    rgb = np.random.default_rng(h).integers(0, 256, (h, w, 3), dtype=np.uint8)
    path, dump = str(tmp_path / "noise.png"), str(tmp_path / "input.f32")
    PIL.fromarray(rgb).save(path)
    r = run(path, "1,1", "-o", str(tmp_path / "s.png"), "--dump-input", dump)
    assert r.returncode == 0, r.stderr
    got = np.fromfile(dump, dtype=np.float32).reshape(1, 3, convert.IMG_SIZE, convert.IMG_SIZE)
    # one grey level is 1/58 after normalisation: 1e-5 means the same 8-bit pixels
    assert_close(got, convert.preprocess(rgb).numpy(), rtol=0, atol=1e-5, what="the program's encoder input")


@pytest.mark.parametrize("content", [b"", b"\x89PNG\r\n\x1a\n" + b"\0" * 40, b"GIF89a"])
def test_corrupt_image_fails_with_message(tmp_path, run, content):
    path = str(tmp_path / "bad.img")
    with open(path, "wb") as f:
        f.write(content)
    r = run(path, "1,1", "-o", str(tmp_path / "s.png"))
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert f"cutout: {path}: not a" in r.stderr, r.stderr


def test_point_outside_image_fails_with_message(tmp_path, run):
    path = str(tmp_path / "small.png")
    PIL.fromarray(shapes_image(20, 30)).save(path)
    r = run(path, "30,5", "-o", str(tmp_path / "s.png"))
    assert r.returncode == 1 and "point 30,5 is outside the 30x20 image" in r.stderr, r.stderr


def test_missing_output_is_a_usage_error(tmp_path, run):
    r = run(str(tmp_path / "x.png"), "1,1")
    assert r.returncode == 2 and "usage:" in r.stderr, r.stderr
