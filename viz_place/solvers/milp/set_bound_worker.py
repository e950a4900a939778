"""The set-partitioning bound on a second core, beside ``ilp-noncontig``'s integer program.

Run after the integer program (:func:`.set_bound.raise_bound_by_set_partition`), the set bound takes its
time from it. On a machine with a second core it can instead run for the whole run in a process of its
own (:class:`SetBoundWorker`, started with ``spawn``: nothing of the parent's threads or HiGHS state is
inherited): the parent hands it every better placement's value and every bound its integer program
proves, and it refutes the threshold that would settle the requested gap, ``value / (1 + gap)``
(:func:`aim`), abandoning it for a lower one when a better placement lowers the aim by ``RETARGET``, and
otherwise *holding* it to the end of its time. Without a gap each threshold halves the current gap; where
the aim cannot be proven — its relaxation fits, or (without a gap) it *resists*: neither refuted nor fitting
after :data:`RESIST_SHARE` of the time — it proves lower thresholds meanwhile, each halfway from the best
bound proven (its own or the integer program's) up to the lowest such threshold. A threshold's prices are
also tried on lower thresholds (:func:`.set_bound.certified_threshold`), during its column generation
(:data:`PROBE_EVERY`, in at most :data:`PROBE_SHARE` of the time) and when it stops short; the last
:data:`PROBE_RESERVE` of the time is kept for that. (On inception_100_s2_training, with the aim 63.372 of
a placement of 64.0058, a worker that left it after 43 s for lower thresholds ended at 63.03-63.22; held,
it was refuted after 165 s of column generation, the probes proving 63.20 meanwhile.)
(Refuting the thresholds on the way up costs about as much as refuting each alone:
on residual_75_s2_training, carrying the columns from 45.9 up to 46.2 took 207 s, refuting 46.2 alone
125 s; but on inception_100_s2_training the aims, value / 1.01 of placements of 64-65, are beyond the
relaxation's reach, which lies between 63.45 and 64.05, and a worker that only aimed proved nothing in
300 s.) Each refuted threshold is a bound over all placements; the parent's phases see it through
:class:`BesideHooks` (reported as the run's bound, and stopping the phase once it settles the gap). Where a
threshold's relaxation fits below the best value, and (without a gap) once per best value when the aim
resists in the first half of its time (:data:`DIVE_MIN_LEFT`), the worker dives in the relaxation for a better
placement (:mod:`.set_dive`; at most :data:`DIVE_MAX_SHARE` of its time each) and sends it to the parent, which
keeps it when the evaluator confirms its value (``placement``: the parent hands it to HiGHS and to the
subset search).

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
from typing import Callable, Sequence

import numpy as np

from ...cost.bounds import gap as gap_of
from ..base import Hooks
from .backends import OPTIMALITY_TOL, progress_data

#: A threshold is abandoned for a lower one when a better placement lowers the aim by more than this share. A
#: threshold held a little above the aim still settles the gap when refuted, and where its relaxation fits, the
#: dive there finds placements the subset search does not. On residual_120_s7_training, 0.1 % gave up each
#: threshold as the subset search crept down (76.78 to 76.37, none below) and 3 runs of 4 ended at 1.57-1.94 %;
#: with 0.5 % the worker held 76.0178, its relaxation fitted and the dive found 76.0126 (a traced run); the gap
#: was settled after 144-188 s in 4 runs of 4 (docs/proofs.md, "Eight more graphs, and thresholds held").
RETARGET = 5e-3
#: Seconds between reads of the worker's messages by the phases' hooks.
POLL_EVERY = 0.05
#: Without a gap: seconds the aim may resist before the worker dives once halfway from it to the best value,
#: and the share of the time left that this dive may take in all (its column generation, then the dive itself).
DIVE_AFTER, DIVE_SHARE = 20.0, 0.5
#: That dive is tried only while at least this share of the worker's time is left; later, the time goes to
#: refuting the aim (a placement found late leaves too little time to prove it; the subset search of the
#: integer program's process looks for better placements then).
DIVE_MIN_LEFT = 0.5
#: No dive takes more than this share of the worker's time (on inception_100_s2_training a dive above the
#: best value took 114 s of 250 and found nothing; the ones that found a placement took 14 s).
DIVE_MAX_SHARE = 0.15
#: A threshold neither refuted nor fitting after this share of the worker's time (at least
#: ``RESIST_MIN_S`` seconds) *resists*: until the aim drops below it, the worker refutes lower thresholds,
#: halfway from the best bound proven (its own or the integer program's) up to it, so that its time still
#: raises the bound where the aim is beyond its relaxation's reach. Not the aim of a requested gap: that one
#: is held (its refutation may take most of the run: 165 s on inception_100_s2_training), the probes of its
#: prices proving lower thresholds meanwhile.
RESIST_SHARE, RESIST_MIN_S = 0.15, 10.0
#: While column generation runs at a threshold, its best prices are tried on lower thresholds
#: (:func:`.set_bound.certified_threshold`) every ``PROBE_EVERY`` of the worker's time (at least
#: ``PROBE_MIN_S`` seconds); the last ``PROBE_RESERVE`` of it is kept for probing the prices the last
#: attempt leaves (before, a run's last attempt ended with the time and its prices went unused).
PROBE_EVERY, PROBE_MIN_S, PROBE_RESERVE = 0.1, 15.0, 0.03
#: Those probes during column generation take at most this share of the worker's time so far (each costs a
#: few exact pricings, 1-12 s in all on inception_100_s2_training: probing every 30 s took a fifth of the time
#: that column generation needed to refute the aim).
PROBE_SHARE = 0.1


def second_core() -> bool:
    """Whether this process may run on at least two cores (the worker would otherwise slow the integer
    program down as much as it helps)."""
    try:
        return len(os.sched_getaffinity(0)) >= 2
    except AttributeError:      # pragma: no cover - platforms without affinity
        return (os.cpu_count() or 1) >= 2


def aim(value: float, lo: float, hi: float, gap: float) -> float:
    """The threshold to refute next, given the best value, the best bound proven ``lo`` (the worker's or the
    integer program's) and the lowest threshold at which the relaxation fits, ``hi`` (``inf``: none yet).
    With a gap, ``value / (1 + gap)``: the one that settles it (the thresholds in between cost nearly as much
    each and settle nothing); without, halfway from ``lo`` to ``min(value, hi)`` (the gap halves with each).
    (Halfway from the worker's own bound, as before, ended a run without a gap early: once the integer
    program proved more than that halfway point, the worker took it for a settled gap.)

    >>> round(aim(47.0, 45.0, np.inf, 0.01), 4), aim(50.0, 40.0, np.inf, 0.0), aim(50.0, 40.0, 44.0, 0.0)
    (46.5347, 45.0, 42.0)
    """
    return value / (1 + gap) if gap > 0 else (lo + min(value, hi)) / 2


def _work(prob, allowed, floor: float, gap: float, starts, seconds: float, best, out, proven=None) -> None:
    """The worker process: refute thresholds (see :func:`aim`; while the aim is above one at which the
    relaxation fits or one that resisted, halfway up to the lower of those from the best bound proven)
    until ``seconds`` have passed, abandoning a threshold when the aim drops below it by ``RETARGET``. With a
    gap the aim is held until then; without, a threshold that resists (:data:`RESIST_SHARE`) is left for
    lower ones until the aim drops below it, and when the aim resists for ``DIVE_AFTER`` seconds the worker
    dives once halfway between it and the best value — only in the first half of ``seconds``
    (:data:`DIVE_MIN_LEFT`). Where the relaxation fits below the best value, it dives in it for a placement
    (:func:`.set_dive.dive`). Every refuted threshold, placement found and
    why it stopped go to ``out``; ``best`` holds the best value known (the parent's and its own),
    ``proven`` (optional) the best bound the parent's integer program has proven."""
    from .set_bound import MasterFailed, certified_threshold, column_generation_start, refute
    from .set_dive import dive
    deadline = time.perf_counter() + seconds
    dive_until = deadline - DIVE_MIN_LEFT * seconds     # halfway dives beside a resisting aim only before this
    resist = max(RESIST_MIN_S, RESIST_SHARE * seconds)
    dive_cap = DIVE_MAX_SHARE * seconds
    probe_every = max(PROBE_MIN_S, PROBE_EVERY * seconds)
    attempts_end = deadline - PROBE_RESERVE * seconds    # column generation stops here: time to probe

    def dive_end() -> float:
        return min(deadline, time.perf_counter() + dive_cap)
    try:
        types, sources, exact, pool = column_generation_start(prob, allowed, starts)
        lo, hi = float(floor), np.inf
        resisted = np.inf           # the lowest threshold that resisted (neither refuted nor fitting in time)
        dived_for = np.inf          # the best value for which a dive beside a resisting aim was tried
        centre = None               # the best certificate's prices so far: the next threshold starts from them

        def proven_base() -> float:
            """The best bound proven, the worker's own or the integer program's."""
            return max(lo, float(proven.value)) if proven is not None else lo

        def still_aimed(T: float) -> bool:
            """Whether ``T`` is still wanted: the aim has not dropped below it by ``RETARGET``."""
            return aim(best.value, proven_base(), hi, gap) >= T * (1 - RETARGET)

        last_probe = began = time.perf_counter()
        probing = 0.0               # seconds spent probing during column generation

        def probe(T: float, prices: np.ndarray, cert: float | None, how: str, *, during: bool = False) -> None:
            """Prove the highest threshold below ``T`` that ``prices`` (certificate ``cert`` at ``T``, when
            known) certify (a few exact pricings); ``during`` column generation, only every ``probe_every``
            seconds and while such probes have taken at most ``PROBE_SHARE`` of the time."""
            nonlocal lo, last_probe, probing
            now = time.perf_counter()
            if not still_aimed(T) or (during and (now - last_probe < probe_every or
                                                  probing > PROBE_SHARE * (now - began))):
                return
            last_probe = now
            below = proven_base()
            got = certified_threshold(types, exact, prices, below, T, deadline=min(deadline, now + dive_cap),
                                      at_hi=cert if cert is not None and np.isfinite(cert) else None)
            if during:
                probing += time.perf_counter() - now
            if got > below:
                lo = got
                out.put(("bound", got, f"set-partitioning bound: nothing fits within {got:.6g} (proven by the "
                                       f"prices of {how} of column generation at {T:.6g})"))

        def found(got, T: float, how: str) -> bool:
            if got is None or not got[1] < best.value * (1 - 1e-9):
                return False
            best.value = got[1]
            out.put(("placement", got[1], f"set-partitioning dive: a placement of {got[1]:.6g} ({how})", got[0]))
            return True

        while time.perf_counter() < attempts_end - 0.5:
            base = proven_base()
            target = aim(best.value, base, hi, gap)
            if resisted <= base * (1 + 1e-6):      # proven meanwhile (by the integer program): the aim again
                resisted = np.inf
            top = min(hi, resisted)
            T = target if target < top else (base + top) / 2    # the aim out of reach: something lower meanwhile
            if target <= base * (1 + 1e-9):          # the gap is settled (and stays so: the value only falls)
                out.put(("done", lo, f"set-partitioning bound: {base:.6g} settles the gap"))
                return
            if T <= base * (1 + 1e-6):     # nothing left to prove: the value (gap 0) or the relaxation is at lo
                why = f"its relaxation fits within {hi:.6g}: it cannot prove more" if hi < best.value else \
                    f"{base:.6g} settles the gap"
                out.put(("done", lo, f"set-partitioning bound: {why}"))
                return
            value = best.value
            held = gap > 0 and T == target      # the threshold that settles the gap: held to the end (probed)
            stall = not held and value < dived_for and T == target
            started = time.perf_counter()
            r = refute(types, sources, T, pricers=exact, exact=exact, columns=pool,
                       deadline=attempts_end if held else min(attempts_end,
                                                              started + (DIVE_AFTER if stall else resist)),
                       cancelled=lambda T=T: not still_aimed(T), centre=centre,
                       on_round=lambda pi, cert=None, T=T, t0=started: probe(
                           T, pi, cert, f"{time.perf_counter() - t0:.0f} s", during=True))
            pool, centre = r.pool, (r.centre if r.centre is not None else centre)
            if not r.refuted and r.lp_value > 1e-9 and r.centre is not None:
                # out of time at T: its best prices may still prove a lower threshold (a few pricings)
                probe(T, r.centre, r.certificate, f"{r.seconds:.0f} s")
            if r.refuted:
                lo = T
                out.put(("bound", T, f"set-partitioning bound: nothing fits within {T:.6g} (proven, "
                                     f"{r.iterations} rounds, {r.columns} columns, {r.seconds:.1f} s)"))
            elif r.lp_value <= 1e-9:
                if T < best.value and found(dive(prob, types, sources, T, pool=pool, first=r, deadline=dive_end(),
                                                 ceiling=best.value), T, f"its relaxation fits within {T:.6g}"):
                    continue
                hi = T
                out.put(("fits", lo, f"set-partitioning bound: its relaxation fits within {T:.6g} (no proof "
                                     "there: lower thresholds next)"))
            elif stall and best.value == value and time.perf_counter() >= dive_until:
                dived_for = value        # the aim resists late in the run: refute it, then lower ones
            elif stall and best.value == value and time.perf_counter() < deadline - 1:
                dived_for = value        # the aim resists: look for a better placement halfway to it, once
                Td = (T + value) / 2
                until = min(dive_end(), time.perf_counter() + DIVE_SHARE * (deadline - time.perf_counter()))
                rd = refute(types, sources, Td, pricers=exact, exact=exact, columns=pool, deadline=until)
                pool = rd.pool
                if rd.lp_value <= 1e-9:
                    found(dive(prob, types, sources, Td, pool=pool, first=rd, deadline=until, ceiling=value), Td,
                          f"{T:.6g} resisted for {DIVE_AFTER:g} s; its relaxation fits within {Td:.6g}")
            elif not stall and not held and time.perf_counter() - started >= resist - 1e-3 and still_aimed(T):
                resisted = T             # out of reach in the time given: lower thresholds until the aim drops
                out.put(("resists", lo, f"set-partitioning bound: {T:.6g} neither refuted nor fitting after "
                                        f"{resist:.0f} s: lower thresholds next"))
        out.put(("done", lo, "set-partitioning bound: time is up"))
    except MasterFailed as err:
        out.put(("done", float(floor), f"set-partitioning bound skipped: {err}"))
    except Exception as err:   # pragma: no cover - reported to the parent, which carries on without it
        out.put(("done", float(floor), f"set-partitioning bound failed: {type(err).__name__}: {err}"))


class SetBoundWorker:
    """The set-partitioning bound in a process of its own (see the module's docstring). ``bound`` is the
    best threshold it has refuted so far (``floor`` before any); ``placement`` the best placement its dives
    found that is better than every value offered, as ``(device index per node, value)`` (``None``: none);
    :meth:`offer` hands it a better value, :meth:`poll` collects what it proved and found, :meth:`stop` ends
    it (always call it: ``try``/``finally``). ``check(dev)``: the placement's value by the evaluator, or
    ``None`` when the evaluator rejects it (such a placement is dropped, and said so); default: taken as
    the worker values it."""

    def __init__(self, prob, allowed: Sequence[Sequence[int]], *, floor: float, value: float, gap: float,
                 starts: Sequence[np.ndarray], seconds: float,
                 check: Callable[[np.ndarray], float | None] | None = None) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.floor = self.bound = float(floor)
        self.value = float(value)
        self.placement: tuple[np.ndarray, float] | None = None
        self._check = check
        self.messages: list[tuple[float, str]] = []
        self.finished = self._stopped = False
        self._best = ctx.Value("d", float(value), lock=False)
        self._proven = ctx.Value("d", float(floor), lock=False)
        self._out = ctx.Queue()
        self._proc = ctx.Process(target=_work, name="viz-place set bound", daemon=True,
                                 args=(prob, [list(a) for a in allowed], float(floor), float(gap),
                                       [np.asarray(d) for d in starts], float(seconds), self._best, self._out,
                                       self._proven))
        self._proc.start()

    def offer(self, value: float | None) -> None:
        """A placement of this value exists (the worker aims below it from its next check on)."""
        if value is not None and np.isfinite(value) and value < self.value:
            self.value = float(value)
            self._best.value = self.value

    @property
    def proven(self) -> float:
        """The best bound the integer program has proven (as handed to :meth:`proven_elsewhere`)."""
        return float(self._proven.value)

    def proven_elsewhere(self, bound: float | None) -> None:
        """The integer program has proven ``bound`` (the worker's lower thresholds start above it)."""
        if bound is not None and np.isfinite(bound) and bound > self._proven.value:
            self._proven.value = float(bound)

    def poll(self) -> list[tuple[float, str]]:
        """What the worker proved or said since the last poll, as ``(bound, message)``; raises ``bound``."""
        got = []
        while True:
            try:
                kind, bound, message, *placement = self._out.get_nowait()
            except (queue.Empty, OSError, ValueError):
                break
            self.finished = self.finished or kind == "done"
            if kind == "placement":
                message = self._take(placement[0], float(bound), message)
                if message:
                    got.append((self.bound, message))
                continue
            self.bound = max(self.bound, float(bound))
            got.append((float(bound), message))
        if not got and not self.finished and not self._stopped and not self._proc.is_alive():
            self.finished = True              # it died without a word (killed, out of memory): nothing to wait for
            got.append((self.bound, f"set-partitioning bound: its process ended (exit code {self._proc.exitcode})"))
        self.messages += got
        return got

    def _take(self, dev: np.ndarray, value: float, message: str) -> str:
        """Keep a placement of the worker's when the evaluator confirms it and it beats every value known."""
        checked = self._check(dev) if self._check is not None else value
        if checked is None or abs(checked - value) > 1e-6 * max(1.0, abs(value)):
            return (f"set-partitioning dive: its placement of {value:.6g} was dropped (the evaluator "
                    + ("rejects it)" if checked is None else f"gives {checked:.6g})"))
        if not checked < self.value:
            return ""
        self.value, self.placement = float(checked), (np.asarray(dev, dtype=np.int64), float(checked))
        return message

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
            bound = max(w.bound, w.proven)        # the best proven, the integer program's or the worker's
            super().report(0.0, message, force=True, bound=bound, incumbent=w.value,
                           data=progress_data(self.elapsed, w.value, bound))

    @property
    def cancelled(self) -> bool:
        self._collect()
        return bool(self._cancel()) or self.worker.settles(self.gap)

    def report(self, fraction: float | None = None, message: str = "", *, force: bool = False, **kw) -> None:
        w = self.worker
        w.offer(kw.get("incumbent"))
        w.proven_elsewhere(kw.get("bound"))
        self._collect()
        better = []       # what the worker knows that beats the phase's report, said after the phase's message
        if w.bound > w.floor and (kw.get("bound") is None or kw["bound"] < w.bound):   # the best bound proven
            kw["bound"] = w.bound
            better.append(f"bound {w.bound:.6g} (set-partitioning bound)")
        if w.placement is not None and kw.get("incumbent") is not None and kw["incumbent"] > w.value:
            kw["incumbent"] = w.value          # the best placement known: the worker's dive
            better.append(f"best {w.value:.6g} (set-partitioning dive)")
        if better:
            # the phase's own gap (if its message gives one) is against its own figures: the run's follows them
            g = gap_of(kw.get("incumbent"), kw.get("bound"))
            if message:
                message = f"{message}; {', '.join(better)}" + (f", gap {100 * g:.3g}%" if g is not None else "")
            if "data" in kw:
                kw["data"] = progress_data(kw["data"].get("seconds", self.elapsed), kw.get("incumbent"),
                                           kw.get("bound"))
        super().report(fraction, message, force=force, **kw)


def start_beside(problem, allowed, opts, hooks: Hooks, *, floor: float, warm: np.ndarray,
                 deadline: float) -> tuple[SetBoundWorker | None, Hooks]:
    """``ilp-noncontig``'s set bound started beside its integer program, from the warm start ``warm``:
    the worker (``None`` if it could not start, said in the progress) and the hooks for the phases."""
    try:
        worker = SetBoundWorker(problem.compiled, allowed, floor=floor, value=problem.value(warm), gap=opts.gap,
                                starts=[warm], seconds=max(0.0, deadline - time.perf_counter() - 0.5),
                                check=lambda dev: problem.value(dev) if problem.evaluate(dev).feasible else None)
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
