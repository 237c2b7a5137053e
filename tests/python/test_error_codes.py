"""The error-code table (python/tern/error_codes.py) against the runtime's
enum (runtime/core/error.h) and names (runtime/core/core.cpp), docs/errors.md,
and `tern explain`."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tern.error_codes import CODES, explain, lookup, markdown_table

ROOT = Path(__file__).resolve().parents[2]


def _enum_names() -> list[str]:
    text = (ROOT / "runtime/core/error.h").read_text()
    body = re.search(r"enum class Error : uint8_t \{(.*?)\};", text, re.S).group(1)
    body = re.sub(r"//[^\n]*", "", body)
    names = [w.split("=")[0].strip() for w in body.split(",") if w.strip()]
    assert names[0] == "Ok" and len(names) > 10, names
    return names


def test_the_table_has_every_code_of_the_enum_in_its_order() -> None:
    assert [c.name for c in CODES] == _enum_names()
    assert [c.number for c in CODES] == list(range(len(CODES)))
    runtime_names = re.findall(r'case Error::(\w+): return "(\w+)";', (ROOT / "runtime/core/core.cpp").read_text())
    assert [n for n, _ in runtime_names] == [c.name for c in CODES] == [s for _, s in runtime_names]
    for c in CODES[1:]:
        assert c.meaning and c.causes and c.todo, c


def test_docs_errors_md_holds_the_table() -> None:
    assert markdown_table() in (ROOT / "docs/errors.md").read_text()


def _tern(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tern.cli", *args], capture_output=True, text=True)


@pytest.mark.parametrize("code", CODES[1:], ids=[c.name for c in CODES[1:]])
def test_tern_explain_prints_a_code_by_name_or_number(code) -> None:
    for arg in (code.name, code.name.lower(), str(code.number)):
        r = _tern("explain", arg)
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith(f"{code.name} ({code.number}): {code.meaning}"), r.stdout
        assert code.causes in r.stdout and code.todo in r.stdout


def test_tern_explain_finds_the_code_in_a_real_message(tmp_path: Path) -> None:
    import torch

    import tern

    class Index(torch.nn.Module):
        def forward(self, x, i):
            return x[i]

    path = tmp_path / "m.tern"
    tern.export(Index(), (torch.randn(4, 2), torch.tensor([0])), partitioners=()).save(str(path))
    with pytest.raises(ValueError) as err:
        tern.load(str(path))(np.zeros((4, 2), np.float32), np.array([7]))
    assert lookup(str(err.value)).name == "ExecutionFailed"
    r = _tern("explain", str(err.value))
    assert r.returncode == 0 and r.stdout.startswith("ExecutionFailed (11)"), r.stdout + r.stderr


def test_tern_explain_refuses_what_is_no_code() -> None:
    assert lookup("Ok").name == "Ok" and lookup("all Ok here") is None  # in a message, Ok is no failure
    for arg in ("Bogus", str(len(CODES)), "-1", "all Ok here"):
        r = _tern("explain", arg)
        assert r.returncode == 2 and "is no Tern error code" in r.stderr and "ExecutionFailed (11)" in r.stderr
    with pytest.raises(ValueError):
        explain("nothing here")
