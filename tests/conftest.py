"""Shared fixtures: where the published workloads are (skipped where absent)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
WORKLOADS = Path(os.environ.get("VIZ_PLACE_WORKLOADS", REPO.parent / "shared" / "workloads"))


@pytest.fixture(scope="session")
def workloads() -> Path:
    if not WORKLOADS.is_dir():
        pytest.skip(f"published workloads not found at {WORKLOADS} (they live in ../shared/workloads beside the repo)")
    return WORKLOADS


@pytest.fixture(scope="session")
def dask_cluster(tmp_path_factory):
    """A real ``dask scheduler`` and two ``dask worker`` processes (``w0``, ``w1``) on
    127.0.0.1, started once for the session and torn down after it."""
    from _dask_cluster import LoopbackCluster
    c = LoopbackCluster(tmp_path_factory.mktemp("dask"), n_workers=2)
    try:
        yield c
    finally:
        c.close()
