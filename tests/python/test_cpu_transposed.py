"""Transposed convolutions on the cpu backend: stride x stride ordinary
convolutions of stride 1, one per output phase (depthwise ones for a
depthwise transposed convolution, padded after to their phase's size), then
an Interleave. The oracle: eager PyTorch, 1, 2 and 3 threads giving the
same bits (test_cpu_backend._check)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from test_cpu_backend import _check, _payload_ops

TRANSPOSED = {
    # name: (module, input shape); phases with several taps, one tap, none (kernel < stride)
    "k4_s2_p1": (nn.ConvTranspose2d(8, 12, 4, stride=2, padding=1), (1, 8, 7, 9)),
    "k3_s2_output_padding": (nn.ConvTranspose2d(8, 12, 3, stride=2, padding=1, output_padding=1), (2, 8, 5, 6)),
    "k3_s1": (nn.ConvTranspose2d(5, 7, 3, stride=1, padding=1), (1, 5, 6, 6)),
    "uneven_dilated": (nn.ConvTranspose2d(5, 7, (3, 5), stride=(3, 2), padding=(0, 2), dilation=(2, 3)), (1, 5, 6, 7)),
    "k1_s3_bias_only_phases": (nn.ConvTranspose2d(6, 4, 1, stride=3), (1, 6, 4, 4)),
    "k2_s2_relu": (nn.Sequential(nn.ConvTranspose2d(6, 20, 2, stride=2, bias=False), nn.ReLU()), (1, 6, 4, 5)),
    # depthwise (groups = channels: DeepFilterNet's decoder): depthwise Conv phases, padded after to their size
    "depthwise_k4_s2_p1": (nn.ConvTranspose2d(8, 8, 4, stride=2, padding=1, groups=8), (1, 8, 7, 9)),
    "depthwise_k3_s2_output_padding_relu": (nn.Sequential(nn.ConvTranspose2d(
        16, 16, 3, stride=2, padding=1, output_padding=1, groups=16), nn.ReLU()), (2, 16, 5, 6)),
    "depthwise_1x3_s1x2": (nn.ConvTranspose2d(20, 20, (1, 3), stride=(1, 2), padding=(0, 1), groups=20), (1, 20, 4, 9)),
    "depthwise_k1_s3_bias_only_phases": (nn.ConvTranspose2d(6, 6, 1, stride=3, groups=6), (1, 6, 4, 4)),
}


@pytest.mark.parametrize("name", sorted(TRANSPOSED))
def test_transposed_convolution_matches_eager_as_phases(name: str, tmp_path: Path) -> None:
    torch.manual_seed(0)
    model, shape = TRANSPOSED[name]
    path = _check(model, (torch.randn(*shape),), tmp_path)
    stride = model[0].stride if isinstance(model, nn.Sequential) else model.stride
    ((kinds),) = [[k for k, _ in ops] for ops in _payload_ops(path)]
    assert kinds.count("Conv") == stride[0] * stride[1], kinds
    assert kinds.count("Interleave") == (stride != (1, 1)), kinds
