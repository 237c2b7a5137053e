"""Parity with PyTorch eager: export, save, load and run through the C++
runtime, then compare with the model run by PyTorch on the same inputs.

Tolerance (tests/python/compare.py): |tern - eager| within 1e-4 of each
output's own largest magnitude plus 1e-4 of each element, NaN and infinities
in the same places. Each model runs
with the cpu backend (the default) and on the portable kernels alone, each
with 1, 2 and 3 threads, whose outputs must be bit-identical."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision

import tern
from compare import assert_outputs_close


BACKENDS = {"cpu": None, "kernels": ()}  # tern.export's partitioners= for each


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _run_both(model: torch.nn.Module, args: tuple[torch.Tensor, ...], tmp_path: Path, backend: str = "cpu") -> None:
    model.eval()
    with torch.no_grad():
        ref = model(*args)
    refs = [ref] if isinstance(ref, torch.Tensor) else list(ref)
    path = tmp_path / "model.tern"
    tern.export(model, args, partitioners=BACKENDS[backend]).save(path)
    outs = tern.load(str(path), threads=1)(*args)
    for threads in (2, 3):
        m = tern.load(str(path), threads=threads)
        assert m.threads() == threads
        for a, b in zip(m(*args), outs):
            np.testing.assert_array_equal(a, b, err_msg=f"{threads} threads differ from 1")
    assert_outputs_close(outs, refs)


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 64)
        self.fc2 = torch.nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.fc2(torch.nn.functional.gelu(self.fc1(x))), dim=-1)


class CNN(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(16)
        self.conv2 = torch.nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.bn2 = torch.nn.BatchNorm2d(32)
        self.fc = torch.nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.nn.functional.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 2)
        x = torch.relu(self.bn2(self.conv2(x)))
        x = torch.nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


def _randomize_bn(model: torch.nn.Module) -> torch.nn.Module:
    # Fresh batch norms are identities; give them real statistics.
    g = torch.Generator().manual_seed(2)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.bias.data.copy_(torch.randn(m.num_features, generator=g) * 0.1)
    return model


def test_mlp_matches_eager(tmp_path: Path, backend: str) -> None:
    torch.manual_seed(0)
    _run_both(MLP(), (torch.randn(4, 16),), tmp_path, backend)


def test_cnn_with_batch_norm_matches_eager(tmp_path: Path, backend: str) -> None:
    torch.manual_seed(0)
    _run_both(_randomize_bn(CNN()), (torch.randn(2, 3, 32, 32),), tmp_path, backend)


def test_transformer_encoder_layer_matches_eager(tmp_path: Path, backend: str) -> None:
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, batch_first=True)
    _run_both(layer, (torch.randn(2, 7, 32),), tmp_path, backend)


def _calibrated(model: torch.nn.Module, shape: tuple[int, ...]) -> torch.nn.Module:
    # Batch-norm statistics measured on random inputs, so that activations keep
    # their scale through deep random networks (without this, mobilenet_v2's
    # logits are ~1e-9 and any tolerance passes).
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()
            m.momentum = None
    model.train()
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():
        model(torch.randn(*shape, generator=g))
    return model.eval()


@pytest.mark.parametrize("name", ["mobilenet_v2", "resnet18"])
def test_torchvision_model_matches_eager(name: str, tmp_path: Path, backend: str) -> None:
    torch.manual_seed(0)
    model = _calibrated(getattr(torchvision.models, name)(weights=None), (4, 3, 224, 224))
    x = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        assert float(model(x).abs().max()) > 0.1  # a real signal reaches the logits
    _run_both(model, (x,), tmp_path, backend)
