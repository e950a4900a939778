"""Fold shape computations of an ONNX model so shape inference sees every shape.

Exporters compute reshape targets at run time (``Shape -> Gather -> Mod ->
Concat -> Reshape``); ``onnx.shape_inference`` with data propagation follows
only some of these ops, leaving symbolic dimensions downstream. With static
input shapes each such value is a constant: this module evaluates the small
constant parts (``onnx.reference``), replaces them by initializers and infers
again, until nothing changes. Only values of at most :data:`MAX_FOLD_ELEMENTS`
elements are computed (never the weights), and nothing is changed in a model
whose shapes are already all known.

>>> import onnx
>>> from onnx import helper, TensorProto
>>> x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6])
>>> y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
>>> two = helper.make_tensor("two", TensorProto.INT64, [1], [2])
>>> nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Mod", ["s", "two"], ["r"]),
...          helper.make_node("Add", ["r", "two"], ["t"]), helper.make_node("Reshape", ["x", "t"], ["y"])]
>>> m = helper.make_model(helper.make_graph(nodes, "g", [x], [y], [two]))
>>> m2, folded = fold_shape_computations(m)
>>> folded, [n.op_type for n in m2.graph.node]
(3, ['Reshape'])
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper, shape_inference

#: Largest constant (in elements) this module computes; weights are never evaluated.
MAX_FOLD_ELEMENTS = 4096
_STANDARD = ("", "ai.onnx")


def unknown_shapes(m: onnx.ModelProto) -> list[str]:
    """Names of tensors (value infos and outputs) without a fully static shape."""
    out = []
    for vi in list(m.graph.value_info) + list(m.graph.output):
        if not vi.type.HasField("tensor_type"):
            continue
        tt = vi.type.tensor_type
        if not tt.HasField("shape") or not all(d.HasField("dim_value") for d in tt.shape.dim):
            out.append(vi.name)
    return out


def _shapes(m: onnx.ModelProto) -> dict[str, tuple[int, ...] | None]:
    shapes: dict[str, tuple[int, ...] | None] = {}
    for vi in list(m.graph.input) + list(m.graph.value_info) + list(m.graph.output):
        tt = vi.type.tensor_type
        if vi.type.HasField("tensor_type") and tt.HasField("shape") and all(d.HasField("dim_value") for d in tt.shape.dim):
            shapes[vi.name] = tuple(int(d.dim_value) for d in tt.shape.dim)
        else:
            shapes.setdefault(vi.name, None)
    return shapes


def _shape_value(node: onnx.NodeProto, shape: tuple[int, ...]) -> np.ndarray:
    attrs = {a.name: a.i for a in node.attribute}
    dims = np.array(shape, dtype=np.int64)
    if node.op_type == "Size":
        return np.array(int(np.prod(dims)), dtype=np.int64)
    start, end = attrs.get("start", 0), attrs.get("end", len(shape))
    return dims[start:end]


def _fold_once(m: onnx.ModelProto, opsets: dict[str, int]) -> tuple[onnx.ModelProto, int]:
    from onnx.reference import ReferenceEvaluator
    shapes = _shapes(m)
    values: dict[str, np.ndarray] = {}
    for t in m.graph.initializer:
        if int(np.prod(t.dims)) <= MAX_FOLD_ELEMENTS and t.data_location != onnx.TensorProto.EXTERNAL:
            values[t.name] = numpy_helper.to_array(t)
    keep, new_inits = [], []
    for node in m.graph.node:
        inputs = [x for x in node.input if x]
        result = None
        if node.domain in _STANDARD and not any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                                                for a in node.attribute):
            if node.op_type in ("Shape", "Size") and inputs and shapes.get(inputs[0]) is not None:
                result = [_shape_value(node, shapes[inputs[0]])]
            elif node.op_type not in ("Shape", "Size") and all(x in values for x in inputs) and (
                    inputs or node.op_type == "Constant"):
                known = shapes.get(node.output[0])
                if known is None or int(np.prod(known)) <= MAX_FOLD_ELEMENTS:
                    try:
                        result = ReferenceEvaluator(node, opsets=opsets).run(None, {x: values[x] for x in inputs})
                    except Exception:  # an op the reference runtime cannot run: leave it to the importer
                        result = None
        if result is None or any(np.asarray(r).size > MAX_FOLD_ELEMENTS for r in result):
            keep.append(node)
            continue
        for name, value in zip(node.output, result):
            if name:
                value = np.asarray(value)
                values[name] = value
                new_inits.append(numpy_helper.from_array(value, name))
    if not new_inits:
        return m, 0
    out = onnx.ModelProto()
    out.CopyFrom(m)
    del out.graph.node[:]
    out.graph.node.extend(keep)
    out.graph.initializer.extend(new_inits)
    folded_names = {t.name for t in new_inits}
    kept_vi = [vi for vi in out.graph.value_info if vi.name not in folded_names]
    del out.graph.value_info[:]
    out.graph.value_info.extend(kept_vi)
    return out, len(m.graph.node) - len(keep)


def fold_shape_computations(m: onnx.ModelProto, *, max_rounds: int = 50) -> tuple[onnx.ModelProto, int]:
    """``(model, nodes folded)``: fold until every shape is known or nothing changes.

    The input model is not modified. Shapes are re-inferred (with data
    propagation) after each round; the returned model carries them.
    """
    opsets = {d.domain or "": d.version for d in m.opset_import}
    total = 0
    for _ in range(max_rounds):
        if not unknown_shapes(m):
            break
        m, n = _fold_once(m, opsets)
        if not n:
            break
        total += n
        m = shape_inference.infer_shapes(m, strict_mode=False, data_prop=True)
    return m, total
