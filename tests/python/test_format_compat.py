"""Files written by older exporters keep loading and giving the same answers.

tests/data/v<N>/ holds files frozen when format v<N> was current (see
make_golden.py there), with their inputs and PyTorch eager's outputs. Files
with delegates of the test backend (format 1.1) run through the C++ runner
that has it (tests/python/test_backend.py); tests/cpp/format_compat_test.cpp
checks the same files from C++."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tern
from compare import assert_outputs_close
from test_backend import run_with_test_backend
from tern_test_backend import describe

DATA = Path(__file__).resolve().parents[1] / "data"
FILES = sorted(DATA.glob("v*/*.tern"))


def test_there_are_frozen_files_of_each_format_version() -> None:
    assert {p.parent.name for p in FILES} >= {"v1", "v1_1", "v1_2"}, f"frozen .tern files under {DATA}: {FILES}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_frozen_file_gives_its_recorded_outputs(path: Path, tmp_path: Path) -> None:
    stem = path.with_suffix("")
    inputs = [np.load(p) for p in sorted(path.parent.glob(f"{stem.name}.input*.npy"))]
    expected = [np.load(p) for p in sorted(path.parent.glob(f"{stem.name}.output*.npy"))]
    if describe(path):
        outs = run_with_test_backend(path, inputs, tmp_path)
    else:
        outs = tern.load(str(path))(*inputs)
    assert_outputs_close(outs, expected)
