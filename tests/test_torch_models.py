"""PyTorch / Hugging Face models in: build from configs, import at op and module
granularity, the source record, module mapping, errors."""
from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from viz_place.cli.main import main  # noqa: E402
from viz_place.errors import InputFormatError, PlacementError, SolverError  # noqa: E402
from viz_place.io import read_nodelink, write_nodelink  # noqa: E402
from viz_place.io.torch_import import import_torch  # noqa: E402
from viz_place.io.torch_models import build_model  # noqa: E402
from viz_place.io.torch_export_placement import device_map  # noqa: E402
from viz_place.model.modules import (assignment_from_device_map, is_within, layer_to_path,  # noqa: E402
                                     repeated_blocks)
from viz_place.solvers import run_solver  # noqa: E402
from viz_place.testing import check_placement  # noqa: E402

TINY_GPT2 = {"n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": 500, "n_positions": 64, "bos_token_id": 0,
             "eos_token_id": 0}
TINY_RESNET = {"embedding_size": 8, "hidden_sizes": [8, 16], "depths": [1, 1], "layer_type": "basic",
               "num_labels": 10}


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp = torch.nn.Linear(32, 64)
        self.blocks = torch.nn.ModuleList(torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU())
                                          for _ in range(4))
        self.out = torch.nn.Linear(64, 10)

    def forward(self, x):
        x = self.inp(x)
        for b in self.blocks:
            x = x + b(x)
        return self.out(x)


def _solve_2(g):
    p = run_solver("dp", g, g.default_cluster, pins={}, options={})
    assert check_placement(g, g.default_cluster, p) == []
    assert len(set(p.assignment.values())) >= 2  # a real split
    return p


def test_builder_is_deterministic_and_in_eval_mode():
    a = build_model("hf:gpt2", TINY_GPT2, seq_len=8, seed=3)
    b = build_model("hf:gpt2", TINY_GPT2, seq_len=8, seed=3)
    assert not a.module.training and a.module.config.use_cache is False
    assert torch.equal(a.example_inputs[0], b.example_inputs[0])
    assert all(torch.equal(p, q) for p, q in zip(a.module.parameters(), b.module.parameters()))
    c = build_model("hf:gpt2", TINY_GPT2, seq_len=8, seed=4)
    assert not torch.equal(next(a.module.parameters()), next(c.module.parameters()))
    assert a.source() == {"spec": "hf:gpt2", "overrides": TINY_GPT2, "batch": 1, "seq_len": 8, "image_size": None,
                          "seed": 3}


@pytest.mark.parametrize("spec,cls", [("hf:bert", "BertModel"), ("hf:llama", "LlamaForCausalLM"),
                                      ("hf:vit", "ViTForImageClassification"),
                                      ("hf:convnext", "ConvNextForImageClassification")])
def test_every_model_type_builds_on_meta(spec, cls):
    b = build_model(spec, meta=True)  # full default configs (Llama: 6.7 B parameters) cost nothing on meta
    assert type(b.module).__name__ == cls and b.example_inputs[0].is_meta
    if spec == "hf:llama":
        assert b.parameter_bytes > 20e9


def test_mlp_imports_and_solves_with_module_paths():
    torch.manual_seed(0)
    g = import_torch(MLP(), (torch.randn(4, 32),))
    assert {n.layer for n in g.nodes()} >= {"/inp", "/blocks/0/0", "/out"}
    assert "traced with torch.fx.symbolic_trace" in g.notes[0] and g.source["tracer"] == "fx"
    assert repeated_blocks(g).blocks == ("blocks.0", "blocks.1", "blocks.2", "blocks.3")
    _solve_2(g)
    m = import_torch(MLP(), (torch.randn(4, 32),), granularity="module")
    assert [n.id for n in m.nodes()] == ["inp", "blocks.0", "(root)", "blocks.1", "(root)#2", "blocks.2",
                                         "(root)#3", "blocks.3", "(root)#4", "out"]
    assert m.total_flops == pytest.approx(g.total_flops) and m.source["depth"] == 2
    # each module's latency is the sum of its ops' latencies
    ops_of_block = [n for n in g.nodes() if layer_to_path(n.layer).startswith("blocks.1")]
    assert m.node("blocks.1").latency["gpu"] == pytest.approx(sum(n.latency["gpu"] for n in ops_of_block))


def test_tiny_gpt2_op_and_module_granularity_solve_and_map_back():
    g = import_torch("hf:gpt2", overrides=TINY_GPT2, seq_len=16)
    assert g.source["tracer"] == "export" and any("torch.export" in n for n in g.notes)
    assert not [n for n in g.notes if "estimated" in n]
    assert sum(1 for n in g.nodes() if n.layer) > 0.95 * g.num_nodes  # only the root's own ops have none
    _solve_2(g)
    m = import_torch("hf:gpt2", overrides=TINY_GPT2, seq_len=16, granularity="module")
    assert m.source["granularity"] == "module" and m.source["depth"] == 3
    assert {"transformer.h.0", "transformer.h.1", "lm_head", "transformer.wte"} <= set(m.node_ids)
    assert m.total_flops == pytest.approx(g.total_flops)
    p = _solve_2(m)
    model = build_model("hf:gpt2", TINY_GPT2, seq_len=16, meta=True).module
    dm = device_map(m, p, module=model)
    # every parameter of the model is covered by a key (longest prefix), as accelerate requires
    for name, _ in model.named_parameters():
        assert any(name == k or name.startswith(k + ".") for k in dm), name
    back = assignment_from_device_map(m, dm)
    named = _mapped_nodes(m)
    assert set(back) == set(m.node_ids) and {n: back[n] for n in named} == {n: p.assignment[n] for n in named}
    assert set(named) >= {"transformer.h.0", "transformer.h.1", "transformer.wte", "lm_head"}
    assert len(set(p.assignment.values())) >= 2   # the map had something to say


def _mapped_nodes(g):
    """The nodes whose device a device_map fixes: every module node, and a parent's own-ops node
    (the ops a module runs between its children) when it holds parameters."""
    paths = {n.id: layer_to_path(n.layer) for n in g.nodes() if not n.backward and not n.artificial}
    parents = {q for q in paths.values() if any(r != q and is_within(r, q) for r in paths.values())}
    return [nid for nid, q in paths.items() if q not in parents or g.node(nid).size > 0]


def test_aten_granularity_splits_attention_into_core_ops_and_solves_exactly():
    op = import_torch("hf:gpt2", overrides=TINY_GPT2, seq_len=16)
    g = import_torch("hf:gpt2", overrides=TINY_GPT2, seq_len=16, granularity="aten")
    assert g.source["granularity"] == "aten" and any("core ATen" in n for n in g.notes)
    assert not [n for n in g.notes if "estimated" in n]
    types = [n.op_type for n in g.nodes()]
    assert "Attention" in [n.op_type for n in op.nodes()] and "Attention" not in types
    assert types.count("Softmax") == 2 and types.count("MatMul") >= 4 and g.num_nodes > op.num_nodes
    assert g.total_flops == pytest.approx(op.total_flops, rel=0.01)   # the same model, finer ops
    p = run_solver("dp", g, g.default_cluster)
    assert p.status == "optimal" and p.bound_set == "pipeline" and check_placement(g, g.default_cluster, p) == []
    with pytest.raises(InputFormatError, match="needs torch.export"):
        import_torch(MLP(), (torch.randn(2, 32),), granularity="aten", tracer="fx")
    m = import_torch(MLP(), (torch.randn(2, 32),), granularity="aten")   # a plain module: export, decomposed
    assert m.source["tracer"] == "export" and [n.op_type for n in m.nodes()].count("Gemm") == 6


def test_tiny_resnet_imports_solves_and_maps_back():
    g = import_torch("hf:resnet", overrides=TINY_RESNET, image_size=32)
    assert not [n for n in g.notes if "estimated" in n]
    assert len(repeated_blocks(g).blocks) == 2
    _solve_2(g)
    m = import_torch("hf:resnet", overrides=TINY_RESNET, image_size=32, granularity="module")
    assert "resnet.encoder.stages.1.layers.0" in m.node_ids and m.source["image_size"] == 32
    p = _solve_2(m)
    back = assignment_from_device_map(m, device_map(m, p))
    assert {n: back[n] for n in _mapped_nodes(m)} == {n: p.assignment[n] for n in _mapped_nodes(m)}


def test_module_granular_training_graph_keeps_twins_together():
    m = import_torch("hf:gpt2", overrides=TINY_GPT2, seq_len=8, granularity="module", training=True)
    h0, h0g = m.node("transformer.h.0"), m.node("transformer.h.0__grad")
    assert h0g.backward and h0.color_class == h0g.color_class and m.source["training"] is True
    _solve_2(m)


def test_source_round_trips_through_the_graph_file(tmp_path):
    m = import_torch("hf:gpt2", overrides=TINY_GPT2, seq_len=16, granularity="module", seed=7)
    path = tmp_path / "g.json"
    write_nodelink(path, m)
    back = read_nodelink(path)
    assert back.source == m.source and back.source["seed"] == 7 and back.source["overrides"] == TINY_GPT2
    assert back.notes == m.notes and back.node_ids == m.node_ids
    # the record rebuilds the same model
    src = back.source
    again = import_torch(src["spec"], overrides=src["overrides"], batch=src["batch"], seq_len=src["seq_len"],
                         seed=src["seed"], granularity=src["granularity"], depth=src["depth"])
    assert again.node_ids == m.node_ids and again.total_flops == m.total_flops


def test_device_map_of_op_granular_graphs_and_unplaced_nodes():
    g = import_torch("hf:gpt2", overrides=TINY_GPT2, seq_len=8)
    assert device_map(g, {n: "cpu:0" for n in g.node_ids}) == {"": "cpu:0"}   # whole modules: fine at op level
    moved = {n.id for n in g.nodes() if is_within(layer_to_path(n.layer), "transformer.h.1")}
    dm = device_map(g, {n: "cpu:1" if n in moved else "cpu:0" for n in g.node_ids})
    assert dm["transformer.h.1"] == "cpu:1" and set(dm.values()) == {"cpu:0", "cpu:1"}
    back = assignment_from_device_map(g, dm)
    assert all(back[n] == "cpu:1" for n in moved) and back[g.node_ids[0]] == "cpu:0"
    m = import_torch("hf:gpt2", overrides=TINY_GPT2, seq_len=8, granularity="module")
    with pytest.raises(PlacementError, match="not placed: 'transformer.h.1'"):
        device_map(m, {n: "cpu:0" for n in m.node_ids if n != "transformer.h.1"})


def test_errors_are_clear():
    with pytest.raises(InputFormatError, match="unknown model type"):
        build_model("hf:nosuch")
    with pytest.raises(InputFormatError, match=r"no field\(s\) \['nlayers'\]"):
        build_model("hf:gpt2", {"nlayers": 2})
    with pytest.raises(InputFormatError, match="longer than the model's 64 positions"):
        build_model("hf:gpt2", TINY_GPT2, seq_len=65)
    with pytest.raises(InputFormatError, match="--seq-len applies to language models"):
        build_model("hf:resnet", TINY_RESNET, seq_len=8)
    with pytest.raises(InputFormatError, match="batch must be a whole number"):
        build_model("hf:gpt2", TINY_GPT2, batch=0)
    with pytest.raises(InputFormatError, match=r"27 GB of real weights.*available here"):
        build_model("hf:llama")  # 6.7 B fp32 parameters: refused with the figures, before allocating
    with pytest.raises(InputFormatError, match="--depth must be a whole number"):
        import_torch(MLP(), (torch.randn(2, 32),), granularity="module", depth=0)
    with pytest.raises(InputFormatError, match="expected op, aten or module"):
        import_torch(MLP(), (torch.randn(2, 32),), granularity="layer")
    with pytest.raises(InputFormatError, match="needs example inputs"):
        import_torch(MLP())
    with pytest.raises(InputFormatError, match="no device kind 'tpu'"):
        import_torch(MLP(), (torch.randn(2, 32),), calibration={"tpu": 2.0})
    with pytest.raises(SolverError, match="no module paths"):
        from viz_place.samples import load_sample
        repeated_blocks(load_sample("chain"))


def test_calibration_factor_scales_one_kind():
    x = (torch.randn(2, 32),)
    torch.manual_seed(0)
    base = import_torch(MLP(), x)
    torch.manual_seed(0)
    scaled = import_torch(MLP(), x, calibration={"gpu": 2.5})
    for a, b in zip(base.nodes(), scaled.nodes()):
        assert b.latency["gpu"] == pytest.approx(2.5 * a.latency["gpu"]) and b.latency["cpu"] == a.latency["cpu"]
    assert scaled.source["calibration"] == {"gpu": 2.5} and any("gpu x2.5" in n for n in scaled.notes)


def _cli(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_import_info_solve_evaluate(tmp_path, capsys):
    graph, place = str(tmp_path / "g.json"), str(tmp_path / "p.json")
    flags = ["--set", "n_layer=2", "--set", "n_embd=64", "--set", "n_head=4", "--set", "vocab_size=500",
             "--seq-len", "16", "--granularity", "module"]
    rc, out, err = _cli(capsys, "import", "hf:gpt2", "--out", graph, "--json", *flags[:-1], "aten")
    assert rc == 0 and json.loads(out)["source"]["granularity"] == "aten", err
    rc, out, err = _cli(capsys, "import", "hf:gpt2", "--out", graph, "--json", *flags)
    assert rc == 0, err
    summary = json.loads(out)
    assert summary["source"]["spec"] == "hf:gpt2" and summary["source"]["overrides"]["n_layer"] == 2
    assert summary["source"]["granularity"] == "module" and summary["nodes"] == read_nodelink(graph).num_nodes
    rc, out, err = _cli(capsys, "info", "hf:gpt2", "--json", *flags)
    assert rc == 0 and json.loads(out)["nodes"] == summary["nodes"]
    rc, out, err = _cli(capsys, "solve", "hf:gpt2", "--solver", "dp", "--out", place, *flags)
    assert rc == 0, err
    rc, out, err = _cli(capsys, "evaluate", graph, place, "--json")
    assert rc == 0 and json.loads(out)["feasible"] is True


@pytest.mark.parametrize("argv,message", [
    (["import", "hf:nosuch", "--out", "X"], "unknown model type"),
    (["import", "resnet18", "--out", "X"], "not a model SPEC"),
    (["import", "missing.onnx", "--out", "X"], "file not found"),
    (["import", "hf:gpt2", "--set", "oops", "--out", "X"], "expected KEY=VALUE"),
    (["import", "hf:gpt2", "--dim", "batch=2", "--out", "X"], "--dim applies to ONNX"),
    (["import", "hf:gpt2", "--set", "n_layer=1", "--calibration", "gpu=fast", "--out", "X"], "FACTOR"),
    (["info", "residual", "--seq-len", "8"], "apply to a model SPEC"),
    (["import", "hf:llama", "--profile", "--out", "X"], "GB of real weights"),
])
def test_cli_errors_one_line_exit_2(tmp_path, capsys, argv, message):
    argv = [str(tmp_path / a) if a == "X" else a for a in argv]
    rc, out, err = _cli(capsys, *argv)
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1


def test_onnx_import_at_module_granularity_records_its_source(tmp_path, capsys):
    torch.manual_seed(0)
    model, onnx_path, out = MLP().eval(), str(tmp_path / "mlp.onnx"), str(tmp_path / "g.json")
    torch.onnx.export(model, (torch.randn(2, 32),), onnx_path, dynamo=False)
    rc, _, err = _cli(capsys, "import", onnx_path, "--granularity", "aten", "--out", out)
    assert rc == 2 and "--granularity aten: applies to hf: models" in err and len(err.strip().splitlines()) == 1
    rc, _, err = _cli(capsys, "import", onnx_path, "--granularity", "module", "--depth", "2", "--out", out)
    assert rc == 0, err
    g = read_nodelink(out)
    assert {"inp", "blocks.0", "blocks.3", "out"} <= set(g.node_ids)
    assert g.source["tracer"] == "onnx" and g.source["granularity"] == "module" and g.source["depth"] == 2
    import onnx
    import os
    light = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light", "light_resnet50.onnx")
    rc, _, err = _cli(capsys, "import", light, "--granularity", "module", "--out", out)
    assert rc == 2 and "no module scopes" in err
