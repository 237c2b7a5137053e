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
    lines += _load_table(results, models, threads[0])
    lines += _size_table(results, models)
    lines += _baseline_table(results, models, threads)
    lines += _gemm_table(results)
    lines += _goals(results, models, threads)
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
             "Load-to-first-output: from before the file is opened to the first output in hand. Memory: peak RSS "
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


def _size_table(results: dict, models: list[str]) -> list[str]:
    lines = ["## File size (MB)", "", "| model | " + " | ".join(LABELS[rt] for rt in _runtimes(results)) + " |",
             "|---|" + "---|" * len(_runtimes(results))]
    for model in models:
        cells = []
        for rt in _runtimes(results):
            sizes = [r.get(rt, {}).get("file_bytes") for r in results["models"][model]["threads"].values()]
            size = next((s for s in sizes if s), None)
            status = results["models"][model]["export"][rt]["status"] or ""
            cells.append(f"{size / 1e6:.1f}" if size else _short(status))
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    return lines + ["", "PyTorch eager's file is its state_dict (torch.save).", ""]


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
    return lines + [""]


# ---- chart ---------------------------------------------------------------------


def chart(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = list(results["models"])
    threads = [str(t) for t in results["settings"]["threads"]]
    rows = len(threads) + 1
    fig, axes = plt.subplots(rows, 1, figsize=(max(9, 1.5 * len(models) + 3), 3.4 * rows + 1.2), squeeze=False)
    for ax, t in zip(axes[:, 0], threads):
        _bars(ax, results, models, t, "median_ms",
              f"Median latency, {t} thread{'s' if t != '1' else ''} (ms, log scale; lower is better)")
    _bars(axes[-1, 0], results, models, threads[0], "first_output_ms",
          f"Load-to-first-output in a fresh process, {threads[0]} thread (ms, log scale)")
    m = results["machine"]
    fig.suptitle(f"Tern side by side, {results['date']} ({m['cpu']}, {m['logical_cpus']} CPUs)", fontsize=12,
                 y=0.995)
    handles = [plt.Rectangle((0, 0), 1, 1, color=COLORS[rt]) for rt in _runtimes(results)]
    fig.legend(handles, [LABELS[rt] for rt in _runtimes(results)], loc="upper center", ncol=len(_runtimes(results)), frameon=False,
               bbox_to_anchor=(0.5, 0.975), fontsize=9)
    fig.text(0.5, 0.005, "Red labels: Tern's time / the fastest peer's (below 1.0x: Tern is faster).   "
             "x: no figure (unsupported, wrong output or too slow; see the .md).", ha="center", va="bottom",
             fontsize=8, color="#444444")
    fig.tight_layout(rect=(0, 0.02, 1, 0.95))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _bars(ax, results: dict, models: list[str], t: str, key: str, title: str) -> None:
    from matplotlib.ticker import FuncFormatter

    width = 0.8 / len(_runtimes(results))
    ax.set_yscale("log")
    values = []
    for j, rt in enumerate(_runtimes(results)):
        for i, model in enumerate(models):
            res = _result(results, model, t, rt)
            x = i - 0.4 + width * (j + 0.5)
            v = res.get(key) if (key != "median_ms" or res.get("status") == "ok") else None
            if not v:
                ax.annotate("x", (x, 0), xycoords=("data", "axes fraction"), ha="center", va="bottom",
                            fontsize=9, color=COLORS[rt], xytext=(0, 2), textcoords="offset points")
                continue
            values.append(v)
            ax.bar(x, v, width, color=COLORS[rt])
            if rt == "tern" and key == "median_ms":
                _, best = _fastest_peer(results, model, t)
                if best:
                    ax.annotate(f"{v / best:.1f}x", (x, v), ha="center", va="bottom", fontsize=8,
                                color=COLORS["tern"], fontweight="bold", xytext=(0, 2), textcoords="offset points")
    if values:
        ax.set_ylim(min(values) / 2.5, max(values) * 3)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
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
