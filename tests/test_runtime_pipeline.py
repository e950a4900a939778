"""Placements run for real: solve -> export -> run-pipeline with 2 CPU stage processes.

Every run starts real spawned processes (and, for gloo, a process group on a free loopback
port) and must leave none behind, also when a stage is killed or the run is cancelled.
"""
from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import re
import subprocess
import sys
import threading

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from viz_place.cli.main import main  # noqa: E402
from viz_place.cost import evaluate  # noqa: E402
from viz_place.io import write_nodelink, write_placement  # noqa: E402
from viz_place.model import OpGraph, Placement  # noqa: E402
from viz_place.runtime import (LinkCalibration, ModelRecipe, PipelineRunError, run_pipeline,  # noqa: E402
                               runtime_problem, to_runtime_placement, write_link)
from viz_place.runtime.calibrate import calibrate_link, fit, read_link  # noqa: E402
from viz_place.runtime.procs import RunCancelled  # noqa: E402
from viz_place.solvers import run_solver  # noqa: E402

LINK = LinkCalibration("shm", latency_ms=0.01, bandwidth_bytes_per_ms=5e6)
TINY_GPT2 = ("hf:gpt2", {"n_layer": 2, "n_embd": 64, "n_head": 2, "vocab_size": 100, "n_positions": 32},
             {"seq_len": 16})
TINY_RESNET = ("hf:resnet", {"embedding_size": 8, "hidden_sizes": [8, 16], "depths": [1, 1], "num_labels": 10},
               {"image_size": 32})


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(),
                               torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8)).eval()


def mlp_case():
    from viz_place.io.torch_fx import read_torch
    m, x = mlp(), (torch.randn(4, 32),)
    return read_torch(m, x), ModelRecipe.from_module(m, x)


def spec_graph(spec, overrides, kw, **options):
    """The graph import writes for a SPEC: the traced model plus the source that rebuilds it."""
    from viz_place.io.torch_import import import_torch
    return import_torch(spec, overrides=overrides, **kw, **options)


def dp_placement(graph, stages=2):
    cost_graph, cluster = runtime_problem(graph, LINK, stages)
    return run_solver("dp", cost_graph, cluster, pins={}, options={}, progress=None, cancel=None)


def assert_no_children():
    for child in multiprocessing.active_children():
        child.join(5)
    assert multiprocessing.active_children() == []


def assert_gone(pids):
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_mlp_runs_as_two_stages_and_matches_the_unsplit_model():
    graph, recipe = mlp_case()
    placement = dp_placement(graph)
    run = run_pipeline(graph, placement, recipe=recipe, link=LINK, microbatches=4, repeats=1)
    assert run.stages == 2 and len(run.per_stage) == 2
    assert run.outputs_match and run.max_abs_diff <= 1e-6
    cost_graph, cluster = runtime_problem(graph, LINK, 2)
    ev = evaluate(cost_graph, cluster, to_runtime_placement(placement, tuple(run.devices)))
    assert run.predicted_time_per_sample == pytest.approx(ev.max_load)
    assert run.measured_time_per_sample > 0 and run.single_process_time_per_sample > 0
    for s in run.per_stage:
        assert s.measured_compute > 0 and s.predicted_compute > 0 and s.nodes > 0
    d = run.to_dict()
    for key in ("stages", "outputs_match", "max_abs_diff", "measured_time_per_sample", "predicted_time_per_sample"):
        assert key in d
    assert_no_children()


@pytest.mark.slow
def test_gloo_transport_runs_torch_schedule_gpipe_and_frees_its_port():
    import socket
    graph, recipe = mlp_case()
    link = LinkCalibration("gloo", latency_ms=0.2, bandwidth_bytes_per_ms=1e6)
    said: list[str] = []
    run = run_pipeline(graph, dp_placement(graph), recipe=recipe, link=link, microbatches=2, repeats=1,
                       transport="gloo", progress=said.append)
    assert run.outputs_match and run.transport == "gloo"
    port = int(re.search(r"gloo on 127\.0\.0\.1:(\d+)", " ".join(said)).group(1))
    with socket.socket() as s:  # nothing listens on the process group's port any more
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
    assert_no_children()


@pytest.mark.slow
def test_gloo_sends_and_receives_vits_strided_activation():
    """ViT's layer output is a strided view; gloo refuses those unless made contiguous (issue #10)."""
    graph = spec_graph("hf:vit", {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
                                  "intermediate_size": 64, "patch_size": 8}, {"image_size": 32}, granularity="module")
    ids = list(graph.node_ids)
    cut = ids.index("vit.layers.1")
    placement = {n: "cpu:0" if i < cut else "cpu:1" for i, n in enumerate(ids)}
    link = LinkCalibration("gloo", latency_ms=0.2, bandwidth_bytes_per_ms=1e6)
    run = run_pipeline(graph, placement, link=link, microbatches=2, repeats=1, transport="gloo")
    assert run.split_spec == {"vit.layers.1": "BEGINNING"} and run.outputs_match and run.max_abs_diff <= 1e-5
    assert_no_children()


@pytest.mark.parametrize("case", [TINY_GPT2, TINY_RESNET], ids=["gpt2", "resnet"])
def test_solve_export_run_pipeline_through_the_cli(case, tmp_path, capsys):
    graph = spec_graph(*case)
    gpath, lpath = tmp_path / "g.json", tmp_path / "link.json"
    write_nodelink(gpath, graph)
    write_link(str(lpath), LINK)
    priced = tmp_path / "priced.json"
    cost_graph, cluster = runtime_problem(graph, LINK, 2)
    write_nodelink(priced, cost_graph)
    assert main(["solve", str(priced), "--solver", "dp", "--out", str(tmp_path / "p.json")]) == 0
    assert main(["export", str(gpath), str(tmp_path / "p.json"), "--devices", _devices(tmp_path, cluster),
                 "--format", "pipelining", "--out", str(tmp_path / "split.json")]) == 0
    split = json.loads((tmp_path / "split.json").read_text())
    assert split["split_spec"] and len(split["stages"]) == 2 and split["source"]["spec"] == case[0]
    capsys.readouterr()
    assert main(["run-pipeline", str(gpath), str(tmp_path / "p.json"), "--devices", _devices(tmp_path, cluster),
                 "--link", str(lpath), "--microbatches", "3", "--repeats", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["stages"] == 2 and out["outputs_match"] is True and out["max_abs_diff"] <= 1e-5
    assert out["split_spec"] == split["split_spec"]
    assert [s["device"] for s in out["per_stage"]] == ["proc:0", "proc:1"]
    assert_no_children()


def _devices(tmp_path, cluster):
    path = tmp_path / "devices.json"
    path.write_text(json.dumps(cluster.to_dict()))
    return str(path)


@pytest.mark.slow
def test_exported_script_runs_standalone(tmp_path):
    graph = spec_graph(*TINY_GPT2)
    placement = dp_placement(graph)
    gpath = tmp_path / "g.json"
    write_nodelink(gpath, graph)
    cost_graph, cluster = runtime_problem(graph, LINK, 2)
    write_placement(tmp_path / "p.json", cost_graph, cluster, placement)
    assert main(["export", str(gpath), str(tmp_path / "p.json"), "--devices", _devices(tmp_path, cluster),
                 "--format", "script", "--out", str(tmp_path / "run.py")]) == 0
    done = subprocess.run([sys.executable, str(tmp_path / "run.py"), "--microbatches", "2"], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "stages: 2  outputs_match: True" in done.stdout


def test_a_killed_stage_is_named_and_no_process_is_left():
    graph, recipe = mlp_case()
    pids: list[int] = []

    def kill_later(msg):
        if msg.startswith("running"):
            threading.Timer(0.3, os.kill, (pids[1], 9)).start()
    with pytest.raises(PipelineRunError) as err:
        run_pipeline(graph, dp_placement(graph), recipe=recipe, link=LINK, microbatches=8, repeats=100_000,
                     on_start=pids.extend, progress=kill_later, timeout=60)
    assert "stage 1 (proc:1" in str(err.value) and "SIGKILL" in str(err.value)
    assert err.value.stage == 1
    assert_gone(pids)
    assert_no_children()


def test_cancel_stops_every_stage():
    graph, recipe = mlp_case()
    cancel = threading.Event()
    pids: list[int] = []

    def cancel_later(msg):
        if msg.startswith("running"):
            threading.Timer(0.3, cancel.set).start()
    with pytest.raises(RunCancelled):
        run_pipeline(graph, dp_placement(graph), recipe=recipe, link=LINK, microbatches=8, repeats=100_000,
                     on_start=pids.extend, progress=cancel_later, cancel=cancel, timeout=60)
    assert_gone(pids)
    assert_no_children()


@dataclasses.dataclass(frozen=True)
class FailsInStages(ModelRecipe):
    """Builds in the parent, raises in every stage process."""
    parent_pid: int = 0

    def build(self):
        if os.getpid() != self.parent_pid:
            raise RuntimeError("boom while building the stage")
        return super().build()


def test_a_failing_stage_reports_its_error_naming_the_stage():
    graph, recipe = mlp_case()
    failing = FailsInStages(payload=recipe.payload, name=recipe.name, parent_pid=os.getpid())
    with pytest.raises(PipelineRunError) as err:
        run_pipeline(graph, dp_placement(graph), recipe=failing, link=LINK, microbatches=2, repeats=1, timeout=120)
    msg = str(err.value)
    assert re.match(r"stage [01] \(proc:[01], pid \d+\) failed: RuntimeError: boom while building the stage", msg)
    assert_no_children()


def test_run_pipeline_refuses_a_non_contiguous_placement_on_one_line(tmp_path, capsys):
    graph, _ = mlp_case()
    ids = [n.id for n in graph.nodes()]
    gpath = tmp_path / "g.json"
    write_nodelink(gpath, graph)
    p = Placement({n: f"proc:{i % 2}" for i, n in enumerate(ids)})   # alternating: not contiguous
    cost_graph, cluster = runtime_problem(graph, LINK, 2)
    write_placement(tmp_path / "p.json", cost_graph, cluster, p)
    devices = _devices(tmp_path, cluster)
    for argv in (["run-pipeline", str(gpath), str(tmp_path / "p.json"), "--devices", devices, "--link", "x.json"],
                 ["export", str(gpath), str(tmp_path / "p.json"), "--devices", devices, "--format", "pipelining",
                  "--out", str(tmp_path / "s.json")]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and "not contiguous" in err
        assert re.search(r"path '_\d' -> '_\d' -> '_\d' leaves it", err)
    assert_no_children()


def test_link_calibration_ping_pong_and_file_round_trip(tmp_path):
    link = calibrate_link("shm", sizes=(4096, 65536, 262144), rounds=5)
    assert link.transport == "shm" and link.bandwidth_bytes_per_ms > 0 and link.latency_ms >= 0
    assert len(link.points) == 3 and all(t > 0 for _, t in link.points)
    write_link(str(tmp_path / "l.json"), link)
    assert read_link(str(tmp_path / "l.json")).to_dict() == link.to_dict()
    (tmp_path / "bad.json").write_text('{"format": "nope"}')
    with pytest.raises(Exception, match="not a link calibration"):
        read_link(str(tmp_path / "bad.json"))
    assert_no_children()


def test_fit_recovers_a_line():
    pts = [(b, 4 * (0.02 + b / 1e6)) for b in (1e3, 1e4, 1e5, 1e6)]
    link = fit(pts, "shm")
    assert link.latency_ms == pytest.approx(0.02, rel=1e-6)
    assert link.bandwidth_bytes_per_ms == pytest.approx(1e6, rel=1e-6)


@pytest.mark.parametrize("name", ["viz_place.runtime.recipe", "viz_place.runtime.calibrate",
                                  "viz_place.runtime.costs", "viz_place.widgets.pytorch_panel"])
def test_docstring_examples_run(name):
    import doctest
    import importlib
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def _split_at(graph, first_of_stage_1):
    """A 2-stage placement that starts stage 1 at ``first_of_stage_1``; backward twins follow."""
    fwd = [n.id for n in graph.nodes() if not n.backward and not n.artificial]
    cut = fwd.index(first_of_stage_1)
    out = {}
    for n in graph.nodes():
        base = n.id[:-len("__grad")] if n.backward else n.id
        out[n.id] = "cpu:0" if base in fwd and fwd.index(base) < cut else "cpu:1"
    return out


@pytest.mark.slow
def test_training_runs_torchs_1f1b_over_gloo_and_gradients_match_tied_weights_included():
    """GPT-2 ties lm_head to wte: the two stages each hold one name; their gradients must add up."""
    spec, overrides, kw = TINY_GPT2
    graph = spec_graph(spec, overrides, kw, granularity="module", training=True)
    link = LinkCalibration("gloo", latency_ms=0.2, bandwidth_bytes_per_ms=1e6)
    run = run_pipeline(graph, _split_at(graph, "transformer.h.1"), link=link, microbatches=4, repeats=1,
                       transport="gloo")
    assert run.training and run.split_spec == {"transformer.h.1": "BEGINNING"}
    assert run.outputs_match and run.grads_match and run.grads_max_abs_diff <= 1e-5
    cost_graph, cluster = runtime_problem(graph, link, 2)
    ev = evaluate(cost_graph, cluster, to_runtime_placement(_split_at(graph, "transformer.h.1"), tuple(run.devices)))
    assert run.predicted_time_per_sample == pytest.approx(ev.max_load)
    assert ev.max_load > evaluate(*runtime_problem(spec_graph(spec, overrides, kw, granularity="module"), link, 2),
                                  to_runtime_placement({n: v for n, v in _split_at(graph, "transformer.h.1").items()
                                                        if not n.endswith("__grad")}, tuple(run.devices))).max_load
    assert all(s.measured_compute > 0 for s in run.per_stage) and "1F1B" in " ".join(run.notes)
    assert_no_children()


def test_training_runs_are_refused_when_they_cannot_be_predicted_or_run(tmp_path, capsys):
    graph, recipe = mlp_case()
    with pytest.raises(Exception, match=r"no backward nodes, so nothing predicts a training step "
                                        r"\(import it with --training\)"):
        run_pipeline(graph, dp_placement(graph), recipe=recipe, link=LINK, training=True, transport="gloo")
    from viz_place.io.torch_import import import_torch
    m = mlp()
    train = import_torch(m, (torch.randn(4, 32),), training=True)
    placement = _split_at(train, "_4")
    with pytest.raises(Exception, match="Schedule1F1B.*transport='gloo'"):
        run_pipeline(train, placement, recipe=recipe, link=LINK)
    gloo = LinkCalibration("gloo", latency_ms=0.2, bandwidth_bytes_per_ms=1e6)
    with pytest.raises(Exception, match="microbatches 1: a 1F1B schedule needs at least as many microbatches as "
                                        r"stages \(2\)"):
        run_pipeline(train, placement, recipe=recipe, link=gloo, transport="gloo", microbatches=1)
    gpath = tmp_path / "g.json"
    write_nodelink(gpath, train)
    cost_graph, cluster = runtime_problem(train, LINK, 2)
    write_placement(tmp_path / "p.json", cost_graph, cluster, Placement({
        n: d.replace("cpu", "proc") for n, d in placement.items()}))
    assert main(["run-pipeline", str(gpath), str(tmp_path / "p.json"), "--devices", _devices(tmp_path, cluster),
                 "--link", "never-read.json"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--transport gloo" in err
    assert_no_children()
