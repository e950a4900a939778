"""Placement -> torch.distributed.pipelining split, device_map and script: the pure exports."""
from __future__ import annotations

import doctest
import importlib

import pytest

from viz_place.errors import PlacementError
from viz_place.io.torch_export_placement import (device_map, pipeline_script, pipeline_split,
                                                  placement_from_device_map, stage_order)
from viz_place.model import OpGraph, Placement
from viz_place.model.modules import layer_to_path

torch = pytest.importorskip("torch")


def chain(layers):
    return OpGraph.from_records([{"id": n, "layer": layer, "latency": {"cpu": 1.0}, "size": 4.0}
                                 for n, layer in layers],
                                [(layers[i][0], layers[i + 1][0]) for i in range(len(layers) - 1)])


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                               torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU()),
                               torch.nn.Linear(16, 4)).eval()


def mlp_graph(module):
    from viz_place.io.torch_fx import read_torch
    return read_torch(module, (torch.randn(2, 8),))


def test_doctests():
    mod = importlib.import_module("viz_place.io.torch_export_placement")
    assert doctest.testmod(mod, optionflags=doctest.ELLIPSIS).failed == 0


def test_split_of_an_mlp_is_the_one_torch_builds():
    from torch.distributed.pipelining import pipeline
    from viz_place.io.torch_export_placement import torch_split_spec
    m = mlp()
    g = mlp_graph(m)
    ids = [n.id for n in g.nodes()]
    p = Placement({n: "cpu:0" if i < 2 else "cpu:1" for i, n in enumerate(ids)})
    split = pipeline_split(g, p)
    assert split.split_spec == {"2": "BEGINNING"}
    assert split.devices == ("cpu:0", "cpu:1")
    pipe = pipeline(m, mb_args=(torch.randn(2, 8),), split_spec=torch_split_spec(split))
    assert pipe.num_stages == 2
    names = [sorted(n for n, _ in pipe.get_stage_module(i).named_parameters()) for i in range(2)]
    assert names == [["0.bias", "0.weight"], ["2.0.bias", "2.0.weight", "3.bias", "3.weight"]]


def test_boundary_at_the_end_of_a_module():
    g = chain([("a", "/enc/0"), ("b", "/enc/1"), ("c", None), ("d", "/head")])
    split = pipeline_split(g, {"a": "d0", "b": "d0", "c": "d1", "d": "d1"})
    assert split.split_spec == {"enc": "END"}


def test_boundary_inside_a_module_is_refused_with_the_nodes_and_the_nearest_boundary():
    g = chain([("a", "/blk/0"), ("b", "/blk/0"), ("c", "/blk/1")])
    with pytest.raises(PlacementError) as err:
        pipeline_split(g, {"a": "d0", "b": "d1", "c": "d1"})
    msg = str(err.value)
    assert "'a'" in msg and "'b'" in msg and "inside module 'blk.0'" in msg
    assert "nearest module boundary" in msg and "blk.1" in msg


def test_non_contiguous_placement_is_refused_naming_the_path():
    g = chain([("a", "/0"), ("b", "/1"), ("c", "/2")])
    with pytest.raises(PlacementError) as err:
        pipeline_split(g, {"a": "d0", "b": "d1", "c": "d0"})
    msg = str(err.value)
    assert "not contiguous" in msg and "'a' -> 'b' -> 'c'" in msg and "'d0'" in msg
    assert err.value.node == "c"


def test_devices_feeding_each_other_in_a_cycle_are_refused():
    # d0 = {x1, x2} and d1 = {y1, y2} are each convex, but x1 -> y1 and y2 -> x2
    g = OpGraph.from_records([{"id": n, "layer": f"/{n}", "latency": {"cpu": 1.0}} for n in ("x1", "y2", "y1", "x2")],
                             [("x1", "y1"), ("y2", "x2")])
    with pytest.raises(PlacementError) as err:
        stage_order(g, {"x1": "d0", "x2": "d0", "y1": "d1", "y2": "d1"})
    msg = str(err.value)
    assert "cycle" in msg and "'x1' -> 'y1'" in msg and "'y2' -> 'x2'" in msg


def test_stages_interleaved_in_program_order_are_refused():
    # two parallel branches: a DAG-valid split whose stages interleave in the traced order
    g = OpGraph.from_records([{"id": n, "layer": f"/{n}", "latency": {"cpu": 1.0}} for n in ("s", "p", "q", "t")],
                             [("s", "p"), ("s", "q"), ("p", "t"), ("q", "t")])
    with pytest.raises(PlacementError, match="interleave.*'q'.*'p'"):
        pipeline_split(g, {"s": "d0", "p": "d1", "q": "d0", "t": "d1"})


def test_unplaced_node_is_named():
    g = chain([("a", "/0"), ("b", "/1")])
    with pytest.raises(PlacementError, match="not placed: 'b'"):
        pipeline_split(g, {"a": "d0"})


def test_device_map_round_trip_and_coarsening():
    m = mlp()
    g = mlp_graph(m)
    ids = [n.id for n in g.nodes()]
    p = Placement({n: "gpu:0" if i < 2 else "gpu:1" for i, n in enumerate(ids)})
    dm = device_map(g, p, module=m)
    assert dm == {"0": "gpu:0", "1": "gpu:0", "2": "gpu:1", "3": "gpu:1"}
    back = placement_from_device_map(g, dm)
    assert dict(back.assignment) == dict(p.assignment)
    assert device_map(g, {n: "gpu:0" for n in ids}) == {"": "gpu:0"}


def test_device_map_is_accepted_by_accelerate_dispatch_model():
    from accelerate import dispatch_model
    from accelerate.utils import check_device_map
    from viz_place.io.torch_export_placement import accelerate_device_map
    m = mlp()
    g = mlp_graph(m)
    ids = [n.id for n in g.nodes()]
    x = torch.randn(3, 8)
    with torch.no_grad():
        ref = m(x)
    dm = device_map(g, {n: "cpu:0" if i < 3 else "cpu:1" for i, n in enumerate(ids)}, module=m)
    tdm = accelerate_device_map(dm, {"cpu:0": "cpu", "cpu:1": "cpu"})
    check_device_map(m, tdm)  # raises if a parameter is not covered
    dispatched = dispatch_model(m, device_map=tdm)
    with torch.no_grad():
        assert torch.equal(dispatched(x), ref)


def test_device_map_of_a_split_module_is_refused_naming_it():
    g = chain([("a", "/enc"), ("b", "/enc"), ("c", "/head")])
    with pytest.raises(PlacementError, match="module 'enc' owns weights but is split.*'a'.*'b'"):
        device_map(g, {"a": "d0", "b": "d1", "c": "d1"})


def test_device_map_with_weights_directly_on_a_split_parent_names_them():
    class Embed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.cls = torch.nn.Parameter(torch.zeros(1, 4))
            self.proj = torch.nn.Linear(4, 4)
            self.out = torch.nn.Linear(4, 4)
    m = Embed()
    g = chain([("c", "/"), ("p", "/proj"), ("o", "/out")])
    dm = device_map(g, {"c": "d0", "p": "d0", "o": "d1"}, module=m)
    assert dm == {"proj": "d0", "out": "d1", "cls": "d0"}


def test_device_map_keeps_weights_of_a_split_parents_own_ops_on_their_device():
    # GPT-2's shape: the position embedding's lookup is traced as the parent's own op (node "t#2")
    layers = [("t", "/t"), ("wte", "/t/wte"), ("t#2", "/t"), ("h0", "/t/h/0"), ("h1", "/t/h/1"), ("head", "/head")]
    g = OpGraph.from_records([{"id": n, "layer": layer, "latency": {"cpu": 1.0}, "size": 0.0 if n == "t" else 4.0}
                              for n, layer in layers], [(a[0], b[0]) for a, b in zip(layers, layers[1:])])
    p = {"t": "d0", "wte": "d0", "t#2": "d1", "h0": "d1", "h1": "d2", "head": "d2"}
    dm = device_map(g, p)
    assert dm == {"t": "d1", "t.wte": "d0", "t.h.0": "d1", "t.h.1": "d2", "head": "d2"}
    back = placement_from_device_map(g, dm).assignment
    assert {n: back[n] for n in ("wte", "t#2", "h0", "h1", "head")} == {n: p[n] for n in ("wte", "t#2", "h0", "h1", "head")}


def test_script_needs_a_recorded_source():
    g = chain([("a", "/0"), ("b", "/1")])
    split = pipeline_split(g, {"a": "d0", "b": "d1"})
    with pytest.raises(PlacementError, match="records no model source"):
        pipeline_script(g, split, None)
    text = pipeline_script(g, split, {"spec": "hf:gpt2", "overrides": {"n_layer": 2, "use_cache": False}, "seed": 0})
    compile(text, "pipeline.py", "exec")
    assert "{'1': 'BEGINNING'}" in text and "'use_cache': False" in text


def test_module_paths_from_layers():
    assert layer_to_path("/h/0/attn") == "h.0.attn" and layer_to_path(None) == "" and layer_to_path("/") == ""
