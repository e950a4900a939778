"""Trade-offs: the history of runs, throughput vs latency with the Pareto front, and
the accelerator sweep (optimal max-load for 1..k accelerators — diminishing returns).

The sweep uses the best available exact solver (``dp`` when registered), runs on the
explorer's Dask engine (:class:`~viz_place.widgets.sweep_panel.EngineHandle`; one cell per
count) and scores every result with :func:`viz_place.cost.evaluate`.

>>> from viz_place.samples import make_graph
>>> from viz_place.widgets.state import ExplorerState
>>> t = TradeoffsPanel(ExplorerState(make_graph("chain", 5)))
>>> t.record_button.click(); [r["solver"] for r in t.state.history]
['start', 'start']
>>> len(t.view.points.data["throughput"])
2
"""
from __future__ import annotations

import math

import ipywidgets as W
from bokeh.layouts import row

from viz_place.errors import VizPlaceError
from viz_place.render import set_sweep, set_tradeoffs, tradeoff_view
from viz_place.results import format_gap
from viz_place.solvers import list_solvers

from .bokeh_sync import UI_LOCK
from .common import bokeh_widget, error_html, escape_text, fmt, ok_html
from .tasks import BackgroundTask


def sweep_solver(infos) -> str | None:
    """``dp`` if registered, else an exact throughput solver, else any throughput solver."""
    names = [i.name for i in infos]
    if "dp" in names:
        return "dp"
    for want in (lambda i: i.exact and i.objective in ("max_load", "any"),
                 lambda i: i.objective in ("max_load", "any")):
        hit = [i.name for i in infos if want(i)]
        if hit:
            return hit[0]
    return names[0] if names else None


def min_count(cluster, class_name: str, pins) -> int:
    """The smallest count of ``class_name`` that keeps every pin on an existing device.

    >>> from viz_place.model import Cluster
    >>> min_count(Cluster.paper(4, 1, None), "fpga", {"a": "fpga:2", "b": "cpu:0"})
    3
    """
    prefix = f"{class_name}:"
    used = [int(d[len(prefix):]) for d in pins.values() if d.startswith(prefix) and d[len(prefix):].isdigit()]
    return max(used) + 1 if used else 1


HISTORY_COLUMNS = (("run", "#"), ("solver", "solver"), ("status", "status"), ("objective", "objective"),
                   ("value", "value"), ("gap", "gap"), ("bound", "lower bound"), ("bound_source", "bound from"),
                   ("best_known", "best known"), ("max_load", "max-load"),
                   ("measured_time_per_sample", "measured (run)"), ("throughput", "throughput"),
                   ("latency", "latency"), ("peak_memory_fraction", "peak mem / cap"), ("feasible", "feasible"),
                   ("wall_time", "time (s)"), ("note", "note"))


def _cell(row, col: str) -> str:
    v = row.get(col)
    if col == "gap":
        return format_gap(v)
    if col == "note":
        bits = [row.get("note") or "", row.get("kept") or ""]
        return "; ".join(b for b in bits if b)
    return fmt(v)


def history_html(history) -> str:
    """The history as a table: value, gap to the best lower bound over all placements (and where
    that bound comes from), best known, the figures, what "optimal" means for the row."""
    th = "".join(f"<th style='padding:0 6px'>{h}</th>" for _, h in HISTORY_COLUMNS)
    body = "".join("<tr>" + "".join(f"<td style='padding:0 6px'>{escape_text(_cell(r, c))}</td>"
                                    for c, _ in HISTORY_COLUMNS) + "</tr>" for r in history)
    return f"<table class='vp-history'><tr>{th}</tr>{body}</table>" if history else "<i>no runs yet</i>"


def count_row(row) -> dict:
    """A sweep row as the accelerator-sweep plot wants it: count, value, status."""
    if row["status"] in ("error", "failed"):
        return {"count": row["accelerators"], "max_load": math.nan, "status": f"error: {row['message']}"}
    return {"count": row["accelerators"], "max_load": row["value"],
            "status": row["status"] if row["feasible"] else "violations"}


class TradeoffsPanel:
    def __init__(self, state, engine=None) -> None:
        from .sweep_panel import EngineHandle
        self.state = state
        self.engine = engine if engine is not None else EngineHandle(workers=0)
        self.view = tradeoff_view()
        self.sweep_rows: list[dict] = []
        # Fill the figures *before* embedding them: a view shows the figure as it was embedded
        # (data set afterwards only reaches views that already exist) -- defect (1).
        self._fill_figures()
        self.plots = bokeh_widget(row(self.view.scatter_figure, self.view.sweep_figure))
        self.table = W.HTML()
        self.record_button = W.Button(description="Add current to history", icon="plus")
        self.restore = W.Dropdown(description="run #", layout=W.Layout(width="160px"))
        self.restore_button = W.Button(description="Restore run")
        self.message = W.HTML()
        self.sweep_class = W.Dropdown(description="class", layout=W.Layout(width="200px"))
        self.sweep_k = W.BoundedIntText(value=4, min=1, max=32, description="up to k", layout=W.Layout(width="160px"))
        self.sweep_solver = W.Dropdown(description="solver", layout=W.Layout(width="220px"))
        self.sweep_button = W.Button(description="Sweep", icon="line-chart")
        self.sweep_cancel = W.Button(description="Cancel", icon="stop", disabled=True)
        self.sweep_status = W.HTML()
        self.sweep_bar = W.FloatProgress(value=0.0, min=0.0, max=1.0, layout=W.Layout(width="160px"))
        self.task: BackgroundTask | None = None
        self.record_button.on_click(lambda _b: self.state.record())
        self.restore_button.on_click(lambda _b: self._restore())
        self.sweep_button.on_click(lambda _b: self.sweep())
        self.sweep_cancel.on_click(lambda _b: self.task and self.task.cancel())
        state.on("history", lambda s, **_: self._on_history())
        state.on("cluster", lambda s, **_: self._on_cluster())
        state.on("graph", lambda s, **_: self._on_graph())
        self.widget = W.VBox([
            W.HBox([self.record_button, self.restore, self.restore_button, self.message]),
            self.table, self.plots,
            W.HTML("<b>Accelerator sweep</b> <small>(optimal max-load for 1..k devices of one class)</small>"),
            W.HBox([self.sweep_class, self.sweep_k, self.sweep_solver, self.sweep_button, self.sweep_cancel,
                    self.sweep_bar]),
            self.sweep_status])
        self._on_history()
        self._on_cluster()

    def _fill_figures(self) -> None:
        """Points, front, sweep, and the reference lines at the best known (feasible) max-load and latency."""
        h = self.state.history

        def best(key):
            vals = [r.get(key) for r in h if r.get("feasible", True)]
            vals = [v for v in vals if isinstance(v, (int, float)) and math.isfinite(v)]
            return min(vals) if vals else None

        set_tradeoffs(self.view, h, best_max_load=best("max_load"), best_latency=best("latency"))
        set_sweep(self.view, self.sweep_rows)

    def _on_history(self) -> None:
        h = self.state.history
        self.table.value = history_html(h)
        self._fill_figures()
        self.restore.options = [r["run"] for r in h]
        if h:
            self.restore.value = h[-1]["run"]

    def _on_graph(self) -> None:
        """Another graph: the old sweep (rows, chart, text) no longer applies -- defect (2)."""
        if self.task is not None and self.task.running:
            self.task.cancel()
        self.sweep_rows = []
        set_sweep(self.view, [])
        self.sweep_status.value = ""
        self.message.value = ""
        self._on_cluster()

    def _on_cluster(self) -> None:
        c = self.state.cluster
        accel = [k.name for k in c.classes if k.pays_communication] or [k.name for k in c.classes]
        keep = self.sweep_class.value
        self.sweep_class.options = accel
        self.sweep_class.value = keep if keep in accel else accel[0]
        self.sweep_k.value = max(1, min(32, max(c.class_named(self.sweep_class.value).count, 1)))
        infos = list_solvers()
        keep_s = self.sweep_solver.value
        self.sweep_solver.options = [i.name for i in infos]
        names = [i.name for i in infos]
        self.sweep_solver.value = keep_s if keep_s in names else sweep_solver(infos)

    def _restore(self) -> None:
        if self.restore.value is None:
            return
        try:
            self.state.restore_run(self.restore.value)
            self.message.value = ok_html(f"run #{self.restore.value} restored (undo to go back)")
        except VizPlaceError as err:
            self.message.value = error_html(str(err))

    # --- sweep ---------------------------------------------------------------------
    def sweep(self) -> bool:
        """Run the sweep in the background; rows appear as each count finishes."""
        if self.task is not None and self.task.running:
            self.sweep_status.value = error_html("a sweep is already running; cancel it first")
            return False
        s = self.state
        name, cname, k = self.sweep_solver.value, self.sweep_class.value, int(self.sweep_k.value)
        if name is None:
            self.sweep_status.value = error_html("no solver is registered")
            return False
        graph, cluster, pins = s.graph, s.cluster, dict(s.pins)
        first = min_count(cluster, cname, pins)
        if first > k:
            self.sweep_status.value = error_html(f"pins use {cname}:{first - 1}; choose k >= {first}")
            return False
        self.sweep_rows = []
        self.sweep_bar.value = 0.0
        set_sweep(self.view, [], k=k)
        note = f" (counts below {first} skipped: pins use {cname}:{first - 1})" if first > 1 else ""

        def work(cancel):
            # through the Dask engine the design sweep and the CLI use (sorted by count)
            from viz_place.runtime.design_sweep import sweep

            def progress(ev):
                with UI_LOCK:    # from the sweep's thread
                    self.sweep_bar.value = ev.fraction
                    if ev.row is not None and s.graph is graph:   # another graph loaded meanwhile: drop the row
                        self.sweep_rows = sorted(self.sweep_rows + [count_row(ev.row)], key=lambda r: r["count"])
                        set_sweep(self.view, self.sweep_rows, k=k)
                    self.sweep_status.value = f"{ev.done}/{ev.total} counts of {escape_text(cname)} solved\u2026"

            self.sweep_status.value = "solving\u2026"
            table = sweep({graph.name: graph}, [name], accelerators=list(range(first, k + 1)), vary=cname,
                          device_sets=[cluster], pins=pins or None, engine=self.engine.get(),
                          workers=0 if self.engine.in_kernel else None, progress=progress, cancel=cancel)
            with UI_LOCK:
                if s.graph is not graph:
                    return self.sweep_rows
                self.sweep_rows = sorted((count_row(r) for r in table), key=lambda r: r["count"])
                set_sweep(self.view, self.sweep_rows, k=k)
                return self.sweep_rows

        def done(rows):
            if s.graph is not graph:
                self.sweep_rows = []
                set_sweep(self.view, [])
                self.sweep_status.value = ""
                return
            text = ", ".join(f"{r['count']}: {fmt(r['max_load'])}" for r in rows)
            errs = [r["status"] for r in rows if r["status"].startswith("error")]
            self.sweep_status.value = ok_html(f"{name} sweep done — max-load by count: {text}{note}") + \
                (error_html(errs[0]) if errs else "")

        def failed(err):
            self.sweep_status.value = error_html(f"sweep failed: {err}")

        def idle():
            self.sweep_button.disabled, self.sweep_cancel.disabled = False, True

        self.task = BackgroundTask(work, on_done=done, on_error=failed, on_finish=idle, name="sweep")
        self.sweep_button.disabled, self.sweep_cancel.disabled = True, False
        self.task.start()
        return True

    def wait(self, timeout: float | None = None) -> bool:
        return self.task.wait(timeout) if self.task is not None else True
