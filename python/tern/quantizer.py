"""TernQuantizer: the PT2E quantizer of Tern's quantization schemes.

    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    prepared = prepare_pt2e(torch.export.export(model, args).module(), TernQuantizer("int8"))
    for batch in calibration: prepared(*batch)
    qmodel = convert_pt2e(prepared)        # then tern.export(qmodel, args)

tern.quantize() does these steps and reports accuracy; this class is for
those who drive prepare_pt2e / convert_pt2e themselves. Importing this module
imports torch and torchao (tern.TernQuantizer imports it on first use).
The schemes are documented in tern.quantize and docs/quantization.md.
"""
from __future__ import annotations

import logging
from typing import Any

import torch


def _import_torchao() -> None:
    # torchao 0.18 registers an Enum with torch's pytree on import, which
    # torch 2.14 answers with a deprecation warning on every first import:
    # nothing a user of tern.quantize can act on.
    log = logging.getLogger("torch.utils._pytree")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        import torchao.quantization.pt2e  # noqa: F401
    finally:
        log.setLevel(level)


_import_torchao()

from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e  # noqa: E402
from torchao.quantization.pt2e.quantizer import (  # noqa: E402
    QuantizationAnnotation,
    Quantizer,
    SharedQuantizationSpec,
)

__all__ = ["GROUP_SIZES", "SCHEMES", "TernQuantizer", "convert_pt2e", "prepare_pt2e"]

SCHEMES = ("int8", "int8-dynamic", "int8-weight", "int4-weight")
GROUP_SIZES = (32, 64, 128)

def _specs(scheme: str, group_size: int) -> dict[str, Any]:
    """The QuantizationSpecs of a scheme: "act" (activation inputs and
    outputs; None: activations stay float) and "weight".
    Weights: int8 per output channel, symmetric in [-127, 127]; int4 in
    groups along the last dim, symmetric in [-8, 7]. Activations: int8 per
    tensor, affine in [-128, 127]; observed by histogram (static) or
    measured per call (dynamic)."""
    from torchao.quantization.pt2e.observer import HistogramObserver, PerChannelMinMaxObserver, PlaceholderObserver
    from torchao.quantization.pt2e.quantizer import QuantizationSpec

    eps = 2.0 ** -12
    int8_weight = QuantizationSpec(
        dtype=torch.int8, quant_min=-127, quant_max=127, qscheme=torch.per_channel_symmetric, ch_axis=0,
        observer_or_fake_quant_ctr=PerChannelMinMaxObserver.with_args(eps=eps))
    if scheme == "int8":
        act = QuantizationSpec(
            dtype=torch.int8, quant_min=-128, quant_max=127, qscheme=torch.per_tensor_affine,
            observer_or_fake_quant_ctr=HistogramObserver.with_args(eps=eps))
        return {"act": act, "weight": int8_weight}
    if scheme == "int8-dynamic":
        act = QuantizationSpec(
            dtype=torch.int8, quant_min=-128, quant_max=127, qscheme=torch.per_tensor_affine, is_dynamic=True,
            observer_or_fake_quant_ctr=PlaceholderObserver.with_args(
                dtype=torch.int8, quant_min=-128, quant_max=127, qscheme=torch.per_tensor_affine, is_dynamic=True))
        return {"act": act, "weight": int8_weight}
    if scheme == "int8-weight":
        return {"act": None, "weight": int8_weight}
    from torchao.quantization.granularity import PerGroup
    from torchao.quantization.pt2e._affine_quantization import AffineQuantizedMinMaxObserver
    from torchao.quantization.quant_primitives import MappingType

    int4 = QuantizationSpec(
        dtype=torch.int8, quant_min=-8, quant_max=7, qscheme=None,
        observer_or_fake_quant_ctr=AffineQuantizedMinMaxObserver.with_args(
            mapping_type=MappingType.SYMMETRIC, target_dtype=torch.int8, granularity=PerGroup(group_size),
            quant_min=-8, quant_max=7, eps=eps))
    return {"act": None, "weight": int4}


def _module_name(node: Any) -> str:
    """The user's name of the module a node comes from ("encoder.fc3"), else the node's."""
    stack = node.meta.get("nn_module_stack") or {}
    if stack:
        path = list(stack.values())[-1][0]
        if path:
            return str(path)
    return str(node.name)


_aten = torch.ops.aten
_CONVS = {_aten.conv1d.default, _aten.conv2d.default}
_LINEARS = {_aten.linear.default}
_EMBEDDINGS = {_aten.embedding.default}
_ACTIVATIONS = {_aten.relu.default, _aten.relu_.default, _aten.relu6.default, _aten.hardtanh.default,
                _aten.hardtanh_.default}
_BINARY = {_aten.add.Tensor, _aten.add_.Tensor, _aten.mul.Tensor, _aten.mul_.Tensor}
_POOLS = {_aten.max_pool2d.default, _aten.avg_pool2d.default, _aten.adaptive_avg_pool2d.default}
_PADS = {_aten.constant_pad_nd.default, _aten.pad.default}


class TernQuantizer(Quantizer):
    """The PT2E quantizer of Tern's schemes (tern.quantize's docstring):
    annotates the operators Tern runs quantized with the
    QuantizationSpecs of `scheme`. For prepare_pt2e / convert_pt2e:

        prepared = prepare_pt2e(torch.export.export(model, args).module(), TernQuantizer("int8"))
        ... run calibration inputs through `prepared` ...
        qmodel = convert_pt2e(prepared)

    After annotate(), `quantized` counts the operators annotated, by kind,
    and `skipped` says which the scheme covers but were left in float."""

    def __init__(self, scheme: str = "int8", *, group_size: int = 32) -> None:
        super().__init__()
        if scheme not in SCHEMES:
            raise ValueError(f"TernQuantizer: unknown scheme {scheme!r}; expected one of {', '.join(SCHEMES)}")
        if group_size not in GROUP_SIZES:
            raise ValueError(f"TernQuantizer: group_size {group_size} is not one of {GROUP_SIZES}")
        self.scheme = scheme
        self.group_size = group_size
        self.quantized: dict[str, int] = {}
        self.skipped: list[str] = []

    def annotate(self, model: "torch.fx.GraphModule") -> "torch.fx.GraphModule":
        specs = _specs(self.scheme, self.group_size)
        for node in list(model.graph.nodes):
            if node.op != "call_function" or "quantization_annotation" in node.meta:
                continue
            if node.target in _CONVS and self.scheme == "int8":
                self._weighted(node, specs, "conv")
            elif node.target in _LINEARS:
                self._weighted(node, specs, "linear")
            elif node.target in _EMBEDDINGS and self.scheme in ("int8-weight", "int4-weight"):
                self._embedding(node, specs)
            elif self.scheme == "int8" and node.target in _BINARY:
                self._binary(node, specs)
            elif self.scheme == "int8" and node.target in _POOLS:
                self._pool(node, specs)
            elif self.scheme == "int8" and node.target in _PADS and _is_zero_pad(node):
                self._pad(node, specs)
        return model

    def validate(self, model: "torch.fx.GraphModule") -> None:
        pass

    # annotations

    def _count(self, kind: str) -> None:
        self.quantized[kind] = self.quantized.get(kind, 0) + 1

    def _weight_fits(self, node: Any, weight: Any, kind: str) -> bool:
        """Whether the int4 groups divide the weight's input dim (else skipped)."""
        val = weight.meta.get("val")
        if self.scheme != "int4-weight" or val is None:
            return True
        if val.dim() == 2 and val.shape[-1] % self.group_size == 0:
            return True
        self.skipped.append(f"{kind} {_module_name(node)} (weight {tuple(val.shape)}: its last dim is not a "
                            f"multiple of group_size {self.group_size})")
        return False

    def _weighted(self, node: Any, specs: dict[str, Any], kind: str) -> None:
        x, w = node.args[0], node.args[1]
        if not self._weight_fits(node, w, kind):
            return
        inputs = {w: specs["weight"]}
        if specs["act"] is not None:
            inputs[x] = specs["act"]
        out_node, out_spec = node, None
        if self.scheme == "int8":
            out_spec = specs["act"]
            users = list(node.users)
            if len(users) == 1 and users[0].target in _ACTIVATIONS and "quantization_annotation" not in users[0].meta:
                out_node = users[0]  # conv + relu: one quantize, after the activation
        self._annotate(node, inputs, out_spec if out_node is node else None)
        if out_node is not node:
            self._annotate(out_node, {}, out_spec)
        self._count(kind)

    def _embedding(self, node: Any, specs: dict[str, Any]) -> None:
        w = node.args[0]
        if self._weight_fits(node, w, "embedding"):
            self._annotate(node, {w: specs["weight"]}, None)
            self._count("embedding")

    def _binary(self, node: Any, specs: dict[str, Any]) -> None:
        tensors = [a for a in node.args[:2] if isinstance(a, torch.fx.Node)
                   and isinstance(a.meta.get("val"), torch.Tensor) and a.meta["val"].is_floating_point()]
        val = node.meta.get("val")
        if len(tensors) != 2 or not isinstance(val, torch.Tensor) or not val.is_floating_point():
            return
        users = list(node.users)
        out_node = users[0] if len(users) == 1 and users[0].target in _ACTIVATIONS \
            and "quantization_annotation" not in users[0].meta else node
        self._annotate(node, {t: specs["act"] for t in tensors}, specs["act"] if out_node is node else None)
        if out_node is not node:
            self._annotate(out_node, {}, specs["act"])
        self._count("add" if node.target in (_aten.add.Tensor, _aten.add_.Tensor) else "mul")

    def _pool(self, node: Any, specs: dict[str, Any]) -> None:
        x = node.args[0]
        self._annotate(node, {x: specs["act"]}, SharedQuantizationSpec((x, node)))
        self._count("pool")

    def _pad(self, node: Any, specs: dict[str, Any]) -> None:
        # A zero pad keeps its input's parameters (0 is always on an observed
        # grid: observers include it), so the pad of "same" padding before a
        # conv folds into the conv's padding (passes/fold_pad_into_conv.py).
        x = node.args[0]
        self._annotate(node, {x: specs["act"]}, SharedQuantizationSpec((x, node)))
        self._count("pad")

    @staticmethod
    def _annotate(node: Any, inputs: dict[Any, Any], output: Any) -> None:
        node.meta["quantization_annotation"] = QuantizationAnnotation(
            input_qspec_map=inputs, output_qspec=output, _annotated=True)


def _is_zero_pad(node: Any) -> bool:
    """aten.constant_pad_nd / aten.pad with mode "constant" and value 0."""
    if node.target == _aten.pad.default:
        mode = node.args[2] if len(node.args) > 2 else node.kwargs.get("mode", "constant")
        value = node.args[3] if len(node.args) > 3 else node.kwargs.get("value", None)
        return mode == "constant" and (value is None or value == 0)
    value = node.args[2] if len(node.args) > 2 else node.kwargs.get("value", 0)
    return value == 0
