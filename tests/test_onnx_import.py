"""ONNX import: shapes, constant folding, FLOPs rules, edges, notes, errors, training."""
from __future__ import annotations

import math
from pathlib import Path

import networkx as nx
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from viz_place.errors import InputFormatError  # noqa: E402
from viz_place.io import load_graph  # noqa: E402
from viz_place.io.onnx import read_onnx  # noqa: E402
from viz_place.model.roofline import PRESETS, default_specs, node_bytes  # noqa: E402

LIGHT = Path(onnx.__file__).resolve().parent / "backend" / "test" / "data" / "light"
LIGHT_MODELS = sorted(p.stem for p in LIGHT.glob("light_*.onnx"))


def _model(nodes, inputs, outputs, inits=(), opset=17, **kw):
    graph = helper.make_graph(nodes, "t", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], **kw)


def _vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def _zeros(name, shape):
    return helper.make_tensor(name, TensorProto.FLOAT, shape, [0.0] * math.prod(shape))


# --- the acceptance figures on real architectures ------------------------------
def test_resnet50_flops_match_published_figure():
    g = read_onnx(LIGHT / "light_resnet50.onnx")
    # ResNet-50 at 224x224: ~4.1 G multiply-adds = ~8.2 GFLOPs (He et al. 2016, Table 1: 3.8e9 "FLOPs" = MACs
    # of conv/fc only; common profilers report 4.1 G MACs including the projection shortcuts).
    assert g.total_flops == pytest.approx(8.2e9, rel=0.10)
    convs = [n for n in g.nodes() if n.op_type == "Conv"]
    assert len(convs) == 53
    # weights: ~25.5 M parameters in fp32 (+ BN statistics) ~ 100 MB
    assert sum(n.size for n in g.nodes()) == pytest.approx(25.5e6 * 4, rel=0.05)


@pytest.mark.parametrize("stem, gmacs", [("light_vgg19", 19.6), ("light_densenet121", 2.87),
                                         ("light_inception_v1", 1.5)])
def test_other_published_flops(stem, gmacs):
    assert read_onnx(LIGHT / f"{stem}.onnx").total_flops == pytest.approx(2 * gmacs * 1e9, rel=0.10)


@pytest.mark.parametrize("stem", LIGHT_MODELS)
def test_every_light_model_imports_as_a_costed_dag(stem):
    m = onnx.load(LIGHT / f"{stem}.onnx")
    g = read_onnx(LIGHT / f"{stem}.onnx")
    assert nx.is_directed_acyclic_graph(g.nx) and g.num_nodes > 0
    types = {n.op_type for n in g.nodes()}
    assert "ConstantOfShape" not in types and "Constant" not in types
    # an ONNX node is an op iff it reads (transitively) the model's real input; the rest are folded
    inits = {t.name for t in m.graph.initializer}
    dynamic = {i.name for i in m.graph.input if i.name not in inits}
    ops = 0
    for n in m.graph.node:
        if any(i in dynamic for i in n.input):
            dynamic.update(n.output)
            ops += 1
    assert g.num_nodes == ops < len(m.graph.node)
    assert not g.notes  # every op type of these models has a rule
    assert set(g.kinds) == {"cpu", "gpu"} and g.default_cluster is not None
    for n in g.nodes():
        assert n.flops is not None and n.output_bytes > 0
        if n.op_type in ("Conv", "Gemm"):
            assert n.size > 0 and n.flops > 0 and n.latency["gpu"] > 0
    for u, v in g.edges:
        assert g.nx.edges[u, v]["bytes"] > 0


def test_edges_carry_tensor_bytes_and_latency_follows_the_roofline():
    g = read_onnx(LIGHT / "light_resnet50.onnx")
    conv = next(n for n in g.nodes() if n.op_type == "Conv")
    (succ,) = g.successors(conv.id)
    assert g.nx.edges[conv.id, succ]["bytes"] == conv.output_bytes == 1 * 64 * 112 * 112 * 4
    specs = default_specs()
    b = node_bytes(g, conv.id)
    for kind, spec in specs.items():
        expected = 1e3 * (max(conv.flops / spec.peak_flops, b / spec.memory_bandwidth) + spec.launch_overhead)
        assert conv.latency[kind] == pytest.approx(expected, rel=1e-12)
    assert conv.transfer_cost == pytest.approx(1e3 * conv.output_bytes / specs["gpu"].link_bandwidth)
    flat = next(n for n in g.nodes() if n.op_type == "Reshape")
    assert flat.flops == 0 and flat.latency == {"cpu": 0.0, "gpu": 0.0}


# --- rules on hand-built models -----------------------------------------------
def test_constants_fold_into_their_consumer_as_weights():
    shape = helper.make_tensor("s", TensorProto.INT64, [2], [16, 8])
    nodes = [helper.make_node("ConstantOfShape", ["s"], ["w"], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.5])),
             helper.make_node("Constant", [], ["b"], value=_zeros("bv", [8])),
             helper.make_node("Gemm", ["x", "w", "b"], ["h"], name="fc"),
             helper.make_node("Shape", ["h"], ["hs"]),
             helper.make_node("Reshape", ["h", "hs"], ["y"], name="view")]
    g = read_onnx(_model(nodes, [_vi("x", [4, 16])], [_vi("y", [4, 8])], [shape]))
    assert g.node_ids == ("fc", "view")
    fc = g.node("fc")
    assert fc.size == 16 * 8 * 4 + 8 * 4
    assert fc.flops == 2 * 4 * 8 * 16 + 4 * 8
    assert g.node("view").size == 2 * 8  # the folded shape tensor (int64)
    assert g.nx.edges["fc", "view"]["bytes"] == 4 * 8 * 4


@pytest.mark.parametrize("op, inputs, out_shape, attrs, flops", [
    ("Conv", [("x", [1, 4, 8, 8]), ("w", [6, 2, 3, 3])], [1, 6, 6, 6], {"group": 2}, 2 * 216 * 18),
    ("ConvTranspose", [("x", [1, 4, 5, 5]), ("w", [4, 3, 2, 2])], [1, 3, 10, 10], {"strides": [2, 2]}, 2 * 100 * 12),
    ("MatMul", [("x", [2, 5, 7]), ("w", [7, 3])], [2, 5, 3], {}, 2 * 30 * 7),
    ("MaxPool", [("x", [1, 2, 8, 8])], [1, 2, 4, 4], {"kernel_shape": [2, 2], "strides": [2, 2]}, 32 * 4),
    ("Softmax", [("x", [3, 10])], [3, 10], {}, 150),
    ("ReduceMean", [("x", [3, 10])], [1, 1], {}, 30),
    ("Sigmoid", [("x", [3, 10])], [3, 10], {}, 120),
    ("Transpose", [("x", [3, 10])], [10, 3], {}, 0),
    ("Einsum", [("x", [2, 5, 7]), ("w", [7, 3])], [2, 5, 3], {"equation": "bij,jk->bik"}, 2 * 2 * 5 * 7 * 3),
    ("LSTM", [("x", [6, 2, 10]), ("w", [1, 4 * 8, 10]), ("r", [1, 4 * 8, 8])], [6, 1, 2, 8], {"hidden_size": 8},
     6 * 2 * (2 * 4 * 8 * (10 + 8) + 24 * 8)),
    ("GRU", [("x", [2, 6, 10]), ("w", [2, 3 * 8, 10]), ("r", [2, 3 * 8, 8])], [2, 6, 2, 8],
     {"hidden_size": 8, "direction": "bidirectional", "layout": 1}, 2 * 6 * 2 * (2 * 3 * 8 * (10 + 8) + 17 * 8)),
])
def test_flops_rules(op, inputs, out_shape, attrs, flops):
    inits = [_zeros(n, s) for n, s in inputs[1:]]
    node = helper.make_node(op, [n for n, _ in inputs], ["y"], name="op", **attrs)
    g = read_onnx(_model([node], [_vi(*inputs[0])], [_vi("y", out_shape)], inits))
    assert g.node("op").flops == flops
    assert g.node("op").size == sum(4 * math.prod(s) for _, s in inputs[1:])


def test_unknown_op_type_is_estimated_and_reported():
    nodes = [helper.make_node("Relu", ["x"], ["h"], name="r"),
             helper.make_node("Fancy", ["h"], ["y"], name="fancy", domain="com.example")]
    m = _model(nodes, [_vi("x", [2, 3])], [_vi("y", [2, 3])])
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    m.graph.value_info.append(_vi("y", [2, 3]))
    g = read_onnx(m)
    assert g.node("fancy").flops == 6
    assert any("'Fancy'" in note and "estimated" in note and "'fancy'" in note for note in g.notes)


def test_symbolic_dims_get_values_and_a_note():
    node = helper.make_node("Relu", ["x"], ["y"], name="r")
    m = _model([node], [_vi("x", ["batch", 8])], [_vi("y", ["batch", 8])])
    g = read_onnx(m)
    assert g.node("r").flops == 8 and any("'batch' set to 1" in n for n in g.notes)
    assert read_onnx(m, dim_values={"batch": 16}).node("r").flops == 128


def test_training_adds_backward_twins():
    g = read_onnx(LIGHT / "light_squeezenet.onnx")
    t = read_onnx(LIGHT / "light_squeezenet.onnx", training=True)
    assert t.num_nodes == 2 * g.num_nodes and t.is_training
    for n in g.nodes():
        b = t.node(f"{n.id}__grad")
        assert b.backward and b.flops == 2 * n.flops and b.size == n.size
        assert b.color_class == t.node(n.id).color_class
    for u, v in g.edges:
        assert t.nx.has_edge(f"{v}__grad", f"{u}__grad")
        assert t.nx.edges[f"{v}__grad", f"{u}__grad"]["bytes"] == g.nx.edges[u, v]["bytes"]
    assert t.total_flops == pytest.approx(3 * g.total_flops)


def test_other_specs_and_cluster():
    from viz_place.model import Cluster, DeviceClass
    specs = {"cpu": PRESETS["xeon-8380"], "npu": PRESETS["coral-edgetpu"]}
    cluster = Cluster((DeviceClass("host", "cpu", 1, pays_communication=False), DeviceClass("edge", "npu", 2)))
    g = read_onnx(LIGHT / "light_squeezenet.onnx", specs=specs, cluster=cluster)
    assert set(g.kinds) == {"cpu", "npu"}
    assert g.default_cluster.class_named("edge").memory == 8e6
    conv = next(n for n in g.nodes() if n.op_type == "Conv")
    assert conv.transfer_cost == pytest.approx(1e3 * conv.output_bytes / 0.5e9)


def test_load_graph_dispatches_onnx_paths():
    g = load_graph(LIGHT / "light_bvlc_alexnet.onnx")
    assert g.name == "light_bvlc_alexnet" and g.total_flops > 1e9


# --- clear errors ------------------------------------------------------------
def test_unreadable_file(tmp_path):
    p = tmp_path / "junk.onnx"
    p.write_bytes(b"\x00\x01 not a protobuf \xff" * 10)
    with pytest.raises(InputFormatError, match="junk.onnx"):
        read_onnx(p)


def test_missing_input_names_the_node():
    node = helper.make_node("Add", ["x", "ghost"], ["y"], name="adder")
    m = _model([node], [_vi("x", [2])], [_vi("y", [2])])
    with pytest.raises(InputFormatError, match="ghost"):
        read_onnx(m)


def test_shape_mismatch_names_the_node():
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="bad_mm")
    m = _model([node], [_vi("x", [2, 3])], [_vi("y", [2, 5])], [_zeros("w", [4, 5])])
    with pytest.raises(InputFormatError, match="bad_mm|MatMul"):
        read_onnx(m)


def test_unknown_shape_names_node_and_tensor():
    nodes = [helper.make_node("Mystery", ["x"], ["h"], name="myst", domain="com.example"),
             helper.make_node("Relu", ["h"], ["y"], name="r")]
    m = _model(nodes, [_vi("x", [2, 3])], [_vi("y", [2, 3])])
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    with pytest.raises(InputFormatError, match=r"node 'myst'.*tensor 'h'"):
        read_onnx(m)


def test_string_tensor_is_reported():
    node = helper.make_node("Identity", ["x"], ["y"], name="ident")
    m = _model([node], [_vi("x", [2], TensorProto.STRING)], [_vi("y", [2], TensorProto.STRING)])
    with pytest.raises(InputFormatError, match="ident.*STRING"):
        read_onnx(m)


def test_nodes_out_of_order_are_rejected_by_name():
    nodes = [helper.make_node("Relu", ["h"], ["y"], name="second"), helper.make_node("Relu", ["x"], ["h"], name="first")]
    with pytest.raises(InputFormatError, match="invalid ONNX model.*(topolog|h)"):
        read_onnx(_model(nodes, [_vi("x", [2])], [_vi("y", [2])]))


def test_subgraph_ops_are_costed_and_reported():
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [], [_vi("t", [2])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [_vi("e", [2])])
    cond = helper.make_tensor("c", TensorProto.BOOL, [], [True])
    nodes = [helper.make_node("Relu", ["x"], ["h"], name="pre"),
             helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then_g, else_branch=else_g)]
    g = read_onnx(_model(nodes, [_vi("x", [2])], [_vi("y", [2])], [cond]))
    assert g.node("branch").flops == 2
    assert any("'branch' (If) has a subgraph" in n for n in g.notes)
    assert any("'If'" in n and "estimated" in n for n in g.notes)


def test_external_data_beside_the_model(tmp_path, monkeypatch):
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
    import numpy as np
    w = onnx.numpy_helper.from_array(np.zeros((64, 64), dtype=np.float32), "w")
    m = _model([node], [_vi("x", [1, 64])], [_vi("y", [1, 64])], [w])
    path = tmp_path / "ext.onnx"
    onnx.save_model(m, str(path), save_as_external_data=True, all_tensors_to_one_file=True, location="w.bin",
                    size_threshold=0)
    monkeypatch.chdir(tmp_path.parent)  # external data resolves beside the model, not in the working folder
    assert read_onnx(path).node("mm").size == 64 * 64 * 4
    (tmp_path / "w.bin").unlink()
    with pytest.raises(InputFormatError, match="w.bin"):
        read_onnx(path)


def test_run_time_shape_arithmetic_is_folded():
    from viz_place.io.onnx_fold import unknown_shapes
    ints = lambda name, vals: helper.make_tensor(name, TensorProto.INT64, [len(vals)], vals)  # noqa: E731
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
             helper.make_node("Mod", ["b", "five"], ["bm"]), helper.make_node("Mul", ["bm", "two"], ["b2"]),
             helper.make_node("Concat", ["b2", "m1"], ["t"], axis=0),
             helper.make_node("Reshape", ["x", "t"], ["h"], name="view"),
             helper.make_node("MatMul", ["h", "w"], ["y"], name="mm")]
    inits = [ints("zero", [0]), ints("five", [5]), ints("two", [2]), ints("m1", [-1]), _zeros("w", [3, 3])]
    m = _model(nodes, [_vi("x", [4, 6])], [_vi("y", ["rows", "cols"])], inits)
    # Mod stops onnx's data propagation: the Reshape target, hence h and y, stay symbolic
    assert "y" in unknown_shapes(onnx.shape_inference.infer_shapes(m, data_prop=True))
    g = read_onnx(m)
    assert g.node_ids == ("view", "mm")
    assert g.nx.edges["view", "mm"]["bytes"] == 8 * 3 * 4  # h = x reshaped to (4 % 5 * 2, -1) = (8, 3)
    assert g.node("mm").flops == 2 * (8 * 3) * 3


def test_einsum_with_broadcasting_is_estimated_and_reported():
    node = helper.make_node("Einsum", ["x", "w"], ["y"], name="ein", equation="...ij,jk->...ik")
    g = read_onnx(_model([node], [_vi("x", [2, 5, 7])], [_vi("y", [2, 5, 3])], [_zeros("w", [7, 3])]))
    assert g.node("ein").flops == 2 * 5 * 3
    assert any("'Einsum'" in n and "'ein'" in n for n in g.notes)
