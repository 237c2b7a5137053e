"""Row chains on the cpu backend (cpu.fbs Conv.fuse_next) for every way
pointwise and depthwise convolutions stack: MobileNetV1's pw > dw > pw > dw
chains, a keyword-spotting DS-CNN, inverted residual blocks with and without
their residual, and random stacks. Each exports with the default
partitioners (the exporter loads the file, so a chain the runtime refuses
fails here), matches eager, and gives the bits the same model gives with
row chains off."""
from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch
from torch import nn

import tern
from compare import assert_close, assert_outputs_close
from tern.backends.cpu import CpuOptions, CpuPartitioner
from zoo_models import calibrate_batch_norm


def _conv_bn_relu(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1) -> nn.Module:
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU())


def mobilenet_v1(width: float = 1.0, classes: int = 1000) -> nn.Module:
    """MobileNetV1 (Howard et al. 2017): a 3x3 stem, then 13 depthwise 3x3 +
    pointwise 1x1 pairs, each convolution with batch norm and ReLU."""
    c = lambda n: max(8, int(n * width))  # noqa: E731
    pairs = [(32, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2), (256, 256, 1), (256, 512, 2)]
    pairs += [(512, 512, 1)] * 5 + [(512, 1024, 2), (1024, 1024, 1)]
    layers = [_conv_bn_relu(3, c(32), 3, 2)]
    for cin, cout, s in pairs:
        layers += [_conv_bn_relu(c(cin), c(cin), 3, s, groups=c(cin)), _conv_bn_relu(c(cin), c(cout), 1)]
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c(1024), classes))


def ds_cnn(classes: int = 12, width: int = 64) -> nn.Module:
    """The depthwise-separable keyword-spotting CNN (Zhang et al. 2017, "Hello
    Edge", DS-CNN S): a 10x4 stride-2 conv over 49 frames of 10 MFCCs, four
    depthwise 3x3 + pointwise 1x1 pairs, average pooling, a linear layer."""
    layers = [nn.Conv2d(1, width, (10, 4), 2, (5, 1), bias=False), nn.BatchNorm2d(width), nn.ReLU()]
    for _ in range(4):
        layers += [_conv_bn_relu(width, width, 3, groups=width), _conv_bn_relu(width, width, 1)]
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width, classes))


class InvertedResidual(nn.Module):
    """MobileNetV2's block: expand 1x1, depthwise 3x3, project 1x1, plus the
    input where `residual` (stride 1, same channels)."""

    def __init__(self, cin: int, cout: int, stride: int, expand: int, residual: bool) -> None:
        super().__init__()
        mid = cin * expand
        self.body = nn.Sequential(_conv_bn_relu(cin, mid, 1), _conv_bn_relu(mid, mid, 3, stride, groups=mid),
                                  nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.residual = residual and stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.body(x)
        return x + y if self.residual else y


def random_stack(seed: int) -> tuple[nn.Module, int]:
    """A random sequence of pointwise convs, depthwise convs (3x3 or 5x5,
    stride 1 or 2), full 3x3 convs and inverted residual blocks, each with or
    without an activation: (model, input channels)."""
    rng = random.Random(seed)
    cin = c = rng.choice([3, 4, 8])
    layers: list[nn.Module] = []
    for _ in range(rng.randint(6, 12)):
        kind = rng.choice(["pw", "pw", "pw", "dw", "dw", "dw", "full", "block"])
        act = rng.choice([nn.ReLU(), nn.ReLU6(), nn.Identity()])
        if kind == "pw":
            cout = rng.choice([4, 8, 12, 16])
            layers += [nn.Conv2d(c, cout, 1, bias=rng.random() < 0.5), act]
            c = cout
        elif kind == "dw":
            k, stride = rng.choice([3, 5]), rng.choice([1, 1, 2])
            layers += [nn.Conv2d(c, c, k, stride, k // 2, groups=c, bias=rng.random() < 0.5), act]
        elif kind == "full":
            cout = rng.choice([4, 8])
            layers += [nn.Conv2d(c, cout, 3, 1, 1), act]
            c = cout
        else:
            cout = rng.choice([c, 8])
            layers.append(InvertedResidual(c, cout, rng.choice([1, 2]), rng.choice([2, 4]), rng.random() < 0.7))
            c = cout
    return nn.Sequential(*layers), cin


def _heads_and_stages(path: Path) -> tuple[int, list[bool]]:
    """(number of chains, fuse_next of each Conv) of the file's only delegate."""
    from test_cpu_backend import _fuse_next

    flags = [f for _, f in _fuse_next(path)]
    return sum(1 for i, f in enumerate(flags) if f and (i == 0 or not flags[i - 1])), flags


def _export_both(model: nn.Module, x: torch.Tensor, tmp_path: Path, min_bytes: int | None) -> tuple[Path, Path]:
    """The model exported with row chains (CpuOptions.row_chain_min_bytes =
    min_bytes, None: the default) and without."""
    chained, plain = tmp_path / "chained.tern", tmp_path / "plain.tern"
    options = CpuOptions() if min_bytes is None else CpuOptions(row_chain_min_bytes=min_bytes)
    tern.export(model, (x,), partitioners=[CpuPartitioner(options=options)]).save(chained)
    tern.export(model, (x,), partitioners=[CpuPartitioner(options=CpuOptions(row_chains=False))]).save(plain)
    return chained, plain


def _check(model: nn.Module, x: torch.Tensor, chained: Path, plain: Path, rtol: float = 1e-4) -> None:
    """Eager's outputs within rtol, on 1 and 2 threads; the same bits with and without chains."""
    with torch.no_grad():
        want = model(x)
    for threads in (1, 2):
        got = tern.load(str(chained), threads=threads)(x)
        assert_outputs_close(got, want, rtol=rtol, what=f"{threads} threads: ")
        assert_close(got[0], tern.load(str(plain), threads=threads)(x)[0], rtol=0, atol=0,
                     what="chained against unchained")


def _calibrated(model: nn.Module, shape: tuple[int, ...]) -> nn.Module:
    """Batch norms measured on random inputs: activations keep their scale
    through 27 layers (PyTorch's default init alone shrinks them to nothing,
    and an output of zeros would match anything's zeros)."""
    return calibrate_batch_norm(model, lambda g: (torch.randn(*shape, generator=g),), passes=2)


def test_mobilenet_v1_exports_with_the_default_partitioners_and_matches_eager(tmp_path: Path) -> None:
    """224x224, width 0.75: the first pointwise outputs (48 channels at
    112x112, 96 at 56x56) pass the default 1 MiB threshold, so the chain
    pw1 > dw2 > pw2 forms and pw2 could head pw2 > dw3 > pw3 (the export
    error of issue 24)."""
    torch.manual_seed(0)
    shape = (1, 3, 224, 224)
    model = _calibrated(mobilenet_v1(width=0.75), shape)
    x = torch.randn(*shape)
    path = tmp_path / "m.tern"
    tern.export(model, (x,)).save(path)  # (the next test compares chained with unchained bits)
    chains, _ = _heads_and_stages(path)
    assert chains >= 1, "no row chain at the default threshold: the test no longer covers the stacking"
    with torch.no_grad():
        want = model(x)
    assert_outputs_close(tern.load(str(path), threads=2)(x), want)


def test_mobilenet_v1_chains_alternate_pairs_when_every_tensor_qualifies(tmp_path: Path) -> None:
    """Threshold 0: every pw > dw > pw triple could chain, but a pointwise
    conv that ends one chain cannot head the next. Convs in order: stem, then
    (dw, pw) x 13; pw1 > dw2 > pw2, pw3 > dw4 > pw4, ..., pw11 > dw12 > pw12,
    and pw13 (followed by pooling) alone: 6 chains."""
    torch.manual_seed(0)
    shape = (1, 3, 64, 64)
    model = _calibrated(mobilenet_v1(width=0.25, classes=10), shape)
    x = torch.randn(*shape)
    chained, plain = _export_both(model, x, tmp_path, 0)
    chains, flags = _heads_and_stages(chained)
    want = [False, False]  # stem, dw1
    for _ in range(6):
        want += [True, True, False, False]  # pw(2i+1) heads, dw(2i+2) goes on, pw(2i+2) ends; dw(2i+3)
    want += [False, False]  # pw13; the classifier (addmm runs as a 1x1 Conv)
    assert (chains, flags) == (6, want)
    _check(model, x, chained, plain)


@pytest.mark.parametrize("min_bytes", [None, 0], ids=["default", "threshold0"])
def test_a_ds_cnn_exports_and_matches_eager(min_bytes: int | None, tmp_path: Path) -> None:
    torch.manual_seed(0)
    shape = (1, 1, 49, 10)
    model = _calibrated(ds_cnn(), shape)
    x = torch.randn(*shape)
    if min_bytes is None:  # its tensors are small: no chains, nothing to compare unchained with
        path = tmp_path / "m.tern"
        tern.export(model, (x,)).save(path)
        assert _heads_and_stages(path)[0] == 0
        with torch.no_grad():
            assert_outputs_close(tern.load(str(path), threads=2)(x), model(x))
        return
    chained, plain = _export_both(model, x, tmp_path, min_bytes)
    assert _heads_and_stages(chained)[0] == 2  # pw1 > dw2 > pw2, pw3 > dw4 > pw4
    _check(model, x, chained, plain)


@pytest.mark.parametrize("residual", [True, False], ids=["residual", "no_residual"])
def test_stacked_inverted_residual_blocks_chain_and_match_eager(residual: bool, tmp_path: Path) -> None:
    """Each block's expand > depthwise > project is one chain: the projection
    ends it, the next block's expansion heads the next (with a residual the
    projection adds the block's input, which a chain stage can carry)."""
    torch.manual_seed(0)
    shape = (2, 8, 20, 12)
    model = _calibrated(nn.Sequential(*[InvertedResidual(8, 8, 1, 4, residual) for _ in range(3)]), shape)
    x = torch.randn(*shape)
    chained, plain = _export_both(model, x, tmp_path, 0)
    chains, _ = _heads_and_stages(chained)
    assert chains == 3
    _check(model, x, chained, plain)


@pytest.mark.parametrize("seed", range(8))
def test_random_pointwise_and_depthwise_stacks_export_and_match_eager(seed: int, tmp_path: Path) -> None:
    torch.manual_seed(seed)
    model, cin = random_stack(seed)
    x = torch.randn(1, cin, 23, 17)
    model.eval()
    chained, plain = _export_both(model, x, tmp_path, 0)
    _check(model, x, chained, plain)
