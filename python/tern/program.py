"""Program: the result of tern.export, an exported .tern file in memory.

    program = tern.export(model, (x,), metadata={"vocab": vocab_bytes})
    program = program.with_metadata({"settings": b"..."})   # a new Program: Programs are immutable
    program = tern.export(model, (x,), bundle=[(x,)])        # with a self-test (tern.SelfTest)
    program.save("model.tern")
    print(program.summary())

Holds the file's bytes and what the exporter knows about them (I/O specs,
memory plan sizes, op counts, metadata, bundled self-tests). Does not import
torch.
"""
from __future__ import annotations

import dataclasses
import os
from collections import Counter
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

from tern.memory_plan import MemoryPlan


@dataclass(frozen=True)
class TensorSpec:
    """A method input or output: fx node name, dtype ("float32"), shape.

    With dynamic shapes (format 1.3), `dims` has per dim None (static) or
    (Dim name, min, max), and `shape` holds each dim's max."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    dims: tuple[tuple[str, int, int] | None, ...] = ()

    @property
    def shape_text(self) -> str:
        """ "[batch<=8, 3, 224, 224]": dynamic dims by name and bound."""
        if not self.dims:
            return str(list(self.shape))
        parts = [str(n) if d is None else f"{d[0] or 'dim'}<={d[2]}" for n, d in zip(self.shape, self.dims)]
        return "[" + ", ".join(parts) + "]"


@dataclass(frozen=True)
class BundledTensor:
    """A tensor of a bundled self-test as the file stores it: dtype name
    ("float32"), shape and its bytes in C order."""

    dtype: str
    shape: tuple[int, ...]
    data: bytes = field(repr=False)


@dataclass(frozen=True)
class BundledTest:
    """A self-test stored in the file (Program.self_tests, schema/tern.fbs):
    `method`'s inputs, the outputs eager PyTorch gave for them, and one
    rtol and atol per output. Made by tern.export(..., bundle=[...])."""

    method: str
    inputs: tuple[BundledTensor, ...]
    expected: tuple[BundledTensor, ...]
    rtol: tuple[float, ...]
    atol: tuple[float, ...]


@dataclass(frozen=True)
class Program:
    """An exported program; build with tern.export."""

    data: bytes = field(repr=False)
    input_specs: tuple[TensorSpec, ...]
    output_specs: tuple[TensorSpec, ...]
    planned_bytes: int  # bytes of the method's planned arena
    lower_bound_bytes: int  # the most bytes live at any one step
    constant_bytes: int  # bytes of distinct constant tensor data
    op_counts: tuple[tuple[str, int], ...]  # ("aten::addmm", 2), in first-use order
    num_values: int
    num_instructions: int
    producer: str
    memory_plan: MemoryPlan = field(repr=False)  # lifetimes and offsets, for check_plan
    state_specs: tuple[TensorSpec, ...] = ()  # buffers the method keeps between calls (name: the buffer's)
    # Named byte strings stored in the file beside the model (read back with
    # tern.load(path).metadata(), Module::metadata(key) in C++).
    metadata: Mapping[str, bytes] = field(default_factory=lambda: MappingProxyType({}))
    # Self-tests stored in the file (tern.export(..., bundle=[...]); run by
    # tern.load(path).self_test(), tern-run --self-test, Module::self_test()).
    self_tests: tuple[BundledTest, ...] = ()
    # Writes the file again with other metadata and self-tests (set by tern.export).
    _serialize: Callable[[Sequence[tuple[bytes, bytes]], Sequence[BundledTest]], bytes] | None = field(
        default=None, repr=False, compare=False)

    def with_metadata(self, entries: Mapping[str, bytes | bytearray | memoryview]) -> "Program":
        """A copy of this program whose file also holds `entries` (a key it
        had takes the new value). Raises ValueError for a key or value the
        format does not take (see check_metadata)."""
        if self._serialize is None:
            raise ValueError("with_metadata: this Program was not made by tern.export (no way to write it again)")
        merged = {**self.metadata, **entries}
        data = self._serialize(check_metadata(merged), self.self_tests)
        return dataclasses.replace(self, data=data, metadata=MappingProxyType(
            {k: bytes(v) for k, v in merged.items()}))

    def with_self_tests(self, tests: Sequence[BundledTest]) -> "Program":
        """A copy of this program whose file holds `tests` (instead of the
        ones it had). tern.export(..., bundle=...) makes them from eager
        outputs and checks them; this only writes them."""
        if self._serialize is None:
            raise ValueError("with_self_tests: this Program was not made by tern.export (no way to write it again)")
        if len(tests) > MAX_SELF_TESTS:
            raise ValueError(f"{len(tests)} self-tests, a file holds at most {MAX_SELF_TESTS}")
        data = self._serialize(check_metadata(self.metadata), tuple(tests))
        return dataclasses.replace(self, data=data, self_tests=tuple(tests))

    def to_bytes(self) -> bytes:
        """The .tern file."""
        return self.data

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes the .tern file to `path`."""
        with open(path, "wb") as f:
            f.write(self.data)

    def summary(self) -> str:
        """A human-readable overview: I/O, ops with counts, memory."""
        lines = [f"tern program ({len(self.data):,} bytes, {self.producer})"]
        lines += [f"  input  {s.name}: {s.dtype}{s.shape_text}" for s in self.input_specs]
        lines += [f"  output {s.name}: {s.dtype}{s.shape_text}" for s in self.output_specs]
        lines += [f"  state  {s.name}: {s.dtype}{list(s.shape)} (kept between calls)" for s in self.state_specs]
        lines.append(f"  {self.num_instructions} instructions, {self.num_values} values; ops:")
        lines += [f"    {n:5d}  {op}" for op, n in sorted(self.op_counts, key=lambda p: (-p[1], p[0]))]
        lines.append(f"  constants: {self.constant_bytes:,} bytes")
        lines += [f"  metadata {k!r}: {len(v):,} bytes" for k, v in sorted(self.metadata.items())]
        lines += [f"  self-test {i}: {t.method}({', '.join(f'{x.dtype}{list(x.shape)}' for x in t.inputs)}), "
                  f"{len(t.expected)} expected outputs" for i, t in enumerate(self.self_tests)]
        ratio = self.planned_bytes / self.lower_bound_bytes if self.lower_bound_bytes else 1.0
        lines.append(
            f"  planned memory: {self.planned_bytes:,} bytes "
            f"(lower bound {self.lower_bound_bytes:,}, {ratio:.2f}x)"
        )
        return "\n".join(lines)


# The format's limits on Program.metadata (runtime/format/verify.h).
MAX_METADATA_ENTRIES = 1024
MAX_METADATA_KEY = 256
# The flatbuffer that holds the metadata addresses less than 2 GiB; the rest
# of the program needs a little of it.
MAX_METADATA_BYTES = (1 << 31) - (1 << 26)
# The most self-tests a file bundles (runtime/format/verify.h: kMaxSelfTests).
MAX_SELF_TESTS = 64


def check_metadata(entries: Mapping[str, Any]) -> list[tuple[bytes, bytes]]:
    """`entries` as the file stores them: (UTF-8 key, value) pairs sorted by
    key bytes. Raises ValueError naming the entry the format does not take: a
    key that is not a str of 1 to 256 UTF-8 bytes without NUL, a value that
    is not bytes-like, more than 1024 entries or 2 GiB in all."""
    if len(entries) > MAX_METADATA_ENTRIES:
        raise ValueError(f"metadata: {len(entries)} entries, at most {MAX_METADATA_ENTRIES}")
    out: list[tuple[bytes, bytes]] = []
    for key, value in entries.items():
        if not isinstance(key, str):
            raise ValueError(f"metadata key {key!r} must be a str, not {type(key).__name__}")
        k = key.encode("utf-8")
        if not 1 <= len(k) <= MAX_METADATA_KEY or b"\0" in k:
            raise ValueError(f"metadata key {key[:40]!r}: {len(k)} bytes; keys take 1 to {MAX_METADATA_KEY} "
                             f"UTF-8 bytes without NUL")
        if not isinstance(value, (bytes, bytearray, memoryview)):
            hint = " (encode text first: s.encode())" if isinstance(value, str) else ""
            raise ValueError(f"metadata {key!r}: the value must be bytes, not {type(value).__name__}{hint}")
        out.append((k, bytes(value)))
    total = sum(len(v) for _, v in out)
    if total > MAX_METADATA_BYTES:
        raise ValueError(f"metadata: {total:,} bytes in all, more than the {MAX_METADATA_BYTES:,} a file holds")
    return sorted(out)


def count_ops(names: list[str]) -> tuple[tuple[str, int], ...]:
    """(op, count) pairs in first-use order."""
    return tuple(Counter(names).items())
