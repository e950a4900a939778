"""ONNX import of the real architectures in the onnx wheel: time, size, FLOPs vs the
published figure, and the exact DP on the imported graph (default cluster: 1 cpu + 4 gpu).

    .venv/bin/python benchmarks/import_onnx.py [--no-dp]

Times are CPU seconds (``time.process_time``) and wall seconds; the machine is shared.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import onnx

from viz_place.errors import SolverError
from viz_place.io.onnx import read_onnx

LIGHT = Path(onnx.__file__).resolve().parent / "backend" / "test" / "data" / "light"
#: Published multiply-adds at 224x224 (G MACs), x2 = FLOPs.
PUBLISHED_GMACS = {"light_resnet50": 4.1, "light_vgg19": 19.6, "light_densenet121": 2.87,
                   "light_inception_v1": 1.5, "light_bvlc_alexnet": 0.72}
MAX_IDEALS = 20_000


def _timed(fn):
    c, w = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c, time.perf_counter() - w


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-dp", action="store_true", help="skip the DP column")
    args = ap.parse_args(argv)
    rows = []
    for path in sorted(LIGHT.glob("light_*.onnx")):
        g, cpu, wall = _timed(lambda: read_onnx(path))
        pub = PUBLISHED_GMACS.get(path.stem)
        ratio = f"{g.total_flops / (2e9 * pub):.3f}" if pub else "-"
        dp = "-"
        if not args.no_dp:
            from viz_place.solvers import run_solver
            try:
                p, dcpu, dwall = _timed(lambda: run_solver("dp", g, g.default_cluster,
                                                           options={"max_ideals": MAX_IDEALS}))
                dp = f"{p.status} {p.claimed_value:.4f} ms ({dcpu:.2f}/{dwall:.2f} s)"
            except SolverError as err:
                dp = "out of reach" if "beyond reach" in str(err) else f"error: {err}"
        rows.append([path.stem, path.stat().st_size // 1024, g.num_nodes, g.num_edges,
                     f"{g.total_flops / 1e9:.3f}", ratio, f"{cpu:.3f}/{wall:.3f}", dp])
    headers = ["model", "onnx kB", "ops", "edges", "GFLOPs", "vs published", "import cpu/wall s",
               f"dp max-load (cpu/wall s), max_ideals={MAX_IDEALS:,}"]
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    print("  ".join(str(h).ljust(w) for h, w in zip(headers, widths)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
