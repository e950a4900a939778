"""The exact throughput DP on every published throughput workload.

Each workload runs in its own subprocess (so peak memory and first-call costs are that run's own); file loading
is not timed. Prints supernodes, ideals, (J, I) pairs the DP examined, the kernel of its exact pass (``c``:
compiled, ``numpy``), solver wall and CPU seconds, peak resident memory, the optimum (max-load), the authors' C++
DP CPU seconds and peak resident MB (``--cpp``) and the ratio (C++ CPU / ours).

The C++ figures are those measured on this machine (table ``AUTHORS``), or, with ``--cpp PATH``, the authors'
``throughput-dp/dp.cpp`` run side by side (its user + system CPU and peak resident memory from ``os.wait4``, the
rusage of that one process, microsecond resolution; built outside this repository, never vendored:
``g++ -O3 -march=native -std=c++17 -o /work/cpp-dp/dp throughput-dp/dp.cpp`` in a checkout of
github.com/msr-fiddle/dnn-partitioning). InceptionV3 takes the C++ 28 (inference) and 52 (training) minutes and
17.8 GB here, so ``--cpp`` skips it unless ``--cpp-all``. ``--repeat N`` runs each side N times (fresh processes)
and prints the range of the CPU times (min–max) and the ratio of the medians; on a shared machine the small
workloads vary by ±30 % from run to run.

``--floor`` also times the ``single-device`` baseline the same way (fresh process, CPU of its one
``run_solver`` call): what any solver pays for the solver contract alone (options, compiling the problem, the
evaluation, the ``Placement``), and so the largest C++ / ours ratio a solver of that contract could reach
(``C++ / floor``) — on BERT-24 it is below 10.

    .venv/bin/python benchmarks/dp.py                          # all workloads
    .venv/bin/python benchmarks/dp.py gnmt                     # those whose path contains 'gnmt'
    .venv/bin/python benchmarks/dp.py --cpp /work/cpp-dp/dp    # and time the C++ side by side
    .venv/bin/python benchmarks/dp.py --cpp /work/cpp-dp/dp --repeat 5 bert24 resnet50 bert_l-3
    .venv/bin/python benchmarks/dp.py --cpp /work/cpp-dp/dp --repeat 7 --floor bert24
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

from _common import WORKLOADS, run_isolated, timed_solve, workloads_available

#: The authors' C++ DP on this machine, CPU seconds (user + system from getrusage, microsecond resolution; g++ -O3
#: -march=native): the middle of the range measured 2026-12-01 14:40-14:50 with ``--cpp --repeat 3`` (``--repeat
#: 7`` for BERT-24, ResNet-50 and BERT-L3), machine shared (load average 1.2-1.7). InceptionV3: one run each,
#: 2026-12-07 with ``--cpp-all inceptionv3`` (inference 28.3 minutes, training 52.4 minutes, 17.8 GB each).
AUTHORS = {
    "LayerGraphs/bert24_inference": 0.0042, "LayerGraphs/bert24_training": 0.0058,
    "LayerGraphs/gnmt_inference": 11.47, "LayerGraphs/gnmt_training": 21.89,
    "LayerGraphs/resnet50_inference": 0.134, "LayerGraphs/resnet50_training": 0.176,
    "OperatorGraphs/bert_L-12_training": 26.10, "OperatorGraphs/bert_l-12_inference": 11.12,
    "OperatorGraphs/bert_l-3_inference": 0.95, "OperatorGraphs/bert_l-3_training": 5.26,
    "OperatorGraphs/bert_l-6_inference": 3.30, "OperatorGraphs/bert_l-6_training": 22.36,
    "OperatorGraphs/resnet50_inference": 0.168, "OperatorGraphs/resnet50_training": 0.345,
    "LayerGraphs/inceptionv3_inference": 1697.8, "LayerGraphs/inceptionv3_training": 3141.9,
}


def run_cpp(binary: str, path) -> tuple[float, float, float]:
    """CPU seconds (user + system), peak resident MB and max-load of the authors' DP on one workload (JSON on
    stdin), from ``os.wait4``: the rusage of that one child, so the peak is the C++'s own, not ours."""
    with open(path) as f, tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([binary], stdin=f, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise RuntimeError(f"{binary} failed on {path} (exit {proc.returncode}): "
                               f"{err.read().strip().splitlines()[-1:]}")
        out.seek(0)
        value = float(json.loads(out.read())["maxLoad"])
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, value


def run_one(path: str, solver: str = "dp") -> dict:
    from viz_place.io import load_graph
    return timed_solve(load_graph(path), solver)


def _take(argv: list[str], flag: str) -> tuple[str | None, list[str]]:
    """The value after ``flag`` in ``argv`` (or None) and ``argv`` without both."""
    if flag not in argv:
        return None, argv
    at = argv.index(flag)
    return argv[at + 1], argv[:at] + argv[at + 2:]


def _span(values: list[float], digits: int) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:.{digits}f}" if len(values) == 1 or lo == hi else f"{lo:.{digits}f}–{hi:.{digits}f}"


def main(argv: list[str]) -> int:
    if len(argv) in (2, 3) and argv[0] == "--one":
        print(json.dumps(run_one(*argv[1:])))
        return 0
    import statistics     # here, not at the top: the measured child (--one) imports no more than it needs
    if not workloads_available():
        print(f"skipped: {WORKLOADS} not found")
        return 0
    cpp_all, floor = "--cpp-all" in argv, "--floor" in argv
    argv = [a for a in argv if a not in ("--cpp-all", "--floor")]
    cpp, argv = _take(argv, "--cpp")
    repeat, argv = _take(argv, "--repeat")
    repeat = max(1, int(repeat or 1))
    paths = sorted((WORKLOADS / "throughput-inputs").glob("*/*.json"))
    if argv:
        paths = [p for p in paths if any(a in str(p) for a in argv)]
    print(f"{repeat} run(s) of each side per workload, each in a fresh process; CPU = user + system; "
          f"C++: {'measured now (' + cpp + ')' if cpp else 'the AUTHORS table in this script'}")
    head = (f"{'workload':38s} {'nodes':>5s} {'super':>5s} {'ideals':>7s} {'pairs':>11s} {'kernel':>6s} "
            f"{'wall s':>7s} {'cpu s':>15s} {'peak MB':>8s} {'optimum (max-load)':>19s} {'status':>8s} "
            f"{'C++ cpu s':>17s} {'C++ MB':>7s} {'ratio':>6s}" + (f" {'floor cpu s':>15s} {'C++ / floor':>11s}" if floor else ""))
    print(head)
    print("-" * len(head))
    for path in paths:
        name = f"{path.parent.name}/{path.stem}"
        runs = [run_isolated(__file__, str(path)) for _ in range(repeat)]
        failed = [r for r in runs if isinstance(r, str)]
        if failed:
            print(f"{name:38s} failed: {failed[0]}")
            continue
        r = runs[0]
        ours = [x["cpu"] for x in runs]
        authors = [AUTHORS[name]] if name in AUTHORS else []
        cpp_peak: list[float] = []
        if cpp is not None and (cpp_all or "inceptionv3" not in name):
            authors = []
            for _ in range(repeat):
                cpu, cpp_mb, cpp_value = run_cpp(cpp, path)
                authors.append(cpu)
                cpp_peak.append(cpp_mb)
                if abs(cpp_value - r["value"]) > 1e-6 * max(1.0, abs(r["value"])):
                    print(f"{name}: the C++ optimum {cpp_value!r} differs from ours {r['value']!r}")
        ratio = f"{statistics.median(authors) / statistics.median(ours):6.1f}" if authors else ""
        extra = ""
        if floor:
            floors = [run_isolated(__file__, str(path), "single-device") for _ in range(repeat)]
            bad = [f for f in floors if isinstance(f, str)]
            base = [f["cpu"] for f in floors if not isinstance(f, str)]
            best = f"{statistics.median(authors) / statistics.median(base):11.1f}" if authors and base else ""
            extra = f" {_span(base, 4) if base else 'failed: ' + bad[0]:>15s} {best:>11s}"
        print(f"{name:38s} {r['nodes']:5d} {r['supernodes']:5d} {r['ideals']:7,d} {r['pairs']:11,d} "
              f"{r.get('kernel') or '':>6s} {r['wall']:7.3f} {_span(ours, 4):>15s} {r['peak_mb']:8.0f} "
              f"{r['value']:19.10g} {r['status']:>8s} {_span(authors, 4) if authors else '':>17s} "
              f"{f'{max(cpp_peak):7.0f}' if cpp_peak else '':>7s} {ratio:>6s}"
              f"{extra}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
