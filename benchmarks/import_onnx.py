"""ONNX import of the real architectures in the onnx wheel: time, size, FLOPs vs the
published figure (matmul-only count for the transformer), and the exact DP on the imported
graph (default cluster: 1 cpu + 4 gpu); with torch, a 12-layer transformer both ways.

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


def _dp_cell(g, args) -> str:
    if args.no_dp:
        return "-"
    from viz_place.solvers import run_solver
    try:
        p, dcpu, dwall = _timed(lambda: run_solver("dp", g, g.default_cluster, options={"max_ideals": MAX_IDEALS}))
        return f"{p.status} {p.claimed_value:.4f} ms ({dcpu:.2f}/{dwall:.2f} s)"
    except SolverError as err:
        return "out of reach" if "beyond reach" in str(err) else f"error: {err}"


def _torch_rows(args, dp_cell) -> list:
    """A 12-layer transformer encoder (d=256, 4 heads, ffn 1024, batch 2 x 64 tokens), exported by
    torch.onnx (legacy exporter) and read by both importers; skipped without torch."""
    try:
        import io
        import warnings
        import torch
        from viz_place.io.torch_fx import read_torch
    except ImportError:
        return []
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True, dropout=0.0)
    m = torch.nn.TransformerEncoder(layer, 12, enable_nested_tensor=False).eval()
    x = torch.randn(2, 64, 256)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(m, (x,), buf, dynamo=False)
    model = onnx.load_from_string(buf.getvalue())
    rows = []
    g, cpu, wall = _timed(lambda: read_onnx(model, name="transformer12"))
    b, s, d, f = 2, 64, 256, 1024  # multiply-adds of the projections, attention and MLP
    macs = 12 * b * (4 * s * d * d + 2 * s * s * d + 2 * s * d * f)
    rows.append(["transformer12 (onnx export)", len(buf.getvalue()) // 1024, g.num_nodes, g.num_edges,
                 f"{g.total_flops / 1e9:.3f}", f"{g.total_flops / (2 * macs):.3f}", f"{cpu:.3f}/{wall:.3f}",
                 dp_cell(g, args)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g, cpu, wall = _timed(lambda: read_torch(m, (x,), name="transformer12"))
    rows.append(["transformer12 (torch.export)", "-", g.num_nodes, g.num_edges, f"{g.total_flops / 1e9:.3f}",
                 f"{g.total_flops / (2 * macs):.3f}", f"{cpu:.3f}/{wall:.3f}", dp_cell(g, args)])
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-dp", action="store_true", help="skip the DP column")
    args = ap.parse_args(argv)
    rows = []
    for path in sorted(LIGHT.glob("light_*.onnx")):
        g, cpu, wall = _timed(lambda: read_onnx(path))
        pub = PUBLISHED_GMACS.get(path.stem)
        ratio = f"{g.total_flops / (2e9 * pub):.3f}" if pub else "-"
        dp = _dp_cell(g, args)
        rows.append([path.stem, path.stat().st_size // 1024, g.num_nodes, g.num_edges,
                     f"{g.total_flops / 1e9:.3f}", ratio, f"{cpu:.3f}/{wall:.3f}", dp])
    rows.extend(_torch_rows(args, _dp_cell))
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
