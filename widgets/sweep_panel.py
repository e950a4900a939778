"""The *Design sweep* tab: solvers × accelerator counts × device mixes, run on Dask through
:func:`viz_place.runtime.design_sweep.sweep` (the engine the CLI uses), with a progress
bar, Cancel, a plot of value vs accelerators per solver and a link to the Dask dashboard.

:class:`EngineHandle` is the explorer's one Dask client, started on first use and shared
by this tab and the accelerator sweep of *Trade-offs*. By default its workers are threads
of the kernel (it starts in about a second, and solvers registered in the notebook are
there); tick *worker processes* for real parallelism, or give a scheduler address to
use an existing cluster.

>>> from viz_place.samples import make_graph
>>> from viz_place.widgets.state import ExplorerState
>>> panel = SweepPanel(ExplorerState(make_graph("chain", 6)), EngineHandle(workers=0))
>>> panel.counts.value, panel.run_button.description
('1,2,3,4', 'Run sweep')
"""
from __future__ import annotations

import atexit
import json
import threading

import ipywidgets as W

from viz_place.errors import VizPlaceError
from viz_place.model import Cluster
from viz_place.render.sweep_plot import design_sweep_view, set_design_sweep
from viz_place.solvers import list_solvers

from .bokeh_sync import UI_LOCK
from .common import bokeh_widget, error_html, escape_text, ok_html
from .tasks import BackgroundTask

DEFAULT_SOLVERS = ("dp", "pipedream", "topo-fill")


class EngineHandle:
    """A lazily started :class:`~viz_place.runtime.dask_engine.DaskEngine` (thread-safe).

    ``workers=0`` solves in the kernel without Dask; ``processes`` uses worker processes;
    ``scheduler`` joins an existing cluster.
    """

    def __init__(self, *, scheduler: str | None = None, workers: int | None = None, processes: bool = False) -> None:
        self.scheduler, self.workers, self.processes = scheduler, workers, processes
        self._engine = None
        self._lock = threading.Lock()

    @property
    def in_kernel(self) -> bool:
        return self.workers == 0 and not self.scheduler

    def get(self):
        """The engine (``None`` for ``workers=0``), started on first call."""
        if self.in_kernel:
            return None
        with self._lock:
            if self._engine is None:
                from viz_place.runtime.dask_engine import DaskEngine
                self._engine = DaskEngine(self.scheduler, self.workers, processes=self.processes)
                atexit.register(self.close)     # close it before the interpreter tears the event loop down
            return self._engine

    @property
    def dashboard_link(self) -> str | None:
        return self._engine.dashboard_link if self._engine is not None else None

    def configure(self, *, scheduler: str | None, workers: int | None, processes: bool) -> None:
        """Use other settings from the next sweep on (closes the running engine if they differ)."""
        if (scheduler, workers, processes) != (self.scheduler, self.workers, self.processes):
            self.close()
            self.scheduler, self.workers, self.processes = scheduler, workers, processes

    def close(self) -> None:
        with self._lock:
            if self._engine is not None:
                self._engine.close()
                self._engine = None


def parse_counts(text: str) -> list[int]:
    """``"1,2,4"`` or ``"1-4"`` -> counts.

    >>> parse_counts("1-3, 8")
    [1, 2, 3, 8]
    """
    out: list[int] = []
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        try:
            if "-" in part:
                lo, hi = (int(x) for x in part.split("-", 1))
                out.extend(range(lo, hi + 1))
            else:
                out.append(int(part))
        except ValueError:
            raise VizPlaceError(f"accelerators {text!r}: expected counts like 1,2,4 or 1-8") from None
    if not out or min(out) < 0:
        raise VizPlaceError(f"accelerators {text!r}: give at least one count >= 0")
    return sorted(set(out))


def parse_mixes(text: str) -> list[Cluster]:
    """Extra device sets: a JSON list of ``{"classes": [...]}`` (empty text: none)."""
    if not text.strip():
        return []
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise VizPlaceError(f"device mixes: not valid JSON ({err.msg}, line {err.lineno})") from None
    if not isinstance(data, list):
        data = [data]
    out = []
    for i, d in enumerate(data):
        try:
            out.append(Cluster.from_dict(d))
        except VizPlaceError as err:
            raise VizPlaceError(f"device mix #{i + 1}: {err}") from None
    return out


def mix_index(row, mixes: list[Cluster], vary: str) -> int:
    """Which device mix a row came from (mixes differ in everything but the varied count)."""
    try:
        c = Cluster.from_dict(row["devices_json"])
        key = c.with_class_count(vary, 0).to_dict()
    except (VizPlaceError, KeyError, TypeError):
        return 0
    for i, m in enumerate(mixes):
        try:
            if m.with_class_count(vary, 0).to_dict() == key:
                return i
        except VizPlaceError:
            continue
    return 0


class SweepPanel:
    """The design sweep over the explorer's graph and pins."""

    def __init__(self, state, engine: EngineHandle) -> None:
        self.state, self.engine = state, engine
        self.view = design_sweep_view()
        self.plot = bokeh_widget(self.view.figure)
        self.solvers = W.SelectMultiple(description="solvers", rows=6, layout=W.Layout(width="260px"))
        self.vary = W.Dropdown(description="vary", layout=W.Layout(width="200px"))
        self.counts = W.Text(value="1,2,3,4", description="accelerators", layout=W.Layout(width="260px"))
        self.seeds = W.Text(value="0", description="seeds", layout=W.Layout(width="200px"))
        self.time_limit = W.FloatText(value=10.0, description="time limit (s)", layout=W.Layout(width="200px"))
        self.mixes = W.Textarea(placeholder='more device mixes, JSON: [{"classes": [...]}, ...] (the current '
                                'devices are always the first)', layout=W.Layout(width="560px", height="60px"))
        self.workers = W.IntText(value=0 if engine.in_kernel else (engine.workers or 2), description="workers",
                                 layout=W.Layout(width="160px"))
        self.processes = W.Checkbox(value=engine.processes, description="worker processes", indent=False)
        self.scheduler = W.Text(value=engine.scheduler or "", placeholder="tcp://HOST:PORT (optional)",
                                description="scheduler", layout=W.Layout(width="320px"))
        self.run_button = W.Button(description="Run sweep", icon="play")
        self.cancel_button = W.Button(description="Cancel", icon="stop", disabled=True)
        self.bar = W.FloatProgress(value=0.0, min=0.0, max=1.0, layout=W.Layout(width="300px"))
        self.status = W.HTML()
        self.dashboard = W.HTML()
        self.table = None
        self.task: BackgroundTask | None = None
        self.run_button.on_click(lambda _b: self.run())
        self.cancel_button.on_click(lambda _b: self.task and self.task.cancel())
        state.on("cluster", lambda s, **_: self.refresh())
        state.on("graph", lambda s, **_: self.refresh())
        self.widget = W.VBox([
            W.HTML("<b>Design sweep</b> <small>(solvers &times; accelerators &times; device mixes, on Dask; "
                   "every value from the evaluator)</small>"),
            W.HBox([self.solvers, W.VBox([self.vary, self.counts, self.seeds, self.time_limit])]),
            self.mixes,
            W.HBox([self.workers, self.processes, self.scheduler]),
            W.HBox([self.run_button, self.cancel_button, self.bar, self.dashboard]),
            self.status, self.plot])
        self.refresh()

    def refresh(self) -> None:
        names = [i.name for i in list_solvers()]
        keep = [n for n in self.solvers.value if n in names]
        self.solvers.options = names
        self.solvers.value = tuple(keep or [n for n in DEFAULT_SOLVERS if n in names] or names[:1])
        c = self.state.cluster
        accel = [k.name for k in c.classes if k.pays_communication] or [k.name for k in c.classes]
        old = self.vary.value
        self.vary.options = accel
        self.vary.value = old if old in accel else accel[0]

    def _settings(self):
        scheduler = self.scheduler.value.strip() or None
        workers = int(self.workers.value)
        if workers < 0:
            raise VizPlaceError("workers must be >= 0 (0: solve in the kernel, without Dask)")
        seeds = [int(x) for x in self.seeds.value.replace(" ", "").split(",") if x] or None
        return scheduler, workers, seeds

    def run(self) -> bool:
        """Start the sweep in the background; the plot grows as cells finish."""
        if self.task is not None and self.task.running:
            self.status.value = error_html("a sweep is already running; cancel it first")
            return False
        s = self.state
        try:
            scheduler, workers, seeds = self._settings()
            counts = parse_counts(self.counts.value)
            mixes = [s.cluster] + parse_mixes(self.mixes.value)
            solvers = list(self.solvers.value)
            if not solvers:
                raise VizPlaceError("choose at least one solver")
        except (VizPlaceError, ValueError) as err:
            self.status.value = error_html(str(err))
            return False
        self.engine.configure(scheduler=scheduler, workers=None if workers == 0 and scheduler else workers,
                              processes=bool(self.processes.value))
        vary, graph, pins = self.vary.value, s.graph, dict(s.pins)
        limit = float(self.time_limit.value) if self.time_limit.value and self.time_limit.value > 0 else None
        rows: list[dict] = []
        self.bar.value = 0.0
        set_design_sweep(self.view, {})

        def label(r) -> str:
            i = mix_index(r, mixes, vary)
            return r["solver"] + (f" / mix {i + 1}" if len(mixes) > 1 else "") + \
                (f" / seed {r['seed']}" if r.get("seed") is not None and seeds and len(seeds) > 1 else "")

        def draw() -> None:
            series: dict[str, list] = {}
            for r in rows:
                if isinstance(r.get("value"), float) and r.get("status") not in ("error", "failed"):
                    series.setdefault(label(r), []).append((r["accelerators"], r["value"]))
            set_design_sweep(self.view, {k: ([a for a, _ in sorted(v)], [b for _, b in sorted(v)])
                                         for k, v in series.items()})

        def progress(ev) -> None:
            with UI_LOCK:    # from the sweep's thread
                self.bar.value = ev.fraction
                link = self.engine.dashboard_link
                if link:
                    self.dashboard.value = (f"<a href='{escape_text(link)}' target='_blank'>Dask dashboard</a>")
                if ev.row is not None:
                    rows.append(dict(ev.row))
                    draw()
                self.status.value = f"{ev.done}/{ev.total} cells solved\u2026"

        def work(cancel):
            from viz_place.runtime.design_sweep import sweep
            self.status.value = "starting Dask\u2026" if not self.engine.in_kernel else "solving\u2026"
            return sweep({graph.name: graph}, solvers, accelerators=counts, vary=vary, device_sets=mixes,
                         seeds=seeds, time_limit=limit, pins=pins or None, engine=self.engine.get(),
                         workers=0 if self.engine.in_kernel else None, progress=progress, cancel=cancel)

        def done(table) -> None:
            self.table = table
            rows[:] = [dict(r) for r in table]
            draw()
            errs = [r for r in table if r["status"] in ("error", "failed")]
            text = f"{len(table)} cells" + (" (cancelled)" if table.cancelled else "") + \
                (f", {len(errs)} with errors" if errs else "")
            self.status.value = ok_html(f"design sweep done: {text}") + \
                (error_html(f"{errs[0]['solver']} with {errs[0]['devices']}: {errs[0]['message']}") if errs else "")

        def failed(err) -> None:
            self.status.value = error_html(f"sweep failed: {err}")

        self.task = BackgroundTask(work, on_done=done, on_error=failed, on_finish=self._idle, name="design-sweep")
        self.run_button.disabled, self.cancel_button.disabled = True, False
        self.task.start()
        return True

    def _idle(self) -> None:
        self.run_button.disabled, self.cancel_button.disabled = False, True

    def wait(self, timeout: float | None = None) -> bool:
        return self.task.wait(timeout) if self.task is not None else True
