"""Program: the result of tern.export, an exported .tern file in memory.

    program = tern.export(model, (x,))
    program.save("model.tern")
    print(program.summary())

Holds the file's bytes and what the exporter knows about them (I/O specs,
memory plan sizes, op counts). Does not import torch.
"""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

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
        ratio = self.planned_bytes / self.lower_bound_bytes if self.lower_bound_bytes else 1.0
        lines.append(
            f"  planned memory: {self.planned_bytes:,} bytes "
            f"(lower bound {self.lower_bound_bytes:,}, {ratio:.2f}x)"
        )
        return "\n".join(lines)


def count_ops(names: list[str]) -> tuple[tuple[str, int], ...]:
    """(op, count) pairs in first-use order."""
    return tuple(Counter(names).items())
