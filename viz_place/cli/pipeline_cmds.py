"""``viz-place export``, ``viz-place run-pipeline`` and ``viz-place calibrate-link``: a placement
of a PyTorch model, out to the frameworks that run it and run for real on this machine.

See README, "Run the placement as a PyTorch pipeline".
"""
from __future__ import annotations

import json
import os

from ..errors import InputFormatError
from ..io import atomic_write_json, atomic_write_text, load_placement, write_nodelink
from .common import cluster_for, fmt, load_graph_arg, print_json, print_table
from .model_args import add_model_args

EXPORT_FORMATS = ("pipelining", "device-map", "script")


def add_parsers(sub) -> None:
    p = sub.add_parser("export", help="export a placement for PyTorch: pipelining split, device_map or a script")
    p.add_argument("graph", help="graph file written by import, or a model SPEC hf:MODEL_TYPE (with the model flags)")
    p.add_argument("placement", help="placement JSON (ours or the paper's split)")
    add_model_args(p)
    p.add_argument("--format", required=True, choices=EXPORT_FORMATS,
                   help="pipelining: split_spec JSON; device-map: module -> device JSON; script: runnable .py")
    p.add_argument("--out", required=True, metavar="FILE", help="write here (atomically)")
    p.add_argument("--devices", metavar="FILE", help="devices JSON the placement refers to")
    p.add_argument("--torch-device", action="append", default=[], metavar="DEVICE=TORCH",
                   help="device-map: torch device of one of our devices (gpu:1=cuda:1, cpu:0=cpu, fpga:0=0)")
    p.add_argument("--microbatches", type=int, default=4, metavar="M", help="script: default microbatches")
    p.add_argument("--json", action="store_true", help="print what was written as JSON")
    p.set_defaults(run=run_export)

    p = sub.add_parser("run-pipeline", help="run a placement as a pipeline of CPU processes and measure it")
    p.add_argument("graph", help="graph file written by import from a SPEC (it records how to rebuild the model), "
                                 "or the SPEC itself with the model flags")
    p.add_argument("placement", help="placement JSON (ours or the paper's split)")
    add_model_args(p)
    p.add_argument("--devices", metavar="FILE", help="devices JSON the placement refers to")
    p.add_argument("--microbatches", type=int, default=8, metavar="M", help="microbatches per stream (default 8)")
    p.add_argument("--repeats", type=int, default=3, metavar="R", help="timed streams after one warm-up (default 3)")
    p.add_argument("--transport", choices=("shm", "gloo"), default="shm",
                   help="shm: shared-memory buffers allocated once (default); gloo: ScheduleGPipe over loopback "
                        "(Schedule1F1B training steps when the graph has backward nodes, import --training)")
    p.add_argument("--link", metavar="FILE", help="link calibration from calibrate-link (default: measure one first)")
    p.add_argument("--save-link", metavar="FILE", help="write the calibration used here")
    p.add_argument("--timeout", type=float, default=900.0, metavar="S", help="give up on a silent stage after S s")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.set_defaults(run=run_run_pipeline)

    p = sub.add_parser("calibrate-link", help="ping-pong the pipeline transport: per-message latency and bandwidth")
    p.add_argument("--transport", choices=("shm", "gloo"), default="shm")
    p.add_argument("--out", required=True, metavar="LINK.json", help="write the calibration here")
    p.add_argument("--graph", help="also price this graph's transfers with the link (a file or a SPEC) ...")
    p.add_argument("--graph-out", metavar="FILE", help="... and write it here (node-link JSON)")
    p.add_argument("--stages", type=int, default=2, metavar="N",
                   help="with --devices-out: processes in the devices file (default 2)")
    p.add_argument("--devices-out", metavar="FILE", help="write a devices JSON of N processes paying the link")
    p.add_argument("--json", action="store_true")
    add_model_args(p)
    p.set_defaults(run=run_calibrate)


def _torch_devices(items: list[str]) -> dict:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise InputFormatError(f"--torch-device {item!r}: expected DEVICE=TORCH_DEVICE (gpu:0=0, cpu:0=cpu)")
        out[key] = int(value) if value.isdigit() else value
    return out


def run_export(args) -> int:
    from ..io.torch_export_placement import (DEVICE_MAP_FORMAT, accelerate_device_map, default_torch_devices,
                                              device_map, pipeline_script, pipeline_split)
    graph = load_graph_arg(args.graph, args)
    cluster = cluster_for(graph, args.devices) if (args.devices or graph.default_cluster) else None
    if cluster is None:
        raise InputFormatError(f"graph {graph.name!r} carries no device set; pass --devices FILE")
    placement, _ = load_placement(args.placement, graph, cluster)
    if args.format == "pipelining":
        split = pipeline_split(graph, placement)
        payload = split.to_dict(graph.source)
        atomic_write_json(args.out, payload)
        summary = {"format": args.format, "out": args.out, "stages": split.num_stages, "split_spec": split.split_spec,
                   "devices": list(split.devices)}
    elif args.format == "device-map":
        modules = device_map(graph, placement)
        kinds = {}
        for d in set(modules.values()):
            kinds[d] = cluster.device_class_of(d).kind if cluster.has_device(d) else "cpu"
        torch_devs = default_torch_devices(sorted(set(modules.values())), kinds)
        torch_devs.update(_torch_devices(args.torch_device))
        payload = {"format": DEVICE_MAP_FORMAT, "graph": graph.name,
                   "device_map": accelerate_device_map(modules, torch_devs), "modules": modules,
                   "devices": {d: torch_devs[d] for d in sorted(set(modules.values()))}}
        atomic_write_json(args.out, payload)
        summary = {"format": args.format, "out": args.out, "modules": len(modules), "device_map": payload["device_map"]}
    else:
        if isinstance(args.microbatches, bool) or args.microbatches < 1:
            raise InputFormatError(f"--microbatches {args.microbatches}: must be >= 1")
        split = pipeline_split(graph, placement)
        atomic_write_text(args.out, pipeline_script(graph, split, graph.source, microbatches=args.microbatches))
        summary = {"format": args.format, "out": args.out, "stages": split.num_stages, "split_spec": split.split_spec}
    if args.json:
        print_json(summary)
    else:
        print(f"{args.out}: {args.format} export, " + ", ".join(f"{k} {v}" for k, v in summary.items()
                                                              if k not in ("format", "out")))
    return 0


def run_run_pipeline(args) -> int:
    from ..runtime import read_link, run_pipeline, write_link
    from ..runtime.calibrate import calibrate_link
    graph = load_graph_arg(args.graph, args)
    cluster = cluster_for(graph, args.devices) if (args.devices or graph.default_cluster) else None
    if cluster is None:
        raise InputFormatError(f"graph {graph.name!r} carries no device set; pass --devices FILE")
    placement, _ = load_placement(args.placement, graph, cluster)
    for flag, value in (("--microbatches", args.microbatches), ("--repeats", args.repeats)):
        if value < 1:
            raise InputFormatError(f"{flag} {value}: must be >= 1")
    from ..io.torch_export_placement import pipeline_split
    from ..runtime.run import check_training_run
    pipeline_split(graph, placement)  # refuse a placement that is no pipeline before measuring anything
    if graph.is_training:
        check_training_run(graph, args.transport)
    link = read_link(args.link) if args.link else calibrate_link(args.transport)
    if args.save_link:
        write_link(args.save_link, link)
    say = None if args.json else (lambda msg: print(f"... {msg}", flush=True))
    run = run_pipeline(graph, placement, link=link, microbatches=args.microbatches, repeats=args.repeats,
                       transport=args.transport, timeout=args.timeout, progress=say)
    if args.json:
        print_json(run.to_dict())
        return 0
    print(f"{run.graph}: {run.stages} stages over {run.transport}, split at {run.split_spec}; "
          f"{run.microbatches} microbatches, costs: {run.costs}")
    print(f"outputs match the unsplit model: {run.outputs_match} (max abs diff {fmt(run.max_abs_diff)})")
    if run.training:
        print(f"training (1F1B): gradients match the unsplit model's: {run.grads_match} "
              f"(max abs diff {fmt(run.grads_max_abs_diff)})")
    print(f"time per sample (ms): measured {fmt(run.measured_time_per_sample)}, predicted "
          f"{fmt(run.predicted_time_per_sample)} (measured/predicted {fmt(run.ratio)}); one process "
          f"{fmt(run.single_process_time_per_sample)}; with fill and drain {fmt(run.wall_time_per_sample)}")
    print_table(["stage", "device", "nodes", "compute", "transfer", "wait", "pred. compute", "pred. comm."],
                [[s.stage, s.device, s.nodes, s.measured_compute, s.measured_transfer, s.measured_wait,
                  s.predicted_compute, s.predicted_communication] for s in run.per_stage])
    print(f"link ({link.transport}): {fmt(link.latency_ms * 1e3)} us per message + "
          f"{fmt(link.bandwidth_bytes_per_ms * 1e3 / 1e9)} GB/s (calibrated {link.measured_at or 'earlier'})")
    return 0


def run_calibrate(args) -> int:
    from ..runtime import runtime_problem, write_link
    from ..runtime.calibrate import calibrate_link
    if (args.graph is None) != (args.graph_out is None):
        raise InputFormatError("--graph and --graph-out go together")
    if args.stages < 1:
        raise InputFormatError(f"--stages {args.stages}: must be >= 1")
    graph = load_graph_arg(args.graph, args) if args.graph else None
    link = calibrate_link(args.transport)
    write_link(args.out, link)
    if graph is not None:
        priced, _ = runtime_problem(graph, link, args.stages)
        write_nodelink(args.graph_out, priced)
    if args.devices_out:
        from ..runtime.costs import runtime_cluster
        atomic_write_json(args.devices_out, runtime_cluster(args.stages).to_dict())
    if args.json:
        print_json(link.to_dict())
        return 0
    print(f"{args.out}: {link.transport} link, {fmt(link.latency_ms * 1e3)} us per message + "
          f"{fmt(link.bandwidth_bytes_per_ms * 1e3 / 1e9)} GB/s")
    print_table(["bytes", "round trip (ms)", "model (ms)"],
                [[b, t, 4 * link.cost_ms(b)] for b, t in link.points])
    return 0
