"""Regenerate sample_graphs/ (synthetic families; the ONNX importer adds real models).

    python scripts/make_samples.py
"""
from __future__ import annotations

import sys
from pathlib import Path

from viz_place.io import write_nodelink
from viz_place.samples import make_graph

OUT = Path(__file__).resolve().parents[1] / "sample_graphs"

SAMPLES = {
    "chain": ("chain", 24, 1, False),
    "fork_join": ("fork_join", 40, 2, False),
    "residual": ("residual", 48, 3, False),
    "inception": ("inception", 70, 4, False),
    "transformer": ("transformer", 80, 5, False),
    "residual_training": ("residual", 30, 6, True),
    "transformer_large": ("transformer", 2000, 7, False),
}


def main() -> int:
    OUT.mkdir(exist_ok=True)
    for name, (family, n, seed, training) in SAMPLES.items():
        g = make_graph(family, n, seed, training=training)
        g.name = name
        write_nodelink(OUT / f"{name}.json", g)
        print(f"{name}: {g.num_nodes} nodes, {g.num_edges} edges")
    return 0


if __name__ == "__main__":
    sys.exit(main())
