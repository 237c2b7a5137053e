"""Tests of `tern ops --for FILE...`: the ops and dtypes .tern files use (python/tern/op_usage.py).

Run: PYTHONPATH=<installed tern> .venv/bin/python -m pytest tests/python/test_cli_ops.py -q
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

import tern
from tern.cli import main
from tern.ops import supported_ops

REPO = Path(__file__).resolve().parents[2]


class AddRelu(nn.Module):  # aten::add.Tensor and aten::relu on float32
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + y)


class IntAddSigmoidGt(nn.Module):  # aten::add.Tensor on int64; sigmoid, gt.Scalar (bool out) on float32
    def forward(self, i: torch.Tensor, j: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return i + j, torch.sigmoid(x), x > 0


class Lgamma(nn.Module):  # aten::lgamma: no portable kernel
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.lgamma(x)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("ops_for")
    x = torch.randn(2, 3)
    i = torch.arange(6).reshape(2, 3)
    paths = {"a": d / "a.tern", "b": d / "b.tern", "lgamma": d / "lgamma.tern"}
    tern.export(AddRelu(), (x, x), partitioners=()).save(paths["a"])
    tern.export(IntAddSigmoidGt(), (i, i, x), partitioners=()).save(paths["b"])
    # as a runtime with an lgamma kernel (another kernel library) would export it
    tern.export(Lgamma(), (x,), supported_ops=supported_ops() | {"aten::lgamma"}, partitioners=()).save(paths["lgamma"])
    return {k: str(v) for k, v in paths.items()}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(["ops", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_ops_for_two_files_prints_the_union_with_dtypes(models: dict[str, str], capsys) -> None:
    rc, out, err = run(capsys, "--for", models["a"], models["b"])
    assert rc == 0, err
    lines = out.splitlines()
    assert [line.split(None, 1) for line in lines[:-1]] == [
        ["aten::add.Tensor", "float32, int64"],
        ["aten::gt.Scalar", "float32"],  # its input's dtype, not its out's (bool)
        ["aten::relu", "float32"],
        ["aten::sigmoid", "float32"],
    ]
    assert lines[-1] == "# 4 ops, 5 kernel calls in 2 files"


def test_ops_for_one_file_prints_only_its_ops(models: dict[str, str], capsys) -> None:
    rc, out, _ = run(capsys, "--for", models["b"])
    assert rc == 0
    assert [line.split()[0] for line in out.splitlines()[:-1]] == ["aten::add.Tensor", "aten::gt.Scalar",
                                                                   "aten::sigmoid"]
    assert "aten::add.Tensor  int64" in out


def test_ops_for_missing_file_fails_naming_it(models: dict[str, str], tmp_path: Path, capsys) -> None:
    missing = str(tmp_path / "nowhere.tern")
    rc, out, err = run(capsys, "--for", models["a"], missing)
    assert rc == 1
    assert out == ""
    assert f"{missing}: no such file" in err


def test_ops_for_not_a_tern_file_fails_naming_it(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.tern"
    bad.write_bytes(b"PK\x03\x04 this is a zip file" * 4)
    rc, _, err = run(capsys, "--for", str(bad))
    assert rc == 1
    assert str(bad) in err and "not a .tern file" in err


def test_ops_for_op_without_portable_kernel_is_marked_and_fails(models: dict[str, str], capsys) -> None:
    rc, out, err = run(capsys, "--for", models["a"], models["lgamma"])
    assert rc == 1
    assert "aten::lgamma float32 # no portable kernel" in " ".join(out.split())
    assert "aten::relu" in out  # the rest is still listed
    assert "aten::lgamma" in err and models["lgamma"] in err and models["a"] not in err


def test_ops_for_def_format_feeds_the_select_script(models: dict[str, str], tmp_path: Path, capsys) -> None:
    rc, out, err = run(capsys, "--for", models["a"], models["b"], "--format", "def")
    assert rc == 0, err
    sel = tmp_path / "sel.ops"
    sel.write_text(out)
    gen = tmp_path / "sel.def"
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "select_ops.py"), "--ops-def",
                           str(REPO / "kernels" / "portable" / "ops.def"), "--select", str(sel), "--out", str(gen)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    names = [line.split('"')[1] for line in gen.read_text().splitlines() if line.startswith("TERN_OP(")]
    assert sorted(names) == ["aten::add.Tensor", "aten::gt.Scalar", "aten::relu", "aten::sigmoid"]


def test_ops_for_def_format_with_missing_op_prints_nothing(models: dict[str, str], capsys) -> None:
    rc, out, err = run(capsys, "--for", models["lgamma"], "--format", "def")
    assert rc == 1
    assert out == ""
    assert "aten::lgamma" in err


def test_ops_without_for_still_lists_the_runtime_ops(capsys) -> None:
    rc, out, _ = run(capsys)
    assert rc == 0
    assert out.splitlines() == sorted(supported_ops())


def test_cli_ops_for_does_not_import_torch(models: dict[str, str]) -> None:
    code = ("import sys; from tern.cli import main; rc = main(['ops', '--for', sys.argv[1]]); "
            "assert 'torch' not in sys.modules, 'tern ops imported torch'; sys.exit(rc)")
    proc = subprocess.run([sys.executable, "-c", code, models["a"]], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "aten::relu" in proc.stdout


def test_ops_for_a_delegated_file_names_the_backend_it_needs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ops", "--for", str(REPO / "tests" / "data" / "v1_1" / "delegated.tern")]) == 0
    text = capsys.readouterr().out
    assert "aten::convolution" in text and "aten::relu" not in text  # relu runs on the backend
    assert "# backend tern_test: 2 delegates" in text
