"""``viz-place sweep`` — a design sweep (graphs × devices × solvers × seeds) on Dask.

Example::

    viz-place sweep --graphs residual,inception --solvers dp,pipedream,topo-fill \\
        --accelerators 1,2,4,8 --out results.csv --workers 2
    viz-place sweep ... --out results.csv --resume                     # after a kill: finish it
    viz-place sweep ... --scheduler tcp://10.0.0.5:8786                # an existing Dask cluster

The progress bar goes to stderr; ``--json`` prints the rows (and nothing else) on stdout.
"""
from __future__ import annotations

import json
import sys
import time

from ..errors import SolverError
from .common import print_json, print_table


def add_parsers(sub) -> None:
    p = sub.add_parser("sweep", help="solve a grid of graphs x device sets x solvers on Dask")
    p.add_argument("--graphs", required=True, help="comma-separated graph files or sample names")
    p.add_argument("--solvers", required=True, help="comma-separated solver names")
    p.add_argument("--accelerators", metavar="N,N,...", help="counts of the accelerator class to try")
    p.add_argument("--vary", metavar="CLASS", help="the device class --accelerators varies (when there are several)")
    p.add_argument("--devices-grid", metavar="FILE", help="JSON list of device sets to try (default: each graph's)")
    p.add_argument("--seeds", metavar="N,N,...", help="seeds, for solvers that take one")
    p.add_argument("--time-limit", type=float, metavar="S", help="time limit per cell, for solvers that take one")
    p.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                   help="a solver option for every solver that has it (VALUE parsed as JSON); repeatable")
    p.add_argument("--out", metavar="FILE", help="results CSV, appended as cells finish")
    p.add_argument("--resume", action="store_true", help="continue --out: finished cells are not recomputed")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS", help="an existing Dask scheduler (tcp://HOST:PORT)")
    where.add_argument("--workers", type=int, metavar="N",
                       help="local worker processes (default: the cores; 0 = solve in this process)")
    p.add_argument("--no-dashboard", action="store_true", help="do not serve the Dask dashboard")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.set_defaults(run=run_sweep)


def int_list(text: str | None, flag: str) -> list[int] | None:
    if text is None:
        return None
    try:
        vals = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise SolverError(f"{flag} {text!r}: expected comma-separated whole numbers") from None
    if not vals:
        raise SolverError(f"{flag} {text!r}: no values")
    return vals


def parse_options(items: list[str]) -> dict:
    opts = {}
    for item in items:
        if "=" not in item:
            raise SolverError(f"--option {item!r}: expected KEY=VALUE")
        key, raw = item.split("=", 1)
        try:
            opts[key.strip().replace("-", "_")] = json.loads(raw)
        except json.JSONDecodeError:
            opts[key.strip().replace("-", "_")] = raw
    return opts


class ProgressBar:
    """A one-line bar on stderr (redrawn in place on a terminal, a line per 10 % otherwise)."""

    def __init__(self, stream=None, width: int = 30) -> None:
        self.stream = stream or sys.stderr
        self.width = width
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.t0 = time.monotonic()
        self.last_decile = -1
        self.shown_link = False

    def __call__(self, ev) -> None:
        if ev.dashboard and not self.shown_link:
            self.stream.write(f"dask dashboard: {ev.dashboard}\n")
            self.shown_link = True
        filled = int(self.width * ev.fraction)
        line = (f"[{'#' * filled}{'.' * (self.width - filled)}] {ev.done}/{ev.total} cells"
                f"{f' ({ev.skipped} resumed)' if ev.skipped else ''}, {time.monotonic() - self.t0:.1f} s")
        if self.tty:
            self.stream.write("\r" + line + ("\n" if ev.done == ev.total else ""))
        else:
            decile = int(10 * ev.fraction)
            if decile == self.last_decile:
                return
            self.last_decile = decile
            self.stream.write(line + "\n")
        self.stream.flush()


def run_sweep(args) -> int:
    from ..runtime.design_sweep import sweep
    graphs = [g.strip() for g in args.graphs.split(",") if g.strip()]
    solvers = [s.strip() for s in args.solvers.split(",") if s.strip()]
    if args.resume and not args.out:
        raise SolverError("--resume needs --out FILE (the results to continue)")
    if args.workers is not None and args.workers < 0:
        raise SolverError(f"--workers must be >= 0, got {args.workers}")
    table = sweep(graphs, solvers, accelerators=int_list(args.accelerators, "--accelerators"), vary=args.vary,
                  device_sets=args.devices_grid, seeds=int_list(args.seeds, "--seeds"), time_limit=args.time_limit,
                  options=parse_options(args.option), out=args.out, resume=args.resume, scheduler=args.scheduler,
                  workers=args.workers, dashboard=not args.no_dashboard, progress=ProgressBar())
    if args.json:
        print_json({"rows": table.to_records(), "resumed": table.skipped, "out": table.path,
                    "dashboard": table.dashboard})
        return 0
    print_table(["graph", "devices", "solver", "seed", "value", "status", "bound", "gap", "seconds", "worker"],
                [[r["graph"], r["devices"], r["solver"], r["seed"], r["value"], r["status"], r["bound"], r["gap"],
                  r["seconds"], r["worker"]] for r in table])
    errors = [r for r in table if r["status"] in ("error", "failed")]
    for r in errors[:5]:
        print(f"{r['graph']} / {r['devices']} / {r['solver']}: {r['message']}", file=sys.stderr)
    tail = f"; {table.skipped} finished cells resumed from {table.path}" if table.skipped else ""
    print(f"{len(table)} rows{tail}" + (f"; wrote {table.path}" if table.path else ""))
    return 0
