"""Bundled self-tests (tern.export(..., bundle=...), tern.self_test): the
file carries test inputs, eager's outputs and tolerances; tern-run
--self-test and tern.load(path).self_test() run them. A file passes where it
was made, fails once an expected output's byte is changed (checksum
recomputed), is refused at load when the checksum is not, and an older
reader runs it as if the tests were not there."""
from __future__ import annotations

import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch

import tern
from compare import assert_close
from conftest import built_tool
from tern.inspect import read_program


class Mlp(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.a = torch.nn.Linear(8, 16)
        self.b = torch.nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = torch.relu(self.a(x))
        return self.b(h), h.sum(dim=1) * 1000.0  # the second output at scale 1e3


class Accumulate(torch.nn.Module):
    """A buffer forward mutates: state the runtime keeps between calls."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("acc", torch.zeros(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.acc.add_(x)
        return self.acc * 2.0


def _x(seed: int, rows: int = 2) -> torch.Tensor:
    return torch.randn(rows, 8, generator=torch.Generator().manual_seed(seed))


def _self_test(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([built_tool("tern-run"), str(path), "--self-test", "--threads", "1"], capture_output=True,
                          text=True)


def _with_crc(data: bytearray) -> bytes:
    """`data` with the header's CRC-32 of the flatbuffer recomputed
    (runtime/format/header.h: u32 at 12, over [u64 at 16, + u64 at 24))."""
    start, size = struct.unpack_from("<QQ", data, 16)
    struct.pack_into("<I", data, 12, zlib.crc32(bytes(data[start:start + size])) & 0xFFFFFFFF)
    return bytes(data)


def _changed(data: bytes, pos: int, *, fix_crc: bool) -> bytes:
    """`data` with byte `pos` flipped (all bits), its CRC recomputed if fix_crc."""
    out = bytearray(data)
    out[pos] ^= 0xFF
    return _with_crc(out) if fix_crc else bytes(out)


@pytest.fixture(params=["cpu", "kernels"])
def partitioners(request: pytest.FixtureRequest) -> dict:
    """The cpu backend's default partitioner, and the portable kernels alone."""
    return {} if request.param == "cpu" else {"partitioners": ()}


def test_bundled_file_passes_self_test_and_fails_after_a_changed_expected_byte(tmp_path: Path, partitioners: dict
                                                                               ) -> None:
    program = tern.export(Mlp(), (_x(0),), bundle=[(_x(1),), tern.SelfTest((_x(2),), rtol=1e-3)], **partitioners)
    path = tmp_path / "m.tern"
    program.save(path)
    r = _self_test(path)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [line for line in r.stdout.splitlines() if line.endswith(("PASS", "FAIL"))]
    assert len(rows) == 4 and all(row.endswith(" PASS") for row in rows), r.stdout
    assert "self-test: PASS, all 4 outputs of 2 tests within tolerance" in r.stdout

    # The high byte (sign and exponent) of element 1 of test 1's output 1: far beyond any tolerance.
    out = read_program(program.data)["self_tests"][1]["expected"][1]
    assert out["dtype"] == "float32" and out["shape"] == (2,) and out["size"] == 8
    pos = out["offset"] + 4 + 3
    changed = tmp_path / "changed.tern"
    changed.write_bytes(_changed(program.data, pos, fix_crc=True))
    r = _self_test(changed)
    assert r.returncode == 1, r.stdout + r.stderr
    fails = [line for line in r.stdout.splitlines() if line.endswith("FAIL")]
    assert len(fails) == 1 and fails[0].split()[:3] == ["1", "forward", "1"], r.stdout
    assert "worst at element 1" in r.stdout and "self-test: FAIL, 1 of 4 outputs (SelfTestFailed)" in r.stdout
    results = tern.load(str(changed)).self_test()
    assert [x.passed for x in results] == [True, True, True, False]

    # The same byte without the checksum: refused at load, before any test runs.
    corrupt = tmp_path / "corrupt.tern"
    corrupt.write_bytes(_changed(program.data, pos, fix_crc=False))
    r = _self_test(corrupt)
    assert r.returncode == 2 and "checksum mismatch" in r.stderr, r.stdout + r.stderr


def test_python_self_test_reports_each_output_with_its_error_and_tolerance(tmp_path: Path) -> None:
    x = _x(1)
    want = [t.detach() for t in Mlp()(x)]
    program = tern.export(Mlp(), (_x(0),), bundle=[(x,)])
    path = tmp_path / "m.tern"
    program.save(path)
    results = tern.load(str(path)).self_test()
    assert [(r.test, r.method, r.output, r.passed, r.error) for r in results] == [
        (0, "forward", 0, True, "Ok"), (0, "forward", 1, True, "Ok")]
    assert [(r.dtype, r.shape) for r in results] == [("float32", (2, 4)), ("float32", (2,))]
    for r, w in zip(results, want):
        # default tolerances: rtol 1e-4, atol rtol times the output's largest magnitude
        assert_close(r.rtol, 1e-4, rtol=0, atol=0)
        assert_close(r.atol, 1e-4 * float(w.abs().max()), rtol=1e-6)
        assert r.passed and r.message == "" and 0 <= r.worst_index < w.numel()
    assert results[1].atol > 1e-2  # an output of scale 1e3 gets an atol of its scale
    info = read_program(program.data)["self_tests"]
    assert [e["shape"] for e in info[0]["expected"]] == [(2, 4), (2,)]
    shown = subprocess.run([sys.executable, "-m", "tern.cli", "inspect", str(path)], capture_output=True, text=True)
    assert "self-tests: 1 bundled" in shown.stdout and "test 0: forward(float32[2, 8])" in shown.stdout, shown


def test_export_fails_when_the_bundle_fails_where_it_was_made() -> None:
    x = _x(1)
    wrong = (torch.zeros(2, 4), Mlp()(x)[1].detach())  # output 0 all zeros
    with pytest.raises(ValueError, match=r"test 0 \(forward\) output 0 float32\[2, 4\]: max abs error .* tolerance"):
        tern.export(Mlp(), (_x(0),), bundle=[tern.SelfTest((x,), expected=wrong)])


def test_bundle_with_a_dynamic_shape_input(tmp_path: Path) -> None:
    batch = torch.export.Dim("batch", min=1, max=8)
    program = tern.export(Mlp(), (_x(0, rows=2),), dynamic_shapes=({0: batch},),
                          bundle=[(_x(1, rows=5),), (_x(2, rows=1),)])
    path = tmp_path / "dyn.tern"
    program.save(path)
    r = _self_test(path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "float32 [5, 4]" in r.stdout and "float32 [1]" in r.stdout, r.stdout


def test_stateful_model_self_tests_the_same_every_time(tmp_path: Path) -> None:
    model = Accumulate()
    x = torch.tensor([1.0, 2.0, 3.0])
    program = tern.export(model, (x,), bundle=[(x,), (x * 10,)])
    assert_close(model.acc, torch.zeros(3), rtol=0, atol=0)  # the eager runs for the bundle put the buffer back
    path = tmp_path / "state.tern"
    program.save(path)
    m = tern.load(str(path))
    m(np.ones(3, np.float32))  # state the app built up: reset by the self-test
    for _ in range(2):
        results = m.self_test()
        assert [r.passed for r in results] == [True, True], results
    assert_close(m.state()["acc"], np.zeros(3, np.float32), rtol=0, atol=0)  # reset after the tests too
    r = _self_test(path)
    assert r.returncode == 0, r.stdout + r.stderr


def test_file_without_bundle_is_exit_2_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "plain.tern"
    tern.export(Mlp(), (_x(0),)).save(path)
    r = _self_test(path)
    assert r.returncode == 2 and "has no bundled self-tests" in r.stderr, r.stdout + r.stderr
    with pytest.raises(ValueError, match="NotFound: the file has no bundled self-tests"):
        tern.load(str(path)).self_test()


def test_a_reader_that_ignores_the_tests_runs_the_file_as_without_them(tmp_path: Path) -> None:
    """The tests are an appended flatbuffer field: the methods, constants and
    payloads are the same bytes, the file is written at the same format
    version, and it runs bit for bit as the file without them."""
    x = _x(3)
    plain = tern.export(Mlp(), (_x(0),))
    bundled = tern.export(Mlp(), (_x(0),), bundle=[(x,)])
    a, b = read_program(plain.data), read_program(bundled.data)
    assert a["methods"] == b["methods"] and a["header"]["version_minor"] == b["header"]["version_minor"]
    assert [plain.data[s["offset"]:s["offset"] + s["size"]] for s in a["segments"]] == \
        [bundled.data[s["offset"]:s["offset"] + s["size"]] for s in b["segments"]]
    (tmp_path / "a.tern").write_bytes(plain.data)
    (tmp_path / "b.tern").write_bytes(bundled.data)
    outs_a = tern.load(str(tmp_path / "a.tern"), threads=1)(x.numpy())
    outs_b = tern.load(str(tmp_path / "b.tern"), threads=1)(x.numpy())
    for u, v in zip(outs_a, outs_b):
        np.testing.assert_array_equal(u, v)


def test_bad_bundles_are_value_errors_naming_the_item() -> None:
    x = _x(1)
    with pytest.raises(ValueError, match="bundle must be a list"):
        tern.export(Mlp(), (_x(0),), bundle=(x,))
    with pytest.raises(ValueError, match="bundle item 0 rtol: -1.0 is not a finite number >= 0"):
        tern.export(Mlp(), (_x(0),), bundle=[tern.SelfTest((x,), rtol=-1.0)])
    with pytest.raises(ValueError, match=r"bundle item 0 atol: 1 values for 2 outputs"):
        tern.export(Mlp(), (_x(0),), bundle=[tern.SelfTest((x,), atol=[1.0])])
    with pytest.raises(ValueError, match="bundle item 0: method 'decode'"):
        tern.export(Mlp(), (_x(0),), bundle=[tern.SelfTest((x,), method="decode")])


class ArgMax(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x.argmax(dim=1), x > 0


def test_integer_and_bool_outputs_are_exact_by_default(tmp_path: Path) -> None:
    x = _x(4)
    program = tern.export(ArgMax(), (x,), bundle=[(x,)])
    assert [(t.rtol, t.atol) for t in program.self_tests] == [((0.0, 0.0), (0.0, 0.0))]
    out = read_program(program.data)["self_tests"][0]["expected"]
    assert [(e["dtype"], e["shape"]) for e in out] == [("int64", (2,)), ("bool", (2, 8))]
    # the argmax of row 0 one off: an integer output of one unit fails at atol 0
    pos = out[0]["offset"]
    changed = bytearray(program.data)
    changed[pos] = (changed[pos] + 1) % 8
    path = tmp_path / "argmax.tern"
    path.write_bytes(_with_crc(changed))
    results = tern.load(str(path)).self_test()
    assert [r.passed for r in results] == [False, True], results
    assert results[0].error == "Ok" and results[0].worst_index == 0 and "max abs error 1 " in results[0].message


def test_the_frozen_file_runs_its_self_tests_as_written() -> None:
    """tests/data/v1_3/self_test.tern: the tests as the exporter wrote them
    when they were new (make_self_test.py there)."""
    path = Path(__file__).resolve().parents[1] / "data" / "v1_3" / "self_test.tern"
    results = tern.load(str(path)).self_test()
    assert [(r.test, r.output, r.dtype, r.shape, r.passed) for r in results] == [
        (0, 0, "float32", (2, 3), True), (0, 1, "int64", (2,), True),
        (1, 0, "float32", (2, 3), True), (1, 1, "int64", (2,), True)]
    assert_close(np.array([r.rtol for r in results]), np.array([1e-4, 0.0, 1e-3, 1e-3]), rtol=0, atol=0)
