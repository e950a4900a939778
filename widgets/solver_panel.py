"""The solver panel: every registered solver, its options form, Run / Cancel, progress.

Solvers come from the registry (:func:`viz_place.solvers.list_solvers`), so a
newly registered one appears after ``refresh``. A run happens in a background
thread; a failing solve shows why and keeps the current placement. Progress
reports with ``data={"episode" (or "sweep"), "objective", "best"}`` (the RL
solver and trainer) draw a live training curve; a MILP's reports
(``data={"seconds", "best", "bound", "gap"}``) draw its incumbent and proven bound
over time, and the status line shows incumbent, bound and gap as they improve.

>>> from viz_place.samples import make_graph
>>> from viz_place.widgets.state import ExplorerState
>>> panel = SolverPanel(ExplorerState(make_graph("chain", 5)))
>>> isinstance(panel.names(), list)
True
"""
from __future__ import annotations

import math

import ipywidgets as W

from viz_place.errors import SolverError, VizPlaceError
from viz_place.render import curve_view, reset_curve, stream_curve
from viz_place.results import format_gap, gap as gap_of, objective_key
from viz_place.solver_files import read_option_files
from viz_place.solvers import list_solvers, run_solver

from .bokeh_sync import UI_LOCK
from .common import bokeh_widget, error_html, escape_text, fmt, ok_html
from .options_form import OptionsForm
from .tasks import BackgroundTask

#: Solvers offered first when registered (the exact throughput DP is the usual start).
PREFERRED = ("dp", "ilp", "latency-ilp", "rl")


def default_solver(names: list[str]) -> str | None:
    for n in PREFERRED:
        if n in names:
            return n
    return names[0] if names else None


class SolverPanel:
    """Pick a solver, set its options, run it in the background."""

    def __init__(self, state) -> None:
        self.state = state
        self.solver = W.Dropdown(description="solver", layout=W.Layout(width="420px"))
        self.refresh_button = W.Button(icon="refresh", tooltip="re-read the solver registry",
                                       layout=W.Layout(width="40px"))
        self.description = W.HTML()
        self.form_box = W.VBox()
        self.run_button = W.Button(description="Run", icon="play", button_style="primary")
        self.cancel_button = W.Button(description="Cancel", icon="stop", disabled=True)
        self.progress = W.FloatProgress(value=0.0, min=0.0, max=1.0, layout=W.Layout(width="260px"))
        self.status = W.HTML("<i>no run yet</i>")
        self.curve = curve_view()
        self.curve_widget = bokeh_widget(self.curve.figure, layout=W.Layout(display="none"))
        self.form: OptionsForm | None = None
        self.task: BackgroundTask | None = None
        self.solver.observe(lambda _c: self._build_form(), "value")
        self.refresh_button.on_click(lambda _b: self.refresh())
        self.run_button.on_click(lambda _b: self.run())
        self.cancel_button.on_click(lambda _b: self.cancel())
        # Run / Cancel / progress / status above the options: the dp form has nine of them.
        self.widget = W.VBox([W.HBox([self.solver, self.refresh_button]), self.description,
                              W.HBox([self.run_button, self.cancel_button, self.progress]), self.status,
                              self.curve_widget, self.form_box])
        self.refresh()

    def names(self) -> list[str]:
        return [s.name for s in list_solvers()]

    def refresh(self) -> None:
        """Re-read the registry (keeps the chosen solver when still there)."""
        infos = list_solvers()
        keep = self.solver.value
        self.solver.options = [(f"{i.name} \u2014 {i.objective}{', exact' if i.exact else ''}", i.name)
                               for i in infos]
        names = [i.name for i in infos]
        self.solver.value = keep if keep in names else default_solver(names)
        self.run_button.disabled = not names
        if not names:
            self.status.value = error_html("no solver is registered")
        self._build_form()

    def _build_form(self) -> None:
        name = self.solver.value
        if name is None:
            self.form, self.form_box.children, self.description.value = None, (), ""
            return
        info = next(i for i in list_solvers() if i.name == name)
        self.description.value = f"<small>{escape_text(info.description)}</small>"
        self.form = OptionsForm(info.options_cls)
        # the page (and a browser test) can tell which solver's form is shown
        self.form.widget.add_class("vp-options").add_class(f"vp-options-{name}")
        self.form_box.children = (self.form.widget,)

    # --- running ------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.task is not None and self.task.running

    def run(self) -> bool:
        """Start the chosen solver in the background; ``False`` if refused (bad options, busy)."""
        if self.running:
            self.status.value = error_html("a solve is already running; cancel it first")
            return False
        if self.form is None or not self.form.check():
            return False
        name, options = self.solver.value, self.form.options()
        s = self.state
        graph, cluster, pins = s.graph, s.cluster, dict(s.pins)
        reset_curve(self.curve, best_known=best_known_for(s, name, options))
        self.curve_widget.layout.display = "none"
        self.progress.value, self.progress.bar_style = 0.0, "info"
        self.status.value = f"running <b>{escape_text(name)}</b>\u2026"

        def work(cancel):
            opts = read_option_files(name, graph, cluster, options)   # e.g. expert's path: read here, not in the solver
            return run_solver(name, graph, cluster, pins=pins, options=opts, progress=self._on_progress,
                              cancel=cancel)

        def done(placement):
            if s.graph is not graph or s.cluster != cluster or s.pins != pins:
                raise SolverError("the graph, devices or pins changed while solving; result discarded")
            row = s.apply_result(placement)
            self.progress.value, self.progress.bar_style = 1.0, "success" if row["applied"] else "warning"
            self.status.value = result_html(name, placement, row)

        def failed(err):
            self.progress.bar_style = "danger"
            why = str(err) if isinstance(err, VizPlaceError) else f"{type(err).__name__}: {err}"
            self.status.value = error_html(f"{name} failed: {why} \u2014 the current placement is kept")

        self.task = BackgroundTask(work, on_done=done, on_error=failed, on_finish=self._finished, name=f"solve-{name}")
        self.run_button.disabled, self.cancel_button.disabled = True, False
        self.task.start()
        return True

    def _finished(self) -> None:
        self.run_button.disabled, self.cancel_button.disabled = False, True

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()
            self.status.value = "cancelling\u2026 (the solver stops at its next check)"

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the current run ends (for tests and scripts)."""
        return self.task.wait(timeout) if self.task is not None else True

    def _on_progress(self, p) -> None:
        with UI_LOCK:    # called from the solver's thread; the curve is a Bokeh figure
            self._show_progress(p)

    def _show_progress(self, p) -> None:
        if p.fraction is not None and math.isfinite(p.fraction):
            self.progress.value = min(1.0, max(0.0, float(p.fraction)))
        bits = [escape_text(p.message)] if p.message else []
        if p.incumbent is not None:
            bits.append(f"incumbent {fmt(p.incumbent)}")
        if p.bound is not None:
            bits.append(f"bound {fmt(p.bound)}")
        gap = gap_of(p.incumbent, p.bound)    # value / bound - 1, as every gap the tool states
        if gap is not None:
            bits.append(f"gap {format_gap(gap)}")
        if bits:
            self.status.value = "running\u2026 " + " &middot; ".join(bits)
        point = curve_point(p.data or {})
        if point is not None:
            stream_curve(self.curve, point)
            if self.curve_widget.layout.display == "none":
                self.curve_widget.layout.display = None


def best_known_for(state, name: str, options) -> float | None:
    """The best feasible value so far of the objective this run optimises (its ``objective``
    option, else the solver's), for the reference line on the solver curve."""
    info = next((i for i in list_solvers(only_available=False) if i.name == name), None)
    try:
        objective = objective_key(getattr(options, "objective", None) or (info.objective if info else None))
    except VizPlaceError:
        return None
    vals = [r.get("value") for r in state.history if r.get("objective") == objective and r.get("feasible", True)]
    vals = [v for v in vals if isinstance(v, (int, float)) and math.isfinite(v)]
    return min(vals) if vals else None


def result_html(name: str, placement, row) -> str:
    """The status line after a run: value, gap to the best lower bound, what "optimal" means here,
    and (in orange) a kept placement or a worse result."""
    head = (f"{escape_text(name)}: {escape_text(placement.status)}, max-load {fmt(row['max_load'])}, latency "
            f"{fmt(row['latency'])}{'' if row['feasible'] else ' (violations!)'} in "
            f"{fmt(placement.wall_time or 0, 3)} s &middot; gap {format_gap(row.get('gap'))}")
    if row.get("bound") is not None:
        head += f" to the lower bound {fmt(row['bound'])} ({escape_text(row['bound_source'])})"
    out = ok_html("") + f'<span style="color:#1e7d32">{head}</span>'
    if row.get("note"):
        out += f" &middot; <i>{escape_text(row['note'])}</i>"
    if placement.message:
        out += f" &middot; {escape_text(placement.message)}"
    if row.get("kept"):
        out += f'<br><span style="color:#b9770e">&#9888; {escape_text(row["kept"])}</span>'
    return out


def curve_point(data) -> dict | None:
    """A training-curve point from a progress report's ``data``: x from ``episode``
    (or ``sweep``/``update``/``iteration``), y from ``objective`` and ``best``.

    >>> curve_point({"sweep": 3, "objective": 2.5, "best": 2.0})
    {'episode': 3, 'objective': 2.5, 'best': 2.0}
    >>> curve_point({"sweep": 3, "best": 2.0})
    {'episode': 3, 'objective': nan, 'best': 2.0}
    >>> curve_point({"fraction": 0.5}) is None
    True

    A MILP's report (:func:`viz_place.solvers.milp.backends.progress_data`): seconds, incumbent,
    bound — the bound is drawn as its own line (before any incumbent, the bound alone):

    >>> curve_point({"seconds": 1.5, "best": 10.0, "bound": 9.0, "gap": 0.1})
    {'episode': 1.5, 'objective': nan, 'best': 10.0, 'bound': 9.0}
    >>> curve_point({"seconds": 0.5, "best": float("nan"), "bound": 7.0, "gap": float("nan")})
    {'episode': 0.5, 'objective': nan, 'best': nan, 'bound': 7.0}
    """
    x = next((data[k] for k in ("episode", "sweep", "update", "iteration", "seconds") if k in data), None)
    obj = data.get("objective", math.nan)        # missing = no point on the episode line (not a copy of best)
    best = data.get("best", obj)
    bound = data.get("bound")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool)
               for v in (x, obj, best) + (() if bound is None else (bound,))):
        return None
    has_bound = bound is not None and math.isfinite(bound)
    if not (math.isfinite(x) and (math.isfinite(best) or has_bound)):
        return None
    point = {"episode": x, "objective": obj if math.isfinite(obj) else math.nan,
             "best": best if math.isfinite(best) else math.nan}
    if bound is not None:
        point["bound"] = bound if has_bound else math.nan
    return point
