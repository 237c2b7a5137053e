"""make bench: Tern against PyTorch eager, ONNX Runtime and ExecuTorch
(XNNPACK and portable), side by side in one run, on the same inputs.

    .venv-bench/bin/python bench/run.py                 # what `make bench` runs
    .venv-bench/bin/python bench/run.py --quick         # smoke test: 2 models, 3 rounds
    .venv-bench/bin/python bench/run.py --models resnet18,vit_b_16 --threads 1 --rounds 9
    .venv-bench/bin/python bench/run.py --baseline 7ea43ed --runtimes tern,tern_base   # A/B of two commits

Writes bench/results/<date>.json (everything measured, machine and versions),
<date>.md (the tables) and <date>.png (the chart); --quick writes
<date>-quick.*. Progress goes to stderr.

How (details in bench/README.md):
  1. probes: the f32 FMA peak (build/bench/fma_peak) and Tern's GEMM
     (build/bench/gemm_bench), in GFLOP/s, at each thread count;
  2. each model is built once (models.py) and exported for every runtime
     (prepare.py), with PyTorch eager's output on the input as the reference;
  3. for each model and thread count, every runtime gets its own fresh worker
     process (worker.py), which loads its file and runs it once:
     load-to-first-output, peak RSS growth, and the output checked against
     eager (a runtime that is off is reported, not timed);
  4. rounds: each round asks every worker in turn (the order rotates) for
     about --round-ms of back-to-back runs; the machine is shared, so noise
     falls on all runtimes alike; medians and p90s over all runs of all rounds;
     a dynamic-shape model (models.py: bert_minilm_dyn_*) is timed in the
     same rounds as the static model it is compared with, when both run.

--baseline REV adds a runtime, tern_base: Tern as it was at commit REV
(bench/baseline.py builds it once into the cache), exporting and running
with that commit's own code, timed in the same rounds as the current Tern;
the report then has a table of current / baseline per model.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import selectors
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))

RUNTIMES = ["tern", "tern_base", "torch", "ort", "et_xnnpack", "et_portable"]
PEERS = RUNTIMES[2:]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---- worker processes ------------------------------------------------------


class WorkerError(RuntimeError):
    pass


class Worker:
    """A worker.py process: one runtime, one file, one thread count."""

    def __init__(self, python: str, runtime: str, art, threads: int, log_dir: Path, env: dict) -> None:
        cmd = [python, str(BENCH / "worker.py"), "--runtime", runtime, "--model", str(art.files[runtime]),
               "--model-name", art.name, "--threads", str(threads),
               "--inputs", str(art.inputs), "--reference", str(art.reference)]
        self.log_path = log_dir / f"{art.name}-{runtime}-{threads}t.log"
        self.stderr = open(self.log_path, "w")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
                                     text=True, env=env)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.proc.stdout, selectors.EVENT_READ)
        self.read(timeout=300)  # {"ready": true} once its imports are done

    def read(self, timeout: float) -> dict:
        if not self.selector.select(timeout):
            self.close()
            raise WorkerError(f"no answer in {timeout:.0f} s")
        line = self.proc.stdout.readline()
        if not line:
            self.close()
            raise WorkerError(f"worker exited ({self.proc.wait()}); see {self.log_path}")
        reply = json.loads(line)
        if "error" in reply:
            raise WorkerError(reply["error"])
        return reply

    def ask(self, msg: dict, timeout: float) -> dict:
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()
        return self.read(timeout)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write('{"cmd": "quit"}\n')
                self.proc.stdin.flush()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.stderr.close()


def percentile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    i = (len(s) - 1) * q
    lo = int(i)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (i - lo)


# ---- one model at one thread count -----------------------------------------


Key = tuple[str, str]  # (model, runtime): one worker of a Group


class Group:
    """Every runtime's worker for one model at one thread count, timed in the
    same rounds; with `twins`, other models' files too (a dynamic export
    beside the static one at the same size), each worker keyed (model, runtime).

        group = Group(art, threads, args, log_dir, skip, twins=[dynamic_art])
        for r in range(args.rounds):
            group.round(r)
        group.finish()                 # art's results by runtime
        group.of(dynamic_art.name)     # a twin's
    """

    def __init__(self, art, threads: int, args: argparse.Namespace, log_dir: Path, skip: dict[Key, str],
                 twins: list = ()) -> None:
        self.art, self.threads, self.args = art, threads, args
        self.arts = {a.name: a for a in [art, *twins]}
        self.results: dict[Key, dict] = {}
        self.workers: dict[Key, Worker] = {}
        self.estimate: dict[Key, float] = {}
        self.samples: dict[Key, list[float]] = {}
        self.round_sizes: dict[Key, list[int]] = {}  # runs of each round, in order
        for a in self.arts.values():  # every file in the page cache before any loads (see read_through)
            for rt in args.runtimes:
                if a.status.get(rt) == "ok" and a.files.get(rt) is not None:
                    read_through(a.files[rt])
        for a in self.arts.values():
            for rt in args.runtimes:
                key = (a.name, rt)
                if a.status.get(rt) != "ok":
                    self.results[key] = {"status": a.status.get(rt, "not run")}
                elif key in skip:
                    self.results[key] = {"status": skip[key]}
                else:
                    self.start(key, log_dir)

    def _label(self, key: Key) -> str:
        return key[1] if key[0] == self.art.name else f"{key[0]}:{key[1]}"

    def start(self, key: Key, log_dir: Path) -> None:
        a, (model, rt) = self.args, key
        art = self.arts[model]
        et = rt.startswith("et_")
        python = a.et_python if et else sys.executable
        env = dict(os.environ, OMP_NUM_THREADS=str(self.threads))
        if et:
            env.pop("PYTHONPATH", None)
        base = getattr(a, "baseline_pylib", None)  # bench/quant.py's settings have none
        if rt == "tern_base":
            env["PYTHONPATH"] = str(base)
        res: dict = {"file_bytes": file_bytes(art.files[rt])}
        label = self._label(key)
        w = None
        try:
            w = Worker(python, rt, art, self.threads, log_dir, env)
            res.update(w.ask({"cmd": "load", "warmup": a.warmup, "slow_ms": a.slow_ms}, timeout=a.load_timeout))
        except WorkerError as e:
            if w is not None:
                w.close()
            self.results[key] = {**res, "status": f"error: {e}"}
            log(f"    {label:<12} error: {e}")
            return
        want = base if rt == "tern_base" else None
        if rt.startswith("tern") and not _imported_from(res.get("module_path"), want):
            w.close()
            self.results[key] = {**res, "status": f"error: imported tern from {res.get('module_path')}"}
            log(f"    {label:<12} {self.results[key]['status']}")
            return
        tol = a.atol + a.rtol * res["max_abs_ref"]
        res["tolerance"] = tol
        warm = res.get("warmup_ms") or [res["first_run_ms"]]
        self.estimate[key] = statistics.median(warm)
        if not res["max_abs_diff"] <= tol:
            res["status"] = f"wrong output: max abs diff {res['max_abs_diff']:.2e} > {tol:.1e}"
            w.close()
        elif self.estimate[key] > a.max_ms:
            res["status"] = f"too slow to time: one run takes {self.estimate[key] / 1e3:.0f} s"
            w.close()
        else:
            res["status"] = "ok"
            self.workers[key] = w
            self.samples[key] = []
            self.round_sizes[key] = []
        self.results[key] = res
        log(f"    {label:<12} load-to-first-output {res['first_output_ms']:9.1f} ms, "
            f"RSS +{res['rss_growth_mb']:6.1f} MB, max abs diff {res['max_abs_diff']:.1e}: {res['status']}")

    def round(self, r: int) -> None:
        a = self.args
        live = list(self.workers)
        order = live[r % len(live):] + live[:r % len(live)] if live else []
        for key in order:
            est = self.estimate[key]
            if est > a.slow_ms and r >= a.slow_rounds:
                continue  # slow runtimes are timed in the first --slow-rounds rounds only
            iters = max(1, min(a.max_iters, round(a.round_ms / max(est, 1e-3))))
            try:
                ms = self.workers[key].ask({"cmd": "run", "iters": iters}, timeout=a.load_timeout + iters * est / 1e3)
            except WorkerError as e:
                self.results[key]["status"] = f"error: {e}"
                self.workers.pop(key).close()
                continue
            self.samples[key] += ms["ms"]
            self.round_sizes[key].append(len(ms["ms"]))
            time.sleep(a.pause_ms / 1e3)  # let the last runtime's spinning threads go to sleep
        cells = ", ".join(f"{self._label(k)} {statistics.median(s):.1f}" for k, s in self.samples.items() if s)
        log(f"    round {r + 1}/{a.rounds}: median ms so far: {cells}")

    def finish(self) -> dict[str, dict]:
        """Closes the workers; the first model's results by runtime (twins': of())."""
        for key, w in self.workers.items():
            w.close()
            s = self.samples[key]
            self.results[key].update(median_ms=statistics.median(s), p90_ms=percentile(s, 0.9),
                                     min_ms=min(s), n=len(s), samples_ms=[round(x, 4) for x in s],
                                     round_sizes=self.round_sizes[key])
        self.workers = {}
        return self.of(self.art.name)

    def of(self, model: str) -> dict[str, dict]:
        return {rt: res for (m, rt), res in self.results.items() if m == model}


def _imported_from(module_path: str | None, pylib: Path | None) -> bool:
    """Whether a Tern worker ran the Tern it should: the baseline's from
    its own folder, the current one from anywhere else."""
    if module_path is None:
        return False
    inside = pylib is not None and Path(module_path).resolve().is_relative_to(Path(pylib).resolve())
    return inside if pylib is not None else "baseline" not in Path(module_path).parts


def read_through(path: Path) -> None:
    """Reads a runtime's file (and its ONNX external data) once, so that
    each runtime's load starts with its file in the page cache. A file written
    at export half an hour before its load may or may not still be cached
    (this VM's balloon can take page cache back): Tern's load of
    bert_minilm_32 took 59 ms in one make bench and 0.5 ms from the cache
    (2026-12-07)."""
    for p in _file_parts(path):
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass


def _file_parts(path: Path) -> list[Path]:
    """A runtime's model file and, beside it, its ONNX external data, if any."""
    extra = Path(str(path) + ".data")
    return [path] + ([extra] if extra.exists() else [])


def file_bytes(path: Path | None) -> int | None:
    if path is None:
        return None
    return sum(p.stat().st_size for p in _file_parts(path))


# ---- machine, versions, probes ----------------------------------------------


def machine_info() -> dict:
    cpu, flags = "", set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            key = key.strip()
            if key == "model name" and not cpu:
                cpu = value.strip()
            elif key in ("flags", "Features") and not flags:
                flags = set(value.split())
    isa = sorted(f for f in flags if f.startswith(("avx", "fma", "amx", "sse4", "asimd", "sve", "neon")))
    mem_kb = int(next(ln for ln in open("/proc/meminfo") if ln.startswith("MemTotal")).split()[1])
    return {"cpu": cpu or platform.processor(), "isa_flags": isa, "logical_cpus": os.cpu_count(),
            "memory_gb": round(mem_kb / 2**20, 1), "kernel": platform.release(), "machine": platform.machine(),
            "python": platform.python_version()}


def versions(et_python: str | None) -> dict:
    from importlib import metadata

    out = {}
    for pkg in ["torch", "torchvision", "onnxruntime", "onnx", "onnxscript", "numpy", "tern"]:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    try:
        rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        out["tern_commit"] = rev + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        out["tern_commit"] = None
    if et_python:
        code = ("import json, importlib.metadata as m; "
                "print(json.dumps({p: m.version(p) for p in ['executorch', 'torch']}))")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        r = subprocess.run([et_python, "-c", code], capture_output=True, text=True, env=env)
        if r.returncode == 0:
            et = json.loads(r.stdout)
            out["executorch"], out["executorch_torch"] = et["executorch"], et["torch"]
    return out


def _probe(build_dir: Path, name: str, threads: list[int]) -> dict:
    exe = str(build_dir / "bench" / name)
    out = subprocess.run([exe, *map(str, threads)], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def run_probes(build_dir: Path, threads: list[int]) -> dict:
    """The FMA peak (before and after the GEMM) and the GEMM; finish_probes()
    adds a last peak at the end of the run."""
    missing = {n: {"error": f"{build_dir / 'bench' / n} not built (make build)"}
               for n in ("fma_peak", "gemm_bench") if not (build_dir / "bench" / n).exists()}
    if missing:
        return missing
    log("probes: FMA peak, GEMM ...")
    peaks = [_probe(build_dir, "fma_peak", threads)]
    gemm = _probe(build_dir, "gemm_bench", threads)
    peaks.append(_probe(build_dir, "fma_peak", threads))
    probes = {"fma_peak": dict(peaks[0], runs=[p["gflops"] for p in peaks]), "gemm": gemm}
    _best_peak(probes)
    for r in gemm["results"]:
        log(f"  GEMM {r.get('gemm', '')} {r['m']}x{r['n']}x{r['k']}, {r['threads']} threads: {r['gflops']} GFLOP/s "
            f"median, {r.get('gflops_best', r['gflops'])} best ({r['percent_of_peak']}% of peak)")
    return probes


def finish_probes(probes: dict, build_dir: Path, threads: list[int]) -> None:
    if "gemm" in probes:
        probes["fma_peak"]["runs"].append(_probe(build_dir, "fma_peak", threads)["gflops"])
        _best_peak(probes)


def _best_peak(probes: dict) -> None:
    """A peak is what the machine can do at best, and other work on a shared
    machine only lowers it: the best of the probe's runs in this bench run."""
    peak = probes["fma_peak"]
    peak["gflops"] = {t: max(run[t] for run in peak["runs"]) for t in peak["runs"][0]}
    for r in probes["gemm"]["results"]:
        # best against best: the peak too is what the machine can do at best
        r["percent_of_peak"] = round(100 * r.get("gflops_best", r["gflops"]) / peak["gflops"][str(r["threads"])], 1)
    log(f"  FMA peak ({peak['isa']}): " + ", ".join(f"{t} threads {g} GFLOP/s" for t, g in peak["gflops"].items()))


# ---- main --------------------------------------------------------------------


HOW = {
    "tern": "tern.export(module, inputs) -> .tern (bench/prepare.py export_tern); run through the Python "
            "bindings, tern.load(path, threads=n)",
    "tern_base": "the same, with Tern at the --baseline commit: its exporter writes the file and its runtime runs "
                 "it (bench/baseline.py; PYTHONPATH to that commit's build)",
    "torch": "the nn.Module itself: structure built on the meta device, state_dict loaded with mmap and "
             "assign=True; torch.set_num_threads(n), torch.inference_mode()",
    "ort": "torch.onnx.export(dynamo=True) in the main environment -> .onnx; InferenceSession with the CPU "
           "provider, intra_op_num_threads=n, inter_op_num_threads=1, all graph optimizations",
    "et_xnnpack": "torch.export.export + torch.export.save beside torch 2.14.1; torch.export.load in a venv with "
                  "torch 2.13.0 + executorch 1.5.1; to_edge_transform_and_lower(ep, partitioner="
                  "[XnnpackPartitioner()]).to_executorch() -> .pte (fp32); run with the pybindings "
                  "(_load_for_executorch), threads set with _unsafe_reset_threadpool(n)",
    "et_portable": "as et_xnnpack, lowered without a partitioner (ExecuTorch's portable kernels)",
}


def parse_args() -> argparse.Namespace:
    from models import MODELS, QUICK

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help=f"smoke test: {', '.join(QUICK)}, 3 rounds")
    p.add_argument("--models", help=f"comma-separated, of: {', '.join(MODELS)} (default: all)")
    p.add_argument("--runtimes", default=",".join(r for r in RUNTIMES if r != "tern_base"),
                   help="comma-separated (default: all but tern_base, which --baseline adds)")
    p.add_argument("--threads", default="1,2", help="thread counts (default 1,2)")
    p.add_argument("--rounds", type=int, help="interleaved rounds (default 7; --quick 3)")
    p.add_argument("--round-ms", type=float, default=400, help="each runtime's share of a round, in ms")
    p.add_argument("--max-iters", type=int, default=25, help="at most this many runs per runtime per round")
    p.add_argument("--warmup", type=int, default=2, help="untimed runs after the first output")
    p.add_argument("--slow-ms", type=float, default=3000, help="runtimes slower than this per run ...")
    p.add_argument("--slow-rounds", type=int, default=2, help="... are timed in this many rounds only")
    p.add_argument("--max-ms", type=float, default=60000, help="runtimes slower than this per run are not timed")
    p.add_argument("--pause-ms", type=float, default=50, help="pause between two runtimes' turns")
    p.add_argument("--load-timeout", type=float, default=900, help="seconds a worker may take to load and run once")
    p.add_argument("--lower-timeout", type=float, default=900,
                   help="seconds ExecuTorch may take to lower one model (a model that takes longer is recorded "
                        "as unsupported, in the cache too)")
    p.add_argument("--atol", type=float, default=1e-5, help="output check: |out - eager| <= atol + rtol * max|eager|")
    p.add_argument("--rtol", type=float, default=1e-3)
    p.add_argument("--et-python", default=str(ROOT / ".venv-executorch" / "bin" / "python"),
                   help="the ExecuTorch environment's python (scripts/setup_bench_env.sh)")
    p.add_argument("--build-dir", default=str(ROOT / "build"), help="where make build put build/bench/*")
    p.add_argument("--cache-dir", default=os.path.join(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"),
                                                      "tern", "bench-models"), help="cached peer model files")
    p.add_argument("--out", help="output path without extension (default bench/results/<date>[-quick])")
    p.add_argument("--baseline", metavar="REV", help="also run Tern at this commit (runtime tern_base), built once "
                   "into the cache dir, for a same-run A/B")
    a = p.parse_args()
    a.models = a.models.split(",") if a.models else (QUICK if a.quick else list(MODELS))
    unknown = [m for m in a.models if m not in MODELS]
    if unknown:
        p.error(f"unknown models {unknown}; known: {list(MODELS)}")
    asked = a.runtimes.split(",")
    unknown = [r for r in asked if r not in RUNTIMES]
    if unknown:
        p.error(f"unknown runtimes {unknown}; known: {RUNTIMES}")
    if "tern_base" in asked and not a.baseline:
        p.error("runtime tern_base needs --baseline REV")
    if a.baseline and "tern_base" not in asked:
        asked.append("tern_base")
    a.runtimes = [r for r in RUNTIMES if r in asked]
    a.baseline_pylib, a.baseline_commit = None, None
    a.threads = [int(t) for t in a.threads.split(",")]
    a.rounds = a.rounds or (3 if a.quick else 7)
    if not Path(a.et_python).exists():
        log(f"no ExecuTorch environment at {a.et_python} (scripts/setup_bench_env.sh): ExecuTorch is not run")
        a.et_python = None
    return a


def main() -> int:
    import warnings

    warnings.filterwarnings("ignore")
    args = parse_args()
    started = time.time()
    if args.baseline:
        from baseline import install_baseline

        args.baseline_pylib, args.baseline_commit = install_baseline(args.baseline, Path(args.cache_dir), log)
    today = datetime.date.today().isoformat()
    out = Path(args.out) if args.out else BENCH / "results" / (today + ("-quick" if args.quick else ""))
    out.parent.mkdir(parents=True, exist_ok=True)
    results: dict = {
        "date": today, "started": datetime.datetime.now().isoformat(timespec="seconds"),
        "command": " ".join(sys.argv), "machine": machine_info(), "versions": versions(args.et_python),
        "settings": {k: v for k, v in vars(args).items()
                     if k not in ("cache_dir", "build_dir", "et_python", "out", "baseline_pylib")},
        "how": {rt: text for rt, text in HOW.items() if rt != "tern_base" or args.baseline}, "models": {},
    }
    results["probes"] = run_probes(Path(args.build_dir), args.threads)

    from prepare import prepare_model
    from models import MODELS

    with tempfile.TemporaryDirectory(prefix="tern-bench-") as tmp:
        work, logs = Path(tmp), out.parent / "logs"
        logs.mkdir(exist_ok=True)
        arts = []
        for i, name in enumerate(args.models):
            log(f"[{i + 1}/{len(args.models)}] {name}: exporting ...")
            arts.append(prepare_model(name, work, Path(args.cache_dir), args.et_python, log, args.lower_timeout,
                                      args.runtimes, args.baseline_pylib))
        entries: dict[str, dict] = {}
        skip: dict[tuple[str, str], str] = {}  # (model, runtime): why it is not run at more threads
        groups = _groups(arts)
        for i, group_arts in enumerate(groups):
            names = " + ".join(art.name for art in group_arts)
            for art in group_arts:
                entries[art.name] = _entry(MODELS[art.name], art)
            for threads in args.threads:
                log(f"[{i + 1}/{len(groups)}] {names}, {threads} thread(s): loading in fresh processes ...")
                group = Group(group_arts[0], threads, args, logs, skip, twins=group_arts[1:])
                for r in range(args.rounds):
                    group.round(r)
                group.finish()
                for (model, rt), res in group.results.items():  # not worth a second try at more threads
                    if res.get("status", "").startswith(("too slow", "wrong output", "error")):
                        skip[(model, rt)] = f"skipped: at {threads} thread(s), {res['status']}"
                for art in group_arts:
                    entries[art.name]["threads"][str(threads)] = group.of(art.name)
            results["models"] = {name: entries[name] for name in args.models if name in entries}
            _write(results, out, started)  # partial results survive an interrupted run
    finish_probes(results["probes"], Path(args.build_dir), args.threads)
    _write(results, out, started)
    log(f"done in {(time.time() - started) / 60:.1f} min: {out}.json, {out}.md, {out}.png")
    return 0


def _groups(arts: list) -> list[list]:
    """The models timed in the same rounds: a dynamic export with the static
    export it is compared with (models.ModelSpec.static), when both run."""
    from models import MODELS

    names = {art.name for art in arts}
    groups: dict[str, list] = {}  # by the static model's name, that one first
    for art in arts:
        static = MODELS[art.name].static
        lead = static if static in names else art.name
        group = groups.setdefault(lead, [])
        if lead == art.name:
            group.insert(0, art)
        else:
            group.append(art)
    return list(groups.values())


def _entry(spec, art) -> dict:
    """A model's entry in the results, before its timings."""
    entry = {"description": spec.description, "input_shapes": art.input_shapes, "weights_bytes": art.weights_bytes,
             "export": {rt: {"status": art.status.get(rt), "note": art.notes.get(rt)} for rt in RUNTIMES},
             "threads": {}}
    if spec.dynamic_shapes is not None:  # the report sets it beside its static twin
        entry["static"] = spec.static
    return entry


def _write(results: dict, out: Path, started: float) -> None:
    import report

    results["duration_s"] = round(time.time() - started)
    Path(str(out) + ".json").write_text(json.dumps(results, indent=1))
    Path(str(out) + ".md").write_text(report.markdown(results))
    report.chart(results, Path(str(out) + ".png"))


if __name__ == "__main__":
    sys.exit(main())
