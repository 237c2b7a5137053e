"""Every registered portable kernel against PyTorch eager, on PyTorch's own
sample inputs (OpInfo; DESIGN.md, Testing: "Op tests are driven by PyTorch's
own sample inputs (OpInfo), not hand-picked"; the oracle is PyTorch eager).

One test per OpInfo of torch's op_db, named after it. For each sample input
(float32; int64 and bool too where the OpInfo takes them):
  1. screen: run the op in eager PyTorch (the reference) and record the ATen
     ops it dispatches to. Keep the sample if one of them is registered in
     the runtime (its main op, see opinfo_samples._screen) and none is an op
     that neither the runtime nor torch.export's decompositions can give the
     runtime. An eager call costs microseconds where an export costs 100+
     ms: this keeps the ~400 OpInfos that have nothing to do with Tern out
     of the run time;
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
unnoticed (opinfo_status._lost_coverage). `make test-ops-full` records it
(running the subset's samples beside the full selection); so does `make ops-floor`, a
run of the subset alone, which replaces only the floor of each OpInfo's
recorded entry (after a change that moves which samples the subset picks).

Tolerance (floats through tests/python/compare.py, at the output's own
scale; looser per OpInfo only with a reason): opinfo_harness.py's doc.

The files: this one holds the tests and the OpInfos left out of them;
  opinfo_samples.py  which samples of an OpInfo run (screening, the fixed
                     selection, what the runtime registers);
  opinfo_harness.py  samples through export, load, run and the comparison
                     with eager, to a verdict per sample;
  opinfo_status.py   the run's mode (TERN_OPINFO_FULL, TERN_OPINFO_STATUS),
                     the coverage counters and report, the per-OpInfo status
                     for docs/opinfo_status.json and the subset's floor.

Run: .venv/bin/python -m pytest -q tests/python/test_opinfo.py
"""
from __future__ import annotations

import functools
import json
from collections import Counter
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest
import torch
import torch.utils._pytree as pytree

import tern
from tern.ops import op_name

from opinfo_harness import CONSTANT_FOLDED, Tolerance, _attempt, _build, _Calls, _compare, _lower, _quiet, _verdicts
from opinfo_samples import OPINFOS, Sample, _RecordOps, _registry_now, _selected
from opinfo_status import (COVERAGE, FULL, RECORDED_STATUS, STATUS_BY_OPINFO, STATUS_PATH, OpInfoStatus,
                           _lost_coverage, _record, _report, _timed, _write_status_part)


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
    _write_status_part()


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
