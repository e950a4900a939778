"""The explorer's For PyTorch exports and Run pipeline (background, cancellable, into the history)."""
from __future__ import annotations

import json
import multiprocessing
import time

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from viz_place.model import Placement  # noqa: E402
from viz_place.widgets import PlacementExplorer  # noqa: E402
from viz_place.widgets.tradeoffs_panel import history_html  # noqa: E402

TINY = {"n_layer": 2, "n_embd": 32, "n_head": 2, "vocab_size": 64, "n_positions": 16}


@pytest.fixture(scope="module")
def explorer(tmp_path_factory):
    ex = PlacementExplorer("hf:gpt2", overrides=TINY, import_options={"seq_len": 8, "granularity": "module"},
                           load_bokehjs=False, workdir=tmp_path_factory.mktemp("explorer"))
    ids = [n for n in ex.state.graph.nx.nodes]
    cut = ids.index("transformer.h.1")
    ex.state.apply_result(Placement({n: "gpu:0" if i < cut else "gpu:1" for i, n in enumerate(ids)}, solver="manual"))
    return ex


def test_exports_for_pytorch(explorer, tmp_path):
    panel = explorer.pytorch
    files_tab = next(i for i in range(len(explorer.tabs.children)) if explorer.tabs.get_title(i) == "Load & export")
    assert explorer.tabs.children[files_tab].children[1].children == (panel.widget,)  # in the Load & export tab
    split = panel.export("pipelining", str(tmp_path / "split.json"))
    data = json.loads(split.read_text())
    assert data["split_spec"] == {"transformer.h.1": "BEGINNING"} and data["source"]["spec"] == "hf:gpt2"
    dm = json.loads(panel.export("device-map", str(tmp_path / "dm.json")).read_text())
    assert dm["device_map"]["transformer.h.1"] == 1 and dm["device_map"]["transformer.h.0"] == 0
    script = panel.export("script", str(tmp_path / "run.py")).read_text()
    assert "ScheduleGPipe" in script and "transformer.h.1" in script
    assert "download" in panel.export_message.value


def test_a_non_contiguous_placement_is_refused_in_the_panel(explorer, tmp_path):
    state = explorer.state
    before = dict(state.placement.assignment)
    ids = list(state.graph.nx.nodes)
    state.apply_result(Placement({n: f"gpu:{i % 2}" for i, n in enumerate(ids)}, solver="manual"))
    try:
        assert explorer.pytorch.export("pipelining", str(tmp_path / "x.json")) is None
        assert "refused" in explorer.pytorch.export_message.value
        assert explorer.pytorch.run(wait=True) is None and "cannot run" in explorer.pytorch.status.value
    finally:
        state.apply_result(Placement(before, solver="manual"))


def test_run_pipeline_adds_the_measured_result_to_the_history(explorer):
    panel = explorer.pytorch
    n = len(explorer.state.history)
    task = panel.run(microbatches=2, repeats=1, wait=True)
    assert task.error is None, task.error
    row = explorer.state.history[-1]
    assert len(explorer.state.history) == n + 1 and row["outputs_match"] is True
    assert row["measured_time_per_sample"] > 0 and row["predicted_time_per_sample"] == pytest.approx(
        panel.last_run.predicted_time_per_sample)
    assert "measured (run)" in history_html(explorer.state.history)
    assert "outputs match: True" in panel.result.value
    assert multiprocessing.active_children() == []


def test_run_pipeline_cancel(explorer):
    panel = explorer.pytorch
    task = panel.run(microbatches=4, repeats=100_000)
    deadline = time.monotonic() + 120
    while "running" not in panel.status.value and task.running and time.monotonic() < deadline:
        time.sleep(0.1)
    panel.cancel()
    assert task.wait(60)
    assert "cancelled" in panel.status.value
    for child in multiprocessing.active_children():
        child.join(5)
    assert multiprocessing.active_children() == []
    assert not panel.run_button.disabled


@pytest.mark.slow
def test_a_training_graph_runs_1f1b_over_gloo_from_the_panel(tmp_path):
    ex = PlacementExplorer("hf:gpt2", overrides=TINY, import_options={"seq_len": 8, "granularity": "module",
                                                                      "training": True},
                           load_bokehjs=False, workdir=tmp_path)
    graph = ex.state.graph
    fwd = [n.id for n in graph.nodes() if not n.backward and not n.artificial]
    cut = fwd.index("transformer.h.1")
    ex.state.apply_result(Placement({n.id: "gpu:0" if (n.id[:-6] if n.backward else n.id) in fwd[:cut] else "gpu:1"
                                     for n in graph.nodes()}, solver="manual"))
    panel = ex.pytorch
    assert panel.transport.value == "shm"
    assert panel.run(wait=True) is None    # refused up front: no process started
    assert "cannot run" in panel.status.value and "--transport gloo" in panel.status.value
    panel.transport.value = "gloo"
    task = panel.run(microbatches=2, repeats=1, wait=True)
    assert task.error is None, task.error
    assert panel.last_run.training and panel.last_run.grads_match
    assert "gradients match the unsplit model&#x27;s: True" in panel.result.value or \
        "gradients match the unsplit model's: True" in panel.result.value
    assert multiprocessing.active_children() == []
