"""A real Dask cluster for tests: ``dask scheduler`` and ``dask worker`` processes on 127.0.0.1.

Ports are chosen by the processes themselves (``--port 0``; the address is read from
``--scheduler-file``), so two test runs never collide. Each process runs in its own
session so a worker (nanny and its child) can be killed as a whole; :meth:`close` kills
everything that is left and waits for it.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

DASK = str(Path(sys.executable).with_name("dask"))
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


class LoopbackCluster:
    def __init__(self, folder: Path, n_workers: int = 2, timeout: float = 60.0) -> None:
        self.folder = Path(folder)
        self.procs: dict[str, subprocess.Popen] = {}
        self.logs = []
        sched_file = self.folder / "scheduler.json"
        try:
            self._start("scheduler", [DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                      "--scheduler-file", str(sched_file)])
            deadline = time.monotonic() + timeout
            while not sched_file.exists() or not sched_file.read_text().strip():
                self._check_alive("scheduler", deadline)
                time.sleep(0.1)
            self.address = json.loads(sched_file.read_text())["address"]
            for i in range(n_workers):
                self.start_worker(f"w{i}")
            self.wait_for_workers(n_workers, deadline)
        except BaseException:
            self.close()
            raise

    def _start(self, name: str, cmd: list[str]) -> None:
        log = open(self.folder / f"{name}.log", "w")
        self.logs.append(log)
        self.procs[name] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=ENV, cwd=self.folder,
                                            start_new_session=True)

    def _check_alive(self, name: str, deadline: float) -> None:
        if self.procs[name].poll() is not None:
            raise RuntimeError(f"{name} exited: {(self.folder / f'{name}.log').read_text()[-2000:]}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{name} did not start in time")

    def start_worker(self, name: str) -> None:
        self._start(name, [DASK, "worker", self.address, "--nthreads", "1", "--nworkers", "1", "--name", name,
                           "--host", "127.0.0.1", "--no-dashboard", "--local-directory", str(self.folder / name)])

    def workers(self) -> list[str]:
        from distributed import Client
        with Client(self.address, timeout=10, set_as_default=False) as c:
            return sorted(str(w["name"]) for w in c.scheduler_info(n_workers=-1)["workers"].values())

    def wait_for_workers(self, n: int, deadline: float) -> None:
        while len(self.workers()) < n:
            for name in self.procs:
                self._check_alive(name, deadline)
            time.sleep(0.2)

    def kill(self, name: str) -> None:
        """SIGKILL a process and its children (a worker's nanny and the worker it runs), sparing
        multiprocessing's resource tracker: it sees its parent die and unlinks the semaphores the
        nanny made (killing it too leaves them in /dev/shm for good)."""
        p = self.procs.pop(name)
        group = _process_group(p.pid)
        trackers = [pid for pid in group if _is_resource_tracker(pid)]
        for pid in group:
            if pid not in trackers:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        p.wait(10)
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in trackers) and time.monotonic() < deadline:
            time.sleep(0.05)
        try:   # anything left of the group (a tracker that did not finish in time)
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def close(self) -> None:
        for name in [n for n in self.procs if n != "scheduler"] + ["scheduler"]:
            p = self.procs.pop(name, None)
            if p is None:
                continue
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(5)
            except ProcessLookupError:
                pass
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(5)
        for log in self.logs:
            log.close()


def _process_group(pgid: int) -> list[int]:
    """The pids whose process group is ``pgid`` (from /proc/PID/stat)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()   # after "pid (comm) ": state ppid pgrp ...
        if int(fields[2]) == pgid:
            pids.append(int(entry))
    return pids


def _is_resource_tracker(pid: int) -> bool:
    try:
        return b"resource_tracker" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return state[state.rindex(")") + 2] != "Z"
