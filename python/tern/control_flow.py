"""torch.cond and torch.while_loop in the exporter's graph.

torch.export keeps them as higher-order ops whose branches and loop bodies
are GraphModules of their own, reached through get_attr nodes:

    cond(pred, true_graph, false_graph, operands)            -> tuple of tensors
    while_loop(cond_graph, body_graph, carried, additional)  -> tuple (the carried values at the end)

The branch, condition and body graphs take the operands (cond) or the
carried then the additional inputs (while_loop) as placeholders, and return
their results as a tuple (a while_loop condition: one bool tensor).

Here: finding them (`control_flow_nodes`, `subgraphs`), and moving the
constants a subgraph reads (weights, lifted as operands by torch.export)
into the subgraph as its own get_attr nodes (`inline_constant_operands`), so
the passes (batch-norm folding, constant folding) and the backends' packing
see them as constants there too. emit.py lowers both ops to jumps.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator

from tern.graph import add_constant, constant_of

if TYPE_CHECKING:
    import torch.fx


def is_cond(node: "torch.fx.Node") -> bool:
    import torch

    return node.op == "call_function" and node.target is torch.ops.higher_order.cond


def is_while_loop(node: "torch.fx.Node") -> bool:
    import torch

    return node.op == "call_function" and node.target is torch.ops.higher_order.while_loop


def control_flow_nodes(gm: "torch.fx.GraphModule") -> list["torch.fx.Node"]:
    return [n for n in gm.graph.nodes if is_cond(n) or is_while_loop(n)]


def branch_targets(node: "torch.fx.Node") -> tuple[str, str]:
    """The attribute names of (true, false) of a cond, (cond, body) of a while_loop."""
    first, second = (node.args[1], node.args[2]) if is_cond(node) else (node.args[0], node.args[1])
    return first.target, second.target


def branch_modules(gm: "torch.fx.GraphModule", node: "torch.fx.Node") -> tuple["torch.fx.GraphModule", ...]:
    """(true, false) of a cond, (cond, body) of a while_loop."""
    return tuple(getattr(gm, t) for t in branch_targets(node))


def subgraphs(gm: "torch.fx.GraphModule") -> Iterator["torch.fx.GraphModule"]:
    """Every branch, condition and body graph of gm's control flow, nested ones included."""
    for node in control_flow_nodes(gm):
        for sub in branch_modules(gm, node):
            yield sub
            yield from subgraphs(sub)


def for_each_graph(gm: "torch.fx.GraphModule", fn: Callable[["torch.fx.GraphModule"], Any]) -> None:
    """Calls fn on gm and then on each of its subgraphs (which fn may rewrite in place)."""
    fn(gm)
    for sub in list(subgraphs(gm)):
        fn(sub)


def inline_constant_operands(gm: "torch.fx.GraphModule") -> None:
    """Moves each constant operand of a cond (and each constant additional
    input of a while_loop) into the subgraphs that read it, outermost first."""
    for node in control_flow_nodes(gm):
        subs = branch_modules(gm, node)
        if is_cond(node):
            operands, first = list(node.args[3]), 0
        else:
            operands, first = list(node.args[3]), len(node.args[2])
        keep = []
        for j, op in enumerate(operands):
            tensor = constant_of(gm, op) if hasattr(op, "op") else None
            if tensor is None:
                keep.append(op)
                continue
            for sub in subs:
                ph = [n for n in sub.graph.nodes if n.op == "placeholder"][first + len(keep)]
                with sub.graph.inserting_before(ph):
                    attr = add_constant(sub, op.target, tensor)
                ph.replace_all_uses_with(attr)
                sub.graph.erase_node(ph)
        args = list(node.args)
        args[3] = tuple(keep)
        node.args = tuple(args)
        for sub in subs:
            sub.graph.lint()
            sub.recompile()
            inline_constant_operands(sub)
