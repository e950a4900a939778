"""Common checks over every registered solver (the idea of scikit-learn's ``check_estimator``).

:func:`check_solver` runs every check of :data:`CHECKS` that applies to a
solver and raises ``AssertionError`` listing what failed:

* ``valid`` — on small random instances (inference and training graphs, colour
  classes, memory limits, two or three device classes) the placement passes
  :func:`~viz_place.testing.check_placement`: every node placed on an existing
  device, colour classes together, memory within limits, ops only where
  supported, and the claimed value equal to the evaluator's;
* ``pins`` — on an instance with pins, every pin is honoured;
* ``cancel`` — a run cancelled after a moment returns a valid placement within
  2 s of the cancel (5 s for a MILP: CBC is an external process);
* ``time_limit`` — a run with ``time_limit = 1`` returns a valid placement
  within the same margins (only for solvers with a ``time_limit`` option);
* ``options_round_trip`` — ``make_options(cls, options.to_dict())`` gives the
  same options, they are plain JSON, and a placement's ``options`` read back
  give the run's options;
* ``same_seed`` — two runs with the same options (``seed`` set, where the
  solver has one) give the same placement, status and value;
* ``bound`` — a reported lower bound comes with a known ``bound_set``, is at
  most the value, and at most the value of a simple placement of its set.

A solver that declares ``needs=("module_paths",)`` is checked on graphs read
with :func:`viz_place.io.torch_fx.read_torch` from small ``torch.nn`` modules
with nested submodules (``layer`` paths such as ``/enc/0/fc``). The options of
the quick checks come from ``SolverInfo.check_options``; a solver that cannot
run without a graph-dependent option (``expert``'s split) provides it through
``SolverInfo.options_for``.

>>> check_solver("topo-fill", checks=["valid", "pins", "options_round_trip", "same_seed", "bound"])
[]
"""
from __future__ import annotations

import dataclasses
import functools
import json
import math
import threading
import time
from typing import Any, Callable

from ..model import BOUND_SETS, Cluster, OpGraph, Placement
from ..solvers import get_solver, make_options, run_solver
from ..solvers.groups import host_assignment
from .instances import Instance, check_placement, random_instance

CHECKS = ("valid", "pins", "cancel", "time_limit", "options_round_trip", "same_seed", "bound")

#: Seconds a solver may take to return after a cancel or past its time limit.
MARGIN = 2.0
#: The same for solvers with a ``backend`` option (the MILPs: CBC runs as a separate process).
EXTERNAL_MARGIN = 5.0
#: Seconds a run is left alone before the cancel check cancels it.
CANCEL_AFTER = 0.5
#: The ``time_limit`` of the time-limit check.
TIME_LIMIT = 1.0


def _fields(info) -> set[str]:
    return {f.name for f in dataclasses.fields(info.options_cls)}


def applicable_checks(info) -> list[str]:
    """The checks of :data:`CHECKS` that apply to ``info`` (``time_limit`` needs that option)."""
    return [c for c in CHECKS if c != "time_limit" or "time_limit" in _fields(info)]


def unavailable_reason(info) -> str | None:
    """Why ``info`` cannot be checked here (``None``: it can)."""
    if not info.available():
        return f"solver {info.name!r} is not available here (its back-end or a required package is missing)"
    if "module_paths" in info.needs:
        import importlib.util
        if importlib.util.find_spec("torch") is None:
            return f"solver {info.name!r} needs graphs with module paths; building them needs torch"
    return None


def margin_of(info) -> float:
    return EXTERNAL_MARGIN if "backend" in _fields(info) else MARGIN


# --- instances -------------------------------------------------------------------------------------------------

def _feasible(inst: Instance) -> bool:
    """Whether the simple host placement is valid (so every solver has something to find)."""
    from ..cost import evaluate
    return not evaluate(inst.graph, inst.cluster, Placement(host_assignment(inst.graph, inst.cluster, inst.pins)),
                        pins=inst.pins).violations


@functools.lru_cache(maxsize=None)
def small_instances() -> tuple[Instance, ...]:
    """Three small feasible random instances: inference with memory limits, training, three device classes."""
    kinds = [dict(training=False, memory=True, n_classes=2), dict(training=True, memory=False, n_classes=2),
             dict(training=False, memory=True, n_classes=3)]
    out = []
    for i, kw in enumerate(kinds):
        seed = 100 * (i + 1)
        while True:
            inst = random_instance(seed, n_min=5, n_max=7, pins=False, **kw)
            if _feasible(inst):
                break
            seed += 1
        out.append(inst)
    return tuple(out)


@functools.lru_cache(maxsize=None)
def pinned_instance() -> Instance:
    """A small instance whose first node in topological order (with its colour class) is pinned to an accelerator:
    a pin every kind of solver (contiguous splits included) can honour."""
    seed = 7
    while True:
        inst = random_instance(seed, n_min=5, n_max=7, pins=False, memory=False, training=False, n_classes=2)
        g, cluster = inst.graph, inst.cluster
        first = g.node_ids[0]     # node ids are in topological order
        group = next(grp for grp in g.colocation_groups if first in grp)
        accel = [d.name for d in cluster.devices if d.cls.pays_communication
                 and all(g.node(n).supported_on(d.cls.kind) for n in group)]
        if accel:
            pinned = Instance(g, cluster, {n: accel[-1] for n in group}, seed)
            if _feasible(pinned):
                return pinned
        seed += 1


def _module_path_graph(blocks: int) -> OpGraph:
    import torch

    from ..io.torch_fx import read_torch

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(16, 16)
            self.act = torch.nn.ReLU()

        def forward(self, x):
            return self.act(self.fc(x)) + x

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.enc = torch.nn.Sequential(*[Block() for _ in range(blocks)])
            self.head = torch.nn.Linear(16, 4)

        def forward(self, x):
            return self.head(self.enc(x))

    torch.manual_seed(0)
    return read_torch(Net(), (torch.randn(2, 16),))


@functools.lru_cache(maxsize=None)
def module_path_instances() -> tuple[Instance, ...]:
    """Graphs read from small nested ``torch.nn`` modules: every op has a ``layer`` path (``/enc/0/fc``)."""
    return tuple(Instance(g, g.default_cluster) for g in (_module_path_graph(2), _module_path_graph(4)))


def parallel_chains(k: int, length: int) -> OpGraph:
    """``k`` parallel chains of ``length`` ops between a source and a sink: few nodes, ``(length + 1) ** k``
    ideals, so every exact solver has work to do.

    >>> parallel_chains(2, 3).num_nodes
    8
    """
    nodes = [{"id": "src", "latency": {"cpu": 2.0, "fpga": 1.0}, "transfer_cost": 0.5}]
    edges = []
    for c in range(k):
        prev = "src"
        for i in range(length):
            nid = f"c{c}_{i}"
            nodes.append({"id": nid, "latency": {"cpu": 3.0 + (i * 7 + c) % 5, "fpga": 1.0 + (i + c) % 3},
                          "transfer_cost": 0.2 + 0.1 * ((i + c) % 4), "size": 1.0})
            edges.append((prev, nid))
            prev = nid
        edges.append((prev, "sink"))
    nodes.append({"id": "sink", "latency": {"cpu": 2.0, "fpga": 1.0}})
    return OpGraph.from_records(nodes, edges, name=f"chains_{k}x{length}", default_cluster=Cluster.paper(3, 1, None))


@functools.lru_cache(maxsize=None)
def _medium_graph() -> OpGraph:
    return parallel_chains(4, 9)     # 38 nodes, 10,002 ideals: the DP alone takes seconds


def instances_for(info) -> tuple[Instance, ...]:
    return module_path_instances() if "module_paths" in info.needs else small_instances()


def long_instance_for(info) -> Instance:
    """A graph big enough that a solver with a long time limit is still running when the cancel comes."""
    if "module_paths" in info.needs:
        g = _module_path_graph(12)
        return Instance(g, g.default_cluster)
    g = _medium_graph()
    return Instance(g, g.default_cluster)


# --- running ---------------------------------------------------------------------------------------------------

def _options(info, inst: Instance, extra: dict | None = None, *, quick: bool = True) -> dict[str, Any]:
    opts: dict[str, Any] = dict(info.check_options) if quick else {}
    if info.options_for is not None:
        opts.update(info.options_for(inst.graph, inst.cluster, dict(inst.pins)))
    opts.update(extra or {})
    return opts


def _run(info, inst: Instance, options: dict, **kw) -> Placement:
    return run_solver(info.name, inst.graph, inst.cluster, pins=inst.pins, options=options, **kw)


def _problems(info, inst: Instance, p: Placement) -> list[str]:
    problems = check_placement(inst.graph, inst.cluster, p, inst.pins)
    for node, dev in inst.pins.items():
        if p.assignment.get(node) != dev:
            problems.append(f"pin {node!r} -> {dev} not honoured (placed on {p.assignment.get(node)})")
    if p.solver != info.name:
        problems.append(f"placement says solver {p.solver!r}")
    return problems


def _check_valid(info) -> str:
    for i, inst in enumerate(instances_for(info)):
        p = _run(info, inst, _options(info, inst))
        problems = _problems(info, inst, p)
        assert not problems, f"instance {i} ({inst!r}): " + "; ".join(problems)
    return ""


def _check_pins(info) -> str:
    if "module_paths" in info.needs:
        inst0 = module_path_instances()[0]
        first = inst0.graph.node_ids[0]
        accel = next(d.name for d in inst0.cluster.devices if d.cls.pays_communication)
        group = next(grp for grp in inst0.graph.colocation_groups if first in grp)
        inst = Instance(inst0.graph, inst0.cluster, {n: accel for n in group})
    else:
        inst = pinned_instance()
    p = _run(info, inst, _options(info, inst))
    problems = _problems(info, inst, p)
    assert not problems, f"{inst!r}: " + "; ".join(problems)
    return ""


def _timed_run(info, inst: Instance, options: dict, *, cancel_after: float | None) -> tuple[Any, float, float]:
    """Run in a thread; cancel after ``cancel_after`` s (if given). Returns (placement or error, seconds from the
    cancel or the start to the return, total seconds); raises if the run is still going after a generous wait."""
    cancel = threading.Event()
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["result"] = _run(info, inst, options, cancel=cancel)
        except BaseException as err:  # reported below, with the solver's name
            out["result"] = err

    start = time.perf_counter()
    worker = threading.Thread(target=target, name=f"check-{info.name}", daemon=True)
    worker.start()
    mark = start
    if cancel_after is not None:
        worker.join(cancel_after)
        cancel.set()
        mark = time.perf_counter()
    worker.join(60 + margin_of(info) + (options.get("time_limit") or 0))
    if worker.is_alive():
        raise AssertionError(f"{info.name}: still running {time.perf_counter() - mark:.1f} s after "
                             f"{'the cancel' if cancel_after is not None else 'the start'}")
    end = time.perf_counter()
    return out["result"], end - mark, end - start


def _check_cancel(info) -> str:
    inst = long_instance_for(info)
    options = _options(info, inst, {"time_limit": 60.0} if "time_limit" in _fields(info) else {}, quick=False)
    result, after, total = _timed_run(info, inst, options, cancel_after=CANCEL_AFTER)
    if isinstance(result, BaseException):
        raise AssertionError(f"cancelled after {CANCEL_AFTER} s, it raised {type(result).__name__}: {result}")
    problems = _problems(info, inst, result)
    assert not problems, "the placement returned on cancel: " + "; ".join(problems)
    if total <= CANCEL_AFTER:
        return f"finished in {total:.2f} s, before the cancel"
    limit = margin_of(info)
    assert after <= limit, f"returned {after:.2f} s after the cancel (allowed: {limit} s)"
    return f"returned {after:.2f} s after the cancel (status {result.status!r})"


def _check_time_limit(info) -> str:
    inst = long_instance_for(info)
    options = _options(info, inst, {"time_limit": TIME_LIMIT}, quick=False)
    result, _, total = _timed_run(info, inst, options, cancel_after=None)
    if isinstance(result, BaseException):
        raise AssertionError(f"with time_limit={TIME_LIMIT} it raised {type(result).__name__}: {result}")
    problems = _problems(info, inst, result)
    assert not problems, f"the placement returned with time_limit={TIME_LIMIT}: " + "; ".join(problems)
    limit = TIME_LIMIT + margin_of(info)
    assert total <= limit, f"took {total:.2f} s with time_limit={TIME_LIMIT} (allowed: {limit} s)"
    return f"{total:.2f} s with time_limit={TIME_LIMIT} (status {result.status!r})"


def _check_options_round_trip(info) -> str:
    inst = instances_for(info)[0]
    opts = make_options(info.options_cls, _options(info, inst))
    plain = opts.to_dict()
    json.dumps(plain)
    again = make_options(info.options_cls, plain)
    assert again == opts, f"to_dict -> make_options gives {again!r}, not {opts!r}"
    defaults = make_options(info.options_cls, None)
    assert make_options(info.options_cls, defaults.to_dict()) == defaults, "the defaults do not round-trip"
    p = _run(info, inst, opts)
    recorded = {k: v for k, v in p.options.items() if k != "stats"}
    json.dumps(recorded)
    assert make_options(info.options_cls, recorded) == opts, f"the placement's options {recorded!r} read back " \
                                                             f"differ from the run's {opts!r}"
    return ""


def _check_same_seed(info) -> str:
    inst = instances_for(info)[0]
    extra = {"seed": 5} if "seed" in _fields(info) else {}
    runs = [_run(info, inst, _options(info, inst, extra)) for _ in range(2)]
    a, b = runs
    assert dict(a.assignment) == dict(b.assignment), "two runs with the same options placed differently"
    assert (a.status, a.claimed_value) == (b.status, b.claimed_value), \
        f"two runs with the same options: {a.status} {a.claimed_value!r} vs {b.status} {b.claimed_value!r}"
    return ""


def _check_bound(info) -> str:
    from ..cost import evaluate
    notes = []
    for inst in instances_for(info) + ((pinned_instance(),) if "module_paths" not in info.needs else ()):
        p = _run(info, inst, _options(info, inst))
        if p.lower_bound is None:
            assert p.bound_set is None, f"bound_set {p.bound_set!r} without a lower bound"
            continue
        assert p.bound_set in BOUND_SETS, f"bound_set {p.bound_set!r} is not one of {BOUND_SETS}"
        value = p.claimed_value
        assert p.lower_bound <= value + 1e-6 * max(1.0, abs(value)), f"lower bound {p.lower_bound!r} > value {value!r}"
        # A simple placement in every set: everything at its pin or on the first host (one device when unpinned).
        simple = Placement(host_assignment(inst.graph, inst.cluster, inst.pins))
        ev = evaluate(inst.graph, inst.cluster, simple, pins=inst.pins)
        if not ev.violations and (p.bound_set == "any" or len(set(simple.assignment.values())) == 1):
            other = ev.value(p.objective)
            assert p.lower_bound <= other + 1e-6 * max(1.0, abs(other)), \
                f"lower bound {p.lower_bound!r} ({p.bound_set}) exceeds {other!r}, the value of a placement in its set"
        notes.append(f"{p.lower_bound:.6g} ({p.bound_set})")
    return "bounds " + ", ".join(notes) if notes else "reports no bound"


_CHECK_FUNCTIONS: dict[str, Callable[[Any], str]] = {
    "valid": _check_valid, "pins": _check_pins, "cancel": _check_cancel, "time_limit": _check_time_limit,
    "options_round_trip": _check_options_round_trip, "same_seed": _check_same_seed, "bound": _check_bound,
}


def run_check(name: str, check: str) -> str:
    """Run one check of :data:`CHECKS` on solver ``name``; raises ``AssertionError`` (naming the solver) when it
    fails, returns a short note otherwise."""
    info = get_solver(name)
    try:
        return _CHECK_FUNCTIONS[check](info)
    except AssertionError as err:
        raise AssertionError(f"{name}: check {check!r} failed: {err}") from None
    except Exception as err:     # a solver error on inputs it must handle (or an InternalError) fails the check
        raise AssertionError(f"{name}: check {check!r} failed: {type(err).__name__}: {err}") from err


def check_solver(name: str, checks=None) -> list[str]:
    """Run every applicable check (or those named in ``checks``) on solver ``name``.

    Raises ``AssertionError`` listing every failed check; returns the notes of
    the checks that passed but did not fully apply (e.g. a run that finished
    before the cancel came) — an empty list when every check applied.
    """
    info = get_solver(name)
    failures, notes = [], []
    for check in checks or applicable_checks(info):
        try:
            note = run_check(name, check)
        except AssertionError as err:
            failures.append(str(err))
            continue
        if "before the cancel" in note:
            notes.append(f"{check}: {note}")
    if failures:
        raise AssertionError("\n".join(failures))
    return notes
