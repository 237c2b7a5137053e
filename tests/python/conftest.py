from __future__ import annotations

import os
import sys
from pathlib import Path

# Tests run against the installed package (make python); the repo's python/
# folder is only a fallback for the pure-Python parts.
try:
    import tern  # noqa: F401
except ImportError:  # pragma: no cover
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

# Under pytest-xdist (`make test`: one worker per core), eager PyTorch's own
# thread pool would put JOBS x cores threads on the cores: each worker's eager
# reference runs on one thread instead.
if os.environ.get("PYTEST_XDIST_WORKER"):
    import torch

    torch.set_num_threads(1)



def built_tool(name: str) -> str:
    """The path of a program `make build` builds (tern-run, tern-llm, ...):
    in $TERN_BUILD_DIR (default build/), else on PATH; fails the test when
    neither has it."""
    import shutil

    import pytest

    built = Path(os.environ.get("TERN_BUILD_DIR", Path(__file__).resolve().parents[2] / "build")) / name
    found = str(built) if built.exists() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not built (make build)")
    return found


# ---- What this CPU has, read independently of the runtime (an oracle for
# the tests of its kernel choice: tests/python/test_cpu_backend.py load_on_isa).

def cpu_flags() -> frozenset[str] | None:
    """The CPU's feature flags as Linux lists them in /proc/cpuinfo ("flags"
    on x86, "Features" on aarch64), which leaves out what the kernel does not
    enable (e.g. AVX-512 without the OS saving its registers); None where
    there is no /proc/cpuinfo."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return None


def _amx_permitted() -> bool:
    """Linux lets this process use the AMX tile data (arch_prctl
    ARCH_REQ_XCOMP_PERM for XTILEDATA, as the runtime asks, Linux 5.16+)."""
    import ctypes

    sys_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata = 158, 0x1023, 18  # x86-64
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.syscall(sys_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata) == 0


# The CPU features each TERN_CPU_ISA value needs (backends/cpu/isa.cpp), as
# /proc/cpuinfo names them, and its architecture.
_ISA_NEEDS = {
    "scalar": (None, frozenset()),
    "avx2": ("x86_64", frozenset({"avx2", "fma"})),
    "avx512": ("x86_64", frozenset({"avx512f", "avx2", "fma"})),
    "amx": ("x86_64", frozenset({"amx_tile", "amx_int8", "avx512f", "avx512_vnni", "avx512bw", "avx512vl",
                                 "avx2", "fma"})),
    "neon": ("aarch64", frozenset({"asimd"})),
}


def cpu_runs_isa(isa: str) -> bool | None:
    """Whether this CPU can run TERN_CPU_ISA=isa, from the machine name,
    /proc/cpuinfo and (amx) the OS's permission: never from the runtime.
    None where unknown (no /proc/cpuinfo)."""
    import platform

    arch, needs = _ISA_NEEDS[isa]
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(), platform.machine().lower())
    if arch is not None and arch != machine:
        return False
    if not needs:
        return True
    flags = cpu_flags()
    if flags is None:
        return None
    return needs <= flags and (isa != "amx" or _amx_permitted())


def expected_kernel_sets(isa: str) -> dict[str, str]:
    """The cpu backend's kernel sets for TERN_CPU_ISA=isa on this CPU
    (Module.kernel_sets): avx512 takes the VNNI int8 kernels where the CPU
    has VNNI (with BW and VL), else AVX2's; amx runs avx512's float kernels;
    neon takes the dot-product int8 kernels where the CPU has them, else the
    scalar ones. Without /proc/cpuinfo, the float set only."""
    flags = cpu_flags()
    if isa == "avx512":
        if flags is None:
            return {"float": "avx512"}
        return {"float": "avx512",
                "int8": "avx512vnni" if {"avx512_vnni", "avx512bw", "avx512vl"} <= flags else "avx2"}
    if isa == "neon":
        if flags is None:
            return {"float": "neon"}
        return {"float": "neon", "int8": "neondot" if "asimddp" in flags else "scalar"}
    return {"float": "avx512" if isa == "amx" else isa, "int8": isa}


def expected_default_kernel_sets() -> dict[str, str] | None:
    """The cpu backend's kernel sets without TERN_CPU_ISA: the best float and
    the best int8 set this CPU runs (None without /proc/cpuinfo)."""
    if cpu_flags() is None:
        return None
    best_float = next(isa for isa in ("avx512", "avx2", "neon", "scalar") if cpu_runs_isa(isa))
    if cpu_runs_isa("amx"):
        return {"float": best_float, "int8": "amx"}
    return {"float": best_float, "int8": expected_kernel_sets(best_float)["int8"]}
