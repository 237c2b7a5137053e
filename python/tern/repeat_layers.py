"""A program of many equal layers from the trace of its first two.

torch.export and the decompositions take time in proportion to the graph:
about a second a layer for a language model's decoder (SmolLM2's 30 layers:
30 s of its 35 s export). Its layers are the same code on weights of the
same shapes, so tern.llm.export traces the first two and this module makes
the others from the second, as torch.export would have traced them:

    ep = <the decomposed ExportedProgram of layers 0 and 1 only>
    whole = repeat_layers(ep, Layers(path, names, count, tensors))
    gm = tern.graph.to_graph_module(whole)

Layer 1's nodes (those whose nn_module_stack holds path(1)) are copied once
for each layer 2 .. count - 1, each copy reading layer i's tensors
(names(i)[j] in place of names(1)[j]) and the previous copy's output where
layer 1 reads layer 0's; the nodes after the layers read the last copy, and
each copy's state updates are outputs beside layer 1's.

It checks what it relies on and raises NotRepeatable where the trace does
not fit (the caller then traces every layer): each layer's nodes are
contiguous, layer 1's are layer 0's node for node with layer 1's tensors
and layer 0's outputs as its inputs, and nothing after the layers reads
layer 0. That two layers trace alike does not make the third like them: the
caller vouches for the module (tern.llm.llama.Block.structure).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

if TYPE_CHECKING:
    import torch


class NotRepeatable(Exception):
    """The trace's layers are not the copies repeat_layers makes (the reason)."""


@dataclass
class Layers:
    """path(i): layer i's module path in nodes' nn_module_stack ("model.blocks.1");
    names(i): the names (graph-signature targets) of layer i's tensors, its
    weights and its state, in the same order for every layer; count: the
    layers of the whole model; tensors: the tensor of each name of layers 2
    and up."""

    path: Callable[[int], str]
    names: Callable[[int], Sequence[str]]
    count: int
    tensors: Mapping[str, "torch.Tensor"]


@dataclass
class Program:
    """What tern.graph.to_graph_module reads of an ExportedProgram."""

    graph_module: "torch.fx.GraphModule"
    graph_signature: Any
    state_dict: dict[str, "torch.Tensor"]
    constants: Mapping[str, Any]


def repeat_layers(ep: "torch.export.ExportedProgram", layers: Layers) -> Program:
    """`ep` (layers 0 and 1 of the model) with layers 2 .. count - 1 made from
    layer 1. Takes ownership of ep.graph_module."""
    from torch.export.graph_signature import ExportGraphSignature, InputSpec, OutputKind, OutputSpec, TensorArgument
    from torch.fx.node import map_arg

    gm = ep.graph_module
    graph = gm.graph
    nodes = list(graph.nodes)
    first, second = _region(nodes, layers.path(0)), _region(nodes, layers.path(1))
    if not first or not second:
        raise NotRepeatable(f"no nodes of {layers.path(0) if not first else layers.path(1)}")
    for region in (first, second):
        if nodes.index(region[-1]) - nodes.index(region[0]) + 1 != len(region):
            inside = next(n for n in nodes[nodes.index(region[0]):] if n not in region)
            raise NotRepeatable(f"{inside.name} ({inside.target}) runs inside a layer's nodes, not of the layer")
    if nodes.index(second[0]) != nodes.index(first[-1]) + 1:
        between = nodes[nodes.index(first[-1]) + 1]
        raise NotRepeatable(f"{between.name} ({between.target}) runs between layers 0 and 1, in neither")
    sig = ep.graph_signature
    by_name = {s.arg.name: s for s in sig.input_specs}
    placeholder = {n.name: n for n in nodes if n.op == "placeholder"}
    names0, names1 = list(layers.names(0)), list(layers.names(1))
    of_layer0 = {by_target: i for i, by_target in enumerate(names0)}
    target_node = {by_name[n].target: placeholder[n] for n in placeholder if by_name[n].target is not None}

    # Layer 1 is layer 0 node for node: same ops, same constants, layer 1's
    # tensors in place of layer 0's, and layer 0's nodes where layer 0 reads
    # what comes before the layers (its inputs).
    corr = dict(zip(first, second))
    inputs: dict[Any, Any] = {}  # a node before the layers that layer 0 reads -> the layer-0 node layer 1 reads there

    def expect(n0: Any, n1: Any, where: Any) -> None:
        if n0 in corr:
            ok = corr[n0] is n1
        elif n0.op == "placeholder" and by_name[n0.name].target in of_layer0:
            ok = n1 is target_node.get(names1[of_layer0[by_name[n0.name].target]])
        elif n1 in corr:  # the layer's input: layer 1 reads layer 0's output where layer 0 reads n0
            ok = inputs.setdefault(n0, n1) is n1
        else:
            ok = n0 is n1
        if not ok:
            raise NotRepeatable(f"layer 1's {where.name} reads {n1.name} where layer 0's reads {n0.name}")

    if len(first) != len(second):
        raise NotRepeatable(f"layer 0 has {len(first)} nodes, layer 1 {len(second)}")
    for a, b in zip(first, second):
        if a.op != b.op or a.target != b.target:
            raise NotRepeatable(f"layer 1's {b.name} is {b.target}, layer 0's {a.name} {a.target}")
        flat_a, flat_b = _flat((a.args, a.kwargs)), _flat((b.args, b.kwargs))
        if len(flat_a) != len(flat_b):
            raise NotRepeatable(f"layer 1's {b.name} and layer 0's {a.name} differ in their arguments")
        for x, y in zip(flat_a, flat_b):
            if _is_node(x) and _is_node(y):
                expect(x, y, b)
            elif _is_node(x) or _is_node(y) or x != y:
                raise NotRepeatable(f"layer 1's {b.name} and layer 0's {a.name} differ in their arguments")
    after = nodes[nodes.index(second[-1]) + 1:]
    out = next(n for n in after if n.op == "output")
    for n in after:
        if n is not out and any(u in corr for u in n.all_input_nodes):
            raise NotRepeatable(f"{n.name}, after the layers, reads layer 0")

    # The new layers' tensors: placeholders as layer 1's, after the last one
    # (torch.export lifts every parameter of the module, used or not: those
    # of layers 2 .. may be there already).
    specs = list(sig.input_specs)
    state_dict = dict(ep.state_dict)
    last_placeholder = [n for n in nodes if n.op == "placeholder"][-1]
    own1 = {target_node[t]: j for j, t in enumerate(names1) if t in target_node}
    news: list[dict[Any, Any]] = []
    for i in range(2, layers.count):
        names = layers.names(i)
        env: dict[Any, Any] = {}
        for p, j in own1.items():
            if names[j] in target_node:  # a parameter of the module the trace left unused
                env[p] = target_node[names[j]]
                continue
            spec = by_name[p.name]
            with graph.inserting_after(last_placeholder):
                q = graph.placeholder(f"{p.name[:2]}{names[j].replace('.', '_')}")
            last_placeholder = q
            q.meta.update(p.meta)
            specs.append(InputSpec(spec.kind, TensorArgument(q.name), names[j], spec.persistent))
            state_dict[names[j]] = layers.tensors[names[j]]
            env[p] = q
        news.append(env)

    # The copies, after layer 1; copy i reads copy i - 1 where layer 1 reads layer 0.
    mutations = {s.arg.name: s for s in sig.output_specs if s.kind == OutputKind.BUFFER_MUTATION}
    results = list(out.args[0])
    out_specs = list(sig.output_specs)
    prev, anchor = {n: n for n in second}, second[-1]
    for i, env in zip(range(2, layers.count), news):
        stack_from, stack_to = layers.path(1), layers.path(i)
        copy: dict[Any, Any] = {}

        def arg(n: Any) -> Any:
            if n in copy:
                return copy[n]
            if n in env:
                return env[n]
            if n in corr:  # layer 0's output: the previous layer's
                return prev[corr[n]]
            return n

        for b in second:
            with graph.inserting_after(anchor):
                c = graph.create_node(b.op, b.target, map_arg(b.args, arg), map_arg(b.kwargs, arg), b.name, b.type)
            c.meta = dict(b.meta)
            if "nn_module_stack" in b.meta:
                c.meta["nn_module_stack"] = {k: (_retarget(v[0], stack_from, stack_to), *v[1:])
                                             for k, v in b.meta["nn_module_stack"].items()}
            copy[b] = anchor = c
        for b in second:
            spec = mutations.get(b.name)
            if spec is not None:
                j = names1.index(spec.target)
                results.append(copy[b])
                out_specs.append(OutputSpec(OutputKind.BUFFER_MUTATION, TensorArgument(copy[b].name),
                                            layers.names(i)[j]))
        prev = copy
    if layers.count > 2:
        for n in after:
            if n is not out:
                n.args, n.kwargs = map_arg(n.args, lambda u: prev.get(u, u)), map_arg(n.kwargs, lambda u: prev.get(u, u))
        kinds = [s.kind for s in sig.output_specs]
        results = [prev.get(r, r) if k == OutputKind.USER_OUTPUT else r for r, k in zip(results, kinds)] + \
            results[len(kinds):]
        out.args = (tuple(results),)
    graph.lint()
    gm.recompile()
    return Program(gm, ExportGraphSignature(specs, out_specs), state_dict, ep.constants)


def _region(nodes: Sequence[Any], path: str) -> list[Any]:
    """The call_function nodes inside module `path`, contiguous or not."""
    return [n for n in nodes if n.op == "call_function"
            and any(v[0] == path for v in (n.meta.get("nn_module_stack") or {}).values())]


def _retarget(name: str, old: str, new: str) -> str:
    return new + name[len(old):] if name == old or name.startswith(old + ".") else name


def _is_node(x: Any) -> bool:
    import torch

    return isinstance(x, torch.fx.Node)


def _flat(value: Any) -> list[Any]:
    """The leaves of nested args (tuples, lists, dicts' values) in order."""
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in _flat(v)]
    if isinstance(value, dict):
        return [leaf for k in sorted(value) for leaf in _flat(value[k])]
    return [value]
