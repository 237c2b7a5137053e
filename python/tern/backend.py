"""Handing subgraphs to backends: the exporter's partitioner hook (format 1.1).

A backend (runtime/backend/backend.h) runs whole subgraphs that the exporter
handed to it, from a payload in its own format. Its Python side is a
Partitioner: which nodes it can run, and the payload for a subgraph.

    class MyPartitioner(tern.Partitioner):
        backend = "mine"                        # the runtime backend's registered name
        def supports(self, node): ...           # a call_function node of the exported graph
        def preprocess(self, subgraph): ...     # -> bytes (the payload)

    program = tern.export(model, (x,), partitioners=[MyPartitioner()])

For each partitioner in turn, the connected groups of nodes it supports (that
no earlier partitioner took) become one delegate each: a BackendCall
instruction in the file whose inputs are the values the group reads from the
rest of the graph and whose outputs are the values the rest reads from it.
Constants the group reads (weights) move into the subgraph as its own
attributes, so the payload can carry them in the layout the backend wants
(e.g. packed for its microkernels); they are not delegate inputs. But a
constant the rest of the graph reads too, which the file holds anyway,
stays a delegate input where the partitioner's `shares_constant` says its
backend reads it as it is (the file then holds it once).

Dynamic shapes (format 1.3): a partitioner whose `dynamic_shapes` is True
is asked about nodes whose sizes depend on the method's dynamic dims too
(else they stay on the portable kernels), and must then write a payload
that reads those sizes from its inputs at each call, and a backend that
implements Backend::reshape. Integers computed from sizes (aten.sym_size,
products of them) are never claimed: in the subgraph, a node's argument
that was one is its upper bound, and the node's meta["val"] carries the
symbolic sizes. Every dynamic dim a subgraph uses is a dim of one of its
inputs: where none of the group's inputs has it, a method input that has
it is added as an input (only its shape is read).

`preprocess` receives the subgraph as a torch.fx GraphModule whose
placeholders are the delegate's inputs in order (each with meta["val"], a
fake tensor giving dtype and shape), whose get_attr nodes are its constants,
and whose output is the tuple (or single value) of its outputs in order. It
returns the payload, or a Lowered with the payload and the bytes of
workspace the backend needs while it runs: the exporter then plans that many
bytes in the method's arena (shared with other tensors between calls) and
passes them as the delegate's last output.
"""
from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from tern.errors import ExportError

if TYPE_CHECKING:
    import torch
    import torch.fx

# Set on a delegated submodule of the exporter's graph: (backend name,
# payload, workspace bytes or -1).
DELEGATE_ATTR = "_tern_delegate"


@dataclass(frozen=True)
class Lowered:
    """What preprocess returns when the backend needs workspace memory."""

    payload: bytes
    workspace_bytes: int


class Partitioner(abc.ABC):
    """What a backend claims, and how it lowers a claimed subgraph."""

    #: The name the runtime backend registers under (tern::register_backend).
    backend: str = ""
    #: Whether supports() is asked about nodes of dynamic sizes (see the module doc).
    dynamic_shapes: bool = False

    @abc.abstractmethod
    def supports(self, node: "torch.fx.Node") -> bool:
        """True if the backend can run this call_function node."""

    @abc.abstractmethod
    def preprocess(self, subgraph: "torch.fx.GraphModule") -> "bytes | Lowered":
        """The payload for one claimed subgraph (see the module doc)."""

    def keep(self, nodes: Sequence["torch.fx.Node"]) -> bool:
        """Whether a proposed group of supported nodes is worth a delegate
        (e.g. not a lone reshape). Default: always."""
        return True

    def shares_constant(self, placeholder: "torch.fx.Node") -> bool:
        """Whether the backend reads the constant a subgraph's placeholder
        stands for as a delegate input, as the file holds it, when the rest
        of the graph reads that constant too (then the file holds it once).
        Default: never (the constant moves into the subgraph)."""
        return False


def delegate(gm: "torch.fx.GraphModule", partitioners: Sequence[Partitioner]) -> "torch.fx.GraphModule":
    """Hands the subgraphs each partitioner supports to its backend, in order.

    Each claimed group becomes a call_module node whose submodule carries
    DELEGATE_ATTR = (backend, payload); the emitter turns it into a
    BackendCall instruction."""
    for p in partitioners:
        if not isinstance(p, Partitioner) or not p.backend:
            raise ExportError(f"partitioners must be tern.Partitioner with a backend name, got {p!r}")
        gm = _delegate_one(gm, p)
    return gm


def _delegate_one(gm: "torch.fx.GraphModule", p: Partitioner) -> "torch.fx.GraphModule":
    from torch.fx.passes.utils.fuser_utils import fuse_by_partitions

    from tern.partition import propose_partitions
    from tern.shapes import has_dynamic_shape, is_symbolic

    def supported(node: "torch.fx.Node") -> bool:
        if node.op != "call_function" or is_symbolic(node):
            return False
        # A backend takes dynamic shapes only if it says so.
        return (p.dynamic_shapes or not has_dynamic_shape(node)) and bool(p.supports(node))

    # The groups torch.fx's CapabilityBasedPartitioner would propose, found fast (tern.partition).
    proposed = propose_partitions(gm, supported, allows_single_node_partition=True)
    partitions = [q for q in proposed if p.keep(list(q.nodes))]
    if not partitions:
        return gm
    existing = {name for name, _ in gm.named_children()}
    fused = fuse_by_partitions(gm, [q.nodes for q in partitions], prefix="fused_")
    for node in list(fused.graph.nodes):
        if node.op == "call_module" and node.target not in existing:
            _inline_constants(fused, node, p)
            _bound_symbolic_args(fused, node)
            sub = fused.get_submodule(node.target)
            sub.recompile()
            lowered = p.preprocess(sub)
            if isinstance(lowered, (bytes, bytearray)):
                lowered = Lowered(bytes(lowered), -1)
            if not isinstance(lowered, Lowered) or not isinstance(lowered.payload, (bytes, bytearray)):
                raise ExportError(
                    f"partitioner {type(p).__name__}.preprocess returned {type(lowered).__name__}, not bytes or Lowered"
                )
            setattr(sub, DELEGATE_ATTR, (p.backend, bytes(lowered.payload), lowered.workspace_bytes))
    fused.graph.lint()
    fused.recompile()
    return fused


def _inline_constants(gm: "torch.fx.GraphModule", call: "torch.fx.Node", p: Partitioner) -> None:
    """Moves the constants (get_attr arguments) of a delegate's call into its
    submodule: the placeholder becomes a get_attr of the submodule's own copy;
    but one the rest of the graph reads too stays an input where
    p.shares_constant says so."""
    sub = gm.get_submodule(call.target)
    placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
    keep, moved = [], []
    for arg, ph in zip(call.args, placeholders):
        if getattr(arg, "op", None) != "get_attr" or (any(u is not call for u in arg.users) and p.shares_constant(ph)):
            keep.append(arg)
            continue
        moved.append(arg)
        sub.register_buffer(ph.target, getattr(gm, arg.target))
        with sub.graph.inserting_before(ph):
            attr = sub.graph.get_attr(ph.target)
        attr.meta.update(ph.meta)
        ph.replace_all_uses_with(attr)
        sub.graph.erase_node(ph)
    call.args = tuple(keep)
    for arg in dict.fromkeys(moved):
        if not arg.users:
            gm.graph.erase_node(arg)


def _bound_symbolic_args(gm: "torch.fx.GraphModule", call: "torch.fx.Node") -> None:
    """A delegate's arguments that are integers computed from sizes become
    their upper bounds inside its subgraph (the backend reads sizes from its
    inputs' shapes); a dynamic dim its subgraph uses that none of its inputs
    has comes in with a method input that has it (see the module doc)."""
    import torch
    import torch.utils._pytree as pytree

    from tern.shapes import is_symbolic

    sub = gm.get_submodule(call.target)
    placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
    keep = []
    for arg, ph in zip(call.args, placeholders):
        if not is_symbolic(arg):
            keep.append(arg)
            continue
        value = arg.meta["val"]
        bound = int(value.node.shape_env.bound_sympy(value.node.expr).upper)
        for user in list(ph.users):
            user.args = pytree.tree_map(lambda a: bound if a is ph else a, user.args)
            user.kwargs = pytree.tree_map(lambda a: bound if a is ph else a, user.kwargs)
        sub.graph.erase_node(ph)
    if len(keep) == len(call.args) and not any(has_dynamic(n) for n in sub.graph.nodes):
        return
    call.args = tuple(keep)

    def symbols_of(vals: Any) -> set[Any]:
        out: set[Any] = set()
        for v in pytree.tree_leaves(vals):
            if isinstance(v, torch.Tensor):
                for s in v.shape:
                    if isinstance(s, torch.SymInt):
                        out |= s.node.expr.free_symbols
        return out

    def given(vals: Any) -> set[Any]:
        return {s.node.expr for v in pytree.tree_leaves(vals) if isinstance(v, torch.Tensor)
                for s in v.shape if isinstance(s, torch.SymInt) and s.node.expr.is_Symbol}

    needed = symbols_of([n.meta.get("val") for n in sub.graph.nodes])
    have = given([n.meta.get("val") for n in sub.graph.nodes if n.op == "placeholder"])
    last = [n for n in sub.graph.nodes if n.op == "placeholder"]
    for inp in (n for n in gm.graph.nodes if n.op == "placeholder"):
        extra = given(inp.meta.get("val")) & (needed - have)
        if not extra:
            continue
        anchor = last[-1] if last else next(iter(sub.graph.nodes))
        insert = sub.graph.inserting_after(anchor) if last else sub.graph.inserting_before(anchor)
        with insert:
            ph = sub.graph.placeholder(f"shape_of_{inp.name}")
        ph.meta.update(inp.meta)
        last.append(ph)
        call.args = call.args + (inp,)
        have |= extra
    if needed - have:
        raise ExportError(f"dynamic sizes {sorted(map(str, needed - have))} of a {call.target} subgraph are no dim "
                          "of any input")


def has_dynamic(node: "torch.fx.Node") -> bool:
    from tern.shapes import has_dynamic_shape

    return node.op == "call_function" and has_dynamic_shape(node)


def delegate_of(module: Any) -> tuple[str, bytes, int] | None:
    """(backend, payload, workspace bytes or -1 for none) if `module` is a
    delegated submodule, else None."""
    return getattr(module, DELEGATE_ATTR, None)
