"""State written in place: a state tensor whose new value is its old value
with some elements replaced (x.index_copy_(dim, idx, v), x[idx] = v,
x[a:b] = v: aten::index_put, index_copy, slice_scatter of the state) is
updated where it lies, instead of built whole in a new tensor and then
moved back.

The method emit writes (tern.emit) computes every new state value in a
tensor of its own and ends with one Move per state, new value -> state.
For a KV cache that is two copies of the whole cache per call where one
row changes. When the instruction that makes the new value reads the
state as its `self` argument and nothing else reads the state, the kernel
can write into the state itself: every portable kernel of these ops
copies self into out first and skips that copy when out is self
(kernels/portable/util/copy.h, copy_bytes), then writes the new elements.
So that instruction's out becomes the state, every later read of the new
value reads the state, and the Move goes.

Conditions (else the method stays as it was): no loops (a jump back could
run the write before a read of the old value); the state is read by that
one instruction only (no view of the old value can outlive the write); the
new value is not a method output (an output must not be memory the next
call changes); the instruction reads the state once.
"""
from __future__ import annotations

from tern.emit import MethodIR, Value

# Ops whose out is self with some elements replaced: args[0] is self.
IN_PLACE_OPS = frozenset({"aten::index_put", "aten::index_copy", "aten::slice_scatter", "aten::select_scatter"})


def write_state_in_place(method: MethodIR) -> list[str]:
    """Rewrites `method` as the module doc says; returns the names of the
    states now written in place."""
    if any(ins.jump is not None for ins in method.instructions):
        return []
    states = {s.value: s for s in method.state}
    done: list[str] = []
    for move in [ins for ins in method.instructions if ins.move and ins.args[1] in states]:
        new, state = move.args
        producer = _only_writer(method, new)
        if producer is None or producer.op < 0 or producer.delegate is not None:
            continue
        if method.operators[producer.op] not in IN_PLACE_OPS or producer.args[0] != state:
            continue
        readers = [ins for ins in method.instructions if state in method.tensor_args(ins) and ins is not move]
        if readers != [producer] or method.tensor_args(producer).count(state) != 1 or new in method.outputs:
            continue
        _replace(method, new, state)
        method.instructions = [ins for ins in method.instructions if ins is not move]
        method.values[new] = Value("None", None)
        done.append(states[state].name)
    return done


def _only_writer(method: MethodIR, value: int):
    """The kernel call whose out is `value`, if exactly one writes it."""
    writers = [ins for ins in method.instructions if not ins.move and ins.jump is None and ins.delegate is None
               and ins.args and ins.args[-1] == value]
    return writers[0] if len(writers) == 1 else None


def _replace(method: MethodIR, old: int, new: int) -> None:
    """Every reference to value `old` refers to `new` instead."""
    for ins in method.instructions:
        ins.args = [new if a == old else a for a in ins.args]
    for v in method.values:
        if v.kind in ("TensorList", "OptionalTensorList"):
            v.data = [new if a == old else a for a in v.data]
    for d in method.delegates:
        d.inputs = [new if a == old else a for a in d.inputs]
        d.outputs = [new if a == old else a for a in d.outputs]
