"""Packs weights for the cpu backend's microkernels, once, at export.

One layout for every ISA (backends/cpu/ukernels/ukernels.h): panels of 16
output channels,

    GEMM / convolution, N outputs, ks taps of kc inputs:
        ceil(N / 16) panels, panel p = [16 bias][ks][kc][16 weights]
    depthwise convolution, C channels, ks taps:
        ceil(C / 16) blocks, block b = [16 bias][ks][16 weights]

zero past N (or C). backends/cpu/conv.cpp's pack_conv_weights packs the same
way (tests compare the two through whole models).
"""
from __future__ import annotations

import numpy as np

PANEL = 16


def _panels(n: int) -> int:
    return (n + PANEL - 1) // PANEL


def pack_conv(weight: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """weight [oc, kc, kh, kw] (PyTorch's layout), bias [oc] or None -> packed float32."""
    oc, kc, kh, kw = weight.shape
    ks = kh * kw
    p = _panels(oc)
    w = np.zeros((ks, kc, p * PANEL), np.float32)
    w[:, :, :oc] = weight.reshape(oc, kc, ks).transpose(2, 1, 0)
    b = np.zeros((p * PANEL,), np.float32)
    if bias is not None:
        b[:oc] = bias
    w = w.reshape(ks * kc, p, PANEL).transpose(1, 0, 2)  # [p][ks * kc][16]
    return np.concatenate([b.reshape(p, 1, PANEL), w], axis=1).reshape(-1)


def pack_depthwise(weight: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """weight [c, 1, kh, kw], bias [c] or None -> packed float32."""
    c = weight.shape[0]
    ks = weight.shape[2] * weight.shape[3]
    blocks = _panels(c)
    w = np.zeros((ks, blocks * PANEL), np.float32)
    w[:, :c] = weight.reshape(c, ks).T
    b = np.zeros((blocks * PANEL,), np.float32)
    if bias is not None:
        b[:c] = bias
    w = w.reshape(ks, blocks, PANEL).transpose(1, 0, 2)  # [blocks][ks][16]
    return np.concatenate([b.reshape(blocks, 1, PANEL), w], axis=1).reshape(-1)


def pack_linear(weight_kn: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """A linear layer's weight as addmm takes it, [k, n], bias [n] or None."""
    k, n = weight_kn.shape
    return pack_conv(weight_kn.T.reshape(n, k, 1, 1), bias)


def pack_qs8_conv(weight: np.ndarray) -> np.ndarray:
    """int8 weight [oc, kc, kh, kw] -> the qs8 igemm layout
    (backends/cpu/ukernels/qs8.h): ceil(oc / 16) panels of
    [ks][kc4 / 4][16 columns][4 inputs], zero past oc and kc."""
    oc, kc, kh, kw = weight.shape
    ks, kc4, p = kh * kw, (kc + 3) // 4 * 4, _panels(oc)
    w = np.zeros((p * PANEL, kc4, ks), np.int8)
    w[:oc, :kc] = weight.reshape(oc, kc, ks)
    # [p][16 cols][kc4 / 4][4][ks] -> [p][ks][kc4 / 4][16 cols][4]
    w = w.reshape(p, PANEL, kc4 // 4, 4, ks).transpose(0, 4, 2, 1, 3)
    return np.ascontiguousarray(w).reshape(-1)


def pack_qs8_depthwise(weight: np.ndarray) -> np.ndarray:
    """int8 weight [c, 1, kh, kw] -> blocks of [ks][16 channels], zero past c."""
    c = weight.shape[0]
    ks = weight.shape[2] * weight.shape[3]
    blocks = _panels(c)
    w = np.zeros((blocks * PANEL, ks), np.int8)
    w[:c] = weight.reshape(c, ks)
    return np.ascontiguousarray(w.reshape(blocks, PANEL, ks).transpose(0, 2, 1)).reshape(-1)

