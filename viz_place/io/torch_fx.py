"""Read a ``torch.nn.Module`` as a costed operator graph through ``torch.fx``
(needs the ``torch`` extra).

The module is traced with ``torch.fx.symbolic_trace`` (or, where that fails
on data-dependent Python such as ``nn.MultiheadAttention``, with
``torch.export``, noted in ``graph.notes``) and run once on the example inputs
with ``ShapeProp`` to get every tensor's shape. Each traced call
becomes an op named like the ONNX operator it exports to (``Conv``, ``Gemm``,
``Relu``, ``Add``, ``GlobalAveragePool`` ... see :data:`MODULE_OPS` and
:data:`FUNCTION_OPS`), so FLOPs come from the same rules
(:mod:`viz_place.io.flops`) as for ONNX and the two importers give the same
graph. Parameters and buffers of a called module are its weights (``size``);
``get_attr`` tensors and values computed from them or from shapes only
(``x.size(0)``, ``x.shape``) fold into their consumers as in the ONNX reader;
``operator.getitem`` on a multi-output op is an alias, not an op. An
unrecognised call gets an estimated FLOP count, reported in ``graph.notes``.
Each op's ``layer`` is the module it ran in, written ``/b1/c1`` as in the
names torch's ONNX exporter gives.

>>> import torch
>>> m = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU())
>>> g = read_torch(m, (torch.randn(1, 64),))
>>> [n.op_type for n in g.nodes()], g.total_flops
(['Gemm', 'Relu'], 4160.0)
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..errors import InputFormatError
from ..model import Cluster, OpGraph
from ..model.roofline import RooflineSpec
from .costed import OpRecord, build_graph
from .flops import op_flops

#: The examples above need torch (tests/test_doctests.py skips them without it).
__doctest_requires__ = ("torch",)

#: ``torch.nn`` module class name -> ONNX op type.
MODULE_OPS = {
    "Conv1d": "Conv", "Conv2d": "Conv", "Conv3d": "Conv",
    "ConvTranspose1d": "ConvTranspose", "ConvTranspose2d": "ConvTranspose", "ConvTranspose3d": "ConvTranspose",
    "Linear": "Gemm", "BatchNorm1d": "BatchNormalization", "BatchNorm2d": "BatchNormalization",
    "BatchNorm3d": "BatchNormalization", "LayerNorm": "LayerNormalization", "GroupNorm": "GroupNormalization",
    "InstanceNorm1d": "InstanceNormalization", "InstanceNorm2d": "InstanceNormalization",
    "ReLU": "Relu", "ReLU6": "Clip", "LeakyReLU": "LeakyRelu", "Sigmoid": "Sigmoid", "Tanh": "Tanh", "GELU": "Gelu",
    "SiLU": "Silu", "Hardswish": "HardSwish", "Hardsigmoid": "HardSigmoid", "ELU": "Elu", "Softplus": "Softplus",
    "MaxPool1d": "MaxPool", "MaxPool2d": "MaxPool", "MaxPool3d": "MaxPool",
    "AvgPool1d": "AveragePool", "AvgPool2d": "AveragePool", "AvgPool3d": "AveragePool",
    "AdaptiveAvgPool1d": "AdaptiveAvgPool", "AdaptiveAvgPool2d": "AdaptiveAvgPool",
    "AdaptiveMaxPool2d": "AdaptiveMaxPool", "Dropout": "Dropout", "Identity": "Identity", "Flatten": "Flatten",
    "Softmax": "Softmax", "LogSoftmax": "LogSoftmax", "Embedding": "Gather", "LocalResponseNorm": "LRN",
}

#: Function or method name (``torch.add``, ``operator.add``, ``x.add``) -> ONNX op type.
FUNCTION_OPS = {
    "add": "Add", "iadd": "Add", "sub": "Sub", "rsub": "Sub", "mul": "Mul", "imul": "Mul", "truediv": "Div",
    "div": "Div", "matmul": "MatMul", "mm": "MatMul", "bmm": "MatMul", "linear": "Gemm", "conv1d": "Conv",
    "conv2d": "Conv", "conv3d": "Conv", "relu": "Relu", "relu_": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh",
    "gelu": "Gelu", "silu": "Silu", "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "neg": "Neg", "abs": "Abs",
    "softmax": "Softmax", "log_softmax": "LogSoftmax", "layer_norm": "LayerNormalization",
    "batch_norm": "BatchNormalization", "flatten": "Flatten", "view": "Reshape", "reshape": "Reshape",
    "squeeze": "Squeeze", "unsqueeze": "Unsqueeze", "contiguous": "Identity", "dropout": "Dropout",
    "permute": "Transpose", "transpose": "Transpose", "t": "Transpose", "cat": "Concat", "concat": "Concat",
    "stack": "Concat", "split": "Split", "chunk": "Split", "max_pool2d": "MaxPool", "avg_pool2d": "AveragePool",
    "adaptive_avg_pool2d": "AdaptiveAvgPool", "mean": "ReduceMean", "sum": "ReduceSum", "amax": "ReduceMax",
    "pad": "Pad", "expand": "Expand", "repeat": "Tile", "clamp": "Clip", "maximum": "Max", "minimum": "Min",
    "pow": "Pow", "getitem": "Slice", "select": "Gather", "unflatten": "Reshape", "unbind": "Split",
    "scaled_dot_product_attention": "Attention",
    # ATen names (graphs traced with torch.export)
    "addmm": "Gemm", "baddbmm": "Gemm", "embedding": "Gather", "alias": "Identity", "clone": "Identity",
    "to": "Cast", "_to_copy": "Cast", "type_as": "Cast", "index": "Gather", "index_select": "Gather",
    "gather": "GatherElements", "slice": "Slice", "narrow": "Slice", "rsqrt": "Rsqrt", "reciprocal": "Reciprocal",
    "cos": "Cos", "sin": "Sin", "erf": "Erf", "native_layer_norm": "LayerNormalization",
    "_native_batch_norm_legit_no_training": "BatchNormalization", "group_norm": "GroupNormalization",
    "masked_fill": "Where", "where": "Where", "_unsafe_view": "Reshape", "expand_as": "Expand",
    "max_pool2d_with_indices": "MaxPool", "hardtanh": "Clip", "silu_": "Silu", "hardswish": "HardSwish",
    "leaky_relu": "LeakyRelu", "mean.dim": "ReduceMean", "var": "ReduceMean", "std": "ReduceMean",
    "floordiv": "Div", "eq": "Equal", "ne": "Equal", "lt": "Less", "gt": "Greater", "le": "LessOrEqual",
    "ge": "GreaterOrEqual", "logical_not": "Not", "bitwise_not": "Not", "and": "And", "or": "Or",
    "cumsum": "CumSum", "new_ones": "ConstantOfShape", "new_zeros": "ConstantOfShape", "full_like": "ConstantOfShape",
    "zeros_like": "ConstantOfShape", "ones_like": "ConstantOfShape", "arange": "Range", "triu": "Trilu", "tril": "Trilu",
    "einsum": "Einsum", "_softmax": "Softmax", "_safe_softmax": "Softmax", "_log_softmax": "LogSoftmax",
    "split_with_sizes": "Split", "convolution": "Conv", "any": "ReduceMax", "all": "ReduceMin", "permute_copy": "Transpose", "view_copy": "Reshape",
    "_native_batch_norm_legit_functional": "BatchNormalization", "expand_copy": "Expand", "upsample_nearest2d": "Resize", "upsample_bilinear2d": "Resize", "sigmoid_": "Sigmoid",
}

#: Calls whose first arguments are reordered to match an ONNX op's inputs
#: (``addmm(bias, a, b)`` is ``Gemm(a, b, bias)``, ``baddbmm`` likewise).
BIAS_FIRST = frozenset({"addmm", "baddbmm"})

#: Guard and assertion calls (no data): skipped.
SKIPPED_CALLS = frozenset({"_assert_tensor_metadata", "_assert_scalar", "sym_constrain_range_for_size",
                           "_assert_async", "sym_constrain_range"})

#: Calls that only read shapes: folded like constants.
SHAPE_CALLS = frozenset({"size", "dim", "numel"})


TRACERS = ("auto", "fx", "export")


def read_torch(module: Any, example_inputs: Sequence[Any], *, name: str | None = None,
               specs: Mapping[str, RooflineSpec] | None = None, cluster: Cluster | None = None,
               training: bool = False, tracer: str = "auto") -> OpGraph:
    """An :class:`OpGraph` from ``module`` run on ``example_inputs`` (a tuple of tensors).

    ``specs``, ``cluster`` and ``training`` are as in :func:`viz_place.io.onnx.read_onnx`.
    ``tracer`` is ``"fx"`` (``torch.fx.symbolic_trace``), ``"export"``
    (``torch.export``, ATen ops) or ``"auto"`` (fx, else export); which one ran is
    in ``graph.notes``. Raises :class:`~viz_place.errors.InputFormatError` if the
    module cannot be traced or run, naming the failing node. (Module
    granularity, profiling and ``hf:`` specs: :func:`viz_place.io.torch_import.import_torch`.)
    """
    traced = trace_module(module, example_inputs, name=name, tracer=tracer)
    ops, edges = traced_ops(traced)
    return build_graph(ops, edges, name=traced.name, notes=traced.notes, specs=specs, cluster=cluster,
                       training=training)


@dataclass
class Traced:
    """A traced module: the ``GraphModule`` (shapes propagated), which tracer made it, notes."""

    gm: Any
    tracer: str
    name: str
    notes: list[str] = field(default_factory=list)


def trace_module(module: Any, example_inputs: Sequence[Any], *, name: str | None = None,
                 tracer: str = "auto", decompose: bool = False) -> Traced:
    """Trace ``module`` (see :func:`read_torch`) and propagate shapes on ``example_inputs``.

    ``decompose=True`` traces with ``torch.export`` and lowers the program to core
    ATen ops (``ExportedProgram.run_decompositions()``): ``linear`` becomes a
    transpose and ``addmm``, attention its matmuls, scaling and softmax, ``gelu``
    its elementwise ops, and so on (the finest granularity, ``aten``)."""
    try:
        import torch
        from torch.fx import symbolic_trace
        from torch.fx.passes.shape_prop import ShapeProp
    except ImportError as err:
        raise InputFormatError(f"reading a torch module needs the 'torch' package (pip install torch==2.13.0): {err}") from None
    if tracer not in TRACERS:
        raise InputFormatError(f"tracer {tracer!r}: expected one of {', '.join(TRACERS)}")
    if not isinstance(module, torch.nn.Module):
        raise InputFormatError(f"expected a torch.nn.Module, got {type(module).__name__}")
    if not isinstance(example_inputs, (tuple, list)) or not example_inputs:
        raise InputFormatError("example_inputs: must be a non-empty tuple of tensors")
    name = name or type(module).__name__
    notes = []
    fx_msg = None
    gm = None
    if decompose and tracer == "fx":
        raise InputFormatError("ATen granularity needs torch.export; tracer 'fx' cannot decompose")
    if tracer in ("auto", "fx") and not decompose:
        try:
            gm = symbolic_trace(module)
            used = "fx"
            notes.append("traced with torch.fx.symbolic_trace (module calls and torch functions)")
        except Exception as fx_err:  # data-dependent Python (e.g. nn.TransformerEncoder): try torch.export
            fx_msg = f"{type(fx_err).__name__}: {' '.join(str(fx_err).split())[:200]}"
            if tracer == "fx":
                raise InputFormatError(f"module {name!r}: torch.fx could not trace it ({fx_msg})") from None
    if gm is None:
        try:
            program = torch.export.export(module, tuple(example_inputs))
            if decompose:
                program = program.run_decompositions()
            gm = program.module()
        except Exception as err:
            why = f"{type(err).__name__}: {' '.join(str(err).split())[:200]}"
            raise InputFormatError(f"module {name!r}: " + (f"neither torch.fx ({fx_msg}) nor " if fx_msg else "")
                                   + f"torch.export ({why}) could trace it") from None
        used = "export"
        notes.append("traced with torch.export (" + ("core ATen ops, decomposed" if decompose else "ATen ops") + ")"
                     + (f" because torch.fx.symbolic_trace failed: {fx_msg}" if fx_msg else ""))
    try:
        with torch.no_grad():
            ShapeProp(gm).propagate(*example_inputs)
    except Exception as err:
        raise InputFormatError(f"module {name!r}: running it on the example inputs failed "
                               f"({type(err).__name__}: {' '.join(str(err).split())[:400]})") from None
    return Traced(gm, used, name, notes)


def traced_ops(traced: Traced) -> tuple[list[OpRecord], list[tuple[str, str, float]]]:
    """Importer records (ops and edges) of a traced module; op ids are fx node names."""
    return _ops_and_edges(traced.gm, traced.name)


def _metas(node) -> list:
    meta = node.meta.get("tensor_meta")
    if meta is None:
        return []
    if hasattr(meta, "shape"):  # TensorMetadata (itself a NamedTuple)
        return [meta]
    if isinstance(meta, (tuple, list, dict)):
        meta = meta.values() if isinstance(meta, dict) else meta
        return [m for m in meta if hasattr(m, "shape")]
    return [meta]


def _tensor_bytes(meta) -> float:
    count = 1
    for d in meta.shape:
        count *= int(d)
    return float(count * meta.dtype.itemsize)


def _call_name(node) -> str:
    target = node.target
    if node.op == "call_method":
        return str(target)
    if getattr(target, "_opname", None):  # an ATen op overload (torch.export): aten.linear.default -> linear
        return str(target._opname)
    return getattr(target, "__name__", str(target)).strip("_")


def _ops_and_edges(gm, name: str):
    modules = dict(gm.named_modules())
    const: set[str] = set()     # fx nodes folded as constants
    const_params: dict[str, frozenset] = {}  # constant node -> the parameters/buffers it is computed from
    const_bytes: dict[str, float] = {}  # constant computed from shapes only -> bytes of its value
    alias: dict[str, tuple[str, float]] = {}  # getitem of a multi-output op -> (producer, bytes)
    ops: list[OpRecord] = []
    producers: set[str] = set()
    edge_bytes: dict[tuple[str, str], float] = {}
    param_bytes: dict[str, float] = {}
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        if node.op == "call_function" and _call_name(node) in SKIPPED_CALLS:
            continue
        if node.op == "call_module" and str(node.target).startswith("_guards"):
            continue
        inputs = list(node.all_input_nodes)
        dynamic = [p for p in inputs if p.name not in const]
        if node.op == "get_attr" or not dynamic or (node.op == "call_method" and node.target in SHAPE_CALLS) \
                or (node.op == "call_function" and node.target is getattr):
            const.add(node.name)
            if node.op == "get_attr":
                key = str(node.target)
                param_bytes[key] = sum(_tensor_bytes(m) for m in _metas(node))
                const_params[node.name] = frozenset({key})
            else:
                params = frozenset().union(*(const_params.get(p.name, frozenset()) for p in inputs))
                const_params[node.name] = params
                if not params:
                    const_bytes[node.name] = sum(_tensor_bytes(m) for m in _metas(node))
            continue
        if node.op == "call_function" and node.target is operator.getitem and len(dynamic) == 1 \
                and len(_metas(dynamic[0])) > 1:
            src = alias.get(dynamic[0].name, (dynamic[0].name, 0.0))[0]
            alias[node.name] = (src, sum(_tensor_bytes(m) for m in _metas(node)))
            continue
        outs = _metas(node)
        if not outs and not node.users:  # asserts and guards: no data, nothing downstream
            continue
        if not outs:
            raise InputFormatError(f"module {name!r}: node {node.name!r} ({node.op} {node.target}): no tensor "
                                   "output after shape propagation")
        op_type, in_shapes, attrs, weights = _describe(node, modules)
        consts = [p for p in inputs if p.name in const]
        used_params = frozenset().union(*(const_params.get(p.name, frozenset()) for p in consts))
        weights += sum(param_bytes[k] for k in used_params) + sum(const_bytes.get(p.name, 0.0) for p in consts)
        try:
            flops, estimated = op_flops(op_type, in_shapes, [tuple(outs[0].shape)], attrs)
        except (IndexError, TypeError, ValueError) as err:
            raise InputFormatError(f"module {name!r}: node {node.name!r} ({op_type}): inputs do not fit the op "
                                   f"(shapes {in_shapes}): {err}") from None
        label = str(node.target) if node.op == "call_module" else node.name
        ops.append(OpRecord(node.name, label, op_type, flops, weights, _used_output_bytes(node, outs), estimated,
                            _scope(node)))
        producers.add(node.name)
        for p in dynamic:
            if p.name in alias:
                src, nbytes = alias[p.name]
            elif p.name in producers:
                src, nbytes = p.name, sum(_tensor_bytes(m) for m in _metas(p))
            else:
                continue  # a graph input
            edge_bytes[(src, node.name)] = edge_bytes.get((src, node.name), 0.0) + nbytes
    return ops, [(u, v, b) for (u, v), b in edge_bytes.items()]


def _used_output_bytes(node, outs) -> float:
    """Bytes of the outputs something reads: for a multi-output op (``a, _ = attn(x)``)
    only the elements taken by ``getitem``, as the ONNX reader counts only consumed outputs."""
    if len(outs) > 1 and node.users and all(u.op == "call_function" and u.target is operator.getitem
                                            and isinstance(u.args[1], int) for u in node.users):
        used = {u.args[1] for u in node.users if u.users}  # `a, _ = attn(x)` makes a getitem for `_` too
        return sum(_tensor_bytes(outs[i]) for i in used if -len(outs) <= i < len(outs))
    return sum(_tensor_bytes(m) for m in outs)


def _scope(node) -> str | None:
    """The innermost module the call ran in, written as torch's ONNX exporter scopes names
    (``b1.c1`` -> ``/b1/c1``), so both importers give the same ``layer``."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return None
    path = list(stack.values())[-1][0]
    return "/" + str(path).replace(".", "/") if path else None


def _shape_of(arg) -> tuple[int, ...] | None:
    metas = _metas(arg) if hasattr(arg, "meta") else []
    if metas:
        return tuple(int(d) for d in metas[0].shape)
    if isinstance(arg, (int, float)) and not isinstance(arg, bool):
        return ()
    return None


def _describe(node, modules):
    """(op_type, input shapes incl. weights, attrs, weight bytes of a called module)."""
    args = [a for a in node.args if hasattr(a, "meta") or isinstance(a, (int, float))]
    if node.op == "call_module":
        mod = modules[node.target]
        cls = type(mod).__name__
        op_type = MODULE_OPS.get(cls, cls)
        weights = float(sum(t.numel() * t.element_size() for t in mod.parameters())
                        + sum(b.numel() * b.element_size() for b in mod.buffers() if b.is_floating_point()))
        x = _shape_of(node.args[0]) if node.args else None
        attrs: dict[str, Any] = {}
        if op_type in ("Conv", "ConvTranspose", "Gemm"):
            bias = getattr(mod, "bias", None)
            return op_type, [x, tuple(mod.weight.shape), None if bias is None else tuple(bias.shape)], attrs, weights
        if cls in ("LSTM", "GRU", "RNN") and x is not None:
            return cls, [x], _recurrent_attrs(mod, x), weights
        if cls == "MultiheadAttention":
            qkv = [node.args[i] if len(node.args) > i else node.kwargs.get(key)
                   for i, key in enumerate(("query", "key", "value"))]
            attrs = {"batch_first": bool(mod.batch_first), "num_heads": int(mod.num_heads)}
            return op_type, [_shape_of(a) for a in qkv], attrs, weights
        if op_type in ("MaxPool", "AveragePool"):
            k = mod.kernel_size
            dims = len(x) - 2 if x else 2
            attrs["kernel_shape"] = tuple(k) if isinstance(k, (tuple, list)) else (k,) * dims
        if op_type in ("AdaptiveAvgPool", "AdaptiveMaxPool"):
            op_type, attrs = _adaptive(op_type, x, _metas(node)[0].shape)
        if op_type == "LRN":
            attrs["size"] = mod.size
        return op_type, [x], attrs, weights
    fname = _call_name(node)
    if fname not in FUNCTION_OPS and fname.endswith("_") and fname[:-1] in FUNCTION_OPS:
        fname = fname[:-1]  # in-place ATen variants: add_, relu_, mul_ ...
    op_type = FUNCTION_OPS.get(fname, fname)
    shapes = [_shape_of(a) for a in args]
    if fname in BIAS_FIRST and len(shapes) >= 3:
        shapes = [shapes[1], shapes[2], shapes[0]]
    attrs = {}
    if op_type in ("AdaptiveAvgPool",):
        op_type, attrs = _adaptive(op_type, shapes[0], _metas(node)[0].shape)
    if op_type in ("MaxPool", "AveragePool"):
        k = node.args[1] if len(node.args) > 1 else node.kwargs.get("kernel_size", 1)
        attrs["kernel_shape"] = tuple(k) if isinstance(k, (tuple, list)) else (k, k)
    return op_type, shapes, attrs, 0.0


def _recurrent_attrs(mod, x) -> dict:
    """``nn.LSTM``/``GRU``/``RNN`` as one op: the ``layers`` of the module as (input, hidden) pairs."""
    dirs = 2 if mod.bidirectional else 1
    return {"layout": int(bool(mod.batch_first) and len(x) == 3), "torch_layers": tuple(
        (mod.input_size if i == 0 else mod.hidden_size * dirs, mod.hidden_size) for i in range(mod.num_layers)),
        "directions": dirs, "bias": bool(mod.bias)}


def _adaptive(op_type: str, x, out_shape) -> tuple[str, dict]:
    out = tuple(int(d) for d in out_shape)
    if all(d == 1 for d in out[2:]):
        return ("GlobalAveragePool" if op_type == "AdaptiveAvgPool" else "GlobalMaxPool"), {}
    kernel = tuple(max(1, i // o) for i, o in zip(x[2:], out[2:])) if x else ()
    return ("AveragePool" if op_type == "AdaptiveAvgPool" else "MaxPool"), {"kernel_shape": kernel}
