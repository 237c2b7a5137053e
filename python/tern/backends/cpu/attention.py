"""Scaled dot-product attention as one Attention op: float32 q, k, v, a
float or bool mask or causal, grouped-query heads (enable_gqa, or k and v
repeated per head as Hugging Face's repeat_kv writes it), no dropout.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from tern.backends.cpu.ir import PLAIN, VIEWS, Builder, dims, name_of, shape
from tern.errors import ExportError

# the cpu.fbs ops its lowering emits (checked against the runtime's ops.def: __init__.py)
EMITS = ("Attention",)


@dataclass
class Attention:
    """An aten::scaled_dot_product_attention node the backend runs (attention_of)."""
    q: Any
    k: Any
    v: Any
    mask: Any  # None, or a node: a float32 or bool tensor
    causal: bool
    scale: float
    batch: int
    heads: int
    kv_heads: int
    repeats: list[Any]  # the nodes that repeated k and v per head (repeated_kv), read past: lowered with it
    kv_seq_major: bool = False  # k and v are permutes of [b, s, kv_heads, e] tensors (a KV cache), read past
    transposes: tuple[Any, ...] = ()  # those permutes, or the slices of kv_rows: lowered with it
    kv_rows: int = 0  # k and v are slices [:, :, :s] of [b, kv_heads, kv_rows, e] tensors (a KV cache), read past

    @property
    def read_past(self) -> list[Any]:
        """The nodes between k, v and the attention that it reads through."""
        return list(self.repeats) + list(self.transposes)


def repeated_kv(t: Any) -> tuple[Any, int, list[Any]] | None:
    """(t0, r, the nodes passed) if t is the 4-d t0 [b, kvh, s, d] with each
    head repeated r times, as Hugging Face's repeat_kv writes it for
    grouped-query attention: unsqueeze(t0, 2) -> expand([b, kvh, r, s, d]) ->
    [clone] -> view as [b, kvh * r, s, d], each node used once; else None."""
    passed, n = [], t
    if name_of(n) not in VIEWS or len(n.users) != 1:
        return None
    passed.append(n)
    n = n.args[0]
    if name_of(n) == "aten::clone" and len(n.users) == 1:
        passed.append(n)
        n = n.args[0]
    if name_of(n) != "aten::expand" or len(n.users) != 1:
        return None
    passed.append(n)
    u = n.args[0]
    if name_of(u) != "aten::unsqueeze" or len(u.users) != 1 or int(u.args[1]) not in (2, -3):
        return None
    passed.append(u)
    t0 = u.args[0]
    if len(shape(t0)) != 4:
        return None
    b, kvh, s, d = shape(t0)
    r = shape(n)[2]
    if shape(n) != (b, kvh, r, s, d) or shape(t) != (b, kvh * r, s, d):
        return None
    return t0, r, passed


def seq_major(t: Any) -> Any | None:
    """t0 if t is permute(t0, [0, 2, 1, 3]) of a 4-d t0 [b, s, h, d] (the
    layout a KV cache holds, token after token) read by nothing else; else None."""
    if name_of(t) != "aten::permute" or len(t.users) != 1 or [int(d) for d in t.args[1]] != [0, 2, 1, 3]:
        return None
    t0 = t.args[0]
    return t0 if len(shape(t0)) == 4 else None


def cache_rows(t: Any) -> tuple[Any, int] | None:
    """(t0, rows) if t is t0[:, :, :s] of a 4-d t0 [b, h, rows, d] (rows
    fixed: a KV cache laid head after head, sliced to the positions a step
    attends) read by nothing else; else None."""
    if name_of(t) != "aten::slice.Tensor" or len(t.users) != 1 or len(shape(t.args[0])) != 4:
        return None
    t0, args = t.args[0], list(t.args[1:]) + [None] * (4 - len(t.args[1:]))
    dim, start, step = args[0] if args[0] is not None else 0, args[1] or 0, args[3] or 1
    rows = shape(t0)[2]
    if dim not in (2, -2) or start != 0 or step != 1 or not isinstance(rows, int):
        return None
    if shape(t)[:2] != shape(t0)[:2] or shape(t)[3] != shape(t0)[3]:
        return None
    return t0, rows


def repeat_claimed(node: Any) -> bool:
    """node is one of the nodes an Attention reads past (repeated_kv, a
    seq-major k or v): its chain of single users reaches an attention the
    backend runs that lists it."""
    n = node
    for _ in range(5):
        if len(n.users) != 1:
            return False
        n = next(iter(n.users))
        if name_of(n) == "aten::scaled_dot_product_attention":
            at = attention_of(n)
            return not isinstance(at, str) and node in at.read_past
    return False


_SDPA_ARGS = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")


def attention_of(node: Any) -> Attention | str:
    """What the cpu backend's Attention op needs of an SDPA node, or why it
    cannot run it: it takes float32 q, k, v of rank 3 or 4 with the same
    leading dims (heads may be fewer in k and v than in q when grouped), no
    dropout, a mask that is a float32 or bool tensor broadcasting to the
    scores, or causal, not both."""
    import torch

    if name_of(node) != "aten::scaled_dot_product_attention":
        return "not a scaled_dot_product_attention"
    a = dict(zip(_SDPA_ARGS, node.args))
    a.update(node.kwargs)
    q, k, v, mask = a["query"], a["key"], a["value"], a.get("attn_mask")
    gqa, repeats = a.get("enable_gqa", False), []
    rk, rv = repeated_kv(k), repeated_kv(v)
    if rk is not None and rv is not None and rk[1] == rv[1] and not gqa:  # read the heads once each
        (k, _, pk), (v, _, pv) = rk, rv
        gqa, repeats = True, pk + pv
    dropout, causal, scale = a.get("dropout_p", 0.0), bool(a.get("is_causal", False)), a.get("scale")
    vals = [getattr(t, "meta", {}).get("val") for t in (q, k, v)] + [node.meta.get("val")]
    if any(not isinstance(t, torch.Tensor) or t.dtype != torch.float32 for t in vals):
        return "attention over tensors that are not all float32"
    if dropout:
        return "attention with dropout"
    qs, ks, vs = (dims(t) for t in vals[:3])
    if len(qs) not in (3, 4) or not len(qs) == len(ks) == len(vs) or qs[:-3] != ks[:-3] or ks[:-3] != vs[:-3]:
        return "attention whose q, k, v are not all 3-d or all 4-d with the same batch"
    lead = qs[:-3] if len(qs) == 4 else ()
    heads, kv_heads = qs[-3], ks[-3]
    if len(qs) == 3:  # [batch, l, e]: one head
        lead, heads, kv_heads = (qs[0],), 1, 1
        if ks[0] != qs[0] or vs[0] != qs[0]:
            return "attention whose q, k, v batches differ"
    if ks[-1] != qs[-1] or vs[-2] != ks[-2] or vs[-3] != ks[-3] or heads % kv_heads or (
            kv_heads != heads and not gqa):
        return "attention whose q, k, v sizes do not match (heads, lengths or embedding)"
    if min(qs + ks + vs) < 1:
        return "attention over an empty tensor"
    if mask is not None:
        refusal = _mask_refusal(mask, causal, (lead[0] if lead else 1, heads, qs[-2], ks[-2]))
        if refusal is not None:
            return refusal
    e = qs[-1]
    at = Attention(q, k, v, mask, causal, float(scale) if scale is not None else 1.0 / math.sqrt(e),
                   lead[0] if lead else 1, heads, kv_heads, repeats)
    k0, v0 = seq_major(k), seq_major(v)
    if len(qs) == 4 and not repeats and k0 is not None and v0 is not None:
        at.k, at.v, at.kv_seq_major, at.transposes = k0, v0, True, (k, v)
    kc, vc = cache_rows(k), cache_rows(v)
    if len(qs) == 4 and not repeats and kc is not None and vc is not None and kc[1] == vc[1]:
        at.k, at.v, at.kv_rows, at.transposes = kc[0], vc[0], kc[1], (k, v)
    return at


def _mask_refusal(mask: Any, causal: bool, full: tuple[int, int, int, int]) -> str | None:
    import torch

    m = getattr(mask, "meta", {}).get("val")
    if causal:
        return "attention with both a mask and is_causal"
    if not isinstance(m, torch.Tensor) or m.dim() > 4:
        return "attention with a mask that is not a tensor of at most 4 dims"
    if m.dtype not in (torch.float32, torch.bool):
        return f"attention with a {str(m.dtype).replace('torch.', '')} mask (float32 or bool run)"
    ms = (1,) * (4 - m.dim()) + dims(m)
    if any(d not in (1, f) for d, f in zip(ms, full)):
        return "attention with a mask that does not broadcast to the scores"
    return None


def supports(node: Any) -> str | None:
    at = attention_of(node)
    return at if isinstance(at, str) else None


def lower(c: Builder, node: Any) -> None:
    at = attention_of(node)
    if isinstance(at, str):
        raise ExportError(f"cpu backend: node {node.name} is not an attention pattern: {at}")
    qv, kv, vv = c.plain(at.q), c.plain(at.k), c.plain(at.v)
    l, e = shape(at.q)[-2:]
    s, ev = (shape(at.v)[-3], shape(at.v)[-1]) if at.kv_seq_major else shape(at.transposes[1] if at.kv_rows else at.v)[-2:]
    reads = [qv, kv, vv]
    mv = -1
    if at.mask is not None:
        if not at.mask.meta["val"].is_floating_point() and at.mask.op == "get_attr":  # a constant bool mask
            allowed = c.const_bool(at.mask)
            mv = c.alias(c.weights(np.where(allowed, 0.0, -np.inf).astype(np.float32).reshape(-1)),
                         tuple(allowed.shape) or (1,))
        else:  # float32, or bool computed at run time (a Bool value: false masks out)
            mv = c.plain(at.mask)
        reads.append(mv)
    kpanels, vpanels = (s + 15) // 16, (ev + 15) // 16
    packed = c.workspace((at.batch * at.kv_heads * (kpanels * 16 * (1 + e) + vpanels * 16 * (1 + s)),))
    y = c.workspace(shape(node))
    fields = {"q": qv, "k": kv, "v": vv, "y": y, "mask": mv, "packed": packed, "causal": at.causal,
              "scale": at.scale, "batch": at.batch, "heads": at.heads, "kv_heads": at.kv_heads,
              "l": l, "s": s, "e": e, "ev": ev}
    if at.kv_seq_major:
        fields["kv_seq_major"] = True
    if at.kv_rows:
        fields["kv_rows"] = at.kv_rows
    c.op("Attention", fields, [node], reads + [packed], [y, packed])
    c.env[node] = (y, PLAIN)
