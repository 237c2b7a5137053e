"""tern.quantize: a float model -> a quantized one, through PyTorch's PT2E flow.

    qmodel = tern.quantize(model, (x,), calibration=[(x1,), (x2,)], scheme="int8")
    program = tern.export(qmodel, (x,))

Schemes (docs/quantization.md):
  "int8"          static: conv, linear, add, mul and pooling on int8
                  activations (per-tensor, affine; ranges observed on the
                  calibration inputs) and int8 weights (per output channel,
                  symmetric).
  "int8-dynamic"  linear layers on int8 activations whose range is measured
                  at run time, per call, and int8 weights (per channel).
  "int8-weight"   linear and embedding weights stored as int8 (per channel),
                  computed in float.
  "int4-weight"   linear and embedding weights stored as int4, in groups of
                  `group_size` (32, 64 or 128) along the input dim, one scale
                  per group; computed in float.

The steps are PyTorch's own: torch.export -> prepare_pt2e(TernQuantizer) ->
run the calibration inputs -> convert_pt2e. TernQuantizer is public for
those who drive prepare_pt2e / convert_pt2e themselves. The converted model
is a torch.fx GraphModule whose quantize/dequantize ops tern.export writes
to the file as they are (the reference), and whose quantized operators the
cpu backend runs on integers.

After converting, quantize() compares the quantized model with the float one
on the calibration inputs and reports output SNR (dB) and top-1 agreement
(QuantizationReport, also at qmodel.meta["tern_quantization"]).
"""
from __future__ import annotations

import dataclasses
import math
import sys
from typing import TYPE_CHECKING, Any, Iterable, Sequence

if TYPE_CHECKING:
    import torch
    import torch.fx

# How many calibration batches the accuracy report runs (each runs both models).
REPORT_BATCHES = 16


@dataclasses.dataclass
class QuantizationReport:
    """What quantize() did and how close the result is to the float model.

    snr_db: output signal-to-noise ratio over every output element of the
    compared batches, 10 log10(sum(ref^2) / sum((ref - q)^2)) (inf when equal).
    top1_agreement: the fraction of rows (the last dim's argmax, per row of the
    first output) on which both models agree; None for outputs of fewer than
    2 classes. quantized / skipped: the operators quantized, and those the
    scheme covers but left in float, with why."""

    scheme: str
    quantized: dict[str, int]
    skipped: list[str]
    batches: int
    snr_db: float
    top1_agreement: float | None

    def __str__(self) -> str:
        ops = ", ".join(f"{n} {k}" for k, n in sorted(self.quantized.items())) or "no operators"
        top1 = "" if self.top1_agreement is None else f", top-1 agreement {100 * self.top1_agreement:.1f}%"
        snr = "inf" if math.isinf(self.snr_db) else f"{self.snr_db:.1f}"
        text = (f"tern.quantize {self.scheme}: quantized {ops}; output SNR {snr} dB{top1} "
                f"against the float model on {self.batches} calibration input(s)")
        if self.skipped:
            text += f"; left in float: {'; '.join(self.skipped)}"
        return text


def quantize(model: Any, args: tuple[Any, ...], calibration: Iterable[Sequence[Any]] | None = None,
             scheme: str = "int8", *, group_size: int = 32, dynamic_shapes: Any = None,
             progress: bool = True) -> "torch.fx.GraphModule":
    """The quantized form of `model` (called on example inputs `args`),
    ready for tern.export.

    calibration: input tuples like `args` that the model sees in use; the
    "int8" scheme observes activation ranges on them (required), the others
    run them only for the accuracy report (default: [args]). group_size: the
    int4-weight scheme's group (32, 64 or 128). progress: show a progress bar
    over calibration and print the report (returned either way, in
    qmodel.meta["tern_quantization"]).
    Raises ValueError for an unknown scheme or group size, or "int8" without
    calibration inputs.
    """
    import torch

    from tern.export import _eval_mode
    from tern.quantizer import GROUP_SIZES, SCHEMES, TernQuantizer, convert_pt2e, prepare_pt2e

    if scheme not in SCHEMES:
        raise ValueError(f"tern.quantize: unknown scheme {scheme!r}; expected one of {', '.join(SCHEMES)}")
    if group_size not in GROUP_SIZES:
        raise ValueError(f"tern.quantize: group_size {group_size} is not one of {GROUP_SIZES}")
    args = args if isinstance(args, tuple) else (args,)
    batches = [tuple(b) if isinstance(b, (tuple, list)) else (b,) for b in calibration] \
        if calibration is not None else None
    if scheme == "int8" and not batches:
        raise ValueError("tern.quantize: scheme 'int8' observes activation ranges on calibration inputs: "
                         "pass calibration=[(x1,), (x2,), ...], inputs like those the model sees in use")
    batches = batches or [args]

    quantizer = TernQuantizer(scheme, group_size=group_size)
    with _eval_mode(model), torch.no_grad():
        graph = torch.export.export(model, args, dynamic_shapes=dynamic_shapes).module()
        prepared = prepare_pt2e(graph, quantizer)
        for batch in _progress(batches, progress, f"tern.quantize {scheme}: calibrating"):
            prepared(*batch)
        qmodel = convert_pt2e(prepared)
        report = _report(model, qmodel, batches[:REPORT_BATCHES], scheme, quantizer)
    qmodel.meta["tern_quantization"] = report
    if progress:
        print(report, file=sys.stderr)
    return qmodel


def _progress(items: list[Any], show: bool, desc: str) -> Iterable[Any]:
    if not show:
        return items
    try:
        from tqdm import tqdm
    except ImportError:
        return items
    return tqdm(items, desc=desc, unit="batch", file=sys.stderr, leave=False)


def _flat_tensors(out: Any) -> list["torch.Tensor"]:
    import torch

    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat_tensors(o)]
    return [t for t in getattr(out, "to_tuple", lambda: ())() if isinstance(t, torch.Tensor)]


def snr_db(reference: Sequence["torch.Tensor"], other: Sequence["torch.Tensor"]) -> float:
    """10 log10(signal / noise) of `other` against `reference` over all
    their floating elements; inf when they are equal."""
    signal = noise = 0.0
    for r, o in zip(reference, other):
        if not r.is_floating_point():
            continue
        r, o = r.double(), o.double()
        signal += float((r * r).sum())
        noise += float(((r - o) ** 2).sum())
    if noise == 0.0:
        return math.inf
    if signal == 0.0:
        return -math.inf
    return 10.0 * math.log10(signal / noise)


def _report(model: Any, qmodel: Any, batches: list[tuple[Any, ...]], scheme: str,
            quantizer: Any) -> QuantizationReport:
    refs, outs, agree, rows = [], [], 0, 0
    for batch in batches:
        r, q = _flat_tensors(model(*batch)), _flat_tensors(qmodel(*batch))
        refs += r
        outs += q
        if r and r[0].is_floating_point() and r[0].dim() >= 1 and r[0].shape[-1] >= 2:
            a, b = r[0].reshape(-1, r[0].shape[-1]).argmax(-1), q[0].reshape(-1, q[0].shape[-1]).argmax(-1)
            agree += int((a == b).sum())
            rows += a.numel()
    return QuantizationReport(scheme, dict(quantizer.quantized), list(quantizer.skipped), len(batches),
                              snr_db(refs, outs), agree / rows if rows else None)
