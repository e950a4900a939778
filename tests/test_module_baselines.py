"""The baselines people use today: balanced-memory (accelerate / DeepSpeed 'parameters')
and uniform-layers (DeepSpeed 'uniform'), checked against accelerate itself."""
from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from viz_place.cost import evaluate  # noqa: E402
from viz_place.errors import SolverError  # noqa: E402
from viz_place.io.torch_import import import_torch  # noqa: E402
from viz_place.io.torch_models import build_model  # noqa: E402
from viz_place.model import Cluster, DeviceClass  # noqa: E402
from viz_place.io.torch_export_placement import device_map  # noqa: E402
from viz_place.model.modules import assignment_from_device_map, layer_to_path  # noqa: E402
from viz_place.samples import load_sample  # noqa: E402
from viz_place.solvers import run_solver  # noqa: E402
from viz_place.solvers.baselines.module_order import partition_uniform  # noqa: E402
from viz_place.testing import check_placement  # noqa: E402


def gpt2(layers, **extra):
    return {"n_layer": layers, "n_embd": 64, "n_head": 4, "vocab_size": 500, "bos_token_id": 0, "eos_token_id": 0,
            **extra}


def gpus(k):
    return Cluster([DeviceClass("gpu", "gpu", count=k)])


def _blocks_per_device(g, p, layers):
    back = assignment_from_device_map(g, device_map(g, p))   # the device_map, read back per node
    return [back[f"transformer.h.{i}"] for i in range(layers)], back


@pytest.mark.parametrize("granularity", ["op", "module"])
def test_uniform_layers_gives_equal_block_counts_embeddings_first_head_last(granularity):
    g = import_torch("hf:gpt2", overrides=gpt2(5), seq_len=8, granularity=granularity)
    c = gpus(3)
    p = run_solver("uniform-layers", g, c, pins={}, options={})
    assert check_placement(g, c, p) == []
    by_path = {}
    for n in g.nodes():
        by_path.setdefault(layer_to_path(n.layer), set()).add(p.assignment[n.id])
    assert [by_path[f"transformer.h.{i}"] for i in range(5)] == [{"gpu:0"}, {"gpu:0"}, {"gpu:1"}, {"gpu:1"}, {"gpu:2"}]
    assert by_path["transformer.wte"] == {"gpu:0"} and by_path["lm_head"] == {"gpu:2"}
    assert p.claimed_value == pytest.approx(evaluate(g, c, p).max_load)


def test_partition_uniform_is_deepspeeds():
    assert partition_uniform(12, 4) == [0, 3, 6, 9, 12]
    assert partition_uniform(12, 5) == [0, 3, 6, 8, 10, 12]
    assert partition_uniform(3, 5) == [0, 1, 2, 3, 3, 3]


@pytest.mark.parametrize("layers,k", [(4, 2), (6, 2), (8, 3), (12, 4)])
def test_balanced_memory_accelerate_method_matches_accelerates_device_map(layers, k):
    from accelerate import infer_auto_device_map
    from accelerate.utils import get_balanced_memory
    overrides = gpt2(layers, tie_word_embeddings=False)
    model = build_model("hf:gpt2", overrides, meta=True).module
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        budgets = get_balanced_memory(model, max_memory={i: 10**9 for i in range(k)},
                                      no_split_module_classes=model._no_split_modules)
        theirs = infer_auto_device_map(model, max_memory=budgets, no_split_module_classes=model._no_split_modules)
    g = import_torch("hf:gpt2", overrides=overrides, seq_len=8, granularity="module")
    p = run_solver("balanced-memory", g, gpus(k), pins={}, options={"method": "accelerate"})
    ours, dm = _blocks_per_device(g, p, layers)
    assert ours == [f"gpu:{theirs[f'transformer.h.{i}']}" for i in range(layers)]
    assert dm["lm_head"] == f"gpu:{theirs['lm_head']}" and dm["transformer.wte"] == "gpu:0"


def test_balanced_memory_equal_shares_parameter_bytes():
    g = import_torch("hf:gpt2", overrides=gpt2(8), seq_len=8)  # op granularity: blocks stay whole
    c = gpus(4)
    p = run_solver("balanced-memory", g, c, pins={}, options={})
    assert check_placement(g, c, p) == []
    ev = evaluate(g, c, p)
    mem = [d.memory for d in ev.devices]
    per_block, block_bytes = {}, {}
    for n in g.nodes():
        path = layer_to_path(n.layer)
        if path.startswith("transformer.h."):
            key = ".".join(path.split(".")[:3])
            per_block.setdefault(key, set()).add(p.assignment[n.id])
            block_bytes[key] = block_bytes.get(key, 0.0) + n.size
    assert all(len(devs) == 1 for devs in per_block.values())  # no block is split
    unit = max(max(block_bytes.values()), max(n.size for n in g.nodes()))
    assert all(abs(m - sum(mem) / 4) <= unit for m in mem), mem  # each share within one unit of a quarter


def test_tiny_resnet_stage_blocks():
    g = import_torch("hf:resnet", overrides={"embedding_size": 8, "hidden_sizes": [8, 16, 16, 16],
                                             "depths": [1, 1, 1, 1], "layer_type": "basic", "num_labels": 10},
                     image_size=32, granularity="module")
    c = gpus(2)
    for name in ("uniform-layers", "balanced-memory"):
        p = run_solver(name, g, c, pins={}, options={})
        assert check_placement(g, c, p) == [], name
    p = run_solver("uniform-layers", g, c, pins={}, options={})
    assert [p.assignment[f"resnet.encoder.stages.{s}.layers.0"] for s in range(4)] == ["gpu:0"] * 2 + ["gpu:1"] * 2


def test_pins_kept_and_hosts_take_what_the_stage_class_cannot_run():
    g = import_torch("hf:gpt2", overrides=gpt2(2), seq_len=8, granularity="module")
    c = Cluster([DeviceClass("cpu", "cpu", count=1, pays_communication=False), DeviceClass("gpu", "gpu", count=2)])
    p = run_solver("uniform-layers", g, c, pins={"lm_head": "gpu:0"}, options={})
    assert p.assignment["lm_head"] == "gpu:0" and p.assignment["transformer.h.1"] == "gpu:1"
    assert check_placement(g, c, p, {"lm_head": "gpu:0"}) == []


def test_errors_are_clear():
    chain = load_sample("chain")
    for name in ("balanced-memory", "uniform-layers"):
        with pytest.raises(SolverError, match="has no module paths"):
            run_solver(name, chain, chain.default_cluster, pins={}, options={})
    g = import_torch("hf:gpt2", overrides=gpt2(2), seq_len=8, granularity="module")
    with pytest.raises(SolverError, match="'stages' = 5 but class 'gpu' has 2 devices"):
        run_solver("uniform-layers", g, gpus(2), pins={}, options={"stages": 5})
    with pytest.raises(SolverError, match="no class 'tpu'"):
        run_solver("balanced-memory", g, gpus(2), pins={}, options={"device_class": "tpu"})
    with pytest.raises(SolverError, match="not one of"):
        run_solver("balanced-memory", g, gpus(2), pins={}, options={"method": "greedy"})
    small = Cluster([DeviceClass("gpu", "gpu", count=2, memory=1000.0)])
    with pytest.raises(SolverError, match="more than its memory"):
        run_solver("balanced-memory", g, small, pins={}, options={})
