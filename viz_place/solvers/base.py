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
:func:`option_specs` lists them so forms build themselves.

>>> @dataclass(frozen=True)
... class DemoOptions(SolverOptions):
...     time_limit: float = field(default=10.0, metadata={"help": "seconds", "min": 0.0})
>>> make_options(DemoOptions, {"time_limit": 5}).time_limit
5
>>> make_options(DemoOptions, {"speed": 1})
Traceback (most recent call last):
...
viz_place.errors.SolverError: unknown option(s) ['speed'] for DemoOptions; known: ['time_limit']
"""
from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..errors import Cancelled, SolverError


@dataclass(frozen=True)
class SolverOptions:
    """Base of every solver's options; subclasses add fields and validate in ``__post_init__``."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            meta = f.metadata
            value = getattr(self, f.name)
            aliases = meta.get("aliases") or {}
            if isinstance(value, str) and value in aliases:
                value = aliases[value]
                object.__setattr__(self, f.name, value)
            if "choices" in meta and value not in meta["choices"]:
                raise SolverError(f"option {f.name!r}: {value!r} is not one of {list(meta['choices'])}", field=f.name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                if "min" in meta and value < meta["min"]:
                    raise SolverError(f"option {f.name!r}: {value!r} is below the minimum {meta['min']}",
                                      field=f.name)
                if "max" in meta and value > meta["max"]:
                    raise SolverError(f"option {f.name!r}: {value!r} is above the maximum {meta['max']}",
                                      field=f.name)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


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
    hints = {}
    try:
        import typing
        hints = typing.get_type_hints(cls)
    except Exception:  # pragma: no cover - exotic annotations
        pass
    for f in dataclasses.fields(cls):
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

    @property
    def cancelled(self) -> bool:
        return bool(self._cancel())

    def with_stop(self, stop: Callable[[], bool]) -> "Hooks":
        """Hooks reporting to the same progress function that also count as cancelled when ``stop()``
        is true (a solver's own time limit)."""
        outer = self._cancel
        return Hooks(self._progress, lambda: bool(outer()) or bool(stop()), min_interval=self._min_interval)

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
