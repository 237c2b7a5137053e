"""OpInfo samples (opinfo_samples.Sample) through tern.export, save,
tern.load, run, and the comparison with eager: the verdict on each sample.

The kept samples of one OpInfo are exported together as one program, since
each export costs ~100 ms of fixed torch.export overhead; if that program
cannot be exported, loaded or run, or a sample's outputs differ from eager,
the samples run one by one (_verdicts). A sample that needs an op without a
kernel, or whose instruction a kernel refuses at load, is a counted Skip.

Tolerance: floats go through tests/python/compare.py (compare.mismatch): NaN
and infinities in the same places, every finite element within
atol + rtol * |eager|, where atol is rtol times the output's own largest
magnitude (not floored at 1: an output of 1e-6 is checked at its own scale).
rtol is RTOL, looser for the OpInfos in LOOSE_TOLERANCE (each with its reason)
and for float16/bfloat16 outputs (HALF_RTOL). For the OpInfos in
INPUT_SCALE_ATOL, whose samples legitimately cancel (a sum of signed terms
can be far smaller than its terms), atol is derived from the sample's
inputs' scale instead, never from Tern's output. Integers and bools exact.

Not a test module (pytest does not collect it); test_opinfo.py imports it.
"""
from __future__ import annotations

import contextlib
import re
import traceback
import warnings
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import torch
import torch.utils._pytree as pytree

import tern
from tern.inspect import read_program
from tern.op_usage import instruction_dtype
from tern.ops import op_name

from compare import mismatch
from opinfo_samples import Sample, _registry_now
from opinfo_status import COVERAGE, _timed

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
