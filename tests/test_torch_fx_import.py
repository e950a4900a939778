"""torch.fx import: the same graph and FLOPs as torch.onnx.export + the ONNX importer."""
from __future__ import annotations

import io
import warnings

import networkx as nx
import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")

from viz_place.errors import InputFormatError  # noqa: E402
from viz_place.io.onnx import read_onnx  # noqa: E402
from viz_place.io.torch_fx import read_torch  # noqa: E402


class Block(torch.nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.c1 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(c)
        self.c2 = torch.nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return torch.relu(x + self.c2(torch.relu(self.bn1(self.c1(x)))))


class ResNetLet(torch.nn.Module):
    """A small residual network: stem, two residual blocks, pooling, classifier."""

    def __init__(self, c: int = 8) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(3, c, 3, stride=2, padding=1)
        self.pool0 = torch.nn.MaxPool2d(2)
        self.b1, self.b2 = Block(c), Block(c)
        self.head = torch.nn.AdaptiveAvgPool2d(1)
        self.fc = torch.nn.Linear(c, 10)

    def forward(self, x):
        x = self.b2(self.b1(self.pool0(torch.relu(self.stem(x)))))
        return torch.softmax(self.fc(torch.flatten(self.head(x), 1)), dim=1)


def _via_onnx(module, x):
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # TRAINING keeps BatchNormalization as an op (eval-mode export fuses it into the Conv).
        torch.onnx.export(module, (x,), buf, dynamo=False, training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
    return read_onnx(onnx.load_from_string(buf.getvalue()))


def test_same_graph_and_flops_as_onnx_export():
    torch.manual_seed(0)
    m, x = ResNetLet(), torch.randn(2, 3, 32, 32)
    g_fx, g_onnx = read_torch(m, (x,)), _via_onnx(m, x)
    assert g_fx.num_nodes == g_onnx.num_nodes and g_fx.num_edges == g_onnx.num_edges
    same_op = lambda a, b: a["op_type"] == b["op_type"]  # noqa: E731
    assert nx.is_isomorphic(g_fx.nx, g_onnx.nx, node_match=same_op)
    assert sorted(n.op_type for n in g_fx.nodes()) == sorted(n.op_type for n in g_onnx.nodes())
    assert g_fx.total_flops == pytest.approx(g_onnx.total_flops, rel=0.01)
    # conv FLOPs by hand: 2 * out elements * (C_in * 3 * 3)
    stem = g_fx.node("stem")
    assert stem.flops == 2 * (2 * 8 * 16 * 16) * 27 + 2 * 8 * 16 * 16
    assert sum(n.size for n in g_fx.nodes()) == pytest.approx(sum(n.size for n in g_onnx.nodes()), rel=0.01)
    assert sorted(g_fx.nx.edges[e]["bytes"] for e in g_fx.edges) == \
        sorted(g_onnx.nx.edges[e]["bytes"] for e in g_onnx.edges)
    assert g_fx.notes == ["traced with torch.fx.symbolic_trace (module calls and torch functions)"] and not g_onnx.notes
    assert sorted((n.op_type, n.layer or "") for n in g_fx.nodes()) == \
        sorted((n.op_type, n.layer or "") for n in g_onnx.nodes())
    assert g_fx.node("b1_c1").layer == "/b1/c1" and g_fx.node("add").layer == "/b1"


def test_training_variant_and_latencies():
    m, x = ResNetLet(), torch.randn(1, 3, 32, 32)
    g = read_torch(m, (x,), training=True)
    fwd = [n for n in g.nodes() if not n.backward]
    assert g.num_nodes == 2 * len(fwd)
    for n in fwd:
        assert set(n.latency) == {"cpu", "gpu"}
        assert g.node(f"{n.id}__grad").flops == 2 * n.flops


class Weird(torch.nn.Module):
    def forward(self, x):
        return torch.flip(x, dims=[1]) + x.size(0)


def test_unknown_call_is_estimated_and_shape_reads_fold():
    g = read_torch(Weird(), (torch.randn(2, 5),))
    types = {n.op_type for n in g.nodes()}
    assert types == {"flip", "Add"}  # x.size(0) is folded as a constant
    (est,) = [n for n in g.nodes() if n.op_type == "flip"]
    assert est.flops == 10
    assert any("'flip'" in note and "estimated" in note for note in g.notes)


class Broken(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x)


def test_errors_are_clear():
    with pytest.raises(InputFormatError, match="running it on the example inputs failed"):
        read_torch(Broken(), (torch.randn(2, 5),))
    with pytest.raises(InputFormatError, match="torch.nn.Module"):
        read_torch(object(), (torch.randn(2, 5),))
    with pytest.raises(InputFormatError, match="example_inputs"):
        read_torch(Broken(), ())


def test_transformer_export_imports_with_shape_arithmetic_folded():
    # The exporter computes reshape targets at run time (Shape/Gather/Concat); they fold away.
    torch.manual_seed(0)
    B, S, D, F, L = 2, 16, 64, 128, 2
    layer = torch.nn.TransformerEncoderLayer(D, 4, F, batch_first=True, dropout=0.0)
    m = torch.nn.TransformerEncoder(layer, L, enable_nested_tensor=False).eval()
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(m, (torch.randn(B, S, D),), buf, dynamo=False)
    g = read_onnx(onnx.load_from_string(buf.getvalue()))
    assert not any(n.op_type in ("Shape", "Constant", "ConstantOfShape") for n in g.nodes())
    matmuls = sum(n.flops for n in g.nodes() if n.op_type in ("MatMul", "Gemm"))
    per_layer = 4 * 2 * B * S * D * D + 2 * 2 * B * S * S * D + 2 * 2 * B * S * D * F  # projections, attention, MLP
    assert matmuls == pytest.approx(L * per_layer, rel=0.03)  # + biases
    assert g.total_flops == pytest.approx(L * per_layer, rel=0.15)  # + softmax, norms, adds


def test_untraceable_module_falls_back_to_torch_export():
    torch.manual_seed(0)
    B, S, D, F = 2, 16, 64, 128
    layer = torch.nn.TransformerEncoderLayer(D, 4, F, batch_first=True, dropout=0.0)
    m = torch.nn.TransformerEncoder(layer, 1, enable_nested_tensor=False).eval()
    x = torch.randn(B, S, D)
    g = read_torch(m, (x,))
    assert any("torch.export" in n for n in g.notes)
    assert not any("estimated" in n for n in g.notes)
    assert sum(1 for n in g.nodes() if n.op_type == "Attention") == 1
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(m, (x,), buf, dynamo=False)
    g_onnx = read_onnx(onnx.load_from_string(buf.getvalue()))
    # the ONNX export spells attention as MatMul/Softmax: different ops, (nearly) the same arithmetic
    assert g.total_flops == pytest.approx(g_onnx.total_flops, rel=0.03)
    assert sum(n.size for n in g.nodes()) == pytest.approx(sum(n.size for n in g_onnx.nodes()), rel=0.01)


class AttentionBlock(torch.nn.Module):
    def __init__(self, d: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.att = torch.nn.MultiheadAttention(d, heads, batch_first=True)
        self.norm = torch.nn.LayerNorm(d)

    def forward(self, x):
        a, _ = self.att(x, x, x)
        return self.norm(x + a)


def test_multihead_attention_is_one_op_with_the_flops_of_its_export():
    torch.manual_seed(0)
    m, x = AttentionBlock().eval(), torch.randn(2, 16, 64)
    g = read_torch(m, (x,))
    assert [n.op_type for n in g.nodes()] == ["MultiheadAttention", "Add", "LayerNormalization"]
    assert g.notes == ["traced with torch.fx.symbolic_trace (module calls and torch functions)"]
    b, s, e, h = 2, 16, 64, 4
    assert g.node("att").flops == 2 * b * 4 * s * e * e + b * 4 * s * e + 2 * 2 * b * s * s * e + 5 * b * h * s * s
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(m, (x,), buf, dynamo=False)
    g_onnx = read_onnx(onnx.load_from_string(buf.getvalue()))
    assert g.total_flops == pytest.approx(g_onnx.total_flops, rel=0.03)
    assert g.node("att").size == pytest.approx(4 * (4 * e * e + 4 * e))
    assert g.node("att").output_bytes == b * s * e * 4  # the unused attention weights are not shipped
    assert g.node("att").output_bytes == g_onnx.nodes()[-1].output_bytes


class Tagger(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = torch.nn.LSTM(10, 8, num_layers=2, bidirectional=True)
        self.out = torch.nn.Linear(16, 4)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.out(y)


def test_lstm_module_matches_its_onnx_export():
    torch.manual_seed(0)
    m, x = Tagger().eval(), torch.randn(6, 2, 10)
    g = read_torch(m, (x,))
    assert not [n for n in g.notes if "estimated" in n] and g.node("rnn").op_type == "LSTM"
    # layer 1: input 10, layer 2: input 2 * 8 (both directions), 4 gates, hidden 8
    per_step = sum(2 * (2 * 4 * 8 * (i + 8) + 8 * 8 + 24 * 8) for i in (10, 16))
    assert g.node("rnn").flops == 6 * 2 * per_step
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(m, (x,), buf, dynamo=False)
    g_onnx = read_onnx(onnx.load_from_string(buf.getvalue()))
    assert not [n for n in g_onnx.notes if "estimated" in n]
    assert sum(n.flops for n in g_onnx.nodes() if n.op_type == "LSTM") == pytest.approx(g.node("rnn").flops, rel=1e-9)
    assert g.total_flops == pytest.approx(g_onnx.total_flops, rel=0.01)
