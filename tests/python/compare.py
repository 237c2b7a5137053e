"""The one way the Python tests compare tern's outputs with their oracle.

Every float comparison in tests/python goes through `mismatch` (or the
asserting forms below it); `test_compare.py` checks that these fail on the
faults they exist for, and that no test module compares floats another way.

The rules, for a floating `want`:
  - the same shape and dtype (bfloat16 arrives from tern.Module widened to
    float32, exactly, so a bfloat16 `want` expects a float32 `got`);
  - NaN exactly where `want` has NaN, and each infinity where `want` has it,
    with its sign: a NaN or inf in `got` where eager has a finite value fails;
  - every finite element within `atol + rtol * |want|`, in float64. `atol`
    defaults to `rtol` times this tensor's own largest finite magnitude: a
    bound relative to the output's own scale, never floored at 1 (so an
    output of 1e-6 is checked at 1e-10, not 1e-4). Pass `atol=0` to check
    each element against its own value alone (elementwise ops whose outputs
    span many decades), or an `atol` derived from the inputs' scale where the
    op cancels (sums of signed values).
Integer and bool outputs must be equal. Complex outputs are compared as
their real and imaginary parts, both against the largest finite magnitude
of the complex values. A negative or NaN `rtol` / `atol` is a ValueError
(a NaN bound would pass anything). `got` and `want` may each be a NumPy
array, a torch tensor or a Python number.

`scaled_error` gives the figure the default `atol` bounds (max |got - want|
over max |want|) for reports such as docs/models.md, raising where the
rules above fail on anything but the finite values.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch


def _numpy(want: Any) -> np.ndarray:
    if isinstance(want, torch.Tensor):
        want = want.detach().cpu().contiguous()
        # NumPy has no bfloat16: tern.Module returns it widened to float32.
        return want.float().numpy() if want.dtype == torch.bfloat16 else want.numpy()
    return np.asarray(want)


def _at(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(k) for k in np.unravel_index(flat, shape)) if shape else ()


def mismatch(got: Any, want: Any, *, rtol: float = 1e-4, atol: float | None = None,
             check_dtype: bool = True) -> str | None:
    """None if `got` matches `want` under the rules above, else what differs
    (the number of bad elements and the worst one)."""
    if not (rtol >= 0.0 and (atol is None or atol >= 0.0)):  # a NaN bound would pass anything
        raise ValueError(f"rtol {rtol!r} and atol {atol!r} must be numbers >= 0")
    got, want = _numpy(got), _numpy(want)
    if got.shape != want.shape:
        return f"shape {list(got.shape)}, expected {list(want.shape)}"
    if check_dtype and got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    if want.dtype.kind == "c":
        if atol is None:  # one scale for both parts: the largest finite magnitude
            mag = np.abs(want[np.isfinite(want)])
            atol = rtol * float(mag.max()) if mag.size else 0.0
        for part, g, w in (("real", got.real, want.real), ("imag", got.imag, want.imag)):
            err = mismatch(g, w, rtol=rtol, atol=atol, check_dtype=False)
            if err:
                return f"{part} part: {err}"
        return None
    if want.dtype.kind != "f":
        if got.dtype.kind == "f" and not np.isfinite(got).all():
            return f"{int((~np.isfinite(got)).sum())} non-finite values where expected {want.dtype} values"
        bad = got != want
        if bad.any():
            i = _at(int(np.argmax(bad)), want.shape)
            return (f"{int(bad.sum())} of {want.size} elements differ; "
                    f"at {list(i)}: {got[i].item()!r}, expected {want[i].item()!r}")
        return None
    g, w = got.astype(np.float64), want.astype(np.float64)
    nan_g, nan_w = np.isnan(g), np.isnan(w)
    if (nan_g != nan_w).any():
        i = _at(int(np.argmax(nan_g != nan_w)), w.shape)
        return (f"NaN in other places: {int(nan_g.sum())} in the output, {int(nan_w.sum())} expected; "
                f"at {list(i)}: {float(g[i])!r}, expected {float(w[i])!r}")
    inf_g, inf_w = np.isinf(g), np.isinf(w)
    if (inf_g != inf_w).any() or (g[inf_w] != w[inf_w]).any():
        diff = (inf_g != inf_w) | (inf_w & (g != w))
        i = _at(int(np.argmax(diff)), w.shape)
        return f"infinities in other places; at {list(i)}: {float(g[i])!r}, expected {float(w[i])!r}"
    finite = np.isfinite(w)
    if not finite.any():
        return None
    if atol is None:
        atol = rtol * float(np.abs(w[finite]).max())
    err = np.zeros(w.shape)
    err[finite] = np.abs(g[finite] - w[finite])  # both finite here: no inf - inf
    bound = atol + rtol * np.abs(np.where(finite, w, 0.0))
    bad = err > bound
    if bad.any():
        i = _at(int(np.argmax(np.where(bad, err - bound, -np.inf))), w.shape)
        return (f"{int(bad.sum())} of {w.size} elements beyond atol {atol:.3g} + rtol {rtol:.3g} * |expected|; "
                f"worst at {list(i)}: {float(g[i])!r}, expected {float(w[i])!r} "
                f"(error {float(err[i]):.3g}, bound {float(bound[i]):.3g})")
    return None


def scaled_error(got: Any, want: Any, *, check_dtype: bool = True) -> float:
    """The largest |got - want| over `want`'s finite elements divided by its
    largest finite magnitude: the figure the default `atol` bounds (a report
    for docs, e.g. the zoo's). Raises AssertionError if anything but the
    finite values differs (shape, dtype, NaN or infinity placement, integer
    values), so a NaN can never hide in the figure; inf if the output's scale
    is 0 and `got` is not."""
    err = mismatch(got, want, rtol=0.0, atol=float("inf"), check_dtype=check_dtype)  # all but finite values
    if err:
        raise AssertionError(err)
    g, w = _numpy(got), _numpy(want)
    if w.dtype.kind not in "fc":
        return 0.0
    wide = np.complex128 if w.dtype.kind == "c" else np.float64
    g, w = g.astype(wide), w.astype(wide)
    finite = np.isfinite(w)
    if not finite.any():
        return 0.0
    diff = float(np.abs(g[finite] - w[finite]).max())
    scale = float(np.abs(w[finite]).max())
    if scale == 0.0:
        return 0.0 if diff == 0.0 else float("inf")
    return diff / scale


def assert_close(got: Any, want: Any, *, rtol: float = 1e-4, atol: float | None = None,
                 check_dtype: bool = True, what: str = "output") -> None:
    """Asserts `mismatch` finds nothing; `what` names the value in the message."""
    err = mismatch(got, want, rtol=rtol, atol=atol, check_dtype=check_dtype)
    assert err is None, f"{what}: {err}"


def assert_outputs_close(outs: Sequence[Any], wants: Any, *, rtol: float = 1e-4, atol: float | None = None,
                         check_dtype: bool = True, what: str = "") -> None:
    """Compares a method's outputs with eager's (a tensor, or a tuple/list of
    them): the same count, then `assert_close` on each."""
    wants = list(wants) if isinstance(wants, (tuple, list)) else [wants]
    assert len(outs) == len(wants), f"{what}{len(outs)} outputs, eager has {len(wants)}"
    for i, (got, want) in enumerate(zip(outs, wants)):
        assert_close(got, want, rtol=rtol, atol=atol, check_dtype=check_dtype, what=f"{what}output {i}")
