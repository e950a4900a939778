"""Exceptions raised by viz_place.

Every error a user can trigger is a :class:`VizPlaceError` whose message names
the node, edge, device or field at fault; the same names are attributes
(``field``, ``node``, ``device``, ``edge``; ``None`` when not about one), so a
UI can mark the right control without reading the message. The CLI prints the
message on one line and exits with status 2; the explorer shows it next to the
control that caused it.

A bug inside viz_place (a solver disagreeing with the evaluator...) is an
:class:`InternalError`, deliberately *not* a :class:`VizPlaceError`: the CLI
exits 1 with ``internal error (please report): ...``.

>>> try:
...     raise GraphValidationError("edge a -> b: unknown destination node 'b'", edge=("a", "b"))
... except VizPlaceError as err:
...     print(err, err.edge, err.node)
edge a -> b: unknown destination node 'b' ('a', 'b') None
>>> issubclass(InternalError, VizPlaceError)
False
"""
from __future__ import annotations

from typing import Any

_ATTRS = ("field", "node", "device", "edge")


class VizPlaceError(ValueError):
    """Base class of every error viz_place raises on bad input.

    Keyword attributes name what is wrong: ``field`` (an option or a device-class
    field), ``node``, ``device`` (a device instance or class name), ``edge``
    (``(source, target)``).
    """

    def __init__(self, *args: Any, field: str | None = None, node: str | None = None, device: str | None = None,
                 edge: tuple[str, str] | None = None) -> None:
        super().__init__(*args)
        self.field, self.node, self.device, self.edge = field, node, device, edge

    def prefixed(self, prefix: str, cls: type | None = None) -> "VizPlaceError":
        """The same error (class ``cls`` if given) with ``prefix: `` before its message, keeping the attributes."""
        return (cls or type(self))(f"{prefix}: {self}", **{a: getattr(self, a, None) for a in _ATTRS})

    def __reduce__(self):   # keep the attributes across pickling (worker processes)
        return (_rebuild, (type(self), self.args, {a: getattr(self, a, None) for a in _ATTRS}))


def _rebuild(cls, args, attrs):
    err = cls(*args)
    for k, v in attrs.items():
        setattr(err, k, v)
    return err


class GraphValidationError(VizPlaceError):
    """The operator graph is malformed (cycle, unknown node, bad number...)."""


class DeviceError(VizPlaceError):
    """A device class or cluster description is invalid."""


class PlacementError(VizPlaceError):
    """A placement or pin refers to unknown nodes/devices or is incomplete."""


class InputFormatError(VizPlaceError):
    """A file could not be read: wrong format, missing field, bad JSON."""


class SolverError(VizPlaceError):
    """A solver was misused: unknown name, invalid option, out of reach."""


class InfeasibleError(SolverError):
    """No placement satisfies the constraints; the message says why."""


class InternalError(Exception):
    """A bug in viz_place (not bad input): e.g. a solver's value disagreeing with the evaluator."""


class Cancelled(Exception):
    """Raised inside a solver when its cancel hook fires (internal)."""
