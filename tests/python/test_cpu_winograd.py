"""Winograd F(2x2, 3x3) on the cpu backend: wide 3x3 stride-1 convolutions
run as input transform, 16 GEMMs and output transform, match eager on every
ISA, and are stored as their 3x3 kernels (the file no bigger than the
weights) unless CpuOptions(winograd_expanded_weights=True) asks for the
transformed ones."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
import tern
from compare import assert_outputs_close
from tern.backends.cpu import CpuOptions
from test_cpu_backend import ISAS, WinogradBlock, _check, _check_on_isa, _payload_ops, _payloads


def test_wide_3x3_convolutions_run_as_winograd_and_match_eager(tmp_path: Path) -> None:
    torch.manual_seed(0)
    path = _check(WinogradBlock(), (torch.randn(1, 128, 10, 11),), tmp_path)
    kinds = [k for ops in _payload_ops(path) for k, _ in ops]
    assert kinds.count("WinogradInput") == 3 and kinds.count("WinogradOutput") == 3, kinds
    assert kinds.count("Conv") == 3 * 16, kinds


@pytest.mark.parametrize("isa", ISAS)
def test_winograd_on_each_isa_gives_eager_results(isa: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(0)
    _check_on_isa(WinogradBlock(), (torch.randn(1, 128, 10, 11),), isa, tmp_path, monkeypatch)


def _winograd_gemms(prog: Any) -> list[tuple[int, int]]:
    """(weights value, winograd_element) of each Conv of a payload program."""
    from tern.backends.cpu.fb.Conv import Conv as FbConv
    from tern.backends.cpu.fb.OpKind import OpKind

    out = []
    for i in range(prog.OpsLength()):
        op = prog.Ops(i)
        if op.KindType() == OpKind.Conv:
            conv = FbConv()
            conv.Init(op.Kind().Bytes, op.Kind().Pos)
            out.append((conv.Weights(), conv.WinogradElement()))
    return out


def test_winograd_kernels_are_stored_as_3x3_and_the_file_is_no_bigger_than_the_weights(tmp_path: Path) -> None:
    """By default each Winograd convolution's 16 GEMMs share its 3x3 kernel
    (payload version 5, Conv.winograd_element 0..15; the runtime computes
    G g G^T at load), so the file is at most 1.02x the float weights' bytes;
    CpuOptions(winograd_expanded_weights=True) stores G g G^T packed (a
    version-2 payload, 16/9 the kernels' bytes). Both match eager and each other."""
    torch.manual_seed(0)
    model, x = WinogradBlock(), (torch.randn(1, 128, 10, 11),)
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    (tmp_path / "small").mkdir(), (tmp_path / "big").mkdir()
    small = _check(model, x, tmp_path / "small")
    big = _check(model, x, tmp_path / "big", options=CpuOptions(winograd_expanded_weights=True))
    assert small.stat().st_size <= 1.02 * weight_bytes, (small.stat().st_size, weight_bytes)
    assert big.stat().st_size >= 1.6 * weight_bytes, (big.stat().st_size, weight_bytes)
    [(version, prog)] = _payloads(small)
    gemms = _winograd_gemms(prog)
    assert version == 5 and len(gemms) == 48
    for k in range(3):  # each convolution's 16 Convs: one kernel value, elements 0..15
        block = gemms[16 * k : 16 * k + 16]
        assert len({w for w, _ in block}) == 1 and [e for _, e in block] == list(range(16)), block
    [(version, prog)] = _payloads(big)
    assert version == 2 and {e for _, e in _winograd_gemms(prog)} == {-1}
    a, b = tern.load(str(small), threads=1)(*x), tern.load(str(big), threads=1)(*x)
    assert_outputs_close(a, b, rtol=1e-5)
