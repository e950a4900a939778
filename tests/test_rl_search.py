"""The rl solver's search beyond single-group sweeps: move/swap descent, the dp start, the memory-bound mix."""
from __future__ import annotations

import numpy as np
import pytest

from viz_place import run_solver
from viz_place.cost import compile_problem, evaluate_indices
from viz_place.errors import InfeasibleError
from viz_place.model import Cluster, DeviceClass, OpGraph
from viz_place.samples import make_graph
from viz_place.solvers.rl import TrainConfig
from viz_place.solvers.rl.env import PlacementEnv, topo_fill
from viz_place.solvers.rl.polish import polish
from viz_place.solvers.rl.start import random_start
from viz_place.solvers.rl.train import graph_pool
from viz_place.testing import assert_valid, random_instance


def _swap_instance():
    """Two accelerators with room for two ops each, four independent ops: from {a, b} | {c, d}
    (loads 6 | 4) no single move fits in memory; swapping b and d gives 5 | 5."""
    lat = {"a": 4.0, "b": 2.0, "c": 3.0, "d": 1.0}
    g = OpGraph.from_records([{"id": k, "latency": {"fpga": v}, "size": 1.0} for k, v in lat.items()], [])
    cluster = Cluster((DeviceClass("acc", "fpga", 2, memory=2.0),))
    return g, cluster


def test_polish_swaps_where_no_single_move_fits():
    g, cluster = _swap_instance()
    prob = compile_problem(g, cluster)
    env = PlacementEnv(prob)
    idx = g.index
    dev = [0] * prob.n
    for name, d in {"a": 0, "b": 0, "c": 1, "d": 1}.items():
        dev[idx[name]] = d
    env.reset(dev)
    assert env.objective() == pytest.approx(6.0)
    no_swaps = polish(env, swaps=False)
    assert no_swaps["moves"] == 0 and env.objective() == pytest.approx(6.0)     # memory blocks every move
    stats = polish(env)
    assert stats["swaps"] >= 1
    assert env.objective() == pytest.approx(5.0)
    ev = evaluate_indices(prob, np.array(env.dev))
    assert not ev.violations and ev.max_load == pytest.approx(env.objective())


@pytest.mark.parametrize("seed", range(12))
def test_polish_keeps_every_constraint_and_never_gets_worse(seed):
    inst = random_instance(seed)
    prob = compile_problem(inst.graph, inst.cluster)
    pins = {inst.graph.index[n]: inst.cluster.device_index(d) for n, d in inst.pins.items()}
    try:
        env = PlacementEnv(prob, pins)
    except InfeasibleError:    # an instance no placement fits (the env says so by name, tested elsewhere)
        return
    rng = np.random.default_rng(seed)
    start = random_start(env, rng)
    if start is None:
        return
    env.reset(start)
    before = env.objective()
    polish(env, rng=rng)
    ev = evaluate_indices(prob, np.array(env.dev), pins=inst.pins)
    assert not ev.violations, ev.violations
    assert env.objective() == pytest.approx(ev.max_load, rel=1e-9)
    assert env.objective() <= before + 1e-9


def test_search_starts_from_the_dp_split_and_is_never_worse():
    g = make_graph("residual", 40, seed=2)
    dp = run_solver("dp", g, g.default_cluster).claimed_value
    env = PlacementEnv(compile_problem(g, g.default_cluster))
    fill = evaluate_indices(env.prob, np.array(topo_fill(env))).max_load
    assert dp < fill          # this graph: the dp split beats the fill the sweeps used to start from
    p = run_solver("rl", g, g.default_cluster, options={"mode": "sample", "samples": 2, "seed": 0})
    assert p.claimed_value <= dp + 1e-9
    assert p.options["stats"]["start"] <= dp + 1e-9
    off = run_solver("rl", g, g.default_cluster, options={"mode": "sample", "samples": 2, "seed": 0,
                                                          "dp_start": False, "polish": False})
    assert off.options["stats"]["start"] > dp       # without it, the start is a fill
    assert_valid(g, g.default_cluster, off)


def test_seeded_search_with_polish_is_reproducible():
    g = make_graph("transformer", 40, seed=5)
    total = sum(n.size for n in g.nodes())
    cluster = Cluster([DeviceClass("fpga", "fpga", count=3, memory=0.3 * total),
                       DeviceClass("cpu", "cpu", count=1, pays_communication=False)])
    opts = {"mode": "finetune", "samples": 3, "rollouts": 2, "time_limit": 60, "seed": 3}
    a = run_solver("rl", g, cluster, options=opts)
    b = run_solver("rl", g, cluster, options=opts)
    assert dict(a.assignment) == dict(b.assignment) and a.claimed_value == b.claimed_value
    # memory-bound: the non-contiguous search goes well below the best pipeline split
    assert a.claimed_value < 0.8 * run_solver("dp", g, cluster).claimed_value


def test_memory_bound_training_mix():
    cfg = TrainConfig(families=("chain", "residual"), sizes=(16, 30), n_graphs=6, memory_bound=1.0, seed=1)
    for g, cluster in graph_pool(cfg):
        total = sum(n.size for n in g.nodes())
        acc = sum(c.memory * c.count for c in cluster.classes if c.pays_communication)
        assert acc < total, (g.name, acc, total)      # the accelerators cannot hold it all
    plain = graph_pool(TrainConfig(families=("chain", "residual"), sizes=(16, 30), n_graphs=6, seed=1))
    assert any(c.classes[0].memory is None or c.classes[0].memory * c.classes[0].count >= sum(n.size for n in g.nodes())
               for g, c in plain)
    with pytest.raises(Exception, match="memory_bound"):
        TrainConfig(memory_bound=-0.5)
