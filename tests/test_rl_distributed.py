"""RL training with rollouts on Dask workers: the same seed gives the same policy whatever
the number of workers (none, one in-process worker, two ``dask worker`` processes)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from viz_place.runtime.dask_engine import DaskEngine
from viz_place.runtime.rl_distributed import train_policy_distributed
from viz_place.solvers.rl import Policy, TrainConfig, train_policy

CFG = TrainConfig(families=("chain", "residual"), sizes=(10, 24), n_graphs=3, updates=5, rollouts=4, seed=3)


def _same(a: Policy, b: Policy) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a.params, b.params)) and np.array_equal(a.x_mean, b.x_mean)


@pytest.fixture(scope="module")
def reference():
    return train_policy_distributed(CFG, workers=0)


def test_same_seed_same_policy_on_one_and_two_workers(reference, dask_cluster):
    ref, ref_hist = reference
    with DaskEngine(workers=1, processes=False, dashboard=False) as one:
        p1, h1 = train_policy_distributed(CFG, engine=one)
    p2, h2 = train_policy_distributed(CFG, scheduler=dask_cluster.address)
    assert _same(ref, p1) and _same(ref, p2)
    strip = lambda h: [{k: v for k, v in r.items() if k != "seconds"} for r in h]  # noqa: E731
    assert strip(ref_hist) == strip(h1) == strip(h2)
    assert p2.meta["rollouts_on"] == "dask" and p2.meta["workers_used"] == 2   # both workers ran rollouts
    assert ref.meta["rollouts_on"] == "this process"


def test_training_changes_the_policy_and_another_seed_differs(reference):
    ref, _ = reference
    start = Policy.new(hidden=tuple(CFG.hidden), seed=CFG.seed)
    assert not np.array_equal(ref.params[-2], start.params[-2])
    other, _ = train_policy_distributed(TrainConfig(**{**CFG.__dict__, "seed": 4}), workers=0)
    assert not _same(ref, other)


def test_in_process_training_is_unchanged_by_the_hook():
    a, _ = train_policy(CFG)
    b, _ = train_policy(CFG)
    assert _same(a, b)


def test_cli_train_rl_on_the_cluster_matches_python(reference, dask_cluster, tmp_path):
    out = tmp_path / "p.npz"
    r = subprocess.run([sys.executable, "-m", "viz_place", "train-rl", "--family", "chain,residual", "--sizes", "10,24",
                        "--graphs", "3", "--updates", "5", "--seed", "3", "--scheduler", dask_cluster.address,
                        "--out", str(out), "--json"], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    assert "rollouts on Dask at" in r.stderr
    assert _same(Policy.load(out), reference[0])
