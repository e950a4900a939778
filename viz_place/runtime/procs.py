"""Stage processes that are always torn down: spawned, watched, terminated, killed, joined.

Each stage runs in a *spawned* process. Children report on one queue as
``(kind, stage, payload)`` with kind ``"ready"``, ``"result"`` or ``"error"``; the parent
waits with :meth:`StageGroup.collect`, which notices a child that died (naming the stage,
its device, pid and exit code or signal), a cancel event and a time limit. Leaving the
``with`` block terminates every child still alive (SIGTERM, then SIGKILL) and joins it,
so no process is left behind whatever happened. A child exits by itself when its parent
goes away (a watchdog thread polls the parent pid).
"""
from __future__ import annotations

import os
import queue as queue_mod
import signal
import threading
import time
import warnings
from typing import Any, Callable, Sequence

from .errors import PipelineRunError

# torch's own pytree unpickling in every spawned stage (the split's TreeSpec) warns about its own
# deprecated LeafSpec check; nothing a user can act on, printed once per process and stage
warnings.filterwarnings("ignore", message=r".*isinstance\(treespec, LeafSpec\)", category=FutureWarning)


class RunCancelled(Exception):
    """The caller's cancel event fired while the stages ran."""


def start_watchdog(parent_pid: int) -> None:
    """In a child: exit at once if the parent process goes away."""
    def watch() -> None:
        while True:
            if os.getppid() != parent_pid:
                os._exit(3)
            time.sleep(0.5)
    threading.Thread(target=watch, daemon=True).start()


def _death(exitcode: int | None) -> str:
    if exitcode is None:
        return "is not running"
    if exitcode < 0:
        try:
            return f"was killed by signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"was killed by signal {-exitcode}"
    return f"exited with code {exitcode}"


class StageGroup:
    """One spawned process per stage (see the module docstring)."""

    def __init__(self, ctx, target: Callable, args_per_stage: Sequence[tuple], devices: Sequence[str], *,
                 queue=None, label: str = "stage") -> None:
        self.ctx, self.devices, self.label = ctx, list(devices), label
        self.queue = queue if queue is not None else ctx.Queue()
        self.procs = [ctx.Process(target=target, args=a, name=f"viz-place-{label}-{i}", daemon=True)
                      for i, a in enumerate(args_per_stage)]
        self.finished: set[int] = set()
        self.seen: dict[tuple[str, int], Any] = {}  # messages that arrived before they were asked for

    def __enter__(self) -> "StageGroup":
        for p in self.procs:
            p.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def pids(self) -> list[int | None]:
        return [p.pid for p in self.procs]

    def name(self, i: int) -> str:
        return f"{self.label} {i} ({self.devices[i]}, pid {self.procs[i].pid})"

    def collect(self, kind: str, stages: Sequence[int], *, timeout: float, cancel=None) -> dict[int, Any]:
        """Wait for one ``kind`` message from each of ``stages``; payloads by stage."""
        got: dict[int, Any] = {i: self.seen.pop((kind, i)) for i in stages if (kind, i) in self.seen}
        deadline = time.monotonic() + timeout
        grace: dict[int, float] = {}  # a dead child's last messages may still be in the pipe
        while len(got) < len(stages):
            if cancel is not None and cancel.is_set():  # checked first: a busy queue must not hide it
                raise RunCancelled("cancelled")
            try:
                msg_kind, stage, payload = self.queue.get(timeout=0.05)
            except queue_mod.Empty:
                msg_kind = None
            if msg_kind == "error":
                raise PipelineRunError(f"{self.name(stage)} failed: {payload}", stage=stage,
                                       device=self.devices[stage])
            if msg_kind == "exit":
                self.finished.add(stage)
            if msg_kind == kind and stage not in got:
                got[stage] = payload
            elif msg_kind is not None:
                self.seen[(msg_kind, stage)] = payload
            if msg_kind is not None:
                continue
            now = time.monotonic()
            for i, p in enumerate(self.procs):
                dead = not p.is_alive()
                if dead and ((i in stages and i not in got) or (i not in self.finished and p.exitcode != 0)):
                    if now < grace.setdefault(i, now + 0.5):
                        continue
                    p.join(0.1)
                    what = f" before it reported {kind!r}" if i in stages and i not in got else ""
                    raise PipelineRunError(f"{self.name(i)} {_death(p.exitcode)}{what}", stage=i,
                                           device=self.devices[i])
            if now > deadline:
                late = [i for i in stages if i not in got]
                raise PipelineRunError(f"{', '.join(self.name(i) for i in late)}: no {kind!r} within "
                                       f"{timeout:.0f} s", stage=late[0], device=self.devices[late[0]])
        return got

    def timed_streams(self, repeats: int, *, timeout: float, cancel=None) -> list[list[Any]]:
        """Collect one ``"result"`` per stage for a warm-up stream and ``repeats`` timed ones;
        per stage, the timed streams' payloads (the warm-up's are dropped)."""
        stats: list[list[Any]] = [[] for _ in self.procs]
        for rep in range(repeats + 1):
            got = self.collect("result", range(len(self.procs)), timeout=timeout, cancel=cancel)
            if rep:
                for s, payload in got.items():
                    stats[s].append(payload)
        return stats

    def close(self) -> None:
        for p in self.procs:
            if p.is_alive():
                p.terminate()
        deadline = time.monotonic() + 3.0
        for p in self.procs:
            p.join(max(0.0, deadline - time.monotonic()))
        for p in self.procs:
            if p.is_alive():
                p.kill()
                p.join(5.0)
        for p in self.procs:
            if p.pid is not None:
                p.close() if p.exitcode is not None else None
        self.queue.close()
        self.queue.join_thread()
