"""Which samples of an OpInfo the OpInfo tests (test_opinfo.py) run.

For each dtype of the selection (opinfo_status.SELECTION), the OpInfo's
reference inputs are screened: each is called eagerly (the reference) under
a dispatch mode that records the ATen ops it reaches and the dtypes their
kernels ran in; a sample is kept if none of those ops is one that neither the
runtime registers nor torch.export's decompositions nor Tern's passes can
give it, and if eager is an oracle for it (not random, not in place, every
tensor in format v1). The kept samples are spread evenly over the list, with
a fixed seed per OpInfo and dtype: the same samples on every run.

Not a test module (pytest does not collect it); test_opinfo.py imports it.
"""
from __future__ import annotations

import functools
import random
import sys
import types
import unittest
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.utils._pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

import tern
from tern.ops import DTYPES, op_name

from opinfo_status import COVERAGE, FULL, SAMPLES_PER_DTYPE, SELECTION, STATUS_BY_OPINFO, SUBSET, Selection

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

# Samples screened first: the rest only if one of these has a registered main op.
SCREEN_FIRST = 4

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
