"""``viz-place import``: an ONNX model becomes a costed graph JSON.

Latencies per device kind come from the roofline model (milliseconds); a
devices file may carry the figures (``"roofline": {kind: preset or figures}``)
beside its ``classes``. See README, "Real models: ONNX and torch.fx".
"""
from __future__ import annotations

import os

from ..errors import InputFormatError
from ..io import read_json, write_nodelink
from ..model.roofline import devices_from_dict
from .common import fmt, print_json


def add_parsers(sub) -> None:
    p = sub.add_parser("import", help="import an ONNX model as a graph with roofline latencies")
    p.add_argument("model", help="ONNX model file (.onnx)")
    p.add_argument("--out", required=True, metavar="GRAPH.json", help="write the graph here (node-link JSON)")
    p.add_argument("--devices", metavar="FILE",
                   help="devices JSON: 'classes' and/or 'roofline' {kind: preset name or figures}")
    p.add_argument("--training", action="store_true", help="add backward nodes (training graph)")
    p.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE",
                   help="value of a symbolic input dimension (default 1); repeatable")
    p.add_argument("--json", action="store_true", help="print a machine-readable summary")
    p.set_defaults(run=run_import)


def _dims(items: list[str]) -> dict[str, int]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key or not value.strip().isdigit() or int(value) < 1:
            raise InputFormatError(f"--dim {item!r}: expected NAME=VALUE with a whole number VALUE >= 1")
        out[key] = int(value)
    return out


def run_import(args) -> int:
    from ..io.onnx import read_onnx
    if not os.path.exists(args.model):
        raise InputFormatError(f"{args.model}: file not found")
    specs = cluster = None
    if args.devices:
        specs, cluster = devices_from_dict(read_json(args.devices))
    g = read_onnx(args.model, specs=specs, cluster=cluster, training=args.training, dim_values=_dims(args.dim))
    write_nodelink(args.out, g)
    summary = {"name": g.name, "out": args.out, "nodes": g.num_nodes, "edges": g.num_edges, "flops": g.total_flops,
               "weights_bytes": sum(n.size for n in g.nodes() if not n.backward), "kinds": list(g.kinds),
               "devices": g.default_cluster.summary(), "notes": g.notes}
    if args.json:
        print_json(summary)
        return 0
    print(f"{args.out}: {g.num_nodes} nodes, {g.num_edges} edges, {fmt(g.total_flops / 1e9)} GFLOPs, "
          f"{fmt(summary['weights_bytes'] / 2**20)} MiB of weights; latencies (ms) for kinds {', '.join(g.kinds)}")
    for note in g.notes:
        print(f"note: {note}")
    return 0
