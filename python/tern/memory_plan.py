"""Memory planning: where each non-constant tensor lives in the method's arena.

Lifetimes are intervals over the instruction order, inclusive at both ends:
  - a method input is live from step 0; any other tensor from the instruction
    that produces it (its first appearance);
  - a tensor stays live through its last use; method outputs through the last
    step.
A tensor read and a tensor written by the same instruction are both live at
that step, so an out tensor never shares bytes with that instruction's inputs.
An input's bytes may be reused after its last use: the runtime must set every
input before each execute().

Placement is greedy by size into ONE arena: largest first (ties by value index,
so plans are deterministic), each at the lowest 64-byte-aligned offset that
does not overlap any already placed tensor whose lifetime overlaps its own.

    arena  0        64       128      192      256
           |--- a (steps 0-2) ---|
           |- b (3-5) -|    |- c (1-4) ...

`planned_bytes` is the arena size; `lower_bound_bytes` is the most bytes live at
any one step (each tensor rounded up to 64), which no plan can beat. Tensors
with zero bytes get no storage and are not planned.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

ALIGNMENT = 64


class PlanError(AssertionError):
    """check_plan found two live tensors sharing bytes, or a misplaced tensor."""


@dataclass(frozen=True)
class Interval:
    """One planned tensor: `nbytes` bytes live over steps [start, end]."""

    value: int
    nbytes: int
    start: int
    end: int

    def overlaps(self, other: "Interval") -> bool:
        return self.start <= other.end and other.start <= self.end


@dataclass(frozen=True)
class MemoryPlan:
    intervals: tuple[Interval, ...]
    offsets: dict[int, int]  # value index -> byte offset in arena 0 (aliases included)
    planned_bytes: int
    lower_bound_bytes: int
    aliases: dict[int, tuple[int, int]] = field(default_factory=dict)  # view value -> (its root, byte offset in it)


def with_aliases(p: MemoryPlan, aliases: dict[int, tuple[int, int]], nbytes: dict[int, int]) -> MemoryPlan:
    """`p` with each view value (tern.aliasing) placed inside its root, at
    its offset; checks each lies inside its root's bytes."""
    offsets = dict(p.offsets)
    for v, (root, delta) in aliases.items():
        if root not in p.offsets:
            raise PlanError(f"view value {v}: its root {root} is not planned")
        if delta < 0 or delta + nbytes[v] > nbytes[root]:
            raise PlanError(f"view value {v} at [{delta}, {delta + nbytes[v]}) of value {root} lies outside its "
                            f"{nbytes[root]} bytes")
        offsets[v] = p.offsets[root] + delta
    return MemoryPlan(p.intervals, offsets, p.planned_bytes, p.lower_bound_bytes, dict(aliases))


def align(n: int, a: int = ALIGNMENT) -> int:
    return (n + a - 1) // a * a


def lifetimes(
    sizes: dict[int, int],
    steps: Sequence[Iterable[int]],
    inputs: Iterable[int],
    outputs: Iterable[int],
    loops: Sequence[tuple[int, int]] = (),
) -> list[Interval]:
    """Intervals of the tensors in `sizes` (value -> bytes, zero-byte ones skipped),
    given the tensor values each step (instruction) reads or writes.

    loops: (first, last) step of each loop (a jump from `last` back to
    `first`). A tensor live when a loop starts and used inside it stays live
    to the loop's end: the next iteration reads it again."""
    last = max(len(steps) - 1, 0)
    first_seen: dict[int, int] = {v: 0 for v in inputs if v in sizes}
    last_seen: dict[int, int] = dict(first_seen)
    for step, values in enumerate(steps):
        for v in values:
            if v in sizes:
                first_seen.setdefault(v, step)
                last_seen[v] = step
    for v in outputs:
        if v in sizes:
            first_seen.setdefault(v, 0)
            last_seen[v] = last
    changed = bool(loops)
    while changed:  # nested loops: extending into an inner loop's end may reach an outer one's
        changed = False
        for top, bottom in loops:
            for v, start in first_seen.items():
                if start < top <= last_seen[v] < bottom:
                    last_seen[v] = bottom
                    changed = True
    return [Interval(v, sizes[v], first_seen[v], last_seen[v]) for v in sorted(first_seen) if sizes[v] > 0]


def plan(intervals: Sequence[Interval]) -> MemoryPlan:
    """Greedy-by-size placement of `intervals` into one arena."""
    placed: list[tuple[int, Interval]] = []  # (offset, interval)
    offsets: dict[int, int] = {}
    for it in sorted(intervals, key=lambda i: (-i.nbytes, i.value)):
        offset = _first_fit(it, placed)
        placed.append((offset, it))
        offsets[it.value] = offset
    arena = align(max((o + i.nbytes for o, i in placed), default=0))
    return MemoryPlan(tuple(intervals), offsets, arena, lower_bound(intervals))


def _first_fit(it: Interval, placed: list[tuple[int, Interval]]) -> int:
    """The lowest aligned offset where `it` fits between the live neighbours."""
    offset = 0
    for o, other in sorted((p for p in placed if p[1].overlaps(it)), key=lambda p: p[0]):
        if offset + it.nbytes <= o:
            break
        offset = max(offset, align(o + other.nbytes))
    return offset


def lower_bound(intervals: Sequence[Interval]) -> int:
    """The most bytes live at any step, each tensor rounded up to ALIGNMENT."""
    if not intervals:
        return 0
    events: dict[int, int] = {}
    for it in intervals:
        events[it.start] = events.get(it.start, 0) + align(it.nbytes)
        events[it.end + 1] = events.get(it.end + 1, 0) - align(it.nbytes)
    live = best = 0
    for step in sorted(events):
        live += events[step]
        best = max(best, live)
    return best


def check_plan(intervals: Sequence[Interval], offsets: dict[int, int], arena_bytes: int) -> None:
    """Raises PlanError unless every tensor is placed, aligned, inside the arena,
    and no two tensors with overlapping lifetimes overlap in memory."""
    for it in intervals:
        o = offsets.get(it.value)
        if o is None:
            raise PlanError(f"value {it.value} is not placed")
        if o % ALIGNMENT or o < 0 or o + it.nbytes > arena_bytes:
            raise PlanError(f"value {it.value} at [{o}, {o + it.nbytes}) is misaligned or outside the {arena_bytes}-byte arena")
    by_offset = sorted(intervals, key=lambda i: (offsets[i.value], i.value))
    for i, a in enumerate(by_offset):
        a_end = offsets[a.value] + a.nbytes
        for b in by_offset[i + 1:]:
            if offsets[b.value] >= a_end:
                break
            if a.overlaps(b):
                raise PlanError(
                    f"values {a.value} (steps {a.start}-{a.end}, bytes [{offsets[a.value]}, {a_end})) and "
                    f"{b.value} (steps {b.start}-{b.end}, bytes [{offsets[b.value]}, {offsets[b.value] + b.nbytes})) "
                    "are live together and share memory"
                )
