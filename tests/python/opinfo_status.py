"""What a run of the OpInfo tests (test_opinfo.py) selects and records.

The run's mode: which samples of each OpInfo run (SUBSET, the fixed subset
that `make test` runs; EVERY with TERN_OPINFO_FULL=1, `make test-ops-full`),
and where the per-OpInfo status goes (TERN_OPINFO_STATUS). What the tests
saw, collected over the module: COVERAGE (the report that
test_opinfo_coverage_report prints) and STATUS_BY_OPINFO (one entry per
OpInfo for docs/opinfo_status.json, written as one part per test process,
which scripts/ops_doc.py --merge-status merges). The floor: _lost_coverage,
the (op, dtype) pairs the recorded subset passed and the subset no longer
does.

Not a test module (pytest does not collect it); test_opinfo.py imports it.
"""
from __future__ import annotations

import contextlib
import json
import os
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import torch

if TYPE_CHECKING:
    from opinfo_harness import Verdict
    from opinfo_samples import Registry, Sample


@dataclass(frozen=True)
class Selection:
    """Which samples of an OpInfo run, per dtype (see opinfo_samples._pick)."""

    per_dtype: dict[torch.dtype, int]  # at most this many, spread evenly over the runnable ones
    screen_limit: int  # samples screened (eagerly), spread over its list; a few OpInfos have 1000+
    screen_all_dtypes: bool  # screen_limit for every dtype, not only float32, int64 and bool


# Every dtype of the list. The fixed subset that `make test` runs:
SUBSET = Selection({
    torch.float32: 3, torch.float64: 1, torch.float16: 1, torch.bfloat16: 1, torch.int8: 1, torch.uint8: 1,
    torch.int16: 1, torch.int32: 1, torch.int64: 1, torch.bool: 1,
}, screen_limit=12, screen_all_dtypes=False)
# TERN_OPINFO_FULL=1 (make test-ops-full) runs every screened sample of every
# dtype instead (and the subset's samples too, to record what the subset
# reaches: the floor test_opinfo_coverage_report holds it to).
EVERY = Selection(dict.fromkeys(SUBSET.per_dtype, 32), screen_limit=32, screen_all_dtypes=True)
FULL = os.environ.get("TERN_OPINFO_FULL") == "1"
SELECTION = EVERY if FULL else SUBSET
SAMPLES_PER_DTYPE = SELECTION.per_dtype
SCREEN_LIMIT = SELECTION.screen_limit
# Where each test process writes the per-op, per-dtype status as JSON parts
# (_write_status_part; make test-ops-full: docs/opinfo_status.json, read by
# scripts/ops_doc.py).
STATUS_PATH = os.environ.get("TERN_OPINFO_STATUS")
# The last `make test-ops-full`'s record, the subset's coverage floor.
RECORDED_STATUS = Path(__file__).resolve().parents[2] / "docs" / "opinfo_status.json"


# ---------------------------------------------------------------------------
# Coverage, collected over the module and printed by the last test


@dataclass
class Coverage:
    ran: Counter = field(default_factory=Counter)  # registered op -> samples whose program used it
    passed: Counter = field(default_factory=Counter)
    opinfos: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))  # op -> OpInfo ids
    skipped: Counter = field(default_factory=Counter)  # reason -> selected samples not run
    refused: Counter = field(default_factory=Counter)  # (op, dtype) -> samples its kernel refused at load
    screened_out: Counter = field(default_factory=Counter)  # reason -> samples screened out
    missing: Counter = field(default_factory=Counter)  # op without a kernel -> samples it blocked
    opinfos_tested: set[str] = field(default_factory=set)
    opinfos_seen: int = 0
    samples_run: int = 0
    samples_failed: int = 0
    seconds: Counter = field(default_factory=Counter)  # phase -> wall time
    eager_dtypes: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))  # op -> its kernel's dtypes
    by_dtype: dict[str, dict[str, list[int]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(lambda: [0, 0])))  # op -> dtype -> [ran, passed]
    exports: Counter = field(default_factory=Counter)  # "<n> samples ok/failed" -> exports


COVERAGE = Coverage()


@dataclass
class OpInfoStatus:
    """What one OpInfo's test saw, for docs/opinfo_status.json (one entry per
    OpInfo, so a later run of some OpInfos replaces just their entries)."""

    full: bool = FULL
    ops: dict[str, dict[str, list[int]]] = field(default_factory=dict)  # op -> dtype -> [ran, passed]
    eager_dtypes: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    samples_run: int = 0
    samples_failed: int = 0
    skipped: Counter = field(default_factory=Counter)
    refused: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))  # op -> dtype -> samples
    screened_out: Counter = field(default_factory=Counter)
    not_run: str = ""  # why no sample of the OpInfo ran at all, when it is the OpInfo's doing
    # op -> the dtypes in which some sample of the fixed subset (SUBSET) ran
    # through its kernel and passed: the floor _lost_coverage holds `make test` to.
    subset: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))

    def to_json(self) -> dict[str, Any]:
        return {"full": self.full, "ops": self.ops, "samples_run": self.samples_run, "not_run": self.not_run,
                "samples_failed": self.samples_failed, "skipped": dict(self.skipped),
                "refused": {op: dict(sorted(d.items())) for op, d in sorted(self.refused.items())},
                "screened_out": dict(self.screened_out),
                "eager_dtypes": {op: sorted(d) for op, d in sorted(self.eager_dtypes.items())},
                "subset": {op: sorted(d) for op, d in sorted(self.subset.items())}}


STATUS_BY_OPINFO: dict[str, OpInfoStatus] = defaultdict(OpInfoStatus)


@contextlib.contextmanager
def _timed(phase: str) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        COVERAGE.seconds[phase] += time.perf_counter() - start


# ---------------------------------------------------------------------------
# Recording the verdicts of one OpInfo


def _kernel_dtype(sample: Sample, dtype: str | None) -> str:
    return dtype or str(sample.dtype).removeprefix("torch.")


def _record(opinfo_id: str, verdicts: list[Verdict]) -> None:
    mine = STATUS_BY_OPINFO[opinfo_id]
    for v in verdicts:
        if v.sample.in_subset and v.skip is None and v.error is None:
            for name, dtype in v.calls:
                mine.subset[name].add(_kernel_dtype(v.sample, dtype))
        if not v.sample.selected:  # SUBSET's only (FULL): not part of this run's counts
            continue
        if v.skip and v.skip.refused:  # a kernel gap
            op, dtype = v.skip.refused
            d = _kernel_dtype(v.sample, dtype)
            COVERAGE.refused[op, d] += 1
            mine.refused[op][d] += 1
            continue
        if v.skip:
            COVERAGE.skipped[v.skip.reason] += 1
            mine.skipped[v.skip.reason] += 1
            COVERAGE.missing.update(v.skip.missing)
            continue
        COVERAGE.samples_run += 1
        COVERAGE.samples_failed += v.error is not None
        mine.samples_run += 1
        mine.samples_failed += v.error is not None
        COVERAGE.opinfos_tested.add(opinfo_id)
        for name in v.ops:
            COVERAGE.ran[name] += 1
            COVERAGE.passed[name] += v.error is None
            COVERAGE.opinfos[name].add(opinfo_id)
        for name, dtype in v.calls:  # once per kernel dtype the sample used
            d = _kernel_dtype(v.sample, dtype)
            for status in (COVERAGE.by_dtype[name][d], mine.ops.setdefault(name, {}).setdefault(d, [0, 0])):
                status[0] += 1
                status[1] += v.error is None


# ---------------------------------------------------------------------------
# The floor and the report


def _lost_coverage(recorded: dict[str, Any], now: dict[str, OpInfoStatus]) -> list[tuple[str, list[str], str]]:
    """For each OpInfo run now: the (op, dtype) pairs its subset passed when
    docs/opinfo_status.json was recorded ("subset") and no sample passes now,
    with what became of the OpInfo's samples: (OpInfo, ["op dtype"], what). The subset is fixed (same
    samples on every run: _seed, _spread), so a pair goes only if its samples
    are now skipped, refused, screened out or failing: a floor per OpInfo,
    op and dtype. OpInfos recorded before there was a "subset" are not held."""
    lost = []
    for opinfo_id, mine in sorted(now.items()):
        before = recorded.get(opinfo_id, {}).get("subset", {})
        gone = [f"{op} {d}" for op, dtypes in sorted(before.items()) for d in dtypes if d not in mine.subset.get(op, ())]
        if not gone:
            continue
        became = [f"{mine.samples_run} ran, {mine.samples_failed} failed"]
        became += [f"{n} {reason}" for reason, n in (mine.skipped + mine.screened_out).most_common()]
        became += [f"{n} refused at load by {op} ({d})" for op, ds in mine.refused.items() for d, n in ds.items()]
        became += [mine.not_run] if mine.not_run else []
        lost.append((opinfo_id, gone, "; ".join(became)))
    return lost


def _report(reg: Registry) -> str:
    c = COVERAGE
    lines = [
        f"OpInfo coverage of the {len(reg.ops)} registered kernels: {c.samples_run} samples of "
        f"{len(c.opinfos_tested)} OpInfos ran (of {c.opinfos_seen} OpInfos)",
        f"  {'op':<44} {'samples':>7} {'passed':>7}  OpInfos",
    ]
    for name in sorted(reg.ops):
        if c.ran[name]:
            infos = sorted(c.opinfos[name])
            more = f", +{len(infos) - 4}" if len(infos) > 4 else ""
            lines.append(f"  {name:<44} {c.ran[name]:>7} {c.passed[name]:>7}  {', '.join(infos[:4])}{more}")
    unreached = sorted(reg.ops - set(c.ran))
    lines.append(f"Registered ops that no OpInfo sample reached ({len(unreached)}; they need hand-written tests):")
    lines += [f"  {name}" for name in unreached] or ["  (none)"]
    lines.append("Kernel gaps: selected samples a kernel refused at load (OperatorMissing: it does not take "
                 "these dtypes or arguments), by op and dtype:")
    lines += [f"  {n:>5}  {op} {d}" for (op, d), n in c.refused.most_common()] or ["  (none)"]
    lines.append("Selected samples not run, by reason:")
    lines += [f"  {n:>5}  {reason}" for reason, n in c.skipped.most_common()] or ["  (none)"]
    lines.append(f"Samples screened out before export (at most {SCREEN_LIMIT} per OpInfo and dtype), by reason:")
    lines += [f"  {n:>5}  {reason}" for reason, n in c.screened_out.most_common()] or ["  (none)"]
    if c.missing:
        lines.append("Ops without a kernel that blocked samples (selected or screened), most first:")
        lines += [f"  {n:>5}  {name}" for name, n in c.missing.most_common(20)]
    lines.append("Time: " + ", ".join(f"{phase} {s:.0f} s" for phase, s in c.seconds.most_common()))
    lines.append("Programs: " + ", ".join(f"{n} {kind}" for kind, n in sorted(c.exports.items())))
    return "\n".join(lines) + "\n"


def _write_status_part() -> None:
    """With TERN_OPINFO_STATUS set, what each OpInfo this process ran saw, to
    <that path>.part-<worker> (test_opinfo.py, status_part)."""
    if STATUS_PATH and STATUS_BY_OPINFO:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        part = {"torch": torch.__version__, "opinfos": {k: v.to_json() for k, v in sorted(STATUS_BY_OPINFO.items())}}
        Path(f"{STATUS_PATH}.part-{worker}").write_text(json.dumps(part, indent=1, sort_keys=True) + "\n")
