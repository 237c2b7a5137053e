"""The exporter's graph form, and where a node came from in the user's code.

`to_graph_module` turns a decomposed torch.export ExportedProgram into a plain
torch.fx GraphModule in which:
  - placeholders are the user's inputs, in argument order, then the model's
    state: one placeholder per buffer that forward mutates, with
    meta["tern_state"] = StateBuffer (its name and value at export);
  - parameters, buffers that are only read and lifted constants are
    `get_attr` nodes whose attribute is a tensor registered on the module
    (passes add new ones the same way, see `add_constant`);
  - the output node returns the user's outputs, in order, then the new value
    of each state buffer, in the order of the state placeholders.
So `gm(*user_inputs, *state)` runs the model in PyTorch (state: the buffers'
values, see `state_buffers`) and returns (*user_outputs, *new_state), which
tests use as the oracle after every pass.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tern.errors import ExportError

if TYPE_CHECKING:
    import torch
    import torch.fx


@dataclass(frozen=True)
class StateBuffer:
    """A buffer the model's forward mutates: the method keeps it between calls."""

    name: str  # its name in the user's module, e.g. "cell.hidden"
    initial: "torch.Tensor"  # its value when the model was exported


def to_graph_module(ep: "torch.export.ExportedProgram") -> "torch.fx.GraphModule":
    """The GraphModule form described above (takes ownership of ep.graph_module)."""
    from torch.export.graph_signature import InputKind, OutputKind

    gm = ep.graph_module
    sig = ep.graph_signature
    placeholders = {n.name: n for n in gm.graph.nodes if n.op == "placeholder"}
    anchor = next(n for n in gm.graph.nodes if n.op != "placeholder")
    bad = [s for s in sig.output_specs if s.kind not in (OutputKind.USER_OUTPUT, OutputKind.BUFFER_MUTATION)]
    if bad:
        what = "; ".join(_output_kind(s) for s in bad)
        raise ExportError(f"the model's forward {what}: Tern keeps only buffers as state between calls")
    mutated = {s.target for s in sig.output_specs if s.kind == OutputKind.BUFFER_MUTATION}
    state: list["torch.fx.Node"] = []
    for spec in sig.input_specs:
        node = placeholders[spec.arg.name]
        if spec.kind == InputKind.USER_INPUT:
            continue
        if spec.kind not in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
            raise ExportError(f"input {node.name} of kind {spec.kind.name} is not supported")
        tensor = ep.state_dict.get(spec.target)
        if tensor is None:
            tensor = ep.constants[spec.target]
        if spec.kind == InputKind.BUFFER and spec.target in mutated:
            node.meta["tern_state"] = StateBuffer(spec.target, tensor.detach().clone())
            state.append(node)
            continue
        with gm.graph.inserting_before(anchor):
            attr = add_constant(gm, node.name, tensor)
        attr.meta.update({k: v for k, v in node.meta.items() if k != "val"})
        node.replace_all_uses_with(attr)
        gm.graph.erase_node(node)
    # State placeholders after the user's inputs, outputs likewise.
    last = [n for n in gm.graph.nodes if n.op == "placeholder" and "tern_state" not in n.meta]
    for node in state:
        if last:
            last[-1].append(node)
        last.append(node)
    output = next(n for n in gm.graph.nodes if n.op == "output")
    results = list(output.args[0])
    by_kind = {k: [(s, r) for s, r in zip(sig.output_specs, results) if s.kind == k] for k in OutputKind}
    new_value = {s.target: r for s, r in by_kind[OutputKind.BUFFER_MUTATION]}
    output.args = ([r for _, r in by_kind[OutputKind.USER_OUTPUT]] + [new_value[n.meta["tern_state"].name] for n in state],)
    gm.graph.lint()
    gm.recompile()
    return gm


def _output_kind(spec: "torch.export.graph_signature.OutputSpec") -> str:
    from torch.export.graph_signature import OutputKind

    if spec.kind == OutputKind.USER_INPUT_MUTATION:
        return (f"writes to its input {spec.target!r} (Tern inputs are read-only: "
                "write to a clone, or keep the value in a registered buffer)")
    return f"has an output {spec.arg.name} of kind {spec.kind.name}"


def state_buffers(gm: "torch.fx.GraphModule") -> list[StateBuffer]:
    """The model's state, in the order of its placeholders (see to_graph_module)."""
    return [n.meta["tern_state"] for n in gm.graph.nodes if n.op == "placeholder" and "tern_state" in n.meta]


def add_constant(gm: "torch.fx.GraphModule", name: str, tensor: "torch.Tensor") -> "torch.fx.Node":
    """Registers `tensor` on gm under a fresh attribute name and returns a get_attr node
    for it, inserted at the graph's current insertion point."""
    base = re.sub(r"\W", "_", name)
    attr, i = base, 1
    while hasattr(gm, attr):
        attr, i = f"{base}_{i}", i + 1
    gm.register_buffer(attr, tensor.detach())
    node = gm.graph.get_attr(attr)
    node.meta["val"] = getattr(gm, attr)
    return node


def constant_of(gm: "torch.fx.GraphModule", node: "torch.fx.Node") -> "torch.Tensor | None":
    """The tensor behind a get_attr node, or None for any other node."""
    if node.op != "get_attr":
        return None
    return getattr(gm, node.target)


def drop_unused_constants(gm: "torch.fx.GraphModule") -> None:
    """Removes get_attr nodes without users and their attributes."""
    for node in list(gm.graph.nodes):
        if node.op == "get_attr" and not node.users:
            gm.graph.erase_node(node)
    used = {n.target for n in gm.graph.nodes if n.op == "get_attr"}
    for name in [b for b, _ in gm.named_buffers(recurse=False) if b not in used]:
        delattr(gm, name)


@dataclass(frozen=True)
class Frame:
    """One frame of a node's stack trace."""

    file: str
    line: int
    function: str
    code: str

    def short(self) -> str:
        """"model.py:12 in forward: return x + 1" (as stored in DebugInfo.source)."""
        return f"{os.path.basename(self.file)}:{self.line} in {self.function}: {self.code}"

    def long(self, indent: str = "") -> str:
        """The traceback form, with the full path, for error messages."""
        return f'File "{self.file}", line {self.line}, in {self.function}\n{indent}    {self.code}'


_FRAME = re.compile(r'^\s*File "(.+)", line (\d+), in (.+?)\s*$')


def frames(stack_trace: str | None) -> list[Frame]:
    """Parses torch.export's node.meta["stack_trace"] (outermost frame first)."""
    lines = (stack_trace or "").splitlines()
    out = []
    for i, text in enumerate(lines):
        m = _FRAME.match(text)
        if m:
            code = lines[i + 1].strip() if i + 1 < len(lines) and not _FRAME.match(lines[i + 1]) else ""
            out.append(Frame(m.group(1), int(m.group(2)), m.group(3), code))
    return out


def user_frame(node: "torch.fx.Node") -> Frame | None:
    """Where `node` came from: the innermost frame outside torch itself and
    outside code torch generated ("<eval_with_key>.5", the graphs of
    torch.cond branches): the user's line; else the innermost frame; None
    without a stack trace."""
    import torch

    torch_dir = os.path.dirname(torch.__file__) + os.sep
    stack = frames(node.meta.get("stack_trace"))
    outside = [f for f in stack if not f.file.startswith(torch_dir) and not f.file.startswith("<")]
    return (outside or stack or [None])[-1]


def call_function(g: "torch.fx.Graph", target: Any, args: tuple[Any, ...],
                  kwargs: dict[str, Any] | None = None) -> "torch.fx.Node":
    """A new call_function node with meta["val"] computed from its arguments' values."""
    import torch
    from torch._guards import detect_fake_mode

    node = g.call_function(target, args, kwargs or {})

    def value(a: Any) -> Any:
        if isinstance(a, torch.fx.Node):
            return a.meta["val"]
        if isinstance(a, (list, tuple)):
            return type(a)(value(b) for b in a)
        return a

    vals = value(args)
    fake = detect_fake_mode([v for v in torch.utils._pytree.tree_leaves(vals) if isinstance(v, torch.Tensor)])
    if fake is None:
        node.meta["val"] = target(*vals, **(kwargs or {}))
    else:
        vals = torch.utils._pytree.tree_map(
            lambda v: fake.from_tensor(v, static_shapes=True) if isinstance(v, torch.Tensor) and not isinstance(
                v, torch._subclasses.fake_tensor.FakeTensor) else v, vals)
        with fake:
            node.meta["val"] = target(*vals, **(kwargs or {}))
    return node
