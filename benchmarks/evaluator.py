"""Evaluator speed on the 2,012-node BERT-L12 training graph.

Prints median times of: a full throughput evaluation, the latency computation,
and one-node moves with the incremental evaluator.
"""
from __future__ import annotations

import statistics
import sys
import time

import numpy as np

from _common import WORKLOADS, workloads_available
from viz_place.cost import IncrementalEvaluator, compile_problem, evaluate_indices, single_sample_latency
from viz_place.io import load_graph


def median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> int:
    path = WORKLOADS / "throughput-inputs/OperatorGraphs/bert_L-12_training.json"
    if not workloads_available():
        print(f"skipped: {WORKLOADS} not found")
        return 0
    g = load_graph(path)
    cluster = g.default_cluster
    prob = compile_problem(g, cluster)
    rng = np.random.default_rng(0)
    # A contiguous-ish placement: topological order cut into equal blocks.
    D = prob.num_devices
    dev = np.minimum(np.arange(prob.n) * D // prob.n, D - 1)
    full = median_time(lambda: evaluate_indices(prob, dev), 200)
    lat = median_time(lambda: single_sample_latency(prob, dev), 50)
    rand_dev = rng.integers(0, D, prob.n)
    lat_rand = median_time(lambda: single_sample_latency(prob, rand_dev), 20)
    inc = IncrementalEvaluator(prob, dev)
    moves = [(int(rng.integers(prob.n)), int(rng.integers(D))) for _ in range(5000)]
    t = time.perf_counter()
    for i, d in moves:
        inc.move(i, d)
    per_move = (time.perf_counter() - t) / len(moves)
    print(f"graph: {path.name}, {prob.n} nodes, {len(prob.esrc)} data edges, {D} devices")
    print(f"{'measure':44s} {'median':>10s} {'target':>8s}")
    print(f"{'full evaluation (throughput figures)':44s} {full*1e3:8.3f}ms {'5 ms':>8s}")
    print(f"{'latency, contiguous placement':44s} {lat*1e3:8.3f}ms {'-':>8s}")
    print(f"{'latency, random placement':44s} {lat_rand*1e3:8.3f}ms {'-':>8s}")
    print(f"{'one-node move (incremental, mean of 5000)':44s} {per_move*1e3:8.3f}ms {'0.5 ms':>8s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
