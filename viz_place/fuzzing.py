"""Seeded fuzzing of every registered solver on small random instances (tests and benchmarks).

For each instance (:func:`viz_place.testing.random_instance`: training graphs,
colour classes, memory limits, pins, 2–3 device classes, unsupported ops) every
registered solver runs once — plus ``ilp -o device_cycles=true`` — and the
results are checked against each other and against the evaluator:

* **valid** — every placement passes :func:`viz_place.testing.check_placement`
  (every node placed, colour classes together, pins, memory, supported ops) and
  its claimed value equals :func:`viz_place.cost.evaluate`'s;
* **honest status** — ``"optimal"`` only from an exact solver, and its message
  names the set it is optimal for;
* **exact solvers agree** — two proven optima over the same set (``dp`` and
  ``ilp``: pipeline splits) are equal, and an exact solver that proves a set
  infeasible is not contradicted by a valid placement in that set;
* **no placement beats a proven optimum of a set it belongs to** — every valid
  placement of any solver that lies in a set (pipeline splits, per-device convex
  sets, one piece per accelerator, all placements) is no better than that set's
  proven optimum;
* **bounds hold** — a solver's ``lower_bound`` (when it reports one) is never
  above its own value, nor above any placement of its ``bound_set``;
* **brute force** — on instances with few enough group-to-device combinations,
  each proven optimum equals the best evaluator value over every placement of
  its set.

Solvers that raise a :class:`~viz_place.errors.VizPlaceError` (a heuristic
that finds nothing, say) are recorded, not failures; any other exception is.

>>> report = fuzz(range(2), solvers=["dp", "pipedream", "topo-fill"])
>>> report.instances, report.failures
(2, [])
>>> report.summary().startswith("2 instances x 3 solvers")
True
"""
from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import numpy as np

from .cost import compile_problem, evaluate, evaluate_indices
from .errors import InfeasibleError, VizPlaceError
from .model import Placement
from .testing import Instance, check_placement, random_instance

#: Relative tolerance of every comparison between two values.
REL_TOL = 1e-6

#: Sets of placements that exact solvers prove optima over, by name (as in ``Placement.bound_set``).
PIPELINE, CONVEX, ONE_PIECE, ANY = "pipeline", "convex", "one-piece", "any"

#: The set each exact run optimises over (``latency-ilp``: each accelerator one contiguous piece).
EXACT_SETS = {"dp": PIPELINE, "ilp": PIPELINE, "ilp device_cycles=true": CONVEX, "ilp-noncontig": ANY,
              "latency-ilp": ONE_PIECE}

#: The contract's ``bound_set`` name of each set (``latency-ilp`` reports its one-piece set as ``"convex"``).
CONTRACT_SET = {PIPELINE: "pipeline", CONVEX: "convex", ANY: "any", ONE_PIECE: "convex"}

#: Words an "optimal" message must contain to name its set.
SET_WORDS = {PIPELINE: "pipeline splits", CONVEX: "per-device convex sets", ANY: "over all placements",
             ONE_PIECE: "one contiguous piece"}

#: Brute force only instances with at most this many group-to-device combinations.
BRUTE_MAX = 1500


def exact_set(label: str) -> str | None:
    """The set an exact run proves its optimum over (``None``: not exact), ignoring ``backend=...``.

    >>> exact_set("ilp"), exact_set("ilp device_cycles=true backend=highs"), exact_set("pipedream")
    ('pipeline', 'convex', None)
    """
    if label in EXACT_SETS:
        return EXACT_SETS[label]
    return EXACT_SETS.get(" ".join(w for w in label.split(" ") if not w.startswith("backend=")))


def run_options(label: str, *, backend: str = "cbc", time_limit: float = 20.0) -> dict:
    """Options for one fuzz run of ``label`` (a solver name, or ``"name key=value"``)."""
    name, *extra = label.split(" ")
    opts: dict = {}
    if name in ("ilp", "ilp-noncontig", "latency-ilp"):
        opts = {"backend": backend, "time_limit": time_limit}
    elif name == "local-search":
        opts = {"seed": 0, "restarts": 2, "time_limit": 2.0}
    elif name == "rl":
        opts = {"mode": "sample", "samples": 2, "time_limit": 2.0, "seed": 0}
    elif name == "dp":
        opts = {"time_limit": time_limit}
    for kv in extra:
        k, v = kv.split("=", 1)
        opts[k] = {"true": True, "false": False}.get(v, v)
    return opts


def default_labels() -> list[str]:
    """Every registered solver, plus ``ilp device_cycles=true`` when ``ilp`` is registered."""
    from .solvers import list_solvers
    names = [s.name for s in list_solvers()]
    return names + (["ilp device_cycles=true"] if "ilp" in names else [])


@dataclass
class Run:
    """One solver run on one instance: its placement or the error it raised."""

    label: str
    placement: Placement | None = None
    error: BaseException | None = None
    seconds: float = 0.0


@dataclass
class FuzzReport:
    """What a fuzz run did: instances, runs and every failure (``(seed, label, what)``)."""

    instances: int = 0
    labels: list[str] = field(default_factory=list)
    runs: int = 0
    brute_forced: int = 0
    failures: list[tuple[int, str, str]] = field(default_factory=list)
    seconds: float = 0.0
    per_solver_seconds: dict[str, float] = field(default_factory=dict)
    events: dict[str, int] = field(default_factory=dict)   # e.g. "optimal", "cbc restart re-solved"

    def count(self, runs: Sequence[Run]) -> None:
        """Tally what the runs said (statuses, refusals, proofs not trusted)."""
        for run in runs:
            p = run.placement
            keys = [f"status {p.status}"] if p is not None else [
                "infeasible" if isinstance(run.error, InfeasibleError) else "refused (VizPlaceError)"]
            msg = (p.message or "") if p is not None else ""
            if "restarted its search" in msg:
                keys.append("CBC restarts not trusted")
            if "proof is not trusted" in msg:
                keys.append("bounds above a known value")
            for k in keys:
                self.events[k] = self.events.get(k, 0) + 1

    def summary(self) -> str:
        """``"N instances x S solvers = R runs / F failures"``."""
        return (f"{self.instances:,} instances x {len(self.labels)} solvers = {self.runs:,} runs / "
                f"{len(self.failures):,} failures")


def _membership(inst: Instance):
    """Functions ``set name -> (device-index array -> bool)`` for ``inst``."""
    from .solvers.groups import device_cycle, nonconvex_devices, pipeline_order
    prob = compile_problem(inst.graph, inst.cluster)
    fwd = [not b for b in prob.backward.tolist()]
    order = pipeline_order(prob)
    paying = {d for d in range(prob.num_devices) if prob.pays[d]}
    return prob, {
        PIPELINE: lambda dev: device_cycle(prob, dev, order) is None,
        CONVEX: lambda dev: not nonconvex_devices(prob, dev, fwd),
        ONE_PIECE: lambda dev: not (nonconvex_devices(prob, dev) & paying),
        ANY: lambda dev: True,
    }


def _objective(p: Placement) -> str:
    """The run's objective in one vocabulary (``"throughput"`` is the old name of ``"max_load"``)."""
    obj = p.objective or "max_load"
    return "max_load" if obj == "throughput" else obj


def _brute_force(prob, pins, inside: Callable, objective: str) -> float:
    best = math.inf
    for combo in itertools.product(range(prob.num_devices), repeat=len(prob.groups)):
        dev = np.empty(prob.n, dtype=np.int64)
        for g, d in enumerate(combo):
            dev[list(prob.groups[g])] = d
        ev = evaluate_indices(prob, dev, pins=pins)
        if ev.violations or not inside(dev):
            continue
        best = min(best, ev.value(objective))
    return best


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-9) or (math.isinf(a) and math.isinf(b))


def check_instance(inst: Instance, labels: Sequence[str], *, backend: str = "cbc", brute_max: int = BRUTE_MAX,
                   workdir: str | None = None, times: dict[str, float] | None = None) -> tuple[list[Run], list[str], bool]:
    """Run every solver of ``labels`` on ``inst`` and check the results (module docstring).

    Returns ``(runs, failures, brute_forced)``; each failure is ``"label: what"``.
    ``expert`` gets the best placement found so far as its split (``workdir`` is unused,
    kept for callers).
    """
    from .solvers import get_solver, run_solver
    runs: list[Run] = []
    fails: list[str] = []
    for label in labels:
        name = label.split(" ")[0]
        opts = run_options(label, backend=backend)
        if name == "expert":
            done = [r.placement for r in runs if r.placement is not None]
            if not done:
                continue
            best = min(done, key=lambda p: evaluate(inst.graph, inst.cluster, p).max_load)
            opts["assignment"] = dict(best.assignment)
        t0 = time.perf_counter()
        run = Run(label)
        try:
            run.placement = run_solver(name, inst.graph, inst.cluster, pins=inst.pins or None, options=opts)
        except VizPlaceError as err:
            run.error = err
        except Exception as err:  # noqa: BLE001 - a crash is exactly what the fuzzer looks for
            run.error = err
            fails.append(f"{label}: crashed with {type(err).__name__}: {err}")
        run.seconds = time.perf_counter() - t0
        if times is not None:
            times[label] = times.get(label, 0.0) + run.seconds
        runs.append(run)
    prob, inside = _membership(inst)
    valid: list[tuple[Run, np.ndarray]] = []
    for run in runs:
        p = run.placement
        if p is None:
            continue
        problems = check_placement(inst.graph, inst.cluster, p, inst.pins)
        if problems:
            fails.append(f"{run.label}: invalid placement: {'; '.join(problems)}")
            continue
        valid.append((run, prob.to_index_array(p)))
        exact = get_solver(run.label.split(" ")[0]).exact
        if p.status == "optimal":
            if not exact:
                fails.append(f"{run.label}: status 'optimal' from a solver that proves nothing")
            want = exact_set(run.label)
            if want is not None and SET_WORDS[want] not in (p.message or ""):
                fails.append(f"{run.label}: 'optimal' but the message does not name its set: {p.message!r}")
        lb = getattr(p, "lower_bound", None)
        if lb is not None and p.claimed_value is not None and lb > p.claimed_value * (1 + REL_TOL) + 1e-9:
            fails.append(f"{run.label}: lower bound {lb!r} above its own value {p.claimed_value!r}")
    # proven optima and proven infeasibility, per (set, objective)
    optima: dict[tuple[str, str], list[tuple[str, float]]] = {}
    for run in runs:
        set_name = exact_set(run.label)
        p = run.placement
        bound_set = getattr(p, "bound_set", None) if p is not None else None
        if p is not None and bound_set is not None and set_name is not None and bound_set != CONTRACT_SET[set_name]:
            fails.append(f"{run.label}: bound_set {bound_set!r}, expected {CONTRACT_SET[set_name]!r}")
        if set_name is None:
            continue
        if p is not None and p.status == "optimal":
            optima.setdefault((set_name, _objective(p)), []).append((run.label, float(p.claimed_value)))
        elif isinstance(run.error, InfeasibleError):
            obj = "latency" if run.label.startswith("latency-ilp") else "max_load"
            optima.setdefault((set_name, obj), []).append((run.label, math.inf))
    for (set_name, obj), vals in optima.items():
        first_label, first = vals[0]
        for label, v in vals[1:]:
            if not _close(v, first):
                fails.append(f"{label}: optimum {v!r} {SET_WORDS[set_name]} but {first_label} proved {first!r}")
        for run, dev in valid:
            if not inside[set_name](dev):
                continue
            v = evaluate_indices(prob, dev, pins=inst.pins).value(obj)
            for label, opt in vals:
                if v < opt * (1 - REL_TOL) - 1e-9:
                    what = "infeasible" if math.isinf(opt) else f"optimal at {opt!r}"
                    fails.append(f"{run.label}: placement with {obj} {v!r} lies in {SET_WORDS[set_name]}, "
                                 f"which {label} proved {what}")
    # lower bounds against every placement of their set
    for run in runs:
        p = run.placement
        lb, bset = getattr(p, "lower_bound", None), getattr(p, "bound_set", None)
        bset = exact_set(run.label) or bset      # the exact set where known (latency-ilp's "convex" is one-piece)
        if p is None or lb is None or bset not in inside:
            continue
        for other, dev in valid:
            if inside[bset](dev):
                v = evaluate_indices(prob, dev, pins=inst.pins).value(_objective(p))
                if lb > v * (1 + REL_TOL) + 1e-9:
                    fails.append(f"{run.label}: lower bound {lb!r} over {bset} above {other.label}'s {v!r}")
    # bounds that hold for every placement (total work / total speed, largest op), where available
    try:
        from .cost.bounds import simple_lower_bound
    except ImportError:          # not in this version
        simple_lower_bound = None
    if simple_lower_bound is not None and valid:
        lb, why = simple_lower_bound(inst.graph, inst.cluster, "max_load")
        for run, dev in valid:
            v = evaluate_indices(prob, dev).max_load
            if lb > v * (1 + REL_TOL) + 1e-9:
                fails.append(f"{run.label}: max-load {v!r} below the simple lower bound {lb!r} ({why})")
    brute = prob.num_devices ** len(prob.groups) <= brute_max
    if brute:
        for (set_name, obj), vals in optima.items():
            best = _brute_force(prob, inst.pins, inside[set_name], obj)
            for label, v in vals:
                if not _close(v, best):
                    fails.append(f"{label}: claims {v!r} optimal {SET_WORDS[set_name]}, brute force finds {best!r}")
    return runs, fails, brute


#: The medium tier: exact solvers on both back-ends, compared with each other (no brute force).
MEDIUM_LABELS = ("dp", "ilp backend=cbc", "ilp backend=highs", "ilp-noncontig backend=cbc",
                 "ilp-noncontig backend=highs", "pipedream", "local-search")


def fuzz_instances(seeds: Iterable[int], *, n_min: int = 3, n_max: int = 8) -> Iterable[Instance]:
    """The fuzz mix: per seed, a random instance of ``n_min``–``n_max`` nodes (about a third training graphs)."""
    for seed in seeds:
        yield random_instance(seed, n_min=n_min, n_max=n_max)


def fuzz(seeds: Iterable[int], *, solvers: Sequence[str] | None = None, backends: Sequence[str] = ("cbc",),
         brute_max: int = BRUTE_MAX, progress: Callable[[int, FuzzReport], None] | None = None,
         sizes: tuple[int, int] = (3, 8)) -> FuzzReport:
    """Fuzz ``solvers`` (default :func:`default_labels`) over the instances of ``seeds``.

    ``backends``: the MILP back-ends, used in turn (instance ``i`` gets ``backends[i % len]``; a label's
    own ``backend=...`` wins); ``sizes``: node counts of the instances (:func:`fuzz_instances`).
    """
    labels = list(solvers) if solvers is not None else default_labels()
    report = FuzzReport(labels=labels)
    t0 = time.perf_counter()
    for i, inst in enumerate(fuzz_instances(seeds, n_min=sizes[0], n_max=sizes[1])):
        runs, fails, brute = check_instance(inst, labels, backend=backends[i % len(backends)],
                                            brute_max=brute_max, times=report.per_solver_seconds)
        report.instances += 1
        report.runs += len(runs)
        report.count(runs)
        report.brute_forced += brute
        report.failures.extend((inst.seed, f.split(":", 1)[0], f) for f in fails)
        if progress is not None:
            progress(i, report)
    report.seconds = time.perf_counter() - t0
    return report


__all__ = ["EXACT_SETS", "MEDIUM_LABELS", "FuzzReport", "Run", "check_instance", "default_labels", "exact_set",
           "fuzz", "fuzz_instances", "run_options"]
