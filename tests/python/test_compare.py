"""compare.py, the one way the Python tests compare floats, fails on the
faults it exists for (and passes the controls, so it cannot pass by always
failing); and no other test module compares floats its own way.

The lint (test_no_float_comparison_outside_compare) parses every .py under
tests/python but compare.py and refuses: numpy / torch / math / pytest
closeness helpers (np.testing.assert_allclose, assert_almost_equal, np.allclose,
np.isclose, torch.allclose, torch.testing.assert_close, math.isclose,
pytest.approx), `x = max(x, ...)` accumulation of errors (max(err, nan) keeps
err: NaN-blind; so does max() over a list, which the lint cannot see: collect
figures only from compare.scaled_error, which raises on NaN), and |a - b| written out (abs(a - b), np.abs(a - b),
(a - b).abs()). A comparator that needs a rule compare.py lacks is named in
ALLOWED below with an adapter, and test_allowed_comparators_fail_on_nan_and_inf
feeds it NaN and infinities.

Run: .venv/bin/python -m pytest -q tests/python/test_compare.py
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import torch

from compare import assert_close, assert_outputs_close, mismatch, scaled_error

HERE = Path(__file__).resolve().parent
NAN, INF = float("nan"), float("inf")


def _f32(*values: float) -> np.ndarray:
    return np.array(values, np.float32)


# ---------------------------------------------------------------------------
# the faults: each must be reported

FAULTS: dict[str, tuple[Any, Any, dict[str, Any]]] = {
    # (got, want, keyword arguments)
    "nan_where_finite": (_f32(1.0, NAN, 3.0), _f32(1.0, 2.0, 3.0), {}),
    "nan_where_finite_loose_tolerance": (_f32(1.0, NAN, 3.0), _f32(1.0, 2.0, 3.0), {"rtol": 1e9}),
    "all_nan": (_f32(NAN, NAN), _f32(1.0, 2.0), {}),
    "plus_inf_where_finite": (_f32(1.0, INF), _f32(1.0, 2.0), {}),
    "minus_inf_where_finite": (_f32(-INF, 2.0), _f32(1.0, 2.0), {"atol": 1e30}),
    "inf_of_the_wrong_sign": (_f32(1.0, -INF), _f32(1.0, INF), {}),
    "finite_where_inf": (_f32(1.0, 3e38), _f32(1.0, INF), {"rtol": 1.0}),
    "nan_missing": (_f32(1.0, 2.0), _f32(1.0, NAN), {}),
    "nan_where_inf": (_f32(NAN), _f32(INF), {}),
    "zero_for_a_small_variance": (np.float32(0.0), np.float32(8.41e-6), {}),
    "small_variance_off_by_1e-3": (np.float32(8.42e-6), np.float32(8.41e-6), {}),
    "one_bad_small_element_among_huge_ones_atol_0": (_f32(1.2e17, 1e-3, -1.2e17), _f32(1.2e17, 2e-3, -1.2e17),
                                                     {"atol": 0.0}),
    "zero_for_an_all_zero_scale_output": (_f32(0.0, 1e-30), _f32(0.0, 0.0), {}),
    "shape": (np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float32), {}),
    "shape_scalar_vs_one": (np.zeros((1,), np.float32), np.float32(0.0), {}),
    "dtype_float": (np.zeros(3, np.float64), np.zeros(3, np.float32), {}),
    "dtype_int_vs_float": (np.zeros(3, np.int32), np.zeros(3, np.float32), {}),
    "dtype_int_width": (np.zeros(3, np.int32), np.zeros(3, np.int64), {}),
    "integer_off_by_one": (np.array([1, 2, 4], np.int64), np.array([1, 2, 3], np.int64), {}),
    "integer_off_by_one_any_tolerance": (np.array([7], np.int32), np.array([6], np.int32), {"rtol": 1.0, "atol": 10.0}),
    "bool_flipped": (np.array([True, True]), np.array([True, False]), {}),
    "float_nan_for_integers": (np.array([1.0, NAN]), np.array([1, 2]), {"check_dtype": False}),
    "complex_real_part": (np.array([1 + 2j, 3 + 4j], np.complex64), np.array([1 + 2j, 3.1 + 4j], np.complex64), {}),
    "complex_imag_part": (np.array([1 + 2j, 3 + 4j], np.complex64), np.array([1 + 2j, 3 - 4j], np.complex64), {}),
    "complex_nan": (np.array([complex(NAN, 0), 1j], np.complex64), np.array([0j, 1j], np.complex64), {}),
    "torch_tensor_nan": (torch.tensor([1.0, NAN]), torch.tensor([1.0, 2.0]), {}),
    "bfloat16_want_float32_nan": (_f32(1.0, NAN), torch.tensor([1.0, 2.0], dtype=torch.bfloat16), {}),
}


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_mismatch_reports_the_fault(name: str) -> None:
    got, want, kw = FAULTS[name]
    assert mismatch(got, want, **kw) is not None
    with pytest.raises(AssertionError, match="^output: "):
        assert_close(got, want, **kw)


def test_the_messages_say_what_differs() -> None:
    assert mismatch(_f32(1.0, NAN), _f32(1.0, 2.0)).startswith(
        "NaN in other places: 1 in the output, 0 expected; at [1]")
    assert mismatch(_f32(-INF), _f32(INF)) == "infinities in other places; at [0]: -inf, expected inf"
    assert mismatch(np.float32(0.0), np.float32(8.41e-6)).startswith("1 of 1 elements beyond atol 8.41e-10")
    assert mismatch(np.zeros(3, np.float64), np.zeros(3, np.float32)) == "dtype float64, expected float32"
    assert mismatch(np.zeros((2, 3)), np.zeros((3, 2))) == "shape [2, 3], expected [3, 2]"
    assert mismatch(np.array([1, 4]), np.array([1, 3])) == "1 of 2 elements differ; at [1]: 4, expected 3"
    assert mismatch(np.array([1 + 2j], np.complex64), np.array([1 + 3j], np.complex64)).startswith("imag part: ")


def test_default_atol_is_the_outputs_own_scale_not_one() -> None:
    """A variance of 8.41e-6: the old bound 1e-4 * max(1, max |eager|) passed 0;
    the default bound is 1e-4 of the output's own largest magnitude."""
    want = np.array([8.41e-6, 2e-6], np.float32)
    assert mismatch(np.zeros(2, np.float32), want) is not None
    assert mismatch(want * np.float32(1 + 5e-5), want) is None  # within 1e-4 of it
    assert mismatch(want * np.float32(1 + 3e-4), want) is not None


def test_atol_0_checks_each_element_against_itself() -> None:
    """cosh(+-40) ~ 1.2e17 beside values near 1: under the default atol the
    small ones are unchecked; with atol=0 each is held to its own value."""
    want = np.array([1.2e17, 1.0, 1e-30, -1.2e17])
    got = np.array([1.2e17, 2.0, 0.0, -1.2e17])
    assert mismatch(got, want) is None  # what the default leaves open: a bound of ~1.2e13
    assert "2 of 4 elements" in mismatch(got, want, atol=0.0)
    assert mismatch(want * (1 + 1e-6), want, atol=0.0) is None


def test_a_nan_or_negative_bound_is_refused() -> None:
    with pytest.raises(ValueError, match="must be numbers >= 0"):
        mismatch(_f32(1.0), _f32(2.0), atol=NAN)
    with pytest.raises(ValueError, match="must be numbers >= 0"):
        mismatch(_f32(1.0), _f32(2.0), rtol=-1.0)


# ---------------------------------------------------------------------------
# the controls: each must pass

CONTROLS: dict[str, tuple[Any, Any, dict[str, Any]]] = {
    "equal": (_f32(1.0, -2.0, 3.5), _f32(1.0, -2.0, 3.5), {}),
    "equal_exact_tolerance": (_f32(1.0, -2.0), _f32(1.0, -2.0), {"rtol": 0.0, "atol": 0.0}),
    "nan_and_infs_in_the_same_places": (_f32(NAN, INF, -INF, 1.0), _f32(NAN, INF, -INF, 1.0), {}),
    "all_nan": (_f32(NAN, NAN), _f32(NAN, NAN), {}),
    "within_rtol": (_f32(100.0, 1.0), _f32(100.005, 1.0), {}),
    "within_the_outputs_own_scale": (_f32(8.4100e-6, 1e-12), _f32(8.4105e-6, 0.0), {}),
    "within_atol_0": (np.array([1.2e17, 1.00001, 1e-30]), np.array([1.2e17, 1.0, 1e-30]), {"atol": 0.0}),
    "explicit_atol": (_f32(0.01, 1.0), _f32(0.0, 1.0), {"rtol": 0.0, "atol": 0.02}),
    "signed_zeros": (_f32(-0.0), _f32(0.0), {"rtol": 0.0, "atol": 0.0}),
    "empty": (np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32), {}),
    "all_zero": (np.zeros(3, np.float32), np.zeros(3, np.float32), {}),
    "integers": (np.array([1, -2, 3], np.int64), np.array([1, -2, 3], np.int64), {}),
    "bools": (np.array([True, False]), np.array([True, False]), {}),
    "complex": (np.array([1 + 2j, 3 + 4j], np.complex64), np.array([1 + 2j, 3 + 4.0001j], np.complex64), {}),
    "torch_tensors": (torch.tensor([1.0, NAN]), torch.tensor([1.0, NAN]), {}),
    "bfloat16_want_widened": (_f32(1.0, 2.5), torch.tensor([1.0, 2.5], dtype=torch.bfloat16), {}),
    "python_numbers": (0.5, 0.50001, {}),
}


@pytest.mark.parametrize("name", sorted(CONTROLS))
def test_matching_values_pass(name: str) -> None:
    got, want, kw = CONTROLS[name]
    assert mismatch(got, want, **kw) is None
    assert_close(got, want, **kw)


def test_assert_outputs_close_checks_the_count_and_each_output() -> None:
    good = [_f32(1.0), np.array([2], np.int64)]
    assert_outputs_close(good, (_f32(1.0), np.array([2], np.int64)))
    assert_outputs_close([_f32(1.0)], torch.tensor([1.0]))  # one tensor: one output
    with pytest.raises(AssertionError, match="1 outputs, eager has 2"):
        assert_outputs_close(good[:1], (_f32(1.0), np.array([2], np.int64)))
    with pytest.raises(AssertionError, match="output 1: 1 of 1 elements differ"):
        assert_outputs_close(good, (_f32(1.0), np.array([3], np.int64)))
    with pytest.raises(AssertionError, match="output 0: NaN in other places"):
        assert_outputs_close([_f32(NAN)], [_f32(1.0)])


def test_scaled_error_is_a_figure_that_no_nan_can_hide_in() -> None:
    want = np.array([4.0, -2.0, 0.5], np.float32)
    assert scaled_error(want, want) == 0.0
    assert_close(scaled_error(want + np.float32(0.004), want), 0.004 / 4.0, rtol=1e-3, atol=0.0)
    assert scaled_error(np.float32(1e-6), np.float32(0.0)) == INF  # a zero scale and a nonzero output
    for got in (_f32(4.0, NAN, 0.5), _f32(4.0, -2.0, INF), _f32(4.0, -INF, 0.5)):
        with pytest.raises(AssertionError, match="NaN in other places|infinities in other places"):
            scaled_error(got, want)
    with pytest.raises(AssertionError, match="dtype float64, expected float32"):
        scaled_error(want.astype(np.float64), want)
    with pytest.raises(AssertionError, match="1 of 1 elements differ"):
        scaled_error(np.array([3]), np.array([2]))
    assert scaled_error(_f32(NAN, 1.0), _f32(NAN, 1.0)) == 0.0  # NaN where eager has it


def test_the_zoo_figure_raises_on_a_nan_output(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """zoo_models._run_entry once took max(err, nan), which keeps err: a model
    whose output turned NaN passed. Now a NaN raises, naming the output."""
    import zoo_models

    import tern

    def nan_method(*inputs: Any) -> list[np.ndarray]:
        return [np.full((2, 3), np.nan, np.float32)]

    class Program:
        planned_bytes = 0

        def save(self, path: Path) -> None:
            Path(path).write_bytes(b"x")

    entry = zoo_models.Entry("tiny", lambda: zoo_models.Case(torch.nn.Linear(4, 3), (torch.randn(2, 4),),
                                                             [(torch.randn(2, 4),)]))
    monkeypatch.setattr(tern, "export", lambda *a, **k: Program())
    monkeypatch.setattr(tern, "load", lambda *a, **k: nan_method)
    with pytest.raises(AssertionError, match=r"^output 0: NaN in other places: 6 in the output, 0 expected"):
        zoo_models.run_entry(entry, tmp_path)


# ---------------------------------------------------------------------------
# the lint: no float comparison outside compare.py

# numpy.testing / numpy / torch / math / pytest names that compare floats.
CLOSENESS = {"assert_allclose", "assert_almost_equal", "assert_array_almost_equal", "assert_approx_equal",
             "assert_array_almost_equal_nulp", "assert_array_max_ulp", "allclose", "isclose", "approx"}
ABS = {"abs", "absolute", "fabs"}


def _dotted(node: ast.AST) -> str:
    """'np.testing.assert_allclose' for that attribute chain; '' if not a plain chain of names."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    return ".".join([node.id, *reversed(parts)])


def _is_sub(node: ast.AST) -> bool:
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub)


def _findings(tree: ast.Module) -> list[tuple[int, str, str]]:
    """(line, enclosing function, what) for each float comparison in the module."""
    out: list[tuple[int, str, str]] = []

    def visit(node: ast.AST, func: str) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            func = node.name if func == "<module>" else f"{func}.{node.name}"
        if isinstance(node, ast.Call):
            name = _dotted(node.func)
            last = name.rsplit(".", 1)[-1]
            if last in CLOSENESS or (last == "assert_close" and "testing" in name):
                out.append((node.lineno, func, f"{name}(...)"))
            if last in ABS and node.args and _is_sub(node.args[0]):
                out.append((node.lineno, func, f"{name}(a - b)"))
            if isinstance(node.func, ast.Attribute) and node.func.attr == "abs" and _is_sub(node.func.value):
                out.append((node.lineno, func, "(a - b).abs()"))
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and isinstance(node.value, ast.Call):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            call = node.value
            if _dotted(call.func) in ("max", "np.max", "np.maximum", "numpy.maximum", "torch.maximum") and any(
                    isinstance(a, ast.Name) and a.id in names for a in call.args):
                out.append((node.lineno, func, "x = max(..., x): accumulating"))
        for child in ast.iter_child_nodes(node):
            visit(child, func)

    visit(tree, "<module>")
    return out


def _scanned() -> list[Path]:
    return sorted(p for p in HERE.rglob("*.py") if p.name != "compare.py")


def _quantize_step(got: np.ndarray, want: np.ndarray) -> None:
    from test_quantize import _assert_within_one_step

    _assert_within_one_step(torch.as_tensor(got), torch.as_tensor(want), 1.0)


# "file:function" -> an adapter calling it as comparator(got, want) (float32 arrays near 1).
ALLOWED: dict[str, Callable[[np.ndarray, np.ndarray], None]] = {
    # one quantization step, and at most 1% of outputs half a step off: a rule compare.py lacks
    "test_quantize.py:_assert_within_one_step": _quantize_step,
}


def test_no_float_comparison_outside_compare() -> None:
    found = []
    used = set()
    for path in _scanned():
        for line, func, what in _findings(ast.parse(path.read_text(), str(path))):
            key = f"{path.relative_to(HERE)}:{func}"
            if key in ALLOWED:
                used.add(key)
            else:
                found.append(f"{path.relative_to(HERE)}:{line} in {func}: {what}")
    assert not found, ("float comparisons outside tests/python/compare.py (use compare.assert_close / mismatch, "
                       "or add the comparator to ALLOWED in test_compare.py):\n  " + "\n  ".join(found))
    assert used == set(ALLOWED), f"allowlisted comparators that no longer exist: {set(ALLOWED) - used}"


LINT_CASES = {
    "np.testing.assert_allclose(a, b, rtol=1e-5)": 1,
    "numpy.testing.assert_almost_equal(a, b)": 1,
    "np.allclose(a, b)": 1,
    "np.isclose(a, b).all()": 1,
    "torch.allclose(a, b)": 1,
    "torch.testing.assert_close(a, b)": 1,
    "math.isclose(a, b)": 1,
    "assert a == pytest.approx(b)": 1,
    "err = max(err, float(np.abs(got - want).max()) / scale)": 2,  # the accumulation, np.abs(a - b)
    "worst = np.maximum(worst, e)": 1,
    "err = max(float(e), err)": 1,
    "assert abs(a.mean() - 0.5) < 0.003": 1,
    "assert float((got - want).abs().max()) <= 1e-4": 1,
    "assert float(np.max(np.absolute(g[f] - w[f]))) <= b": 1,
    # not comparisons of floats
    "assert_close(a, b)": 0,
    "np.testing.assert_array_equal(a, b)": 0,
    "assert np.abs(a).max() > 0.01": 0,
    "n = max(1, len(xs))": 0,
    "hi = max(low, 0)": 0,
    "m = max(xs, key=len)": 0,
}


@pytest.mark.parametrize("source", sorted(LINT_CASES))
def test_the_lint_finds_each_pattern(source: str) -> None:
    assert len(_findings(ast.parse(source))) == LINT_CASES[source], _findings(ast.parse(source))


@pytest.mark.parametrize("key", sorted(ALLOWED))
def test_allowed_comparators_fail_on_nan_and_inf(key: str) -> None:
    comparator = ALLOWED[key]
    want = np.linspace(-1.0, 1.0, 200).astype(np.float32)
    comparator(want.copy(), want)  # the control: equal values pass
    for bad in (NAN, INF, -INF):
        got = want.copy()
        got[7] = bad
        with pytest.raises(AssertionError):
            comparator(got, want)
    got = want.copy()
    got[7] += 3.0  # three steps off
    with pytest.raises(AssertionError):
        comparator(got, want)
