"""Program.metadata: named byte strings stored in the .tern file beside the
model (tern.export(..., metadata=...)), read back by the runtime as views
into the file (Module::metadata in C++, tern.load(path).metadata() here)."""
from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest
import torch

import tern
from tern.cli import inspect_file
from tern.inspect import read_program

DATA = Path(__file__).resolve().parent.parent / "data"


class Tiny(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) + 1


def _export(**kwargs) -> tern.Program:
    return tern.export(Tiny(), (torch.randn(2, 3),), partitioners=(), **kwargs)


ENTRIES = {
    "langid.vocab": "ça\nде\n日本\n".encode(),
    "blob": bytes(range(256)) * 300,
    "empty": b"",
    "z" * 256: b"\x00\x01",
}


def test_metadata_round_trips_through_export_save_and_load(tmp_path: Path) -> None:
    program = _export(metadata=ENTRIES)
    assert dict(program.metadata) == ENTRIES
    path = tmp_path / "m.tern"
    program.save(path)
    m = tern.load(str(path))
    assert m.metadata() == ENTRIES
    assert list(m.metadata()) == sorted(ENTRIES), "keys in bytewise order"
    assert read_program(path)["metadata"] == sorted(ENTRIES.items())
    x = torch.randn(2, 3)
    assert (m(x)[0] == (torch.relu(x) + 1).numpy()).all(), "the model runs as without metadata"


def test_metadata_values_are_16_byte_aligned_in_the_file() -> None:
    data = _export(metadata={"a": b"\x01" * 3, "b": b"marker-b-" * 5, "c": b"marker-c-" * 7}).data
    for value in (b"marker-b-" * 5, b"marker-c-" * 7):
        offset = data.find(value)
        assert offset > 0 and offset % 16 == 0, offset


def test_file_without_metadata_is_byte_identical_to_before_and_has_none(tmp_path: Path) -> None:
    plain = _export()
    assert _export(metadata={}).data == plain.data
    assert dict(plain.metadata) == {}
    path = tmp_path / "m.tern"
    plain.save(path)
    assert tern.load(str(path)).metadata() == {}
    assert read_program(path)["metadata"] == []
    assert "  metadata:" not in inspect_file(str(path))


def test_metadata_keeps_the_format_version_the_methods_need() -> None:
    plain, with_meta = _export(), _export(metadata=ENTRIES)
    assert read_program(with_meta.data)["header"]["version_minor"] == read_program(plain.data)["header"]["version_minor"]


def test_with_metadata_returns_a_new_program_and_replaces_keys(tmp_path: Path) -> None:
    program = _export(metadata={"a": b"1", "b": b"2"})
    other = program.with_metadata({"b": b"two", "c": bytearray(b"3")})
    assert dict(program.metadata) == {"a": b"1", "b": b"2"}, "the original is unchanged"
    assert dict(other.metadata) == {"a": b"1", "b": b"two", "c": b"3"}
    path = tmp_path / "m.tern"
    other.save(path)
    assert tern.load(str(path)).metadata() == {"a": b"1", "b": b"two", "c": b"3"}


def test_inspect_lists_metadata_keys_and_sizes(tmp_path: Path) -> None:
    path = tmp_path / "m.tern"
    _export(metadata=ENTRIES).save(path)
    text = inspect_file(str(path))
    assert f"metadata: 4 entries, {sum(len(v) for v in ENTRIES.values()):,} bytes" in text
    assert "langid.vocab" in text and f"{len(ENTRIES['blob']):,} bytes" in text


def test_what_the_backend_left_to_the_portable_kernels_is_stored_and_inspect_says_why(tmp_path: Path) -> None:
    from tern.backends.cpu import CpuPartitioner
    from tern.export import REFUSALS_KEY

    grouped = torch.nn.Sequential(torch.nn.ConvTranspose2d(4, 4, 3, stride=2, groups=2), torch.nn.ReLU()).eval()
    cpu = CpuPartitioner()
    cpu.refused.append(("earlier", "aten::x", "an earlier export's refusal"))  # a partitioner used before
    tern.export(grouped, (torch.randn(1, 4, 6, 6),), partitioners=[cpu]).save(tmp_path / "g.tern")
    stored = tern.load(str(tmp_path / "g.tern")).metadata()[REFUSALS_KEY].decode()
    why = "a grouped transposed convolution (ungrouped and depthwise ones run)"
    assert stored == f"cpu\tconvolution\taten::convolution\t{why}"
    text = inspect_file(str(tmp_path / "g.tern"))
    assert f"cpu: aten::convolution: {why} [convolution]" in text
    # all claimed: no entry; the application's own entry of that key is kept
    plain = torch.nn.Sequential(torch.nn.Conv2d(4, 4, 3), torch.nn.ReLU()).eval()
    tern.export(plain, (torch.randn(1, 4, 6, 6),)).save(tmp_path / "p.tern")
    assert REFUSALS_KEY not in tern.load(str(tmp_path / "p.tern")).metadata()
    tern.export(grouped, (torch.randn(1, 4, 6, 6),), metadata={REFUSALS_KEY: b"mine"}).save(tmp_path / "m.tern")
    assert tern.load(str(tmp_path / "m.tern")).metadata()[REFUSALS_KEY] == b"mine"


@pytest.mark.parametrize("entries, message", [
    ({"": b""}, "keys take 1 to 256 UTF-8 bytes"),
    ({"k" * 257: b""}, "257 bytes; keys take 1 to 256"),
    ({"é" * 129: b""}, "258 bytes"),
    ({"a\0b": b""}, "without NUL"),
    ({1: b""}, "must be a str, not int"),
    ({"text": "not bytes"}, "must be bytes, not str (encode text first"),
    ({f"k{i}": b"" for i in range(1025)}, "1025 entries, at most 1024"),
])
def test_metadata_the_format_does_not_take_is_a_value_error(entries: dict, message: str) -> None:
    with pytest.raises(ValueError, match="metadata") as e:
        _export(metadata=entries)
    assert message in str(e.value)


def _patch_key(data: bytes, old: bytes, new: bytes) -> bytes:
    """`data` with key `old` overwritten by `new` (same length) and the
    flatbuffer's CRC fixed: a file only a hand could make."""
    out = bytearray(data)
    at = out.find(old)
    out[at:at + len(old)] = new
    start, size = struct.unpack_from("<QQ", out, 16)
    struct.pack_into("<I", out, 12, zlib.crc32(out[start:start + size]) & 0xFFFFFFFF)
    return bytes(out)


@pytest.mark.parametrize("new, message", [
    (b"key-a", "metadata entry 1: key 'key-a' appears twice (entries 0 and 1)"),
    (b"key-0", "metadata entry 1: key 'key-0' is not after 'key-a'"),
    (b"ke\0-b", "metadata entry 1: key contains a NUL byte"),
])
def test_a_file_with_broken_metadata_is_refused_naming_the_entry(tmp_path: Path, new: bytes, message: str) -> None:
    data = _export(metadata={"key-a": b"1", "key-b": b"2"}).data
    path = tmp_path / "bad.tern"
    path.write_bytes(_patch_key(data, b"key-b", new))
    with pytest.raises(ValueError, match="InvalidProgram") as e:
        tern.load(str(path))
    assert message in str(e.value)


@pytest.mark.parametrize("path", sorted(DATA.glob("v1*/*.tern")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_frozen_files_read_back_their_metadata(path: Path) -> None:
    """The files older than metadata have none; v1_3/metadata.tern has what
    the exporter wrote when metadata was new (make_metadata.py there); those
    written after it at most the exporter's own ("tern." keys)."""
    if path.name == "delegated.tern":
        pytest.skip("needs the test backend (tests/cpp/test_backend.h), which the bindings lack")
    want = _frozen_metadata() if path.name == "metadata.tern" else {}
    got = {k: v for k, v in tern.load(str(path)).metadata().items() if k not in want and k.startswith("tern.")}
    assert {k: v for k, v in tern.load(str(path)).metadata().items() if k not in got} == want
    assert [item for item in read_program(path)["metadata"] if item[0] not in got] == sorted(want.items())


def _frozen_metadata() -> dict[str, bytes]:
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_metadata", DATA / "v1_3" / "make_metadata.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.METADATA
