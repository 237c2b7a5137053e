"""Pictures of a .tern file: its memory plan, and where a run's time goes.

    tern inspect model.tern --plot memory.png [--method forward]
    tern profile model.tern [--input x.npy ...] [--threads N] --plot profile.png

draws, for each arena of the method, every planned tensor as a bar: from
the instruction that first touches it to the last (x), over the bytes it
takes (y), with the bytes live at each instruction as a curve and the
arena's size and the plan's lower bound (the most bytes live at one
instruction, which no plan can beat) as lines. Read from the
file alone (tern.inspect.read_program): what the runtime will allocate.

Lifetimes by instruction index, as tern.memory_plan defines them: a method
input or state from instruction 0, an output or state to the last, any
other tensor from its first to its last appearance as an argument (kernel
arguments and the items of their lists, a delegate's inputs and outputs, a
move's two ends). Loops and branches are read in the file's order.

tern profile runs the file with tern-run --trace (random inputs unless
given) and sums the trace per op kind (an ATen op's kernels, a backend's op
kind: "cpu Conv") and per layer (a kernel's node, a backend step's nodes),
medians over the runs: a table, and with --plot two bar charts.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# bytes of an element, by tern.fb.ScalarType (schema/tern.fbs)
ELEMENT_BYTES = {0: 4, 1: 8, 2: 2, 3: 2, 4: 1, 5: 1, 6: 2, 7: 4, 8: 8, 9: 1}


@dataclass(frozen=True)
class Span:
    """A planned tensor: value index, arena, byte offset and size, first and last instruction."""

    value: int
    arena: int
    offset: int
    nbytes: int
    start: int
    end: int


def _values_used(ins: dict[str, Any], method: dict[str, Any]) -> list[int]:
    values = method["values"]
    if ins["kind"] == "KernelCall":
        out = []
        for v in ins["args"]:
            out.append(v)
            if 0 <= v < len(values) and values[v]["kind"] in ("TensorList", "OptionalTensorList"):
                out += [i for i in values[v]["items"] if i >= 0]
        return out
    if ins["kind"] == "BackendCall":
        d = method["delegates"][ins["delegate"]]
        return list(d["inputs"]) + list(d["outputs"])
    if ins["kind"] == "Move":
        return [ins["from"], ins["to"]]
    if ins["kind"] == "JumpFalse":
        return [ins["cond"]]
    return []


def memory_spans(method: dict[str, Any]) -> list[Span]:
    """The method's planned tensors (tern.inspect.read_program's method dict)
    with their lifetimes."""
    values = method["values"]
    last = max(len(method["instructions"]) - 1, 0)
    first: dict[int, int] = {}
    final: dict[int, int] = {}
    for i, ins in enumerate(method["instructions"]):
        for v in _values_used(ins, method):
            first.setdefault(v, i)
            final[v] = i
    for v in method["inputs"]:
        first[v] = 0
        final.setdefault(v, 0)
    for v in method["outputs"]:
        first.setdefault(v, last)
        final[v] = last
    for s in method["state"]:
        first[s["value"]], final[s["value"]] = 0, last
    spans = []
    for v, val in enumerate(values):
        if val["kind"] != "Tensor" or val["storage"] != "Planned" or v not in first:
            continue
        n = ELEMENT_BYTES.get(val["scalar_type"], 1)
        for s in val["sizes"]:
            n *= s
        if n > 0:
            spans.append(Span(v, val["arena"], val["offset"], n, first[v], final[v]))
    return spans


def live_bytes(spans: list[Span], arena: int, step: int) -> int:
    """Bytes of `arena` that tensors live at `step` cover (their union: a view
    inside its source counts once)."""
    ranges = sorted((s.offset, s.offset + s.nbytes) for s in spans if s.arena == arena and s.start <= step <= s.end)
    total, reach = 0, -1
    for lo, hi in ranges:
        if hi > reach:
            total += hi - max(lo, reach)
            reach = hi
    return total


def lower_bound(spans: list[Span], arena: int) -> int:
    steps = {s.start for s in spans if s.arena == arena}  # the union only grows where a tensor starts
    return max((live_bytes(spans, arena, t) for t in steps), default=0)


def _scaled(n: float) -> tuple[float, str]:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return size, unit
    return 1, "B"


def plot_memory(path: str, out: str, method_name: str | None = None) -> str:
    """Writes the memory plan of `path`'s method (the first one by default)
    as a PNG to `out`; returns a line that says what it drew."""
    try:
        import matplotlib
    except ImportError as e:
        raise RuntimeError("tern inspect --plot needs matplotlib (pip install matplotlib==3.11.2)") from e
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle

    from tern.inspect import read_program

    info = read_program(path)
    methods = {m["name"]: m for m in info["methods"]}
    if method_name is None:
        method = info["methods"][0]
    elif method_name not in methods:
        raise ValueError(f"{path} has no method {method_name!r} (it has {', '.join(methods)})")
    else:
        method = methods[method_name]
    spans = memory_spans(method)
    arenas = sorted(set(range(len(method["arena_sizes"]))) | {s.arena for s in spans}) or [0]
    fig, axes = plt.subplots(len(arenas), 1, figsize=(11, 3.2 + 2.6 * len(arenas)), squeeze=False)
    steps = max(len(method["instructions"]), 1)
    said = []
    for ax, arena in zip(axes[:, 0], arenas):
        size = method["arena_sizes"][arena] if arena < len(method["arena_sizes"]) else 0
        bound = lower_bound(spans, arena)
        scale, unit = _scaled(max(size, bound, 1))
        mine = [s for s in spans if s.arena == arena]
        cmap = plt.get_cmap("tab20")
        patches = [Rectangle((s.start, s.offset / scale), s.end - s.start + 1, s.nbytes / scale) for s in mine]
        ax.add_collection(PatchCollection(patches, facecolor=[cmap(i % 20) for i in range(len(mine))],
                                          edgecolor="black", linewidth=0.2, alpha=0.85))
        live = [live_bytes(mine, arena, t) / scale for t in range(steps)]
        ax.step(range(steps), live, where="post", color="tab:red", linewidth=0.8, alpha=0.7,
                label="bytes live at each instruction")
        ax.axhline(size / scale, color="black", linewidth=1.2, label=f"arena: {size / scale:,.2f} {unit}")
        ax.axhline(bound / scale, color="tab:red", linestyle="--", linewidth=1.2,
                   label=f"lower bound (most bytes live at once): {bound / scale:,.2f} {unit}")
        ax.set_xlim(0, steps)
        ax.set_ylim(0, max(size, bound, 1) / scale * 1.08)
        ax.set_xlabel("instruction")
        ax.set_ylabel(f"offset ({unit})")
        ratio = f", {size / bound:.2f}x the bound" if bound else ""
        ax.set_title(f"{path.split('/')[-1]}: method '{method['name']}', arena {arena}: {len(mine)} tensors{ratio}")
        ax.legend(loc="upper right", fontsize=8)
        said.append(f"arena {arena}: {len(mine)} tensors, {size:,} bytes planned, lower bound {bound:,}")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return f"wrote {out}: method '{method['name']}', " + "; ".join(said)


# ---- a profile: time per op kind and the slowest layers --------------------


@dataclass(frozen=True)
class Profile:
    """Median milliseconds a run, from a Chrome trace of tern-run --trace."""

    runs: int
    run_ms: float  # the whole method
    kinds: list[tuple[str, float]]  # (op kind, ms), slowest first: "aten::convolution", "cpu Conv"
    layers: list[tuple[str, str, float]]  # (kind, node or step label, ms), slowest first


def profile_of_trace(trace: dict[str, Any]) -> Profile:
    """Aggregates tern-run's trace (tools/chrome_trace.h): kernels ("kernel",
    named by op, args.node) and the steps of backend calls ("backend step",
    named "Kind: nodes"); a backend call that reported no steps counts as one
    layer of its own. Each figure is the median over the runs of its sum in
    a run."""
    import statistics

    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X"]
    runs = sorted({e.get("args", {}).get("run", 0) for e in events if e.get("cat") == "run"})
    per_run_kind: dict[str, dict[int, float]] = {}
    per_run_layer: dict[tuple[str, str], dict[int, float]] = {}
    run_ms = {e["args"].get("run", 0): e["dur"] / 1e3 for e in events if e.get("cat") == "run"}
    with_steps = {(e["args"].get("run", 0), e["args"].get("instruction")) for e in events
                  if e.get("cat") == "backend step"}
    backend_of = {(e["args"].get("run", 0), e["args"].get("instruction")): e["name"] for e in events
                  if e.get("cat") == "backend"}
    for e in events:
        cat, args = e.get("cat"), e.get("args", {})
        run = args.get("run", 0)
        if cat == "kernel":
            kind, layer = e["name"], args.get("node", e["name"])
        elif cat == "backend step":
            kind = f"{backend_of.get((run, args.get('instruction')), 'backend')} {e['name'].split(':')[0]}"
            layer = e["name"]
        elif cat == "backend" and (run, args.get("instruction")) not in with_steps:
            kind, layer = f"{e['name']} (backend call)", args.get("node", e["name"])
        else:
            continue
        ms = e["dur"] / 1e3
        per_run_kind.setdefault(kind, {}).setdefault(run, 0.0)
        per_run_kind[kind][run] += ms
        per_run_layer.setdefault((kind, layer), {}).setdefault(run, 0.0)
        per_run_layer[(kind, layer)][run] += ms

    def median(by_run: dict[int, float]) -> float:
        return statistics.median(by_run.get(r, 0.0) for r in runs) if runs else 0.0

    kinds = sorted(((k, median(v)) for k, v in per_run_kind.items()), key=lambda kv: -kv[1])
    layers = sorted(((k, name, median(v)) for (k, name), v in per_run_layer.items()), key=lambda x: -x[2])
    return Profile(len(runs), median(run_ms), kinds, layers)


def plot_profile(p: Profile, out: str, title: str, top: int = 15) -> None:
    """Two bar charts: time per op kind, and the `top` slowest layers."""
    try:
        import matplotlib
    except ImportError as e:
        raise RuntimeError("tern profile --plot needs matplotlib (pip install matplotlib==3.11.2)") from e
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = p.kinds[:top]
    layers = p.layers[:top]
    fig, (a, b) = plt.subplots(1, 2, figsize=(14, 0.5 + 0.38 * max(len(kinds), len(layers), 4)))
    colors = {k: plt.get_cmap("tab20")(i % 20) for i, (k, _) in enumerate(p.kinds)}
    a.barh([k for k, _ in kinds][::-1], [ms for _, ms in kinds][::-1], color=[colors[k] for k, _ in kinds][::-1])
    a.set_xlim(0, max([ms for _, ms in kinds] + [1e-6]) * 1.3)  # room for the labels
    a.set_xlabel("ms a run (median)")
    a.set_title(f"time per op kind ({p.run_ms:.2f} ms a run, {p.runs} runs)")
    for y, (_, ms) in enumerate(kinds[::-1]):
        a.text(ms, y, f" {ms:.3f} ({100 * ms / p.run_ms:.0f}%)" if p.run_ms else f" {ms:.3f}", va="center", fontsize=7)
    names = [(n if len(n) <= 48 else n[:45] + "...") for _, n, _ in layers]
    b.barh(names[::-1], [ms for _, _, ms in layers][::-1], color=[colors[k] for k, _, _ in layers][::-1])
    b.set_xlabel("ms a run (median)")
    b.set_title(f"the {len(layers)} slowest layers (colored by kind)")
    b.tick_params(axis="y", labelsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
