"""For PyTorch: export the placement as a ``torch.distributed.pipelining`` split, a
``device_map`` or a runnable script, and **Run pipeline** for real (in the *Load & export* tab).

The run works in a background thread (``Cancel`` stops every stage process): it calibrates the
link once per transport (a ping-pong, before and apart from any run), runs the placement with
:func:`viz_place.runtime.run_pipeline` and adds a history row carrying the measured time per
sample beside the evaluator's prediction. A refused placement (not contiguous, a cycle, a
boundary inside a module) shows the exporter's message and changes nothing.

>>> from viz_place.model import OpGraph, Placement
>>> from viz_place.widgets.state import ExplorerState
>>> g = OpGraph.from_records([{"id": n, "layer": f"/{i}", "latency": {"cpu": 1.0}} for i, n in enumerate("abc")],
...                          [("a", "b"), ("b", "c")])
>>> from viz_place.model import Cluster
>>> s = ExplorerState(g, Cluster.paper(0, 2, None), Placement({"a": "cpu:0", "b": "cpu:1", "c": "cpu:1"}))
>>> print(pytorch_export_text(s, "pipelining")[0][:60])  # doctest: +ELLIPSIS
{...
>>> sorted(PYTORCH_FORMATS)
['device-map', 'pipelining', 'script']
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import ipywidgets as W

from viz_place.errors import VizPlaceError
from viz_place.io import atomic_write_text

from .common import error_html, escape_text, fmt, ok_html
from .tasks import BackgroundTask

PYTORCH_FORMATS = {"pipelining": ("split spec (torch.distributed.pipelining)", "_pipelining.json"),
                   "device-map": ("device_map (accelerate / transformers)", "_device_map.json"),
                   "script": ("script that rebuilds and runs the pipeline", "_pipeline.py")}


def pytorch_export_text(state, kind: str) -> tuple[str, str]:
    """(file content, MIME type) of the current placement exported as ``kind``."""
    from viz_place.io.torch_export_placement import (DEVICE_MAP_FORMAT, accelerate_device_map,
                                                      default_torch_devices, device_map, pipeline_script,
                                                      pipeline_split)
    g, p = state.graph, state.placement
    if kind == "pipelining":
        return json.dumps(pipeline_split(g, p).to_dict(g.source), indent=1), "application/json"
    if kind == "device-map":
        modules = device_map(g, p)
        used = sorted(set(modules.values()))
        kinds = {d: state.cluster.device_class_of(d).kind for d in used if state.cluster.has_device(d)}
        torch_devices = default_torch_devices(used, kinds)
        return json.dumps({"format": DEVICE_MAP_FORMAT, "graph": g.name, "modules": modules,
                           "device_map": accelerate_device_map(modules, torch_devices),
                           "devices": torch_devices}, indent=1), "application/json"
    if kind == "script":
        return pipeline_script(g, pipeline_split(g, p), g.source), "text/x-python"
    raise VizPlaceError(f"unknown PyTorch export {kind!r}; choose one of {sorted(PYTORCH_FORMATS)}")


def run_table_html(run) -> str:
    """Per stage: measured compute / transfer / wait next to the evaluator's compute / communication (ms)."""
    heads = ("stage", "device", "nodes", "compute", "transfer", "wait", "pred. compute", "pred. comm.")
    th = "".join(f"<th style='padding:0 6px'>{h}</th>" for h in heads)
    body = "".join("<tr>" + "".join(f"<td style='padding:0 6px'>{escape_text(fmt(v))}</td>" for v in (
        s.stage, s.device, s.nodes, s.measured_compute, s.measured_transfer, s.measured_wait, s.predicted_compute,
        s.predicted_communication)) + "</tr>" for s in run.per_stage)
    head = (f"<b>measured {fmt(run.measured_time_per_sample)} ms</b> per sample vs predicted "
            f"{fmt(run.predicted_time_per_sample)} ms (x{fmt(run.ratio)}), one process "
            f"{fmt(run.single_process_time_per_sample)} ms; outputs match: {run.outputs_match} "
            f"(max abs diff {fmt(run.max_abs_diff)}); costs: {escape_text(run.costs)}")
    if getattr(run, "training", False):
        head += (f"<br>training step (1F1B): gradients match the unsplit model's: {run.grads_match} "
                 f"(max abs diff {fmt(run.grads_max_abs_diff)})")
    return f"{head}<table class='vp-pipeline-run'><tr>{th}</tr>{body}</table>"


class PyTorchPanel:
    """Export for PyTorch and Run pipeline (see the module docstring).

    ``model`` — ``(module, example_inputs)`` when the explorer was opened on a module (its
    graph records no SPEC to rebuild it from); otherwise the graph's recorded source is used.
    """

    def __init__(self, state, *, workdir: str | os.PathLike = ".", model: tuple | None = None) -> None:
        self.state = state
        self.workdir = Path(workdir)
        self.model = model
        self.links: dict[str, Any] = {}
        self.task: BackgroundTask | None = None
        self.last_run = None
        self.kind = W.Dropdown(options=[(v[0], k) for k, v in PYTORCH_FORMATS.items()], value="pipelining",
                               description="for PyTorch", layout=W.Layout(width="420px"))
        self.path = W.Text(description="to", layout=W.Layout(width="420px"))
        self.export_button = W.Button(description="Export for PyTorch", icon="download")
        self.export_message = W.HTML()
        self.microbatches = W.BoundedIntText(value=8, min=1, max=1024, description="microbatches",
                                             layout=W.Layout(width="180px"))
        self.transport = W.Dropdown(options=[("shared memory", "shm"), ("gloo (torch ScheduleGPipe / 1F1B)", "gloo")],
                                    value="shm", description="transport", layout=W.Layout(width="260px"))
        self.run_button = W.Button(description="Run pipeline", icon="play", button_style="primary")
        self.cancel_button = W.Button(description="Cancel", icon="stop", disabled=True)
        self.status = W.HTML()
        self.result = W.HTML()
        self.kind.observe(lambda _c: self._default_path(), "value")
        state.on("graph", lambda s, **_: self._default_path())
        self.export_button.on_click(lambda _b: self.export())
        self.run_button.on_click(lambda _b: self.run())
        self.cancel_button.on_click(lambda _b: self.cancel())
        self._default_path()
        self.widget = W.VBox([
            W.HTML("<b>For PyTorch</b> <small>(a contiguous placement of a PyTorch model)</small>"),
            W.HBox([self.kind, self.path, self.export_button]), self.export_message,
            W.HBox([self.microbatches, self.transport, self.run_button, self.cancel_button]),
            self.status, self.result])

    def _default_path(self) -> None:
        self.path.value = str(self.workdir / "exports" / f"{self.state.graph.name}{PYTORCH_FORMATS[self.kind.value][1]}")

    def export(self, kind: str | None = None, path: str | None = None) -> Path | None:
        kind = kind or self.kind.value
        target = Path(path or self.path.value).expanduser()
        try:
            text, mime = pytorch_export_text(self.state, kind)
            atomic_write_text(target, text)
        except (VizPlaceError, OSError) as err:
            self.export_message.value = error_html(f"export for PyTorch refused: {err}")
            return None
        from .files_panel import download_link
        self.export_message.value = ok_html(f"wrote {target.resolve()} ") + download_link(target.name, text, mime)
        return target

    def _recipe(self):
        from viz_place.runtime import ModelRecipe, graph_source
        source = graph_source(self.state.graph)
        if source is not None:
            return ModelRecipe.from_source(source)
        if self.model is not None and (self.state.graph.source or {}).get("module") == type(self.model[0]).__name__:
            return ModelRecipe.from_module(*self.model)
        raise VizPlaceError(f"graph {self.state.graph.name!r} records no model to rebuild: open the explorer on an "
                            "hf: SPEC, a torch.nn.Module, or a graph file written by viz-place import")

    def run(self, *, microbatches: int | None = None, repeats: int = 3, wait: bool = False) -> BackgroundTask | None:
        """Start a pipeline run of the current placement in the background (``wait``: join it)."""
        if self.task is not None and self.task.running:
            self.status.value = error_html("a pipeline run is already going; Cancel it first")
            return None
        from viz_place.io.torch_export_placement import pipeline_split
        graph, placement, transport = self.state.graph, self.state.placement, self.transport.value
        mbs = int(microbatches or self.microbatches.value)
        try:
            pipeline_split(graph, placement)
            if graph.is_training:
                from viz_place.runtime.run import check_training_run
                check_training_run(graph, transport)
            recipe = self._recipe()
        except VizPlaceError as err:
            self.status.value = error_html(f"cannot run this placement: {err}")
            return None

        def work(cancel):
            from viz_place.runtime import calibrate_link, run_pipeline
            if transport not in self.links:
                self._say(f"calibrating the {transport} link (ping-pong, before the run)")
                self.links[transport] = calibrate_link(transport)
            return run_pipeline(graph, placement, recipe=recipe, link=self.links[transport], microbatches=mbs,
                                repeats=repeats, transport=transport, cancel=cancel, progress=self._say)

        self.task = BackgroundTask(work, on_done=lambda run: self._done(run, placement),
                                   on_error=self._failed, on_finish=self._idle, name="viz-place-pipeline")
        self.run_button.disabled, self.cancel_button.disabled = True, False
        self.result.value = ""
        self.task.start()
        if wait:
            self.task.wait()
        return self.task

    def _idle(self) -> None:
        self.run_button.disabled, self.cancel_button.disabled = False, True

    def _say(self, message: str) -> None:
        self.status.value = f"<i>{escape_text(message)} ...</i>"

    def _done(self, run, placement) -> None:
        self.last_run = run
        self.status.value = ok_html(f"pipeline of {run.stages} stages ran ({run.transport}, {run.microbatches} "
                                    "microbatches); added to the history")
        self.result.value = run_table_html(run)
        if self.state.graph is not None and dict(self.state.placement.assignment) == dict(placement.assignment):
            self.state.record(label=f"pipeline run ({placement.solver})",
                              measured_time_per_sample=run.measured_time_per_sample,
                              predicted_time_per_sample=run.predicted_time_per_sample,
                              outputs_match=run.outputs_match, pipeline=run.to_dict())

    def _failed(self, err: BaseException) -> None:
        from viz_place.runtime.procs import RunCancelled
        if isinstance(err, RunCancelled):
            self.status.value = error_html("pipeline run cancelled; every stage process was stopped")
        else:
            self.status.value = error_html(f"pipeline run failed: {err}")

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()
