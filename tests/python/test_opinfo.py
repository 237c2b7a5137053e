"""Every registered portable kernel against PyTorch eager, on PyTorch's own
sample inputs (OpInfo; DESIGN.md, Testing: "Op tests are driven by PyTorch's
own sample inputs (OpInfo), not hand-picked"; the oracle is PyTorch eager).

One test per OpInfo of torch's op_db, named after it. For each sample input
(float32; int64 and bool too where the OpInfo takes them):
  1. screen: run the op in eager PyTorch (the reference) and record the ATen
     ops it dispatches to. Keep the sample if one of them is registered in
     the runtime (its main op, see _screen) and none is an op that neither
     the runtime nor torch.export's decompositions can give the runtime. An
     eager call costs microseconds where an export costs 100+ ms: this keeps
     the ~400 OpInfos that have nothing to do with Tern out of the run time;
  2. wrap the call in a module (tensor arguments are its inputs, everything
     else is baked in), tern.export, save, tern.load, run, compare.
The kept samples of one OpInfo (at most SAMPLES_PER_DTYPE per dtype, spread
evenly over its sample list, fixed seed: the same samples on every run) are
exported together as one program, since each export costs ~100 ms of fixed
torch.export overhead. If that program cannot be exported, loaded or run, or
a sample's outputs differ from eager, the samples run one by one, so every
verdict and every failure message is about one sample. Which ops ran for
which sample is read back from the file (tern.inspect). The op list is
whatever the runtime registers when the tests run.

Skipped samples are counted, never dropped silently: torch.export cannot
trace it, it needs an op without a kernel, format v1 cannot hold it. A sample
whose instruction a kernel refuses at load (OperatorMissing: the kernel does
not take its dtype or arguments) is a kernel gap, counted apart from the
skips, per op and dtype. A sample whose outputs export computed itself
(constants folded) credits no kernel and is counted as such; the ops of a
sample are those connected to its outputs through values, views included
(a view the exporter aliases to its source has no instruction of its own).
test_opinfo_coverage_report (last in the file) prints, for each registered op,
how many samples ran through it and passed, the registered ops that no sample
reached (they need hand-written tests), the kernel gaps and the skip counts;
the same table is written to <pytest basetemp>/opinfo_coverage.txt. It then
fails if an (op, dtype) that the fixed subset passed when docs/opinfo_status.json
was recorded (its "subset") no longer passes in the subset of an OpInfo it
ran: the floor that keeps a regression from moving samples to "skipped"
unnoticed (see _lost_coverage). `make test-ops-full` records it (running the
subset's samples beside the full selection); so does `make ops-floor`, a
run of the subset alone, which replaces only the floor of each OpInfo's
recorded entry (after a change that moves which samples the subset picks).

Tolerance: floats go through tests/python/compare.py (compare.mismatch): NaN
and infinities in the same places, every finite element within
atol + rtol * |eager|, where atol is rtol times the output's own largest
magnitude (not floored at 1: an output of 1e-6 is checked at its own scale).
rtol is RTOL, looser for the OpInfos in LOOSE_TOLERANCE (each with its reason)
and for float16/bfloat16 outputs (HALF_RTOL). For the OpInfos in
INPUT_SCALE_ATOL, whose samples legitimately cancel (a sum of signed terms
can be far smaller than its terms), atol is derived from the sample's
inputs' scale instead, never from Tern's output. Integers and bools exact.

Run: .venv/bin/python -m pytest -q tests/python/test_opinfo.py
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
import random
import re
import sys
import time
import traceback
import types
import unittest
import warnings
import zlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest
import torch
import torch.utils._pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

import tern
from tern.inspect import read_program
from tern.op_usage import instruction_dtype
from tern.ops import DTYPES, op_name

from compare import mismatch

# torch.testing._internal imports expecttest (a PyTorch test dependency that
# the pinned environment does not carry) only for a TestCase base class and an
# ACCEPT flag; op_db needs neither.
try:
    import expecttest  # noqa: F401
except ImportError:
    _shim = types.ModuleType("expecttest")
    _shim.TestCase = unittest.TestCase  # type: ignore[attr-defined]
    _shim.ACCEPT = False  # type: ignore[attr-defined]
    sys.modules["expecttest"] = _shim

from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402



@dataclass(frozen=True)
class Selection:
    """Which samples of an OpInfo run, per dtype (see _pick)."""

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
# Where test_opinfo_coverage_report writes the per-op, per-dtype status as
# JSON (make test-ops-full: docs/opinfo_status.json, read by scripts/ops_doc.py).
STATUS_PATH = os.environ.get("TERN_OPINFO_STATUS")
# The last `make test-ops-full`'s record, the subset's coverage floor.
RECORDED_STATUS = Path(__file__).resolve().parents[2] / "docs" / "opinfo_status.json"
# Samples screened first: the rest only if one of these has a registered main op.
SCREEN_FIRST = 4

RTOL = 1e-4
# float16 / bfloat16 outputs: Tern computes each op in float32 and rounds its
# result once (kernels/portable/util/half.h); PyTorch's CPU kernels do the
# same for most ops, but some compute in the 16-bit type itself (rounding
# intermediates) or sum in another order, so results differ by a few units in
# the last place of the output's scale: 4 ulps at 1.0 (float16 2^-10,
# bfloat16 2^-7), relative to each element and to the output's own largest
# magnitude, as for RTOL (compare.mismatch).
HALF_RTOL = {torch.float16: 4 * 2.0**-10, torch.bfloat16: 4 * 2.0**-7}
# OpInfo id -> (relative tolerance, why the default is too tight for it).
LOOSE_TOLERANCE: dict[str, tuple[float, str]] = {}
# OpInfo id -> why its samples legitimately cancel: atol = rtol * the scale of
# the sample's inputs (_input_scale), not of its output.
INPUT_SCALE_ATOL: dict[str, str] = {}

# OpInfos whose output values are undefined, so eager is no oracle.
UNDEFINED_OUTPUT = {
    "empty": "uninitialized memory",
    "empty_like": "uninitialized memory",
    "empty_permuted": "uninitialized memory",
    "empty_strided": "uninitialized memory",
    "new_empty": "uninitialized memory",
    "new_empty_strided": "uninitialized memory",
}

# OpInfos where torch.export's own decomposed program differs from eager, so
# eager is no oracle for what the file computes (checked: ep.module() after
# run_decompositions gives the same answer as Tern).
DECOMPOSITION_DIFFERS = {
    "nn.functional.multilabel_margin_loss": "torch's decomposition returns shape [1] for a 1-d input, eager [] "
                                            "(torch 2.14)",
}

# Dispatcher-level ops that export turns into a registered op (the value):
# Tern's passes (python/tern/passes/) or torch.export itself.
LOWERED_IN_EXPORT = {
    "aten::clamp": "aten::hardtanh",  # lower_clamp (float, number bounds)
    "aten::sum": "aten::sum.dim_IntList",  # lower_full_reductions
    "aten::native_batch_norm": "aten::_native_batch_norm_legit_no_training",  # eval mode
}

# Dispatcher-level ops that never block a sample at screening: torch.export
# drops them, or they are scratch that functionalization removes (batch
# norm's unused saved statistics). A wrong entry costs an export, not a verdict.
VANISH_IN_EXPORT = frozenset(
    {
        "aten::detach",
        "aten::alias",
        "aten::lift_fresh",
        "aten::_assert_tensor_metadata",
        "aten::empty.memory_format",
    }
)


def _opinfo_id(op: Any) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


OPINFOS = {_opinfo_id(op): op for op in op_db}


# ---------------------------------------------------------------------------
# What the runtime has, and what torch.export can give it


@dataclass(frozen=True)
class Registry:
    ops: frozenset[str]  # registered in the runtime
    decomposable: frozenset[str]  # not registered; torch.export's core-ATen table decomposes them


_registry: Registry | None = None


def _registry_now() -> Registry:
    global _registry
    if _registry is None:
        from tern import _runtime

        ops = frozenset(_runtime.registered_ops())
        table = {op_name(k) for k in torch.export.default_decompositions().keys()}
        _registry = Registry(ops, frozenset(table - ops))
    return _registry


class _RecordOps(TorchDispatchMode):
    """Records the ATen overloads an eager call dispatches to, each with the
    dtypes it ran in (see _call_dtype)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: set[Any] = set()
        self.calls: set[tuple[Any, str]] = set()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.ops.add(func)
        out = func(*args, **(kwargs or {}))
        dtype = _call_dtype(func, args, kwargs or {}, out)
        if dtype is not None:
            self.calls.add((func, dtype))
        return out


def _call_dtype(func: Any, args: Any, kwargs: dict[str, Any], out: Any) -> str | None:
    """The dtype the runtime would select this call's kernel by (OpKernel::dtypes,
    tern.op_usage): its first tensor argument's in schema order, list items
    included, else its first tensor output's. So a float64 sample whose op
    runs on an int64 index tensor, or softmax's dtype= cast, counts the dtype
    the ATen kernel itself took."""
    schema = getattr(func, "_schema", None)
    values: list[Any] = []
    if schema is not None:
        for i, a in enumerate(schema.arguments):
            if a.is_out:
                continue
            values += pytree.tree_leaves(args[i] if i < len(args) and not a.kwarg_only else kwargs.get(a.name))
    values += pytree.tree_leaves(out)
    for v in values:
        if isinstance(v, torch.Tensor):
            return str(v.dtype).removeprefix("torch.")
    return None


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
# Samples


@dataclass
class Sample:
    index: int  # in the OpInfo's sample list for this dtype
    dtype: torch.dtype
    text: str  # the arguments, for failure messages
    fn: Any  # the OpInfo's eager function
    leaves: list[Any]  # pytree leaves of (args, kwargs); tensors become module inputs
    spec: Any
    refs: list[torch.Tensor] | None  # eager outputs, flattened; None if not all tensors
    ops: frozenset[str]  # ATen ops of the eager call (dispatcher level)
    op_dtypes: frozenset[tuple[str, str]]  # (op, dtype its kernel ran in, see _call_dtype)
    random: bool  # one of them draws random numbers
    mutates: bool = False  # the eager call writes to an input
    selected: bool = True  # in SELECTION: counted in the run's results (else only in the subset's, FULL)
    in_subset: bool = True  # in SUBSET: what `make test` runs

    @property
    def name(self) -> str:
        return f"{str(self.dtype).replace('torch.', '')} sample {self.index}"

    @property
    def inputs(self) -> tuple[torch.Tensor, ...]:
        return tuple(x for x in self.leaves if isinstance(x, torch.Tensor))

    def __call__(self, *tensors: torch.Tensor) -> Any:
        it = iter(tensors)
        leaves = [next(it) if isinstance(x, torch.Tensor) else x for x in self.leaves]
        args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        return self.fn(*args, **kwargs)


def _make_sample(op: Any, index: int, dtype: torch.dtype, s: Any) -> Sample:
    leaves, spec = pytree.tree_flatten(((s.input, *s.args), dict(s.kwargs)))
    sample = Sample(index, dtype, _describe(s), op.op, leaves, spec, None, frozenset(), frozenset(), False)
    rec = _RecordOps()
    copies = [x.clone() for x in sample.inputs]
    try:
        with torch.no_grad(), rec:
            out = sample(*copies)
    except Exception:  # not a valid call for eager either
        return sample
    sample.mutates = not all(map(_same_values, copies, sample.inputs))
    outs = pytree.tree_flatten(out)[0]
    sample.refs = outs if all(isinstance(x, torch.Tensor) for x in outs) else None
    sample.ops = frozenset(op_name(f) for f in rec.ops)
    sample.op_dtypes = frozenset((_functional(op_name(f)), d) for f, d in rec.calls)
    sample.random = any(torch.Tag.nondeterministic_seeded in f.tags for f in rec.ops)
    return sample


def _same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal, NaN where NaN; sparse tensors count as equal."""
    if a.layout != torch.strided:
        return True
    if a.is_floating_point() or a.is_complex():
        nan = a.isnan()
        return torch.equal(nan, b.isnan()) and torch.equal(a[~nan], b[~nan])
    return torch.equal(a, b)


def _in_format(t: torch.Tensor) -> bool:
    """Format v1 has a dtype for t's (python/tern/emit.py)."""
    from tern.emit import scalar_type_of

    try:
        scalar_type_of(t.dtype)
    except tern.ExportError:
        return False
    return True


def _describe(s: Any) -> str:
    def one(x: Any) -> str:
        if isinstance(x, torch.Tensor):
            return f"Tensor[{', '.join(map(str, x.shape))}] {str(x.dtype).replace('torch.', '')}"
        if isinstance(x, (list, tuple)) and any(isinstance(y, torch.Tensor) for y in x):
            return f"[{', '.join(one(y) for y in x)}]"
        return repr(x)

    args = [one(s.input), *(one(a) for a in s.args), *(f"{k}={one(v)}" for k, v in s.kwargs.items())]
    return f"({', '.join(args)})"


def _screen(sample: Sample, reg: Registry) -> tuple[str, tuple[str, ...]]:
    """("run", ()) if the sample should be exported, else (why not, ops to blame).

    A blocking op: one the eager call dispatches to that is not registered,
    not decomposed by torch.export, not lowered by Tern's passes and not
    dropped. In-place ops count as their functional form, which is what export
    leaves of them. Whether a registered kernel then does the sample's work
    (its main op) is read from the exported file: see _run.
    """
    if sample.refs is None:
        return "eager call fails or returns non-tensors", ()
    if sample.random:
        return "random op (eager is no oracle)", ()
    if sample.mutates:
        return "mutates an input (in-place op)", ()
    if not all(t.layout == torch.strided for t in (*sample.inputs, *sample.refs)):
        return "sparse tensor", ()
    tensors = (*sample.inputs, *sample.refs)
    if not all(_in_format(t) for t in tensors):
        return "dtype not in format v1", ()
    if any(t.dim() > 8 for t in tensors):
        return "more than 8 dims (format v1)", ()
    if _undefined_cast(sample):
        return "float -> integer cast of NaN, inf or out-of-range values (undefined in torch)", ()
    ops = {_functional(o) for o in sample.ops}
    blocking = sorted(ops - reg.ops - reg.decomposable - VANISH_IN_EXPORT - LOWERED_IN_EXPORT.keys())
    if blocking:
        return "needs an op without a kernel", tuple(blocking)
    return "run", ()


def _undefined_cast(sample: Sample) -> bool:
    """A float -> integer _to_copy of NaN, +-inf or a value beyond int32: C++
    undefined behavior inside torch (the result depends on the CPU), while
    Tern saturates by design (kernels/portable/util/copy.h). Eager is no
    oracle there."""
    if "aten::_to_copy" not in sample.ops:
        return False
    integral = [r for r in sample.refs or [] if not (r.is_floating_point() or r.is_complex() or r.dtype == torch.bool)]
    floats = [t for t in sample.inputs if t.is_floating_point() and t.numel()]
    return bool(integral) and any(not bool((t.abs() < 2**31).all()) for t in floats)


def _functional(name: str) -> str:
    """"aten::sub_.Tensor" -> "aten::sub.Tensor"."""
    base, dot, overload = name.partition(".")
    return f"{base[:-1]}{dot}{overload}" if base.endswith("_") and not base.endswith("__") else name


def _spread(items: list[Any], n: int) -> list[Any]:
    """n items evenly spread over `items` (first and last included), in order."""
    if len(items) <= n:
        return list(items)
    picks = sorted({round(i * (len(items) - 1) / (n - 1)) for i in range(n)}) if n > 1 else [0]
    return [items[i] for i in picks]


def _screened(op: Any, dtype: torch.dtype, reg: Registry, subset: bool) -> list[Sample]:
    """The samples of `op` in `dtype` to run (SELECTION, see _pick); counts
    the others by reason. With `subset` (FULL only), also SUBSET's samples, the
    ones not in SELECTION marked selected=False, and each marked in_subset or
    not: the run records what `make test`'s subset reaches (OpInfoStatus.subset)."""
    _seed(zlib.crc32(f"{_opinfo_id(op)}/{dtype}".encode()))
    try:
        raw = list(enumerate(op.reference_inputs("cpu", dtype, requires_grad=False, set_seed=False)))
    except Exception:  # a sample generator that needs what this build lacks
        COVERAGE.screened_out["OpInfo cannot make samples"] += 1
        STATUS_BY_OPINFO[_opinfo_id(op)].screened_out["OpInfo cannot make samples"] += 1
        return []
    mine = STATUS_BY_OPINFO[_opinfo_id(op)]
    screened: dict[int, Sample | None] = {}

    def screen(index: int, s: Any, count: bool) -> Sample | None:
        """The sample if it should run, else None; each screened once."""
        if index in screened:
            return screened[index]
        sample = _make_sample(op, index, dtype, s)
        verdict, blame = _screen(sample, reg)
        screened[index] = sample if verdict == "run" else None
        if not count:  # only SUBSET's (FULL): its screening is not the run's
            return screened[index]
        for name, op_dtype in sample.op_dtypes:  # eager's kernel for the op takes this dtype
            if name not in reg.ops:  # the op export leaves of it (eval batch norm, ...)
                name = LOWERED_IN_EXPORT.get(name, name)
            if name in reg.ops and op_dtype in DTYPES:  # not complex, uint16, ...: no Tern dtype
                COVERAGE.eager_dtypes[name].add(op_dtype)
                mine.eager_dtypes[name].add(op_dtype)
        if verdict != "run":
            COVERAGE.screened_out[verdict] += 1
            mine.screened_out[verdict] += 1
            COVERAGE.missing.update(blame)
        return screened[index]

    picked = _pick(raw, dtype, SELECTION, functools.partial(screen, count=True))
    in_subset = _pick(raw, dtype, SUBSET, functools.partial(screen, count=False)) if subset else []
    for s in picked:
        s.in_subset = not FULL or any(s is x for x in in_subset)
    extra = [s for s in in_subset if not any(s is x for x in picked)]
    for s in extra:
        s.selected = False
    return picked + extra


def _pick(raw: list[tuple[int, Any]], dtype: torch.dtype, selection: Selection,
          screen: Any) -> list[Sample]:
    """`selection`'s samples of `raw` (index, sample input) in `dtype`: at most
    selection.per_dtype[dtype] of the runnable ones, spread evenly, in order.

    Screens SCREEN_FIRST samples spread over the list first, and the rest of
    screen_limit only if one of those can run: most OpInfos have nothing to do
    with Tern, and their samples tend to fail alike."""
    first = _spread(raw, SCREEN_FIRST)
    # The dtypes make test added later (float64, the small integers, the
    # half types) screen only the first few in the subset: their samples
    # mostly repeat float32's and int64's, and screening is eager work per sample.
    all_of_limit = selection.screen_all_dtypes or dtype in (torch.float32, torch.int64, torch.bool)
    limit = selection.screen_limit if all_of_limit else SCREEN_FIRST
    rest = [x for x in _spread(raw, limit) if x[0] not in {i for i, _ in first}]
    runnable: list[Sample] = []
    for n, (index, s) in enumerate(first + rest):
        if n == len(first) and not runnable:
            break
        sample = screen(index, s)
        if sample is not None:
            runnable.append(sample)
    runnable.sort(key=lambda sample: sample.index)
    return _spread(runnable, selection.per_dtype[dtype])


def _seed(seed: int) -> None:
    """Seeds what sample generators draw from, once per OpInfo and dtype.

    Not torch.manual_seed (what OpInfo's set_seed=True calls before every
    sample): on a build without CUDA it records a formatted stack trace for
    three lazy device seeds each time, which under pytest's deep stack makes
    sample generation ten times slower."""
    torch.random.default_generator.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)


def _selected(op: Any, reg: Registry) -> list[Sample]:
    """float32 samples; the other dtypes' too where the OpInfo has them and
    some float32 sample (if it has float32 at all) can run. FULL: SUBSET's
    samples too, which stop at float32 by the same rule (see _screened)."""
    out: list[Sample] = []
    subset = FULL
    for dtype in [d for d in SAMPLES_PER_DTYPE if d in op.supported_dtypes("cpu")]:
        samples = _screened(op, dtype, reg, subset)
        out += samples
        if dtype == torch.float32:
            if not any(s.selected for s in samples):
                break
            subset = subset and any(s.in_subset for s in samples)
    return out


# ---------------------------------------------------------------------------
# Export, load, run


class Skip(Exception):
    """A sample that cannot run, for a counted reason; `refused` (op, dtype)
    if it is a kernel gap: that kernel refused it at load (Rejected)."""

    def __init__(self, reason: str, missing: tuple[str, ...] = (),
                 refused: tuple[str, str | None] | None = None) -> None:
        super().__init__(reason)
        self.reason, self.missing, self.refused = reason, missing, refused


REFUSED = "refused at load by its kernel (OperatorMissing: the kernel does not take these dtypes or arguments)"


def _refused(r: "Rejected", ops: list[tuple[str, str | None]]) -> Skip:
    """The kernel gap a Rejected load is: op and the dtype its kernel was selected by."""
    op, dtype = ops[r.instruction] if r.instruction < len(ops) else (r.op, None)
    return Skip(f"{r.op}: {REFUSED}", refused=(r.op, dtype if op == r.op else None))


class _One(torch.nn.Module):
    """One sample's call, as a submodule: torch.export then tags each of its
    nodes with it (nn_module_stack "calls.<i>"), which names a node's sample."""

    def __init__(self, sample: Sample) -> None:
        super().__init__()
        self.sample = sample

    def forward(self, *tensors: torch.Tensor) -> Any:
        return self.sample(*tensors)


class _Calls(torch.nn.Module):
    """The samples' calls as one module: takes every sample's tensors, in
    order, and returns every sample's outputs, flattened, in order."""

    def __init__(self, samples: list[Sample]) -> None:
        super().__init__()
        self.calls = torch.nn.ModuleList(_One(s) for s in samples)

    def forward(self, *tensors: torch.Tensor) -> tuple[Any, ...]:
        outs: list[Any] = []
        start = 0
        for call in self.calls:
            n = len(call.sample.inputs)
            outs += pytree.tree_flatten(call(*tensors[start : start + n]))[0]
            start += n
        return tuple(outs)


# How the harness exports: tern.export's own steps (python/tern/export.py),
#   gm = lower_to_graph(module, args, ops); check_supported(gm, ops); build_program(gm)
# run one by one, so that between the first and the others the samples that
# need an op without a kernel can be found in gm (by nn_module_stack) and
# their outputs dropped, instead of failing the joint program and decomposing
# again (torch.export's decompositions are most of an export's time).
# test_harness_export_equals_tern_export checks that the bytes are tern.export's.


def _lower(samples: list[Sample], inputs: tuple[torch.Tensor, ...]) -> torch.fx.GraphModule:
    """tern.export's first step. Raises Skip for what torch.export cannot
    trace and for documented limitations."""
    from tern.export import lower_to_graph

    try:
        with _timed("export"):
            return lower_to_graph(_Calls(samples), inputs, _registry_now().ops)
    except tern.ExportError as e:
        raise _export_skip(str(e)) from e
    except Exception as e:
        if _raised_by_torch_export(e):
            raise Skip(f"torch.export cannot trace it ({type(e).__name__})") from e
        raise


def _missing_by_sample(gm: torch.fx.GraphModule) -> dict[int, tuple[str, ...]]:
    """Sample -> the ops in its part of gm that have no kernel. Raises Skip if
    such an op cannot be traced to a sample."""
    import operator

    supported = _registry_now().ops
    out: dict[int, list[str]] = defaultdict(list)
    untraced: list[str] = []
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target is operator.getitem or op_name(node.target) in supported:
            continue
        paths = [path for path, _ in node.meta.get("nn_module_stack", {}).values()]
        owners = [int(m.group(1)) for m in map(re.compile(r"^calls\.(\d+)$").match, paths) if m]
        (out[owners[0]] if owners else untraced).append(op_name(node.target))
    if untraced:
        raise Skip("needs an op without a kernel", tuple(dict.fromkeys(untraced)))
    return {i: tuple(dict.fromkeys(names)) for i, names in out.items()}


def _build(gm: torch.fx.GraphModule, keep: list[bool], sizes: list[int]) -> tern.Program:
    """tern.export's last steps on gm, with only the outputs of the samples
    to keep (the others' nodes go with dead-code elimination, Tern's own
    pass; their inputs stay, unused)."""
    from tern.export import build_program, check_supported
    from tern.passes import eliminate_dead_code

    output = next(n for n in gm.graph.nodes if n.op == "output")
    if "all_outputs" not in output.meta:
        output.meta["all_outputs"] = list(output.args[0])
    outs, start = [], 0
    for k, n in zip(keep, sizes):
        outs += output.meta["all_outputs"][start : start + n] if k else []
        start += n
    output.args = (tuple(outs),)
    eliminate_dead_code(gm)
    gm.recompile()
    try:
        with _timed("export"):
            check_supported(gm, _registry_now().ops)
            return build_program(gm)
    except tern.ExportError as e:
        raise _export_skip(str(e)) from e


# ExportError messages of documented limitations (README, "What does not work
# yet"; format v1): a sample that meets one is skipped, not failed.
_EXPORT_LIMITS = (
    ("is not supported by format v1", "dtype not in format v1"),
    ("dimensions, at most", "more than 8 dims (format v1)"),
    ("writes to its input", "mutates an input (in-place op)"),
    ("only tensor outputs are supported", "non-tensor output"),
    ("depends on the data (no input dim gives it)", "output size depends on the data (refused at export)"),
)


def _export_skip(message: str) -> Skip:
    if "have no kernel in the Tern runtime" in message:
        # Lines "  aten::sort.stable (aten.sort.stable), used by:".
        names = [ln.split()[0] for ln in message.splitlines()[1:] if re.match(r"  \S", ln)]
        return Skip("needs an op without a kernel", tuple(names))
    for text, reason in _EXPORT_LIMITS:
        if text in message:
            return Skip(reason)
    raise AssertionError(f"tern.export failed: {message}")


def _raised_by_torch_export(e: BaseException) -> bool:
    """True if `e` came out of torch.export itself (tracing or decomposition),
    not out of Tern's passes, emitter or serializer."""
    tern_dir = str(Path(tern.__file__).parent)
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename.startswith(tern_dir)]
    last = frames[-1] if frames else None
    return last is not None and last.name == "lower_to_graph" and (
        "torch.export.export" in (last.line or "") or "run_decompositions" in (last.line or "")
    )


class Rejected(Exception):
    """tern.load failed with OperatorMissing (runtime/core/error.h): the kernel
    of `instruction` does not take its argument types, e.g. a dtype it has no
    loop for. A declared limitation of the kernel, not a failure."""

    def __init__(self, instruction: int, op: str) -> None:
        super().__init__(f"{op} does not take these dtypes or arguments (OperatorMissing at load)")
        self.instruction, self.op = instruction, op


_REJECTED_AT_LOAD = re.compile(r"OperatorMissing: instruction (\d+) \(([^,]+), node")


def _load(path: Path) -> tern.runtime.Module:
    try:
        with _timed("load + run"):
            return tern.load(str(path))
    except ValueError as e:
        m = _REJECTED_AT_LOAD.search(str(e))
        if m:
            raise Rejected(int(m.group(1)), m.group(2)) from e
        raise


def _owners(program: tern.Program, n_outputs: list[int]) -> tuple[list[int | None], list[tuple[str, str | None]]]:
    """For each instruction of the file, the sample it belongs to (counting
    the samples whose outputs are in the file); and its op ("" for a copy of
    a constant to an output) with the dtype the runtime selects its kernel by.

    The samples share no values (each has its own inputs, and every argument
    and constant is a value of its own), so a sample's instructions are the
    ones connected to its outputs through values. A view that the exporter
    aliases to its source (python/tern/aliasing.py) has no instruction: it is
    connected to its source through the memory plan's aliases, so a sample
    whose output is such a view (max_pool1d's squeeze of max_pool2d's result)
    credits the op that computed it."""
    method = read_program(program.data)["methods"][0]
    parent = list(range(len(method["values"])))

    def root(v: int) -> int:
        while parent[v] != v:
            parent[v] = v = parent[parent[v]]
        return v

    def tensors(v: int) -> list[int]:
        items = method["values"][v].get("items", []) if method["values"][v]["kind"].endswith("TensorList") else []
        return [v, *(i for i in items if i >= 0)]

    for ins in method["instructions"]:
        vs = [t for a in ins.get("args", []) for t in tensors(a)]
        for v in vs[1:]:
            parent[root(v)] = root(vs[0])
    for view, (source, _) in program.memory_plan.aliases.items():
        parent[root(view)] = root(source)
    sample_of_root: dict[int, int] = {}
    start = 0
    for k, n in enumerate(n_outputs):
        sample_of_root.update({root(v): k for v in method["outputs"][start : start + n]})
        start += n
    owners = [sample_of_root.get(root(ins["args"][0])) if ins.get("args") else None for ins in method["instructions"]]
    ops = [
        ("" if _copies_constant(method, i) else method["operators"][ins["op"]] if "op" in ins else "",
         instruction_dtype(method["values"], ins.get("args", [])))
        for i, ins in enumerate(method["instructions"])
    ]
    return owners, ops


def _copies_constant(method: dict[str, Any], i: int) -> bool:
    """Instruction i copies a constant to an output (python/tern/emit.py,
    _clone): all that is left of a sample that export computed itself."""
    ins = method["instructions"][i]
    node = method["debug"][i]["node"] if i < len(method["debug"]) else ""
    src = method["values"][ins["args"][0]] if ins.get("args") else {}
    return node.endswith("_output_copy") and src.get("storage") == "Constant"


# ---------------------------------------------------------------------------
# Comparison


@dataclass(frozen=True)
class Tolerance:
    """How one OpInfo's outputs are compared with eager's (module doc, Tolerance)."""

    rtol: float = RTOL
    input_scale: bool = False  # atol from the sample's inputs (INPUT_SCALE_ATOL), not the output's scale

    @staticmethod
    def of(opinfo_id: str) -> "Tolerance":
        return Tolerance(LOOSE_TOLERANCE.get(opinfo_id, (RTOL, ""))[0], opinfo_id in INPUT_SCALE_ATOL)


def _input_scale(sample: Sample) -> float:
    """The largest magnitude among the sample's finite float inputs (1 if it
    has none): the scale of the terms an op that cancels sums up."""
    scales = [float(x.detach().double().abs()[x.isfinite()].max()) for x in sample.inputs
              if (x.is_floating_point() and x.numel() and bool(x.isfinite().any()))]
    return max(scales, default=1.0)


def _compare(outs: list[np.ndarray], refs: list[torch.Tensor], tol: Tolerance, sample: Sample | None) -> str | None:
    """None if `outs` match eager's `refs` (compare.mismatch), else what differs."""
    for i, (got, want) in enumerate(zip(outs, refs)):
        rtol = max(tol.rtol, HALF_RTOL.get(want.dtype, 0.0))
        atol = rtol * _input_scale(sample) if tol.input_scale and sample is not None else None
        err = mismatch(got, want, rtol=rtol, atol=atol)
        if err:
            return f"output {i}: {err}"
    return None


# ---------------------------------------------------------------------------
# Verdicts


@dataclass
class Verdict:
    sample: Sample
    ops: tuple[str, ...] = ()  # the registered ops it ran through
    error: str | None = None  # how it differs from eager (a failure)
    skip: Skip | None = None
    calls: tuple[tuple[str, str | None], ...] = ()  # (op, dtype its kernel was selected by)

    def __post_init__(self) -> None:
        # No instruction is connected to its outputs, views included (_owners):
        # export computed it all (constants folded), no kernel did its work.
        if self.error is None and self.skip is None and not self.ops:
            self.skip = Skip(CONSTANT_FOLDED)


CONSTANT_FOLDED = "computed at export time (constant-folded), no kernel ran"


def _attempt(samples: list[Sample], path: Path, tol: Tolerance) -> tuple[dict[int, Verdict], dict[int, str]]:
    """Exports the samples as one program, runs it, compares: the verdicts it
    settles, and how the others differ from eager. A sample that needs an op
    without a kernel, or whose instruction a kernel refuses at load, is
    settled as skipped and dropped from the program. Raises Skip or an error
    of Tern's if the program fails as a whole."""
    # A copy per input slot: torch.export makes one input of a tensor passed
    # twice, which would join two samples (and tie their ops together).
    inputs = tuple(x.clone() for s in samples for x in s.inputs)
    sizes = [len(s.refs or []) for s in samples]
    gm = _lower(samples, inputs)
    missing = _missing_by_sample(gm)
    if len(samples) == 1 and missing:
        raise Skip("needs an op without a kernel", missing[0])
    settled = {i: Verdict(samples[i], skip=Skip("needs an op without a kernel", ops)) for i, ops in missing.items()}
    while len(settled) < len(samples):
        live = [i for i in range(len(samples)) if i not in settled]
        program = _build(gm, [i not in settled for i in range(len(samples))], sizes)
        program.save(path)
        owners, ops = _owners(program, [sizes[i] for i in live])
        try:
            module = _load(path)
        except Rejected as r:
            owner = owners[r.instruction]
            if len(samples) == 1 or owner is None:
                raise _refused(r, ops) from r
            settled[live[owner]] = Verdict(samples[live[owner]], skip=_refused(r, ops))
            continue
        with _timed("load + run"):
            outs = module(*inputs)
        if len(outs) != sum(sizes[i] for i in live):
            raise AssertionError(f"{len(outs)} outputs, eager has {sum(sizes[i] for i in live)}")
        errors = {}
        for k, i in enumerate(live):
            start = sum(sizes[j] for j in live[:k])
            error = _compare(outs[start : start + sizes[i]], samples[i].refs or [], tol, samples[i])
            calls = [call for call, o in zip(ops, owners) if o == k and call[0]]
            mine = tuple(dict.fromkeys(op for op, _ in calls))
            if error is None or len(samples) == 1:
                settled[i] = Verdict(samples[i], mine, error, calls=tuple(dict.fromkeys(calls)))
            else:
                errors[i] = error
        return settled, errors
    return settled, {}


def _alone(sample: Sample, path: Path, tol: Tolerance) -> Verdict:
    """One sample through export, load, run and comparison."""
    try:
        settled, _ = _attempt([sample], path, tol)
    except Skip as skip:
        return Verdict(sample, skip=skip)
    except Exception as e:  # Tern failed: an exporter or kernel bug
        return Verdict(sample, error="".join(traceback.format_exception_only(e)).strip())
    v = settled[0]
    if v.error is not None and _decomposition_differs(sample, path, tol):
        return Verdict(sample, skip=Skip("torch's decomposed program differs from eager, Tern computes what it says"))
    return v


def _decomposition_differs(sample: Sample, path: Path, tol: Tolerance) -> bool:
    """True if the program torch.export hands Tern (after the same
    decompositions, before Tern's passes) differs from eager on this sample
    while Tern's outputs equal that program's: eager is then no oracle for
    the file, the difference is torch's (linspace's integer rounding, a loss
    returning [1] for eager's [], 16-bit losses computed in float32, ...)."""
    from tern.export import _decomposition_table

    inputs = tuple(x.clone() for x in sample.inputs)
    try:
        with _quiet():
            ep = torch.export.export(_Calls([sample]), inputs)
            ep = ep.run_decompositions(_decomposition_table(_registry_now().ops))
            decomposed = [t.detach() for t in pytree.tree_flatten(ep.module()(*inputs))[0]]
        outs = _load(path)(*inputs)
    except Exception:
        return False
    refs = sample.refs or []
    decomposed_np = [t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy() for t in decomposed]
    if _compare(decomposed_np, refs, tol, sample) is None:
        return False  # torch's program agrees with eager: the difference is Tern's
    return _compare(outs, decomposed, tol, sample) is None


def _verdicts(samples: list[Sample], tmp_path: Path, tol: Tolerance) -> list[Verdict]:
    """All samples in one program (each export costs 100+ ms of fixed
    overhead); the samples that program does not settle, one by one.

    A sample that differs from eager in the joint program but not alone is
    still a failure (of the memory plan, say): the joint error is kept."""
    settled: dict[int, Verdict] = {}
    joint_errors: dict[int, str] = {}
    if len(samples) > 1:
        try:
            settled, joint_errors = _attempt(samples, tmp_path / "joint.tern", tol)
            COVERAGE.exports["joint ok"] += 1
        except Exception:  # Skip or failure: the samples alone say which and why
            COVERAGE.exports["joint failed"] += 1
    verdicts = []
    for i, s in enumerate(samples):
        v = settled.get(i)
        if v is None:
            v = _alone(s, tmp_path / f"{s.name.replace(' ', '_')}.tern", tol)
            COVERAGE.exports["alone"] += 1
        if i in joint_errors and v.skip is None and v.error is None:
            v.error = f"differs from eager only when exported with other samples: {joint_errors[i]}"
        verdicts.append(v)
    return verdicts


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


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
# The tests


@pytest.fixture
def no_test_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    """OpInfo's sample iterators look for the running unittest.TestCase (for
    their debug messages) with inspect.stack(), which reads the source of every
    frame: 0.1 s per call under pytest's deep stack, minutes over op_db. There
    is no TestCase here, so the lookup can only find nothing."""
    from torch.testing._internal import common_utils
    from torch.testing._internal.opinfo import core

    for module in (common_utils, core):
        monkeypatch.setattr(module, "extract_test_fn", lambda: None)


@pytest.fixture
def cia_ops_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch.export lists the CompositeImplicitAutograd ops of every op
    namespace afresh on each run_decompositions (twice), because a custom op
    could have been registered in between: ~15% of an export here. None is
    registered while these tests run, so one listing serves them all."""
    from torch.export import decomp_utils, exported_program

    for module in (exported_program, decomp_utils):
        monkeypatch.setattr(module, "_collect_all_valid_cia_ops", _all_cia_ops)


@functools.lru_cache(maxsize=1)
def _all_cia_ops() -> set[Any]:
    from torch._export.utils import _collect_all_valid_cia_ops

    return _collect_all_valid_cia_ops()


@pytest.mark.parametrize("opinfo_id", sorted(OPINFOS))
def test_opinfo_samples_match_eager(
    opinfo_id: str, tmp_path: Path, no_test_lookup: None, cia_ops_once: None
) -> None:
    COVERAGE.opinfos_seen += 1
    mine = STATUS_BY_OPINFO[opinfo_id]  # an entry for every OpInfo seen
    if opinfo_id in UNDEFINED_OUTPUT:
        mine.not_run = f"output is {UNDEFINED_OUTPUT[opinfo_id]}"
        pytest.skip(mine.not_run)
    if opinfo_id in DECOMPOSITION_DIFFERS:
        mine.not_run = DECOMPOSITION_DIFFERS[opinfo_id]
        pytest.skip(mine.not_run)
    with _quiet():
        with _timed("screen"):
            samples = _selected(OPINFOS[opinfo_id], _registry_now())
        verdicts = _verdicts(samples, tmp_path, Tolerance.of(opinfo_id))
    _record(opinfo_id, verdicts)
    failures = [f"{v.sample.name} {v.sample.text}\n    ops: {', '.join(v.ops)}\n    {v.error}" for v in verdicts if v.error]
    if failures:
        pytest.fail(f"{len(failures)} of {len(samples)} samples differ from eager:\n" + "\n".join(failures))
    if not any(v.skip is None for v in verdicts):
        why = Counter(v.skip.reason for v in verdicts if v.skip)
        pytest.skip(", ".join(f"{n} {r}" for r, n in why.items()) or "no sample has a registered main op")


@pytest.fixture(scope="session", autouse=True)
def status_part() -> Iterator[None]:
    """With TERN_OPINFO_STATUS set, each test process writes what each OpInfo
    it ran saw to <that path>.part-<worker> when the session ends: `make
    test-ops-full` runs the OpInfos in several processes (pytest-xdist), and
    scripts/ops_doc.py --merge-status puts the parts' entries into that path
    (replacing those of the same OpInfos, keeping the others)."""
    yield
    if STATUS_PATH and STATUS_BY_OPINFO:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        part = {"torch": torch.__version__, "opinfos": {k: v.to_json() for k, v in sorted(STATUS_BY_OPINFO.items())}}
        Path(f"{STATUS_PATH}.part-{worker}").write_text(json.dumps(part, indent=1, sort_keys=True) + "\n")


def test_opinfo_coverage_report(tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]) -> None:
    if not COVERAGE.opinfos_seen:
        pytest.skip("no OpInfo test ran in this session (select the whole file)")
    text = _report(_registry_now())
    path = tmp_path_factory.getbasetemp() / "opinfo_coverage.txt"
    path.write_text(text)
    with capsys.disabled():
        print(f"\n{text}(written to {path})")
    assert COVERAGE.opinfos_tested, "no OpInfo sample ran: the harness is broken"
    if FULL or STATUS_PATH:  # a run that records the floor is not held to the last one
        return
    recorded = json.loads(RECORDED_STATUS.read_text()) if RECORDED_STATUS.is_file() else {}
    if recorded.get("torch") != torch.__version__:
        pytest.skip(f"{RECORDED_STATUS.name} was recorded with torch {recorded.get('torch')}, this is "
                    f"{torch.__version__}: no coverage floor (run make test-ops-full)")
    lost = _lost_coverage(recorded.get("opinfos", {}), STATUS_BY_OPINFO)
    assert not lost, (
        f"{sum(len(gone) for _, gone, _ in lost)} (op, dtype) pairs of {len(lost)} OpInfos that the fixed subset's "
        f"samples passed when {RECORDED_STATUS.name} was recorded (its \"subset\") no longer pass:\n"
        + "\n".join(f"  {opinfo_id}: {', '.join(gone)} (now: {became})" for opinfo_id, gone, became in lost)
        + "\n(if a change to the runtime's ops legitimately moved the subset's samples, record the subset's "
          "floor again: make ops-floor)")


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


# ---------------------------------------------------------------------------
# The harness's own checks: a comparison that passes everything proves nothing.


def _cmp(got: Any, want: Any, tol: Tolerance = Tolerance(), sample: Sample | None = None) -> str | None:
    return _compare([np.asarray(got)], [torch.as_tensor(want)], tol, sample)


def test_compare_float_beyond_tolerance_is_reported() -> None:
    want = np.array([1.0, -200.0, 3.0], dtype=np.float32)
    assert _cmp(want.copy(), want) is None
    assert _cmp(want + np.float32(0.01), want) is None  # 0.01 <= 1e-4 * 200 (the output's scale)
    assert "beyond atol" in (_cmp(want + np.float32(0.05), want) or "")


def test_compare_checks_small_outputs_at_their_own_scale() -> None:
    """Not floored at 1: max|eager| 2e-6 is checked at 2e-10 + 1e-4 * |eager|,
    where max(1, max|eager|) let an error of 1e-5 through."""
    want = np.array([1e-6, -2e-6, 0.0], dtype=np.float32)
    assert _cmp(want * np.float32(1 + 5e-5), want) is None
    assert "beyond atol" in (_cmp(want + np.float32(1e-7), want) or "")
    assert "beyond atol" in (_cmp(np.array([1e-6, -2e-6, 1e-5], np.float32), want) or "")


def test_compare_nan_or_inf_in_other_places_is_reported() -> None:
    want = np.array([np.nan, np.inf, 1.0], dtype=np.float32)
    assert _cmp(want.copy(), want) is None
    assert "NaN" in (_cmp(np.array([0.0, np.inf, 1.0], np.float32), want) or "")
    assert _cmp(np.array([np.nan, 1.0, 1.0], np.float32), want)
    assert _cmp(np.array([np.nan, -np.inf, 1.0], np.float32), want)
    assert "NaN" in (_cmp(np.array([np.nan, np.inf, np.nan], np.float32), want) or "")


def test_compare_integers_and_bools_must_be_exact() -> None:
    assert _cmp(np.array([3, 4]), np.array([3, 4])) is None
    assert _cmp(np.array([3, 5]), np.array([3, 4]))
    assert _cmp(np.array([True, True]), np.array([True, False]))


def test_compare_half_outputs_within_a_few_ulps() -> None:
    want = torch.tensor([1.0, -0.5, 0.25], dtype=torch.float16)
    ulp = 2.0**-10
    assert _cmp((want.float() + 3 * ulp).half().numpy(), want) is None
    assert _cmp((want.float() + 12 * ulp).half().numpy(), want)


def test_compare_input_scale_atol_comes_from_the_inputs_not_the_output() -> None:
    """A sum that cancels: eager 1e-3 from terms of 100. Held to its own scale
    (1e-7) it fails on float32 rounding; INPUT_SCALE_ATOL's atol is
    rtol * 100, which still catches a wrong result."""
    x = torch.tensor([100.0, -100.0 + 1e-3], dtype=torch.float32)
    sample = _toy(torch.sum, x)
    want = sample.refs[0]
    rounded = want.numpy() + np.float32(2e-6)  # float32 rounding at 100: 8e-6 per ulp
    assert _cmp(rounded, want, Tolerance(), sample)
    assert _cmp(rounded, want, Tolerance(input_scale=True), sample) is None
    assert _cmp(want.numpy() + np.float32(0.1), want, Tolerance(input_scale=True), sample)


def _toy(fn: Any, *args: Any) -> Sample:
    leaves, spec = pytree.tree_flatten((args, {}))
    sample = Sample(0, torch.float32, "", fn, leaves, spec, None, frozenset(), frozenset(), False)
    sample.refs = [fn(*args)]
    return sample


def test_samples_exported_together_map_back_to_their_ops(tmp_path: Path) -> None:
    x = torch.randn(3, 4)
    samples = [_toy(torch.relu, x), _toy(torch.sigmoid, x), _toy(torch.clone, x)]
    settled, errors = _attempt(samples, tmp_path / "m.tern", Tolerance())
    assert not errors
    assert [settled[i].ops for i in range(3)] == [("aten::relu",), ("aten::sigmoid",), ("aten::clone",)]


def test_eager_dtypes_are_those_the_aten_kernels_ran_in() -> None:
    """softmax of int64 with dtype=float64 casts first: eager's _softmax kernel
    runs in float64, never int64; where's kernel is selected by its condition."""
    rec = _RecordOps()
    with torch.no_grad(), rec:
        torch.softmax(torch.tensor([1, 2, 3]), 0, dtype=torch.float64)
        torch.where(torch.tensor([True, False]), torch.zeros(2), torch.ones(2))
    calls = {(op_name(f), d) for f, d in rec.calls}
    assert ("aten::_softmax", "float64") in calls and ("aten::_softmax", "int64") not in calls
    assert ("aten::where.self", "bool") in calls and ("aten::where.self", "float32") not in calls


def test_file_dtypes_are_those_the_runtime_selects_kernels_by(tmp_path: Path) -> None:
    cond, x = torch.tensor([True, False, True]), torch.randn(3, dtype=torch.float64)
    samples = [_toy(torch.where, cond, x, x + 1), _toy(torch.abs, torch.tensor([-1, 2], dtype=torch.int32))]
    settled, errors = _attempt(samples, tmp_path / "m.tern", Tolerance())
    assert not errors
    assert ("aten::where.self", "bool") in settled[0].calls
    assert settled[1].calls == (("aten::abs", "int32"),)


def test_sample_needing_an_op_without_kernel_is_dropped_from_joint_program(tmp_path: Path) -> None:
    x = torch.randn(3, 4)
    samples = [_toy(torch.relu, x), _toy(torch.special.i0, x), _toy(torch.tanh, x)]
    settled, errors = _attempt(samples, tmp_path / "m.tern", Tolerance())
    assert not errors and settled[0].ops == ("aten::relu",) and settled[2].ops == ("aten::tanh",)
    assert settled[1].skip is not None and settled[1].skip.missing == ("aten::i0",)


def test_harness_export_equals_tern_export() -> None:
    x, y = torch.randn(3, 4), torch.randn(4)
    samples = [_toy(torch.add, x, y), _toy(torch.nn.functional.gelu, x)]
    inputs = tuple(t for s in samples for t in s.inputs)
    program = _build(_lower(samples, inputs), [True, True], [1, 1])
    assert program.data == tern.export(_Calls(samples), inputs, partitioners=()).data


def test_sample_whose_output_is_an_aliased_view_credits_the_op_behind_it(tmp_path: Path) -> None:
    """An unbatched max_pool1d is unsqueeze, max_pool2d, squeeze: the exporter
    aliases the squeeze to max_pool2d's result (no instruction), which must
    still credit max_pool2d, not count as constant-folded; a sample that
    export computes itself still does."""
    x = torch.randn(2, 6)
    samples = [_toy(lambda x: torch.nn.functional.max_pool1d(x, 2), x), _toy(lambda x: torch.ones(3) * 2, x)]
    settled, errors = _attempt(samples, tmp_path / "m.tern", Tolerance())
    assert not errors
    assert settled[0].skip is None and "aten::max_pool2d_with_indices" in settled[0].ops, settled[0]
    assert settled[1].skip is not None and settled[1].skip.reason == CONSTANT_FOLDED


def test_coverage_floor_names_what_the_subset_lost() -> None:
    """_lost_coverage: an (op, dtype) the recorded subset passed and no sample
    passes now is named, with what became of the OpInfo's samples."""
    recorded = {"mm": {"subset": {"aten::mm": ["float32", "int64"]}}, "abs": {"subset": {"aten::abs": ["float32"]}}}
    now = {"mm": OpInfoStatus(), "abs": OpInfoStatus()}
    now["abs"].subset["aten::abs"].add("float32")
    now["mm"].subset["aten::mm"].add("int64")
    now["mm"].skipped["torch.export cannot trace it (X)"] = 3
    lost = _lost_coverage(recorded, now)
    assert [(opinfo_id, gone) for opinfo_id, gone, _ in lost] == [("mm", ["aten::mm float32"])], lost
    assert "3 torch.export cannot trace it" in lost[0][2], lost
    assert _lost_coverage(recorded, {"abs": now["abs"]}) == []
