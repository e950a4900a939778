"""The bounds behind the non-contiguous proofs (issue #16): the packing bound (pigeonhole, packing,
volume) and the bound phase of ``ilp-noncontig`` (only the largest groups integral) are never above
the brute-force optimum over all placements, and they do lift the simple fluid bound where units are
indivisible."""
from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np
import pytest

from _ilp_brute import MAX_COMBOS, brute_force, combos
from viz_place.cost import compile_problem, packing, simple_lower_bound
from viz_place.cost.packing import packing_lower_bound
from viz_place.model import Cluster, DeviceClass, OpGraph
from viz_place.solvers import run_solver
from viz_place.solvers.groups import allowed_devices
from viz_place.solvers.milp import available_backends
from viz_place.solvers.milp.max_load import IlpNoncontigOptions, big_groups, relaxation_bound
from viz_place.solvers.base import Hooks
from viz_place.testing import Instance, random_instance

BACKEND = "highs" if "highs" in available_backends() else "cbc"


def lumpy_instance(seed: int, n_min: int = 4, n_max: int = 7) -> Instance:
    """Few similar large units and some tiny ones on 2-3 accelerators and a slow CPU (where the
    pigeonhole and packing arguments bite), with communication, memory limits and colour classes."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(n_min, n_max + 1))
    g = nx.DiGraph()
    for i in range(n):
        big = rng.random() < 0.7
        fpga = float(rng.uniform(3.0, 4.0) if big else rng.uniform(0.01, 0.1))
        g.add_node(str(i), latency={"cpu": fpga * float(rng.choice([3.0, 10.0])), "fpga": round(fpga, 3)},
                   size=float(rng.integers(0, 5)), transfer_cost=float(rng.choice([0.0, 0.05, 0.5])), op_type="op")
    for v in range(1, n):
        for u in range(v):
            if rng.random() < 0.4:
                g.add_edge(str(u), str(v))
    if rng.random() < 0.3:
        g.nodes["0"]["color_class"] = g.nodes[str(n - 1)]["color_class"] = "cc"
    total = sum(a["size"] for _, a in g.nodes(data=True))
    mem = float(max(5.0, total / 2)) if rng.random() < 0.5 else None
    cluster = Cluster((DeviceClass("fpga", "fpga", int(rng.integers(2, 4)), memory=mem),
                       DeviceClass("cpu", "cpu", 1, memory=None, pays_communication=False)))
    return Instance(OpGraph(g, name=f"lumpy_{seed}", default_cluster=cluster), cluster, {}, seed)


def test_packing_bound_examples():
    # 13 units of 3.6 on 6 accelerators, a CPU 10x slower: one accelerator runs 3 of them
    glat = np.array([[3.6] * 6 + [36.0]] * 13)
    value, text = packing_lower_bound(glat, np.array([True] * 6 + [False]))
    assert value == pytest.approx(10.8) and text.startswith("pigeonhole")
    # one unit of 10 and four of 6 on 3 devices: the 6s cannot join the 10 below 16, so two devices hold 24
    glat = np.array([[10.0] * 3] + [[6.0] * 3] * 4)
    value, text = packing_lower_bound(glat, np.array([True] * 3))
    assert value == pytest.approx(12.0) and text.startswith(("packing", "pigeonhole"))
    # a CPU as fast as the accelerators absorbs its share: nothing beyond the fluid bound 4 * 3 / 4
    glat = np.array([[3.0] * 4] * 4)
    assert packing_lower_bound(glat, np.array([True] * 3 + [False]))[0] <= 3.0 + 1e-9


def test_packing_bound_never_exceeds_brute_force_and_often_beats_the_fluid_bound():
    checked = lifted = 0
    for seed in range(150):
        inst = lumpy_instance(9100 + seed)
        if combos(inst) > MAX_COMBOS:
            continue
        best = brute_force(inst, "max_load")
        if math.isinf(best):
            continue
        value, why = simple_lower_bound(inst.graph, inst.cluster)
        assert value <= best * (1 + 1e-9) + 1e-12, (seed, value, best, why)
        prob = compile_problem(inst.graph, inst.cluster)
        glat = np.array([[float(prob.lat[list(m), d].sum()) for d in range(prob.num_devices)] for m in prob.groups])
        fluid = glat.min(axis=1).sum() / prob.num_devices
        lifted += why.startswith(("pigeonhole", "packing", "volume")) and value > fluid * (1 + 1e-6)
        checked += 1
    assert checked >= 60
    assert lifted >= 15, lifted     # the new arguments are what bounds a good share of these


@pytest.mark.parametrize("seed", range(40))
def test_packing_bound_on_random_instances_and_every_device_split(seed):
    """Every device split ``A`` (not only the ones simple_lower_bound tries) gives a valid bound."""
    inst = random_instance(9400 + seed, n_max=6, pins=False)
    if combos(inst) > MAX_COMBOS:
        pytest.skip("too many combinations to brute-force")
    best = brute_force(inst, "max_load")
    if math.isinf(best):
        return
    prob = compile_problem(inst.graph, inst.cluster)
    glat = np.array([[float(prob.lat[list(m), d].sum()) for d in range(prob.num_devices)] for m in prob.groups])
    D = prob.num_devices
    for mask in itertools.product([False, True], repeat=D):
        if any(mask):
            value, _ = packing_lower_bound(glat, np.array(mask))
            assert value <= best * (1 + 1e-9) + 1e-12, (seed, mask, value, best)


def _grid(glat, in_a, base=0.0):
    """packing_lower_bound's inputs to the grid: lat_a, lat_b, k, nb and its candidates, ascending."""
    in_a = np.asarray(in_a, dtype=bool)
    k, nb = int(in_a.sum()), int((~in_a).sum())
    lat_a = glat[:, in_a].min(axis=1)
    lat_b = glat[:, ~in_a].min(axis=1) if nb else np.full(glat.shape[0], math.inf)
    ok = np.isfinite(lat_a)
    lat_a, lat_b = lat_a[ok], lat_b[ok]
    return lat_a, lat_b, k, nb, packing.candidate_grid(lat_a, lat_b, k, nb, base).tolist()


def _scanned_packing_bound(glat, in_a, base=0.0):
    """The grid scan as packing_lower_bound did it before it was vectorised: one _bound_below per candidate."""
    lat_a, lat_b, k, nb, betas = _grid(glat, in_a, base)
    best, text = 0.0, ""
    for beta in betas if lat_a.size else []:
        x, why = packing._bound_below(lat_a, lat_b, k, nb, beta)
        if min(beta, x) > best:
            best, text = min(beta, x), why
    return best, text


def test_the_vectorised_grid_gives_the_scans_bounds_bit_for_bit():
    """packing_lower_bound evaluates its candidates in runs of arrays: the same X at every candidate and
    the same value and words as one _bound_below per candidate, on lumpy and random instances (every
    device split) and on random units with ties, units only A runs (lat_b inf) and no B at all."""
    rng = np.random.default_rng(7)
    cases = []
    for seed in range(4):
        for inst in (lumpy_instance(9700 + seed), random_instance(9800 + seed, n_max=9, pins=False)):
            prob = compile_problem(inst.graph, inst.cluster)
            glat = np.array([[float(prob.lat[list(m), d].sum()) for d in range(prob.num_devices)]
                             for m in prob.groups])
            cases += [(glat, np.array(mask)) for mask in itertools.product([False, True], repeat=prob.num_devices)
                      if any(mask)]
    for _ in range(50):
        units, devices = int(rng.integers(1, 40)), int(rng.integers(1, 7))
        glat = np.round(rng.uniform(0.5, 6.0, (units, devices)), int(rng.integers(0, 3)))     # rounding: ties
        glat[rng.random((units, devices)) < 0.15] = np.inf
        glat[:, 0] = np.minimum(glat[:, 0], 6.0)          # every unit runs somewhere
        cases.append((glat, rng.random(devices) < 0.6))
    compared = 0
    for glat, in_a in cases:
        if not in_a.any():
            continue
        base = float(rng.choice([0.0, 1.0]))
        lat_a, lat_b, k, nb, betas = _grid(glat, in_a, base)
        if lat_a.size:
            each = [packing._bound_below(lat_a, lat_b, k, nb, beta)[0] for beta in betas]
            assert packing._bounds_below(lat_a, lat_b, k, nb, np.array(betas)).tolist() == each
        assert packing_lower_bound(glat, in_a, base, exact_nodes=0) == _scanned_packing_bound(glat, in_a, base), \
            (glat.tolist(), in_a.tolist(), base)
        compared += 1
    assert compared >= 100, compared


def _tiny_tail_instance(seed: int) -> Instance:
    inst = lumpy_instance(seed, 3, 5)
    g = inst.graph.nx.copy()
    n = g.number_of_nodes()
    for i in range(2):   # tiny groups, so the bound phase leaves some groups fractional
        v = f"t{i}"
        g.add_node(v, latency={"cpu": 0.02, "fpga": 0.01}, size=0.0, transfer_cost=0.05, op_type="op")
        g.add_edge(str(i % n), v)
    return Instance(OpGraph(g, name=f"tiny_{seed}", default_cluster=inst.cluster), inst.cluster, {}, seed)


@pytest.mark.parametrize("seed", range(12))
def test_bound_phase_is_a_relaxation(seed, monkeypatch):
    """The bound phase's bound (big groups integral, the rest fractional) is never above the optimum
    over all placements, and ilp-noncontig with it still proves the brute-force optimum."""
    from viz_place.solvers.milp import max_load
    monkeypatch.setattr(max_load, "BIG_MAX_SHARE", 0.99)     # run the phase on these small graphs too
    inst = _tiny_tail_instance(9700 + seed)
    prob = compile_problem(inst.graph, inst.cluster)
    if prob.num_devices ** len(prob.groups) > 60000:
        pytest.skip("too many combinations to brute-force")
    best = brute_force(inst, "max_load")
    if math.isinf(best):
        return
    allowed = allowed_devices(prob, {})
    floor = simple_lower_bound(inst.graph, inst.cluster)[0]
    big = big_groups(prob, allowed, floor)
    assert 0 < len(big) < len(allowed)
    opts = IlpNoncontigOptions(backend=BACKEND, time_limit=20)
    from time import perf_counter
    bound = relaxation_bound(prob, allowed, opts, [], None, floor, Hooks(), deadline=perf_counter() + 10,
                             incumbent=None)
    assert floor <= bound <= best * (1 + 1e-6) + 1e-9, (seed, floor, bound, best)
    p = run_solver("ilp-noncontig", inst.graph, inst.cluster, options={"backend": BACKEND, "time_limit": 20,
                                                                     "bound_phase": 0.5})
    assert p.claimed_value == pytest.approx(best, rel=1e-6)
    assert p.bound_set == "any" and p.lower_bound <= best * (1 + 1e-6) + 1e-9
