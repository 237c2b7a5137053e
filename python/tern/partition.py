"""Grouping the nodes a backend supports: torch.fx's CapabilityBasedPartitioner
proposal, decided the same way, at a fraction of the cost.

    parts = propose_partitions(gm, lambda node: backend_takes(node))
    fused = fuse_by_partitions(gm, [q.nodes for q in parts], prefix="fused_")

The result is what `CapabilityBasedPartitioner(gm, support,
allows_single_node_partition=...).propose_partitions()` returns: the same
groups, as torch's Partition objects with the same ids, in the same order,
each with its nodes in graph order and then the getitems it took over; and
the support predicate is asked about the same nodes in the same order (each
once, last node first). The delegates the exporter makes, and their names,
depend on that proposal. Written against torch 2.14's partitioner;
tests/python/test_partition.py checks it against the installed torch.

How torch decides, and what is done here instead:

- Nodes are visited last to first. A supported node opens a group of its
  own; then, at every node (supported or not), each group in turn (the new
  one first, the others by the earliest node they hold in visiting order) is
  offered to a running group that absorbs every group it can: the larger
  of the two keeps its id.
- A merge of S and O is refused when it would close a cycle: a node outside
  S and O is both below and above them. torch finds this with a walk of
  everything below the pair, per attempt; here each group keeps three
  bitsets over the nodes (its members, everything below any member, and
  everything above any member), so the test is a few ORs and ANDs of ints.
- torch also refuses when a group X that lies below the pair has S or O in
  its "reachable groups" set. Those sets are kept exactly as torch keeps
  them, stale ids included: a set is only recomputed for the group that
  absorbs another, so a group can miss what a merge elsewhere made
  reachable. This test is reproduced, not corrected, only with bitsets in
  place of the walks; in the graphs of tests/python/test_partition.py (and
  some 90,000 other random ones) it never refused a merge that the first
  test allowed, but nothing here relies on that.
- After the visit, the getitem users of a node whose users are all getitems
  move into that node's group (or out of any group when it has none), until
  nothing moves; and without allows_single_node_partition, groups with at
  most one compute node (getitem and aten.view do not count) are dropped.

Cost: the bitsets take 2 N^2 bits for N nodes (torch's dependency sets take
N^2 set entries); each merge attempt costs a few N-bit operations and one
look at each live group, instead of a walk of the graph.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

if TYPE_CHECKING:
    import torch.fx
    from torch.fx.passes.infra.partitioner import Partition

GETITEM = "_operator.getitem"
# What torch's partitioner does not count as compute in a single-node group.
NON_COMPUTE_OPS = ("torch.ops.aten.view", GETITEM)


def propose_partitions(
    gm: "torch.fx.GraphModule",
    supported: Callable[["torch.fx.Node"], bool],
    allows_single_node_partition: bool = False,
    non_compute_ops: Sequence[str] = (),
    allowed_single_node_partition_ops: Sequence[str] = (),
) -> list["Partition"]:
    """The groups of supported nodes, as CapabilityBasedPartitioner proposes
    them with the same arguments (their defaults are torch's too); see the
    module doc. `supported` is called once per node of gm.graph, last node
    first. gm.graph must be in topological order (as graph.lint checks)."""
    from torch.fx.passes.infra.partitioner import Partition

    nodes = list(gm.graph.nodes)
    groups = _Groups(nodes)
    for order, node in enumerate(reversed(nodes)):
        candidates: list[int] = []
        if supported(node):
            candidates.append(groups.open(node, order))
        # every group, unsupported node or not: the new one first, then by first visited node
        candidates += [g for g in sorted(groups.first, key=groups.first.__getitem__) if g not in candidates[:1]]
        if len(candidates) > 1:
            merged = candidates[0]
            for other in candidates[1:]:
                merged = groups.maybe_merge(merged, other)
    # each group's nodes in graph order (descending visit order), as torch sorts them
    members = {g: dict(sorted(m.items(), key=lambda kv: kv[1], reverse=True)) for g, m in groups.members.items()}
    _take_getitems(nodes, members, groups.assignment)
    if not allows_single_node_partition:
        uncounted = set(NON_COMPUTE_OPS) | set(non_compute_ops)
        for g in [g for g, m in members.items() if _compute_nodes(m, uncounted, allowed_single_node_partition_ops) <= 1]:
            del members[g]
    out = []
    for g, m in members.items():
        if m:
            part = Partition(id=g)
            part.nodes = m
            out.append(part)
    return out


class _Groups:
    """The groups of the visit so far, with torch's ids and bookkeeping.

    Node sets are ints used as bitsets, bit i for nodes[i]."""

    def __init__(self, nodes: list["torch.fx.Node"]) -> None:
        index = {n: i for i, n in enumerate(nodes)}
        self.below = _closure(nodes, index, lambda n: n.users, reverse=True)  # node i and all it reaches
        self.above = _closure(nodes, index, lambda n: n.all_input_nodes, reverse=False)  # i and all reaching it
        self.index = index
        self.assignment: dict["torch.fx.Node", int] = {}
        self.members: dict[int, dict["torch.fx.Node", int | None]] = {}  # id -> {node: visit order}
        self.first: dict[int, int] = {}  # id -> smallest id merged into it (torch's partitions_order)
        self.bits: dict[int, int] = {}  # id -> its nodes
        self.down: dict[int, int] = {}  # id -> its nodes and all they reach
        self.up: dict[int, int] = {}  # id -> its nodes and all that reaches them
        self.reach: dict[int, set[int]] = {}  # id -> torch's partition_map entry (may hold stale ids)
        self.next_id = 0

    def open(self, node: "torch.fx.Node", order: int) -> int:
        """A new group of one node; its reachable groups are those holding a
        node below it, and what those reach."""
        g = self.next_id
        self.next_id += 1
        i = self.index[node]
        self.assignment[node] = g
        self.members[g] = {node: order}
        self.first[g] = g
        self.bits[g], self.down[g], self.up[g] = 1 << i, self.below[i], self.above[i]
        self.reach[g] = self._groups_within(self.below[i] & ~(1 << i), exclude=(g,))
        return g

    def maybe_merge(self, s: int, o: int) -> int:
        """Merges o and s unless that closes a cycle (by torch's test); the
        id of the group s is now part of."""
        inside = self.bits[s] | self.bits[o]
        below = (self.down[s] | self.down[o]) & ~inside
        if below & (self.up[s] | self.up[o]):
            return s  # a node outside both is below one and above one
        for x, reach in self.reach.items():
            if (s in reach or o in reach) and self.bits[x] & below:
                return s  # a group below the pair says it reaches back into it
        keep, gone = (o, s) if len(self.members[s]) < len(self.members[o]) else (s, o)
        moved = self.members.pop(gone)
        self.members[keep].update(moved)
        for node in moved:
            self.assignment[node] = keep
        self.first[keep] = min(self.first[keep], self.first.pop(gone))
        self.bits[keep] = inside
        self.down[keep] |= self.down.pop(gone)
        self.up[keep] |= self.up.pop(gone)
        del self.bits[gone]
        reach = self.reach[keep] | self.reach.pop(gone)
        reach |= self._groups_within(below, exclude=(keep, gone))
        reach.discard(keep)
        reach.discard(gone)
        self.reach[keep] = reach
        return keep

    def _groups_within(self, nodes: int, exclude: Iterable[int]) -> set[int]:
        """The groups holding any of `nodes`, with the groups each says it
        reaches (torch's downstream_partitions of the users of those nodes)."""
        out: set[int] = set()
        if nodes:
            for x, bits in self.bits.items():
                if bits & nodes:
                    out.add(x)
                    out |= self.reach[x]
        out.difference_update(exclude)
        return out


def _closure(nodes: list["torch.fx.Node"], index: dict["torch.fx.Node", int],
             step: Callable[["torch.fx.Node"], Iterable["torch.fx.Node"]], reverse: bool) -> list[int]:
    """For each node, the bitset of itself and every node `step` leads to,
    transitively. `nodes` is in graph (topological) order; `reverse` visits
    it last to first, as following users needs."""
    out = [0] * len(nodes)
    order = range(len(nodes) - 1, -1, -1) if reverse else range(len(nodes))
    for i in order:
        bits = 1 << i
        for n in step(nodes[i]):
            bits |= out[index[n]]
        out[i] = bits
    return out


def _take_getitems(nodes: list["torch.fx.Node"], members: dict[int, dict["torch.fx.Node", int | None]],
                   assignment: dict["torch.fx.Node", int]) -> None:
    """Moves the getitem users of a node whose users are all getitems into
    that node's group (out of every group if it has none), until none moves."""
    while True:
        moves: dict["torch.fx.Node", int | None] = {}
        for node in nodes:
            if all(u.op == "call_function" and _qualified_name(u.target) == GETITEM for u in node.users):
                g = assignment.get(node)
                for user in node.users:
                    if assignment.get(user) != g:
                        moves[user] = g
        if not moves:
            return
        for node, g in moves.items():
            if node in assignment:
                del members[assignment[node]][node]
            if g is None:
                del assignment[node]
            else:
                assignment[node] = g
                members[g][node] = None


def _compute_nodes(members: dict["torch.fx.Node", Any], uncounted: set[str], counted_twice: Sequence[str]) -> int:
    count = 0
    for node in members:
        if node.op == "call_function":
            name = _qualified_name(node.target)
            count += (name not in uncounted) + (name in counted_twice)
    return count


_NAMES: dict[Any, str] = {}


def _qualified_name(target: Any) -> str:
    """torch.fx's name of a call_function target ("_operator.getitem"), cached."""
    from torch.fx.node import _get_qualified_name

    try:
        return _NAMES[target]
    except KeyError:
        name = _NAMES[target] = _get_qualified_name(target)
        return name
    except TypeError:  # an unhashable target
        return _get_qualified_name(target)
