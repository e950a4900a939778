"""Run a function off the notebook's main thread, with a cancel event.

The kernel keeps answering widget events while a solve runs; ``Cancel`` sets
the event the solver polls. Completion callbacks run on the worker thread
(ipywidgets and the Bokeh document patches sent by ``jupyter_bokeh`` are safe
to update from there).

>>> import threading
>>> out = []
>>> t = BackgroundTask(lambda cancel: 6 * 7, on_done=out.append)
>>> t.start(); _ = t.wait(5); out
[42]
"""
from __future__ import annotations

import threading
import traceback
from typing import Any, Callable


class BackgroundTask:
    """``fn(cancel_event)`` in a daemon thread; ``on_done(result)`` or ``on_error(exc)`` after."""

    def __init__(self, fn: Callable[[threading.Event], Any], *, on_done: Callable[[Any], None] | None = None,
                 on_error: Callable[[BaseException], None] | None = None, name: str = "viz-place-task") -> None:
        self.fn = fn
        self.on_done = on_done
        self.on_error = on_error
        self.cancel_event = threading.Event()
        self.name = name
        self._thread: threading.Thread | None = None
        self.result: Any = None
        self.error: BaseException | None = None

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("a BackgroundTask runs once")
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.result = self.fn(self.cancel_event)
        except BaseException as err:  # reported to the user by on_error, never lost
            self.error = err
            if self.on_error is not None:
                try:
                    self.on_error(err)
                except Exception:  # pragma: no cover - last resort
                    traceback.print_exc()
            return
        if self.on_done is not None:
            try:
                self.on_done(self.result)
            except Exception as err:  # e.g. the result no longer fits the state
                self.error = err
                if self.on_error is not None:
                    self.on_error(err)

    def cancel(self) -> None:
        self.cancel_event.set()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> bool:
        """Join the thread; ``True`` if it finished."""
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()
