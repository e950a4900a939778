"""Exceptions raised by viz_place.

Every error a user can trigger is a :class:`VizPlaceError` whose message names
the node, edge, device or field at fault. The CLI prints that message on one
line and exits with status 2; the explorer shows it next to the control that
caused it.

>>> try:
...     raise GraphValidationError("edge a -> b: unknown destination node 'b'")
... except VizPlaceError as err:
...     print(err)
edge a -> b: unknown destination node 'b'
"""


class VizPlaceError(ValueError):
    """Base class of every error viz_place raises on bad input."""


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


class Cancelled(Exception):
    """Raised inside a solver when its cancel hook fires (internal)."""
