"""Flags shared by every command that takes a model SPEC (``hf:MODEL_TYPE`` or
an ``.onnx`` file): ``import``, ``info``, ``evaluate``, ``solve``, ``compare``.

``--set KEY=VALUE`` overrides a config field (VALUE parsed as JSON, else a
string, as ``-o`` does); ``--batch``, ``--seq-len``, ``--image-size`` and
``--model-seed`` shape the example inputs and weights; ``--granularity`` and
``--depth`` choose op, core-ATen or module nodes; ``--profile`` measures the CPU
latencies; ``--calibration KIND=FACTOR`` scales a roofline kind.
"""
from __future__ import annotations

import os
from typing import Any

from ..errors import InputFormatError
from ..io import read_json
from ..model import OpGraph
from ..model.roofline import devices_from_dict


def add_model_args(p, *, seed_flags: tuple[str, ...] = ("--model-seed",)) -> None:
    g = p.add_argument_group("model SPEC (hf:MODEL_TYPE or MODEL.onnx)")
    g.add_argument("--set", dest="model_set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config field of an hf: model (VALUE as JSON, else a string); repeatable")
    g.add_argument("--batch", type=int, metavar="N", help="batch size of the example inputs (default 1)")
    g.add_argument("--seq-len", type=int, metavar="N", help="sequence length of a language model (default 128)")
    g.add_argument("--image-size", type=int, metavar="N", help="image side of a vision model (default 224)")
    g.add_argument(*seed_flags, dest="model_seed", type=int, default=0, metavar="N",
                   help="seed of the random weights and inputs (default 0)")
    g.add_argument("--granularity", choices=("op", "aten", "module"), default="op",
                   help="one node per op torch.export records (default), per core ATen op (aten: matmuls, "
                        "softmax and elementwise ops of attention apart) or per module at --depth")
    g.add_argument("--depth", type=int, metavar="N",
                   help="module depth for --granularity module (default: the depth of the main repeated blocks)")
    g.add_argument("--profile", action="store_true",
                   help="measure every op on this CPU (one torch thread) and use the times as cpu latencies")
    g.add_argument("--profile-clock", choices=("cpu", "wall"), default="cpu",
                   help="--profile: per-op medians of the thread's CPU time (default; leaves out waiting for a "
                        "core on a shared machine) or of wall time")
    g.add_argument("--calibration", action="append", default=[], metavar="KIND=FACTOR",
                   help="multiply a roofline kind's latencies by FACTOR; repeatable")
    if not any(a.dest == "training" for a in p._actions):
        g.add_argument("--training", action="store_true", help="add backward nodes (training graph)")


def _calibration(items: list[str]) -> dict[str, float]:
    out = {}
    for item in items:
        kind, sep, raw = item.partition("=")
        try:
            out[kind.strip()] = float(raw)
        except ValueError:
            raise InputFormatError(f"--calibration {item!r}: expected KIND=FACTOR with a number FACTOR") from None
        if not sep or not kind.strip():
            raise InputFormatError(f"--calibration {item!r}: expected KIND=FACTOR")
    return out


def _used_model_flags(args) -> list[str]:
    used = []
    for dest, flag in (("model_set", "--set"), ("batch", "--batch"), ("seq_len", "--seq-len"),
                       ("image_size", "--image-size"), ("depth", "--depth"), ("calibration", "--calibration")):
        if getattr(args, dest, None):
            used.append(flag)
    if getattr(args, "profile", False):
        used.append("--profile")
    if getattr(args, "granularity", "op") != "op":
        used.append("--granularity")
    return used


def import_kwargs(args) -> dict[str, Any]:
    """Keyword arguments of :func:`viz_place.io.torch_import.import_torch` from the flags."""
    from ..io.torch_models import parse_overrides
    return {"overrides": parse_overrides(args.model_set), "batch": args.batch or 1, "seq_len": args.seq_len,
            "image_size": args.image_size, "seed": args.model_seed, "granularity": args.granularity,
            "depth": args.depth, "training": bool(getattr(args, "training", False)), "profile": args.profile,
            "profile_clock": args.profile_clock,
            "calibration": _calibration(args.calibration)}


def roofline_from_devices(path: str | None):
    """(specs, cluster) from a devices file, or (None, None)."""
    if not path:
        return None, None
    return devices_from_dict(read_json(path))


def load_spec(spec: str, args, *, devices_roofline: bool = True) -> OpGraph | None:
    """The graph a model SPEC names (``hf:...``), or None when ``spec`` is not a model SPEC.
    Refuses model flags given with a graph file that is not a model."""
    from ..io.torch_models import is_model_spec
    if is_model_spec(spec):
        from ..io.torch_import import import_torch
        specs = cluster = None
        if devices_roofline and getattr(args, "devices", None):
            data = read_json(args.devices)
            if isinstance(data, dict) and "roofline" in data:
                specs, cluster = devices_from_dict(data)
        return import_torch(spec, specs=specs, cluster=cluster, **import_kwargs(args))
    used = _used_model_flags(args)
    if used and not str(spec).lower().endswith(".onnx"):
        raise InputFormatError(f"{' '.join(used)}: apply to a model SPEC (hf:MODEL_TYPE or MODEL.onnx), "
                               f"not to graph {spec!r}")
    if used and str(spec).lower().endswith(".onnx"):
        return load_onnx(spec, args)
    return None


def load_onnx(path: str, args, *, specs=None, cluster=None, dims=None) -> OpGraph:
    """An ONNX file as a graph, with the model flags that apply to ONNX (granularity, depth, calibration)."""
    from ..io.onnx import read_onnx
    from ..io.torch_import import _check_calibration, _scaled
    from ..io.torch_modules import coarsen_modules
    from ..model.modules import has_module_paths, repeated_blocks
    from ..model.roofline import default_specs
    if not os.path.exists(path):
        raise InputFormatError(f"{path}: file not found")
    for dest, flag in (("model_set", "--set"), ("seq_len", "--seq-len"), ("image_size", "--image-size"),
                       ("profile", "--profile"), ("batch", "--batch")):
        if getattr(args, dest, None):
            raise InputFormatError(f"{flag}: applies to hf: models, not to ONNX file {path!r} "
                                   "(use --dim NAME=VALUE for its symbolic dimensions)")
    if args.granularity == "aten":
        raise InputFormatError(f"--granularity aten: applies to hf: models (torch.export lowered to core ATen); "
                               f"ONNX file {path!r} has ONNX ops: use --granularity op or module")
    dims = dict(dims or {})
    g = read_onnx(path, specs=specs, cluster=cluster, training=bool(getattr(args, "training", False)),
                  dim_values=dims)
    factors = _check_calibration(_calibration(args.calibration), dict(specs or default_specs()), None)
    if factors:
        g = _scaled(g, factors)
    source = {"spec": os.path.abspath(path), "dims": dims, "training": bool(getattr(args, "training", False)),
              "granularity": args.granularity, "depth": args.depth, "tracer": "onnx", "calibration": factors}
    if args.granularity == "module":
        if not has_module_paths(g):
            raise InputFormatError(f"--granularity module: {path} has no module scopes in its node names "
                                   "(layer), so its ops cannot be grouped by module")
        depth = args.depth if args.depth is not None else repeated_blocks(g).depth
        source["depth"] = depth
        return coarsen_modules(OpGraph(g.nx.copy(), name=g.name, default_cluster=g.default_cluster,
                                       notes=g.notes, source=source), depth)
    return OpGraph(g.nx.copy(), name=g.name, default_cluster=g.default_cluster, notes=g.notes, source=source)
