"""The placement explorer: one widget that composes every panel over one state.

>>> from viz_place.widgets import PlacementExplorer
>>> ex = PlacementExplorer("chain", load_bokehjs=False)
>>> ex.state.graph.num_nodes > 0, "max-load" in ex.metrics.summary.value
(True, True)
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

import ipywidgets as W

from viz_place.errors import InputFormatError
from viz_place.io import load_graph
from viz_place.model import Cluster, OpGraph, Placement
from viz_place.samples import load_sample, sample_names

from .common import in_kernel, load_bokehjs as _load_bokehjs
from .devices_panel import DevicesEditor
from .files_panel import FilesPanel
from .graph_panel import GraphPanel
from .metrics_panel import MetricsPanel
from .overrides_panel import OverridesPanel
from .pipeline_panel import PipelinePanel
from .solver_panel import SolverPanel
from .state import ExplorerState
from .sweep_panel import EngineHandle, SweepPanel
from .tradeoffs_panel import TradeoffsPanel

TABS = ("Node & pins", "Devices", "Solver", "Metrics", "Pipeline", "Trade-offs", "Load & export", "Design sweep")
_TAB_KEYS = {1: "devices", 2: "solver", 4: "pipeline", 5: "tradeoffs", 6: "files", 7: "sweeps"}

#: The headline (title + figures) stays in view while working in the tabs: it is sticky, and
#: the output area / widget boxes around the explorer must not clip it (their overflow: auto
#: would make them the scroll container sticky positioning refers to).
STICKY_CSS = """<style>
.vp-headline { position: sticky; top: 0; z-index: 30; background: var(--jp-layout-color0, #fff);
  border-bottom: 1px solid var(--jp-border-color2, #ddd); padding-bottom: 2px; }
.vp-explorer, .jp-OutputArea-output:has(.vp-explorer), .jp-OutputArea-child:has(.vp-explorer),
.jp-Cell-outputWrapper:has(.vp-explorer), .jp-Cell-outputArea:has(.vp-explorer) { overflow: visible !important; }
</style>"""


def resolve_graph(graph_or_path: Any, example_inputs: Any = None, *, overrides: Mapping[str, Any] | None = None,
                  import_options: Mapping[str, Any] | None = None) -> OpGraph:
    """An :class:`OpGraph`, a file path (paper JSON, node-link JSON, ONNX), a sample name,
    a model SPEC (``"hf:gpt2"``, with config ``overrides``) or a ``torch.nn.Module`` with
    ``example_inputs``; ``import_options`` go to :func:`viz_place.io.torch_import.import_torch`
    (``batch``, ``seq_len``, ``granularity``, ``depth``, ``profile``...)."""
    is_module = hasattr(graph_or_path, "named_modules") and callable(graph_or_path)
    is_spec = isinstance(graph_or_path, str) and graph_or_path.startswith("hf:")
    if is_module or is_spec:
        from viz_place.io.torch_import import import_torch
        if is_module and example_inputs is None:
            raise InputFormatError("a torch.nn.Module needs example_inputs: PlacementExplorer(module, (x,))")
        return import_torch(graph_or_path, example_inputs, overrides=overrides, **dict(import_options or {}))
    if example_inputs is not None or overrides or import_options:
        raise InputFormatError("example_inputs, overrides and import_options apply to a torch.nn.Module or an "
                               f"hf: model SPEC, not to {graph_or_path!r}")
    if isinstance(graph_or_path, OpGraph):
        return graph_or_path
    if graph_or_path is None:
        names = sample_names()
        if not names:
            raise InputFormatError("no graph given and no sample graphs found")
        return load_sample("residual" if "residual" in names else names[0])
    text = os.fspath(graph_or_path)
    if os.path.exists(text) or Path(text).suffix:
        return load_graph(text)
    return load_sample(text)


class PlacementExplorer(W.VBox):
    """Explore, fix and export a device placement of a DNN graph.

    Parameters
    ----------
    graph_or_path : an ``OpGraph``, a path to a graph file, a sample name
        (default: the ``residual`` sample), a model SPEC such as ``"hf:gpt2"``,
        or a ``torch.nn.Module`` (then pass ``example_inputs``).
    example_inputs : a tuple of tensors the module runs on (for a module only).
    overrides : config fields of an ``hf:`` SPEC (``{"n_layer": 4}``).
    import_options : ``batch``, ``seq_len``, ``image_size``, ``seed``, ``granularity``,
        ``depth``, ``training``, ``profile``, ``calibration`` (see
        :func:`viz_place.io.torch_import.import_torch`).
    cluster, placement, pins : optional starting devices, placement and pins
        (default: the file's devices, the quick starting placement of
        :func:`viz_place.start.starting_placement` — the ``topo-fill`` baseline —, no pins).
    load_bokehjs : load BokehJS into the page (inline, no CDN); default: when in a kernel.
    workdir : where exports and sessions are written by default.
    engine : the Dask engine of the sweeps (an ``EngineHandle``; default: worker threads in
        this kernel, started on the first sweep).

    Attributes: ``state`` (the model), ``graph_panel``, ``devices``, ``solver``,
    ``metrics``, ``overrides``, ``tradeoffs``, ``files`` (the panels); ``history`` (runs with
    value, gap and bound) and ``figures()`` (the live Bokeh figures by name).
    """

    def __init__(self, graph_or_path: Any = None, example_inputs: Any = None, *,
                 overrides: Mapping[str, Any] | None = None, import_options: Mapping[str, Any] | None = None,
                 cluster: Cluster | None = None,
                 placement: Placement | None = None, pins: Mapping[str, str] | None = None,
                 load_bokehjs: bool | None = None, workdir: str | os.PathLike = ".",
                 engine: EngineHandle | None = None) -> None:
        if load_bokehjs is None:
            load_bokehjs = in_kernel()
        if load_bokehjs:
            _load_bokehjs()
        graph = resolve_graph(graph_or_path, example_inputs, overrides=overrides, import_options=import_options)
        self.state = ExplorerState(graph, cluster, placement, pins)
        self.graph_panel = GraphPanel(self.state)
        self.metrics = MetricsPanel(self.state)
        self.overrides = OverridesPanel(self.state)
        # The other panels are built when their tab is first opened (or the attribute first
        # used): fewer widgets to create up front makes the explorer open faster.
        # One Dask client (started on the first sweep) for the accelerator and design sweeps.
        self.engine = engine if engine is not None else EngineHandle()
        self._factories = {"devices": lambda: DevicesEditor(self.state), "solver": lambda: SolverPanel(self.state),
                           "pipeline": lambda: PipelinePanel(self.state),
                           "tradeoffs": lambda: TradeoffsPanel(self.state, engine=self.engine),
                           "files": lambda: FilesPanel(self.state, workdir=workdir),
                           "sweeps": lambda: SweepPanel(self.state, self.engine)}
        self._panels: dict[str, Any] = {}
        self._slots = {k: W.VBox() for k in self._factories}
        self.tabs = W.Tab(children=[W.VBox([self.graph_panel.controls, self.overrides.widget]),
                                    self._slots["devices"], self._slots["solver"],
                                    self.metrics.widget, self._slots["pipeline"], self._slots["tradeoffs"],
                                    self._slots["files"], self._slots["sweeps"]])
        self.tabs.titles = TABS
        self.tabs.observe(self._on_tab, "selected_index")
        self.title = W.HTML()
        self.state.on("graph", lambda s, **_: self._title())
        self._title()
        self.headline = W.VBox([W.HTML(STICKY_CSS), self.title, self.metrics.summary])
        self.headline.add_class("vp-headline")
        super().__init__([self.headline, self.graph_panel.bokeh, self.tabs],
                         layout=W.Layout(width="100%", overflow="visible"))
        self.add_class("vp-explorer")

    # --- panels (built on first use) ------------------------------------------------
    def _panel(self, key: str):
        panel = self._panels.get(key)
        if panel is None:
            panel = self._panels[key] = self._factories[key]()
            self._slots[key].children = (panel.widget,)
        return panel

    def _on_tab(self, change) -> None:
        key = _TAB_KEYS.get(change["new"])
        if key is not None:
            self._panel(key)

    @property
    def devices(self) -> DevicesEditor:
        return self._panel("devices")

    @property
    def solver(self) -> SolverPanel:
        return self._panel("solver")

    @property
    def pipeline(self) -> PipelinePanel:
        return self._panel("pipeline")

    @property
    def tradeoffs(self) -> TradeoffsPanel:
        return self._panel("tradeoffs")

    @property
    def files(self) -> FilesPanel:
        return self._panel("files")

    @property
    def sweeps(self) -> SweepPanel:
        return self._panel("sweeps")

    def bokeh_widgets(self) -> list:
        """The embedded Bokeh figures built so far (graph, metrics, trade-offs, training curve)."""
        out = [self.graph_panel.widget, self.metrics.bars_widget]
        if "tradeoffs" in self._panels:
            out.append(self._panels["tradeoffs"].plots)
        if "solver" in self._panels:
            out.append(self._panels["solver"].curve_widget)
        if "pipeline" in self._panels:
            out += [self._panels["pipeline"].plots, self._panels["pipeline"].devices_plot]
        if "sweeps" in self._panels:
            out.append(self._panels["sweeps"].plot)
        return out

    def figures(self) -> dict[str, Any]:
        """The live Bokeh figures by name (building the tabs they live in): ``graph``,
        ``pipeline``, ``latency_schedule``, ``devices_graph``, ``load``, ``memory``, ``pareto``
        (runs: throughput vs latency), ``sweep``, ``curve`` (solver curve)."""
        out = {"graph": self.graph_panel.view.figure}
        out.update(self.pipeline.figures())
        out.update(load=self.metrics.view.load_figure, memory=self.metrics.view.memory_figure,
                   pareto=self.tradeoffs.view.scatter_figure, sweep=self.tradeoffs.view.sweep_figure,
                   curve=self.solver.curve.figure)
        return out

    @property
    def history(self) -> list[dict[str, Any]]:
        """The runs so far (the ``start`` row first), each a dict with at least ``run``, ``solver``,
        ``status``, ``objective``, ``value``, ``gap``, ``bound``, ``bound_source``, ``best_known``,
        ``note`` and the evaluator's figures (``max_load``, ``throughput``, ``latency``...)."""
        return self.state.history

    def refresh(self) -> None:
        """Re-send every figure in full (after a page reload with a running kernel, call this
        or re-display the explorer: live updates reach only views that already exist)."""
        for w in self.bokeh_widgets():
            w.refresh()

    def _repr_mimebundle_(self, **kwargs):
        # A new view is about to be made: give it the current figures, not the first ones.
        self.refresh()
        return super()._repr_mimebundle_(**kwargs)

    def _title(self) -> None:
        g = self.state.graph
        kind = "training" if g.is_training else "inference"
        self.title.value = (f"<h3 style='margin:4px 0'>viz_place explorer &mdash; {g.name} "
                            f"<small>({g.num_nodes} nodes, {g.num_edges} edges, {kind})</small></h3>")

    # --- conveniences for scripts and tests ---------------------------------------
    @property
    def evaluation(self):
        return self.state.evaluation

    def run(self, solver: str, options: Mapping[str, Any] | None = None, *, wait: bool = True) -> bool:
        """Choose ``solver``, set ``options`` in its form, click Run (and wait)."""
        self.solver.refresh()
        self.solver.solver.value = solver
        for k, v in (options or {}).items():
            w = self.solver.form.fields[k]
            w.value = v if not isinstance(w, W.Text) else ("" if v is None else str(v))
        started = self.solver.run()
        if started and wait:
            self.solver.wait()
        return started
