"""``viz-place solve`` and ``viz-place compare`` — generic over the solver registry."""
from __future__ import annotations

import dataclasses
import json
import math
import sys

from ..cost import evaluate
from ..errors import SolverError
from ..io import write_paper_split, write_placement, write_placement_csv
from ..model import OBJECTIVES
from ..solver_files import read_option_files
from ..solvers import get_solver, list_solvers, make_options, run_solver
from .common import add_graph_args, cluster_for, fmt, load_graph_arg, pins_for, print_json, print_table

#: How the human-readable output names the set a bound holds for.
BOUND_SET_TEXT = {"pipeline": "pipeline splits", "convex": "per-device convex placements", "any": "every placement"}

#: Flags that map onto a solver option of the same meaning, when the solver has it.
FLAG_OPTIONS = {"time_limit": "--time-limit", "gap": "--gap", "backend": "--backend", "seed": "--seed",
                "policy": "--policy"}


def add_parsers(sub) -> None:
    p = sub.add_parser("solve", help="place a graph with one solver")
    add_graph_args(p, pins=True)
    p.add_argument("--solver", required=True, help="solver name (see `viz-place solvers`)")
    p.add_argument("--out", metavar="FILE", help="write the placement here")
    p.add_argument("--format", choices=("ours", "paper", "csv"), default="ours", help="format of --out")
    _add_option_flags(p)
    p.set_defaults(run=run_solve)
    p = sub.add_parser("compare", help="run several solvers and tabulate value, status, time")
    add_graph_args(p, pins=True)
    p.add_argument("--solvers", required=True, help="comma-separated solver names")
    _add_option_flags(p)
    p.set_defaults(run=run_compare)
    p = sub.add_parser("solvers", help="list the available solvers and their options")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=run_list)


def _add_option_flags(p) -> None:
    p.add_argument("--time-limit", type=float, metavar="S", help="time limit in seconds")
    p.add_argument("--gap", type=float, help="relative MIP gap")
    p.add_argument("--backend", help="MILP back-end (cbc, highs)")
    p.add_argument("--seed", type=int, help="random seed")
    p.add_argument("--policy", metavar="FILE", help="RL policy file (.npz)")
    p.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                   help="any solver option (VALUE parsed as JSON, else a string); repeatable")


def _options_for(info, args, *, strict: bool = True) -> dict:
    names = {f.name for f in dataclasses.fields(info.options_cls)}
    opts = {}
    for field_name, flag in FLAG_OPTIONS.items():
        value = getattr(args, field_name, None)
        if value is None:
            continue
        if field_name in names:
            opts[field_name] = value
        elif strict:
            raise SolverError(f"solver {info.name!r} has no option for {flag}; its options: {sorted(names) or 'none'}",
                              field=field_name)
    for item in args.option:
        if "=" not in item:
            raise SolverError(f"--option {item!r}: expected KEY=VALUE", field="option")
        key, raw = item.split("=", 1)
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        opts[key.strip().replace("-", "_")] = value
    return opts


def _run_one(name, g, cluster, pins, args, *, strict=True):
    info = get_solver(name)
    opts = make_options(info.options_cls, read_option_files(name, g, cluster, _options_for(info, args, strict=strict)))
    placement = run_solver(name, g, cluster, pins=pins, options=opts)
    ev = evaluate(g, cluster, placement, pins=pins)
    return info, placement, ev


def _row(info, placement, ev) -> dict:
    objective = placement.objective or info.objective
    value = placement.claimed_value
    if value is None:
        value = ev.value(objective) if objective in OBJECTIVES else ev.max_load
    return {"solver": info.name, "objective": objective, "value": value, "status": placement.status,
            "seconds": placement.wall_time, "message": placement.message,
            "lower_bound": placement.lower_bound, "bound_set": placement.bound_set, "max_load": ev.max_load,
            "throughput": ev.throughput, "latency": ev.latency, "feasible": ev.feasible,
            "violations": list(ev.violations), "bottleneck": ev.bottleneck}


def run_solve(args) -> int:
    g = load_graph_arg(args.graph, args)
    cluster = cluster_for(g, args.devices)
    pins = pins_for(g, cluster, args.pins)
    info, placement, ev = _run_one(args.solver, g, cluster, pins, args)
    if args.out:
        if args.format == "paper":
            write_paper_split(args.out, g, cluster, placement, ev.max_load)
        elif args.format == "csv":
            write_placement_csv(args.out, g, placement, pins)
        else:
            write_placement(args.out, g, cluster, placement, pins=pins, evaluation=ev)
    row = _row(info, placement, ev)
    if args.json:
        row["options"] = dict(placement.options)
        row["devices"] = [d.to_dict() for d in ev.devices]
        row["assignment"] = dict(placement.assignment)
        print_json(row)
        return 0
    print(f"{info.name}: {row['objective']} value {fmt(row['value'])} ({row['status']}) in {fmt(row['seconds'])} s")
    print(f"max-load {fmt(ev.max_load)}, throughput {fmt(ev.throughput)}, latency {fmt(ev.latency)}, "
          f"bottleneck {ev.bottleneck}")
    if placement.lower_bound is not None:
        print(f"proven lower bound {fmt(placement.lower_bound)} over {BOUND_SET_TEXT[placement.bound_set]}")
    if placement.message:
        print(placement.message)
    for v in ev.violations:
        print(f"violation: {v}")
    if args.out:
        print(f"wrote {args.out}")
    return 0


def run_compare(args) -> int:
    g = load_graph_arg(args.graph, args)
    cluster = cluster_for(g, args.devices)
    pins = pins_for(g, cluster, args.pins)
    names = [s.strip() for s in args.solvers.split(",") if s.strip()]
    for name in names:
        get_solver(name)
    rows = []
    for name in names:
        try:
            rows.append(_row(*_run_one(name, g, cluster, pins, args, strict=False)))
        except SolverError as err:
            rows.append({"solver": name, "objective": get_solver(name).objective, "value": None,
                         "status": "error", "seconds": None, "message": str(err)})
    best: dict[str, float] = {}
    for r in rows:
        v = r.get("value")
        if isinstance(v, (int, float)) and math.isfinite(v) and r.get("feasible", False):
            best[r["objective"]] = min(best.get(r["objective"], math.inf), v)
    for r in rows:
        b, v = best.get(r["objective"]), r.get("value")
        r["ratio_to_best"] = (v / b if b else (1.0 if v == 0 else None)) if isinstance(v, (int, float)) and b is not None else None
    if args.json:
        print_json(rows)
        return 0
    print_table(["solver", "objective", "value", "status", "seconds", "ratio"],
                [[r["solver"], r["objective"], r.get("value"), r["status"], r.get("seconds"), r["ratio_to_best"]]
                 for r in rows])
    for r in rows:
        if r["status"] == "error":
            print(f"{r['solver']}: {r['message']}", file=sys.stderr)
    return 0


def run_list(args) -> int:
    from ..solvers import option_specs
    rows = []
    for s in list_solvers():
        rows.append({"name": s.name, "objective": s.objective, "exact": s.exact, "description": s.description,
                     "options": [{k: (v.__name__ if isinstance(v, type) else str(v) if k == "type" else v)
                                  for k, v in o.items()} for o in option_specs(s.options_cls)]})
    if args.json:
        print_json(rows)
        return 0
    print_table(["solver", "objective", "exact", "description"],
                [[r["name"], r["objective"], r["exact"], r["description"]] for r in rows])
    return 0
