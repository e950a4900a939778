"""The learned placer (solver ``rl``): features, masking, policy maths, persistence, solving."""
from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from viz_place.cost import compile_problem, evaluate_indices
from viz_place.errors import InfeasibleError, SolverError
from viz_place.model import Cluster, DeviceClass, OpGraph
from viz_place.samples import make_graph
from viz_place import run_solver           # reads the `policy` file option (viz_place.solver_files)
from viz_place import solvers
from viz_place.solvers import list_solvers
from viz_place.solvers.rl import Policy, RLOptions, load_policy, shipped_policy_path
from viz_place.solvers.rl.env import IN_DIM, PlacementEnv, topo_fill
from viz_place.solvers.rl.features import base_features, group_embeddings, node_embeddings
from viz_place.solvers.rl.policy import Adam, clip_by_norm
from viz_place.solvers.rl.rollout import loss_value, reinforce_gradient, sweep
from viz_place.testing import assert_valid, check_placement, random_instance


@pytest.fixture(scope="module")
def policy_file(tmp_path_factory):
    """A small random policy with sensible input scaling (independent of the shipped one)."""
    pol = Policy.new(hidden=(16,), seed=3)
    path = tmp_path_factory.mktemp("pol") / "random.npz"
    pol.save(path)
    return str(path)


def _renumbered(g: OpGraph, seed: int) -> OpGraph:
    """The same graph with new node ids, inserted in a shuffled order."""
    rng = np.random.default_rng(seed)
    ids = list(g.nx.nodes)
    perm = rng.permutation(len(ids))
    new_name = {n: f"v{int(p)}" for n, p in zip(ids, perm)}
    h = nx.DiGraph()
    for i in rng.permutation(len(ids)):
        n = ids[int(i)]
        h.add_node(new_name[n], **g.nx.nodes[n])
    edges = list(g.nx.edges(data=True))
    for k in rng.permutation(len(edges)):
        u, v, a = edges[int(k)]
        h.add_edge(new_name[u], new_name[v], **a)
    return OpGraph(h, name="renumbered", default_cluster=g.default_cluster), new_name


@pytest.mark.parametrize("family,training", [("inception", False), ("transformer", True), ("fork_join", False)])
def test_features_are_invariant_to_renumbering_nodes(family, training):
    g = make_graph(family, 40, seed=2, training=training)
    h, new_name = _renumbered(g, seed=5)
    pg, ph = compile_problem(g, g.default_cluster), compile_problem(h, h.default_cluster)
    eg, eh = node_embeddings(pg), node_embeddings(ph)
    row_h = {n: i for i, n in enumerate(ph.node_ids)}
    perm = [row_h[new_name[n]] for n in pg.node_ids]
    assert not np.array_equal(perm, np.arange(len(perm))), "the renumbering should change the node order"
    np.testing.assert_allclose(eg, eh[perm], rtol=1e-9, atol=1e-12)
    # Group embeddings too (groups are matched through their first member).
    gg, gh = group_embeddings(pg), group_embeddings(ph)
    first_h = {frozenset(ph.node_ids[i] for i in m): k for k, m in enumerate(ph.groups)}
    for k, m in enumerate(pg.groups):
        kh = first_h[frozenset(new_name[pg.node_ids[i]] for i in m)]
        np.testing.assert_allclose(gg[k], gh[kh], rtol=1e-9, atol=1e-12)


def test_structural_features_match_brute_force_reachability():
    g = make_graph("residual", 25, seed=1)
    prob = compile_problem(g, g.default_cluster)
    x = base_features(prob)
    col = {name: i for i, name in enumerate(("lat", "size", "tcost", "speedup", "supported", "indeg", "outdeg",
                                             "backward", "top_level", "bottom_level", "critical", "anc_count",
                                             "anc_work", "desc_count", "desc_work", "par_count", "par_work"))}
    n = prob.n
    for v, node in enumerate(prob.node_ids):
        anc = nx.ancestors(g.nx, node)
        desc = nx.descendants(g.nx, node)
        assert x[v, col["anc_count"]] == pytest.approx(len(anc) / n)
        assert x[v, col["desc_count"]] == pytest.approx(len(desc) / n)
        assert x[v, col["par_count"]] == pytest.approx((n - 1 - len(anc) - len(desc)) / n)


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    pol = Policy.new(in_dim=6, hidden=(5, 4), seed=1)
    pol.params[-2] *= 20          # non-trivial logits
    pol.x_mean, pol.x_std = rng.normal(size=6), rng.uniform(0.5, 2.0, size=6)
    rows = [rng.normal(size=(k, 6)) for k in (2, 3, 5, 4)]
    actions, adv = [1, 0, 4, 2], np.array([0.7, -1.2, 2.0, 0.1])
    grads, _ = reinforce_gradient(pol, rows, actions, adv, 0.05)
    eps = 1e-6
    worst = 0.0
    for p, g in zip(pol.params, grads):
        for idx in np.ndindex(p.shape):
            old = p[idx]
            p[idx] = old + eps
            up = loss_value(pol, rows, actions, adv, 0.05)
            p[idx] = old - eps
            down = loss_value(pol, rows, actions, adv, 0.05)
            p[idx] = old
            worst = max(worst, abs((up - down) / (2 * eps) - g[idx]))
    assert worst < 1e-6


def test_adam_and_clipping():
    grads = [np.array([3.0, 4.0])]
    assert clip_by_norm(grads, 1.0) == pytest.approx(5.0)
    assert np.linalg.norm(grads[0]) == pytest.approx(1.0)
    p = [np.array([2.0])]
    opt = Adam(p, lr=0.1)
    for _ in range(200):
        opt.step([2 * p[0]])          # minimise x^2
    assert abs(p[0][0]) < 0.2


def test_save_load_round_trip(tmp_path):
    pol = Policy.new(hidden=(8, 8), seed=4)
    pol.x_mean = np.linspace(0, 1, IN_DIM)
    path = pol.save(tmp_path / "p.npz")
    back = Policy.load(path)
    assert len(back.params) == len(pol.params)
    for a, b in zip(pol.params, back.params):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(back.x_mean, pol.x_mean)
    x = np.random.default_rng(0).normal(size=(5, IN_DIM))
    np.testing.assert_array_equal(pol.logits(x), back.logits(x))
    with pytest.raises(SolverError, match="does not exist"):
        Policy.load(tmp_path / "missing.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(SolverError, match="not a viz_place policy"):
        Policy.load(tmp_path / "junk.npz")
    Policy.new(in_dim=IN_DIM + 1, hidden=(4,), seed=0).save(tmp_path / "wide.npz")
    with pytest.raises(SolverError, match="retrain"):
        Policy.load(tmp_path / "wide.npz")


def test_shipped_policy_is_present_and_loads():
    assert shipped_policy_path().is_file()
    pol = load_policy("")
    assert pol.in_dim == IN_DIM
    assert pol.meta.get("families")


def test_registered_with_options_validated():
    assert "rl" in [s.name for s in list_solvers()]
    with pytest.raises(SolverError, match="mode"):
        RLOptions(mode="magic")
    with pytest.raises(SolverError, match="time_limit"):
        RLOptions(time_limit=-1)


def test_masking_never_yields_an_invalid_placement(policy_file):
    solved = 0
    for seed in range(120):
        inst = random_instance(seed)
        try:
            p = run_solver("rl", inst.graph, inst.cluster, pins=inst.pins,
                           options={"policy": policy_file, "mode": "sample", "samples": 3, "time_limit": 5.0,
                                    "temperature": 3.0, "seed": seed})
        except InfeasibleError as err:     # only when the pins alone overflow a device's memory
            assert "pinned" in str(err), str(err)
            continue
        assert_valid(inst.graph, inst.cluster, p, inst.pins)
        solved += 1
    assert solved >= 110


def test_every_intermediate_state_is_valid(policy_file):
    """Sampled sweeps at a high temperature: check the state after every step, not just the result."""
    pol = Policy.load(policy_file)
    for seed in range(30):
        inst = random_instance(seed, n_min=5, n_max=10, pins=True, memory=True)
        prob = compile_problem(inst.graph, inst.cluster)
        pins = {inst.graph.index[n]: inst.cluster.device_index(d) for n, d in inst.pins.items()}
        try:
            env = PlacementEnv(prob, pins)
        except InfeasibleError:
            continue
        env.reset(topo_fill(env))
        rng = np.random.default_rng(seed)
        for g in env.free_groups:
            obs = env.observe(g)
            if obs is None:
                continue
            cand, rows, _, new_obj = obs
            d = int(cand[rng.integers(len(cand))])
            env.apply(g, d, float(new_obj[list(cand).index(d)]))
            ev = evaluate_indices(prob, np.array(env.dev), pins=inst.pins)
            assert not ev.violations, ev.violations
            assert env.objective() == pytest.approx(ev.max_load, rel=1e-9)


def test_unsupported_everywhere_is_reported_by_name():
    g = OpGraph.from_records([{"id": "a", "latency": {"cpu": 1.0}}, {"id": "odd", "latency": {"tpu": 1.0}}],
                             [("a", "odd")])
    with pytest.raises(InfeasibleError, match="'odd'"):
        run_solver("rl", g, Cluster.paper(1, 1, None), options={"mode": "greedy"})


@pytest.mark.parametrize("objective,expected", [("max_load", "max_load"), ("throughput", "max_load"),
                                                ("latency", "latency")])
def test_claimed_value_is_the_evaluators(policy_file, objective, expected):
    """``throughput`` is an alias of ``max_load`` (old option value), the placement says ``max_load``."""
    g = make_graph("transformer", 40, seed=8)
    p = run_solver("rl", g, g.default_cluster, options={"policy": policy_file, "mode": "sample", "samples": 4,
                                                        "objective": objective, "time_limit": 30})
    assert p.objective == expected and p.options["objective"] == expected
    assert p.lower_bound is None and p.bound_set is None
    assert check_placement(g, g.default_cluster, p) == []
    assert math.isfinite(p.claimed_value)


def test_search_never_worse_than_topological_fill():
    g = make_graph("inception", 80, seed=11)
    prob = compile_problem(g, g.default_cluster)
    env = PlacementEnv(prob)
    start = evaluate_indices(prob, np.array(topo_fill(env))).max_load
    for mode in ("greedy", "sample", "finetune"):
        p = run_solver("rl", g, g.default_cluster, options={"mode": mode, "samples": 8, "time_limit": 30})
        assert p.claimed_value <= start + 1e-9


def test_the_solver_reads_no_policy_file(policy_file):
    """A `policy` path reaches the solver only read (as `weights`); unread, it is a clear error, not a file read."""
    g = make_graph("chain", 6)
    with pytest.raises(SolverError, match="was not read: solvers read no files") as err:
        solvers.run_solver("rl", g, g.default_cluster, options={"policy": policy_file, "mode": "greedy"})
    assert err.value.field == "policy"
    given = solvers.run_solver("rl", g, g.default_cluster,
                               options={"weights": Policy.load(policy_file), "mode": "greedy"})
    read = run_solver("rl", g, g.default_cluster, options={"policy": policy_file, "mode": "greedy"})
    assert dict(given.assignment) == dict(read.assignment)
    assert read.options["policy"] == policy_file and "weights" not in read.options
    with pytest.raises(SolverError, match="expected a Policy"):
        RLOptions(weights="file.npz")


def test_seeded_run_is_reproducible(policy_file):
    g = make_graph("residual", 50, seed=4)
    opts = {"policy": policy_file, "mode": "finetune", "samples": 8, "rollouts": 2, "time_limit": 60, "seed": 7}
    a = run_solver("rl", g, g.default_cluster, options=opts)
    b = run_solver("rl", g, g.default_cluster, options=opts)
    assert dict(a.assignment) == dict(b.assignment)
    assert a.claimed_value == b.claimed_value


def test_one_policy_serves_any_device_count():
    g = make_graph("fork_join", 40, seed=3)
    pol = load_policy("")
    for count in (1, 2, 7):
        cluster = Cluster((DeviceClass("acc", "fpga", count, memory=None),
                           DeviceClass("host", "cpu", 1, pays_communication=False)))
        p = run_solver("rl", g, cluster, options={"mode": "greedy"})
        assert_valid(g, cluster, p)
        assert len(set(p.assignment.values())) >= 1
    assert pol.in_dim == IN_DIM


def test_cancel_returns_best_so_far():
    g = make_graph("residual", 60, seed=2)
    calls = {"n": 0}

    def cancel():
        calls["n"] += 1
        return calls["n"] > 3

    p = run_solver("rl", g, g.default_cluster, options={"mode": "sample", "time_limit": 60}, cancel=cancel)
    assert p.status == "cancelled"
    assert_valid(g, g.default_cluster, p)


def test_initial_placement_is_valid_and_no_worse_than_the_plain_fill():
    from viz_place.solvers.rl.start import initial_placement, random_start, threshold_fill
    checked = 0
    for seed in range(80):
        inst = random_instance(seed, n_min=4, n_max=12)
        prob = compile_problem(inst.graph, inst.cluster)
        pins = {inst.graph.index[n]: inst.cluster.device_index(d) for n, d in inst.pins.items()}
        try:
            env = PlacementEnv(prob, pins)
            plain = topo_fill(env)
        except InfeasibleError:
            continue
        dev = initial_placement(env)
        ev = evaluate_indices(prob, np.array(dev), pins=inst.pins)
        assert not ev.violations, (seed, ev.violations)
        assert ev.max_load <= evaluate_indices(prob, np.array(plain)).max_load + 1e-9
        rnd = random_start(env, np.random.default_rng(seed))
        if rnd is not None:
            assert not evaluate_indices(prob, np.array(rnd), pins=inst.pins).violations
        tight = threshold_fill(env, 0.0)          # nothing fits under a zero threshold
        assert tight is None or all(prob.lat[i, d] == 0 for i, d in enumerate(tight) if prob.n)
        checked += 1
    assert checked >= 60


def test_memory_bound_start_uses_the_host():
    """Training graph whose accelerators cannot hold everything: the start beats the plain fill."""
    from viz_place.solvers.rl.start import initial_placement
    g = make_graph("fork_join", 40, seed=1004, training=True)
    prob = compile_problem(g, g.default_cluster)
    env = PlacementEnv(prob)
    plain = evaluate_indices(prob, np.array(topo_fill(env))).max_load
    ev = evaluate_indices(prob, np.array(initial_placement(env)))
    assert not ev.violations
    assert ev.max_load < 0.9 * plain
