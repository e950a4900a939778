"""``viz-place import``: a model becomes a costed graph JSON.

SPEC is an ONNX file or ``hf:MODEL_TYPE`` (a Hugging Face transformers model
built from its config with random weights: ``hf:gpt2``, ``hf:bert``,
``hf:llama``, ``hf:resnet``, ``hf:vit``, ``hf:convnext``). Latencies per device
kind come from the roofline model (milliseconds), or for the ``cpu`` kind
from measurements (``--profile``); a devices file may carry the figures
(``"roofline": {kind: preset or figures}``) beside its ``classes``. The graph
file records its ``source`` (SPEC, overrides, batch, sequence length, seed,
granularity, depth, tracer) so the same model can be rebuilt. See README,
"Your PyTorch / Hugging Face model".
"""
from __future__ import annotations

import os

from ..errors import InputFormatError
from ..io import write_nodelink
from ..io.torch_models import is_model_spec
from .common import fmt, print_json
from .model_args import add_model_args, load_onnx, load_spec, roofline_from_devices


def add_parsers(sub) -> None:
    p = sub.add_parser("import", help="import a model (hf:MODEL_TYPE or MODEL.onnx) as a costed graph")
    p.add_argument("model", metavar="SPEC", help="hf:MODEL_TYPE (gpt2, bert, llama, resnet, vit, convnext) "
                                                 "or an ONNX model file (.onnx)")
    p.add_argument("--out", required=True, metavar="GRAPH.json", help="write the graph here (node-link JSON)")
    p.add_argument("--devices", metavar="FILE",
                   help="devices JSON: 'classes' and/or 'roofline' {kind: preset name or figures}")
    p.add_argument("--training", action="store_true", help="add backward nodes (training graph)")
    p.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE",
                   help="ONNX: value of a symbolic input dimension (default 1); repeatable")
    p.add_argument("--json", action="store_true", help="print a machine-readable summary")
    add_model_args(p, seed_flags=("--seed", "--model-seed"))
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
    if is_model_spec(args.model):
        if args.dim:
            raise InputFormatError("--dim applies to ONNX files; for hf: models use --batch, --seq-len, --image-size")
        g = load_spec(args.model, args)
    elif args.model.lower().endswith(".onnx") or os.path.exists(args.model):
        if not os.path.exists(args.model):
            raise InputFormatError(f"{args.model}: file not found")
        if not args.model.lower().endswith(".onnx"):
            raise InputFormatError(f"{args.model}: not a model SPEC: expected an .onnx file or hf:MODEL_TYPE")
        specs, cluster = roofline_from_devices(args.devices)
        g = load_onnx(args.model, args, specs=specs, cluster=cluster, dims=_dims(args.dim))
    else:
        raise InputFormatError(f"{args.model!r}: not a model SPEC: expected an .onnx file or hf:MODEL_TYPE "
                               "(hf:gpt2, hf:bert, hf:llama, hf:resnet, hf:vit, hf:convnext)")
    write_nodelink(args.out, g)
    summary = {"name": g.name, "out": args.out, "nodes": g.num_nodes, "edges": g.num_edges, "flops": g.total_flops,
               "weights_bytes": sum(n.size for n in g.nodes() if not n.backward), "kinds": list(g.kinds),
               "devices": g.default_cluster.summary(), "source": g.source, "notes": g.notes}
    if args.json:
        print_json(summary)
        return 0
    print(f"{args.out}: {g.num_nodes} nodes, {g.num_edges} edges, {fmt(g.total_flops / 1e9)} GFLOPs, "
          f"{fmt(summary['weights_bytes'] / 2**20)} MiB of weights; latencies (ms) for kinds {', '.join(g.kinds)}")
    for note in g.notes:
        print(f"note: {note}")
    return 0
