"""Read an ONNX model as a costed operator graph (needs the ``onnx`` extra).

Steps:

1. load and check the model (``onnx.checker``); give symbolic input dims a
   value (``dim_values``, default 1, each reported in ``graph.notes``);
2. infer every tensor's shape (``onnx.shape_inference.infer_shapes`` with data
   propagation); where run-time shape arithmetic leaves a shape unknown, fold
   those small constant computations and infer again (:mod:`viz_place.io.onnx_fold`);
3. fold constants: initializers, ``Constant``/``ConstantOfShape``/``Shape``/
   ``Size`` outputs and any node computed from constants only are not ops —
   their bytes count as weights (``size``) of each op that reads them;
4. every other node is an op with FLOPs from :mod:`viz_place.io.flops` (an op
   type with no rule gets an estimate, reported in ``graph.notes``); edges
   carry the bytes of the tensors between two ops;
5. latencies per device kind and transfer costs from the roofline model
   (:mod:`viz_place.model.roofline`, milliseconds), a default cluster, and
   backward nodes with ``training=True`` (:mod:`viz_place.io.costed`).

Node ids are the ONNX node names (``<op_type>_<index>`` where a name is empty or
repeated); a name scoped like torch's exporter writes it (``/b1/c1/Conv``) gives
the op a ``layer`` (``/b1/c1``), which the DP's ``contract_layers`` option uses.

A malformed model or one whose shapes cannot be inferred raises
:class:`~viz_place.errors.InputFormatError` naming the node or field.

>>> import onnx
>>> from onnx import helper, TensorProto
>>> x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])
>>> y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32])
>>> w = helper.make_tensor("w", TensorProto.FLOAT, [64, 32], [0.0] * 2048)
>>> m = helper.make_model(helper.make_graph(
...     [helper.make_node("MatMul", ["x", "w"], ["h"], name="fc"), helper.make_node("Relu", ["h"], ["y"], name="act")],
...     "tiny", [x], [y], [w]))
>>> g = read_onnx(m)
>>> g.num_nodes, g.node("fc").flops, g.node("fc").size, g.nx.edges["fc", "act"]["bytes"]
(2, 4096.0, 8192.0, 128.0)
"""
from __future__ import annotations

import os
from typing import Any, Mapping

import onnx
from onnx import helper, shape_inference

from ..errors import InputFormatError
from ..model import Cluster, OpGraph
from ..model.roofline import RooflineSpec
from .costed import OpRecord, build_graph
from .flops import op_flops
from .onnx_fold import fold_shape_computations, unknown_shapes

#: Ops whose output depends only on shapes or attributes: folded like constants.
CONSTANT_OPS = frozenset({"Constant", "ConstantOfShape", "Shape", "Size", "EyeLike", "RandomNormal",
                          "RandomUniform"})
#: Operator domains whose schemas onnx knows (shape inference is strict for them).
STANDARD_DOMAINS = frozenset({"", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training"})


def read_onnx(model: str | os.PathLike | onnx.ModelProto, *, name: str | None = None,
              dim_values: Mapping[str, int] | None = None, specs: Mapping[str, RooflineSpec] | None = None,
              cluster: Cluster | None = None, training: bool = False) -> OpGraph:
    """An :class:`OpGraph` from an ONNX file or ``ModelProto`` (see the module docstring).

    Parameters
    ----------
    model : path to a ``.onnx`` file or a loaded ``onnx.ModelProto``.
    name : graph name (default: the file stem or the ONNX graph name).
    dim_values : values for symbolic input dimensions (``{"batch": 8}``); others are 1.
    specs, cluster, training : see :func:`viz_place.io.costed.build_graph`.
    """
    m, where = _load(model)
    if name is None:
        name = os.path.splitext(os.path.basename(str(model)))[0] if not isinstance(model, onnx.ModelProto) \
            else (m.graph.name or "onnx_model")
    notes = _fix_dims(m, dict(dim_values or {}))
    try:  # a path lets the checker find external data beside the model
        onnx.checker.check_model(m if isinstance(model, onnx.ModelProto) else str(model))
    except onnx.checker.ValidationError as err:
        raise InputFormatError(f"{where}: invalid ONNX model: {_one_line(err)}") from None
    m, inference_note = _infer(m, where)
    if inference_note:
        notes.append(inference_note)
    if unknown_shapes(m):  # run-time shape arithmetic (Shape -> Gather -> Concat -> Reshape): fold and infer again
        m, _ = fold_shape_computations(m)
    ops, edges = _ops_and_edges(m, where, inference_note, notes)
    return build_graph(ops, edges, name=name, notes=notes, specs=specs, cluster=cluster, training=training)


def _one_line(err: Exception) -> str:
    return " ".join(str(err).split())[:500]


def _load(model: Any) -> tuple[onnx.ModelProto, str]:
    if isinstance(model, onnx.ModelProto):
        m = onnx.ModelProto()
        m.CopyFrom(model)
        return m, f"ONNX model {model.graph.name or '(unnamed)'!r}"
    path = str(model)
    if not os.path.exists(path):
        raise InputFormatError(f"{path}: file not found")
    try:
        return onnx.load(path, load_external_data=False), path  # weights' values are never needed
    except Exception as err:  # protobuf DecodeError and friends
        raise InputFormatError(f"{path}: not a readable ONNX model ({type(err).__name__}: {_one_line(err)})") from None


def _fix_dims(m: onnx.ModelProto, dim_values: dict[str, int]) -> list[str]:
    inits = {t.name for t in m.graph.initializer}
    notes, used = [], set()
    for inp in m.graph.input:
        if inp.name in inits or not inp.type.HasField("tensor_type"):
            continue
        if not inp.type.tensor_type.HasField("shape"):
            raise InputFormatError(f"graph input {inp.name!r}: field 'shape' is missing; give the model a shaped input")
        for i, dim in enumerate(inp.type.tensor_type.shape.dim):
            if dim.HasField("dim_value") and dim.dim_value > 0:
                continue
            key = dim.dim_param or f"{inp.name}[{i}]"
            value = dim_values.get(key, 1)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InputFormatError(f"graph input {inp.name!r}: value for dimension {key!r} must be a whole "
                                       f"number >= 1, got {value!r}")
            dim.Clear()
            dim.dim_value = value
            if key not in used:
                used.add(key)
                notes.append(f"graph input {inp.name!r}: symbolic dimension {key!r} set to {value}"
                             + ("" if key in dim_values else " (pass dim_values to change it)"))
    unknown = sorted(set(dim_values) - used)
    if unknown:
        have = ", ".join(sorted(used)) if used else "none (every input dimension is fixed)"
        raise InputFormatError(f"dimension(s) {', '.join(map(repr, unknown))} are not symbolic input dimensions "
                               f"of this model; its symbolic dimensions: {have}", field="dim")
    return notes


def _infer(m: onnx.ModelProto, where: str) -> tuple[onnx.ModelProto, str]:
    """Strict shape inference; only a model with ops from other domains (no
    schema here) falls back to lenient inference, with the error as a note."""
    try:
        return shape_inference.infer_shapes(m, strict_mode=True, data_prop=True), ""
    except Exception as strict_err:  # InferenceError, or a schema missing for a custom op
        custom = sorted({n.domain for n in m.graph.node if n.domain not in STANDARD_DOMAINS})
        if not custom:
            raise InputFormatError(f"{where}: shape inference failed: {_one_line(strict_err)}") from None
        try:
            inferred = shape_inference.infer_shapes(m, strict_mode=False, data_prop=True)
        except Exception as err:
            raise InputFormatError(f"{where}: shape inference failed: {_one_line(err)}") from None
        return inferred, (f"ops from domain(s) {', '.join(map(repr, custom))} have no shape rules here; "
                          f"strict shape inference reported: {_one_line(strict_err)}")


def _tensor_types(m: onnx.ModelProto) -> dict[str, tuple[tuple[int, ...] | None, int]]:
    """tensor name -> (shape or None if unknown, elem_type)."""
    out: dict[str, tuple[tuple[int, ...] | None, int]] = {}
    g = m.graph
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        tt = vi.type.tensor_type
        if not vi.type.HasField("tensor_type"):
            continue
        shape = None
        if tt.HasField("shape") and all(d.HasField("dim_value") for d in tt.shape.dim):
            shape = tuple(int(d.dim_value) for d in tt.shape.dim)
        if shape is not None or vi.name not in out:
            out[vi.name] = (shape, tt.elem_type)
    for t in g.initializer:
        out[t.name] = (tuple(int(d) for d in t.dims), t.data_type)
    return out


def _itemsize(elem_type: int, tensor: str, node: str) -> int:
    try:
        dtype = helper.tensor_dtype_to_np_dtype(elem_type)
    except Exception:
        dtype = None
    if dtype is not None and dtype.kind != "O":  # object = strings: no fixed size
        return dtype.itemsize
    raise InputFormatError(f"node {node!r}: tensor {tensor!r} has element type {elem_type} "
                           f"({_dtype_name(elem_type)}), whose size in bytes is unknown")


def _dtype_name(elem_type: int) -> str:
    try:
        return onnx.TensorProto.DataType.Name(elem_type)
    except ValueError:
        return "not an ONNX type"


def _node_ids(nodes) -> list[str]:
    ids, seen = [], set()
    for i, n in enumerate(nodes):
        base = n.name or f"{n.op_type}_{i}"
        nid = base if base not in seen else f"{base}_{i}"
        seen.add(nid)
        ids.append(nid)
    return ids


def _ops_and_edges(m: onnx.ModelProto, where: str, inference_note: str, notes: list[str]):
    g = m.graph
    types = _tensor_types(m)
    ids = _node_ids(g.node)
    const = {t.name for t in g.initializer}
    producer: dict[str, int] = {}
    op_nodes: list[int] = []
    for i, n in enumerate(g.node):
        inputs = [x for x in n.input if x]
        if n.op_type in CONSTANT_OPS or (n.domain in ("", "ai.onnx") and all(x in const for x in inputs)
                                         and not _has_subgraph(n)):
            const.update(o for o in n.output if o)
            continue
        for x in inputs:
            if x not in const and x not in producer and x not in types:
                raise InputFormatError(f"{where}: node {ids[i]!r} ({n.op_type}): input {x!r} is produced by no node "
                                       "and is no graph input or initializer")
        for o in n.output:
            if o:
                producer[o] = len(op_nodes)
        op_nodes.append(i)
    for i in op_nodes:
        if _has_subgraph(g.node[i]):
            notes.append(f"node {ids[i]!r} ({g.node[i].op_type}) has a subgraph: costed as one op, and tensors its "
                         "body reads from the outer graph give no edges")
    consumed = {x for j in op_nodes for x in g.node[j].input if x} | {o.name for o in g.output}

    def nbytes(tensor: str, node_id: str) -> float:
        shape, elem = types.get(tensor, (None, 0))
        if shape is None:
            hint = f" ({inference_note})" if inference_note else ""
            raise InputFormatError(f"{where}: node {node_id!r}: shape of tensor {tensor!r} is unknown after shape "
                                   f"inference{hint}")
        count = 1
        for d in shape:
            count *= d
        return float(count * _itemsize(elem, tensor, node_id))

    ops, edge_bytes = [], {}
    for k, i in enumerate(op_nodes):
        n, nid = g.node[i], ids[i]
        outs = [o for o in n.output if o]
        if not outs:
            raise InputFormatError(f"{where}: node {nid!r} ({n.op_type}) has no output")
        in_shapes = [types.get(x, (None, 0))[0] if x else None for x in n.input]
        for x, s in zip(n.input, in_shapes):
            if x and s is None:
                nbytes(x, nid)  # raises, naming the tensor
        out_shapes = [types.get(o, (None, 0))[0] for o in outs]
        if out_shapes[0] is None:
            nbytes(outs[0], nid)
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute
                 if a.type in (onnx.AttributeProto.INT, onnx.AttributeProto.INTS, onnx.AttributeProto.FLOAT)}
        attrs.update({a.name: a.s.decode("utf-8", "replace") for a in n.attribute
                      if a.type == onnx.AttributeProto.STRING})
        try:
            flops, estimated = op_flops(n.op_type, in_shapes, out_shapes, attrs)
        except (IndexError, TypeError) as err:
            raise InputFormatError(f"{where}: node {nid!r} ({n.op_type}): inputs do not fit the op "
                                   f"(shapes {in_shapes}): {err}") from None
        weights = sum(nbytes(x, nid) for x in set(n.input) if x and x in const)
        used = [o for o in outs if o in consumed] or outs[:1]
        out_b = sum(nbytes(o, nid) for o in used if types.get(o, (None, 0))[0] is not None)
        ops.append(OpRecord(nid, n.name or nid, n.op_type, flops, weights, out_b, estimated, _scope(n.name)))
        for x in set(n.input):
            if x in producer:
                key = (ids[op_nodes[producer[x]]], nid)
                edge_bytes[key] = edge_bytes.get(key, 0.0) + nbytes(x, nid)
    return ops, [(u, v, b) for (u, v), b in edge_bytes.items()]


def _scope(name: str) -> str | None:
    """Module scope of a node named like torch's exporter does (``/b1/c1/Conv`` -> ``/b1/c1``)."""
    head, sep, _ = name.rpartition("/")
    return head if sep and head else None


def _has_subgraph(n: onnx.NodeProto) -> bool:
    return any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in n.attribute)
