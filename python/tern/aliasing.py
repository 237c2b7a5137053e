"""Views without copies: ops whose result is a contiguous run of their input's
elements alias it in the memory plan instead of copying it.

In eager PyTorch, view, reshape, squeeze, unsqueeze, flatten, slice, select
and expand return views. Tensors in the file are contiguous and row-major, so
a view is free when its elements are one contiguous run of its source's,
in the same order:
  - aten::view, _unsafe_view, squeeze.dim(s), unsqueeze, alias: the same
    elements (byte offset 0);
  - aten::expand that expands nothing (the same sizes);
  - aten::slice.Tensor with step 1 and aten::select.int, where every dim
    before the sliced one has size 1: the elements from start (or index)
    times the size of one step of that dim.
Such an instruction is dropped; its out tensor gets no bytes of its own but
the source's, from that offset (MemoryPlan.aliases); its source stays live
as long as the view is used. A view of a view aliases the first source.

Not aliased (the op copies, as before): views of constants (torch.export
folds most of them), of tensors that Moves write (state, loop-carried values
and branch results: their bytes change while a view would still read them),
views that are method outputs of a method input (an application may set the
next inputs before it reads the outputs), offsets that are not a multiple of
64 bytes (kernels and backends may assume aligned tensors) or depend on the
dynamic sizes, and views that would not fit in their source's planned bytes
at the shapes' upper bounds.
"""
from __future__ import annotations

from dataclasses import dataclass

from tern.emit import Instr, MethodIR, TensorInfo

# Ops that are free when their result is a contiguous run of the source.
WHOLE = frozenset({"aten::view", "aten::_unsafe_view", "aten::squeeze.dim", "aten::squeeze.dims", "aten::unsqueeze",
                   "aten::alias"})
ALIGNMENT = 64


@dataclass(frozen=True)
class Alias:
    root: int  # the tensor value whose bytes it uses (itself not an alias)
    offset: int  # bytes from the root's first byte


def alias_views(method: MethodIR) -> dict[int, Alias]:
    """Drops the instructions of views that can alias their source (see the
    module doc) from `method`, renumbering jumps; returns the aliases."""
    moved = {ins.args[1] for ins in method.instructions if ins.move}
    inputs = set(method.inputs)
    outputs = set(method.outputs)
    aliases: dict[int, Alias] = {}
    keep: list[bool] = []
    for ins in method.instructions:
        found = _alias_of(method, ins, aliases, moved)
        if found is not None:
            out = ins.args[-1]
            if out in outputs and found.root in inputs:
                found = None
        if found is None:
            keep.append(True)
            continue
        aliases[ins.args[-1]] = found
        keep.append(False)
    if aliases:
        _drop(method, keep)
    return aliases


def _alias_of(method: MethodIR, ins: Instr, aliases: dict[int, Alias], moved: set[int]) -> Alias | None:
    if ins.op < 0 or ins.move or ins.jump is not None or ins.delegate is not None:
        return None
    name = method.operators[ins.op]
    src, out = ins.args[0], ins.args[-1]
    values = method.values
    if values[src].kind != "Tensor" or values[out].kind != "Tensor":
        return None
    s, o = values[src].data, values[out].data
    if s.scalar_type != o.scalar_type:
        return None
    if name in WHOLE:
        delta = 0
    elif name == "aten::expand":
        if (s.sizes, s.dyn) != (o.sizes, o.dyn):
            return None
        delta = 0
    elif name == "aten::slice.Tensor":
        delta = _run_offset(method, s, ins.args[1], ins.args[2], ins.args[4])
    elif name == "aten::select.int":
        delta = _run_offset(method, s, ins.args[1], ins.args[2], None)
    else:
        return None
    if delta is None:
        return None
    base = aliases.get(src, Alias(src, 0))
    root = values[base.root].data
    offset = base.offset + delta
    if root.constant is not None or root.nbytes == 0 or base.root in moved or src in moved:
        return None
    if offset % ALIGNMENT or offset + o.nbytes > root.nbytes:
        return None
    return Alias(base.root, offset)


def _int(method: MethodIR, index: int) -> int | None:
    """A static Int value, else None (None value, or one computed from sizes)."""
    v = method.values[index]
    return v.data if v.kind == "Int" and v.expr is None else None


def _run_offset(method: MethodIR, s: TensorInfo, dim_index: int, start_index: int, step_index: int | None) -> int | None:
    """Byte offset of a slice (step given) or select (step None) of `s` that
    is one contiguous run, or None."""
    dim, start = _int(method, dim_index), method.values[start_index]
    if dim is None or not s.sizes:
        return None
    rank = len(s.sizes)
    dim = dim + rank if dim < 0 else dim
    dyn = s.dyn or (-1,) * rank
    if not 0 <= dim < rank or any(s.sizes[d] != 1 or dyn[d] >= 0 for d in range(dim)):
        return None
    if step_index is not None and _int(method, step_index) != 1:
        return None
    if start.kind == "None":
        first = 0
    elif start.kind == "Int" and start.expr is None:
        first = start.data
    else:
        return None
    if first == 0:
        return 0
    if any(e >= 0 for e in dyn[dim:]):  # the offset would change with the sizes
        return None
    first = first + s.sizes[dim] if first < 0 else first  # counted from the end
    if not 0 < first < s.sizes[dim]:
        return None
    inner = 1
    for n in s.sizes[dim + 1:]:
        inner *= n
    return first * inner * (s.nbytes // max(1, _numel(s.sizes)))


def _numel(sizes: tuple[int, ...]) -> int:
    n = 1
    for x in sizes:
        n *= x
    return n


def _drop(method: MethodIR, keep: list[bool]) -> None:
    """Removes the instructions not kept; a jump to a removed instruction
    goes to the next kept one."""
    new_index = []
    count = 0
    for k in keep:
        new_index.append(count)
        count += k
    new_index.append(count)  # the end
    kept = [ins for ins, k in zip(method.instructions, keep) if k]
    for ins in kept:
        if ins.jump is not None:
            ins.jump = new_index[ins.jump]
    method.instructions = kept
    # Operators only dropped instructions used leave the table.
    used = sorted({ins.op for ins in kept if ins.op >= 0})
    renumber = {old: new for new, old in enumerate(used)}
    method.operators = [method.operators[i] for i in used]
    for ins in kept:
        if ins.op >= 0:
            ins.op = renumber[ins.op]
