"""Synthetic graph families and the shipped sample graphs.

>>> from viz_place.samples import make_graph, sample_names
>>> "residual" in sample_names()
True
"""
from __future__ import annotations

import os
from pathlib import Path

from .generators import FAMILIES, chain, fork_join, inception, make_graph, residual, training_variant, transformer


def sample_dir() -> Path:
    """The repository's ``sample_graphs/`` folder (or ``VIZ_PLACE_SAMPLES``)."""
    env = os.environ.get("VIZ_PLACE_SAMPLES")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "sample_graphs"


def sample_names() -> list[str]:
    """Names of the shipped sample graphs (file stems in ``sample_graphs/``)."""
    d = sample_dir()
    return sorted(p.stem for p in d.glob("*.json")) if d.is_dir() else []


def load_sample(name: str):
    """Load a shipped sample graph by name."""
    from ..errors import InputFormatError
    from ..io import load_graph
    path = sample_dir() / f"{name}.json"
    if not path.exists():
        raise InputFormatError(f"unknown sample graph {name!r}; samples: {', '.join(sample_names()) or 'none'}")
    return load_graph(path)


__all__ = ["FAMILIES", "chain", "fork_join", "inception", "make_graph", "residual", "training_variant",
           "transformer", "sample_dir", "sample_names", "load_sample"]
