"""tern.debug (this module: tern.debugger): where a .tern file's numbers part from eager PyTorch's.

    report = tern.debug(model, (x,))                      # exports, runs, compares
    report = tern.debug(model, (x,), file="model.tern")   # a file exported from this model
    report = tern.debug(model, (x,), backend=False)       # the same on kernels alone
    print(report.table())
    report.first_jump       # the first value whose error jumps past the threshold

    $ tern debug model.tern --module mypkg.models:make_model --inputs x.npy

How: the file runs once in tern-run with --dump-values, which writes every
value it computes as it is computed: each kernel's outs, and inside a backend
call each fused op's result (tools/value_dump.h). The model is lowered again
as tern.export lowers it (torch.export, decompositions, passes: the graph
whose node names the file carries) and that graph runs on the same inputs in
eager PyTorch, keeping every node's value. Each dumped value is compared with
its node's: a fused op's value with the last node it covers (a 4-d value the
backend holds as NHWC is permuted back). For a quantized model (tern.quantize:
the PT2E-converted module) the lowered graph holds the quantize and
dequantize ops, so the reference is PT2E's own: int8 values are compared in
quantization steps.

Errors, per value: max abs; max rel, the max abs over the largest magnitude
of the eager value (its scale); SNR in dB. A value is over the threshold when
its max rel passes it (default 1e-3; 1e-2 in a quantized graph), or, for
integer values, when an element is off by more than 1 step (rounding may move
one by a step). It "jumps" when it is over and its error is more than 10 times
the largest error of the values it was computed from (the nearest dumped ones
up the graph): the first jump is where to look. With a kernel broken, that is
the broken op's row, with its source line.

backend=False (--no-backend) exports the model again with kernels alone (no
backend) and debugs that file: an error with the backend on and not off is
the backend's; on both, the export's or a kernel's.
"""
from __future__ import annotations

import csv
import math
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

# A value "jumps" when its error is this many times its inputs' (see the top).
JUMP_FACTOR = 10.0
FLOAT_THRESHOLD = 1e-3
QUANTIZED_THRESHOLD = 1e-2


def tern_run_path(runner: str | None = None) -> str:
    """The tern-run to use: `runner`, else the one installed beside this
    Python (make python), else the one on PATH. FileNotFoundError if none."""
    if runner is not None:
        if not (os.path.isfile(runner) and os.access(runner, os.X_OK)):
            raise FileNotFoundError(f"runner {runner}: not an executable file")
        return runner
    tool = shutil.which("tern-run", path=str(Path(sys.executable).parent)) or shutil.which("tern-run")
    if tool is None:
        raise FileNotFoundError("tern-run is not found beside this Python or on PATH (make python installs it)")
    return tool


@dataclass(frozen=True)
class Dumped:
    """One value of tern-run --dump-values (a line of values.tsv)."""

    seq: int
    instruction: int
    kind: str  # "kernel" or "step"
    op: str  # the ATen op, or the backend's name for a step
    nodes: tuple[str, ...]  # a step's nodes; the last is the node the value is of
    nhwc: bool
    value: np.ndarray


def read_dump(directory: str | os.PathLike) -> list[Dumped]:
    """The values tern-run --dump-values DIR wrote, in the order it computed them."""
    directory = Path(directory)
    index = directory / "values.tsv"
    if not index.is_file():
        raise FileNotFoundError(f"{index}: no values.tsv (was {directory} written by tern-run --dump-values?)")
    out = []
    with open(index, newline="") as f:
        for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            out.append(Dumped(int(row["seq"]), int(row["instruction"]), row["kind"], row["op"],
                              tuple(row["nodes"].split("+")) if row["nodes"] else (), row["layout"] == "nhwc",
                              np.load(directory / row["file"])))
    return out


@dataclass
class Row:
    """One dumped value against eager."""

    seq: int
    instruction: int
    kind: str
    op: str
    nodes: tuple[str, ...]
    node: str  # the node the value is of (the last of `nodes`)
    source: str  # "model.py:12 in forward: y = ..." of the op's first node, or ""
    shape: tuple[int, ...]
    dtype: str
    compared: bool = False
    why_not: str = ""  # when not compared: why
    max_abs: float = 0.0
    max_rel: float = 0.0
    snr_db: float = math.inf
    over: bool = False  # past the threshold
    inherited: float = 0.0  # the largest error (max rel) of the values it was computed from
    jump: bool = False

    @property
    def error(self) -> float:
        return self.max_rel


@dataclass
class DebugReport:
    file: str
    rows: list[Row]
    threshold: float
    quantized: bool
    backend: bool  # the file has backend calls
    outputs_max_rel: list[float] = field(default_factory=list)  # the file's outputs vs the eager module's
    sources: dict[str, str] = field(default_factory=dict)  # node -> its source line

    @property
    def first_jump(self) -> Row | None:
        """The first value whose error jumps (else the first over the threshold), or None."""
        jumps = [r for r in self.rows if r.jump] or [r for r in self.rows if r.over]
        return jumps[0] if jumps else None

    def table(self, width: int = 70) -> str:
        """The rows as a table, the first jump marked, and a summary under it."""
        first = self.first_jump
        head = f"{'#':>4} {'instr':>5}  {'op':<24} {'node(s)':<30} {'shape':<14} {'max abs':>9} {'max rel':>9} " \
               f"{'SNR dB':>7}  {'mark':<10}  source"
        lines = [head, "-" * len(head)]
        for r in self.rows:
            nodes = _cut("+".join(r.nodes), 30, left=True)
            op = _cut(f"{r.op} step" if r.kind == "step" else r.op, 24)
            shape = _cut("x".join(map(str, r.shape)) or "scalar", 14)
            if r.compared:
                nums = f"{r.max_abs:9.2e} {r.max_rel:9.2e} {_db(r.snr_db):>7}"
            else:
                nums = f"{'(' + r.why_not + ')':>27}"
            mark = "FIRST JUMP" if r is first else ("jump" if r.jump else ("over" if r.over else ""))
            lines.append(f"{r.seq:>4} {r.instruction:>5}  {op:<24} {nodes:<30} {shape:<14} {nums}  {mark:<10}  "
                         f"{_cut(r.source, width)}")
        lines.append("")
        lines.append(self.summary())
        return "\n".join(lines)

    def summary(self) -> str:
        compared = sum(r.compared for r in self.rows)
        kind = "quantized (PT2E reference)" if self.quantized else "float"
        parts = [f"{self.file}: {len(self.rows)} values dumped, {compared} compared with eager PyTorch "
                 f"({kind}; threshold: max rel {self.threshold:g}{', int values 1 step' if self.quantized else ''}; "
                 f"{'with backend calls' if self.backend else 'kernels only'})"]
        if self.outputs_max_rel:
            parts.append("outputs vs the eager module: max rel " + ", ".join(f"{e:.2e}" for e in self.outputs_max_rel))
        first = self.first_jump
        if first is None:
            parts.append("no value is over the threshold")
        else:
            parts.append(f"first jump: #{first.seq} {first.kind} {first.instruction} {first.op} "
                         f"({'+'.join(first.nodes)}): max rel {first.max_rel:.2e} "
                         f"(its inputs' {first.inherited:.2e})")
            for n in first.nodes or (first.node,):
                if self.sources.get(n):
                    parts.append(f"  {n}: {self.sources[n]}")
        return "\n".join(parts)


def _cut(text: str, width: int, left: bool = False) -> str:
    """text in at most `width` characters, "..." where it was cut."""
    if len(text) <= width:
        return text
    return "..." + text[-(width - 3):] if left else text[:width - 3] + "..."


def _db(x: float) -> str:
    return "inf" if math.isinf(x) and x > 0 else f"{x:.1f}"


def errors(got: np.ndarray, ref: np.ndarray) -> tuple[float, float, float]:
    """(max abs, max rel, SNR dB) of got against ref, same shape. Max rel is
    max abs over ref's largest finite magnitude. Where ref is NaN or inf, got
    must be the same (else the error is inf); where ref is finite, a
    non-finite got is an inf error."""
    g = got.astype(np.float64)
    r = ref.astype(np.float64)
    finite = np.isfinite(r)
    same_special = (np.isnan(r) & np.isnan(g)) | (np.isinf(r) & (g == r))
    if not np.all(finite | same_special) or not np.all(np.isfinite(g[finite])):
        return math.inf, math.inf, -math.inf
    d = np.abs(g[finite] - r[finite])
    max_abs = float(d.max()) if d.size else 0.0
    scale = float(np.abs(r[finite]).max()) if d.size else 0.0
    max_rel = 0.0 if max_abs == 0 else (max_abs / scale if scale > 0 else math.inf)
    noise = float(np.sum(d * d))
    signal = float(np.sum(r[finite] ** 2))
    snr = math.inf if noise == 0 else (10 * math.log10(signal / noise) if signal > 0 else -math.inf)
    return max_abs, max_rel, snr


def reference_values(model: Any, args: tuple[Any, ...], dynamic_shapes: Any = None) -> tuple[Any, dict[str, Any]]:
    """(graph, {node name: eager value}): the model lowered as tern.export
    lowers it, run on args in eager PyTorch (its state, the buffers forward
    mutates, at their values now: as a file's first run after load)."""
    import torch

    import tern.ops as _ops
    from tern.export import lower_to_graph

    gm = lower_to_graph(model, args, frozenset(_ops.supported_ops()), dynamic_shapes)
    values: dict[str, Any] = {}

    class Keep(torch.fx.Interpreter):
        def run_node(self, n: Any) -> Any:
            out = super().run_node(n)
            if n.op == "call_function":
                values[n.name] = out
            return out

    from tern.graph import state_buffers

    flat = list(torch.utils._pytree.tree_leaves(args))
    state = [s.initial.clone() for s in state_buffers(gm)]  # the buffers a forward mutates, as the file starts them
    with torch.no_grad():
        Keep(gm).run(*flat, *state)
    return gm, values


def _as_array(value: Any) -> np.ndarray | None:
    import torch

    if not isinstance(value, torch.Tensor):
        return None
    value = value.detach()
    if value.dtype == torch.bfloat16:
        value = value.float()
    return value.numpy()


def _save_inputs(args: Sequence[Any], directory: Path) -> list[str]:
    import torch

    paths = []
    for i, a in enumerate(torch.utils._pytree.tree_leaves(tuple(args))):
        if not isinstance(a, torch.Tensor):
            raise ValueError(f"input {i}: tern debug takes tensor inputs, got {type(a).__name__}")
        p = directory / f"input{i}.npy"
        np.save(p, a.detach().contiguous().numpy())
        paths.append(str(p))
    return paths


def dump_values(file: str | os.PathLike, args: Sequence[Any], directory: str | os.PathLike,
                runner: str | None = None, env: dict[str, str] | None = None) -> list[np.ndarray]:
    """Runs `file` once on args with tern-run --dump-values `directory` (one
    thread); returns the file's outputs. RuntimeError with tern-run's words
    if it fails."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    inputs = _save_inputs(args, directory)
    import tern.runtime as _rt

    n_out = len(_rt.load(str(file), threads=1).output_specs())
    outs = [str(directory / f"output{i}.npy") for i in range(n_out)]
    cmd = [tern_run_path(runner), str(file), *[x for p in inputs for x in ("--input", p)],
           *[x for p in outs for x in ("--output", p)], "--threads", "1", "--dump-values", str(directory)]
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    if r.returncode != 0:
        raise RuntimeError(f"tern-run failed on {file}: {(r.stderr or r.stdout).strip()}")
    return [np.load(p) for p in outs]


def _source(node: Any, user_frame: Any) -> str:
    """"[layer.linear1] model.py:12 in forward: y = ...": the submodule
    (nn_module_stack) the node was traced in and the user's line; "" if neither."""
    if node.op != "call_function":
        return ""
    f = user_frame(node)
    stack = node.meta.get("nn_module_stack") or {}
    path = list(stack.values())[-1][0] if stack else ""
    return " ".join(x for x in (f"[{path}]" if path else "", f.short() if f is not None else "") if x)


def _ancestors(gm: Any, observed: set[str]) -> dict[str, set[str]]:
    """For each node, the nearest observed nodes up the graph (through nodes
    that were not dumped: the inside of fused ops)."""
    near: dict[str, set[str]] = {}
    for n in gm.graph.nodes:
        found: set[str] = set()
        for a in n.all_input_nodes:
            found |= {a.name} if a.name in observed else near.get(a.name, set())
        near[n.name] = found
    return near


def compare(gm: Any, values: dict[str, Any], dumped: Sequence[Dumped], threshold: float | None = None,
            file: str = "", backend: bool = True) -> DebugReport:
    """The report of dumped values against the graph's eager values."""
    from tern.graph import user_frame

    nodes = {n.name: n for n in gm.graph.nodes}
    quantized = any("quantize" in str(n.target) for n in gm.graph.nodes if n.op == "call_function")
    threshold = threshold if threshold is not None else (QUANTIZED_THRESHOLD if quantized else FLOAT_THRESHOLD)
    sources = {name: _source(n, user_frame) for name, n in nodes.items()}
    rows: list[Row] = []
    outs_seen: dict[int, int] = {}  # instruction -> kernel outs seen (the j-th out of a multi-out op)
    for d in dumped:
        node = d.nodes[-1] if d.nodes else ""
        j = 0
        if d.kind == "kernel":
            j = outs_seen.get(d.instruction, 0)
            outs_seen[d.instruction] = j + 1
        got = d.value.transpose(0, 3, 1, 2) if d.nhwc and d.value.ndim == 4 else d.value
        source = next((sources[n] for n in d.nodes if sources.get(n)), "")  # a fused op's: its first node's
        row = Row(d.seq, d.instruction, d.kind, d.op, d.nodes, node, source, tuple(got.shape), str(got.dtype))
        rows.append(row)
        ref_value = values.get(node)
        if isinstance(ref_value, (tuple, list)):
            ref_value = ref_value[j] if j < len(ref_value) else None
        ref = _as_array(ref_value)
        if ref is None:
            row.why_not = "no eager value" if node not in nodes else "not a tensor"
            continue
        if got.shape != ref.shape:
            if got.size != ref.size:
                row.why_not = f"eager {'x'.join(map(str, ref.shape))}"
                continue
            got = got.reshape(ref.shape)  # a view the backend keeps in another shape ([m, 1, 1, k] for [m, k])
        row.compared = True
        row.max_abs, row.max_rel, row.snr_db = errors(got, ref)
        integer = not np.issubdtype(ref.dtype, np.floating)
        row.over = row.max_abs > 1 if integer else row.max_rel > threshold
    by_node = {r.node: r for r in rows if r.compared}
    near = _ancestors(gm, set(by_node))
    for r in rows:
        if not r.compared:
            continue
        ins = {a for n in r.nodes for a in near.get(n, set())} - set(r.nodes)
        r.inherited = max((by_node[a].max_rel for a in ins if a in by_node), default=0.0)
        r.jump = r.over and r.max_rel > JUMP_FACTOR * r.inherited
    return DebugReport(file, rows, threshold, quantized, backend, sources=sources)


def file_dynamic_shapes(file: str | os.PathLike) -> tuple[Any, ...] | None:
    """torch.export's dynamic_shapes for the file's inputs, from the Dims it
    stores (name and bounds per dynamic dim), so that the model lowers again
    as it was exported; None for a file of static shapes."""
    import torch

    import tern.runtime as _rt

    specs = _rt.load(str(file), threads=1).input_specs()
    if not any(spec.dims for spec in specs):
        return None
    made: dict[tuple[str, int, int], Any] = {}
    shapes = []
    for spec in specs:
        dims = {}
        for d, dim in enumerate(spec.dims):
            if dim is not None:
                name, lo, hi = dim
                if dim not in made:
                    made[dim] = torch.export.Dim(name or f"dim{len(made)}", min=lo, max=hi)
                dims[d] = made[dim]
        shapes.append(dims or None)
    return tuple(shapes)


def debug(model: Any, args: tuple[Any, ...], file: str | os.PathLike | None = None, *, backend: bool = True,
          threshold: float | None = None, dynamic_shapes: Any = None, runner: str | None = None,
          keep: str | os.PathLike | None = None, env: dict[str, str] | None = None) -> DebugReport:
    """Runs a .tern file of `model` with every value dumped, and compares each
    with eager PyTorch on the same inputs (see the top of this module).

    file: the .tern file (exported from `model`); None exports `model` now
    (tern.export's defaults). dynamic_shapes: torch.export's, as the file
    was exported with (default: rebuilt from the Dims the file stores).
    backend=False exports `model` again with kernels alone, whatever `file`
    is. threshold: max rel past which a value
    is over (default 1e-3; 1e-2 for a quantized graph). runner: the tern-run
    to run the file with (default: the one beside this Python; on a device,
    run tern-run --dump-values there and pass its directory to `compare`).
    keep: a directory to keep the dump in (default: a temporary one). env:
    extra environment for tern-run."""
    import torch

    from tern.export import export
    from tern.runtime import load

    args = args if isinstance(args, tuple) else (args,)
    with tempfile.TemporaryDirectory() as tmp:
        if dynamic_shapes is None and file is not None:
            dynamic_shapes = file_dynamic_shapes(file)
        if file is None or not backend:
            file = Path(tmp) / ("model.tern" if backend else "model-kernels.tern")
            export(model, args, dynamic_shapes, **({} if backend else {"partitioners": ()})).save(str(file))
        gm, values = reference_values(model, args, dynamic_shapes)
        directory = Path(keep) if keep is not None else Path(tmp) / "values"
        outs = dump_values(file, args, directory, runner, env)
        dumped = read_dump(directory)
        on_backend = bool(load(str(file), threads=1).backends())
        report = compare(gm, values, dumped, threshold,
                         str(file) if backend else "the model exported again with kernels alone", on_backend)
        buffers = list(model.buffers()) if isinstance(model, torch.nn.Module) else []
        saved = [b.detach().clone() for b in buffers]
        with torch.no_grad():
            eager = torch.utils._pytree.tree_leaves(model(*args))
            for b, v in zip(buffers, saved):  # a forward that mutates its buffers leaves the model as it was
                b.copy_(v)
        for o, e in zip(outs, eager):
            ref = _as_array(e)
            if ref is not None and o.size == ref.size:
                report.outputs_max_rel.append(errors(o.reshape(ref.shape), ref)[1])
    names = {n for d in dumped for n in d.nodes}
    if names and not names & set(values):
        raise ValueError(f"{file}: none of its nodes is in this model's graph: was it exported from another model?")
    return report
