"""Convolutions: 2-d, general, grouped (one Conv per group), depthwise, or
transposed, ungrouped or depthwise (one Conv per output phase, then an
Interleave), and 3x3
stride-1 ones as Winograd F(2x2, 3x3) where fusion.choose_winograd says so.
NHWC inside; a residual add and an activation fused into the epilogue; a
zero pad before it (TensorFlow's "same" rule: 0 before, 1 after at stride 2)
taken into its padding where fusion.choose_pads says so.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from tern.backends.cpu.activations import epilogue
from tern.backends.cpu.fusion import PAD, WINOGRAD, conv_taking_pad
from tern.backends.cpu.ir import NHWC, NO_ACTIVATION, Builder, epilogue_of, is_const, pad_amounts, rank, shape, val
from tern.backends.cpu.pack import pack_conv, pack_depthwise

# the cpu.fbs ops its lowering emits (checked against the runtime's ops.def: __init__.py)
EMITS = ("Conv", "WinogradInput", "WinogradOutput", "Interleave")


def supports(node: Any) -> str | None:
    x, w, b, stride, padding, dilation, transposed, _, groups = node.args
    if rank(x) != 4:
        return f"a convolution of a rank-{rank(x)} input (2-d convolutions run)"
    if not is_const(w) or (b is not None and not is_const(b)):
        return "a convolution whose weight or bias is computed, not a constant"
    if transposed:  # stride x stride phases, each at least one pixel
        oh, ow = val(node).shape[2:]
        if oh < stride[0] or ow < stride[1]:
            return "a transposed convolution whose output is smaller than its stride"
        if groups != 1:
            depthwise = groups == shape(x)[1] == shape(node)[1]
            if not depthwise:
                return "a grouped transposed convolution (ungrouped and depthwise ones run)"
            if any(_phase_padding(node, py, px) is None for py in range(stride[0]) for px in range(stride[1])):
                return "a depthwise transposed convolution whose phases would crop their input"
    return None  # groups == 1, depthwise, or one Conv per group


def supports_pad(node: Any) -> str | None:
    """A zero pad of the spatial dims whose only user is a convolution the
    backend runs: it becomes that Conv's padding (fusion.choose_pads)."""
    if pad_amounts(node) is None:
        return "a pad other than zeros added to the last two dims of a 4-d tensor"
    conv = conv_taking_pad(node)
    if conv is None:
        return "a zero pad whose only user is not an untransposed convolution reading it as its input"
    return supports(conv)


def winograd_weights(weight: np.ndarray) -> np.ndarray:
    """G g G^T of each [oc, c] 3x3 kernel (in double, then float32): [16, oc, c]."""
    g = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]])
    u = np.einsum("ij,ocjk,lk->iloc", g, weight.astype(np.float64), g)  # [4, 4, oc, c]
    return np.ascontiguousarray(u.reshape(16, *weight.shape[:2]), dtype=np.float32)


def lower(c: Builder, node: Any) -> None:
    x, w, b, stride, padding, dilation, transposed, _, groups = node.args
    if transposed:
        return _lower_transposed(c, node)
    weight = c.const(w)
    bias = c.const(b) if b is not None else None
    n, oc, oh, ow = shape(node)
    ch = shape(x)[1]
    depthwise = groups > 1 and groups == ch == oc
    before = after = tuple(padding)  # (top, left), (bottom, right)
    taken = node.meta.get(PAD)  # a zero pad taken in (fusion.choose_pads): x is what the pad reads
    if taken is not None:
        pad_node, (top, left, bottom, right) = taken
        x = pad_node.args[0]
        before, after = (before[0] + top, before[1] + left), (after[0] + bottom, after[1] + right)
    xv = c.nhwc(x)
    ep = epilogue_of(node)  # a residual add (ungrouped or depthwise), an activation
    fused, decisions, res, last, act = ep.nodes, ep.decisions(), ep.residual_value, ep.last, ep.act
    y = c.workspace((n, oh, ow, oc))
    rv = c.nhwc(res) if res is not None else -1
    common = {"x": xv, "residual": rv, "y": y, "kernel": tuple(weight.shape[2:]), "stride": tuple(stride),
              "padding": before, "dilation": tuple(dilation), "depthwise": depthwise, **epilogue(act)}
    if after != before:
        common["padding_end"] = after
    if taken is not None:  # the pad is part of the op (its label, Op.decisions)
        fused = [pad_node] + fused
        decisions["pad"] = pad_node.name
    if groups == 1 and node.meta.get(WINOGRAD):  # taps are bounds-checked: the bottom and right padding come free
        _lower_winograd(c, xv, weight, bias, before, rv, y, act, fused, {**decisions, "winograd": True})
    elif groups == 1 or depthwise:
        wv = c.weights(pack_depthwise(weight, bias) if depthwise else pack_conv(weight, bias))
        c.op("Conv", {**common, "weights": wv}, fused, [xv, wv] + ([rv] if rv >= 0 else []), [y], decisions)
    else:  # one Conv per group, over its channel slices of x and y
        cg, og = ch // groups, oc // groups
        for gi in range(groups):
            part = slice(gi * og, (gi + 1) * og)
            wv = c.weights(pack_conv(weight[part], bias[part] if bias is not None else None))
            fields = {**common, "weights": wv, "x_offset": gi * cg, "in_channels": cg, "y_offset": gi * og,
                      "out_channels": og}
            c.op("Conv", fields, fused, [xv, wv], [y], decisions)
    c.done.update(fused)
    c.env[last] = (y, NHWC)


def _lower_winograd(c: Builder, xv: int, weight: np.ndarray, bias: np.ndarray | None, padding: tuple[int, int],
                    rv: int, y: int, act: tuple[str, float, float], fused: list[Any], decisions: dict[str, Any]) -> None:
    """A 3x3 stride-1 convolution as Winograd F(2x2, 3x3) (cpu.fbs):
    WinogradInput, 16 1x1 Convs with weights G g G^T, WinogradOutput. The
    16 Convs share one value, the 3x3 kernel, each naming its element of
    G g G^T (Conv.winograd_element: the runtime transforms and packs at
    load), unless options.winograd_expanded_weights asks for G g G^T packed
    here (payload version 2, 16/9 the bytes)."""
    n, oh, ow, oc = c.p.values[y].sizes
    ch = weight.shape[1]
    tiles = n * ((oh + 1) // 2) * ((ow + 1) // 2)
    vb, mb = tiles * ch + 16, tiles * oc + 16  # blocks 64 bytes more than their rows (cpu.fbs)
    v = c.workspace((16, vb))
    m = c.workspace((16, mb))
    c.op("WinogradInput", {"x": xv, "v": v, "padding": padding, "oh": oh, "ow": ow}, fused, [xv], [v], decisions)
    expanded = c.options.winograd_expanded_weights
    u = winograd_weights(weight) if expanded else None  # [16, oc, c]
    kernel = None if expanded else c.weights(weight)  # [oc, c, 3, 3], PyTorch's layout
    for t in range(16):
        vt = c.part(v, t * vb, (tiles, 1, 1, ch))
        mt = c.part(m, t * mb, (tiles, 1, 1, oc))
        wv = c.weights(pack_conv(u[t].reshape(oc, ch, 1, 1), None)) if u is not None else kernel
        fields = {"x": vt, "weights": wv, "residual": -1, "y": mt, "kernel": (1, 1), "stride": (1, 1),
                  "padding": (0, 0), "dilation": (1, 1), "depthwise": False, **epilogue(NO_ACTIVATION)}
        if not expanded:
            fields["winograd_element"] = t
        c.op("Conv", fields, fused, [vt, wv], [mt], decisions)
    bv = c.weights(bias.reshape(-1)) if bias is not None else -1
    fields = {"m": m, "y": y, "bias": bv, "residual": rv, **epilogue(act)}
    c.op("WinogradOutput", fields, fused, [m] + [x for x in (bv, rv) if x >= 0], [y], decisions)


def _taps(p: int, k: int, s: int, pad: int, d: int) -> tuple[list[int], int, int]:
    """(taps ky of output phase p listed by descending ky, the phase
    convolution's padding, its dilation) (see _lower_transposed)."""
    ks = [kk for kk in reversed(range(k)) if (p + pad - kk * d) % s == 0]
    if not ks:
        return [], 0, 1
    return ks, -((p + pad - ks[0] * d) // s), d // math.gcd(s, d)


def _phase(node: Any, py: int, px: int) -> tuple[list[int], list[int], tuple[int, int], tuple[int, int],
                                                  tuple[int, int], tuple[int, int]]:
    """Output phase (py, px) of a transposed convolution as an ordinary one
    of stride 1 (_lower_transposed): (its taps ky, its taps kx, kernel,
    padding before, padding after, dilation); no tap: kernel (1, 1) over
    the bias alone."""
    x, w, _, stride, padding, dilation = node.args[:6]
    _, _, kh, kw = shape(w)
    _, _, h, wi = shape(x)
    _, _, oh, ow = shape(node)
    rows, pad_h, dil_h = _taps(py, kh, stride[0], padding[0], dilation[0])
    cols, pad_w, dil_w = _taps(px, kw, stride[1], padding[1], dilation[1])
    if not (rows and cols):
        rows, cols, pad_h, pad_w, dil_h, dil_w = [], [], 0, 0, 1, 1
    th, tw = max(len(rows), 1), max(len(cols), 1)
    ph, pw = -(-(oh - py) // stride[0]), -(-(ow - px) // stride[1])  # the phase's output size
    # padding after that gives the phase's size: ph = h + before + after - dil * (taps - 1)
    end = (ph - h - pad_h + dil_h * (th - 1), pw - wi - pad_w + dil_w * (tw - 1))
    return rows, cols, (th, tw), (pad_h, pad_w), end, (dil_h, dil_w)


def _phase_padding(node: Any, py: int, px: int) -> tuple[int, int] | None:
    """A depthwise phase's padding before if it and the padding after are
    >= 0 (a depthwise Conv's window: backends/cpu/ops/conv.cpp) or no tap
    lands on it (the bias alone: an ordinary Conv), else None."""
    rows, cols, _, before, after, _ = _phase(node, py, px)
    return before if min(before + after) >= 0 or not (rows and cols) else None


def _lower_transposed(c: Builder, node: Any) -> None:
    """A transposed convolution as stride x stride ordinary convolutions of
    stride 1, one per output phase (py, px), each over the taps that land
    on that phase, then an Interleave. Output row oy = py + sh * t takes
    tap ky from input row t + (py + ph - ky * dh) / sh where that divides;
    listed by descending ky those offsets rise by dh / gcd(sh, dh): a
    convolution with that dilation and padding -(first offset)."""
    x, w, b, stride = node.args[:4]
    weight = c.const(w)  # [c, oc / groups, kh, kw]
    bias = c.const(b) if b is not None else None
    n, oc, oh, ow = shape(node)
    ch = weight.shape[0]
    depthwise = node.args[8] > 1  # supports(): groups == c == oc
    xv = c.nhwc(x)
    ep = epilogue_of(node)  # an activation
    fused, decisions, last, act = ep.nodes, ep.decisions(), ep.last, ep.act
    sh, sw = stride
    phases = []
    for py in range(sh):
        for px in range(sw):
            rows, cols, kernel, pad, end, dil = _phase(node, py, px)
            y = c.workspace((n, -(-(oh - py) // sh), -(-(ow - px) // sw), oc))
            dw = depthwise and bool(rows and cols)  # no tap: an ordinary Conv of zeros, of any size
            if rows and cols:
                wp = weight[:, :, rows][:, :, :, cols]  # [c, oc / groups, taps_h, taps_w]
                wp = wp if dw else wp.transpose(1, 0, 2, 3)  # [oc, c or 1, taps_h, taps_w]
            else:  # no tap lands here: the bias alone
                wp = np.zeros((oc, ch, 1, 1), np.float32)
            wp = np.ascontiguousarray(wp)
            wv = c.weights(pack_depthwise(wp, bias) if dw else pack_conv(wp, bias))
            fields = {"x": xv, "weights": wv, "residual": -1, "y": y, "kernel": kernel, "stride": (1, 1),
                      "padding": pad, "dilation": dil, "depthwise": dw, **epilogue(act)}
            if dw and end != pad:
                fields["padding_end"] = end
            c.op("Conv", fields, fused, [xv, wv], [y], decisions)
            phases.append(y)
    if len(phases) == 1:  # stride 1: the one phase is the output
        y = phases[0]
    else:
        y = c.workspace((n, oh, ow, oc))
        c.op("Interleave", {"xs": phases, "y": y, "stride": (sh, sw)}, fused, phases, [y], decisions)
    c.done.update(fused)
    c.env[last] = (y, NHWC)
