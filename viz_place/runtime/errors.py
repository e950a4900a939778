"""Errors of running a pipeline for real.

:class:`PipelineRunError` (a :class:`~viz_place.errors.VizPlaceError`, so the CLI prints
it on one line) names the stage that failed or died. :class:`InternalError` is the
project's bug class (``viz_place.errors.InternalError`` once it exists).
"""
from __future__ import annotations

from ..errors import VizPlaceError

try:
    from ..errors import InternalError
except ImportError:  # pragma: no cover - until the solver-contract issue lands it
    class InternalError(Exception):
        """A bug in viz_place (not bad input)."""


class PipelineRunError(VizPlaceError):
    """A stage process failed, died or timed out; ``stage`` and ``device`` say which."""

    def __init__(self, message: str, *, stage: int | None = None, device: str | None = None) -> None:
        super().__init__(message)
        self.stage, self.device = stage, device
