"""Files written by older exporters keep loading and giving the same answers.

tests/data/v<N>/ holds files frozen when format v<N> was current (see
make_golden.py there), with their inputs and PyTorch eager's outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tern

DATA = Path(__file__).resolve().parents[1] / "data"
FILES = sorted(DATA.glob("v*/*.tern"))


def test_there_are_frozen_files() -> None:
    assert FILES, f"no frozen .tern files under {DATA}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_frozen_file_gives_its_recorded_outputs(path: Path) -> None:
    stem = path.with_suffix("")
    inputs = [np.load(p) for p in sorted(path.parent.glob(f"{stem.name}.input*.npy"))]
    expected = [np.load(p) for p in sorted(path.parent.glob(f"{stem.name}.output*.npy"))]
    outs = tern.load(str(path))(*inputs)
    assert len(outs) == len(expected)
    for got, want in zip(outs, expected):
        assert got.dtype == want.dtype and got.shape == want.shape
        err = float(np.max(np.abs(got - want)))
        assert err <= 1e-4 * max(1.0, float(np.max(np.abs(want)))), f"max abs error {err}"
