"""The CBC back-end of :func:`~viz_place.solvers.milp.backends.solve_milp`: the binary PuLP ships, as a child process.

CBC writes its log to a pseudo-terminal, read line by line for progress; the
time limit and cancel send ``SIGINT`` (CBC then stops and still writes its best
solution), and a CBC that does not react is killed. A search that CBC restarted
after reduced-cost fixing (log line :data:`CBC_RESTART`) proves nothing here:
CBC 2.10.3 can cut off better solutions there, so the run is repeated with
``-strategy 0`` (which never restarts) for the time left.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import threading
import time
from typing import Mapping

import pulp

from ..base import Hooks
from .backends import GRACE_SECONDS, MilpResult, _cbc_command, _num, _report

#: Seconds of the time limit CBC is not told about (at most a fifth of it): CBC checks its limit
#: only between phases, so it gets a head start on noticing it.
CBC_RESERVE = 1.0

#: CBC's log line when it restarts branch and bound on a model reduced by reduced-cost fixing. With
#: CBC 2.10.3 (the binary PuLP ships) that restarted search can close with a bound above a known
#: solution, i.e. cut off better ones (``../shared/repro/cbc-false-optimal-s150``: "optimal" at 43.5,
#: while 42.5 exists); such a proof is not trusted.
CBC_RESTART = "Cbc0044I"

#: Seconds CBC gets to obey SIGINT (it only checks between phases) before it is killed: after the time
#: limit (so a run ends within limit + 2 s; a killed CBC loses its incumbent, the caller keeps its warm
#: start), and after a cancel.
KILL_AFTER = 1.0

#: CBC gets SIGINT this much before the limit (at most a tenth of it), so that a CBC deaf to it is
#: killed soon after the limit.
SIGINT_EARLY = 0.5
KILL_AFTER_CANCEL = 4.0

_RE_SOLUTION = re.compile(r"(?:Integer solution of|MIPStart provided solution with cost) (\S+)")
_RE_PROGRESS = re.compile(r"best solution (\S+), best possible (\S+)")
_RE_BOUND = re.compile(r"^Lower bound:\s+(\S+)")
_RE_OBJ = re.compile(r"^Objective value:\s+(\S+)")
_RE_CONT_OBJ = re.compile(r"Continuous objective value is (\S+)")


def solve_cbc(lp, time_limit, gap, warm_start, hooks: Hooks, threads: int) -> MilpResult:
    """Run CBC; if it restarted its search (see :data:`CBC_RESTART`), do not trust its proof: re-solve
    with ``-strategy 0`` (which never restarts) for the time left, from the best solution so far."""
    t0 = time.perf_counter()
    res, restart_bound = _run_cbc(lp, time_limit, gap, warm_start, hooks, threads, ())
    if restart_bound is None:
        return res
    note = (f"CBC restarted its search after reduced-cost fixing (its proofs after such a restart are not "
            f"trusted: CBC 2.10 can cut off better solutions there); bound {_fmt(restart_bound[0])} kept "
            f"from before the restart")
    res.bound = restart_bound[0]
    left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
    if res.stopped_by == "cancel" or hooks.cancelled or (left is not None and left < 0.5):
        res.stopped_by = "cancel" if (res.stopped_by == "cancel" or hooks.cancelled) else "time limit"
        res.note = note
        return res
    start = dict(warm_start or {})
    if res.has_solution:
        start = {v.name: res.values.get(v.name, 0.0) for v in lp.variables() if v.cat == pulp.LpInteger}
    again, restart2 = _run_cbc(lp, left, gap, start or None, hooks, threads, ("-strategy", "0"))
    note += "; re-solved with -strategy 0"
    if restart2 is not None:      # not expected: strategy 0 never restarts
        again.bound = restart2[0]
        again.stopped_by = again.stopped_by or "time limit"
    best = again if again.has_solution and (not res.has_solution or again.objective <= res.objective) else res
    best.bound = max(b for b in (res.bound, again.bound) if b is not None) if (
        res.bound is not None or again.bound is not None) else None
    best.stopped_by = again.stopped_by
    best.message = again.message
    best.note = note
    return best


def _fmt(v) -> str:
    return "unknown" if v is None else f"{v:.6g}"


def _run_cbc(lp, time_limit, gap, warm_start, hooks: Hooks, threads: int, extra: tuple) -> tuple[MilpResult, tuple | None]:
    """One CBC run: ``(result, None)``, or ``(result, (bound before the restart,))`` when CBC restarted."""
    t_enter = time.perf_counter()      # writing the model counts against the time limit
    cmd = _cbc_command()
    with tempfile.TemporaryDirectory(prefix="viz_place_cbc_") as tmp:
        mps, sol, mst = (os.path.join(tmp, f) for f in ("model.mps", "model.sol", "start.mst"))
        vs, var_names, con_names, _ = lp.writeMPS(mps, rename=1)
        if time_limit is not None and time.perf_counter() - t_enter > time_limit:
            return MilpResult("no solution", "cbc", stopped_by="time limit",
                              message="the time limit ran out while writing the model for CBC"), None
        args = [cmd.path, mps]
        if warm_start:
            with open(mst, "w") as f:
                f.write("Stopped on time - objective value 0\n")
                for i, (orig, short) in enumerate(var_names.items()):
                    if orig in warm_start:
                        f.write(f"{i:>7} {short} {float(warm_start[orig]):>15} {0:>23}\n")
            args += ["-mips", mst]
        if time_limit is not None:
            # CBC notices its own limit only between phases: ask for less, leaving it time to react
            left = float(time_limit) - (time.perf_counter() - t_enter)
            left = max(0.05, left - min(CBC_RESERVE, 0.2 * left))
            args += ["-sec", f"{left:.3f}", "-timeMode", "elapsed"]
        args += ["-ratio", repr(float(gap)), "-allow", "1e-9", "-threads", str(int(threads)), *extra,
                 "-solve", "-printingOptions", "all", "-solution", sol]
        proc, out_fd = _start(args)
        lines: list[str] = []
        reader = threading.Thread(target=_pump, args=(out_fd, lines), daemon=True)
        reader.start()
        t0 = time.perf_counter()
        seen = 0
        incumbent = bound = None
        restart: tuple | None = None
        stopped_by = None
        interrupted_at = last_signal = None
        while proc.poll() is None:
            try:             # a tick of 50 ms for progress and limits, cut short when CBC ends
                proc.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                pass
            while seen < len(lines):
                if restart is None and CBC_RESTART in lines[seen]:
                    restart = (bound,)
                incumbent, bound = _parse_progress(lines[seen], incumbent, bound, hooks, t0, time_limit)
                seen += 1
            elapsed = time.perf_counter() - t_enter
            if interrupted_at is None:
                if hooks.cancelled:
                    stopped_by = "cancel"
                elif time_limit is not None and elapsed > time_limit + GRACE_SECONDS - min(SIGINT_EARLY, 0.1 * time_limit):
                    stopped_by = "time limit"
                if stopped_by:
                    proc.send_signal(signal.SIGINT)
                    interrupted_at = last_signal = elapsed
            elif elapsed - interrupted_at > (KILL_AFTER_CANCEL if stopped_by == "cancel" else KILL_AFTER):
                proc.kill()        # last resort (CBC's incumbent is lost; the caller keeps its warm start)
            elif elapsed - last_signal > 1.0:
                # CBC ignores a SIGINT that arrives before it installs its handler: repeat it
                proc.send_signal(signal.SIGINT)
                last_signal = elapsed
        reader.join(timeout=2.0)
        while seen < len(lines):
            if restart is None and CBC_RESTART in lines[seen]:
                restart = (bound,)
            incumbent, bound = _parse_progress(lines[seen], incumbent, bound, hooks, t0, time_limit)
            seen += 1
        log = "".join(lines)
        result_line = next((ln for ln in reversed(lines) if ln.startswith("Result - ")), "")
        if stopped_by is None:
            if "time limit" in result_line.lower() or "Stopped on time" in result_line:
                stopped_by = "time limit"
            elif "ctrl-c" in result_line.lower():
                stopped_by = "cancel"
        final_obj = final_bound = None
        for ln in lines:
            m = _RE_BOUND.match(ln)
            if m:
                final_bound = _num(m.group(1))
            m = _RE_OBJ.match(ln)
            if m:
                final_obj = _num(m.group(1))
        if not os.path.exists(sol):
            if "infeasible" in result_line.lower():
                return MilpResult("infeasible", "cbc", message=result_line.strip()), restart
            return MilpResult("no solution" if stopped_by else "error", "cbc", stopped_by=stopped_by,
                              bound=bound, message=(result_line or log[-500:]).strip()), restart
        status, values, _, _, _, sol_status = cmd.readsol_MPS(sol, lp, vs, var_names, con_names)
    if status == pulp.LpStatusInfeasible and sol_status != pulp.LpSolutionIntegerFeasible:
        return MilpResult("infeasible", "cbc", message=result_line.strip() or "CBC: problem is infeasible"), restart
    if status == pulp.LpStatusUnbounded:
        return MilpResult("unbounded", "cbc", message=result_line.strip()), restart
    has = sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible) or (
        status == pulp.LpStatusOptimal)
    if not has:
        return MilpResult("no solution", "cbc", stopped_by=stopped_by, bound=bound,
                          message=result_line.strip() or "CBC stopped without a solution"), restart
    objective = _objective_of(lp, values)
    proven = status == pulp.LpStatusOptimal and sol_status == pulp.LpSolutionOptimal and stopped_by is None
    if proven and "gap" not in result_line.lower():
        best_bound = objective
    else:
        best_bound = final_bound if final_bound is not None else bound
        if best_bound is None and proven:
            best_bound = objective
        if stopped_by is None and proven:
            stopped_by = "gap"
    return MilpResult("feasible", "cbc", values=values, objective=objective, bound=best_bound,
                      stopped_by=stopped_by, message=result_line.strip()), restart


def _start(args):
    """Start CBC with its output on a pseudo-terminal (so it is line-buffered and progress arrives live);
    a plain pipe where no pty exists. Returns (process, file descriptor to read)."""
    try:
        import pty
        master, slave = pty.openpty()
    except (ImportError, OSError):
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        return proc, os.dup(proc.stdout.fileno())
    try:
        proc = subprocess.Popen(args, stdout=slave, stderr=slave, stdin=subprocess.DEVNULL, close_fds=True)
    finally:
        os.close(slave)
    return proc, master


def _pump(fd: int, lines: list[str]) -> None:
    buf = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:      # EIO: the pty's other side closed
            chunk = b""
        if not chunk:
            break
        buf += chunk
        *done, buf = buf.split(b"\n")
        lines.extend(d.decode("utf-8", "replace").rstrip("\r") + "\n" for d in done)
    if buf:
        lines.append(buf.decode("utf-8", "replace"))
    os.close(fd)


def _parse_progress(line: str, incumbent, bound, hooks: Hooks, t0: float, time_limit):
    changed = new_incumbent = False
    m = _RE_SOLUTION.search(line)
    if m:
        v = _num(m.group(1))
        if v is not None and (incumbent is None or v < incumbent):
            incumbent, changed, new_incumbent = v, True, True
    m = _RE_PROGRESS.search(line)
    if m:
        b = _num(m.group(2))
        if b is not None and (bound is None or b > bound):
            bound, changed = b, True
    m = _RE_CONT_OBJ.search(line)
    if m and bound is None:
        bound = _num(m.group(1))
        changed = bound is not None
    if changed:
        _report(hooks, t0, time_limit, incumbent, bound, force=new_incumbent)
    return incumbent, bound


def _objective_of(lp, values: Mapping[str, float]) -> float:
    obj = lp.objective
    return float(sum(c * values.get(v.name, 0.0) for v, c in obj.items()) + (obj.constant or 0.0))
