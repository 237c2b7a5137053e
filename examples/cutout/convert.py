"""Cutouts (issue 25): MobileSAM (TinyViT image encoder, prompt encoder, mask
decoder) to out/cutout-encoder.tern and out/cutout-decoder.tern.

    python examples/cutout/convert.py [--out out] [--seed 0] [--samples]

The architecture is `mobilesam-mirror` 1.0.0's (`mobile_sam.sam_model_registry
["vit_t"]`), which ships MobileSAM's code but no weights, and no package here
ships segmentation weights: the weights are the modules' own initialization
after torch.manual_seed(SEED) (RANDOM WEIGHTS: the masks are not meant to
follow objects; they are what this architecture computes with these
weights, and the app's goal is to compute the same). That origin is written
into both files' metadata ("cutout.settings", weights=...). With these weights
the masks are not degenerate: on the sample photos 20-90% of the pixels are
foreground and fewer than 1% of the logits are within 1% of their standard
deviation from the threshold, so the IoU between two implementations measures
their agreement, not noise (compare.py prints both figures).

Two files, one method each:

  encoder  image [1, 3, 1024, 1024] float32, normalised and padded
           -> image_embeddings [1, 256, 64, 64]
  decoder  image_embeddings [1, 256, 64, 64],
           point_coords [1, N, 2] float32 (x, y in the 1024 frame, the resized image's pixels),
           point_labels [1, N] float32 (1 foreground, 0 background, -1 the padding point)
           -> low_res_masks [1, 4, 256, 256] logits, iou_predictions [1, 4]
           N is dynamic, 2..MAX_POINTS + 1: the caller appends one padding
           point (0, 0) with label -1, as SamPredictor's prompt encoder does
           when there is no box (mobile_sam/utils/onnx.py's convention).
           All four masks are returned: mask 0 is the single-mask output,
           1..3 the multimask outputs (SamPredictor: multimask_output).

Pre- and post-processing (main.cpp, compare.py and SamPredictor do this):
  1. ResizeLongestSide(1024): the longer side to 1024, the other to
     int(side * 1024 / longer + 0.5); PIL's bilinear resample on the uint8
     image (torchvision.transforms.functional.resize of a PIL image, what
     SamPredictor.set_image calls), rounded to uint8;
  2. (x - PIXEL_MEAN) / PIXEL_STD per channel, zero padding to 1024x1024
     at the bottom and right;
  3. points scaled by (new_w / old_w, new_h / old_h), the padding point appended;
  4. one foreground point: the multimask output (masks 1..3) with the highest
     IoU prediction; more points: mask 0 (SamPredictor's advice);
  5. the 256x256 logits upscaled bilinearly (align_corners=False) to
     1024x1024, cropped to the resized image's size, upscaled again to the
     original size, thresholded at MASK_THRESHOLD (0.0).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np
import torch
import torch.nn.functional as F

IMG_SIZE = 1024
EMBED_SIZE = 64          # IMG_SIZE / 16
LOW_RES = 256            # the decoder's mask size
PIXEL_MEAN = (123.675, 116.28, 103.53)
PIXEL_STD = (58.395, 57.12, 57.375)
MASK_THRESHOLD = 0.0
MAX_POINTS = 16          # user points per call (the decoder file takes 2..MAX_POINTS + 1 with the padding point)
SEED = 0

# The sample photographs (skimage.data), the format each is written in, and
# the foreground points compare.py and make app-cutout use (x, y in pixels).
SAMPLES = {
    "astronaut": ("png", [[(260, 180)], [(190, 320), (330, 300)]]),
    "coffee": ("jpg", [[(300, 200)], [(200, 180), (420, 220)]]),
    "chelsea": ("png", [[(140, 170)], [(100, 120), (300, 150), (200, 220)]]),
}


def weights_origin(seed: int) -> str:
    return f"random seed {seed} (torch.manual_seed before building; mobilesam-mirror ships no weights)"


def settings_text(seed: int) -> str:
    """cutout.settings: what main.cpp reads (one key=value a line)."""
    return (f"img_size={IMG_SIZE}\nembed_size={EMBED_SIZE}\nlow_res={LOW_RES}\n"
            f"pixel_mean={','.join(f'{v:g}' for v in PIXEL_MEAN)}\n"
            f"pixel_std={','.join(f'{v:g}' for v in PIXEL_STD)}\n"
            f"mask_threshold={MASK_THRESHOLD:g}\nmax_points={MAX_POINTS}\n"
            "resize=longest_side,pil_bilinear,uint8\npad=bottom_right_zero\n"
            f"weights={weights_origin(seed)}\n"
            "architecture=mobilesam-mirror 1.0.0 sam_model_registry['vit_t']\n")


def cutout_metadata(seed: int) -> dict[str, bytes]:
    return {"cutout.settings": settings_text(seed).encode()}


def build_sam(seed: int = SEED) -> torch.nn.Module:
    """sam_model_registry["vit_t"] with the modules' initialization after
    torch.manual_seed(seed), in eval mode. The global RNG is restored."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # timm: "Overwriting tiny_vit_... in registry"
        from mobile_sam import sam_model_registry

    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        sam = sam_model_registry["vit_t"]()
    finally:
        torch.random.set_rng_state(state)
    return sam.eval()


class Encoder(torch.nn.Module):
    """The image encoder: normalised, padded [1, 3, 1024, 1024] -> [1, 256, 64, 64]."""

    def __init__(self, sam: torch.nn.Module):
        super().__init__()
        self.image_encoder = sam.image_encoder

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return self.image_encoder(image)


class Decoder(torch.nn.Module):
    """Prompt encoder (points only, no mask input) and mask decoder, all four
    masks: mobile_sam/utils/onnx.py's SamOnnxModel without its postprocessing."""

    def __init__(self, sam: torch.nn.Module):
        super().__init__()
        self.prompt_encoder = sam.prompt_encoder
        self.mask_decoder = sam.mask_decoder
        self.img_size = sam.image_encoder.img_size
        # The dense positional encoding is a constant of the weights.
        with torch.no_grad():
            self.register_buffer("image_pe", sam.prompt_encoder.get_dense_pe().contiguous())

    def embed_points(self, coords: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        pe = self.prompt_encoder.pe_layer._pe_encoding((coords + 0.5) / self.img_size)
        labels = labels.unsqueeze(-1)
        pe = pe * (labels != -1)
        pe = pe + self.prompt_encoder.not_a_point_embed.weight * (labels == -1)
        for i in range(2):  # background, foreground point embeddings
            pe = pe + self.prompt_encoder.point_embeddings[i].weight * (labels == i)
        return pe

    def forward(self, image_embeddings: torch.Tensor, point_coords: torch.Tensor,
                point_labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        sparse = self.embed_points(point_coords, point_labels)
        dense = self.prompt_encoder.no_mask_embed.weight.reshape(1, -1, 1, 1).expand(
            1, -1, image_embeddings.shape[2], image_embeddings.shape[3])
        return self.mask_decoder.predict_masks(image_embeddings, self.image_pe, sparse, dense)


def decoder_dynamic_shapes() -> dict:
    n = torch.export.Dim("points", min=2, max=MAX_POINTS + 1)
    return {"image_embeddings": None, "point_coords": {1: n}, "point_labels": {1: n}}


def example_decoder_inputs(n_points: int = 1) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    emb = torch.randn(1, 256, EMBED_SIZE, EMBED_SIZE, generator=g)
    coords = torch.rand(1, n_points + 1, 2, generator=g) * IMG_SIZE
    coords[:, -1] = 0
    labels = torch.ones(1, n_points + 1)
    labels[:, -1] = -1
    return emb, coords, labels


# ---- pre- and post-processing, as SamPredictor does it -------------------------

def resized_size(h: int, w: int) -> tuple[int, int]:
    """ResizeLongestSide.get_preprocess_shape."""
    scale = IMG_SIZE * 1.0 / max(h, w)
    return int(h * scale + 0.5), int(w * scale + 0.5)


def preprocess(rgb: np.ndarray) -> torch.Tensor:
    """An H x W x 3 uint8 image -> the encoder's input, as SamPredictor.set_image."""
    from mobile_sam.utils.transforms import ResizeLongestSide

    resized = ResizeLongestSide(IMG_SIZE).apply_image(np.asarray(rgb, dtype=np.uint8))
    x = torch.as_tensor(resized).permute(2, 0, 1)[None].float()
    x = (x - torch.tensor(PIXEL_MEAN).view(1, 3, 1, 1)) / torch.tensor(PIXEL_STD).view(1, 3, 1, 1)
    # contiguous: the HWC image's permute would otherwise leave a channels-last
    # tensor, which torch.export records as the input's layout (ExecuTorch's
    # XNNPACK delegate then fails to run the encoder on a contiguous input)
    return F.pad(x, (0, IMG_SIZE - x.shape[3], 0, IMG_SIZE - x.shape[2])).contiguous()


def prompt(points: list[tuple[float, float]], h: int, w: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Foreground points in the original image -> the decoder's coords and
    labels (resized frame, padding point appended)."""
    nh, nw = resized_size(h, w)
    coords = [(x * (nw / w), y * (nh / h)) for x, y in points] + [(0.0, 0.0)]
    labels = [1.0] * len(points) + [-1.0]
    return torch.tensor([coords], dtype=torch.float32), torch.tensor([labels], dtype=torch.float32)


def choose_mask(low_res: torch.Tensor, iou: torch.Tensor, n_points: int) -> torch.Tensor:
    """[1, 4, 256, 256], [1, 4] -> [1, 1, 256, 256]: step 4 above."""
    if n_points == 1:
        k = 1 + int(torch.argmax(iou[0, 1:]))
    else:
        k = 0
    return low_res[:, k:k + 1]


def postprocess(low_res: torch.Tensor, h: int, w: int) -> torch.Tensor:
    """Sam.postprocess_masks: [1, 1, 256, 256] logits -> [1, 1, h, w] logits."""
    nh, nw = resized_size(h, w)
    m = F.interpolate(low_res, (IMG_SIZE, IMG_SIZE), mode="bilinear", align_corners=False)
    return F.interpolate(m[..., :nh, :nw], (h, w), mode="bilinear", align_corners=False)


def predictor_logits(sam: torch.nn.Module, rgb: np.ndarray, points: list[tuple[float, float]],
                     predictor=None) -> np.ndarray:
    """The reference: SamPredictor's mask logits at the original size (H x W),
    the mask chosen as in step 4. Pass a predictor whose image is set to reuse it."""
    from mobile_sam import SamPredictor

    if predictor is None:
        predictor = SamPredictor(sam)
        predictor.set_image(rgb)
    multi = len(points) == 1
    masks, iou, _ = predictor.predict(np.array(points, dtype=np.float64), np.ones(len(points)),
                                      multimask_output=multi, return_logits=True)
    return masks[int(np.argmax(iou))] if multi else masks[0]


def sample_photos() -> dict[str, np.ndarray]:
    import skimage.data

    return {name: getattr(skimage.data, name)() for name in SAMPLES}


def write_samples(out: str) -> list[str]:
    from PIL import Image

    paths = []
    for name, rgb in sample_photos().items():
        ext = SAMPLES[name][0]
        path = os.path.join(out, f"{name}.{ext}")
        Image.fromarray(rgb).save(path, **({"quality": 95} if ext == "jpg" else {}))
        paths.append(path)
    return paths


def read_image(path: str) -> np.ndarray:
    from PIL import Image

    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


def max_rel(a: np.ndarray, b: np.ndarray) -> float:
    """max |a - b| over the largest |b|."""
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


def convert(out: str, seed: int) -> tuple[str, str]:
    import tern

    sam = build_sam(seed)
    encoder, decoder = Encoder(sam).eval(), Decoder(sam).eval()
    photo = sample_photos()["astronaut"]
    x = preprocess(photo)
    meta = cutout_metadata(seed)
    os.makedirs(out, exist_ok=True)
    enc_path, dec_path = os.path.join(out, "cutout-encoder.tern"), os.path.join(out, "cutout-decoder.tern")
    print(f"convert: MobileSAM (mobilesam-mirror 1.0.0, vit_t) with weights: {weights_origin(seed)}")

    tern.export(encoder, (x,), metadata=meta).save(enc_path)
    print(f"convert: wrote {enc_path} ({os.path.getsize(enc_path) / 1e6:.1f} MB)")
    with torch.no_grad():
        emb = encoder(x)
    got = tern.load(enc_path)(x.numpy())[0]
    print(f"convert: encoder, Tern against PyTorch on astronaut: max |diff| / max |ref| {max_rel(got, emb.numpy()):.1e}")

    program = tern.export(decoder, example_decoder_inputs(1), dynamic_shapes=decoder_dynamic_shapes(), metadata=meta)
    program.save(dec_path)
    print(f"convert: wrote {dec_path} ({os.path.getsize(dec_path) / 1e6:.1f} MB)")
    loaded = tern.load(dec_path)
    for points in SAMPLES["astronaut"][1]:
        coords, labels = prompt(points, *photo.shape[:2])
        with torch.no_grad():
            ref = decoder(emb, coords, labels)
        got = loaded(emb.numpy(), coords.numpy(), labels.numpy())
        print(f"convert: decoder, Tern against PyTorch, {len(points)} point(s): max |diff| / max |ref| "
              f"masks {max_rel(got[0], ref[0].numpy()):.1e}, IoU predictions {max_rel(got[1], ref[1].numpy()):.1e}")
    return enc_path, dec_path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="out")
    ap.add_argument("--seed", type=int, default=SEED, help="the weights' seed (random weights)")
    ap.add_argument("--samples", action="store_true", help="also write the sample photos into --out")
    ap.add_argument("--no-convert", action="store_true", help="only --samples")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.samples:
        for p in write_samples(a.out):
            print(f"convert: wrote {p}")
    if not a.no_convert:
        convert(a.out, a.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
