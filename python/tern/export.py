"""tern.export: nn.Module + example inputs -> tern.Program (a .tern file).

    program = tern.export(model, (torch.randn(1, 3, 224, 224),))

Steps: torch.export in eval mode -> decompose to the core ATen op set (keeping
ops the runtime has kernels for) -> the exporter's graph form (tern.graph) ->
passes (tern.passes) -> hand what backends claim to them (tern.backend) ->
check every other op has a kernel -> emit the method -> plan memory ->
serialize -> load the bytes in this runtime (every kernel's and backend's own
checks), so that a model that exports also loads.

This module imports torch only when export() runs, so `import tern` stays
free of torch.
"""
from __future__ import annotations

import contextlib
import functools
import re
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

from tern.errors import ExportError
from tern.program import Program
from tern.version import __version__

if TYPE_CHECKING:
    import torch
    import torch.fx

    from tern.backend import Partitioner
    from tern.repeat_layers import Layers


def export(
    module: Any,
    args: tuple[Any, ...],
    dynamic_shapes: Any = None,
    *,
    supported_ops: Iterable[str] | None = None,
    partitioners: Sequence["Partitioner"] | None = None,
    metadata: Mapping[str, bytes] | None = None,
    bundle: Sequence[Any] | None = None,
) -> Program:
    """Exports `module` called on `args` (example inputs) to a Program.

    The module runs in eval mode during export (its own and its submodules'
    training flags are restored afterwards). `supported_ops` are the runtime
    op names ("aten::add.Tensor"); by default those of tern.ops.supported_ops().
    `partitioners` (tern.Partitioner) hand the subgraphs their backends claim
    to those backends, in order; the rest runs on kernels. None (the default)
    means the optimized CPU backend, tern.backends.cpu.CpuPartitioner(); pass
    () for a file that runs on kernels alone.
    Raises ExportError naming every op without a kernel and its source line,
    or the op the runtime would refuse at load, its reason and source line,
    or a call whose arguments the op refuses while torch.export traces it
    (torch.topk's k beyond its dim: tern.trace_errors), the values and line.
    A module whose forward mutates its buffers (x.copy_, +=, index_put_ on a
    registered buffer) keeps them as the loaded method's state between calls,
    starting from their values now (see tern.Module.state / reset).
    `dynamic_shapes` is torch.export's: input dims given a torch.export.Dim
    take any size within its bounds at run time (format 1.3). Every Dim needs
    a max: memory is planned for the largest shapes. The cpu backend takes
    the float ops of text models at dynamic sizes (see tern.backend);
    convolutions, pools and int8 operators of dynamic sizes run on kernels.
    `metadata` ({"name": bytes}) is stored in the file beside the model for
    the application (a vocabulary, settings): tern.load(path).metadata(),
    Module::metadata(key) in C++. Keys are str of 1 to 256 UTF-8 bytes;
    ValueError for one the format does not take. The nodes a backend left to
    the portable kernels, and why, are stored too (REFUSALS_KEY, where
    there are any): `tern inspect` lists them.
    `bundle` ([(inputs...), tern.SelfTest(inputs, expected, rtol, atol), ...])
    stores self-tests in the file: the inputs, the outputs eager gives for
    them (or those given) and a tolerance per output (tern.self_test), which
    tern-run --self-test, tern.load(path).self_test() and
    Module::self_test() run on the device. They run once here, after
    export (where this runtime has the file's ops and backends, as for the
    load check): ValueError naming the output, its error and tolerance if
    one fails on this machine.
    """
    import tern.ops as _ops
    from tern.program import check_metadata
    from tern.self_test import bundled_tests

    check_metadata(metadata or {})  # before the slow part: a bad key fails at once
    args = args if isinstance(args, tuple) else (args,)
    # before export, from the module's buffers as they are (torch.export does not change them)
    with _eval_mode(module):
        tests = bundled_tests(module, bundle) if bundle else ()
    supported = frozenset(supported_ops if supported_ops is not None else _ops.supported_ops())
    if partitioners is None:
        from tern.backends.cpu import CpuPartitioner

        partitioners = [CpuPartitioner()]
    gm = lower_to_graph(module, args, supported, dynamic_shapes)
    return program_of_graph(gm, supported, partitioners, metadata, default_ops=supported_ops is None, self_tests=tests)


def program_of_graph(gm: "torch.fx.GraphModule", supported: frozenset[str], partitioners: Sequence["Partitioner"],
                     metadata: Mapping[str, bytes] | None = None, default_ops: bool = True,
                     self_tests: Sequence[Any] = ()) -> Program:
    """export()'s second half: the Program of lower_to_graph's graph, its
    subgraphs delegated to `partitioners`, checked, with `metadata` and
    `self_tests` (tern.program.BundledTest; run here once, see export).
    default_ops: `supported` is tern.ops.supported_ops() (dtypes are checked too)."""
    import tern.ops as _ops
    from tern.program import check_metadata

    entries = check_metadata(metadata or {})
    seen = [(p, len(getattr(p, "refused", ()))) for p in partitioners]  # a partitioner may serve several exports
    gm = _delegate_all(gm, partitioners)
    check_supported(gm, supported, _ops.supported_dtypes() if default_ops else None)
    program = build_program(gm)
    refusals = dict.fromkeys(f"{p.backend}\t{node}\t{op}\t{why}" for p, n in seen
                             for node, op, why in list(getattr(p, "refused", ()))[n:])
    if entries or refusals:
        stored = dict(metadata or {})
        if refusals and REFUSALS_KEY not in stored:
            stored[REFUSALS_KEY] = "\n".join(refusals).encode()
        program = program.with_metadata(stored)
    if self_tests:
        program = program.with_self_tests(self_tests)
    if check_loads(program, gm) and self_tests:
        from tern.self_test import check_self_tests

        check_self_tests(program.data)
    return program


# The metadata key of the nodes the backends refused: UTF-8 lines
# "backend<TAB>node<TAB>op<TAB>why" (CpuPartitioner.refused).
REFUSALS_KEY = "tern.refused"


def lower_to_graph(module: Any, args: tuple[Any, ...], supported: frozenset[str],
                   dynamic_shapes: Any = None, layers: "Layers | None" = None) -> "torch.fx.GraphModule":
    """torch.export + decompositions + passes: the graph the file is made from.
    With dynamic shapes, gm.meta["tern_symbols"] is their tern.shapes.SymbolTable.
    `layers`: `module` runs the first two of a model's equal layers, and the
    graph gets the others by tern.repeat_layers (NotRepeatable if its trace
    does not fit)."""
    import torch

    from tern.control_flow import for_each_graph, inline_constant_operands
    from tern.graph import to_graph_module
    from tern.passes import run_passes
    from tern.shapes import symbol_table
    from tern.trace_errors import refused_call

    with _eval_mode(module):
        try:
            ep = torch.export.export(module, args, dynamic_shapes=dynamic_shapes)
        except RuntimeError as e:  # an op refused its arguments while torch traced (torch.topk's k)
            refused = refused_call(e)
            if refused is None:
                raise
            raise refused from e
    traces = {n.name: (n.target, n.meta.get("stack_trace")) for n in ep.graph.nodes if n.op == "call_function"}
    ep = run_decompositions(ep, frozenset(supported))
    # run_decompositions re-traces the ops it keeps whole (scaled_dot_product_attention,
    # ...) without their stack traces: errors could not name the user's line.
    for n in ep.graph.nodes:
        before = traces.get(n.name)
        if n.op == "call_function" and not n.meta.get("stack_trace") and before and before[0] == n.target:
            n.meta["stack_trace"] = before[1]
    symbols = symbol_table(ep, dynamic_shapes, args, module) if ep.range_constraints else None
    if layers is not None:
        from tern.repeat_layers import repeat_layers

        ep = repeat_layers(ep, layers)
    gm = to_graph_module(ep)
    if symbols is not None:
        gm.meta["tern_symbols"] = symbols
    inline_constant_operands(gm)
    for_each_graph(gm, run_passes)  # the branches and loop bodies too
    return gm


def _delegate_all(gm: "torch.fx.GraphModule", partitioners: Sequence["Partitioner"]) -> "torch.fx.GraphModule":
    """tern.backend.delegate on gm and on each branch and loop body inside it."""
    from tern.backend import delegate
    from tern.control_flow import branch_targets, control_flow_nodes

    for node in control_flow_nodes(gm):
        for target in branch_targets(node):
            setattr(gm, target, _delegate_all(getattr(gm, target), partitioners))
    return delegate(gm, partitioners)


def run_decompositions(ep: "torch.export.ExportedProgram", supported: frozenset[str],
                       fast: bool = True) -> "torch.export.ExportedProgram":
    """ep.run_decompositions(_decomposition_table(supported)), in a quarter of the time.

    On every call, torch's run_decompositions walks every operator namespace
    for its CompositeImplicitAutograd (CIA) ops, about 500, and patches each
    of them for the duration of the trace: with a decomposition, or to keep it
    whole. For a small model that is three quarters of the call. For most of
    them (~460) the patch is the op's own CIA decomposition, which is what the
    dispatcher does with an op nobody patched. So, once per op set, this works
    out the CIA ops whose treatment differs from the dispatcher's (those kept
    whole, and those the table decomposes its own way), drops the others from
    the table, and has torch patch only those. The decomposed program is the
    same, node for node (tests/python/test_export.py checks it against the
    plain call on several models). `fast=False`, or a torch without these
    internals, takes the plain call. Custom CIA ops the runtime runs whole
    (torchao::dequantize_affine) are looked up at each call, as their
    namespace may load after the first export; another custom CIA op
    registered after the first export of a process decomposes (the plain
    call would keep it whole; tern has no kernel for it either way)."""
    table = _decomposition_table(supported)
    plan = _cia_plan(supported) if fast else None
    if plan is None:
        return ep.run_decompositions(table)
    import torch.export.exported_program as torch_ep

    slim_table, patched_cia_ops = plan
    patched_cia_ops = patched_cia_ops | _custom_cia_ops_kept(supported)
    collect = torch_ep._collect_all_valid_cia_ops
    torch_ep._collect_all_valid_cia_ops = lambda: set(patched_cia_ops)
    try:
        return ep.run_decompositions(slim_table)
    finally:
        torch_ep._collect_all_valid_cia_ops = collect


def _custom_cia_ops_kept(supported: frozenset[str]) -> frozenset[Any]:
    """The CIA ops outside aten that the runtime runs whole (torchao::dequantize_affine),
    among those registered now: a namespace can be loaded after _cia_plan was
    cached (torchao is imported by tern.quantize), and an op left out of the
    patched set would decompose."""
    import torch
    from torch._export.utils import _collect_all_valid_cia_ops_for_namespace

    from tern.ops import op_name

    loaded = set(getattr(torch.ops, "_dir", ()))
    out: set[Any] = set()
    for ns in sorted({name.partition("::")[0] for name in supported} - {"aten"}):
        if ns in loaded:
            out |= {op for op in _collect_all_valid_cia_ops_for_namespace(getattr(torch.ops, ns))
                    if op_name(op) in supported}
    return frozenset(out)


@functools.lru_cache(maxsize=4)
def _cia_plan(supported: frozenset[str]) -> tuple[dict[Any, Any], frozenset[Any]] | None:
    """(the decomposition table without the CIA ops it decomposes the
    dispatcher's way, the CIA ops run_decompositions must still patch), or
    None when this torch lacks the internals run_decompositions() relies on."""
    try:
        import torch.export.exported_program as torch_ep
        from torch._decomp import _core_aten_decompositions_post_autograd
        from torch._export.utils import _collect_all_valid_cia_ops, _collect_all_valid_cia_ops_for_aten_namespace
        from torch.export.decomp_utils import PRESERVED_ATEN_CIA_OPS
    except ImportError:
        return None
    if not callable(getattr(torch_ep, "_collect_all_valid_cia_ops", None)):
        return None
    # torch's default table gives every aten CIA op that is neither kept whole
    # by default nor decomposed by a function of its own the op's CIA kernel
    # (torch.export.decomp_utils.CustomDecompTable); the ops tern runs whole
    # are no longer in the table, and must stay patched (kept whole).
    own = _core_aten_decompositions_post_autograd()
    table = _decomposition_table(supported)
    dispatcher_way = {op for op in _collect_all_valid_cia_ops_for_aten_namespace()
                      if op in table and op not in PRESERVED_ATEN_CIA_OPS and op not in own}
    slim_table = {op: fn for op, fn in table.items() if op not in dispatcher_way}
    patched = frozenset(op for op in _collect_all_valid_cia_ops() if op not in dispatcher_way)
    return slim_table, patched


@functools.lru_cache(maxsize=4)
def _decomposition_table(supported: frozenset[str]) -> dict[Any, Any]:
    """torch.export's core-ATen table, minus ops the runtime runs as they are
    (e.g. aten::hardswish: one kernel instead of four).

    Cached per op set: building it takes ~50 ms, a quarter of a small model's
    export; run_decompositions copies the table, so sharing it is safe."""
    import torch

    from tern.ops import op_name

    table = torch.export.default_decompositions()
    for op in [op for op in table.keys() if op_name(op) in supported]:
        table.pop(op)
    return table


@contextlib.contextmanager
def _eval_mode(module: Any) -> Iterator[None]:
    """Runs the block with `module` in eval mode, then restores every submodule's flag."""
    import torch

    if not isinstance(module, torch.nn.Module):
        yield
        return
    flags = [(m, m.training) for m in module.modules()]
    # A module that came out of torch.export (a quantized one from
    # tern.quantize or convert_pt2e) was traced in eval mode already and
    # refuses eval(); its flags no longer change what it computes.
    if not _is_exported_graph(module):
        module.eval()
    try:
        yield
    finally:
        for m, training in flags:
            m.training = training


def _is_exported_graph(module: Any) -> bool:
    """Whether `module` is a GraphModule whose train()/eval() were replaced
    (ExportedProgram.module() makes them raise)."""
    import torch

    return isinstance(module, torch.fx.GraphModule) and \
        getattr(module.eval, "__func__", None) is not torch.nn.Module.eval


def check_supported(gm: "torch.fx.GraphModule", supported: frozenset[str],
                    dtypes: dict[str, frozenset[str] | None] | None = None) -> None:
    """Raises one ExportError listing every op in `gm` that has no kernel, with
    the source line of each use (first those whose output's size depends on
    the data, which no kernel could run: _check_data_dependent); then, given
    `dtypes` (op -> the dtypes of its first tensor argument the runtime
    takes, tern.ops.supported_dtypes()), one listing every op used with a
    dtype its kernel does not take."""
    import operator

    from tern.control_flow import is_cond, is_while_loop, subgraphs
    from tern.ops import op_name
    from tern.shapes import is_symbolic

    missing: dict[str, list[Any]] = {}  # runtime op name -> its nodes
    for g in [gm, *subgraphs(gm)]:
        for node in g.graph.nodes:
            if node.op == "call_function" and node.target is not operator.getitem and not (
                    is_cond(node) or is_while_loop(node) or is_symbolic(node)):
                name = op_name(node.target)
                if name not in supported:
                    missing.setdefault(name, []).append(node)
    if not missing:
        _check_dtypes(gm, dtypes or {})
        _check_as_strided(gm)
        return
    _check_data_dependent(missing)
    lines = [f"{len(missing)} operator(s) have no kernel in the Tern runtime:"]
    for name, nodes in missing.items():
        lines.append(f"  {name} ({_torch_name(nodes[0].target)}), used by:")
        lines += _uses(nodes)
    raise ExportError("\n".join(lines))


def _check_data_dependent(missing: dict[str, list[Any]]) -> None:
    """Of the ops without a kernel, those whose output's size depends on the
    data (torch.nonzero, masked_select: an unbacked symbol u0 in its shape)
    could not run on any kernel: the memory plan is made at export, from
    sizes that follow from the input shapes. Raises an ExportError naming
    them (and, in passing, the other ops without a kernel), rather than one
    asking for their kernels."""
    from tern.shapes import output_sizes_from_data

    bad: dict[str, list[tuple[Any, str]]] = {}  # op -> its nodes with such an output, and its sizes
    for name, nodes in missing.items():
        for node in nodes:
            sizes = output_sizes_from_data(node)
            if sizes is not None:
                bad.setdefault(name, []).append((node, sizes))
    if not bad:
        return
    lines = [f"{len(bad)} operator(s) give an output whose size depends on the data (no input dim gives it): "
             "Tern needs every size to follow from the input shapes (memory is planned at export), so no kernel "
             "can run them:"]
    for name, found in bad.items():
        lines.append(f"  {name} ({_torch_name(found[0][0].target)}): output {found[0][1]}, used by:")
        lines += _uses([n for n, _ in found])
    others = [name for name in missing if name not in bad]
    if others:
        lines.append(f"(also without a kernel in the Tern runtime: {', '.join(others)})")
    raise ExportError("\n".join(lines))


def _uses(nodes: list[Any]) -> list[str]:
    """One line per node: its name and the user's source line."""
    from tern.graph import user_frame

    out = []
    for node in nodes:
        frame = user_frame(node)
        where = frame.long(indent="      ") if frame else "(no source location)"
        out.append(f"    node {node.name}: {where}")
    return out


def _check_dtypes(gm: "torch.fx.GraphModule", dtypes: dict[str, frozenset[str] | None]) -> None:
    import operator

    from tern.control_flow import subgraphs
    from tern.ops import op_name

    from tern.shapes import is_symbolic

    bad: dict[tuple[str, str], list[Any]] = {}  # (op, dtype) -> its nodes
    for g in [gm, *subgraphs(gm)]:
        for node in g.graph.nodes:
            if node.op != "call_function" or node.target is operator.getitem or is_symbolic(node):
                continue
            name = op_name(node.target)
            allowed = dtypes.get(name)
            dtype = _instruction_dtype(node)
            if allowed is not None and dtype is not None and dtype not in allowed:
                bad.setdefault((name, dtype), []).append(node)
    if not bad:
        return
    lines = [f"{len(bad)} operator(s) are used with a dtype their Tern kernel does not take:"]
    for (name, dtype), nodes in bad.items():
        takes = ", ".join(d for d in _DTYPE_ORDER if d in (dtypes[name] or ()))
        lines.append(f"  {name}: {dtype} is not supported (it takes {takes}), used by:")
        lines += _uses(nodes)
    raise ExportError("\n".join(lines))


# Ops whose result is a view of their input in eager PyTorch. In the file a
# view is its own elements only: a copy, or (tern.aliasing) an alias of the
# contiguous run of its source's bytes that holds exactly them.
_VIEW_OPS = frozenset({
    "aten::view", "aten::_unsafe_view", "aten::slice.Tensor", "aten::select.int", "aten::permute", "aten::expand",
    "aten::squeeze.dims", "aten::squeeze.dim", "aten::unsqueeze", "aten::alias", "aten::diagonal", "aten::as_strided",
    "aten::split_with_sizes",
})


def _check_as_strided(gm: "torch.fx.GraphModule") -> None:
    """aten::as_strided reads its input's storage. Of a view, eager reads the
    viewed tensor's storage (from the view's offset), which the runtime does
    not have: refuse it rather than give another answer."""
    import operator

    from tern.control_flow import subgraphs
    from tern.ops import op_name

    bad = []
    for g in [gm, *subgraphs(gm)]:
        for node in g.graph.nodes:
            if node.op != "call_function" or op_name(node.target) != "aten::as_strided":
                continue
            src = node.args[0]
            while getattr(src, "target", None) is operator.getitem:
                src = src.args[0]
            if getattr(src, "op", None) == "call_function" and op_name(src.target) in _VIEW_OPS:
                bad.append((node, op_name(src.target)))
    if bad:
        raise ExportError(f"aten::as_strided of a view ({bad[0][1]}) is not supported: "
                          "eager reads the storage behind the view, which Tern does not keep; "
                          "apply as_strided to a contiguous tensor (.contiguous() does not help: torch.export "
                          "drops it), or use view/slice ops instead:\n" + "\n".join(_uses([n for n, _ in bad])))


_DTYPE_ORDER = ("float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16", "int32", "int64", "bool")


def _instruction_dtype(node: "torch.fx.Node") -> str | None:
    """The dtype the runtime looks up a kernel by (OpKernel::dtypes): that of
    the node's first tensor argument (list items included), else of its first
    tensor output; None if it has no tensor, or is not an ATen op."""
    import torch
    import torch.utils._pytree as pytree

    schema = getattr(node.target, "_schema", None)
    if schema is None:
        return None
    values: list[Any] = []
    for i, a in enumerate(schema.arguments):
        v = node.args[i] if i < len(node.args) and not a.kwarg_only else node.kwargs.get(a.name)
        values += [x.meta.get("val") for x in pytree.tree_leaves(v) if hasattr(x, "meta")]
    values += pytree.tree_leaves(node.meta.get("val"))
    for v in values:
        if isinstance(v, torch.Tensor):
            return str(v.dtype).removeprefix("torch.")
    return None


# How the runtime names an instruction it refuses (runtime/executor/method_load.cpp).
_REFUSED = re.compile(r"instruction \d+ \((?P<op>[^,()]+), node (?P<node>[^)]+)\): (?P<why>.*)", re.S)


def check_loads(program: Program, gm: "torch.fx.GraphModule") -> bool:
    """Loads `program` in this runtime as tern.load would (every kernel's and
    backend's own checks of its arguments) and raises ExportError with the
    runtime's reason, the op and the user's source line if it refuses: a
    model that exports also loads. False if this runtime cannot judge it
    (ops or backends it lacks, or a package without its compiled runtime:
    python/ of a checkout on PYTHONPATH, as make size runs it), True if it
    loads."""
    try:
        import tern._runtime as _runtime
    except ImportError:
        return False
    from tern.graph import user_frame
    from tern.inspect import read_program

    # Operators and backends this runtime lacks (custom kernels or backends
    # of the app's own runtime: supported_ops, partitioners) cannot be judged
    # here: the runtime that has them checks them when it loads the file.
    info = read_program(program.data)
    ops = {op for m in info["methods"] for op in m["operators"]}
    backends = {d["backend"] for m in info["methods"] for d in m["delegates"]}
    if not ops <= set(_runtime.registered_ops()) or not backends <= set(_runtime.registered_backends()):
        return False
    try:
        _runtime.check_program(program.data)
    except ValueError as e:
        message = str(e).removeprefix("refused: ")
        m = _REFUSED.search(message)
        if m is None:
            raise ExportError(f"the Tern runtime would refuse to load this model: {message}") from None
        from tern.control_flow import subgraphs

        # Inside a branch or loop the runtime names a node "cond.true.relu" (emit.py).
        nodes = {n.name: n for g in [*subgraphs(gm), gm] for n in g.graph.nodes}
        node = nodes.get(m["node"].rsplit(".", 1)[-1])
        frame = user_frame(node) if node is not None else None
        where = frame.long(indent="    ") if frame else "(no source location)"
        raise ExportError(f"the Tern runtime would refuse to load this model: {m['op']} (node {m['node']}): "
                          f"{m['why']}\n  {where}") from None
    return True


def _torch_name(target: Any) -> str:
    """torch.ops.aten.sort.default -> "aten.sort.default" (the name torch prints)."""
    return str(target)


def build_program(gm: "torch.fx.GraphModule") -> Program:
    """Emits, plans and serializes `gm` (already checked) into a Program."""
    import torch

    from tern.emit import emit_method
    from tern.aliasing import alias_views
    from tern.memory_plan import check_plan, lifetimes, plan, with_aliases
    from tern.serialize import serialize
    from tern.state_in_place import write_state_in_place

    method = emit_method(gm)
    write_state_in_place(method)  # before the views: a state no Move writes may be viewed
    views = alias_views(method)  # views that need no copy: their bytes are their source's
    root = {v: a.root for v, a in views.items()}
    nbytes = {i: v.data.nbytes for i, v in enumerate(method.values)
              if v.kind == "Tensor" and v.data.constant is None and v.data.nbytes > 0}
    sizes = {i: n for i, n in nbytes.items() if i not in views}
    # A view's uses are its root's: the root stays live while the view is read.
    steps = [[root.get(v, v) for v in method.tensor_args(ins)] for ins in method.instructions]
    # State is live from the first step to the last, so no other tensor ever
    # shares its bytes: it keeps its value from one call to the next.
    loops = [(ins.jump, i) for i, ins in enumerate(method.instructions) if ins.jump is not None and ins.jump <= i]
    outputs = [root.get(v, v) for v in method.outputs]
    intervals = lifetimes(sizes, steps, method.inputs + method.state_values, outputs + method.state_values, loops)
    mem = plan(intervals)
    check_plan(mem.intervals, mem.offsets, mem.planned_bytes)
    mem = with_aliases(mem, {v: (a.root, a.offset) for v, a in views.items() if v in nbytes}, nbytes)
    producer = f"tern {__version__} / torch {torch.__version__}"
    return Program(
        data=serialize(method, mem, producer),
        _serialize=functools.partial(serialize, method, mem, producer),
        input_specs=_specs(method, method.inputs, method.input_names),
        output_specs=_specs(method, method.outputs, method.output_names),
        planned_bytes=mem.planned_bytes,
        lower_bound_bytes=mem.lower_bound_bytes,
        constant_bytes=sum(len(c) for c in method.constants),
        op_counts=_op_counts(method),
        num_values=len(method.values),
        num_instructions=len(method.instructions),
        producer=producer,
        memory_plan=mem,
        state_specs=_specs(method, method.state_values, [s.name for s in method.state]),
    )


def _specs(method: Any, values: list[int], names: list[str]) -> tuple[Any, ...]:
    from tern.emit import SCALAR_TYPE_NAMES
    from tern.program import TensorSpec

    infos = [method.values[v].data for v in values]
    return tuple(TensorSpec(n, SCALAR_TYPE_NAMES[i.scalar_type], i.sizes, _dim_ranges(method, i))
                 for n, i in zip(names, infos))


def _dim_ranges(method: Any, info: Any) -> tuple[Any, ...]:
    """Per dim of a tensor: None (static) or (name, min, max) of its Dim
    (format 1.3); () if every dim is static."""
    from tern.shapes import SYMBOL

    if not info.dyn:
        return ()
    out: list[Any] = []
    for size, e in zip(info.sizes, info.dyn):
        code = method.size_exprs[e] if e >= 0 else None
        if code is None:
            out.append(None)
        elif len(code) == 2 and code[0] == SYMBOL:
            sym = method.symbols[code[1]]
            out.append((sym.name, sym.min, sym.max))
        else:
            out.append(("", 0, size))
    return tuple(out)


def _op_counts(method: Any) -> tuple[tuple[str, int], ...]:
    from tern.program import count_ops

    return count_ops([method.instr_name(ins) for ins in method.instructions])
