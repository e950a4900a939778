"""``viz-place solve`` and ``viz-place compare`` — generic over the solver registry.

>>> from viz_place.cli.main import main
>>> main(["compare", "chain", "--solvers", "dp,topo-fill"])                  # doctest: +ELLIPSIS
solver ...
dp ...
topo-fill ...
0
>>> main(["solve", "chain", "--solver", "no-such"])                          # the one-line error is on stderr
2
"""
from __future__ import annotations

import dataclasses
import json
import sys

from ..cost import evaluate
from ..errors import SolverError, VizPlaceError
from ..io import write_paper_split, write_placement, write_placement_csv
from ..model import OBJECTIVES
from ..solver_files import read_option_files
from ..results import OBJECTIVE_LABELS, annotate_rows, format_gap, objective_key, placement_fields, simple_bound
from ..solvers import get_solver, list_solvers, make_options, run_solver
from .common import (EXIT_INTERRUPTED, add_graph_args, cluster_for, finite_number, fmt, interrupt_to_cancel,
                     load_graph_arg, pins_for, positive_seconds, print_json, print_table)

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
    p.add_argument("--time-limit", type=positive_seconds, metavar="S",
                   help="time limit in seconds, > 0 (leave it out for the solver's default)")
    p.add_argument("--gap", type=finite_number, help="stop once value / bound - 1 is at most this (0.01 = within 1 %%)")
    p.add_argument("--backend", help="MILP back-end (cbc, highs)")
    p.add_argument("--seed", type=int, help="random seed")
    p.add_argument("--policy", metavar="FILE", help="RL policy file (.npz)")
    p.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                   help="any solver option (VALUE parsed as JSON, else a string); repeatable")


def _parse_option_items(items: list[str]) -> dict:
    """``-o KEY=VALUE`` items as a dict; VALUE is JSON when it parses, else a string."""
    out = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise SolverError(f"--option {item!r}: expected KEY=VALUE", field="option")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        except RecursionError:
            raise SolverError(f"--option {item[:40]!r}...: VALUE is nested too deeply", field=key) from None
        out[key] = value
    return out


def _options_for(info, args, *, strict: bool = True) -> dict:
    """The options dict for solver ``info`` from the flags and ``-o`` items.

    ``strict`` (``solve``): a flag or ``-o`` key the solver lacks is an error.
    Otherwise (``compare``): each goes only to the solvers that have it.
    """
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
    for key, value in _parse_option_items(args.option).items():
        if strict or key in names:
            opts[key] = value
    return opts


def _checked_options(info, args, g, cluster, *, strict: bool = True):
    """The solver's validated options instance; options naming files (``expert``'s ``path``) are then read."""
    opts = make_options(info.options_cls, _options_for(info, args, strict=strict))
    return read_option_files(info.name, g, cluster, opts)


def _run_one(info, opts, g, cluster, pins, cancel=None):
    placement = run_solver(info.name, g, cluster, pins=pins, options=opts, cancel=cancel)
    ev = evaluate(g, cluster, placement, pins=pins)
    return info, placement, ev


def _write_out(args, g, cluster, placement, pins, ev) -> None:
    if args.format == "paper":
        write_paper_split(args.out, g, cluster, placement, ev.max_load, evaluation=ev)
    elif args.format == "csv":
        write_placement_csv(args.out, g, placement, pins)
    else:
        write_placement(args.out, g, cluster, placement, pins=pins, evaluation=ev)


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
    """Solve; on Ctrl-C the solver stops, its best placement so far is written and the exit status is 130."""
    g = load_graph_arg(args.graph, args)
    cluster = cluster_for(g, args.devices)
    pins = pins_for(g, cluster, args.pins)
    info = get_solver(args.solver)
    opts = _checked_options(info, args, g, cluster)
    with interrupt_to_cancel() as interrupted:
        try:
            info, placement, ev = _run_one(info, opts, g, cluster, pins, cancel=interrupted)
        except VizPlaceError:
            if interrupted.is_set():
                print(f"viz-place: interrupted before {info.name} found a placement; nothing written",
                      file=sys.stderr)
                return EXIT_INTERRUPTED
            raise
        if args.out:
            _write_out(args, g, cluster, placement, pins, ev)
    row = _row(info, placement, ev)
    if args.json:
        row["options"] = dict(placement.options)
        row["devices"] = [d.to_dict() for d in ev.devices]
        row["assignment"] = dict(placement.assignment)
        print_json(row)
    else:
        print(f"{info.name}: {row['objective']} value {fmt(row['value'])} ({row['status']}) "
              f"in {fmt(row['seconds'])} s")
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
    if interrupted.is_set():
        where = f"wrote it to {args.out}" if args.out else "not written (no --out)"
        print(f"viz-place: interrupted: {info.name} stopped with its best placement so far "
              f"(status {placement.status}); {where}", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0


def _compare_names(text: str) -> list[str]:
    names = [s.strip() for s in text.split(",") if s.strip()]
    if not names:
        raise SolverError(f"--solvers {text!r}: no solver names given (e.g. --solvers dp,ilp,pipedream)",
                          field="solvers")
    return names


def _compare_options(names: list[str], args, g, cluster) -> dict[str, object]:
    """Validated options per solver, before anything runs; ``-o`` keys no listed solver has are refused."""
    infos = [get_solver(n) for n in names]
    keys = set(_parse_option_items(args.option))
    known = {f.name for info in infos for f in dataclasses.fields(info.options_cls)}
    unknown = sorted(keys - known)
    if unknown:
        raise SolverError(f"option(s) {unknown} belong to none of the solvers {', '.join(names)}", field=unknown[0])
    return {info.name: (info, _checked_options(info, args, g, cluster, strict=False)) for info in infos}


def run_compare(args) -> int:
    """Every solver in turn, each against the optimum: best known value, the best proven lower
    bound over all placements (a non-contiguous MILP's bound, or the simple bounds) and the gap.
    Exit 2 when every one of them fails, 130 when interrupted (rows so far printed)."""
    g = load_graph_arg(args.graph, args)
    cluster = cluster_for(g, args.devices)
    pins = pins_for(g, cluster, args.pins)
    names = _compare_names(args.solvers)
    prepared = _compare_options(names, args, g, cluster)
    rows = []
    with interrupt_to_cancel() as interrupted:
        for name in names:
            if interrupted.is_set():
                break
            info, opts = prepared[name]
            try:
                info, placement, ev = _run_one(info, opts, g, cluster, pins, cancel=interrupted)
                row = _row(info, placement, ev)
                row.update(placement_fields(placement, ev))
                rows.append(row)
            except SolverError as err:
                rows.append({"solver": name, "objective": objective_key(info.objective), "value": None,
                             "status": "error", "seconds": None, "message": str(err), "feasible": False})
    by_objective: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        by_objective.setdefault(r["objective"], []).append(i)
    summaries = []
    for objective, idx in by_objective.items():
        simple = simple_bound(g, cluster, objective)
        for i, r in zip(idx, annotate_rows([rows[i] for i in idx], simple)):
            rows[i] = r
        r0 = rows[idx[0]]
        summaries.append((objective, r0["best_known"], r0["best_known_source"], r0["bound"], r0["bound_source"]))
    for r in rows:
        b, v = r.get("best_known"), r.get("value")
        r["ratio_to_best"] = (v / b if b else (1.0 if v == 0 else None)) \
            if isinstance(v, (int, float)) and b is not None else None
    if args.json:
        print_json(rows)
    else:
        print_table(["solver", "objective", "value", "status", "gap", "seconds", "ratio", "note"],
                    [[r["solver"], r["objective"], r.get("value"), r["status"], format_gap(r.get("gap")),
                      r.get("seconds"), r["ratio_to_best"], r.get("note") or ""] for r in rows])
        for objective, known, known_src, bound, bound_src in summaries:
            label = OBJECTIVE_LABELS.get(objective, objective)
            print(f"{label}: best known {fmt(known)}" + (f" ({known_src})" if known_src else "")
                  + f"; best lower bound over all placements {fmt(bound)}" + (f" ({bound_src})" if bound_src else "")
                  + "; gap = value / bound - 1")
    failed = [r for r in rows if r["status"] == "error"]
    if interrupted.is_set():
        print(f"viz-place: interrupted after {len(rows)} of {len(names)} solver(s)", file=sys.stderr)
        return EXIT_INTERRUPTED
    if rows and len(failed) == len(rows):
        print("viz-place: error: every solver failed: " + "; ".join(f"{r['solver']}: {r['message']}" for r in failed),
              file=sys.stderr)
        return 2
    for r in failed:
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
