"""The one op list (kernels/portable/ops.def), the kernels the runtime
registers and the generated report docs/ops.md must agree.

ops.def registers the portable kernels (kernels/portable/register.cpp) and,
through the runtime's registry, drives the exporter's checks
(tern.ops.supported_ops / supported_dtypes); scripts/ops_doc.py renders
docs/ops.md from it and from the OpInfo status in docs/opinfo_status.json.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import tern
from compare import assert_close
from tern import _runtime
from tern.ops import DTYPES, expand_dtypes, parse_ops_dtypes

REPO = Path(__file__).resolve().parents[2]
OPS_DEF = REPO / "kernels" / "portable" / "ops.def"
STATUS = REPO / "docs" / "opinfo_status.json"


def test_the_runtime_registers_exactly_the_ops_and_dtypes_of_ops_def() -> None:
    listed = parse_ops_dtypes(OPS_DEF)
    registered = {name: (frozenset(dtypes) or None) for name, dtypes in _runtime.registered_op_dtypes()}
    assert set(registered) == set(listed), (
        f"in ops.def only: {sorted(set(listed) - set(registered))}; "
        f"registered only: {sorted(set(registered) - set(listed))}")
    wrong = {op: (listed[op], registered[op]) for op in listed if listed[op] != registered[op]}
    assert not wrong, f"dtypes differ (ops.def, registry): {wrong}"


def test_every_listed_dtype_is_a_tern_dtype_and_groups_expand() -> None:
    assert expand_dtypes("floating bool") == {"float32", "float64", "bool"}
    assert expand_dtypes("any") is None
    with pytest.raises(ValueError, match="unknown dtype 'float'"):
        expand_dtypes("float")
    for op, dtypes in parse_ops_dtypes(OPS_DEF).items():
        assert dtypes is None or (dtypes and dtypes <= set(DTYPES)), op


def test_docs_ops_md_is_generated_from_the_current_list() -> None:
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "ops_doc.py"), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr + "\n(regenerate with `make ops-doc`)"


def _ops_doc() -> Any:
    sys.path.insert(0, str(REPO / "scripts"))
    import ops_doc

    return ops_doc


def test_opinfo_status_has_no_failures_and_names_only_listed_ops() -> None:
    status = _ops_doc().aggregate(json.loads(STATUS.read_text()))
    assert status["opinfos_seen"] > 500 and status["samples_run"] > 1000, "docs/opinfo_status.json holds no run"
    listed = parse_ops_dtypes(OPS_DEF)
    assert set(status["ops"]) <= set(listed), f"stale ops in {STATUS.name}: {sorted(set(status['ops']) - set(listed))}"
    failed = {op: d for op, ds in status["ops"].items() for d, r in ds.items() if r["passed"] < r["ran"]}
    assert not failed, f"OpInfo samples that differed from eager: {failed}"


def test_export_refuses_a_dtype_the_kernel_does_not_take_naming_op_dtype_and_line() -> None:
    listed = parse_ops_dtypes(OPS_DEF)
    # the premise: eager runs an int32 convolution, the kernel does not take it
    assert "int32" not in (listed["aten::convolution"] or {"int32"})
    with pytest.raises(tern.ExportError, match=r"aten::convolution: int32 is not supported \(it takes float32.*\n.*"
                                               r"test_ops_doc.py"):
        tern.export(IntConv(), (torch.ones(1, 2, 5, 5, dtype=torch.int32),), partitioners=())


class IntConv(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("w", torch.ones(3, 2, 3, 3, dtype=torch.int32))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.conv2d(x, self.w)


class Atan2Out(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        c = torch.empty_like(a)
        torch.atan2(a, b, out=c)
        return c


def test_core_out_variant_is_rewritten_to_the_functional_op_with_a_kernel(tmp_path: Path) -> None:
    """docs/ops.md counts aten::atan2.out (the one out= overload in the core set)
    as run through aten::atan2: the premise is that export never emits it."""
    assert "aten::atan2.out" in _ops_doc().EXPORTER_OPS
    a, b = torch.randn(5, 3), torch.randn(5, 3)
    program = tern.export(Atan2Out(), (a, b), partitioners=())
    ops = dict(program.op_counts)
    assert "aten::atan2" in ops and "aten::atan2.out" not in ops, ops
    program.save(tmp_path / "m.tern")
    (got,) = tern.load(str(tmp_path / "m.tern"))(a, b)
    assert_close(got, torch.atan2(a, b), rtol=1e-6, atol=0.0)  # elementwise: each against itself


def test_a_rerun_of_some_opinfos_replaces_just_their_results() -> None:
    ops_doc = _ops_doc()

    def entry(op: str, ran: int, passed: int) -> dict[str, Any]:
        return {"full": True, "ops": {op: {"float32": [ran, passed]}}, "eager_dtypes": {op: ["float32"]},
                "samples_run": ran, "samples_failed": ran - passed, "skipped": {"x": 1}, "screened_out": {},
                "not_run": ""}

    old = {"torch": "2.14.1", "opinfos": {"mm": entry("aten::mm", 4, 3), "abs": entry("aten::abs", 5, 5)}}
    new = ops_doc.merge_status(old, [{"torch": "2.14.1", "opinfos": {"mm": entry("aten::mm", 6, 6)}}])
    total = ops_doc.aggregate(new)
    assert total["ops"] == {"aten::mm": {"float32": {"ran": 6, "passed": 6}},
                            "aten::abs": {"float32": {"ran": 5, "passed": 5}}}
    assert (total["samples_run"], total["samples_failed"], total["skipped"]) == (11, 0, {"x": 2})
    with pytest.raises(SystemExit, match="two torch versions"):
        ops_doc.merge_status(old, [{"torch": "2.15.0", "opinfos": {}}])
