"""The one place viz_place talks to Dask: an embedded ``LocalCluster`` (default) or an
existing scheduler by address, with one compute thread per worker.

Workers start with ``OMP_NUM_THREADS`` / ``MKL_NUM_THREADS`` / ``OPENBLAS_NUM_THREADS`` set to
1 (BLAS and OpenMP pools are fixed when a process starts, so it is the environment that
decides); tasks also set torch's intra-op pool to one thread when torch is loaded. Start
``dask worker`` processes of your own cluster with ``--nthreads 1`` and these variables
(Dask's nanny sets them by default: ``distributed.nanny.pre-spawn-environ``).

>>> with DaskEngine(workers=1, processes=False, dashboard=False) as engine:
...     fut = engine.client.submit(sum, [1, 2, 3])
...     fut.result()
6
"""
from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from typing import Any, Callable, Iterable, Iterator

from ..errors import VizPlaceError

#: Environment of every worker process an engine starts.
ONE_THREAD_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                  "NUMEXPR_NUM_THREADS": "1", "VECLIB_MAXIMUM_THREADS": "1"}


class EngineError(VizPlaceError):
    """The Dask cluster could not be started or reached (the message says which and why)."""


def default_workers() -> int:
    """One worker per core (``os.sched_getaffinity`` where available)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def check_reachable(address: str, timeout: float = 3.0) -> None:
    """Fail fast (instead of Dask's retries until its timeout) when nothing listens at a
    ``tcp://HOST:PORT`` address; other schemes are left to Dask."""
    import socket
    from urllib.parse import urlsplit
    if "://" not in address:
        address = "tcp://" + address
    parts = urlsplit(address)
    if parts.scheme not in ("tcp", "tls") or parts.port is None:
        return
    try:
        socket.create_connection((parts.hostname, parts.port), timeout=timeout).close()
    except OSError as err:
        raise EngineError(f"cannot reach the Dask scheduler at {address}: {err.strerror or err}") from None


class DaskEngine:
    """A Dask client over an embedded ``LocalCluster`` or an existing scheduler.

    Parameters
    ----------
    scheduler : ``"tcp://HOST:PORT"`` of a running ``dask scheduler`` (then ``workers`` is
        ignored), or ``None`` to start a ``LocalCluster``.
    workers : number of local worker processes (default: the cores), one thread each.
    processes : local workers as processes (default) or threads in this process (fast to
        start, shares the GIL: for tests and tiny sweeps).
    dashboard : serve the Dask dashboard (``dashboard_link``) on a free port.
    timeout : seconds to wait for the scheduler and the first worker.
    """

    def __init__(self, scheduler: str | None = None, workers: int | None = None, *, processes: bool = True,
                 dashboard: bool = True, timeout: float = 20.0) -> None:
        import dask
        from distributed import Client, LocalCluster
        self.cluster = None
        self.address = scheduler
        self._dashboard = bool(dashboard)
        try:
            if scheduler:
                check_reachable(scheduler)
                self.client = Client(scheduler, timeout=timeout, set_as_default=False)
            else:
                n = default_workers() if workers is None else int(workers)
                if n < 1:
                    raise EngineError(f"--workers must be >= 1, got {n}")
                with dask.config.set({"distributed.nanny.pre-spawn-environ": dict(ONE_THREAD_ENV)}):
                    where = {"host": "127.0.0.1"} if processes else {}
                    self.cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=processes, **where,
                                                dashboard_address="127.0.0.1:0",   # a free port, never 8787
                                                scheduler_kwargs={"dashboard": bool(dashboard)},
                                                silence_logs=logging.ERROR)
                self.client = Client(self.cluster, set_as_default=False)
                self.address = self.cluster.scheduler_address
            try:
                self.client.wait_for_workers(1, timeout=timeout)
            except TimeoutError:
                raise EngineError(f"the Dask scheduler at {self.address} has no workers (waited {timeout:g} s); start "
                                  f"some with `dask worker {self.address} --nthreads 1`") from None
        except EngineError:
            self.close()
            raise
        except (OSError, TimeoutError) as err:
            self.close()
            where = f"the Dask scheduler at {scheduler}" if scheduler else "a local Dask cluster"
            raise EngineError(f"cannot reach {where}: {err}") from None

    # --- information ------------------------------------------------------------------
    @property
    def dashboard_link(self) -> str | None:
        """URL of the Dask dashboard, or ``None`` when it is not served."""
        if not self._dashboard:
            return None
        if self.cluster is not None:   # ours: served on 127.0.0.1 whatever address the scheduler reports
            try:
                port = self.client.scheduler_info()["services"]["dashboard"]
                return f"http://127.0.0.1:{port}/status"
            except Exception:  # noqa: BLE001
                return None
        try:
            link = self.client.dashboard_link
        except Exception:  # no dashboard service  # noqa: BLE001
            return None
        return link or None

    def worker_names(self) -> list[str]:
        info = self.client.scheduler_info(n_workers=-1)["workers"]
        return sorted(str(w.get("name", a)) for a, w in info.items())

    # --- work -------------------------------------------------------------------------
    def preload(self) -> None:
        """Import the solvers on every worker now (else the first cell of each pays it)."""
        self.client.run(_import_solvers)

    def scatter(self, obj: Any):
        """Send ``obj`` to every worker once; returns its future (pass it to tasks).

        Replicated on all workers, so losing one worker loses no scattered data.
        """
        return self.client.scatter(obj, broadcast=True, hash=False)

    def submit(self, fn: Callable, *args: Any, name: str = "task", **kwargs: Any):
        return self.client.submit(fn, *args, key=f"{name}-{uuid.uuid4().hex[:12]}", pure=False, **kwargs)

    def as_completed(self, futures: Iterable, cancel: Callable[[], bool] | None = None,
                     poll: float = 0.05) -> Iterator:
        """Futures in the order they finish; stops early (cancelling the rest) when ``cancel()``."""
        from distributed import as_completed
        pending = set(futures)
        ac = as_completed(pending, loop=self.client.loop)
        while pending:
            if cancel is not None and cancel():
                self.client.cancel(list(pending))
                return
            batch = ac.next_batch(block=False)
            if not batch:
                time.sleep(poll)
                continue
            for f in batch:
                pending.discard(f)
                yield f

    def cancel_flag(self) -> "RemoteCancel":
        """A cancel flag that tasks on workers can poll (a ``distributed.Event``)."""
        return RemoteCancel(f"viz-place-cancel-{uuid.uuid4().hex[:12]}", client=self.client)

    def close(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            try:
                client.close()
            except Exception:  # noqa: BLE001 - closing must not raise
                pass
        if self.cluster is not None:
            # in-process workers: the clients tasks opened (the cancel flag's Event) go first
            for w in list(getattr(self.cluster, "workers", {}).values()):
                wc = getattr(w, "_client", None)
                if wc is not None:
                    try:
                        wc.close()
                    except Exception:  # noqa: BLE001
                        pass
            try:
                self.cluster.close()
            except Exception:  # noqa: BLE001
                pass
            self.cluster = None

    def __enter__(self) -> "DaskEngine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _import_solvers() -> bool:
    import viz_place.runtime.sweep_cells  # noqa: F401 - imports every registered solver
    return True


class RemoteCancel:
    """A cancel flag shared with workers through a ``distributed.Event``.

    ``set()`` on the client; on a worker, ``RemoteCancel(name)()`` is true once set (polled at
    most every ``interval`` seconds, so a solver checking it often costs nothing).
    """

    def __init__(self, name: str, *, client=None, interval: float = 0.5) -> None:
        self.name, self.interval = name, interval
        self._event = None
        self._client = client
        self._last, self._value = 0.0, False
        self._lock = threading.Lock()

    def __getstate__(self):
        return {"name": self.name, "interval": self.interval}

    def __setstate__(self, state):
        self.__init__(state["name"], interval=state["interval"])

    def _ev(self):
        if self._event is None:
            from distributed import Event
            self._event = Event(self.name, client=self._client)
        return self._event

    def set(self) -> None:
        self._value = True
        try:
            self._ev().set()
        except Exception:  # noqa: BLE001 - the cluster is gone: nothing left to stop
            pass

    def __call__(self) -> bool:
        if self._value:
            return True
        now = time.monotonic()
        with self._lock:
            if now - self._last >= self.interval:
                self._last = now
                try:
                    self._value = bool(self._ev().is_set())
                except Exception:  # noqa: BLE001
                    pass
        return self._value
