"""The explorer's small charts: runs (throughput vs latency with the Pareto front), the
accelerator sweep, and the live solver curve — each with explicit axis ranges computed
here and a reference line at the best known value.

Explicit ``Range1d`` ranges (not Bokeh's data ranges) because: an empty figure then
draws without BokehJS's "could not set initial ranges" warning; one run gets a range
around its value instead of ±1; a sweep's x-axis shows whole accelerator counts.

>>> v = tradeoff_view()
>>> set_tradeoffs(v, [{"run": 1, "solver": "dp", "status": "optimal", "throughput": 0.1, "latency": 40.0}])
>>> 0 < v.scatter_figure.x_range.start < 0.1 < v.scatter_figure.x_range.end < 0.2
True
>>> set_sweep(v, [{"count": 1, "max_load": 9.0}, {"count": 2, "max_load": 5.0}])
>>> v.sweep_figure.x_range.start, v.sweep_figure.x_range.end, v.sweep_figure.xaxis[0].ticker.interval
(0.5, 2.5, 1)
>>> set_sweep(v, []); v.sweep.data["count"]
[]
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from bokeh.models import ColumnDataSource, HoverTool, Range1d, SingleIntervalTicker, Span
from bokeh.plotting import figure

from .data import pareto_front

REFERENCE_COLOUR = "#2ca02c"


def padded_range(values: Sequence[float], *, pad: float = 0.08, default: tuple[float, float] = (0.0, 1.0),
                 floor: float | None = None) -> tuple[float, float]:
    """(start, end) around the finite ``values`` with ``pad`` of the span on each side;
    a single value gets ±``pad`` of itself (±1 only if it is 0); no values -> ``default``.

    >>> padded_range([10.0]), padded_range([]), padded_range([1.0, 3.0])
    ((9.2, 10.8), (0.0, 1.0), (0.84, 3.16))
    >>> padded_range([0.5, 1.0], floor=0.0)
    (0.46, 1.04)
    """
    vals = [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    if not vals:
        return default
    lo, hi = min(vals), max(vals)
    span = hi - lo
    if span <= 1e-12 * max(abs(lo), abs(hi), 1e-300):
        d = abs(lo) * pad if lo != 0 else 1.0
        lo, hi = lo - d, hi + d
    else:
        lo, hi = lo - pad * span, hi + pad * span
    if floor is not None and min(vals) >= floor:
        lo = max(lo, floor)
    return round(lo, 12), round(hi, 12)


def _set_range(rng: Range1d, lo_hi: tuple[float, float]) -> None:
    lo, hi = lo_hi
    if (rng.start, rng.end) != (lo, hi):
        rng.update(start=lo, end=hi, reset_start=lo, reset_end=hi)


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


# --- trade-offs ---------------------------------------------------------------------

@dataclass(eq=False)
class TradeoffView:
    scatter_figure: Any
    points: ColumnDataSource
    front: ColumnDataSource
    sweep_figure: Any
    sweep: ColumnDataSource
    best_throughput: Span
    best_latency: Span


def tradeoff_view() -> TradeoffView:
    """Throughput-vs-latency scatter of runs with the Pareto front and reference lines at the
    best known max-load (as throughput) and latency, and the accelerator sweep."""
    pts = ColumnDataSource({"throughput": [], "latency": [], "label": [], "colour": []})
    front = ColumnDataSource({"throughput": [], "latency": []})
    sc = figure(height=300, width=440, title="runs: throughput vs latency (red = Pareto front, green = best known)",
                x_axis_label="throughput (samples / time unit)", y_axis_label="latency", tools="pan,wheel_zoom,reset",
                output_backend="canvas", x_range=Range1d(0, 1), y_range=Range1d(0, 1))
    sc.line("throughput", "latency", source=front, line_color="#d62728", line_width=2)
    r = sc.scatter("throughput", "latency", source=pts, size=9, fill_color="colour", line_color="black")
    sc.add_tools(HoverTool(renderers=[r], tooltips=[("run", "@label"), ("throughput", "@throughput{0.0000}"),
                                                    ("latency", "@latency{0.000}")]))
    best_thr = Span(location=None, dimension="height", line_color=REFERENCE_COLOUR, line_dash="dashed", line_width=1.5)
    best_lat = Span(location=None, dimension="width", line_color=REFERENCE_COLOUR, line_dash="dashed", line_width=1.5)
    sc.add_layout(best_thr)
    sc.add_layout(best_lat)
    sw_src = ColumnDataSource({"count": [], "max_load": [], "label": []})
    sw = figure(height=300, width=420, title="accelerator sweep: optimal max-load vs count",
                x_axis_label="number of accelerators", y_axis_label="max-load (time per sample)",
                tools="pan,wheel_zoom,reset", output_backend="canvas", x_range=Range1d(0.5, 1.5),
                y_range=Range1d(0, 1))
    sw.xaxis.ticker = SingleIntervalTicker(interval=1)
    sw.xgrid.ticker = SingleIntervalTicker(interval=1)
    sw.line("count", "max_load", source=sw_src, line_width=2)
    r2 = sw.scatter("count", "max_load", source=sw_src, size=8)
    sw.add_tools(HoverTool(renderers=[r2], tooltips=[("accelerators", "@count"), ("max-load", "@max_load{0.000}"),
                                                     ("status", "@label")]))
    return TradeoffView(sc, pts, front, sw, sw_src, best_thr, best_lat)


def tradeoff_columns(history: Sequence[Mapping[str, Any]]) -> tuple[dict[str, list], dict[str, list]]:
    """(points, Pareto front) columns from history rows with ``throughput``/``latency``."""
    keep = [h for h in history if _finite(h.get("throughput")) and _finite(h.get("latency"))]
    palette = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22")
    solvers = list(dict.fromkeys(h["solver"] for h in keep))
    pts = {"throughput": [h["throughput"] for h in keep], "latency": [h["latency"] for h in keep],
           "label": [f"#{h.get('run', '?')} {h['solver']} ({h.get('status', '')})" for h in keep],
           "colour": [palette[solvers.index(h["solver"]) % len(palette)] for h in keep]}
    idx = pareto_front(list(zip(pts["throughput"], pts["latency"])))
    front = {"throughput": [pts["throughput"][i] for i in idx], "latency": [pts["latency"][i] for i in idx]}
    return pts, front


def set_tradeoffs(view: TradeoffView, history: Sequence[Mapping[str, Any]], *,
                  best_max_load: float | None = None, best_latency: float | None = None) -> None:
    """Points, front, reference lines (best known max-load drawn as throughput 1 / max-load,
    best known latency) and the axis ranges that hold them all."""
    pts, front = tradeoff_columns(history)
    view.points.data = pts
    view.front.data = front
    thr = 1.0 / best_max_load if _finite(best_max_load) and best_max_load > 0 else None
    lat = best_latency if _finite(best_latency) else None
    view.best_throughput.location = thr
    view.best_latency.location = lat
    _set_range(view.scatter_figure.x_range, padded_range(pts["throughput"] + ([thr] if thr else []), floor=0.0))
    _set_range(view.scatter_figure.y_range, padded_range(pts["latency"] + ([lat] if lat else []), floor=0.0))


def set_sweep(view: TradeoffView, rows: Sequence[Mapping[str, Any]], *, k: int | None = None) -> None:
    """Rows ``{"count", "max_load", "status"}`` of a sweep, in count order (``[]`` clears);
    the x-axis spans whole counts up to ``k``."""
    view.sweep.data = {"count": [r["count"] for r in rows],
                       "max_load": [r["max_load"] if _finite(r["max_load"]) else math.nan for r in rows],
                       "label": [str(r.get("status", "")) for r in rows]}
    counts = [r["count"] for r in rows]
    lo = min(counts) if counts else 1
    hi = max(counts + ([k] if k else [])) if counts or k else 1
    _set_range(view.sweep_figure.x_range, (lo - 0.5, hi + 0.5))
    _set_range(view.sweep_figure.y_range, padded_range(view.sweep.data["max_load"], floor=0.0))


# --- solver training curve ---------------------------------------------------------

@dataclass(eq=False)
class CurveView:
    figure: Any
    curve: ColumnDataSource
    best_known: Span


def curve_view() -> CurveView:
    """A live training curve (episode vs objective and best so far) with a reference line at
    the best known value."""
    src = ColumnDataSource({"episode": [], "objective": [], "best": [], "bound": []})
    f = figure(height=220, width=440, title="solver curve (green dashed = best known before this run)",
               x_axis_label="episode / sweep / seconds", y_axis_label="objective", tools="pan,wheel_zoom,reset",
               output_backend="canvas", x_range=Range1d(0, 1), y_range=Range1d(0, 1))
    f.line("episode", "objective", source=src, line_alpha=0.7, legend_label="episode")
    f.scatter("episode", "objective", source=src, size=3, alpha=0.7)
    f.line("episode", "best", source=src, line_color="#d62728", line_width=2, legend_label="best")
    f.line("episode", "bound", source=src, line_color="#1f77b4", line_width=2, line_dash="dotted",
           legend_label="proven bound")
    ref = Span(location=None, dimension="width", line_color=REFERENCE_COLOUR, line_dash="dashed", line_width=1.5)
    f.add_layout(ref)
    f.legend.location = "top_right"
    return CurveView(f, src, ref)


def reset_curve(view: CurveView, *, best_known: float | None = None) -> None:
    """Empty the curve for a new run; the reference line at ``best_known`` (or none)."""
    view.curve.data = {"episode": [], "objective": [], "best": [], "bound": []}
    view.best_known.location = best_known if _finite(best_known) else None
    _set_range(view.figure.x_range, (0.0, 1.0))
    _set_range(view.figure.y_range, padded_range([best_known] if _finite(best_known) else []))


def stream_curve(view: CurveView, point: Mapping[str, float]) -> None:
    """Append one point (``bound``: a MILP's proven bound, ``nan`` when absent); widen the ranges
    only when it falls outside them."""
    view.curve.stream({k: [point.get(k, math.nan)] for k in ("episode", "objective", "best", "bound")})
    d = view.curve.data
    xs = list(d["episode"])
    ys = [y for y in list(d["objective"]) + list(d["best"]) + list(d["bound"]) if _finite(y)]
    if _finite(view.best_known.location):
        ys.append(view.best_known.location)
    xr, yr = view.figure.x_range, view.figure.y_range
    if not xs or xs[-1] > xr.end or len(xs) == 1:
        _set_range(xr, (min(xs[0], 0), max(1.0, xs[-1] * 1.25)))
    if ys and (min(ys) < yr.start or max(ys) > yr.end or len(xs) == 1):
        _set_range(yr, padded_range(ys))
