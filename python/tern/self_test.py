"""Bundled self-tests: tern.export(..., bundle=[...]) stores test inputs, the
outputs eager PyTorch gives for them and a tolerance per output in the file,
so that the device can check the model before it uses it: tern-run
--self-test, tern.load(path).self_test(), Module::self_test() in C++.

    program = tern.export(model, (x,), bundle=[(x,), tern.SelfTest((x2,), rtol=1e-3)])
    program.save("model.tern")
    results = tern.load("model.tern").self_test()   # one tern.runtime.SelfTestResult per output

An element e of an expected output passes when the runtime's value g has
|g - e| <= atol + rtol * |e| (a NaN expects a NaN, an inf the same inf;
integer and bool outputs: atol in their units). Default tolerances, per
output: rtol 1e-4 for float32 and float64 (1e-2 float16, 5e-2 bfloat16),
atol rtol times the output's largest finite magnitude (so an output of
scale 1e3 gets atol 0.1, one of scale 1e-3 gets 1e-7): the bound
tests/python/compare.py holds every exported model to against eager, which
leaves room for the cpu backend's reordered float sums and fused kernels.
Integer and bool outputs: 0 and 0, exact.

tern.export runs the file's tests once on this machine after it writes
them and raises ValueError if one fails: a bundle that fails where it was
made would fail everywhere.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from tern.program import MAX_SELF_TESTS, BundledTensor, BundledTest

if TYPE_CHECKING:
    import torch

# rtol by output dtype; atol is rtol times the output's largest finite magnitude.
DEFAULT_RTOL = {"float32": 1e-4, "float64": 1e-4, "float16": 1e-2, "bfloat16": 5e-2}


@dataclass(frozen=True)
class SelfTest:
    """One bundled test for tern.export(..., bundle=[...]).

    inputs: the method's inputs (a tuple, like export's args). expected: its
    outputs (a tensor or a sequence, in the method's output order); None
    runs the eager module on `inputs`. rtol, atol: one number for every
    output, one per output, or None for the defaults (module doc).
    method: the method the test runs (tern.export writes "forward")."""

    inputs: tuple[Any, ...]
    expected: Any = None
    rtol: float | Sequence[float] | None = None
    atol: float | Sequence[float] | None = None
    method: str = "forward"


def bundled_tests(module: Any, bundle: Sequence[Any], methods: Sequence[str] = ("forward",)) -> tuple[BundledTest, ...]:
    """The tests of `bundle` (items: a tuple of inputs, or a SelfTest) as the
    file stores them; expected outputs not given are eager's (call it with
    `module` in eval mode, as tern.export does), each test run from the
    module's buffers as they are now (and put back after), as the runtime
    resets a method's state before each test. ValueError names the item the
    format does not take."""
    if not isinstance(bundle, list):
        raise ValueError("bundle must be a list of tests: [(inputs...), tern.SelfTest(...), ...]")
    if len(bundle) > MAX_SELF_TESTS:
        raise ValueError(f"bundle: {len(bundle)} tests, a file holds at most {MAX_SELF_TESTS}")
    out = []
    for i, item in enumerate(bundle):
        test = item if isinstance(item, SelfTest) else SelfTest(tuple(item) if isinstance(item, (list, tuple)) else (item,))
        if test.method not in methods:
            raise ValueError(f"bundle item {i}: method {test.method!r}; the file has {list(methods)}")
        inputs = [_tensor(x, f"bundle item {i} input {k}") for k, x in enumerate(_leaves(test.inputs))]
        expected = test.expected if test.expected is not None else _eager_outputs(module, test.method, test.inputs)
        outs = [_tensor(y, f"bundle item {i} expected output {k}") for k, y in enumerate(_leaves(expected))]
        rtol, atol = zip(*[default_tolerances(y) for y in outs]) if outs else ((), ())
        rtol = _tolerances(test.rtol, rtol, f"bundle item {i} rtol")
        atol = _tolerances(test.atol, atol, f"bundle item {i} atol")
        out.append(BundledTest(test.method, tuple(map(_stored, inputs)), tuple(map(_stored, outs)), rtol, atol))
    return tuple(out)


def default_tolerances(expected: "torch.Tensor") -> tuple[float, float]:
    """(rtol, atol) for an expected output (module doc)."""
    import torch

    rtol = DEFAULT_RTOL.get(str(expected.dtype).removeprefix("torch."))
    if rtol is None:
        return 0.0, 0.0
    finite = expected.detach().double()
    finite = finite[torch.isfinite(finite)]
    scale = float(finite.abs().max()) if finite.numel() else 0.0
    return rtol, rtol * scale


def check_self_tests(data: bytes) -> None:
    """Runs the bundled tests of the file `data` in this runtime; ValueError
    naming each failed output, its error and tolerance, if one fails."""
    import tern._runtime as _runtime
    from tern.runtime import SelfTestResult

    results = [SelfTestResult(*r[:13], tuple(r[13]), r[14]) for r in _runtime.self_test_program(data)]
    failed = [r for r in results if not r.passed]
    if failed:
        lines = [f"  test {r.test} ({r.method}) output {r.output} {r.dtype}{list(r.shape)}: {r.message}" for r in failed]
        raise ValueError(f"the bundled self-test fails on this machine, where it was made ({len(failed)} outputs):\n"
                         + "\n".join(lines) + "\n  (pass larger rtol / atol in tern.SelfTest(...), or other inputs)")


def _leaves(value: Any) -> list[Any]:
    import torch.utils._pytree as pytree

    return pytree.tree_leaves(value)


def _tensor(value: Any, where: str) -> "torch.Tensor":
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu().contiguous()
    if type(value).__module__ == "numpy":
        return torch.from_numpy(value).contiguous()
    raise ValueError(f"{where}: a {type(value).__name__}, not a tensor (a method's inputs and outputs are tensors)")


def _stored(t: "torch.Tensor") -> BundledTensor:
    import torch

    data = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
    return BundledTensor(str(t.dtype).removeprefix("torch."), tuple(t.shape), data)


def _eager_outputs(module: Any, method: str, inputs: tuple[Any, ...]) -> Any:
    """module.<method>(*inputs) without gradients, NumPy arrays among the
    inputs as tensors (the caller sets eval mode, as export does); buffers
    the call mutates are put back."""
    import torch
    import torch.utils._pytree as pytree

    inputs = pytree.tree_map(lambda v: torch.from_numpy(v) if type(v).__module__ == "numpy" else v, inputs)
    buffers = list(module.buffers()) if isinstance(module, torch.nn.Module) else []
    with torch.no_grad():
        saved = [b.detach().clone() for b in buffers]
        try:
            return getattr(module, method)(*inputs) if method != "forward" else module(*inputs)
        finally:
            for b, v in zip(buffers, saved):
                b.copy_(v)


def _tolerances(given: float | Sequence[float] | None, default: tuple[float, ...], where: str) -> tuple[float, ...]:
    if given is None:
        values = default
    elif isinstance(given, (int, float)):
        values = (float(given),) * len(default)
    else:
        values = tuple(float(v) for v in given)
        if len(values) != len(default):
            raise ValueError(f"{where}: {len(values)} values for {len(default)} outputs")
    for v in values:
        if not (math.isfinite(v) and v >= 0):
            raise ValueError(f"{where}: {v!r} is not a finite number >= 0")
    return values
