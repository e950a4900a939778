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
from .pytorch_panel import PyTorchPanel
from .graph_panel import GraphPanel
from .metrics_panel import MetricsPanel
from .solver_panel import SolverPanel
from .state import ExplorerState
from .tradeoffs_panel import TradeoffsPanel

TABS = ("Node & pins", "Devices", "Solver", "Metrics", "Trade-offs", "Load & export")
_TAB_KEYS = {1: "devices", 2: "solver", 4: "tradeoffs", 5: "files"}


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
        (default: the file's devices, every node on a host device, no pins).
    load_bokehjs : load BokehJS into the page (inline, no CDN); default: when in a kernel.
    workdir : where exports and sessions are written by default.

    Attributes: ``state`` (the model), ``graph_panel``, ``devices``, ``solver``,
    ``metrics``, ``tradeoffs``, ``files`` (the panels).
    """

    def __init__(self, graph_or_path: Any = None, example_inputs: Any = None, *,
                 overrides: Mapping[str, Any] | None = None, import_options: Mapping[str, Any] | None = None,
                 cluster: Cluster | None = None,
                 placement: Placement | None = None, pins: Mapping[str, str] | None = None,
                 load_bokehjs: bool | None = None, workdir: str | os.PathLike = ".") -> None:
        if load_bokehjs is None:
            load_bokehjs = in_kernel()
        if load_bokehjs:
            _load_bokehjs()
        graph = resolve_graph(graph_or_path, example_inputs, overrides=overrides, import_options=import_options)
        self.state = ExplorerState(graph, cluster, placement, pins)
        self.graph_panel = GraphPanel(self.state)
        self.metrics = MetricsPanel(self.state)
        # The other panels are built when their tab is first opened (or the attribute first
        # used): fewer widgets to create up front makes the explorer open faster.
        model = (graph_or_path, tuple(example_inputs)) if example_inputs is not None else None
        self._factories = {"devices": lambda: DevicesEditor(self.state), "solver": lambda: SolverPanel(self.state),
                           "tradeoffs": lambda: TradeoffsPanel(self.state),
                           "files": lambda: FilesPanel(self.state, workdir=workdir),
                           "pytorch": lambda: PyTorchPanel(self.state, workdir=workdir, model=model)}
        self._panels: dict[str, Any] = {}
        self._slots = {k: W.VBox() for k in self._factories}
        self.tabs = W.Tab(children=[self.graph_panel.controls, self._slots["devices"], self._slots["solver"],
                                    self.metrics.widget, self._slots["tradeoffs"],
                                    W.VBox([self._slots["files"], self._slots["pytorch"]])])
        self.tabs.titles = TABS
        self.tabs.observe(self._on_tab, "selected_index")
        self.title = W.HTML()
        self.state.on("graph", lambda s, **_: self._title())
        self._title()
        super().__init__([self.title, self.metrics.summary, self.graph_panel.bokeh, self.tabs],
                         layout=W.Layout(width="100%"))
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
        if key == "files":
            self._panel("pytorch")

    @property
    def devices(self) -> DevicesEditor:
        return self._panel("devices")

    @property
    def solver(self) -> SolverPanel:
        return self._panel("solver")

    @property
    def tradeoffs(self) -> TradeoffsPanel:
        return self._panel("tradeoffs")

    @property
    def files(self) -> FilesPanel:
        return self._panel("files")

    @property
    def pytorch(self) -> PyTorchPanel:
        """Export for PyTorch and Run pipeline (in the Load & export tab)."""
        return self._panel("pytorch")

    def bokeh_widgets(self) -> list:
        """The embedded Bokeh figures built so far (graph, metrics, trade-offs, training curve)."""
        out = [self.graph_panel.widget, self.metrics.bars_widget]
        if "tradeoffs" in self._panels:
            out.append(self._panels["tradeoffs"].plots)
        if "solver" in self._panels:
            out.append(self._panels["solver"].curve_widget)
        return out

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
