"""The `tern` command: look inside .tern files and at what the runtime supports.

    tern inspect model.tern     # header, inputs, outputs, ops, memory plan, metadata keys, self-tests
    tern inspect model.tern --plot memory.png   # ... and a picture of the memory plan
    tern profile model.tern [--input x.npy] [--threads N] [--plot profile.png]   # where a run's time goes
    tern ops                    # the operators the runtime has kernels for
    tern ops --for a.tern b.tern [--format def]   # the operators (and dtypes) those files use
    tern llm-export model.gguf -o model.tern [--max-context 1024]   # a language model for tern-llm
    tern explain ExecutionFailed   # what a runtime error code means (a name, a number or a message)
    tern debug model.tern --module mypkg.models:make_model --inputs x.npy   # where it parts from eager

To run and time a file, use `tern-run` (installed beside this command);
to generate with a language model's file, `tern-llm`. Imports torch only
for llm-export and debug.
"""

from __future__ import annotations

import argparse
import collections
import signal
import sys
from typing import Any

from tern import op_usage


def _tensor(v: dict) -> str:
    return f"{op_usage.DTYPE_NAMES[v['scalar_type']]}{v['sizes']}"


def inspect_file(path: str) -> str:
    from tern.inspect import read_program

    info = read_program(path)
    h = info["header"]
    lines = [
        f"{path}: Tern format {h['version_major']}.{h['version_minor']}, {h['file_size']:,} bytes, "
        f"written by {info['producer'] or '?'}",
        f"  segments: {len(info['segments'])} ({sum(s['size'] for s in info['segments']):,} bytes of constants "
        "and backend payloads)",
    ]
    for m in info["methods"]:
        values = m["values"]
        ins = ", ".join(_tensor(values[i]) for i in m["inputs"])
        outs = ", ".join(_tensor(values[i]) for i in m["outputs"])
        lines.append(f"  method {m['name']}({ins}) -> ({outs})")
        lines.append(f"    {len(m['instructions'])} instructions, {len(values)} values, "
                     f"planned arenas {[f'{a:,} B' for a in m['arena_sizes']]}")
        counts = collections.Counter(m["operators"][i["op"]] for i in m["instructions"] if i["kind"] == "KernelCall")
        for op, n in counts.most_common():
            lines.append(f"    {n:5d} x {op}")
        for k, d in enumerate(m.get("delegates", [])):
            size = info["segments"][d["payload_segment"]]["size"] if d["payload_segment"] < len(info["segments"]) else 0
            lines.append(f"    delegate {k}: backend {d['backend']}, {len(d['inputs'])} inputs, "
                         f"{len(d['outputs'])} outputs, payload {size:,} bytes")
    lines += _refusals(dict(info["metadata"]).get("tern.refused"))  # tern.export.REFUSALS_KEY
    if info["metadata"]:
        total = sum(len(v) for _, v in info["metadata"])
        lines.append(f"  metadata: {len(info['metadata'])} entries, {total:,} bytes")
        width = min(40, max(len(k) for k, _ in info["metadata"]))  # a long key takes its own width
        lines += [f"    {k:<{width}}  {len(v):>12,} bytes" for k, v in info["metadata"]]
        lines += _language_model(dict(info["metadata"]))
    lines += _self_tests(info["self_tests"])
    return "\n".join(lines)


def _self_tests(tests: list[dict[str, Any]]) -> list[str]:
    """The bundled self-tests (tern.export(..., bundle=...)): one line per
    test, one per expected output with its tolerance."""
    if not tests:
        return []
    lines = [f"  self-tests: {len(tests)} bundled (run them: tern-run FILE --self-test)"]
    for i, t in enumerate(tests):
        ins = ", ".join(f"{x['dtype']}{list(x['shape'])}" for x in t["inputs"])
        lines.append(f"    test {i}: {t['method']}({ins})")
        lines += [f"      output {k}: {e['dtype']}{list(e['shape'])}, rtol {e['rtol']:.3g}, atol {e['atol']:.3g}"
                  for k, e in enumerate(t["expected"])]
    return lines


def _language_model(meta: dict[str, bytes]) -> list[str]:
    """What a language model's file (tern.llm.export) holds for generation:
    its tokenizer, chat format, stop tokens and sampling defaults."""
    from tern.llm.file_meta import CONFIG_KEY, TOKENIZER_KEY, FileMetaError, read_config, read_tokenizer_blob

    if TOKENIZER_KEY not in meta and CONFIG_KEY not in meta:
        return []
    lines = ["  language model (tern-llm, tern.llm.load):"]
    try:
        tok = read_tokenizer_blob(meta[TOKENIZER_KEY]) if TOKENIZER_KEY in meta else None
        cfg = read_config(meta[CONFIG_KEY]) if CONFIG_KEY in meta else None
    except FileMetaError as e:
        return lines + [f"    unreadable: {e}"]

    def name(i: int | None) -> str:
        return "none" if i is None else f"{i} {tok.tokens[i]!r}" if tok and 0 <= i < len(tok.tokens) else str(i)

    if tok is not None:
        special = sum(1 for t in tok.token_types if t in (3, 4))
        lines.append(f"    tokenizer: byte-level BPE, pre-tokenizer {tok.pre!r}, {len(tok.tokens):,} tokens "
                     f"({special} special), {len(tok.merges):,} merges")
    if cfg is not None:
        lines.append(f"    context: {cfg.max_context} tokens; BOS {name(cfg.bos)}"
                     f"{' (added)' if cfg.add_bos else ''}; EOS {name(cfg.eos)}; stop at "
                     + (", ".join(name(i) for i in cfg.stop) or "nothing"))
        lines.append(f"    sampling defaults: temperature {cfg.temperature:g}, top_k {cfg.top_k}, top_p {cfg.top_p:g}"
                     + (f", repeat_penalty {cfg.repeat_penalty:g} over {cfg.repeat_last_n}"
                        if cfg.repeat_penalty is not None else ""))
        if cfg.chat:
            lines.append("    chat format (role: prefix ... suffix):")
            for role in ("system", "user", "assistant"):
                lines.append(f"      {role:9s} {cfg.chat[role + '_prefix']!r} ... {cfg.chat[role + '_suffix']!r}")
            lines.append(f"      generation prompt {cfg.chat['generation_prompt']!r}")
            if cfg.chat.get("default_system"):
                lines.append(f"      default system message {cfg.chat['default_system']!r}")
        else:
            lines.append("    no chat format")
    return lines


def _refusals(text: bytes | None) -> list[str]:
    """What the backends left to the portable kernels at export, and why
    (the "tern.refused" metadata): one line per backend, op and reason, with
    the nodes; attention first (a portable attention is slow)."""
    if not text:
        return []
    groups: dict[tuple[str, str, str], list[str]] = collections.defaultdict(list)
    for line in text.decode("utf-8", "replace").splitlines():
        parts = line.split("\t")
        if len(parts) == 4:
            groups[(parts[0], parts[2], parts[3])].append(parts[1])
    lines = ["  left on the portable kernels at export (the backend, the op, why, the nodes):"]
    for (backend, op, why), nodes in sorted(groups.items(), key=lambda g: ("attention" not in g[0][1], g[0])):
        shown = ", ".join(nodes[:4]) + (f", ... ({len(nodes)})" if len(nodes) > 4 else "")
        lines.append(f"    {backend}: {op}: {why} [{shown}]")
    return lines


def llm_export_command(args: argparse.Namespace) -> int:
    """`tern llm-export`: tern.llm.from_gguf, then tern.llm.export, with progress."""
    import time

    import tern.llm
    from tern.errors import ExportError

    t0 = time.perf_counter()
    try:
        print(f"reading {args.gguf}", file=sys.stderr)
        model = tern.llm.from_gguf(args.gguf)
        cfg = model.config
        print(f"  {model.name}: {cfg.layers} layers, dim {cfg.dim}, {cfg.heads} heads ({cfg.kv_heads} kv), "
              f"vocabulary {cfg.vocab}; exporting (max_context {args.max_context}; two layers are traced, the "
              "others made from them: about 10 s)", file=sys.stderr)
        program = tern.llm.export(model, max_context=args.max_context, max_tokens_per_step=args.max_tokens_per_step,
                                  fast=not args.exact)
        program.save(args.output)
    except (tern.llm.GGUFError, ExportError, ValueError, OSError) as e:
        print(f"tern llm-export: {e}", file=sys.stderr)
        return 1
    import os

    print(f"wrote {args.output} ({os.path.getsize(args.output) / 1e6:.1f} MB) in {time.perf_counter() - t0:.1f} s",
          file=sys.stderr)
    return 0


def _runtime_verdict(path: str) -> str | None:
    """The C++ runtime's error for a file it rejects, or None if it loads."""
    from tern.runtime import load

    try:
        load(path)
    except ValueError as e:
        return str(e)
    return None


def ops_command(files: list[str] | None, fmt: str, ops_def: str | None) -> int:
    """`tern ops`: the runtime's ops, or with --for the ops the files use.

    Exit status 1 (with a message on stderr) when a file cannot be read or uses
    an op without a portable kernel: a runtime built from that kernel list,
    selective or not, could not run the file. Nothing is printed in def format then.
    """
    files = list(dict.fromkeys(files or []))  # each file once
    try:
        known, source = op_usage.kernel_ops(ops_def, prefer_ops_def=bool(files))
        usage = op_usage.ops_used(files) if files else {op: op_usage.OpUsage() for op in known}
        backends = op_usage.backends_used(files) if files else {}
    except op_usage.UsageError as e:
        print(f"tern ops: {e}", file=sys.stderr)
        return 1
    missing = set(usage) - known
    if fmt == "def":
        if not missing:  # else no selection: it could not be built
            print(op_usage.format_def(usage, files))
    elif files:
        print(op_usage.format_table(usage, missing, files, backends))
    else:
        print("\n".join(sorted(usage)))
    for op in sorted(missing):
        users = " ".join(sorted(usage[op].files))
        print(f"tern ops: {op} (used by {users}) has no kernel in {source}: "
              f"a runtime built from it cannot run {users}", file=sys.stderr)
    return 1 if missing else 0


def profile_command(args: argparse.Namespace) -> int:
    """tern profile: tern-run --trace, summed per op kind and per layer."""
    import json
    import subprocess
    import tempfile
    from pathlib import Path

    from tern.debugger import tern_run_path
    from tern.plots import plot_profile, profile_of_trace

    try:
        tool = tern_run_path()
    except FileNotFoundError as e:
        print(f"tern profile: {e}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        trace_path = Path(tmp) / "trace.json"
        cmd = [tool, args.file, *[x for i in args.input for x in ("--input", i)], "--threads", str(args.threads),
               "--iterations", str(args.iterations), "--warmup", "3", "--trace", str(trace_path)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"tern profile: tern-run failed: {(r.stderr or r.stdout).strip()}", file=sys.stderr)
            return 1
        p = profile_of_trace(json.loads(trace_path.read_text()))
    print(f"{args.file}: {p.run_ms:.3f} ms a run (median of {p.runs}), {args.threads} thread(s)")
    print("  time per op kind:")
    for kind, ms in p.kinds[:args.top]:
        print(f"    {ms:9.3f} ms  {100 * ms / p.run_ms if p.run_ms else 0:5.1f}%  {kind}")
    print(f"  the {min(args.top, len(p.layers))} slowest layers:")
    for kind, name, ms in p.layers[:args.top]:
        print(f"    {ms:9.3f} ms  {name}  [{kind}]")
    if args.plot:
        try:
            plot_profile(p, args.plot, f"{Path(args.file).name}, {args.threads} thread(s)", args.top)
        except RuntimeError as e:
            print(f"tern profile: {e}", file=sys.stderr)
            return 1
        print(f"wrote {args.plot}")
    return 0


def _load_model(spec: str) -> object:
    """The model of --module "pkg.mod:name": pkg.mod's `name`, called if it
    is not a torch.nn.Module (a function that makes the model)."""
    import importlib
    import os

    import torch

    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"--module {spec}: expected pkg.module:name (a model or a function that makes one)")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # the user's own package, where the command runs
    obj = getattr(importlib.import_module(module_name), attr, None)
    if obj is None:
        raise ValueError(f"--module {spec}: {module_name} has no attribute {attr}")
    model = obj if isinstance(obj, torch.nn.Module) else obj()
    if not callable(model):
        raise ValueError(f"--module {spec}: {attr} made a {type(model).__name__}, not a model")
    return model


def debug_command(args: argparse.Namespace) -> int:
    """tern debug: the file's every value against eager PyTorch's."""
    import numpy as np
    import torch

    from tern.debugger import debug

    try:
        model = _load_model(args.module)
        inputs = tuple(torch.from_numpy(np.load(p)) for p in args.inputs)
        report = debug(model, inputs, args.file, backend=not args.no_backend, threshold=args.threshold,
                       runner=args.runner, keep=args.keep)
    except (ValueError, OSError, RuntimeError, ImportError) as e:
        print(f"tern debug: {e}", file=sys.stderr)
        return 1
    print(report.table())
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tern", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("inspect", help="describe a .tern file")
    p.add_argument("file")
    p.add_argument("--plot", metavar="OUT.png",
                   help="also draw the memory plan (tensors as bars over instructions, the lower bound as a line)")
    p.add_argument("--method", help="the method --plot draws (default: the first)")
    p = sub.add_parser("llm-export", help="export a GGUF language model (Llama family) for tern-llm")
    p.add_argument("gguf")
    p.add_argument("-o", "--output", required=True, help="the .tern file to write")
    p.add_argument("--max-context", type=int, default=1024, help="tokens a sequence holds (default 1024)")
    p.add_argument("--max-tokens-per-step", type=int, default=128,
                   help="prompt tokens one step takes (default 128)")
    p.add_argument("--exact", action="store_true",
                   help="float arithmetic throughout, eager PyTorch's values (slow; for checking)")
    p = sub.add_parser("profile", help="run a .tern file with tern-run and show where the time goes (--plot: a PNG)")
    p.add_argument("file")
    p.add_argument("--input", action="append", default=[], metavar="X.npy", help="an input (default: random ones)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--iterations", type=int, default=20, help="timed runs (default 20; medians over them)")
    p.add_argument("--top", type=int, default=15, help="how many op kinds and layers to show (default 15)")
    p.add_argument("--plot", metavar="OUT.png", help="also draw time per op kind and the slowest layers")
    p = sub.add_parser("debug", help="compare every value a .tern file computes with eager PyTorch's, to the "
                                     "source line where they part")
    p.add_argument("file")
    p.add_argument("--module", required=True, metavar="PKG.MOD:NAME",
                   help="the model the file was exported from: a torch.nn.Module, or a function that makes one "
                        "(imported from the current directory or sys.path)")
    p.add_argument("--inputs", nargs="+", required=True, metavar="X.npy", help="the model's inputs, in order")
    p.add_argument("--no-backend", action="store_true",
                   help="export the model again with kernels alone and debug that: an error seen with the backend "
                        "and not without it is the backend's")
    p.add_argument("--threshold", type=float, default=None,
                   help="max rel error past which a value is over (default 1e-3; 1e-2 for quantized models)")
    p.add_argument("--runner", metavar="TERN_RUN", help="the tern-run to run the file with (default: the installed one)")
    p.add_argument("--keep", metavar="DIR", help="keep the dumped values (tern-run --dump-values) in DIR")
    p = sub.add_parser("explain", help="what a runtime error code means, its usual causes and what to do")
    p.add_argument("code", nargs="+", help="a name (ExecutionFailed), a number (11), or a whole error message")
    p = sub.add_parser("ops", help="list the operators the runtime has kernels for, or that .tern files use")
    p.add_argument("--for", dest="files", nargs="+", metavar="FILE",
                   help="list the ops these .tern files use, with their dtypes")
    p.add_argument("--format", choices=("text", "def"), default="text",
                   help="def: a selection file for cmake -DTERN_SELECT_OPS=FILE (one op per line)")
    p.add_argument("--ops-def", metavar="OPS_DEF",
                   help="the kernel list to check against (default: kernels/portable/ops.def of this "
                        "checkout, else the compiled runtime's ops)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `tern ops | head` ends quietly
    if args.command == "ops":
        return ops_command(args.files, args.format, args.ops_def)
    if args.command == "llm-export":
        return llm_export_command(args)
    if args.command == "profile":
        return profile_command(args)
    if args.command == "debug":
        return debug_command(args)
    if args.command == "explain":
        from tern.error_codes import explain

        try:
            print(explain(" ".join(args.code)))
        except ValueError as e:
            print(f"tern explain: {e}", file=sys.stderr)
            return 2
        return 0
    try:
        print(inspect_file(args.file))
        if args.plot:
            from tern.plots import plot_memory

            print(plot_memory(args.file, args.plot, args.method))
    except (RuntimeError, ValueError) as e:  # no matplotlib; no such method
        print(f"tern inspect: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"tern inspect: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # the Python reader does not verify: ask the runtime's verifier why
        print(f"tern inspect: {args.file}: {_runtime_verdict(args.file) or e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
