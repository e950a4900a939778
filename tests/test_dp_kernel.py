"""The DP's compiled kernel (``viz_place/solvers/dp/_kernel.c``) against its numpy kernel.

* the exact pass leaves the same tables (``best``, and the chain choices ``prev_ideal`` / ``prev_class``) bit for
  bit, with the same pair count, on random instances (inference and training, colour classes, memory, pins, 2–3
  classes), with and without a threshold, in one group and in many, on a family whose packed counts need two words,
  and on published workloads;
* the compiled prefix sums, hyperedge tables and per-node chain counts equal the numpy ones, and the compiled ideal
  enumeration the Python one (order, parents, levels, limit, progress calls);
* the solver reports which kernel ran, takes ``kernel`` as an option, and refuses an unknown one;
* the compiled functions refuse inconsistent input (sizes, out-of-range indices) with a ValueError instead of
  reading out of bounds.

Skipped where the extension is not built (then the numpy kernel is all there is).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from viz_place.errors import InfeasibleError, SolverError
from viz_place.io import load_graph
from viz_place.model import OpGraph
from viz_place.solvers import run_solver
from viz_place.solvers.dp import hyperedges, ideals as ideals_mod, recursion
from viz_place.solvers.dp.ideals import chain_decomposition, ideals_from_ints
from viz_place.testing import random_instance

from test_dp_batched import _tables

compiled = pytest.mark.skipif(recursion.kernel_name() != "c", reason="the compiled DP kernel is not built here")


def _same_pass(t, threshold, monkeypatch, batch=None):
    """Both kernels on tables ``t``: the same tables, pair count and value (candidates by scanning in both)."""
    monkeypatch.setattr(recursion, "_WALK", 1 << 60)          # the numpy kernel scans windows too (as the C one)
    if batch is not None:
        monkeypatch.setattr(recursion, "_BATCH", batch)
    monkeypatch.setattr(recursion, "_BATCH_C", recursion._BATCH)   # the same groups (pair counts include them)
    a = recursion.run_pass(t, threshold, kernel="numpy")
    b = recursion.run_pass(t, threshold, kernel="c")
    assert (a.kernel, b.kernel) == ("numpy", "c")
    assert np.array_equal(a.best, b.best)
    assert np.array_equal(a.prev_ideal, b.prev_ideal) and np.array_equal(a.prev_class, b.prev_class)
    assert a.pairs == b.pairs
    ra, rb = a.result(), b.result()
    assert ra.value == rb.value or (math.isinf(ra.value) and math.isinf(rb.value))
    assert ra.chain == rb.chain
    return ra


@compiled
@pytest.mark.parametrize("seed", range(60))
def test_kernels_fill_the_same_tables_on_random_instances(seed, monkeypatch):
    kind = seed % 3
    inst = random_instance(31_000 + seed, n_min=4, n_max=11, training=kind == 1, n_classes=3 if kind == 2 else None)
    try:
        t = _tables(inst)
    except InfeasibleError as err:
        pytest.skip(f"instance refused: {err}")
    free = _same_pass(t, math.inf, monkeypatch)
    if math.isfinite(free.value):
        for threshold in (free.value, free.value * 1.3, free.value * 0.8):   # pruned passes: exact, looser, too low
            _same_pass(t, threshold, monkeypatch)
        _same_pass(t, free.value, monkeypatch, batch=7)                    # many small groups


@compiled
def test_kernels_agree_on_two_word_packed_counts(monkeypatch):
    """40 independent nodes: 40 chains of one node, 2-bit lanes, so the packed counts need two words; a random
    sub-family of their ideals (as the upper bound's local search builds)."""
    rng = np.random.default_rng(5)
    K = 40
    family = {0, (1 << K) - 1} | {int(sum(1 << v for v in np.flatnonzero(rng.random(K) < p)))
                                  for p in rng.uniform(0.05, 0.95, 300)}
    ids = ideals_from_ints(sorted(family), K)
    lat = np.stack([rng.uniform(1, 5, K), rng.uniform(0.5, 3, K)], axis=1)
    hyper = [(int((1 << a) | (1 << b)), float(rng.uniform(0.1, 1))) for a, b in rng.integers(0, K, (25, 2)) if a != b]
    t = recursion.Tables.build(ids, succs=[[] for _ in range(K)], lat=lat, size=rng.uniform(0, 1, K),
                               forbid=np.zeros((K, 2), bool), hyperedges=hyper, counts=[3, 1], pays=[True, False],
                               link=[1.0, 1.0], cap=[np.inf, np.inf])
    assert t.guard.size == 2
    free = _same_pass(t, math.inf, monkeypatch)
    assert math.isfinite(free.value)
    _same_pass(t, free.value * 1.1, monkeypatch)


@compiled
@pytest.mark.parametrize("name", ["OperatorGraphs/bert_l-3_inference", "OperatorGraphs/resnet50_training",
                                  "LayerGraphs/bert24_training"])
def test_kernels_agree_on_published_workloads(name, workloads, monkeypatch):
    g = load_graph(workloads / "throughput-inputs" / f"{name}.json")
    seen = []
    run = recursion.run

    def spy(t, threshold, **kw):
        seen.append((t, threshold))
        return run(t, threshold, **kw)
    monkeypatch.setattr(recursion, "run", spy)
    pc = run_solver("dp", g, g.default_cluster, options={"kernel": "c"})
    pn = run_solver("dp", g, g.default_cluster, options={"kernel": "numpy"})
    assert pc.options["stats"]["kernel"] == "c" and pn.options["stats"]["kernel"] == "numpy"
    assert pc.status == pn.status == "optimal" and pc.claimed_value == pn.claimed_value
    t, threshold = seen[-1]                     # the numpy solve's exact pass
    _same_pass(t, threshold, monkeypatch)


@compiled
@pytest.mark.parametrize("seed", range(40))
def test_compiled_tables_equal_numpy_tables(seed, monkeypatch):
    for draw in range(50):   # the first instance of this seed the DP accepts (some fit on no device)
        try:
            t = _tables(random_instance(32_000 + 100 * seed + draw, n_min=4, n_max=11, training=seed % 2 == 0))
            break
        except InfeasibleError:
            continue
    else:
        pytest.fail("50 random instances in a row were refused")
    ids, succs = t.ideals, t.succs
    chains = chain_decomposition(ids.num_nodes, succs)
    lanes = ideals_mod.Lanes.for_chains(chains, ids.num_nodes)
    weights = lanes.node_weights()
    rng = np.random.default_rng(seed)
    fw = rng.uniform(0, 10, (ids.num_nodes, 3))
    hyper = [(int(m), float(rng.uniform(0.1, 2))) for m in rng.integers(1, 1 << ids.num_nodes, 6) if m & (m - 1)]
    c_pk, c_f = ids.prefix_sums(weights), ids.prefix_sums(fw)
    c_hx = hyperedges.hyperedge_tables(ids, succs, hyper, chains, lanes, c_pk)
    c_counts = hyperedges._per_node_counts(ids.num_nodes, succs, chains)
    monkeypatch.setattr(ideals_mod, "_compiled", None)
    monkeypatch.setattr(hyperedges, "_compiled", None)
    n_pk, n_f = ids.prefix_sums(weights), ids.prefix_sums(fw)
    n_hx = hyperedges.hyperedge_tables(ids, succs, hyper, chains, lanes, n_pk)
    n_counts = hyperedges._per_node_counts(ids.num_nodes, succs, chains)
    assert np.array_equal(c_pk, n_pk) and np.array_equal(c_f, n_f)
    for field in ("htc", "wcut", "cut_ptr", "cut_h", "cut_down", "free", "dk"):
        a, b = getattr(c_hx, field), getattr(n_hx, field)
        assert a.dtype == b.dtype and np.array_equal(a, b), field
    assert all(np.array_equal(a, b) for a, b in zip(c_counts, n_counts))


def _random_dag(rng, K, p):
    succs = [sorted({w for w in range(v + 1, min(K, v + 1 + int(rng.integers(1, 12)))) if rng.random() < p})
             for v in range(K)]
    pred = [0] * K
    for v in range(K):
        for w in succs[v]:
            pred[w] |= 1 << v
    return pred, succs


@compiled
@pytest.mark.parametrize("seed", range(40))
def test_compiled_ideals_equal_python_ideals(seed):
    """The same ideals in the same order with the same parents, added nodes and levels; the same limit error and
    the same progress calls; on one word of nodes and on several (K > 64)."""
    rng = np.random.default_rng(seed)
    for _ in range(8):
        K = int(rng.choice([rng.integers(1, 12), rng.integers(1, 70), rng.integers(60, 160)]))
        pred, succs = _random_dag(rng, K, float(rng.choice([0.05, 0.2, 0.5])))
        limit = int(rng.choice([20_000, 60, 5000]))
        got, calls = [], [[], []]
        for which, f in enumerate((ideals_mod._python_ideals, ideals_mod._compiled_ideals)):
            try:
                got.append(f(K, pred, succs, limit, calls[which].append))
            except ideals_mod.TooManyIdeals as err:
                got.append((err.found, err.limit))
        a, b = got
        assert calls[0] == calls[1]
        if isinstance(a, tuple):
            assert a == b
            continue
        for field in ("bits", "parent", "added", "level_starts"):
            x, y = getattr(a, field), getattr(b, field)
            assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y), field
        assert b.complete and b.num_nodes == K


@compiled
def test_compiled_ideals_stop_on_a_raising_check_and_refuse_bad_input():
    from viz_place.errors import Cancelled
    from viz_place.solvers.dp import _kernel

    def stop(count):
        raise Cancelled()
    with pytest.raises(Cancelled):           # 2**20 ideals: the check runs at 4,096
        ideals_mod._compiled_ideals(20, [0] * 20, [[] for _ in range(20)], 10**7, stop)
    pred = ideals_mod.ints_to_bits([0, 1], 2)
    with pytest.raises(ValueError, match="successor"):
        _kernel.ideals(pred, np.array([0, 1, 1], np.int64), np.array([7], np.int64), 100, None)
    with pytest.raises(ValueError, match="succ_ptr"):
        _kernel.ideals(pred, np.array([0, 2, 1], np.int64), np.array([1], np.int64), 100, None)
    with pytest.raises(ValueError, match="pred"):
        _kernel.ideals(np.zeros(3, np.uint64), np.array([0, 1, 1], np.int64), np.array([1], np.int64), 100, None)


def _chain_graph(n=6):
    nodes = [{"id": f"n{i}", "latency": {"cpu": 2.0 + i, "fpga": 1.0 + i % 2}, "transfer_cost": 0.3} for i in range(n)]
    return OpGraph.from_records(nodes, [(f"n{i}", f"n{i + 1}") for i in range(n - 1)])


def test_the_solver_reports_and_takes_its_kernel():
    from viz_place.model import Cluster
    g, cluster = _chain_graph(), Cluster.paper(2, 1, None)
    auto = run_solver("dp", g, cluster)
    assert auto.options["stats"]["kernel"] == recursion.kernel_name()
    slow = run_solver("dp", g, cluster, options={"kernel": "numpy"})
    assert slow.options["stats"]["kernel"] == "numpy" and slow.claimed_value == auto.claimed_value
    with pytest.raises(SolverError, match="kernel"):
        run_solver("dp", g, cluster, options={"kernel": "fortran"})


@compiled
def test_compiled_functions_refuse_inconsistent_input(monkeypatch):
    from viz_place.solvers.dp import _kernel
    inst = random_instance(33_001, n_min=6, n_max=8)
    t = _tables(inst)
    p = recursion._Pass(t, math.inf, "c")
    I = np.arange(1, t.ideals.count, dtype=np.int64)
    I = I[np.argsort(t.lower[I], kind="stable")]          # one group of every ideal, as _Pass.group prepares it
    p._index_reached(extra=p.pos_of[I])
    plan, (lo, hi, start, stop), alive = p.windows(I)

    def call(r_ideal=p.r_ideal, start=start, stop=stop, best=p.best):
        return _kernel.group(*t.compiled_args, *p.c_states, best, p.prev_ideal, p.prev_class, I,
                             np.ascontiguousarray(start, np.int64), np.ascontiguousarray(stop, np.int64),
                             np.ascontiguousarray(r_ideal, np.int64), np.ascontiguousarray(p.r_low),
                             np.array([c for c, _, _ in plan], np.int64), np.zeros(0), np.zeros(0),
                             np.zeros(0, np.uint8), math.inf, False, False)
    bad_ideal = p.r_ideal.copy()
    bad_ideal[0] = t.ideals.count + 5
    with pytest.raises(ValueError, match="candidate ideal"):
        call(r_ideal=bad_ideal)
    with pytest.raises(ValueError, match="window"):
        call(stop=np.full(I.size, p.r_ideal.size + 1))
    with pytest.raises(ValueError, match="N x S"):
        call(best=np.zeros(3))
    with pytest.raises(TypeError, match="items of"):
        call(best=p.best.astype(np.float32))
    assert call() == recursion.run_pass(t, math.inf, kernel="c").pairs   # the same call, consistent: it runs
    with pytest.raises(ValueError, match="parent"):
        _kernel.prefix_sums(np.array([-1, 5], np.int64), np.array([-1, 0], np.int64), np.zeros(1), np.zeros(2))


def test_the_collector_waits_for_a_dp_run_and_is_restored():
    """dp pauses the cyclic collector for its whole run (progress events see it off); another solver's own search
    runs with it on; afterwards it is as before, on or off."""
    import gc
    from viz_place.model import Cluster
    g, cluster = _chain_graph(), Cluster.paper(2, 1, None)
    was = gc.isenabled()
    try:
        for before in (True, False):
            (gc.enable if before else gc.disable)()
            seen = []
            run_solver("dp", g, cluster, progress=lambda ev: seen.append(gc.isenabled()))
            assert seen and not any(seen) and gc.isenabled() == before
            seen.clear()
            run_solver("local-search", g, cluster, progress=lambda ev: seen.append(gc.isenabled()))
            assert seen and all(x == before for x in seen) and gc.isenabled() == before
    finally:
        (gc.enable if was else gc.disable)()
