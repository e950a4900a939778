"""Training the RL placer: it learns, it is reproducible, it reports progress and can be cancelled."""
from __future__ import annotations

import json
import threading

import numpy as np
import pytest

from viz_place.cli.main import main as cli
from viz_place.cost import compile_problem
from viz_place.errors import SolverError
from viz_place.samples import make_graph
from viz_place.solvers.rl import Policy, TrainConfig, train_policy
from viz_place.solvers.rl.env import PlacementEnv, topo_fill
from viz_place.solvers.rl.rollout import sweep

SMALL = dict(families=("residual", "chain"), sizes=(16, 40), n_graphs=6, rollouts=3, seed=1, vary_devices=True)


def _greedy_ratio(policy: Policy, graphs) -> float:
    """Mean (objective after one greedy sweep) / (objective of the topological fill)."""
    ratios = []
    for g in graphs:
        env = PlacementEnv(compile_problem(g, g.default_cluster))
        env.reset(topo_fill(env))
        res = sweep(env, policy, np.random.default_rng(0), greedy=True)
        ratios.append(res.best / res.start)
    return float(np.mean(ratios))


def test_short_training_improves_the_objective_on_unseen_graphs():
    cfg = TrainConfig(updates=60, **SMALL)
    untrained = Policy.new(hidden=cfg.hidden, seed=cfg.seed)
    trained, history = train_policy(cfg)
    held_out = [make_graph(f, 40, seed=500 + s) for f in ("residual", "chain") for s in range(3)]
    before, after = _greedy_ratio(untrained, held_out), _greedy_ratio(trained, held_out)
    assert after < before - 0.005, (before, after)
    assert len(history) == 60
    assert history[-1]["entropy"] < history[0]["entropy"]


def test_training_is_reproducible():
    cfg = TrainConfig(updates=6, **SMALL)
    a, ha = train_policy(cfg)
    b, hb = train_policy(TrainConfig(updates=6, minutes=30.0, **SMALL))   # a cap not reached changes nothing
    for x, y in zip(a.params, b.params):
        np.testing.assert_array_equal(x, y)
    assert [h["objective"] for h in ha] == [h["objective"] for h in hb]
    c, _ = train_policy(TrainConfig(updates=6, **{**SMALL, "seed": 2}))
    assert any(not np.array_equal(x, y) for x, y in zip(a.params, c.params))


def test_progress_reports_and_cancel():
    events = []
    stop = threading.Event()

    def progress(ev):
        events.append(ev)
        if ev.data["episode"] == 4:
            stop.set()

    _, history = train_policy(TrainConfig(updates=50, **SMALL), progress=progress, cancel=stop)
    assert len(history) == 4
    assert [e.data["episode"] for e in events] == [1, 2, 3, 4]
    bests = [e.data["best"] for e in events]
    assert bests == sorted(bests, reverse=True)
    assert all(e.data["best"] <= e.data["objective"] + 1e-12 for e in events)


def test_config_is_validated():
    with pytest.raises(SolverError, match="unknown graph family 'mlp'"):
        TrainConfig(families=("mlp",))
    with pytest.raises(SolverError, match="sizes"):
        TrainConfig(sizes=(50, 10))


def test_cli_train_then_solve(tmp_path, capsys):
    out = tmp_path / "p.npz"
    rc = cli(["train-rl", "--family", "residual,transformer", "--out", str(out), "--updates", "3",
              "--sizes", "12,20", "--graphs", "2", "--seed", "0", "--json"])
    assert rc == 0 and out.is_file()
    summary = json.loads(capsys.readouterr().out)
    assert summary["updates"] == 3
    graph, devices = _sample_files(tmp_path)
    rc = cli(["solve", graph, "--devices", devices, "--solver", "rl", "--policy", str(out),
              "--time-limit", "1", "--seed", "3", "--json"])
    assert rc == 0
    row = json.loads(capsys.readouterr().out)
    assert row["solver"] == "rl" and row["feasible"] and row["value"] > 0
    rc = cli(["train-rl", "--family", "nope", "--out", str(out)])
    assert rc == 2


def _sample_files(tmp_path) -> tuple[str, str]:
    from viz_place.io import write_nodelink
    g = make_graph("residual", 30, seed=9)
    path, devices = tmp_path / "g.json", tmp_path / "devices.json"
    write_nodelink(path, g)
    devices.write_text(json.dumps(g.default_cluster.to_dict()))
    return str(path), str(devices)
