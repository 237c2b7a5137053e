"""Running .tern files from Python, through the C++ runtime.

    import tern
    m = tern.load("model.tern")        # memory-mapped; threads = physical cores
    outs = m(x)                        # same as m.run("forward", x)
    m1 = tern.load("model.tern", threads=1)
    m.backends(), m.kernel_sets()      # ["cpu"], [{"float": "avx2", "int8": "avx2"}]
    m.metadata()                       # {"langid.vocab": b"...", ...}: tern.export(..., metadata=...)
    m.self_test()                      # [SelfTestResult(passed=True, ...), ...]: tern.export(..., bundle=...)

A model whose forward mutates its buffers (a recurrent hidden state, a step
counter, a KV cache) keeps them in the loaded method between calls, as the
nn.Module keeps them between forward() calls:

    for frame in frames:
        y = m(frame)                   # carries the hidden state to the next call
    m.state()                          # {"hidden": array(...)}: the buffers now
    m.reset()                          # back to the values they had at export

Inputs may be NumPy arrays or PyTorch CPU tensors; outputs are a list of NumPy
arrays in the model's output order. This module never imports torch.
NumPy has no bfloat16: a bfloat16 input is a torch.bfloat16 tensor or a NumPy
uint16 array of its bits; bfloat16 outputs and state come back as float32
arrays of the same values (exact).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple, Sequence

import numpy as np

import tern._runtime as _runtime

# Tern dtype names (runtime/core/scalar_type.h) -> NumPy dtypes.
_NUMPY_DTYPES = {
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
    "float16": np.dtype(np.float16),
    # NumPy has no bfloat16: a bfloat16 input is its bits as uint16 (a torch
    # bfloat16 tensor is taken as is); outputs come back widened to float32,
    # which holds every bfloat16 value exactly.
    "bfloat16": np.dtype(np.uint16),
    "int8": np.dtype(np.int8),
    "uint8": np.dtype(np.uint8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "bool": np.dtype(np.bool_),
}


@dataclass(frozen=True)
class TensorSpec:
    """The dtype and shape an input takes or an output has.

    An input with dynamic dims (format 1.3) has per dim None (static) or
    (Dim name, min, max) in `dims`; `shape` holds each dim's max."""

    dtype: str
    shape: tuple[int, ...]
    dims: tuple[tuple[str, int, int] | None, ...] = ()

    def __str__(self) -> str:
        if not self.dims:
            return f"{self.dtype}{list(self.shape)}"
        parts = [str(n) if d is None else f"{d[0] or 'dim'}:{d[1]}..{d[2]}" for n, d in zip(self.shape, self.dims)]
        return f"{self.dtype}[{', '.join(parts)}]"


class SelfTestResult(NamedTuple):
    """One expected output of one bundled self-test, compared on this device
    (Module.self_test; the rule: tern.self_test)."""

    test: int  # index among the file's bundled tests
    method: str
    output: int
    passed: bool
    error: str  # "Ok" when compared; else why the test did not run or the output has another shape
    max_abs: float  # the most |got - expected| (inf: a NaN or inf where the other differs)
    max_rel: float  # the most |got - expected| / |expected| over elements with expected != 0
    worst_index: int  # flat index of the element furthest beyond (or nearest to) its tolerance; -1: none
    worst_got: float
    worst_expected: float
    rtol: float
    atol: float
    dtype: str  # the expected output's
    shape: tuple[int, ...]
    message: str  # "" when passed; else what failed, with the tolerance


def _dims(ranges: Any) -> tuple[tuple[str, int, int] | None, ...]:
    """Per dim: None (static) or (Dim name, min, max); () if all static."""
    dims = tuple((name, lo, hi) if dynamic else None for dynamic, name, lo, hi in ranges)
    return dims if any(d is not None for d in dims) else ()


def _as_numpy(value: Any, where: str) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    if type(value).__module__.startswith("torch"):  # a torch.Tensor, without importing torch
        if value.device.type != "cpu":
            raise ValueError(f"{where} is on device {value.device}; move it to the CPU first")
        value = value.detach().contiguous()
        if str(value.dtype) == "torch.bfloat16":  # NumPy has no bfloat16: its bits, as uint16
            import sys
            return value.view(sys.modules["torch"].int16).numpy().view(np.uint16)
        return value.numpy()
    if isinstance(value, (int, float, bool, list, tuple)):
        return np.asarray(value)
    raise TypeError(f"{where} must be a NumPy array or a torch CPU tensor, got {type(value).__name__}")


def _widen_bfloat16(a: np.ndarray) -> np.ndarray:
    """An array from the bindings, with bfloat16 (the one dtype they return as
    uint16: its bits) widened to float32, which holds its values exactly."""
    return (a.astype(np.uint32) << 16).view(np.float32) if a.dtype == np.uint16 else a


class Module:
    """A loaded .tern file. Not thread-safe: use one Module per thread."""

    def __init__(self, path: str, *, mmap: bool = True, threads: int | None = None,
                 max_loop_instructions: int | None = None) -> None:
        if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool) or threads < 1):
            raise ValueError(f"threads must be a whole number >= 1 (or None for the physical cores), got {threads!r}")
        if max_loop_instructions is not None and (not isinstance(max_loop_instructions, int) or
                                                  isinstance(max_loop_instructions, bool) or max_loop_instructions < 0):
            raise ValueError(f"max_loop_instructions must be a whole number >= 0 (0: no limit), "
                             f"got {max_loop_instructions!r}")
        self.path = str(path)
        if max_loop_instructions is None:
            self._module = _runtime.Module(self.path, mmap, threads or 0)
        else:
            self._module = _runtime.Module(self.path, mmap, threads or 0, max_loop_instructions)
        self._specs: dict[str, tuple[list[TensorSpec], list[TensorSpec]]] = {}

    def metadata(self) -> dict[str, bytes]:
        """The named byte strings stored in the file beside the model
        (tern.export(..., metadata={...})), by key ({} if none). Keys that are
        not UTF-8 keep their bytes as backslash escapes."""
        return {k.decode("utf-8", "backslashreplace"): v for k, v in self._module.metadata()}

    def self_test(self) -> list[SelfTestResult]:
        """Runs the self-tests bundled in the file (tern.export(..., bundle=...))
        on this machine: one SelfTestResult per expected output, pass or
        fail. Each test starts and ends with its method's state reset (see
        reset). Raises ValueError (NotFound) if the file bundles none."""
        return [SelfTestResult(*r[:13], tuple(r[13]), r[14]) for r in self._module.self_test()]

    def threads(self, method: str = "forward") -> int:
        """The threads `method`'s kernels split their work over."""
        self._method_specs(method)
        return int(self._module.threads(method))

    @property
    def method_names(self) -> list[str]:
        return list(self._module.method_names())

    def _method_specs(self, method: str) -> tuple[list[TensorSpec], list[TensorSpec]]:
        if method not in self._specs:
            if method not in self.method_names:
                raise KeyError(f"{self.path} has no method {method!r}; it has {self.method_names}")
            ins = [TensorSpec(d, tuple(s), _dims(r)) for d, s, r in self._module.input_specs(method)]
            outs = [TensorSpec(d, tuple(s)) for d, s, _ in self._module.output_specs(method)]
            self._specs[method] = (ins, outs)
        return self._specs[method]

    def backends(self, method: str = "forward") -> list[str]:
        """The backend of each subgraph `method` hands to one (format 1.1), in order."""
        self._method_specs(method)
        return list(self._module.backends(method))

    def kernel_sets(self, method: str = "forward") -> list[dict[str, str]]:
        """What each backend subgraph of `method` runs on, as its backend chose
        it when the method loaded, in the order of backends(method): the cpu
        backend's float and int8 microkernels, e.g. {"float": "avx2", "int8":
        "avx2"} (the CPU's best, or what TERN_CPU_ISA forces); {} for a
        backend that does not say."""
        self._method_specs(method)
        return [dict(pair.split("=", 1) for pair in text.split() if "=" in pair)
                for _, text in self._module.delegate_descriptions(method)]

    def planned_bytes(self, method: str = "forward") -> list[int]:
        """The bytes of each planned arena `method` needs."""
        self._method_specs(method)
        return [int(n) for n in self._module.arena_sizes(method)]

    def input_specs(self, method: str = "forward") -> list[TensorSpec]:
        return self._method_specs(method)[0]

    def output_specs(self, method: str = "forward") -> list[TensorSpec]:
        return self._method_specs(method)[1]

    def run(self, method: str, *inputs: Any) -> list[np.ndarray]:
        """Runs `method` on `inputs`; returns its outputs as new NumPy arrays
        (bfloat16 ones widened to float32: NumPy has no bfloat16)."""
        specs = self.input_specs(method)
        if len(inputs) != len(specs):
            expected = ", ".join(str(s) for s in specs)
            raise TypeError(f"{method}() takes {len(specs)} inputs ({expected}), got {len(inputs)}")
        arrays = [self._check_input(method, i, x, spec) for i, (x, spec) in enumerate(zip(inputs, specs))]
        return [_widen_bfloat16(a) for a in self._module.run(method, arrays)]

    def state(self, method: str = "forward") -> dict[str, np.ndarray]:
        """Copies of the buffers `method` keeps between calls, by their names
        in the exported module ({} for a model without state)."""
        self._method_specs(method)
        return {name: _widen_bfloat16(value) for name, value in self._module.state(method)}

    def reset(self, method: str = "forward") -> None:
        """Sets `method`'s state back to the buffers' values at export (as
        right after load)."""
        self._method_specs(method)
        self._module.reset_state(method)

    def __call__(self, *inputs: Any) -> list[np.ndarray]:
        return self.run("forward", *inputs)

    @staticmethod
    def _check_input(method: str, i: int, value: Any, spec: TensorSpec) -> np.ndarray:
        where = f"{method}() input {i}"
        arr = _as_numpy(value, where)
        want = _NUMPY_DTYPES.get(spec.dtype)
        if arr.dtype != want:
            raise TypeError(f"{where} must have dtype {spec.dtype}, got {arr.dtype} (expected {spec})")
        if spec.dims and arr.ndim == len(spec.shape):
            for d, (n, r) in enumerate(zip(arr.shape, spec.dims)):
                if r is None and n != spec.shape[d]:
                    raise ValueError(f"{where} dim {d} must be {spec.shape[d]}, got {n} (expected {spec})")
                if r is not None and not r[1] <= n <= r[2]:
                    what = f"the range of Dim {r[0]!r}" if r[0] else "its range"
                    raise ValueError(f"{where} dim {d} is {n}, outside {r[1]}..{r[2]}, {what} at export "
                                     f"(expected {spec})")
        elif tuple(arr.shape) != spec.shape:
            raise ValueError(f"{where} must have shape {list(spec.shape)}, got {list(arr.shape)} (expected {spec})")
        return np.ascontiguousarray(arr)

    def __repr__(self) -> str:
        parts = []
        for name in self.method_names:
            ins = ", ".join(str(s) for s in self.input_specs(name))
            outs = ", ".join(str(s) for s in self.output_specs(name))
            parts.append(f"{name}({ins}) -> ({outs})")
        return f"tern.Module({self.path!r}: {'; '.join(parts)})"


def load(path: str, *, mmap: bool = True, threads: int | None = None,
         max_loop_instructions: int | None = None) -> Module:
    """Loads and verifies a .tern file. Raises ValueError naming the problem if
    the file is missing, corrupted, truncated or of a newer format version.

    threads: how many threads the kernels split their work over (results are
    the same for any count); None = the machine's physical cores.
    max_loop_instructions: the most instructions one call may run again in
    loops (torch.while_loop); a call past it raises ValueError
    (ExecutionFailed), so no file can hang the app. None = the runtime's
    default (2**26); 0 = no limit, for files you trust."""
    return Module(path, mmap=mmap, threads=threads, max_loop_instructions=max_loop_instructions)
