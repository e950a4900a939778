"""The set-partitioning bound on a second core, beside ``ilp-noncontig``'s integer program.

Run after the integer program (:func:`.set_bound.raise_bound_by_set_partition`), the set bound takes its
time from it. On a machine with a second core it can instead run for the whole run in a process of its
own (:class:`SetBoundWorker`, started with ``spawn``: nothing of the parent's threads or HiGHS state is
inherited): the parent hands it every better placement's value, and it refutes the threshold that would
settle the requested gap, ``value / (1 + gap)`` (:func:`aim`), abandoning it for a lower one when a better
placement lowers the aim by ``RETARGET``, and proving lower thresholds meanwhile where the aim cannot be
proven (its relaxation fits); without a gap each threshold halves the current one. (Refuting the
thresholds on the way up costs about as much as refuting each alone: on residual_75_s2_training, carrying
the columns from 45.9 up to 46.2 took 207 s, refuting 46.2 alone 125 s.) Each refuted threshold is a bound
over all placements; the parent's phases see it through :class:`BesideHooks` (reported as the run's bound,
and stopping the phase once it settles the gap).

>>> from viz_place.testing import random_instance
>>> from viz_place.cost import compile_problem, simple_lower_bound, evaluate_indices
>>> from viz_place.solvers import run_solver
>>> from viz_place.solvers.groups import allowed_devices
>>> inst = random_instance(13)
>>> prob = compile_problem(inst.graph, inst.cluster)
>>> floor = simple_lower_bound(inst.graph, inst.cluster)[0]
>>> dev = prob.to_index_array(run_solver("local-search", inst.graph, inst.cluster, pins=inst.pins))
>>> value = evaluate_indices(prob, dev).max_load
>>> w = SetBoundWorker(prob, allowed_devices(prob, inst.pins), floor=floor, value=value, gap=0.05,
...                    starts=[dev], seconds=20)
>>> w.wait(20), floor, round(w.bound, 4), value      # 18 / 17.1429 - 1 = 5 %: settled
(True, 9.0, 17.1429, 18.0)
>>> w.stop()
"""
from __future__ import annotations

import multiprocessing
import os
import queue
import time
from typing import Sequence

import numpy as np

from ..base import Hooks
from .backends import OPTIMALITY_TOL, progress_data

#: A threshold is abandoned for a lower one when a better placement lowers the aim by more than this share.
RETARGET = 1e-3
#: Seconds between reads of the worker's messages by the phases' hooks.
POLL_EVERY = 0.05


def second_core() -> bool:
    """Whether this process may run on at least two cores (the worker would otherwise slow the integer
    program down as much as it helps)."""
    try:
        return len(os.sched_getaffinity(0)) >= 2
    except AttributeError:      # pragma: no cover - platforms without affinity
        return (os.cpu_count() or 1) >= 2


def aim(value: float, lo: float, hi: float, gap: float) -> float:
    """The threshold to refute next, given the best value, the best refuted threshold ``lo`` and the lowest
    one at which the relaxation fits, ``hi`` (``inf``: none yet). With a gap, ``value / (1 + gap)``: the one
    that settles it (the thresholds in between cost nearly as much each and settle nothing); without,
    halfway from ``lo`` to ``min(value, hi)`` (the gap halves with each).

    >>> round(aim(47.0, 45.0, np.inf, 0.01), 4), aim(50.0, 40.0, np.inf, 0.0), aim(50.0, 40.0, 44.0, 0.0)
    (46.5347, 45.0, 42.0)
    """
    return value / (1 + gap) if gap > 0 else (lo + min(value, hi)) / 2


def _work(prob, allowed, floor: float, gap: float, starts, seconds: float, best, out) -> None:
    """The worker process: refute thresholds (see :func:`aim`; while the aim is above one at which the
    relaxation fits, halfway up to that one) until ``seconds`` have passed, abandoning a threshold when the
    aim drops by ``RETARGET``; every refuted threshold, and why it stopped, goes to ``out``; ``best`` holds
    the parent's best value."""
    from .set_bound import MasterFailed, column_generation_start, refute
    deadline = time.perf_counter() + seconds
    try:
        types, sources, exact, pool = column_generation_start(prob, allowed, starts)
        lo, hi = float(floor), np.inf
        while time.perf_counter() < deadline - 0.5:
            target = aim(best.value, lo, hi, gap)
            T = target if target < hi else (lo + hi) / 2      # the aim cannot be proven: something lower meanwhile
            if target <= lo * (1 + 1e-9):          # the gap is settled (and stays so: the value only falls)
                out.put(("done", lo, f"set-partitioning bound: {lo:.6g} settles the gap"))
                return
            if T <= lo * (1 + 1e-6):       # nothing left to prove: the value (gap 0) or the relaxation is at lo
                why = f"its relaxation fits within {hi:.6g}: it cannot prove more" if hi < best.value else \
                    f"{lo:.6g} settles the gap"
                out.put(("done", lo, f"set-partitioning bound: {why}"))
                return
            r = refute(types, sources, T, pricers=exact, exact=exact, columns=pool, deadline=deadline,
                       cancelled=lambda: aim(best.value, lo, hi, gap) < target * (1 - RETARGET))
            pool = r.pool
            if r.refuted:
                lo = T
                out.put(("bound", T, f"set-partitioning bound: nothing fits within {T:.6g} (proven, "
                                     f"{r.iterations} rounds, {r.columns} columns, {r.seconds:.1f} s)"))
            elif r.lp_value <= 1e-9:
                hi = T
                out.put(("fits", lo, f"set-partitioning bound: its relaxation fits within {T:.6g} (no proof "
                                     "there: lower thresholds next)"))
        out.put(("done", lo, "set-partitioning bound: time is up"))
    except MasterFailed as err:
        out.put(("done", float(floor), f"set-partitioning bound skipped: {err}"))
    except Exception as err:   # pragma: no cover - reported to the parent, which carries on without it
        out.put(("done", float(floor), f"set-partitioning bound failed: {type(err).__name__}: {err}"))


class SetBoundWorker:
    """The set-partitioning bound in a process of its own (see the module's docstring). ``bound`` is the
    best threshold it has refuted so far (``floor`` before any); :meth:`offer` hands it a better value,
    :meth:`poll` collects what it proved, :meth:`stop` ends it (always call it: ``try``/``finally``)."""

    def __init__(self, prob, allowed: Sequence[Sequence[int]], *, floor: float, value: float, gap: float,
                 starts: Sequence[np.ndarray], seconds: float) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.floor = self.bound = float(floor)
        self.value = float(value)
        self.messages: list[tuple[float, str]] = []
        self.finished = self._stopped = False
        self._best = ctx.Value("d", float(value), lock=False)
        self._out = ctx.Queue()
        self._proc = ctx.Process(target=_work, name="viz-place set bound", daemon=True,
                                 args=(prob, [list(a) for a in allowed], float(floor), float(gap),
                                       [np.asarray(d) for d in starts], float(seconds), self._best, self._out))
        self._proc.start()

    def offer(self, value: float | None) -> None:
        """A placement of this value exists (the worker aims below it from its next check on)."""
        if value is not None and np.isfinite(value) and value < self.value:
            self.value = float(value)
            self._best.value = self.value

    def poll(self) -> list[tuple[float, str]]:
        """What the worker proved or said since the last poll, as ``(bound, message)``; raises ``bound``."""
        got = []
        while True:
            try:
                kind, bound, message = self._out.get_nowait()
            except (queue.Empty, OSError, ValueError):
                break
            self.finished = self.finished or kind == "done"
            self.bound = max(self.bound, float(bound))
            got.append((float(bound), message))
        if not got and not self.finished and not self._stopped and not self._proc.is_alive():
            self.finished = True              # it died without a word (killed, out of memory): nothing to wait for
            got.append((self.bound, f"set-partitioning bound: its process ended (exit code {self._proc.exitcode})"))
        self.messages += got
        return got

    def settles(self, gap: float) -> bool:
        """Whether the bound proven so far puts the best value within ``gap`` (value / bound - 1)."""
        return self.bound > 0 and self.value / self.bound - 1 <= gap + 1e-12

    def wait(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for the worker to finish by itself; ``True`` if it did."""
        end = time.perf_counter() + seconds
        while not self.finished and time.perf_counter() < end:
            self.poll()
            time.sleep(0.05)
        return self.finished

    def stop(self) -> None:
        """End the worker (what it proved so far stays in ``bound``); calling it again does nothing."""
        if self._stopped:
            return
        self._stopped = True
        self.poll()
        if self._proc.is_alive():
            self._proc.terminate()
        self._proc.join(5)
        self.poll()
        self._out.close()
        self._out.join_thread()


class BesideHooks(Hooks):
    """The hooks of the phases that run beside a :class:`SetBoundWorker`: each incumbent they report goes
    to the worker, each bound they report is the best of theirs and the worker's, what the worker proves
    is reported as it arrives, and they count as cancelled once the worker's bound settles ``gap`` (the
    caller tells that apart from a real cancel by ``outer.cancelled``)."""

    def __init__(self, outer: Hooks, worker: SetBoundWorker, gap: float) -> None:
        super().__init__(outer.progress_fn, outer.cancel_fn, min_interval=outer._min_interval)
        self.started = outer.started
        self.worker, self.gap = worker, float(gap)
        self._next_poll = 0.0

    def _collect(self) -> None:
        now = time.perf_counter()
        if now < self._next_poll:          # HiGHS asks on every callback: the queue is read every POLL_EVERY s
            return
        self._next_poll = now + POLL_EVERY
        for _, message in self.worker.poll():
            w = self.worker
            super().report(0.0, message, force=True, bound=w.bound, incumbent=w.value,
                           data=progress_data(self.elapsed, w.value, w.bound))

    @property
    def cancelled(self) -> bool:
        self._collect()
        return bool(self._cancel()) or self.worker.settles(self.gap)

    def report(self, fraction: float | None = None, message: str = "", *, force: bool = False, **kw) -> None:
        w = self.worker
        w.offer(kw.get("incumbent"))
        self._collect()
        if w.bound > w.floor and (kw.get("bound") is None or kw["bound"] < w.bound):   # the best bound proven
            kw["bound"] = w.bound
            if "data" in kw:
                kw["data"] = progress_data(kw["data"].get("seconds", self.elapsed), kw.get("incumbent"), w.bound)
            message = f"{message}; bound {w.bound:.6g} (set-partitioning bound)" if message else message
        super().report(fraction, message, force=force, **kw)


def start_beside(problem, allowed, opts, hooks: Hooks, *, floor: float, warm: np.ndarray,
                 deadline: float) -> tuple[SetBoundWorker | None, Hooks]:
    """``ilp-noncontig``'s set bound started beside its integer program, from the warm start ``warm``:
    the worker (``None`` if it could not start, said in the progress) and the hooks for the phases."""
    try:
        worker = SetBoundWorker(problem.compiled, allowed, floor=floor, value=problem.value(warm), gap=opts.gap,
                                starts=[warm], seconds=max(0.0, deadline - time.perf_counter() - 0.5))
    except (OSError, RuntimeError) as err:      # no process to be had: the run goes on without the bound
        hooks.report(0.0, f"set-partitioning bound not started: {err}", force=True)
        return None, hooks
    hooks.report(0.0, "set-partitioning bound: running in a process of its own, beside the integer program",
                 force=True)
    return worker, BesideHooks(hooks, worker, max(opts.gap, OPTIMALITY_TOL))


def finish_beside(worker: SetBoundWorker | None, res, hooks: Hooks, value: float | None, *, gap: float,
                  deadline: float) -> str:
    """End the worker — when the other phases ended early with the gap still open, only after it has ended by
    itself or ``deadline`` (its proofs may still settle the gap), or a cancel — and raise the integer
    program's ``res.bound`` to what it proved (capped at ``value``, the best placement's); name why HiGHS
    stopped when the worker's bound stopped it. The note for the result's message (empty when it proved
    nothing more)."""
    if worker is None:
        return ""
    worker.offer(value)
    if res is not None and value is not None:
        own = res.bound if res.bound is not None and np.isfinite(res.bound) else 0.0
        while not (worker.finished or hooks.cancelled or time.perf_counter() >= deadline or
                   worker.settles(gap) or (own > 0 and value / own - 1 <= gap + 1e-12)):
            if worker.poll():
                hooks.report(None, worker.messages[-1][1], force=True, bound=max(own, worker.bound),
                             incumbent=value)
            time.sleep(0.05)
    worker.stop()
    if res is None:
        return ""
    if res.stopped_by == "cancel" and not hooks.cancelled:
        res.stopped_by = "stopped (the set-partitioning bound settled the gap)"
    lo = res.bound if res.bound is not None and np.isfinite(res.bound) else -np.inf
    if worker.bound <= lo * (1 + 1e-12) or value is None:
        return ""
    res.bound = min(worker.bound, value)
    return (f"bound {res.bound:.6g} proven by the set-partitioning bound (column generation, exact pricing, "
            f"in a process beside the integer program), above the integer program's {lo:.6g}")
