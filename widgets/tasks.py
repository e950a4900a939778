"""Run a function off the notebook's main thread, with a cancel event.

The kernel keeps answering widget events while a solve runs; ``Cancel`` sets
the event the solver polls. Completion callbacks run on the worker thread, each
holding :data:`~viz_place.widgets.bokeh_sync.UI_LOCK` (they redraw figures the page's
messages change too). ``on_finish`` runs last, once the task no longer counts
as running: a panel re-enables its Run button there, so a click on the
re-enabled button is never refused as "already running".

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

from .bokeh_sync import UI_LOCK


class BackgroundTask:
    """``fn(cancel_event)`` in a daemon thread; ``on_done(result)`` or ``on_error(exc)`` after,
    then ``on_finish()`` (always, once :attr:`running` is ``False``)."""

    def __init__(self, fn: Callable[[threading.Event], Any], *, on_done: Callable[[Any], None] | None = None,
                 on_error: Callable[[BaseException], None] | None = None,
                 on_finish: Callable[[], None] | None = None, name: str = "viz-place-task") -> None:
        self.fn = fn
        self.on_done = on_done
        self.on_error = on_error
        self.on_finish = on_finish
        self._over = False
        self._ended = threading.Event()
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
            self._work()
        finally:
            self._over = True
            if self.on_finish is not None:
                try:
                    with UI_LOCK:
                        self.on_finish()
                except Exception:  # pragma: no cover - last resort
                    traceback.print_exc()
            self._ended.set()

    def _work(self) -> None:
        try:
            self.result = self.fn(self.cancel_event)
        except BaseException as err:  # reported to the user by on_error, never lost
            self.error = err
            if self.on_error is not None:
                try:
                    with UI_LOCK:
                        self.on_error(err)
                except Exception:  # pragma: no cover - last resort
                    traceback.print_exc()
            return
        if self.on_done is not None:
            try:
                with UI_LOCK:
                    self.on_done(self.result)
            except Exception as err:  # e.g. the result no longer fits the state
                self.error = err
                if self.on_error is not None:
                    with UI_LOCK:
                        self.on_error(err)

    def cancel(self) -> None:
        self.cancel_event.set()

    @property
    def running(self) -> bool:
        """``True`` from :meth:`start` until ``on_done`` / ``on_error`` have returned."""
        return self._thread is not None and not self._over

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the task (``on_finish`` included); ``True`` if it finished or never started."""
        if self._thread is None:
            return True
        return self._ended.wait(timeout)
