"""Fuzz every registered solver on 1,000 seeded random instances and print the failures (if any).

The checks are :mod:`viz_place.fuzzing`'s (the same as ``tests/test_fuzz.py``,
which runs 80 instances): valid placements, claimed value = evaluator, exact
solvers agree on the same set (``dp`` = ``ilp`` on pipeline splits), no
placement below a proven optimum of a set it belongs to, bounds never above
values, brute force on the smallest instances. MILPs alternate CBC and HiGHS.
A second, medium tier (12–22 nodes, ``--medium`` instances) runs the exact
solvers on both back-ends and compares their optima (how CBC's false "optimal"
of issue #13 would show).

    .venv/bin/python benchmarks/fuzz.py                 # 1,000 small + 30 medium instances (~20 minutes here)
    .venv/bin/python benchmarks/fuzz.py --instances 100 --medium 0 --seed 0 --backends cbc
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from viz_place.fuzzing import MEDIUM_LABELS, fuzz  # noqa: E402
from viz_place.solvers.milp import available_backends  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=100_000, help="first seed (the tests use 1000-1079)")
    ap.add_argument("--backends", default=",".join(b for b in ("cbc", "highs") if b in available_backends()))
    ap.add_argument("--medium", type=int, default=30, help="instances of the medium tier (needs HiGHS; 0 = skip)")
    args, _ = ap.parse_known_args(argv)
    t0 = time.perf_counter()

    def progress(i, report):
        if (i + 1) % 50 == 0:
            print(f"  {i + 1:5d} instances, {report.runs:6,} runs, {len(report.failures)} failures, "
                  f"{time.perf_counter() - t0:6.0f} s", flush=True)
    report = fuzz(range(args.seed, args.seed + args.instances), backends=tuple(args.backends.split(",")),
                  progress=progress)
    print()
    print(f"| solver | seconds in all | per instance |")
    print(f"|---|---|---|")
    for label, secs in sorted(report.per_solver_seconds.items(), key=lambda t: -t[1]):
        print(f"| {label} | {secs:.1f} | {secs / max(1, report.instances):.3f} |")
    print()
    print("what the runs said: " + ", ".join(f"{k} {v:,}" for k, v in sorted(report.events.items())))
    print(f"backends {args.backends}; brute-forced {report.brute_forced:,} instances; "
          f"{report.seconds:.0f} s wall")
    print(report.summary())
    for seed, label, what in report.failures[:50]:
        print(f"  seed {seed}: {what}")
    failed = bool(report.failures)
    if args.medium and "highs" in available_backends():
        print(f"\nmedium tier (12-22 nodes): {', '.join(MEDIUM_LABELS)}", flush=True)
        med = fuzz(range(args.seed, args.seed + args.medium), solvers=MEDIUM_LABELS, sizes=(12, 22), brute_max=0,
                   progress=progress)
        print("what the runs said: " + ", ".join(f"{k} {v:,}" for k, v in sorted(med.events.items())))
        print(f"{med.seconds:.0f} s wall")
        print(med.summary())
        for seed, label, what in med.failures[:50]:
            print(f"  seed {seed}: {what}")
        failed = failed or bool(med.failures)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
