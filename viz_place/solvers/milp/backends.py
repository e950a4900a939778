"""A small adapter over MILP back-ends: CBC (bundled with PuLP) and HiGHS (``highspy``).

The integer-program solvers build a ``pulp.LpProblem`` and hand it to
:func:`solve_milp`, which runs one back-end with a time limit, a gap (stop once value / bound - 1 is at most it),
an optional warm start (values of the integer variables), progress reports
(incumbent and bound as they improve) and a cancel hook that keeps the best
solution found so far. PuLP objects stay inside the solver modules: the result
is a plain :class:`MilpResult` (values keyed by variable name).

* **CBC** (:mod:`.cbc`) runs as a child process (the binary PuLP ships). Its log is read line
  by line for progress; cancel and the wall-clock deadline send ``SIGINT``,
  which makes CBC stop and still write its best solution (``SIGTERM`` would lose
  it).
* **HiGHS** runs in-process through ``highspy``; an interrupt callback stops it
  when the cancel hook fires, an improving-solution callback reports progress.

>>> import pulp
>>> lp = pulp.LpProblem("demo", pulp.LpMinimize)
>>> x = lp.add_variable("x", cat="Binary"); y = lp.add_variable("y", cat="Binary")
>>> lp += x + 2 * y
>>> lp += x + y >= 1
>>> r = solve_milp(lp, backend="cbc", time_limit=10)
>>> r.status, r.objective, r.values["x"]
('optimal', 1.0, 1.0)
"""
from __future__ import annotations

import math
import os
import time
import warnings
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np
import pulp

from ...cost.bounds import gap as gap_of
from ...errors import SolverError
from ..base import Hooks, SolverOptions

#: Back-end names accepted by :func:`solve_milp` (``"auto"`` = HiGHS if installed, else CBC).
BACKENDS = ("cbc", "highs", "auto")

#: A solution whose gap (value / bound - 1) is at most this is reported as proven optimal.
OPTIMALITY_TOL = 1e-6


@dataclass(frozen=True)
class MilpOptions(SolverOptions):
    """Options every MILP solver shares (the back-end, its limits, warm start, symmetry breaking).

    >>> MilpOptions(time_limit=5, backend="highs").gap
    0.0
    """

    time_limit: float = field(default=60.0, metadata={"help": "seconds for the MILP back-end", "min": 0.1,
                                                      "max": 86400.0})
    gap: float = field(default=0.0, metadata={"help": "stop once value / bound - 1 is at most this (0.01: within 1 % "
                                                      "of the optimum; 0 = prove optimality)",
                                              "min": 0.0, "max": 1.0})
    backend: str = field(default="cbc", metadata={"help": "MILP back-end: cbc (bundled), highs (highspy), auto",
                                                  "choices": BACKENDS})
    warm_start: bool = field(default=True, metadata={"help": "start from the DP and the heuristic baselines"})
    symmetry_breaking: bool = field(default=True, metadata={"help": "order identical unpinned devices of a class"})
    threads: int = field(default=0, metadata={
        "help": "threads the back-end may use (0 = its default: HiGHS automatic, CBC 1); 1 shares a busy "
                "machine best", "min": 0, "max": 64})


#: Extra seconds after the time limit before the adapter stops a back-end itself.
GRACE_SECONDS = 0.0



def _cbc_command():
    """PuLP's bundled-CBC command object (its 3.x deprecation notice silenced: we pin pulp < 4)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return pulp.PULP_CBC_CMD(msg=False)


def highs_available() -> bool:
    """True if ``highspy`` can be imported (the HiGHS back-end is usable)."""
    try:
        import highspy  # noqa: F401
    except ImportError:
        return False
    return True


def available_backends() -> list[str]:
    """Back-ends usable on this machine, e.g. ``['cbc', 'highs']``."""
    out = []
    if _cbc_command().available():
        out.append("cbc")
    if highs_available():
        out.append("highs")
    return out


def resolve_backend(name: str) -> str:
    """``"auto"`` -> the best installed back-end; raise a clear error for a missing one."""
    have = available_backends()
    if name == "auto":
        if not have:
            raise SolverError("no MILP back-end available: neither CBC (PuLP) nor HiGHS (highspy) can run here")
        return "highs" if "highs" in have else have[0]
    if name not in ("cbc", "highs"):
        raise SolverError(f"option 'backend': unknown MILP back-end {name!r}; choose one of {list(BACKENDS)}")
    if name not in have:
        hint = "pip install highspy" if name == "highs" else "reinstall pulp>=3.3,<4 (it bundles CBC)"
        raise SolverError(f"option 'backend': back-end {name!r} is not installed here ({hint}); available: {have}")
    return name


@dataclass
class MilpResult:
    """What a back-end returned.

    ``status``: ``"optimal"`` (proven, gap <= :data:`OPTIMALITY_TOL`), ``"feasible"``
    (a solution, not proven optimal), ``"infeasible"`` (proven), ``"no solution"``
    (stopped before finding one), ``"unbounded"`` or ``"error"``.
    ``stopped_by``: ``"time limit"``, ``"cancel"``, ``"gap"`` or ``None``.
    """

    status: str
    backend: str
    values: dict[str, float] = field(default_factory=dict)
    objective: float | None = None
    bound: float | None = None
    stopped_by: str | None = None
    seconds: float = 0.0
    message: str = ""
    note: str = ""          # what the caller should tell the user (e.g. a proof that was not trusted)

    @property
    def has_solution(self) -> bool:
        return self.status in ("optimal", "feasible")

    @property
    def gap(self) -> float | None:
        """``objective / bound - 1`` (:func:`viz_place.cost.gap`), when both are known."""
        return gap_of(self.objective, self.bound)


#: ``improve(values)``: given an incumbent (values by variable name), a better one —
#: ``(objective, {name: value})``, the integer variables suffice — or ``None``.
Improver = Callable[[Mapping[str, float]], "tuple[float, Mapping[str, float]] | None"]


def solve_milp(lp: pulp.LpProblem, *, backend: str = "cbc", time_limit: float | None = None, gap: float = 0.0,
               warm_start: Mapping[str, float] | None = None, hooks: Hooks | None = None,
               threads: int = 0, improve: Improver | None = None,
               incoming: Callable[[float | None, float | None], tuple[float, dict] | None] | None = None
               ) -> MilpResult:
    """Solve ``lp`` (a minimisation) and return a :class:`MilpResult`.

    ``warm_start`` maps variable names to values (integer variables suffice).
    ``hooks`` receives progress and is polled for cancel. ``threads``: 0 = the
    back-end's default (HiGHS automatic, CBC 1). ``improve`` (HiGHS only; CBC
    ignores it): called on each new incumbent; a better solution it returns is
    handed back to the search (HiGHS's user-solution callback completes the
    continuous variables), so the search prunes against it and its gap closes.
    ``incoming(incumbent, bound)`` (HiGHS only; the search's own so far, ``None`` before any): asked at the
    same points for a solution found elsewhere (a process beside), as ``(value, values by name)``, or
    ``None``; one better than the incumbent is handed over likewise. The search waits while either runs
    (its time limit counts that time).
    """
    hooks = hooks or Hooks()
    name = resolve_backend(backend)
    if lp.sense != pulp.LpMinimize:
        raise SolverError("solve_milp expects a minimisation problem")
    start = time.perf_counter()
    stop = engine_gap(gap)
    if name == "highs":
        res = _solve_highs(lp, time_limit, stop, warm_start, hooks, threads, improve, incoming)
    else:
        from .cbc import solve_cbc
        res = solve_cbc(lp, time_limit, stop, warm_start, hooks, threads or 1)
    res.seconds = time.perf_counter() - start
    if res.has_solution:
        g = res.gap
        res.status = "optimal" if (g is not None and g <= OPTIMALITY_TOL) else "feasible"
    return res


def engine_gap(gap: float) -> float:
    """The back-ends' relative gap ``(value - bound) / value`` that stops a run at our gap
    ``value / bound - 1 <= gap`` (HiGHS's ``mip_rel_gap`` and CBC's ``-ratio`` use the former).

    >>> engine_gap(0.01), engine_gap(0.0)
    (0.009900990099009901, 0.0)
    """
    return float(gap) / (1.0 + float(gap)) if gap > 0 else 0.0


# --------------------------------------------------------------------------- shared
def _num(text: str) -> float | None:
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) and abs(v) < 1e49 else None


def progress_data(seconds: float, incumbent: float | None, bound: float | None) -> dict:
    """The ``data`` of a MILP progress report: seconds since the run started, incumbent,
    bound and their gap ``incumbent / bound - 1`` (``nan`` when unknown) — the
    explorer draws incumbent and bound over time from it.

    >>> progress_data(2.0, 12.0, 8.0)
    {'seconds': 2.0, 'best': 12.0, 'bound': 8.0, 'gap': 0.5}
    >>> progress_data(1.0, None, 3.0)["gap"]
    nan
    """
    g = gap_of(incumbent, bound)
    return {"seconds": float(seconds), "best": math.nan if incumbent is None else float(incumbent),
            "bound": math.nan if bound is None else float(bound), "gap": math.nan if g is None else g}


def progress_text(incumbent: float | None, bound: float | None, phase: str = "MILP") -> str:
    """``MILP: best 12, bound 8, gap 50%`` (the parts known so far; ``phase`` names who says it).

    >>> progress_text(12.0, 8.0), progress_text(None, 3.0)
    ('MILP: best 12, bound 8, gap 50%', 'MILP: no solution yet, bound 3')
    """
    g = gap_of(incumbent, bound)
    return f"{phase}: " + (f"best {incumbent:.6g}" if incumbent is not None else "no solution yet") + \
        (f", bound {bound:.6g}" if bound is not None else "") + (f", gap {100 * g:.3g}%" if g is not None else "")


def _report(hooks: Hooks, t0: float, time_limit, incumbent, bound, force: bool = False) -> None:
    elapsed = time.perf_counter() - t0
    frac = min(1.0, elapsed / time_limit) if time_limit else None
    hooks.report(frac, progress_text(incumbent, bound), incumbent=incumbent, bound=bound, force=force,
                 data=progress_data(hooks.elapsed, incumbent, bound))


# --------------------------------------------------------------------------- HiGHS
def _highs_model(lp):
    import highspy
    variables = lp.variables()
    col = {v.name: i for i, v in enumerate(variables)}
    n = len(variables)
    inf = highspy.kHighsInf
    cost = np.zeros(n)
    for v, c in lp.objective.items():
        cost[col[v.name]] += c
    lower = np.array([-inf if v.lowBound is None else v.lowBound for v in variables], dtype=float)
    upper = np.array([inf if v.upBound is None else v.upBound for v in variables], dtype=float)
    rows_i, cols_i, vals = [], [], []
    rlo, rup = [], []
    for r, c in enumerate(lp.constraints()):
        for v, a in c.items():
            if a:
                rows_i.append(r)
                cols_i.append(col[v.name])
                vals.append(a)
        rhs = -c.constant
        if c.sense == pulp.LpConstraintLE:
            rlo.append(-inf)
            rup.append(rhs)
        elif c.sense == pulp.LpConstraintGE:
            rlo.append(rhs)
            rup.append(inf)
        else:
            rlo.append(rhs)
            rup.append(rhs)
    model = highspy.HighsLp()
    model.num_col_ = n
    model.num_row_ = len(rlo)
    model.col_cost_ = cost
    model.col_lower_ = lower
    model.col_upper_ = upper
    model.row_lower_ = np.array(rlo, dtype=float)
    model.row_upper_ = np.array(rup, dtype=float)
    model.offset_ = float(lp.objective.constant or 0.0)
    rows_a = np.array(rows_i, dtype=np.int64)
    cols_a = np.array(cols_i, dtype=np.int64)
    vals_a = np.array(vals, dtype=float)
    order = np.lexsort((rows_a, cols_a))
    starts = np.zeros(n + 1, dtype=np.int64)
    np.add.at(starts, cols_a + 1, 1)
    model.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    model.a_matrix_.num_col_ = n
    model.a_matrix_.num_row_ = len(rlo)
    model.a_matrix_.start_ = np.cumsum(starts).astype(np.int32)
    model.a_matrix_.index_ = rows_a[order].astype(np.int32)
    model.a_matrix_.value_ = vals_a[order]
    model.integrality_ = [highspy.HighsVarType.kInteger if v.cat == pulp.LpInteger else highspy.HighsVarType.kContinuous
                          for v in variables]
    return model, variables, col


def _new_highs():
    """A ``highspy.Highs`` without its start-up banner on stdout (it would corrupt ``--json`` output)."""
    import sys

    import highspy
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError):   # no real stdout (embedded): nothing to protect
        return highspy.Highs()
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            return highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)


#: The ``threads`` setting HiGHS's process-wide scheduler was last started with (``None``: not yet).
_SCHEDULER_THREADS: list[int | None] = [None]


def _match_scheduler(threads: int) -> None:
    """HiGHS starts one thread scheduler per process and refuses to run (status "Not Set") when a
    later run asks for another thread count; restart it when the count changes."""
    import highspy
    if _SCHEDULER_THREADS[0] is not None and _SCHEDULER_THREADS[0] != threads:
        highspy.Highs.resetGlobalScheduler(True)
    _SCHEDULER_THREADS[0] = threads


def _solve_highs(lp, time_limit, rel_gap, warm_start, hooks: Hooks, threads: int,
                 improve: Improver | None = None,
                 incoming: Callable[[float | None, float | None], tuple[float, dict] | None] | None = None
                 ) -> MilpResult:
    import highspy
    t_enter = time.perf_counter()      # converting the model counts against the time limit
    model, variables, col = _highs_model(lp)
    h = _new_highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", float(rel_gap))    # engine_gap(): HiGHS's own sense
    h.setOptionValue("mip_abs_gap", 1e-9)
    h.setOptionValue("random_seed", 0)
    if threads:
        h.setOptionValue("threads", int(threads))
    _match_scheduler(int(threads))
    if time_limit is not None:
        h.setOptionValue("time_limit", max(0.05, float(time_limit) - (time.perf_counter() - t_enter)))
    h.passModel(model)
    if warm_start:
        idx = [col[k] for k in warm_start if k in col]
        val = [float(warm_start[k]) for k in warm_start if k in col]
        if idx:
            h.setSolution(len(idx), np.array(idx, dtype=np.int32), np.array(val, dtype=float))
    state = {"stopped_by": None, "incumbent": None, "bound": None}
    t0 = time.perf_counter()

    def on_interrupt(e) -> None:
        if state["stopped_by"] is None and hooks.cancelled:
            state["stopped_by"] = "cancel"
        if state["stopped_by"] is None and time_limit is not None and \
                time.perf_counter() - t_enter > time_limit + GRACE_SECONDS:
            state["stopped_by"] = "time limit"
        if state["stopped_by"]:
            e.interrupt()
        b = _num(str(e.data_out.mip_dual_bound))
        if b is not None and (state["bound"] is None or b > state["bound"] + 1e-12):
            state["bound"] = b
            _report(hooks, t0, time_limit, state["incumbent"], b)

    def on_improving(e) -> None:
        v = _num(str(e.data_out.objective_function_value))
        if v is not None:
            state["incumbent"] = v
            _report(hooks, t0, time_limit, v, state["bound"], force=True)
            if improve is not None:
                state["pending"] = np.array(e.data_out.mip_solution, dtype=float)

    def on_user_solution(e) -> None:
        if state["stopped_by"]:
            return
        better = incoming(state["incumbent"], state["bound"]) if incoming is not None else None
        if better is None:
            sol = state.pop("pending", None)
            if sol is None or improve is None or len(sol) != len(variables):
                return
            better = improve({v.name: float(sol[i]) for i, v in enumerate(variables)})
            if better is None:
                return
        value, values = better
        idx = [col[k] for k in values if k in col]
        if not idx or (state["incumbent"] is not None and value >= state["incumbent"]):
            return
        e.data_in.setSolution(np.array(idx, dtype=np.int32), np.array([float(values[k]) for k in values if k in col]))
        e.data_in.repairSolution()
        state["incumbent"] = value
        _report(hooks, t0, time_limit, value, state["bound"], force=True)

    h.cbMipInterrupt.subscribe(on_interrupt)
    h.cbMipImprovingSolution.subscribe(on_improving)
    if improve is not None or incoming is not None:
        h.cbMipUserSolution.subscribe(on_user_solution)
    h.run()
    status = h.getModelStatus()
    info = h.getInfo()
    MS = highspy.HighsModelStatus
    stopped_by = state["stopped_by"]
    if status == MS.kTimeLimit and stopped_by is None:
        stopped_by = "time limit"
    if status == MS.kInterrupt and stopped_by is None:
        stopped_by = "cancel"
    if status == MS.kInfeasible:
        return MilpResult("infeasible", "highs", message="HiGHS: problem is infeasible")
    if status in (MS.kUnbounded, MS.kUnboundedOrInfeasible):
        return MilpResult("infeasible" if status == MS.kUnboundedOrInfeasible else "unbounded", "highs",
                          message=f"HiGHS: {h.modelStatusToString(status)}")
    has = info.primal_solution_status == 2
    bound = _num(str(info.mip_dual_bound))
    if not has:
        return MilpResult("no solution" if stopped_by else "error", "highs", stopped_by=stopped_by, bound=bound,
                          message=f"HiGHS: {h.modelStatusToString(status)}")
    sol = list(h.getSolution().col_value)
    values = {v.name: float(sol[i]) for i, v in enumerate(variables)}
    objective = float(info.objective_function_value)
    if status == MS.kOptimal and stopped_by is None:
        if (gap_of(objective, bound) or 0.0) > OPTIMALITY_TOL:
            stopped_by = "gap"
        if bound is None:
            bound = objective
    return MilpResult("feasible", "highs", values=values, objective=objective, bound=bound,
                      stopped_by=stopped_by, message=f"HiGHS: {h.modelStatusToString(status)}")
