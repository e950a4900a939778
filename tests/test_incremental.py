"""Incremental evaluation equals full evaluation after any sequence of moves."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from viz_place.cost import IncrementalEvaluator, compile_problem, evaluate_indices
from viz_place.testing import random_instance


def check_equal(inc, prob):
    full = evaluate_indices(prob, np.array(inc.dev), overlap=inc.overlap)
    for d, fig in enumerate(full.devices):
        assert inc.compute_of(d) == pytest.approx(fig.compute, rel=1e-9, abs=1e-9)
        assert inc.comm[d] == pytest.approx(fig.communication, rel=1e-9, abs=1e-9)
        assert inc.memory[d] == pytest.approx(fig.memory, rel=1e-9, abs=1e-9)
    assert inc.max_load == pytest.approx(full.max_load, rel=1e-9, abs=1e-9)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10_000), moves=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 10_000)),
                                                   min_size=1, max_size=30), overlap=st.booleans())
def test_incremental_matches_full_after_random_moves(seed, moves, overlap):
    inst = random_instance(seed, n_min=3, n_max=12)
    prob = compile_problem(inst.graph, inst.cluster)
    rng = np.random.default_rng(seed)
    inc = IncrementalEvaluator(prob, rng.integers(0, prob.num_devices, prob.n), overlap=overlap)
    check_equal(inc, prob)
    for i, d in moves:
        i, d = i % prob.n, d % prob.num_devices
        delta = inc.move(i, d)
        assert delta.max_load == pytest.approx(inc.max_load)
        for name, ch in delta.changed.items():
            k = prob.device_names.index(name)
            assert ch.load == pytest.approx(inc.loads[k])
    check_equal(inc, prob)


def test_move_value_leaves_state_unchanged():
    inst = random_instance(5, n_min=8, n_max=8)
    prob = compile_problem(inst.graph, inst.cluster)
    inc = IncrementalEvaluator(prob, [0] * prob.n)
    before = (list(inc.dev), inc.max_load)
    v = inc.move_value(3, 1)
    assert (list(inc.dev), inc.max_load) == before
    inc.move(3, 1)
    assert inc.max_load == pytest.approx(v)


def test_bert_training_moves(workloads):
    from viz_place.io import load_graph
    g = load_graph(workloads / "throughput-inputs/OperatorGraphs/bert_L-12_training.json")
    prob = compile_problem(g, g.default_cluster)
    rng = np.random.default_rng(1)
    inc = IncrementalEvaluator(prob, np.minimum(np.arange(prob.n) * 7 // prob.n, 6))
    for _ in range(2000):
        inc.move(int(rng.integers(prob.n)), int(rng.integers(prob.num_devices)))
    check_equal(inc, prob)
