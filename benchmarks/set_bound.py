"""The set-partitioning bound at given thresholds: can column generation refute ``T`` in time?

For each threshold ``T``, runs :func:`viz_place.solvers.milp.set_bound.refute` on a generated graph (default
the training graph that ``ilp-noncontig`` cannot prove within 1 % in 300 s) for at most ``--seconds``, and
prints whether ``T`` was refuted (proven: every placement has max-load above ``T``), the certificate, the
master's last value, the rounds, columns and seconds; ``--log`` adds the certificate rounds (time, master
value, certificate, columns, smoothing, pricing seconds per device type).

    .venv/bin/python benchmarks/set_bound.py 46.0 --seconds 900
    .venv/bin/python benchmarks/set_bound.py 46.0 --seconds 900 --pricing milp     # as before the pricing DP
    .venv/bin/python benchmarks/set_bound.py 46.2 --seconds 900 --pricing exact-attempts
    .venv/bin/python benchmarks/set_bound.py 45.5 46.0 46.4 --graph residual:75:2:training --seconds 150 --log

``--worker VALUES`` runs instead the loop of the process ``ilp-noncontig`` starts beside its integer program
(:func:`viz_place.solvers.milp.set_bound_worker._work`, here in this process, with no start placement) for
``--seconds``, the best value known changing at the given times (``seconds:value,...``), and prints what it
proves and when (the thresholds given are ignored, pass any):

    .venv/bin/python benchmarks/set_bound.py 0 --worker 0:65.354,27:64.192,52:64.0058 \
        --graph inception:100:2:training --seconds 284 --gap 0.01
"""
from __future__ import annotations

import argparse
import time

from viz_place.cost import compile_problem
from viz_place.samples import make_graph
from viz_place.solvers.groups import allowed_devices
from viz_place.solvers.milp.set_bound import ExactPricer, Pricer, Sources, device_types, refute


class _AttemptsOnly:
    """The MILP in the short rounds, the label DP when refute gives a certificate attempt its full time
    (``--pricing exact-attempts``, the first version of the exact pricing)."""

    last_skipped = False

    def __init__(self, milp, exact, full: float = 30.0):
        self.milp, self.exact, self.full = milp, exact, full
        self.last_seconds = 0.0

    def solve(self, pi, T, time_limit, abs_gap=1e-7, start=None, floor=0.0):
        p = self.exact if time_limit >= self.full else self.milp
        out = p.solve(pi, T, time_limit, abs_gap=abs_gap, start=start)
        self.last_seconds = p.last_seconds
        return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("thresholds", type=float, nargs="+", help="the thresholds T to refute")
    ap.add_argument("--graph", default="residual:75:2:training", help="family:nodes:seed[:training]")
    ap.add_argument("--seconds", type=float, default=150.0, help="time per threshold (default 150)")
    ap.add_argument("--log", action="store_true", help="also print the certificate rounds")
    ap.add_argument("--attempt-every", type=float, default=None,
                    help="seconds between certificate attempts (default: refute's own)")
    ap.add_argument("--pricing", choices=("exact", "milp", "exact-attempts"), default="exact",
                    help="every round prices with the label DP (default, as ilp-noncontig does), or the MILP, or "
                         "the MILP with the label DP for the certificate attempts only (exact-attempts)")
    ap.add_argument("--ladder", action="store_true",
                    help="carry the columns from each threshold to the next (as the set bound beside the integer "
                         "program keeps them when it retargets) and print the cumulative seconds")
    ap.add_argument("--worker", default="", help="seconds:value,... — run the set bound's worker loop with the "
                    "best value known changing at these times (see above)")
    ap.add_argument("--fixed-smoothing", action="store_true",
                    help="Wentges smoothing at 0.7, halved on a mis-price (before the automatic smoothing)")
    ap.add_argument("--no-beam", action="store_true", help="the exact pricing without its beam run first")
    ap.add_argument("--no-beam-rounds", action="store_true",
                    help="no rounds priced by the beam alone between the local search's and the exact ones")
    ap.add_argument("--no-skip", action="store_true",
                    help="price the slowest type exactly even where its beam shows the round cannot beat the best "
                         "certificate")
    ap.add_argument("--keep", type=int, default=None, help="sets per pricing call (default SETS_PER_CALL)")
    ap.add_argument("--gap", type=float, default=0.01, help="with --worker: the requested gap (default 0.01)")
    args = ap.parse_args(argv)
    fam, n, seed, *rest = args.graph.split(":")
    g = make_graph(fam, int(n), int(seed), training=bool(rest and rest[0] == "training"))
    prob = compile_problem(g, g.default_cluster)
    if args.worker:
        return _worker(prob, args)
    types = device_types(prob, allowed_devices(prob, {}))
    sources = Sources.of(prob)
    print(f"{g.name}: {len(prob.groups)} groups, device types "
          + ", ".join(f"{len(t.devices)} x {prob.device_names[t.devices[0]].split(':')[0]}" for t in types))
    print(f"{'T':>8} {'refuted':>8} {'certificate':>12} {'master':>9} {'rounds':>7} {'columns':>8} {'seconds':>8}")
    pool: list = []
    t_start = time.perf_counter()
    for T in args.thresholds:
        pricers = [Pricer(t, sources, threads=1) for t in types]
        exact = [ExactPricer(t, sources) for t in types] if args.pricing != "milp" else None
        for e in exact or []:
            e.beam = 0 if args.no_beam else e.beam
            e.keep = args.keep or e.keep
        more = {"attempt_every": args.attempt_every} if args.attempt_every is not None else {}
        if args.pricing == "exact-attempts":   # the MILP in the rounds, the label DP in the attempts
            pricers = [_AttemptsOnly(p, e) for p, e in zip(pricers, exact)]
            exact = None
        r = refute(types, sources, T, pricers=pricers, exact=exact, deadline=time.perf_counter() + args.seconds,
                   columns=pool, auto_smoothing=not args.fixed_smoothing, beam_rounds=not args.no_beam_rounds,
                   skip_exact=not args.no_skip,
                   **more)
        if args.ladder:
            pool = r.pool
        print(f"{T:8.4f} {str(r.refuted):>8} {r.certificate:12.6f} {r.lp_value:9.6f} {r.iterations:7d} "
              f"{r.columns:8d} {r.seconds:8.1f}" + (f"  (from the start: {time.perf_counter() - t_start:.1f} s)"
                                                   if args.ladder else ""), flush=True)
        if args.log:
            for row in r.log:
                if row[2] is not None:
                    print("   ", row)
    return 0


def _worker(prob, args) -> int:
    """``--worker``: the set bound's worker loop in this process, its messages printed with their time."""
    import queue
    import threading
    from types import SimpleNamespace

    from viz_place.cost import simple_lower_bound
    from viz_place.solvers.milp.max_load import FLOOR_EXACT_NODES
    from viz_place.solvers.milp.set_bound_worker import _work
    values = [tuple(float(x) for x in item.split(":")) for item in args.worker.split(",")]
    floor = simple_lower_bound(prob.graph, prob.cluster, exact_nodes=FLOOR_EXACT_NODES)[0]
    best, out, t0 = SimpleNamespace(value=values[0][1]), queue.Queue(), time.perf_counter()
    print(f"{prob.graph.name}: floor {floor:.6g}, gap {args.gap:g}, best value {best.value:.6g} at first")

    def offer() -> None:                     # the parent's better placements, at their times
        for at, value in values[1:]:
            time.sleep(max(0.0, at - (time.perf_counter() - t0)))
            best.value = min(best.value, value)
            print(f"{time.perf_counter() - t0:7.1f} s  best value {value:.6g}", flush=True)
    threading.Thread(target=offer, daemon=True).start()
    done = threading.Event()

    def show() -> None:
        while True:
            kind, bound, message, *_ = out.get()
            print(f"{time.perf_counter() - t0:7.1f} s  {kind:9s} {bound:.6g}  {message}", flush=True)
            if kind == "done":
                done.set()
                return
    threading.Thread(target=show, daemon=True).start()
    _work(prob, allowed_devices(prob, {}), floor, args.gap, [], args.seconds, best, out)
    done.wait(5)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
