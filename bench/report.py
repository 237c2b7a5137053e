"""The tables (markdown) and the chart (PNG) of a bench/run.py results file.

    .venv-bench/bin/python bench/report.py bench/results/2026-12-01.json   # rewrites .md and .png beside it

bench/run.py calls markdown() and chart() itself; this entry point redraws
them from a saved JSON (after a change to this file, say).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

RUNTIMES = ["tern", "tern_base", "torch", "ort", "et_xnnpack", "et_portable"]
PEERS = RUNTIMES[2:]
LABELS = {"tern": "Tern", "tern_base": "Tern baseline", "torch": "PyTorch eager", "ort": "ONNX Runtime", "et_xnnpack": "ExecuTorch XNNPACK",
          "et_portable": "ExecuTorch portable"}
COLORS = {"tern": "#d62728", "tern_base": "#ff9896", "torch": "#7f7f7f", "ort": "#1f77b4", "et_xnnpack": "#2ca02c",
          "et_portable": "#98df8a"}


# ---- reading the results -----------------------------------------------------


def _runtimes(results: dict) -> list[str]:
    """The runtimes of the tables and the chart: those the run asked for
    (tern_base only with --baseline)."""
    asked = results["settings"].get("runtimes") or RUNTIMES
    return [rt for rt in RUNTIMES if rt in asked and (rt != "tern_base" or results["settings"].get("baseline"))]


def _result(results: dict, model: str, threads: str, rt: str) -> dict:
    return results["models"][model]["threads"].get(threads, {}).get(rt, {})


def _median(res: dict) -> float | None:
    return res.get("median_ms") if res.get("status") == "ok" else None


def _fastest_peer(results: dict, model: str, threads: str) -> tuple[str | None, float | None]:
    best = (None, None)
    for rt in PEERS:
        m = _median(_result(results, model, threads, rt))
        if m is not None and (best[1] is None or m < best[1]):
            best = (rt, m)
    return best


def _short(status: str) -> str:
    """A table cell for a runtime without a figure."""
    if status.startswith("unsupported"):
        return "unsupported"
    if status.startswith("wrong output"):
        return "**wrong output**"
    if status.startswith("too slow to time"):
        return "too slow (" + status.split("takes ")[-1] + "/run)" if "takes " in status else "too slow"
    if status.startswith("too slow"):
        return "too slow"
    if status.startswith("skipped"):
        return "skipped"
    return status.split(":")[0] if status else "-"


def _ms(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.3f}" if x < 1 else f"{x:.2f}" if x < 10 else f"{x:.1f}" if x < 1000 else f"{x:.0f}"


def _cell(res: dict, key: str = "median_ms") -> str:
    if res.get(key) is not None and res.get("status") == "ok":
        return _ms(res[key])
    return _short(res.get("status", ""))


# ---- markdown ------------------------------------------------------------------


def markdown(results: dict) -> str:
    models = list(results["models"])
    threads = [str(t) for t in results["settings"]["threads"]]
    lines = _header(results)
    lines += _latency_table(results, models, threads)
    lines += _dynamic_table(results, threads)
    lines += _load_table(results, models, threads[0])
    lines += _first_run_table(results, models, threads)
    lines += _size_table(results, models)
    lines += _baseline_table(results, models, threads)
    lines += _gemm_table(results)
    lines += _goals(results, models, threads)
    lines += _goals_26(results, models, threads)
    lines += _problems(results, models, threads)
    lines += _how(results)
    return "\n".join(lines) + "\n"


def _header(results: dict) -> list[str]:
    m, v, s = results["machine"], results["versions"], results["settings"]
    isa = ", ".join(f for f in m["isa_flags"] if f in ("avx2", "fma", "avx512f", "asimd", "sve", "amx_tile"))
    return [
        f"# Tern side by side, {results['date']}",
        "",
        f"Machine: {m['cpu']} ({m['machine']}; {isa}), {m['logical_cpus']} logical CPUs, {m['memory_gb']} GB; "
        f"shared with other work, so read the ratios (measured in the same rounds) before the absolute times.",
        f"Versions: Tern {v.get('tern')} ({v.get('tern_commit')}), torch {v.get('torch')}, torchvision "
        f"{v.get('torchvision')}, ONNX Runtime {v.get('onnxruntime')} (onnx {v.get('onnx')}, onnxscript "
        f"{v.get('onnxscript')}), " + (f"ExecuTorch {v['executorch']} (beside torch {v.get('executorch_torch')})."
                                        if v.get("executorch") else "ExecuTorch not run (no environment)."),
        f"Method: {s['rounds']} interleaved rounds (each runtime about {s['round_ms']:.0f} ms per round, at most "
        f"{s['max_iters']} runs, in its own long-lived process; the order rotates each round); median of all "
        f"runs. Same weights (seed 0) and input (seed 1) for every runtime; every output checked against "
        f"PyTorch eager (|diff| <= {s['atol']:g} + {s['rtol']:g} * max|eager|). Run took "
        f"{results.get('duration_s', 0) / 60:.0f} min.",
        "",
    ]


def _latency_table(results: dict, models: list[str], threads: list[str]) -> list[str]:
    lines = ["## Latency: median ms (p90 below)", "",
             "| model | threads | " + " | ".join(LABELS[rt] for rt in _runtimes(results)) + " | Tern / fastest peer |",
             "|---|---|" + "---|" * len(_runtimes(results)) + "---|"]
    for model in models:
        for t in threads:
            cells = [_cell(_result(results, model, t, rt)) for rt in _runtimes(results)]
            lines.append(f"| {model} | {t} | " + " | ".join(cells) + f" | {_ratio_cell(results, model, t)} |")
    lines += ["", "p90 ms:", "", "| model | threads | " + " | ".join(LABELS[rt] for rt in _runtimes(results)) + " |",
              "|---|---|" + "---|" * len(_runtimes(results))]
    for model in models:
        for t in threads:
            cells = [_cell(_result(results, model, t, rt), "p90_ms") for rt in _runtimes(results)]
            lines.append(f"| {model} | {t} | " + " | ".join(cells) + " |")
    return lines + [""]


def _ratio_cell(results: dict, model: str, t: str) -> str:
    tern = _median(_result(results, model, t, "tern"))
    peer, best = _fastest_peer(results, model, t)
    if tern is None or best is None:
        return "-"
    r = tern / best
    return f"{'**' if r > 1 else ''}{r:.2f}x{'**' if r > 1 else ''} ({LABELS[peer]})"


def _load_table(results: dict, models: list[str], t: str) -> list[str]:
    lines = [f"## Load-to-first-output and memory ({t} thread{'s' if t != '1' else ''}, fresh process)", "",
             "Load-to-first-output: from before the file is opened to the first output in hand (every runtime's "
             "file read once before the loads, so that each starts in the page cache). Memory: peak RSS "
             "growth over the process after its imports (ExecuTorch's and PyTorch's processes import torch).", "",
             "| model | " + " | ".join(f"{LABELS[rt]} ms" for rt in _runtimes(results)) + " | Tern / ET XNNPACK | "
             + " | ".join(f"{LABELS[rt]} MB" for rt in _runtimes(results)) + " | Tern / ET XNNPACK |",
             "|---|" + "---|" * (2 * len(_runtimes(results)) + 2)]
    for model in models:
        row = [model]
        for key in ("first_output_ms", "rss_growth_mb"):
            vals = {rt: _result(results, model, t, rt).get(key) for rt in _runtimes(results)}
            row += [_ms(v) if v is not None else _short(_result(results, model, t, rt).get("status", ""))
                    for rt, v in vals.items()]
            a, b = vals.get("tern"), vals.get("et_xnnpack")
            row.append(f"{a / b:.2f}x" if a is not None and b else "-")
        lines.append("| " + " | ".join(row) + " |")
    return lines + [""]


def _file_bytes(results: dict, model: str, rt: str) -> int | None:
    sizes = [r.get(rt, {}).get("file_bytes") for r in results["models"][model]["threads"].values()]
    return next((s for s in sizes if s), None)


def _size_table(results: dict, models: list[str]) -> list[str]:
    """File sizes, and each against the float weights' bytes where the run
    recorded them (results before issue 26 did not)."""
    weights = any(results["models"][m].get("weights_bytes") for m in models)
    lines = ["## File size (MB" + ("; in brackets: / the float weights' bytes" if weights else "") + ")", "",
             "| model | " + ("float weights | " if weights else "")
             + " | ".join(LABELS[rt] for rt in _runtimes(results)) + " |",
             "|---|" + "---|" * (len(_runtimes(results)) + weights)]
    for model in models:
        w = results["models"][model].get("weights_bytes")
        cells = [f"{w / 1e6:.1f}" if w else "-"] if weights else []
        for rt in _runtimes(results):
            size = _file_bytes(results, model, rt)
            status = results["models"][model]["export"][rt]["status"] or ""
            ratio = f" ({_bold_over(size / w, 1.02, 3)})" if size and w else ""
            cells.append(f"{size / 1e6:.1f}{ratio}" if size else _short(status))
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    notes = ["", "PyTorch eager's file is its state_dict (torch.save)."]
    if weights:
        notes.append("Float weights: the bytes of the model's float parameters and buffers, each tensor once (tied "
                     "weights counted once); what a file that stores them as they are cannot go below. In **bold**: "
                     "above the goal of issue 26, 1.02x.")
    return lines + notes + [""]


def _bold_over(ratio: float, goal: float, digits: int = 2) -> str:
    """A ratio, in bold when it misses a goal of at most `goal`."""
    text = f"{ratio:.{digits}f}x"
    return f"**{text}**" if ratio > goal else text


def _dynamic_table(results: dict, threads: list[str]) -> list[str]:
    """Each dynamic-shape model beside its static twin at the same size."""
    pairs = [(m, e["static"]) for m, e in results["models"].items() if e.get("static") in results["models"]]
    if not pairs:
        return []
    lines = ["## Dynamic shapes: the dynamic export against the static one at the same size", "",
             "Each cell: dynamic / static median (in brackets: the dynamic and the static median, ms); then the "
             "ratio of the two medians within each round, median (min-max) over the rounds. The dynamic file is "
             "exported once with a dynamic dim (see the model's description below) and timed at the size of the "
             "static file beside it, each runtime's two files in the same interleaved rounds; PyTorch eager runs "
             "the same module for both, so its ratios show the noise. In **bold**: above the goal of issue 26, "
             "1.1x.", "",
             "| dynamic model | static model | threads | " + " | ".join(LABELS[rt] for rt in _runtimes(results)) + " |",
             "|---|---|---|" + "---|" * len(_runtimes(results))]
    for dyn, static in pairs:
        for t in threads:
            cells = [_dynamic_cell(_result(results, dyn, t, rt), _result(results, static, t, rt))
                     for rt in _runtimes(results)]
            lines.append(f"| {dyn} | {static} | {t} | " + " | ".join(cells) + " |")
    lines.append("")
    lines += [f"- {dyn}: {results['models'][dyn]['description']}" for dyn, _ in pairs]
    return lines + [""]


def _dynamic_cell(dyn: dict, static: dict) -> str:
    a, b = _median(dyn), _median(static)
    if a is not None and b is not None:
        per = sorted(x / y for x, y in zip(_round_medians(dyn), _round_medians(static)))
        rounds = f"; rounds {per[(len(per) - 1) // 2]:.2f}x ({per[0]:.2f}-{per[-1]:.2f})" if per else ""
        return f"{_bold_over(a / b, 1.1)} ({_ms(a)} / {_ms(b)}){rounds}"
    if a is None:  # why the dynamic file has no figure, in the cell itself
        status = dyn.get("status", "")
        why = status if status.startswith(("unsupported", "error", "wrong output", "too slow")) else _short(status)
        return "dynamic: " + (why[:120] + ("..." if len(why) > 120 else "")).replace("|", "/")
    return f"{_ms(a)} / static: {_short(static.get('status', ''))}"


def _first_run(res: dict) -> tuple[float, float] | None:
    """(first run ms, first run / median) of a timed runtime."""
    m = _median(res)
    return (res["first_run_ms"], res["first_run_ms"] / m) if m and res.get("first_run_ms") is not None else None


def _first_run_table(results: dict, models: list[str], threads: list[str]) -> list[str]:
    lines = ["## First run against the steady state", "",
             "Each cell: the first run after load (in the fresh process, after the file is loaded) / the median "
             "of the timed runs; in brackets the first run, ms. In **bold**: above the goal of issue 26, 1.2x.", "",
             "| model | threads | " + " | ".join(LABELS[rt] for rt in _runtimes(results)) + " |",
             "|---|---|" + "---|" * len(_runtimes(results))]
    for model in models:
        for t in threads:
            cells = []
            for rt in _runtimes(results):
                res = _result(results, model, t, rt)
                fr = _first_run(res)
                cells.append(f"{_bold_over(fr[1], 1.2)} ({_ms(fr[0])})" if fr else _short(res.get("status", "")))
            lines.append(f"| {model} | {t} | " + " | ".join(cells) + " |")
    return lines + [""]


def _round_medians(res: dict) -> list[float]:
    """The median of each round's runs (run.py keeps how many runs each round had)."""
    out, i = [], 0
    for n in res.get("round_sizes", []):
        if n:
            chunk = sorted(res["samples_ms"][i:i + n])
            out.append((chunk[(n - 1) // 2] + chunk[n // 2]) / 2)
        i += n
    return out


def _baseline_table(results: dict, models: list[str], threads: list[str]) -> list[str]:
    """Tern against Tern at the --baseline commit, timed in the same rounds."""
    s = results["settings"]
    if not s.get("baseline"):
        return []
    lines = [f"## Against the baseline: Tern at {s['baseline']} ({(s.get('baseline_commit') or '?')[:12]})", "",
             "Current / baseline, medians over all runs; \"per round\": the ratio of the two medians within each "
             "round (both ran in the same round, so a slower stretch of the shared machine falls on both), their "
             "median and range. Above 1.00x the current Tern is slower.", "",
             "| model | threads | Tern ms | baseline ms | current / baseline | per round: median (min-max) |",
             "|---|---|---|---|---|---|"]
    slower = []
    for model in models:
        for t in threads:
            a, b = _result(results, model, t, "tern"), _result(results, model, t, "tern_base")
            ma, mb = _median(a), _median(b)
            if ma is None or mb is None:
                lines.append(f"| {model} | {t} | {_cell(a)} | {_cell(b)} | - | - |")
                continue
            per = sorted(x / y for x, y in zip(_round_medians(a), _round_medians(b)))
            spread = f"{per[(len(per) - 1) // 2]:.3f}x ({per[0]:.3f}-{per[-1]:.3f})" if per else "-"
            lines.append(f"| {model} | {t} | {_ms(ma)} | {_ms(mb)} | {ma / mb:.3f}x | {spread} |")
            if per and min(per) > 1.0:
                slower.append(f"{model} {t}t ({ma / mb:.3f}x)")
    lines += ["", "Slower in every round: " + (", ".join(slower) if slower else "none") + ".", ""]
    return lines


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def _gemm_table(results: dict) -> list[str]:
    probes = results.get("probes", {})
    if "gemm" not in probes:
        return ["## GEMM", "", f"Not measured: {probes}", ""]
    peak = probes["fma_peak"]
    lines = [f"## f32 GEMM ({probes['gemm']['gemm']}) against the FMA peak", "",
             f"Peak: bench/fma_peak, {peak['isa']} ({peak['lanes']} lanes, {peak['chains']} independent FMA "
             "chains per thread): " + ", ".join(f"{g} GFLOP/s at {t} thread{'s' if t != '1' else ''}"
                                               for t, g in peak["gflops"].items()) + ".", "",
             "| GEMM | m x n x k | threads | GFLOP/s, median | GFLOP/s, best | best, % of peak |",
             "|---|---|---|---|---|---|"]
    for r in probes["gemm"]["results"]:
        lines.append(f"| {r.get('gemm', 'portable')} | {r['m']} x {r['n']} x {r['k']} | {r['threads']} | "
                     f"{r['gflops']:.1f} | {_num(r.get('gflops_best'))} | {r['percent_of_peak']:.0f}% |")
    return lines + ["", "cpu: the cpu backend's GEMM (a 1x1 convolution with weights packed ahead, as the "
                    "exporter packs them); portable: the portable kernels' blocked GEMM, for reference. The % of peak "
                    "compares the best call (the median where the probe gave no best: -) with the best peak run (the "
                    "machine is shared; both are what it can do at best).", ""]


def _goals(results: dict, models: list[str], threads: list[str]) -> list[str]:
    """The goals of issue 6, each met or not, from this run's figures."""
    lines = ["## Goals (issue 6)", ""]
    met, total, misses = 0, 0, []
    for model in models:
        for t in threads:
            tern = _median(_result(results, model, t, "tern"))
            _, best = _fastest_peer(results, model, t)
            if best is None:
                continue
            total += 1
            if tern is None:
                misses.append(f"{model} {t}t (Tern: {_short(_result(results, model, t, 'tern').get('status', ''))})")
            elif tern > best:
                misses.append(f"{model} {t}t ({tern / best:.2f}x)")
            else:
                met += 1
    lines.append(f"- Latency at most 1.0x the fastest peer: {'met' if not misses else 'not met'} ({met} of {total} met"
                 + (f"; misses: {', '.join(misses)}" if misses else "") + ").")
    lines.append(_ratio_goal(results, models, threads[0], "first_output_ms", 0.5, "Load-to-first-output at most "
                                                                                 "0.5x ExecuTorch XNNPACK's"))
    lines.append(_ratio_goal(results, models, threads[0], "rss_growth_mb", 1.0, "Peak RSS growth at most "
                                                                               "ExecuTorch XNNPACK's"))
    probes = results.get("probes", {})
    if "gemm" in probes:
        best = max((r for r in probes["gemm"]["results"] if r.get("gemm", "cpu") == "cpu"),
                   key=lambda r: r["percent_of_peak"])
        lines.append(f"- Large f32 GEMM at least 80% of peak: {'met' if best['percent_of_peak'] >= 80 else 'not met'}"
                     f" (best {best['percent_of_peak']:.0f}%, {best['m']}x{best['n']}x{best['k']} at "
                     f"{best['threads']} thread(s)).")
    return lines + [""]


def _goals_26(results: dict, models: list[str], threads: list[str]) -> list[str]:
    """Issue 26's goals for Tern: a dynamic export as fast as the static one,
    a first run as fast as the steady state, a file no bigger than its weights."""
    dynamic, first, size = [], [], []
    for model in models:
        entry = results["models"][model]
        for t in threads:
            tern = _result(results, model, t, "tern")
            static = entry.get("static")
            if static in results["models"]:
                a, b = _median(tern), _median(_result(results, static, t, "tern"))
                if a is not None and b is not None:
                    dynamic.append((f"{model} {t}t", a / b))
            fr = _first_run(tern)
            if fr:
                first.append((f"{model} {t}t", fr[1]))
        w, f = entry.get("weights_bytes"), _file_bytes(results, model, "tern")
        if w and f:
            size.append((model, f / w))
    lines = ["## Goals (issue 26), Tern", ""]
    for what, ratios, goal in [("Dynamic export at most 1.1x the static one's median at the same size", dynamic, 1.1),
                               ("First run at most 1.2x the median", first, 1.2),
                               ("File at most 1.02x the float weights' bytes", size, 1.02)]:
        if not ratios:
            lines.append(f"- {what}: no figures.")
            continue
        misses = [f"{name} {r:.2f}x" for name, r in ratios if r > goal]
        lines.append(f"- {what}: {'met' if not misses else 'not met'} ({len(ratios) - len(misses)} of {len(ratios)} "
                     f"met" + (f"; misses: {', '.join(misses)}" if misses else "") + ").")
    return lines + [""]


def _ratio_goal(results: dict, models: list[str], t: str, key: str, limit: float, what: str) -> str:
    ratios, misses = [], []
    for model in models:
        a = _result(results, model, t, "tern").get(key)
        b = _result(results, model, t, "et_xnnpack").get(key)
        if a is not None and b:
            ratios.append(a / b)
            if a / b > limit:
                misses.append(f"{model} {a / b:.2f}x")
    if not ratios:
        return f"- {what}: no figures."
    return (f"- {what} ({t} thread): {'met' if not misses else 'not met'} ({len(ratios) - len(misses)} of "
            f"{len(ratios)} met" + (f"; misses: {', '.join(misses)}" if misses else "") + ").")


def _problems(results: dict, models: list[str], threads: list[str]) -> list[str]:
    lines = []
    for model in models:
        for rt in _runtimes(results):
            seen = set()
            for t in threads:
                st = _result(results, model, t, rt).get("status", "")
                if st and st != "ok" and st not in seen and not st.startswith("skipped"):
                    seen.add(st)
                    lines.append(f"- {model}, {LABELS[rt]}: {st}")
    if not lines:
        return []
    return ["## Not timed", ""] + lines + [""]


def _how(results: dict) -> list[str]:
    lines = ["## How each runtime got its model", ""]
    lines += [f"- {LABELS[rt]}: {text}" for rt, text in results["how"].items()]
    notes = {(rt, e.get("note")) for m in results["models"].values() for rt, e in m["export"].items() if e.get("note")}
    extra = sorted(f"{LABELS[rt]}: {note}" for rt, note in notes if rt == "ort" and "dynamo=False" in note)
    if extra:
        lines.append("- Models ONNX took through the TorchScript exporter: " + "; ".join(extra))
    for model, entry in results["models"].items():
        if entry.get("static"):
            notes = [f"{LABELS[rt]}: {entry['export'][rt]['note']}" for rt in _runtimes(results)
                     if entry["export"].get(rt, {}).get("note")]
            lines.append(f"- {model}, the dynamic export: " + "; ".join(notes))
    return lines + [""]


# ---- chart ---------------------------------------------------------------------


def chart(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = list(results["models"])
    threads = [str(t) for t in results["settings"]["threads"]]
    rows = len(threads) + 2
    fig, axes = plt.subplots(rows, 1, figsize=(max(9, 1.5 * len(models) + 3), 3.4 * rows + 1.2), squeeze=False)
    for ax, t in zip(axes[:, 0], threads):
        _bars(ax, results, models, t, _latency,
              f"Median latency, {t} thread{'s' if t != '1' else ''} (ms, log scale; lower is better)")
        ax.set_xticklabels([_tick(results, model, t) for model in models], fontsize=9)
    _bars(axes[-2, 0], results, models, threads[0], lambda res: res.get("first_output_ms"),
          f"Load-to-first-output in a fresh process, {threads[0]} thread (ms, log scale)")
    _bars(axes[-1, 0], results, models, threads[0], lambda res: (_first_run(res) or (None, None))[1],
          f"First run / median, {threads[0]} thread (log scale; dashed: issue 26's goal, 1.2x)", goal=1.2)
    m = results["machine"]
    fig.suptitle(f"Tern side by side, {results['date']} ({m['cpu']}, {m['logical_cpus']} CPUs)", fontsize=12,
                 y=0.995)
    handles = [plt.Rectangle((0, 0), 1, 1, color=COLORS[rt]) for rt in _runtimes(results)]
    fig.legend(handles, [LABELS[rt] for rt in _runtimes(results)], loc="upper center", ncol=len(_runtimes(results)), frameon=False,
               bbox_to_anchor=(0.5, 0.975), fontsize=9)
    fig.text(0.5, 0.005, "Red labels: Tern's time / the fastest peer's (below 1.0x: Tern is faster); under a "
             "dynamic model's name, Tern's dynamic / static median at that size.\n"
             "x: no figure (unsupported, wrong output or too slow; see the .md).", ha="center", va="bottom",
             fontsize=8, color="#444444")
    fig.tight_layout(rect=(0, 0.03, 1, 0.95))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _latency(res: dict) -> float | None:
    return _median(res)


def _tick(results: dict, model: str, t: str) -> str:
    """A model's name; under a dynamic model's, Tern's dynamic / static median."""
    static = results["models"][model].get("static")
    if static not in results["models"]:
        return model
    a, b = _median(_result(results, model, t, "tern")), _median(_result(results, static, t, "tern"))
    return model + (f"\nTern dyn / static {a / b:.2f}x" if a is not None and b is not None else "")


def _bars(ax, results: dict, models: list[str], t: str, value, title: str, goal: float | None = None) -> None:
    """One panel: for each model, a bar per runtime of value(result); Tern's
    latency bars labelled with its ratio to the fastest peer."""
    from matplotlib.ticker import FuncFormatter

    width = 0.8 / len(_runtimes(results))
    ax.set_yscale("log")
    values = []
    for j, rt in enumerate(_runtimes(results)):
        for i, model in enumerate(models):
            res = _result(results, model, t, rt)
            x = i - 0.4 + width * (j + 0.5)
            v = value(res)
            if not v:
                ax.annotate("x", (x, 0), xycoords=("data", "axes fraction"), ha="center", va="bottom",
                            fontsize=9, color=COLORS[rt], xytext=(0, 2), textcoords="offset points")
                continue
            values.append(v)
            ax.bar(x, v, width, color=COLORS[rt])
            if rt == "tern" and value is _latency:
                _, best = _fastest_peer(results, model, t)
                if best:
                    ax.annotate(f"{v / best:.1f}x", (x, v), ha="center", va="bottom", fontsize=8,
                                color=COLORS["tern"], fontweight="bold", xytext=(0, 2), textcoords="offset points")
    if goal is None:
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
        if values:
            ax.set_ylim(min(values) / 2.5, max(values) * 3)
    else:  # a ratio: a narrower range, its minor ticks labelled too
        ax.axhline(goal, color="#444444", linestyle="--", linewidth=0.8)
        values.append(goal)
        ax.set_ylim(min(values) / 1.5, max(values) * 1.5)
        for axis_set in (ax.yaxis.set_major_formatter, ax.yaxis.set_minor_formatter):
            axis_set(FuncFormatter(lambda y, _: f"{y:g}x"))
    ax.set_xticks(range(len(models)))
    ax.set_xticklabels(models, fontsize=9)
    ax.set_xlim(-0.6, len(models) - 0.4)
    ax.set_title(title, fontsize=10, loc="left")
    ax.grid(axis="y", which="major", alpha=0.3)


def main() -> int:
    path = Path(sys.argv[1])
    results = json.loads(path.read_text())
    path.with_suffix(".md").write_text(markdown(results))
    chart(results, path.with_suffix(".png"))
    print(f"{path.with_suffix('.md')}, {path.with_suffix('.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
