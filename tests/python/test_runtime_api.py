"""The Python runtime API: inputs as NumPy or torch, clear errors for wrong
inputs and for corrupted, truncated or foreign files."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

import tern
from compare import assert_close


class Affine(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 3)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.fc(x) + y, torch.relu(x)


@pytest.fixture(scope="module")
def model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("api") / "affine.tern"
    tern.export(Affine().eval(), (torch.randn(2, 8), torch.randn(2, 3))).save(path)
    return path


def test_call_accepts_numpy_and_torch_and_returns_numpy_in_output_order(model_path: Path) -> None:
    torch.manual_seed(1)
    model = Affine().eval()
    torch.manual_seed(0)
    model = Affine().eval()  # same seed as the exported one: same weights
    x, y = torch.randn(2, 8), torch.randn(2, 3)
    m = tern.load(str(model_path))
    from_torch = m(x, y)
    from_numpy = m.run("forward", x.numpy(), y.numpy())
    with torch.no_grad():
        want = [t.numpy() for t in model(x, y)]
    assert [o.shape for o in from_torch] == [(2, 3), (2, 8)]
    for a, b, w in zip(from_torch, from_numpy, want):
        assert isinstance(a, np.ndarray)
        np.testing.assert_array_equal(a, b)
        assert_close(a, w)


def test_wrong_input_count_names_the_expected_inputs(model_path: Path) -> None:
    m = tern.load(str(model_path))
    with pytest.raises(TypeError, match=r"takes 2 inputs \(float32\[2, 8\], float32\[2, 3\]\), got 1"):
        m(np.zeros((2, 8), np.float32))


def test_wrong_dtype_names_the_input(model_path: Path) -> None:
    m = tern.load(str(model_path))
    with pytest.raises(TypeError, match="input 1 must have dtype float32, got float64"):
        m(np.zeros((2, 8), np.float32), np.zeros((2, 3), np.float64))


def test_wrong_shape_names_the_input(model_path: Path) -> None:
    m = tern.load(str(model_path))
    with pytest.raises(ValueError, match=r"input 0 must have shape \[2, 8\], got \[3, 8\]"):
        m(np.zeros((3, 8), np.float32), np.zeros((2, 3), np.float32))


def test_specs_describe_inputs_and_outputs(model_path: Path) -> None:
    m = tern.load(str(model_path), mmap=False)
    assert [str(s) for s in m.input_specs()] == ["float32[2, 8]", "float32[2, 3]"]
    assert [str(s) for s in m.output_specs()] == ["float32[2, 3]", "float32[2, 8]"]


def _physical_cores_from_sysfs() -> int | None:
    """The default thread count as runtime/core/cpu_info.h documents it,
    computed here from what Linux reports, not by the runtime: the physical
    cores with a CPU this process may run on (os.sched_getaffinity; a core is
    its package, die and core id under /sys/devices/system/cpu/cpuN/topology),
    keeping on CPUs with performance and efficiency cores those of at least
    half the largest cpu_capacity; at least 1, at most 64
    (ThreadPool::kMaxThreads). None off Linux."""
    if not hasattr(os, "sched_getaffinity") or not Path("/sys/devices/system/cpu").is_dir():
        return None
    capacity: dict[tuple[int, ...], int | None] = {}
    for cpu in os.sched_getaffinity(0):
        base = Path(f"/sys/devices/system/cpu/cpu{cpu}")
        ids = [base / "topology" / name for name in ("physical_package_id", "die_id", "core_id")]
        core = tuple(int(p.read_text()) for p in ids if p.exists()) if ids[2].exists() else (-1, cpu)
        cap = base / "cpu_capacity"
        capacity[core] = int(cap.read_text()) if cap.exists() else None
    largest = max((c for c in capacity.values() if c is not None), default=None)
    cores = sum(1 for c in capacity.values() if largest is None or (c is not None and 2 * c >= largest))
    return max(1, min(64, cores))


def test_threads_default_to_physical_cores_and_can_be_set(model_path: Path) -> None:
    from tern import _runtime

    assert tern.load(str(model_path), threads=3).threads() == 3
    want = _physical_cores_from_sysfs()
    if want is None:
        pytest.skip("no sched_getaffinity or /sys/devices/system/cpu to count the cores with")
    assert _runtime.physical_core_count() == want
    assert tern.load(str(model_path)).threads() == want


def test_kernel_sets_name_the_cpu_backends_choice(model_path: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import expected_default_kernel_sets

    monkeypatch.delenv("TERN_CPU_ISA", raising=False)
    m = tern.load(str(model_path))
    assert m.backends() == ["cpu"]
    want = expected_default_kernel_sets()  # the best this CPU has, from /proc/cpuinfo
    if want is not None:
        assert m.kernel_sets() == [want]
    monkeypatch.setenv("TERN_CPU_ISA", "scalar")
    assert tern.load(str(model_path)).kernel_sets() == [{"float": "scalar", "int8": "scalar"}]
    portable = tmp_path / "portable.tern"
    tern.export(Affine().eval(), (torch.randn(2, 8), torch.randn(2, 3)), partitioners=()).save(portable)
    assert tern.load(str(portable)).kernel_sets() == []  # no backend subgraph


def test_a_refused_tern_cpu_isa_says_why(model_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import platform

    monkeypatch.setenv("TERN_CPU_ISA", "avx3")
    with pytest.raises(ValueError, match=r"NotSupported: .*TERN_CPU_ISA=avx3: no such ISA \(scalar, avx2, avx512, amx, "):
        tern.load(str(model_path))
    other = "neon" if platform.machine().lower() in ("x86_64", "amd64") else "avx2"
    monkeypatch.setenv("TERN_CPU_ISA", other)
    with pytest.raises(ValueError, match=f"TERN_CPU_ISA={other}: this CPU lacks it \\(an "):
        tern.load(str(model_path))


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_bad_thread_count_is_a_value_error(model_path: Path, bad: object) -> None:
    with pytest.raises(ValueError, match="threads must be a whole number >= 1"):
        tern.load(str(model_path), threads=bad)  # type: ignore[arg-type]


def test_missing_file_raises_with_its_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no_such.tern"):
        tern.load(str(tmp_path / "no_such.tern"))


def test_not_a_tern_file_is_rejected(tmp_path: Path) -> None:
    p = tmp_path / "junk.tern"
    p.write_bytes(b"PK\x03\x04 this is a zip file, not a model" * 4)
    with pytest.raises(ValueError, match="NotATernFile"):
        tern.load(str(p))


@pytest.mark.parametrize("keep", [0.1, 0.5, 0.9, 0.999])
def test_truncated_file_is_rejected(model_path: Path, tmp_path: Path, keep: float) -> None:
    data = model_path.read_bytes()
    p = tmp_path / "cut.tern"
    p.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(ValueError, match="Truncated|NotATernFile"):
        tern.load(str(p))


def test_corrupted_flatbuffer_is_rejected_by_checksum(model_path: Path, tmp_path: Path) -> None:
    data = bytearray(model_path.read_bytes())
    data[100] ^= 0xFF  # inside the flatbuffer, which starts right after the 64-byte header
    p = tmp_path / "flipped.tern"
    p.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="ChecksumMismatch"):
        tern.load(str(p))


def test_newer_format_version_is_rejected(model_path: Path, tmp_path: Path) -> None:
    data = bytearray(model_path.read_bytes())
    data[8:10] = (99).to_bytes(2, "little")
    p = tmp_path / "future.tern"
    p.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="UnsupportedVersion.*newer"):
        tern.load(str(p))


def test_random_byte_flips_never_crash(model_path: Path, tmp_path: Path) -> None:
    # Flips anywhere (header, flatbuffer, segment table, constants): load either
    # succeeds (a flipped constant is still a valid file) or raises ValueError.
    data = model_path.read_bytes()
    rng = np.random.default_rng(0)
    p = tmp_path / "fuzz.tern"
    for _ in range(200):
        mutated = bytearray(data)
        for pos in rng.integers(0, len(data), size=3):
            mutated[pos] = int(rng.integers(0, 256))
        p.write_bytes(bytes(mutated))
        try:
            m = tern.load(str(p))
            m(np.zeros((2, 8), np.float32), np.zeros((2, 3), np.float32))
        except ValueError:
            pass


def test_flatbuffer_mutations_with_fixed_checksum_never_crash(model_path: Path, tmp_path: Path) -> None:
    # Recomputing the CRC gets mutations past the checksum, so the FlatBuffers
    # verifier and the semantic checks (indices, ranges, sizes) see them.
    import struct
    import zlib

    data = model_path.read_bytes()
    fb_offset, fb_size = struct.unpack_from("<QQ", data, 16)
    rng = np.random.default_rng(1)
    p = tmp_path / "fuzz.tern"
    rejected = 0
    for _ in range(300):
        mutated = bytearray(data)
        for pos in rng.integers(fb_offset, fb_offset + fb_size, size=2):
            mutated[pos] = int(rng.integers(0, 256))
        struct.pack_into("<I", mutated, 12, zlib.crc32(mutated[fb_offset : fb_offset + fb_size]))
        p.write_bytes(bytes(mutated))
        try:
            m = tern.load(str(p))
            m(np.zeros((2, 8), np.float32), np.zeros((2, 3), np.float32))
        except (ValueError, TypeError, KeyError):
            rejected += 1
    assert rejected > 0  # the mutations did reach the checks


def test_the_binding_refuses_an_array_of_another_itemsize_for_a_dynamic_input() -> None:
    # runtime.py checks dtypes before it calls the binding; a direct call of the
    # binding made the method read numel * 4 bytes from an int8 array, past its
    # end (found by the fuzz_module harness, tests/fuzz/).
    from tern import _runtime

    data = Path(__file__).resolve().parents[1] / "data" / "v1_3"
    module = _runtime.Module(str(data / "dynamic.tern"), True, 1, 1 << 20)
    arrays = [np.load(data / f"dynamic.input{i}.npy") for i in range(2)]
    assert module.input_specs("forward")[0][0] == "float32"
    arrays[0] = arrays[0].astype(np.int8)
    with pytest.raises(ValueError, match="input 0: an array of 224 bytes where float32 takes 896"):
        module.run("forward", arrays)
