"""Each runtime's model file, made from the same module, weights and input.

    artifacts = prepare_model("resnet18", work_dir, cache_dir, et_python, log, lower_timeout=1800)
    artifacts.files["ort"]        # path of the .onnx file, or None
    artifacts.status["ort"]       # "ok" or "unsupported: ..."

How each runtime gets its model (also written into the results):
  tern         tern.export(module, inputs) -> .tern, fresh in every run
               (export_tern below: the one place to switch the cpu backend on)
  tern_base    the same call in a process that imports Tern at the
               --baseline commit (run.py, baseline.py): `python prepare.py
               --export-tern NAME OUT` with PYTHONPATH to its build
  torch        the module's state_dict (torch.save); the worker builds the
               structure on the meta device and loads it (mmap, assign=True)
  ort          torch.onnx.export(dynamo=True) -> .onnx (the TorchScript
               exporter, dynamo=False, only if that fails)
  et_xnnpack   torch.export.save here (torch 2.14.1) -> torch.export.load in
  et_portable  the ExecuTorch environment (torch 2.13.0 + executorch 1.5.1) ->
               to_edge_transform_and_lower with XnnpackPartitioner() / without
               a partitioner -> .to_executorch() -> .pte (bench/et_lower.py)

A model with dynamic shapes (models.py: bert_minilm_dyn_*) is exported from
its example inputs with torch.export's dynamic_shapes by tern.export,
torch.onnx.export (dynamo=True; the TorchScript fallback gets the same dims
as dynamic_axes) and torch.export for ExecuTorch, and timed on its bench
input; PyTorch eager takes any shape as it is.

Everything but the .tern file is cached under cache_dir, keyed by a hash of
the weights, the input, the model definitions, the lowering code and the
pinned bench requirements, so a second run skips the slow lowering.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from models import build, export_args, float_weight_bytes  # noqa: E402

Log = Callable[[str], None]

# The files whose change invalidates cached exports; bump _EXPORT_VERSION when
# the export calls in this file change.
_KEY_FILES = ["models.py", "et_lower.py", "requirements-peers.txt", "requirements-executorch.txt"]
_EXPORT_VERSION = "1"


@dataclass
class Artifacts:
    name: str
    inputs: Path  # .npz, keys in0, in1, ...
    reference: Path  # .npz of PyTorch eager's outputs, out0, out1, ...
    input_shapes: list[list[int]]
    files: dict[str, Path | None] = field(default_factory=dict)
    status: dict[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    weights_bytes: int | None = None  # the model's float parameters and buffers (models.float_weight_bytes)


# ---- Tern's export call: the one place to switch the cpu backend on --------
def export_tern(module: torch.nn.Module, inputs: tuple[torch.Tensor, ...], path: Path,
                dynamic_shapes: object = None) -> str:
    """Exports to a .tern file; returns a note on how. tern.export's default
    partitioners hand what the cpu backend runs fast to it (weights packed at
    export); the rest runs on the portable kernels."""
    import tern

    if dynamic_shapes is None:  # the call a --baseline Tern from before dynamic shapes takes too
        tern.export(module, inputs).save(str(path))
        return "tern.export(module, inputs): the cpu backend where it claims the graph, portable kernels elsewhere"
    tern.export(module, inputs, dynamic_shapes=dynamic_shapes).save(str(path))
    return (f"tern.export(module, inputs, dynamic_shapes={describe_dynamic(dynamic_shapes)}): the cpu backend where "
            "it claims the graph, portable kernels elsewhere")
# -----------------------------------------------------------------------------


def first_line(e: BaseException) -> str:
    """The first line of an error; where it ends with ':' (Tern's "N
    operator(s) have no kernel:"), with the operators named below it."""
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    if not lines:
        return type(e).__name__
    head = lines[0]
    if head.endswith(":"):
        ops = sorted({ln.split()[0] for ln in lines[1:] if ln.startswith("aten::")})
        head += " " + ", ".join(ops) if ops else ""
    return head[:300]


def describe_dynamic(dynamic_shapes: object) -> str:
    """A dynamic_shapes spec in a line: "({1: seq 2..128}, {1: seq 2..128})"."""
    def one(spec: object) -> str:
        if isinstance(spec, dict):
            return "{" + ", ".join(f"{k}: {one(v)}" for k, v in spec.items()) + "}"
        if isinstance(spec, (tuple, list)):
            return "(" + ", ".join(one(v) for v in spec) + ")"
        name = getattr(spec, "__name__", None)
        return f"{name} {getattr(spec, 'min', '?')}..{getattr(spec, 'max', '?')}" if name else repr(spec)

    return one(dynamic_shapes)


def _cache_key(name: str, module: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> str:
    h = hashlib.sha256(f"{name} {_EXPORT_VERSION}".encode())
    for k, v in module.state_dict().items():
        h.update(k.encode())
        h.update(v.detach().contiguous().numpy().tobytes())
    for x in inputs:
        h.update(x.numpy().tobytes())
    for f in _KEY_FILES:
        p = BENCH / f
        if p.exists():
            h.update(p.read_bytes())
    h.update(torch.__version__.encode())
    return h.hexdigest()[:16]


def new_artifacts(name: str, module: torch.nn.Module, inputs: tuple[torch.Tensor, ...], cache_root: Path) -> Artifacts:
    """The model's cache folder, with its inputs and PyTorch eager's outputs saved there."""
    cache = cache_root / f"{name}-{_cache_key(name, module, inputs)}"
    cache.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        out = module(*inputs)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    art = Artifacts(name, cache / "inputs.npz", cache / "reference.npz", [list(x.shape) for x in inputs])
    np.savez(art.inputs, **{f"in{i}": x.numpy() for i, x in enumerate(inputs)})
    np.savez(art.reference, **{f"out{i}": y.numpy() for i, y in enumerate(outs)})
    return art


def prepare_model(name: str, work_dir: Path, cache_root: Path, et_python: str | None, log: Log,
                  lower_timeout: float = 1800, runtimes: list[str] | None = None,
                  baseline_pylib: Path | None = None) -> Artifacts:
    """Every runtime's file (those in `runtimes`; all by default). A model
    with dynamic shapes (models.ModelSpec.dynamic_shapes) is exported from
    its example inputs with them, by every exporter that takes them, and
    timed on its bench input."""
    module, inputs = build(name)
    example, dynamic = export_args(name, inputs)
    art = new_artifacts(name, module, inputs, cache_root)
    art.weights_bytes = float_weight_bytes(module)
    cache = art.inputs.parent
    wanted = set(runtimes) if runtimes is not None else {"tern", "torch", "ort", "et_xnnpack", "et_portable"}

    if "tern" in wanted:
        _prepare_tern(art, module, example, work_dir, log, dynamic)
    if "tern_base" in wanted:
        _prepare_tern_base(art, work_dir, baseline_pylib, log)
    if "torch" in wanted:
        _prepare_torch(art, module, cache)
        if dynamic is not None:
            art.notes["torch"] = "eager takes any shape: the same module and weights as the static rows"
    if "ort" in wanted:
        _prepare_onnx(art, module, example, cache, log, dynamic)
    if wanted & {"et_xnnpack", "et_portable"}:
        _prepare_executorch(art, module, example, cache, et_python, log, lower_timeout, dynamic)
    return art


def _prepare_tern(art: Artifacts, module, inputs, work_dir: Path, log: Log, dynamic_shapes: object = None) -> None:
    import tern

    path = work_dir / f"{art.name}.tern"
    t0 = time.perf_counter()
    try:
        art.notes["tern"] = export_tern(module, inputs, path, dynamic_shapes)
    except tern.ExportError as e:
        art.files["tern"], art.status["tern"] = None, f"unsupported: {first_line(e)}"
        log(f"  tern: {art.status['tern']}")
        return
    art.files["tern"], art.status["tern"] = path, "ok"
    log(f"  tern: exported in {time.perf_counter() - t0:.1f} s")


def _prepare_tern_base(art: Artifacts, work_dir: Path, pylib: Path | None, log: Log) -> None:
    """The .tern file of Tern at the baseline commit, exported in a process
    that imports it (this process has the current Tern imported)."""
    if pylib is None:
        art.files["tern_base"], art.status["tern_base"] = None, "not run: no --baseline"
        return
    path = work_dir / f"{art.name}-base.tern"
    env = dict(os.environ, PYTHONPATH=str(pylib))
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, str(BENCH / "prepare.py"), "--export-tern", art.name, str(path)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        art.files["tern_base"], art.status["tern_base"] = None, f"error: baseline export exited {proc.returncode}: {tail}"
    else:
        reply = json.loads(lines[-1])
        art.status["tern_base"], art.notes["tern_base"] = reply["status"], reply.get("note", "")
        if not Path(reply["tern"]).resolve().is_relative_to(Path(pylib).resolve()):
            art.status["tern_base"] = f"error: the baseline export imported tern from {reply['tern']}"
        art.files["tern_base"] = path if reply["status"] == "ok" else None
    log(f"  tern_base: {art.status['tern_base']} ({time.perf_counter() - t0:.1f} s)")


def _export_main(name: str, out: str) -> int:
    """`prepare.py --export-tern NAME OUT`: export_tern with whichever Tern
    this process imports; prints {"status", "note", "tern"} as JSON."""
    import tern

    module, inputs = build(name)
    example, dynamic = export_args(name, inputs)
    try:
        note = export_tern(module, example, Path(out), dynamic)
        status = "ok"
    except tern.ExportError as e:
        note, status = "", f"unsupported: {first_line(e)}"
    print(json.dumps({"status": status, "note": note, "tern": tern.__file__}))
    return 0


def _prepare_torch(art: Artifacts, module, cache: Path) -> None:
    path = cache / "state_dict.pt"
    if not path.exists():
        torch.save(module.state_dict(), path)
    art.files["torch"], art.status["torch"] = path, "ok"


def _cached(art: Artifacts, cache: Path, runtime: str) -> bool:
    """Takes the status of an earlier run's export from cache/<runtime>.json."""
    meta = cache / f"{runtime}.json"
    if not meta.exists():
        return False
    m = json.loads(meta.read_text())
    art.status[runtime], art.notes[runtime] = m["status"], m.get("note", "")
    art.files[runtime] = cache / m["file"] if m["status"] == "ok" else None
    return True


def _remember(art: Artifacts, cache: Path, runtime: str, file: str) -> None:
    meta = {"status": art.status[runtime], "note": art.notes.get(runtime, ""), "file": file}
    (cache / f"{runtime}.json").write_text(json.dumps(meta))


def _onnx_dynamic(dynamic_shapes: object, dynamo: bool) -> dict:
    """torch.onnx.export's arguments for dynamic shapes: the dynamo exporter
    takes torch.export's spec; the TorchScript one takes dynamic axes of
    named inputs (a positional spec: a tuple of {dim: Dim} per input)."""
    if dynamic_shapes is None:
        return {}
    if dynamo:
        return {"dynamic_shapes": dynamic_shapes}
    names = [f"in{i}" for i in range(len(dynamic_shapes))]
    axes = {n: {d: dim.__name__ for d, dim in spec.items()} for n, spec in zip(names, dynamic_shapes) if spec}
    return {"input_names": names, "dynamic_axes": axes}


def _prepare_onnx(art: Artifacts, module, inputs, cache: Path, log: Log, dynamic_shapes: object = None) -> None:
    if _cached(art, cache, "ort"):
        return
    path = cache / "model.onnx"
    t0 = time.perf_counter()
    errors = []
    for dynamo in (True, False):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(module, inputs, str(path), dynamo=dynamo, external_data=False, verbose=False,
                                  **_onnx_dynamic(dynamic_shapes, dynamo))
            art.status["ort"] = "ok"
            art.notes["ort"] = f"torch.onnx.export(dynamo={dynamo})"
            if dynamic_shapes is not None:
                art.notes["ort"] += (f", dynamic_shapes={describe_dynamic(dynamic_shapes)}" if dynamo else
                                     f", dynamic_axes={_onnx_dynamic(dynamic_shapes, False)['dynamic_axes']}")
            break
        except Exception as e:  # noqa: BLE001 - any exporter failure
            errors.append(first_line(e))
    else:
        art.status["ort"] = f"unsupported: {errors[0]}"
    art.files["ort"] = path if art.status["ort"] == "ok" else None
    _remember(art, cache, "ort", path.name)
    log(f"  ort: {art.status['ort']} ({art.notes.get('ort', '')}, {time.perf_counter() - t0:.1f} s)")


def _prepare_executorch(art: Artifacts, module, inputs, cache: Path, et_python: str | None, log: Log,
                        timeout: float, dynamic_shapes: object = None) -> None:
    runtimes = [rt for rt in ("et_xnnpack", "et_portable") if not _cached(art, cache, rt)]
    if not runtimes:
        return
    if et_python is None:
        for rt in runtimes:
            art.files[rt], art.status[rt] = None, "not run: no ExecuTorch environment"
        return
    program = cache / "model.pt2"
    if not program.exists():
        try:
            torch.export.save(torch.export.export(module, inputs, dynamic_shapes=dynamic_shapes), str(program))
        except Exception as e:  # noqa: BLE001
            for rt in runtimes:
                art.files[rt], art.status[rt] = None, f"unsupported: torch.export: {first_line(e)}"
                _remember(art, cache, rt, "")
            return
    shapes = "" if dynamic_shapes is None else f", from torch.export(dynamic_shapes={describe_dynamic(dynamic_shapes)})"
    for rt in runtimes:
        _lower(art, rt, program, cache, et_python, log, timeout, shapes)


def _lower(art: Artifacts, rt: str, program: Path, cache: Path, et_python: str, log: Log, timeout: float,
           shapes: str = "") -> None:
    """One ExecuTorch flavor (et_lower.py in the ExecuTorch environment)."""
    flavor = rt.removeprefix("et_")
    out = cache / f"{rt}.pte"
    how = "XnnpackPartitioner() (fp32)" if flavor == "xnnpack" else "no partitioner (portable kernels)"
    art.notes[rt] = how + shapes
    log(f"  {rt}: lowering in the ExecuTorch environment (at most {timeout:.0f} s) ...")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    cmd = [et_python, str(BENCH / "et_lower.py"), str(program), f"--{flavor}", str(out)]
    t0 = time.perf_counter()
    with open(cache / f"{rt}.log", "w") as err:
        try:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=env, timeout=timeout)
        except subprocess.TimeoutExpired:
            proc = None
    lines = proc.stdout.strip().splitlines() if proc else []
    if proc is None:
        # Kept in the cache like an unsupported model, so the next run does not wait again;
        # delete cache/<rt>.json to retry.
        status = f"too slow to lower: more than {timeout:.0f} s"
    elif proc.returncode == 0 and lines:
        status = json.loads(lines[-1])[rt]["status"]
    else:
        status = f"error: et_lower.py exited {proc.returncode} (see {cache / f'{rt}.log'})"
    art.status[rt] = status
    art.files[rt] = out if status == "ok" else None
    if not status.startswith("error"):
        _remember(art, cache, rt, out.name)
    log(f"  {rt}: {status} ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--export-tern":
        sys.exit(_export_main(sys.argv[2], sys.argv[3]))
    sys.exit("usage: prepare.py --export-tern MODEL OUT.tern (bench/run.py calls it for --baseline)")
