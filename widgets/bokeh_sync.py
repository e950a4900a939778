"""Keeping a kernel-side Bokeh figure and its page in step across threads.

Two facts of ``jupyter_bokeh`` (4.1, with BokehJS 3.9) that the explorer has to live with:

* **The page echoes every patch.** A change the kernel sends (new data, a stream, a
  patch, a range) is applied in the page and then sent back as if the user had made it.
  Applied again in the kernel, an echo is harmful: a streamed row is appended twice, and an
  echo of an *older* value, arriving after the kernel moved on, silently puts the old value
  back (a sweep's first row came back after its second, and a page reloaded or re-embedded
  later showed one point of two). :class:`EchoFilter` remembers what was sent and drops
  its echoes; everything else (taps, pans, sizes) is applied as before.
* **Figures change from several threads.** Solvers and sweeps report progress from worker
  threads while the kernel applies the page's messages on another (ipykernel 7 runs comm
  messages on a subshell thread). A Bokeh ``Document`` is not thread-safe: two threads
  changing one at once failed an ``rl`` run with "Set changed size during iteration".
  Every change to a figure holds :data:`UI_LOCK` (the explorer's state holds it around each
  change and its listeners; progress callbacks and the page's messages hold it too).

>>> same_value({"x": [1.0, float("nan")]}, {"x": [1.0, float("nan")]})
True
>>> same_value([1, 2], [2, 1])
False
"""
from __future__ import annotations

import math
import threading
from collections import deque
from typing import Any

#: One re-entrant lock for every change to the explorer's state and figures.
UI_LOCK = threading.RLock()

#: Values remembered per (model, property) until their echo comes back; older ones are
#: forgotten (a page that never echoes, e.g. a value it already had, cannot grow this).
PENDING_PER_PROPERTY = 64


def same_value(a: Any, b: Any) -> bool:
    """Equality for property values as they travel: NaN equals NaN, tuples equal lists,
    numpy arrays compare element by element."""
    if a is b:
        return True
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if _is_sequence(a) and _is_sequence(b):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def _is_sequence(x: Any) -> bool:
    return isinstance(x, (list, tuple)) or (type(x).__module__ == "numpy" and hasattr(x, "tolist")
                                             and getattr(x, "ndim", 0) > 0)


def _snapshot(value: Any) -> Any:
    """A copy that later in-place changes (a stream extends the lists of ``data``) cannot alter."""
    if isinstance(value, dict):
        return {k: _snapshot(v) for k, v in value.items()}
    if isinstance(value, list):
        return list(value)
    if type(value).__module__ == "numpy" and hasattr(value, "copy"):
        return value.copy()
    return value


class EchoFilter:
    """What the kernel sent and the page has not echoed yet.

    :meth:`sent` records a patch event as it goes out; :meth:`is_echo_value` (a changed
    property) and :meth:`is_echo_append` (a stream or patch) tell whether a message from the
    page is the echo of one, and forget it and everything sent before it for that property
    (the page applies and echoes patches in order).

    >>> f = EchoFilter()
    >>> f.sent_value("src", "data", {"n": [1]}); f.sent_value("src", "data", {"n": [1, 2]})
    >>> f.is_echo_value("src", "data", {"n": [1]})      # the first value's echo: dropped
    True
    >>> f.is_echo_value("src", "data", {"n": [7]})      # never sent: the user's change
    False
    """

    def __init__(self) -> None:
        self._values: dict[tuple[str, str], deque] = {}
        self._appends: dict[tuple[str, str, str], int] = {}
        self._lock = threading.Lock()

    def sent(self, event) -> None:
        """Record an outgoing ``DocumentPatchedEvent``."""
        kind = type(event).__name__
        model = getattr(event, "model", None)
        if model is None:
            return
        if kind in ("ColumnsStreamedEvent", "ColumnsPatchedEvent"):
            key = (model.id, event.attr, kind)
            with self._lock:
                self._appends[key] = self._appends.get(key, 0) + 1
        elif kind == "ColumnDataChangedEvent":
            self.sent_value(model.id, event.attr, model.data)
        elif kind == "ModelChangedEvent":
            self.sent_value(model.id, event.attr, event.new)

    def sent_value(self, model_id: str, attr: str, value: Any) -> None:
        with self._lock:
            q = self._values.setdefault((model_id, attr), deque(maxlen=PENDING_PER_PROPERTY))
            q.append(_snapshot(value))

    def is_echo_value(self, model_id: str, attr: str, value: Any) -> bool:
        with self._lock:
            q = self._values.get((model_id, attr))
            if not q:
                return False
            for i, sent in enumerate(q):
                if same_value(value, sent):
                    for _ in range(i + 1):
                        q.popleft()
                    return True
            return False

    def is_echo_append(self, model_id: str, attr: str, kind: str) -> bool:
        """A stream or patch from the page: the echo of one sent (the page's own tools never
        stream or patch), counted off in order."""
        key = (model_id, attr, kind)
        with self._lock:
            n = self._appends.get(key, 0)
            if n <= 0:
                return False
            self._appends[key] = n - 1
            return True
