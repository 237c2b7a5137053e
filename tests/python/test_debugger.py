"""tern debug (python/tern/debugger.py) and tern-run --dump-values
(tools/value_dump.h): every value a file computes, against eager PyTorch.

Oracles: eager PyTorch on the same inputs, computed here with the model's own
submodules (not through the debugger), for the dumped values; for the broken
kernel, the source lines of this file, found by the markers at their ends
(not by the debugger's reading of stack traces); for the error figures, values
worked out by hand.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn as nn

import tern
from compare import assert_close
from conftest import built_tool
from tern.debugger import compare, errors, read_dump, reference_values


class Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        self.proj = nn.Conv2d(6, 6, 1)
        self.norm = nn.LayerNorm(6)
        self.fc = nn.Linear(6, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = torch.tanh(self.conv(x))  # LINE-A
        b = self.proj(a) * torch.sigmoid(a)  # LINE-B
        c = self.norm(b.mean((2, 3)))  # LINE-C
        return self.fc(c).log_softmax(-1)  # LINE-D


def _line(marker: str) -> int:
    """The line of this file that ends with `# marker`."""
    lines = Path(__file__).read_text().splitlines()
    return next(i + 1 for i, text in enumerate(lines) if text.rstrip().endswith(f"# {marker}"))


def _model() -> tuple[Tiny, torch.Tensor]:
    torch.manual_seed(3)
    return Tiny().eval(), torch.randn(2, 3, 9, 9)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("debug")
    m, x = _model()
    out = {"cpu": d / "tiny.tern", "kernels": d / "tiny-kernels.tern"}
    tern.export(m, (x,)).save(str(out["cpu"]))
    tern.export(m, (x,), partitioners=()).save(str(out["kernels"]))
    return out


def _dump(file: Path, x: torch.Tensor, directory: Path, tool: str = "tern-run", env: dict | None = None) -> Path:
    directory.mkdir()
    np.save(directory / "x.npy", x.numpy())
    r = subprocess.run([built_tool(tool), str(file), "--input", str(directory / "x.npy"), "--dump-values",
                        str(directory)], capture_output=True, text=True, env={**os.environ, **(env or {})})
    assert r.returncode == 0, r.stderr
    assert "values of one run" in r.stdout
    return directory


@pytest.mark.parametrize("which", ["cpu", "kernels"])
def test_dumped_values_are_eager_values(files: dict[str, Path], which: str, tmp_path: Path) -> None:
    """The values tern-run --dump-values writes for the first conv (+ tanh),
    the 1x1 conv, the mean and the output are eager's, computed here from the
    model's own submodules."""
    m, x = _model()
    dumped = read_dump(_dump(files[which], x, tmp_path / "v"))
    with torch.no_grad():
        a = torch.tanh(m.conv(x))
        p = m.proj(a)
        b = p * torch.sigmoid(a)
        eager = {"tanh": a, "convolution_1": p, "mean": b.mean((2, 3)), "_log_softmax": m(x)}
    found = {}
    for d in dumped:
        if d.nodes and d.nodes[-1] in eager:
            found[d.nodes[-1]] = d.value.transpose(0, 3, 1, 2) if d.nhwc else d.value
    assert set(found) == set(eager), [d.nodes for d in dumped]
    for name, want in eager.items():
        assert_close(found[name].reshape(want.shape), want, rtol=1e-5)
    if which == "cpu":
        assert all(d.kind == "step" for d in dumped if d.nodes and d.nodes[-1] in ("tanh", "convolution_1", "mean"))
        assert any(d.nhwc for d in dumped)  # the backend's 4-d values are NHWC: the index says so
    else:
        assert {d.kind for d in dumped} == {"kernel"}


@pytest.mark.parametrize("backend", [True, False])
def test_a_correct_file_has_no_jump(files: dict[str, Path], backend: bool) -> None:
    m, x = _model()
    report = tern.debug(m, (x,), files["cpu"], backend=backend)
    compared = [r for r in report.rows if r.compared]
    assert len(compared) >= 6 and report.first_jump is None, report.table()
    assert all(r.max_rel < 1e-5 for r in compared), report.table()
    assert report.outputs_max_rel and report.outputs_max_rel[0] < 1e-5
    # the multi-output layer norm of the kernels-only file: each out against its own
    assert any(r.node.startswith("native_layer_norm") for r in compared) or backend


@pytest.mark.parametrize("backend,kind,marker", [
    (True, "convolution", "LINE-A"),        # a fused conv + tanh, then the 1x1 conv: the first is flagged
    (True, "mul", "LINE-B"),
    (True, "native_layer_norm", "LINE-C"),
    (False, "convolution", "LINE-A"),
    (False, "sigmoid", "LINE-B"),
    (False, "addmm", "LINE-D"),
])
def test_a_broken_kernel_is_found_at_its_line(files: dict[str, Path], backend: bool, kind: str, marker: str) -> None:
    """tern-run-broken changes every float value of one node kind right after
    its kernel or backend step computed it (tools/value_dump.h): the first
    jump is that op's first row, at its line of this file."""
    m, x = _model()
    report = tern.debug(m, (x,), files["cpu"], backend=backend, runner=built_tool("tern-run-broken"),
                        env={"TERN_RUN_BREAK": kind})
    first = report.first_jump
    assert first is not None, report.table()
    assert first.nodes[0].rsplit("_", 1)[0] == kind or first.nodes[0] == kind, report.table()
    assert f"{Path(__file__).name}:{_line(marker)} " in first.source, report.table()
    assert all(not r.over for r in report.rows if r.seq < first.seq), report.table()
    table = report.table()
    assert "FIRST JUMP" in table and f":{_line(marker)} in forward" in report.summary()


def test_unbroken_build_with_break_variable_is_clean(files: dict[str, Path]) -> None:
    """TERN_RUN_BREAK does nothing in the installed tern-run (only the test build breaks)."""
    m, x = _model()
    report = tern.debug(m, (x,), files["cpu"], env={"TERN_RUN_BREAK": "convolution"})
    assert report.first_jump is None, report.table()


def test_quantized_against_the_pt2e_reference() -> None:
    m, x = _model()
    qm = tern.quantize(m, (x,), calibration=[(torch.randn(2, 3, 9, 9),) for _ in range(4)], scheme="int8",
                       progress=False)
    report = tern.debug(qm, (x,))
    assert report.quantized
    ints = [r for r in report.rows if r.compared and r.dtype == "int8"]
    assert ints, report.table()
    assert all(r.max_abs <= 1 for r in ints), report.table()  # at most a rounding step off
    assert report.first_jump is None, report.table()


class Tagger(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(8, 12)
        self.b = nn.Linear(12, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.nn.functional.gelu(self.a(x)) + x.sum(-1, keepdim=True))


def test_dynamic_shapes_lower_as_the_file(tmp_path: Path) -> None:
    """A file exported with a dynamic dim: the reference lowers with the
    file's Dims (read from the file), so every dumped value has its node."""
    torch.manual_seed(0)
    m, x = Tagger().eval(), torch.randn(2, 6, 8)
    t = torch.export.Dim("T", min=2, max=40)
    path = tmp_path / "tagger.tern"
    tern.export(m, (x,), dynamic_shapes=({1: t},)).save(str(path))
    report = tern.debug(m, (torch.randn(2, 11, 8),), path)  # another length than the export's
    assert report.rows and all(r.compared for r in report.rows), report.table()
    assert report.first_jump is None and report.outputs_max_rel[0] < 1e-5, report.table()


class Stateful(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("h", torch.randn(1, 8))
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        h = torch.tanh(self.lin(x) + self.h)
        self.h.copy_(h)
        return h.argmax(-1), h > 0, h.topk(3)[0]


@pytest.mark.parametrize("backend", [True, False])
def test_state_and_integer_values(tmp_path: Path, backend: bool) -> None:
    """A model whose forward mutates a buffer (the reference starts from its
    value at export, as the file's first run does), with int64 and bool
    values among those compared."""
    torch.manual_seed(2)
    m, x = Stateful().eval(), torch.randn(1, 8)
    path = tmp_path / "state.tern"
    tern.export(m, (x,), **({} if backend else {"partitioners": ()})).save(str(path))
    torch.manual_seed(2)
    model = Stateful().eval()
    before = model.h.clone()
    report = tern.debug(model, (x,), path)
    assert_close(model.h, before, rtol=0, atol=0)  # the debugger's eager run left the buffer as it was
    assert report.rows and all(r.compared for r in report.rows), report.table()
    assert {"int64", "bool"} <= {r.dtype for r in report.rows}, report.table()
    assert report.first_jump is None and len(report.outputs_max_rel) == 3, report.table()
    assert report.backend == backend


def test_errors_worked_by_hand() -> None:
    got, ref = np.array([1.0, 2.5, -4.0]), np.array([1.0, 2.0, -4.0])
    max_abs, max_rel, snr = errors(got, ref)
    assert_close(np.array([max_abs, max_rel, snr]), np.array([0.5, 0.5 / 4.0, 10 * np.log10(21.0 / 0.25)]),
                 rtol=1e-12)
    assert errors(ref, ref) == (0.0, 0.0, float("inf"))
    nan = float("nan")
    assert errors(np.array([nan, 1.0]), np.array([nan, 1.0]))[:2] == (0.0, 0.0)  # NaN where eager has NaN
    assert errors(np.array([nan, 1.0]), np.array([0.0, 1.0]))[1] == float("inf")  # NaN where eager has none
    assert errors(np.array([np.inf]), np.array([1.0]))[1] == float("inf")
    assert errors(np.array([-np.inf]), np.array([np.inf]))[1] == float("inf")
    # relative to the value's own scale: 1e-3 off on values of 1e3 is 1e-6
    assert_close(np.array(errors(np.array([1000.001, 5.0]), np.array([1000.0, 5.0]))[1]), np.array(1e-6),
                 rtol=1e-6)


def test_compare_marks_a_jump_and_not_what_follows(tmp_path: Path, files: dict[str, Path]) -> None:
    """Errors that only carry a jump's error downstream are "over", not jumps."""
    m, x = _model()
    gm, values = reference_values(m, (x,))
    d = _dump(files["kernels"], x, tmp_path / "v", "tern-run-broken", {"TERN_RUN_BREAK": "tanh"})
    report = compare(gm, values, read_dump(d))
    jumps = [r for r in report.rows if r.jump]
    assert [r.node for r in jumps] == ["tanh"], report.table()
    assert any(r.over and not r.jump for r in report.rows), report.table()


def test_read_dump_of_no_dump(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no values.tsv"):
        read_dump(tmp_path)


USER_MODEL = '''
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 16)
        self.b = nn.Linear(16, 3)

    def forward(self, x):
        h = torch.relu(self.a(x))
        return self.b(h * h)  # the mul


def make_model():
    torch.manual_seed(0)
    return Net().eval()
'''


def test_cli(tmp_path: Path) -> None:
    (tmp_path / "usermodel.py").write_text(USER_MODEL)
    sys.path.insert(0, str(tmp_path))
    try:
        import usermodel  # noqa: PLC0415
        model = usermodel.make_model()
    finally:
        sys.path.remove(str(tmp_path))
    x = torch.randn(5, 8)
    np.save(tmp_path / "x.npy", x.numpy())
    tern.export(model, (x,)).save(str(tmp_path / "user.tern"))
    tern_cmd = [sys.executable, "-m", "tern.cli", "debug", "user.tern", "--module", "usermodel:make_model",
                "--inputs", "x.npy"]
    r = subprocess.run(tern_cmd, cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "no value is over the threshold" in r.stdout and "max rel" in r.stdout
    r = subprocess.run(tern_cmd + ["--runner", built_tool("tern-run-broken")], cwd=tmp_path, capture_output=True,
                       text=True, env={**os.environ, "TERN_RUN_BREAK": "mul"})
    assert r.returncode == 0, r.stderr
    assert "first jump" in r.stdout and "usermodel.py:14 in forward: return self.b(h * h)" in r.stdout, r.stdout
    r = subprocess.run(tern_cmd[:5] + ["--module", "usermodel", "--inputs", "x.npy"], cwd=tmp_path, capture_output=True,
                       text=True)
    assert r.returncode == 1 and "expected pkg.module:name" in r.stderr
    r = subprocess.run(tern_cmd + ["--runner", str(tmp_path / "nothing")], cwd=tmp_path, capture_output=True,
                       text=True)
    assert r.returncode == 1 and "not an executable file" in r.stderr
