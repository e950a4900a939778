"""What every solver shares: options dataclasses, progress and cancel hooks.

:func:`viz_place.solvers.run_solver` takes

* ``options`` — an instance of the solver's frozen options dataclass (validated
  in ``__post_init__``), a plain dict (converted with :func:`make_options`), or ``None``;
* ``progress`` — called with :class:`Progress` events (fraction done, message,
  incumbent, bound); the UI draws them;
* ``cancel`` — a ``threading.Event`` or a zero-argument callable; when it fires
  the solver stops and returns its best placement so far with status
  ``"cancelled"`` (or raises :class:`~viz_place.errors.SolverError` if it has none);

and hands the solver a :class:`Hooks` wrapping the last two (the solver
function itself is described in :mod:`viz_place.solvers.contract`).

Option fields carry UI hints in ``field(metadata=...)``: ``help``, ``min``,
``max``, ``choices`` (and ``aliases``: old spellings accepted on input);
:func:`option_specs` lists them so forms build themselves. A field marked
``"internal": True`` holds an object a caller filled in (``rl``'s loaded
``weights``): it is accepted from Python, but not offered in forms and not part
of :meth:`SolverOptions.to_dict` (so a placement's options stay plain JSON).

>>> @dataclass(frozen=True)
... class DemoOptions(SolverOptions):
...     time_limit: float = field(default=10.0, metadata={"help": "seconds", "min": 0.0})
>>> make_options(DemoOptions, {"time_limit": 5}).time_limit
5.0
>>> make_options(DemoOptions, {"time_limit": "soon"})
Traceback (most recent call last):
...
viz_place.errors.SolverError: option 'time_limit': expected a number, got 'soon'
>>> make_options(DemoOptions, {"speed": 1})
Traceback (most recent call last):
...
viz_place.errors.SolverError: unknown option(s) ['speed'] for DemoOptions; known: ['time_limit']
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import gc
import math
import threading
import time
import types
import typing
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..errors import Cancelled, SolverError


@dataclass(frozen=True)
class SolverOptions:
    """Base of every solver's options: each field is checked against its annotation and hints.

    The rules, the same for every solver (so the CLI, the explorer and Python
    callers get the same refusals):

    * ``float`` fields take a finite int or float (NaN and infinities are
      refused); ``int`` fields a whole number (``3.0`` is taken as ``3``,
      ``2.7`` is refused); ``bool`` fields ``true``/``false`` only (not ``1``,
      ``3`` or ``"maybe"``); ``str`` fields a string; ``X | None`` also takes
      ``None``. Booleans are never numbers.
    * ``min``/``max``/``choices`` from the field metadata.
    * Every field named ``time_limit`` is a positive number of seconds: ``0``
      is refused everywhere (no limit = leave the option out, where the solver
      allows ``None``).

    Errors are :class:`~viz_place.errors.SolverError` naming the option.
    """

    def __post_init__(self) -> None:
        for name, hint, meta, optional in _field_plan(type(self)):
            value = getattr(self, name)
            if not (value is None and optional):     # (None where the annotation allows it: _coerce keeps it)
                value = _coerce(name, value, hint)
            aliases = meta.get("aliases") or {}
            if isinstance(value, str) and value in aliases:
                value = aliases[value]
            object.__setattr__(self, name, value)
            if "choices" in meta and value not in meta["choices"]:
                raise _option_error(name, f"{value!r} is not one of {list(meta['choices'])}")
            if _is_number(value):
                if "min" in meta and value < meta["min"]:
                    raise _option_error(name, f"{value!r} is below the minimum {meta['min']}")
                if "max" in meta and value > meta["max"]:
                    raise _option_error(name, f"{value!r} is above the maximum {meta['max']}")
                if name == "time_limit" and value <= 0:
                    raise _option_error(name, f"{value!r} seconds: a time limit must be positive "
                                              "(leave it out for the solver's default)")

    def to_dict(self) -> dict[str, Any]:
        """The options as plain values (``internal`` fields left out); ``make_options`` reads it back."""
        return {name: _plain_copy(getattr(self, name))
                for name, _, meta, _ in _field_plan(type(self)) if not meta.get("internal")}


#: Values copied as they are by :meth:`SolverOptions.to_dict` (immutable: a deep copy would return them unchanged).
_ATOMS = (type(None), bool, int, float, str)


def _plain_copy(value: Any) -> Any:
    """``copy.deepcopy(value)``, without its machinery for the immutable scalars options mostly hold."""
    return value if type(value) in _ATOMS else copy.deepcopy(value)


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _option_error(name: str, text: str) -> SolverError:
    return SolverError(f"option {name!r}: {text}", field=name)


def _type_hints(cls: type) -> dict[str, Any]:
    """The resolved annotations of an options class (resolved once per class: classes do not change; a
    registered solver's are resolved when it registers, see :func:`prepare_options_class`)."""
    hints = _HINTS.get(cls)
    if hints is None:
        try:
            hints = typing.get_type_hints(cls)
        except Exception:  # pragma: no cover - unresolvable annotations: checked by value only
            hints = {}
        _HINTS[cls] = hints
    return hints


def _field_plan(cls: type) -> tuple[tuple[str, Any, Mapping[str, Any], bool], ...]:
    """``(name, resolved annotation, metadata, takes None)`` of every field of options class ``cls``, once per class."""
    plan = _PLANS.get(cls)
    if plan is None:
        hints = _type_hints(cls)
        plan = tuple((f.name, hints.get(f.name), f.metadata, _takes_none(hints.get(f.name)))
                     for f in dataclasses.fields(cls))
        _PLANS[cls] = plan
    return plan


def _takes_none(tp: Any) -> bool:
    """Whether annotation ``tp`` is a union with ``None`` (``float | None``): :func:`_coerce` keeps ``None`` there."""
    return typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in typing.get_args(tp)


def prepare_options_class(cls: type) -> None:
    """Resolve the annotations and field list of options class ``cls`` now (at registration: one-time work that
    would otherwise land in the first solve, where ``typing`` compiles each string annotation)."""
    if dataclasses.is_dataclass(cls):
        _field_plan(cls)


_HINTS: "weakref.WeakKeyDictionary[type, dict[str, Any]]" = weakref.WeakKeyDictionary()
_PLANS: "weakref.WeakKeyDictionary[type, tuple]" = weakref.WeakKeyDictionary()


def _coerce(name: str, value: Any, tp: Any) -> Any:
    """``value`` checked against annotation ``tp`` (``int`` -> ``float`` widening; ``3.0`` -> ``3``).

    >>> _coerce("n", 3.0, int), _coerce("t", 2, float), _coerce("t", None, float | None)
    (3, 2.0, None)
    >>> _coerce("flag", "maybe", bool)
    Traceback (most recent call last):
    ...
    viz_place.errors.SolverError: option 'flag': expected true or false, got 'maybe'
    """
    if tp is None or tp is Any:
        return value
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return _coerce(name, value, rest[0])
        return value
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise _option_error(name, f"expected true or false, got {value!r}")
    if tp is int:
        if isinstance(value, float) and not isinstance(value, bool) and math.isfinite(value) and value.is_integer():
            return int(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise _option_error(name, f"expected a whole number, got {value!r}")
    if tp is float:
        if not _is_number(value):
            raise _option_error(name, f"expected a number, got {value!r}")
        if not math.isfinite(value):
            raise _option_error(name, f"expected a finite number, got {value!r}")
        return float(value)
    if tp is str:
        if isinstance(value, str):
            return value
        raise _option_error(name, f"expected a string, got {value!r}")
    return value


def make_options(cls: type, options: Any) -> Any:
    """An instance of options class ``cls`` from ``None``, a dict, or an instance."""
    if options is None:
        return cls()
    if isinstance(options, cls):
        return options
    if isinstance(options, Mapping):
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(options) - set(names))
        if unknown:
            raise SolverError(f"unknown option(s) {unknown} for {cls.__name__}; known: {names}", field=unknown[0])
        try:
            return cls(**dict(options))
        except TypeError as err:
            raise SolverError(f"{cls.__name__}: {err}") from None
    raise SolverError(f"options must be a {cls.__name__} or a dict, got {type(options).__name__}")


def option_specs(cls: type) -> list[dict[str, Any]]:
    """Name, type, default and UI hints of every option field (for forms)."""
    out = []
    hints = _type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.metadata.get("internal"):
            continue
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
        out.append({"name": f.name, "type": hints.get(f.name, type(default)), "default": default, **dict(f.metadata)})
    return out


@dataclass(frozen=True)
class Progress:
    """One progress report. Any field may be ``None`` when unknown."""

    fraction: float | None = None
    message: str = ""
    incumbent: float | None = None
    bound: float | None = None
    data: Mapping[str, Any] = field(default_factory=dict)


ProgressFn = Callable[[Progress], None]


class Hooks:
    """Progress and cancel hooks, normalised, rate-limited progress.

    >>> h = Hooks(None, threading.Event())
    >>> h.cancelled
    False
    """

    def __init__(self, progress: ProgressFn | None = None, cancel: Any = None, *, min_interval: float = 0.05) -> None:
        self._progress = progress
        if cancel is None:
            self._cancel: Callable[[], bool] = lambda: False
        elif hasattr(cancel, "is_set"):
            self._cancel = cancel.is_set
        elif callable(cancel):
            self._cancel = cancel
        else:
            raise SolverError("cancel must be a threading.Event or a callable returning bool")
        self._last = 0.0
        self._min_interval = min_interval
        self.started = time.monotonic()

    @property
    def elapsed(self) -> float:
        """Seconds since these hooks were made (the start of the run, for progress over time)."""
        return time.monotonic() - self.started

    @property
    def cancelled(self) -> bool:
        return bool(self._cancel())

    def with_stop(self, stop: Callable[[], bool]) -> "Hooks":
        """Hooks reporting to the same progress function that also count as cancelled when ``stop()``
        is true (a solver's own time limit)."""
        outer = self._cancel
        hooks = Hooks(self._progress, lambda: bool(outer()) or bool(stop()), min_interval=self._min_interval)
        hooks.started = self.started
        return hooks

    @property
    def cancel_fn(self) -> Callable[[], bool]:
        """The cancel hook as a zero-argument callable (to hand to a sub-solver)."""
        return self._cancel

    @property
    def progress_fn(self) -> ProgressFn | None:
        return self._progress

    def check(self) -> None:
        """Raise :class:`Cancelled` if the cancel hook fired."""
        if self._cancel():
            raise Cancelled()

    def report(self, fraction: float | None = None, message: str = "", *, force: bool = False, **kw: Any) -> None:
        if self._progress is None:
            return
        now = time.monotonic()
        if not force and now - self._last < self._min_interval:
            return
        self._last = now
        data = kw.pop("data", {})
        self._progress(Progress(fraction=fraction, message=message, data=data, **kw))


class Stopwatch:
    """Wall time since construction."""

    def __init__(self) -> None:
        self.start = time.perf_counter()

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.start


_GC_LOCK = threading.RLock()
_GC_STATE = {"paused": 0, "was_enabled": False}


@contextlib.contextmanager
def collector_paused():
    """Pause Python's cyclic garbage collector for a step that makes no reference cycles (compiling a problem, the
    DP, the one evaluation): a full collection of a large heap would cost more than such a step takes. Nested and
    concurrent pauses share one; the collector's state before the first is restored after the last.

    >>> import gc
    >>> with collector_paused():
    ...     gc.isenabled()
    False
    """
    with _GC_LOCK:
        if _GC_STATE["paused"] == 0:
            _GC_STATE["was_enabled"] = gc.isenabled()
            gc.disable()
        _GC_STATE["paused"] += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _GC_STATE["paused"] -= 1
            if _GC_STATE["paused"] == 0 and _GC_STATE["was_enabled"]:
                gc.enable()


@contextlib.contextmanager
def collector_resumed():
    """Inside :func:`collector_paused`: let the collector run again for a step that may make reference cycles (a
    solver's own search), as it was before the pause; paused again afterwards.

    >>> import gc
    >>> was = gc.isenabled()
    >>> with collector_paused():
    ...     with collector_resumed():
    ...         gc.isenabled() == was
    True
    """
    with _GC_LOCK:
        resume = _GC_STATE["paused"] > 0 and _GC_STATE["was_enabled"]
        if resume:
            gc.enable()
    try:
        yield
    finally:
        with _GC_LOCK:
            if resume and _GC_STATE["paused"] > 0:
                gc.disable()
