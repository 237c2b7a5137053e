"""Pictures of a .tern file: its memory plan.

    tern inspect model.tern --plot memory.png [--method forward]

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
        for v in (s["value"],):
            first[v], final[v] = 0, last
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
