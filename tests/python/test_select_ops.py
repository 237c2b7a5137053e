"""Tests of scripts/select_ops.py: the ops.def of a selective build (CMake TERN_SELECT_OPS).

Run: PYTHONPATH=python .venv/bin/python -m pytest tests/python/test_select_ops.py -q
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "select_ops.py"
OPS_DEF = REPO / "kernels" / "portable" / "ops.def"


def run_select(tmp_path: Path, selection: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    sel = tmp_path / "chosen.ops"
    sel.write_text(selection)
    out = tmp_path / "gen" / "ops_selected.def"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--ops-def", str(OPS_DEF), "--select", str(sel),
                           "--out", str(out)], capture_output=True, text=True)
    return proc, out


def tern_op_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("TERN_OP(")]


def test_select_writes_exactly_the_chosen_lines_in_ops_def_order(tmp_path: Path) -> None:
    chosen = {"aten::convolution", "aten::add.Tensor", "aten::relu"}
    proc, out = run_select(tmp_path, "# models: a, b\naten::relu   # float32\n\naten::convolution\n"
                                     "aten::add.Tensor  # float32, int64\naten::relu\n")
    assert proc.returncode == 0, proc.stderr
    expected = [line for line in tern_op_lines(OPS_DEF.read_text())
                if re.match(r'TERN_OP\("([^"]+)"', line).group(1) in chosen]
    assert len(expected) == 3
    assert tern_op_lines(out.read_text()) == expected
    assert "do not edit" in out.read_text()
    assert proc.stdout.strip() == "op_add.cpp;op_relu.cpp;op_convolution.cpp"  # a CMake list, ops.def order


def test_select_names_each_source_file_once(tmp_path: Path) -> None:
    proc, _ = run_select(tmp_path, "aten::add.Tensor\naten::add.Scalar\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "op_add.cpp"


def test_select_unknown_op_fails_naming_it_and_its_line(tmp_path: Path) -> None:
    proc, out = run_select(tmp_path, "aten::relu\naten::lgamma\naten::no_such_op  # typo\n")
    assert proc.returncode == 1
    assert "chosen.ops:2: aten::lgamma" in proc.stderr
    assert "chosen.ops:3: aten::no_such_op" in proc.stderr
    assert "aten::relu" not in proc.stderr
    assert not out.exists()


@pytest.mark.parametrize("selection, message", [
    ("aten::relu  float32\n", "one op name per line"),
    ("# nothing\n\n", "selects no ops"),
])
def test_select_malformed_selection_fails_with_a_message(tmp_path: Path, selection: str, message: str) -> None:
    proc, out = run_select(tmp_path, selection)
    assert proc.returncode == 1
    assert message in proc.stderr and "chosen.ops" in proc.stderr
    assert not out.exists()


def test_select_missing_selection_file_fails_naming_it(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--ops-def", str(OPS_DEF), "--select",
                           str(tmp_path / "absent.ops"), "--out", str(tmp_path / "o.def")],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert "absent.ops" in proc.stderr


def test_select_rerun_with_same_selection_leaves_the_output_untouched(tmp_path: Path) -> None:
    _, out = run_select(tmp_path, "aten::relu\n")
    os.utime(out, ns=(0, 0))  # a rewrite would set the modification time to now
    proc, _ = run_select(tmp_path, "aten::relu\n")
    assert proc.returncode == 0
    assert out.stat().st_mtime_ns == 0
    proc, _ = run_select(tmp_path, "aten::sigmoid\n")
    assert proc.returncode == 0
    assert out.stat().st_mtime_ns > 0 and "aten::sigmoid" in out.read_text()
