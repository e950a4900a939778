"""Helpers shared by the benchmarks: where the published workloads are."""
from __future__ import annotations

import os
from pathlib import Path

WORKLOADS = Path(os.environ.get("VIZ_PLACE_WORKLOADS",
                                Path(__file__).resolve().parents[2] / "shared" / "workloads"))


def workloads_available() -> bool:
    return WORKLOADS.is_dir()
