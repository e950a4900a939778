"""The learned placer against the best non-contiguous placement known for each test graph.

The test graphs (:mod:`_rl_refs`): ten generated graphs of 60-200 nodes, five families,
seeds never used in training, half on the generator's default cluster and half on a
*memory-bound* one (three accelerators holding 30% of the weights each: there a
non-contiguous placement can be far below the best pipeline split). The reference of
each is the incumbent of a long ``ilp-noncontig`` run, cached in
``benchmarks/data/rl_references.json`` (``--refresh-references`` recomputes it) and
re-evaluated with ``viz_place.cost.evaluate`` on load; the *best known* is the minimum
of it and of every placement this run finds (the table says which one it was).

Table 1 — the shipped policy (trained on all five families, default and memory-bound
clusters), ratios to the best known:

* ``dp``        — the DP optimum (best pipeline split: contiguous),
* ``rl-0``      — one greedy sweep of the policy from its start (milliseconds),
* ``rl<=1s``    — zero-shot: the policy as shipped (no update on the graph), ``mode=sample``,
  ``--zero-budget`` seconds (sweeps, the dp start, move/swap descents),
* ``rl<=60s``   — ``mode=finetune`` (the default) with ``--budget`` seconds,
* ``ls``        — with ``--ls``: the ``local-search`` solver for as long as ``rl<=60s`` ran.

Table 2 — generalisation: policies trained on two families only (``--splits``; cached in
``benchmarks/data/rl_split_<a>+<b>.npz``, ``--train-splits`` retrains them), on the graphs of the
other families: zero-shot and ``--split-budget`` seconds, next to the shipped policy.

Then the training curves. Timings are wall seconds (the machine may be shared).

    .venv/bin/python benchmarks/rl.py                       # ~20 minutes
    .venv/bin/python benchmarks/rl.py --refresh-references --ref-time 240    # ~40 minutes
    .venv/bin/python benchmarks/rl.py --improve-references 60     # re-solve device subsets from each, ~10 min
    .venv/bin/python benchmarks/rl.py --train-splits        # retrain the two-family policies, then run
    .venv/bin/python benchmarks/rl.py --ablation            # the search's pieces one at a time, ~7 min
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")     # the policy's products are tiny: one core each

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from _rl_refs import (REFERENCES, SPECS, checked_reference, compute_reference, improve_reference,  # noqa: E402
                      read_references, write_references)
from viz_place import run_solver  # noqa: E402   (reads --policy FILE for the solver)
from viz_place.cost import gap as gap_of  # noqa: E402
from viz_place.solvers.rl import Policy, TrainConfig, load_policy, shipped_policy_path, train_policy  # noqa: E402
from viz_place.testing import check_placement  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
DEFAULT_SPLITS = ("chain+residual", "inception+transformer")
#: the two-family policies: the shipped recipe (scripts/train_policy.py) on two families, fewer graphs and updates.
SPLIT_CONFIG = dict(sizes=(30, 150), n_graphs=20, updates=500, rollouts=4, memory_bound=0.35, seed=0, minutes=10.0)


def split_policy(split: str, retrain: bool) -> tuple[Policy, list[dict]]:
    """The policy trained on the families of ``split`` (``"a+b"``), from the cache or trained now."""
    path = DATA / f"rl_split_{split}.npz"
    hist_path = path.with_name(path.stem + "_history.json")
    if path.is_file() and not retrain:
        return Policy.load(path), json.loads(hist_path.read_text()) if hist_path.is_file() else []
    cfg = TrainConfig(families=tuple(split.split("+")), **SPLIT_CONFIG)
    t0 = time.perf_counter()
    policy, history = train_policy(cfg)
    policy.save(path)
    hist = [{"episode": h["episode"], "from_best": h["from_best"], "objective": round(h["objective"], 5),
             "best": round(h["best"], 5), "seconds": round(h["seconds"], 1)} for h in history]
    hist_path.write_text(json.dumps(hist))
    print(f"trained {path.name}: {len(history)} updates in {time.perf_counter() - t0:.0f} s", flush=True)
    return policy, hist


def solve(g, cluster, options: dict, weights: Policy | None = None) -> tuple[float, float, dict]:
    """(value, wall seconds, stats) of one rl run; the placement is checked against the evaluator."""
    opts = dict(options)
    if weights is not None:
        opts["weights"] = weights
    t0 = time.perf_counter()
    p = run_solver("rl", g, cluster, options=opts)
    wall = time.perf_counter() - t0
    problems = check_placement(g, cluster, p)
    assert not problems, problems
    return p.claimed_value, wall, p.options.get("stats", {})


def fmt(x, spec=".4f") -> str:
    return "-" if x is None else format(x, spec)


def curve(hist: list[dict], title: str, chunks: int = 8) -> None:
    if not hist:
        return
    print(f"\ntraining curve, {title} ({len(hist)} updates, {hist[-1]['seconds']:.0f} s wall):")
    print("updates      mean objective/start (fresh starts)   best so far")
    step = max(1, len(hist) // chunks)
    for lo in range(0, len(hist), step):
        chunk = [h for h in hist[lo:lo + step] if not h["from_best"]]
        mean = statistics.mean(h["objective"] for h in chunk) if chunk else float("nan")
        print(f"{lo + 1:>5}-{min(lo + step, len(hist)):<6} {mean:.4f}                                "
              f"{hist[min(lo + step, len(hist)) - 1]['best']:.4f}")


#: the search's pieces, switched on one at a time (``--ablation``).
ABLATION = {"sweeps + sampled rounds only": {"dp_start": False, "polish": False, "kicks": 0.0},
            "+ polish": {"dp_start": False, "kicks": 0.0},
            "+ kicks": {"dp_start": False},
            "+ dp start (default)": {}}


def ablation(args) -> int:
    """Each graph with the search's pieces added one by one (``--ablation-budget`` seconds each)."""
    records = read_references()
    out: dict[str, list[float]] = {k: [] for k in ABLATION}
    print(f"ablation: mode=finetune, {args.ablation_budget:g} s each, seed 0; ratio to the best known of "
          "the stored reference and these runs")
    print("graph  " + "  |  ".join(ABLATION))
    for spec in SPECS:
        g, cluster = spec.build()
        ref, _ = checked_reference(spec, records.get(spec.key), g, cluster)
        vals = [solve(g, cluster, {"mode": "finetune", "time_limit": args.ablation_budget, "seed": 0, **o})[0]
                for o in ABLATION.values()]
        best = min(v for v in (ref, *vals) if v is not None)
        for k, v in zip(ABLATION, vals):
            out[k].append(v / best)
        print(spec.key + "  " + "  ".join(f"{v / best:.4f}" for v in vals), flush=True)
    for k, v in out.items():
        print(f"{k}: median {statistics.median(v):.4f}, worst {max(v):.4f}")
    return 0


def _update_references(args, update) -> int:
    """``update(spec, stored record or None)`` -> ``(record, line)`` for each test graph (``--only``), the
    file written after each (an interrupted run keeps what it has); ``(None, _)`` leaves a graph as it is."""
    records = read_references()
    only = set(args.only.split(",")) if args.only else None
    for spec in SPECS:
        if only and spec.key not in only:
            continue
        rec, line = update(spec, records.get(spec.key))
        if rec is None:
            continue
        records[spec.key] = rec
        write_references(records)
        print(line, flush=True)
    print(f"wrote {REFERENCES}")
    return 0


def refresh(args) -> int:
    """Every reference recomputed by a ``--ref-time`` s ``ilp-noncontig`` run (a better stored one is kept)."""
    def update(spec, old):
        t0 = time.perf_counter()
        rec = compute_reference(spec, args.ref_time)
        if old is not None and old.get("fingerprint") == rec["fingerprint"] and old["value"] < rec["value"]:
            # keep the better placement; a bound proven by either run holds
            bounds = [b for b in (old.get("lower_bound"), rec["lower_bound"]) if b]
            old["lower_bound"] = max(bounds) if bounds else None
            old["gap"] = gap_of(old["value"], old["lower_bound"])
            rec = old
        return rec, (f"{spec.key}: {rec['value']:.6g} ({rec['status']}, bound {fmt(rec['lower_bound'], '.6g')}, gap "
                     f"{fmt(rec['gap'] and 100 * rec['gap'], '.2f')}%) in {time.perf_counter() - t0:.0f} s")
    return _update_references(args, update)


def improve(args) -> int:
    """Every stored reference after ``--improve-references`` seconds of re-solving device subsets."""
    def update(spec, old):
        if old is None:
            return None, ""
        rec = improve_reference(spec, old, args.improve_references)
        return rec, (f"{spec.key}: {old['value']:.6g} -> {rec['value']:.6g} "
                     f"({100 * (rec['value'] / old['value'] - 1):+.2f}%), bound {fmt(rec.get('lower_bound'), '.6g')}, "
                     f"gap {fmt(rec['gap'] and 100 * rec['gap'], '.2f')}%")
    return _update_references(args, update)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="RL placer vs the best known non-contiguous placements")
    ap.add_argument("--budget", type=float, default=60.0, help="seconds of rl search per graph (default 60)")
    ap.add_argument("--zero-budget", type=float, default=0.7,
                    help="time_limit of the zero-shot column (default 0.7: the whole run stays within 1 s)")
    ap.add_argument("--split-budget", type=float, default=10.0, help="seconds of search in table 2 (default 10)")
    ap.add_argument("--splits", default=",".join(DEFAULT_SPLITS), help="two-family training sets, 'a+b,c+d'; "
                    "'' skips table 2")
    ap.add_argument("--train-splits", action="store_true", help="retrain the two-family policies first")
    ap.add_argument("--policy", default="", help="policy file of table 1 (default: the shipped one)")
    ap.add_argument("--ls", action="store_true", help="also run local-search for as long as rl ran")
    ap.add_argument("--refresh-references", action="store_true",
                    help=f"recompute the references ({REFERENCES.name}) with long ilp-noncontig runs, then stop")
    ap.add_argument("--improve-references", type=float, default=0.0, metavar="S",
                    help="re-solve device subsets from each stored reference for S seconds, keep what is better, "
                         "then stop")
    ap.add_argument("--ref-time", type=float, default=240.0, help="seconds per ilp-noncontig reference run")
    ap.add_argument("--only", default="", help="these graph keys only (comma-separated), e.g. "
                    "'chain_100_s1005@default'")
    ap.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    ap.add_argument("--ablation", action="store_true", help="instead: the search's pieces added one at a time")
    ap.add_argument("--ablation-budget", type=float, default=10.0, help="seconds per run of --ablation (default 10)")
    args = ap.parse_args(argv)
    if args.ablation:
        return ablation(args)
    if args.refresh_references:
        return refresh(args)
    if args.improve_references:
        return improve(args)
    policy = load_policy(args.policy)
    print(f"policy: {args.policy or shipped_policy_path().name} (trained on {policy.meta.get('families')}, "
          f"sizes {policy.meta.get('sizes')}, memory-bound share {policy.meta.get('memory_bound', 0)}); "
          f"budgets {args.zero_budget:g} s / {args.budget:g} s; OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS')}")
    records = read_references()
    rows, built = [], {}
    print("\nTable 1: shipped policy, ratio to the best known non-contiguous placement")
    print("graph  nodes  cluster  best-known  source  ilp-ref(status, gap)  dp  rl-0  rl<=1s (s)  rl<=60s (s)  ls  evals")
    only = set(args.only.split(",")) if args.only else None
    for spec in SPECS:
        if only and spec.key not in only:
            continue
        g, cluster = spec.build()
        built[spec.key] = (spec, g, cluster)
        ref, note = checked_reference(spec, records.get(spec.key), g, cluster)
        rec = records.get(spec.key) or {}
        dp = run_solver("dp", g, cluster).claimed_value
        rl0, rl0_s, _ = solve(g, cluster, {"policy": args.policy, "mode": "greedy"})
        rl1, rl1_s, _ = solve(g, cluster, {"policy": args.policy, "mode": "sample", "time_limit": args.zero_budget,
                                           "seed": 0})
        rl, rl_s, stats = solve(g, cluster, {"policy": args.policy, "mode": "finetune", "time_limit": args.budget,
                                             "seed": 0})
        ls = None
        if args.ls:
            ls = run_solver("local-search", g, cluster, options={"time_limit": rl_s, "seed": 0,
                                                                  "restarts": 10_000}).claimed_value
        found = {"ilp-noncontig (stored)": ref, "dp": dp, "rl-0": rl0, "rl<=1s": rl1, "rl<=60s": rl, "local-search": ls}
        source, best = min(((k, v) for k, v in found.items() if v is not None), key=lambda kv: (kv[1], kv[0] != "ilp-noncontig (stored)"))
        row = {"key": spec.key, "graph": g.name, "nodes": g.num_nodes, "cluster": spec.cluster, "best_known": best,
               "source": source, "reference": ref, "reference_note": note, "reference_status": rec.get("status"),
               "reference_gap": rec.get("gap"), "reference_bound": rec.get("lower_bound"),
               "dp": dp / best, "rl0": rl0 / best, "rl1": rl1 / best, "rl": rl / best,
               "ls": None if ls is None else ls / best, "rl0_s": rl0_s, "rl1_s": rl1_s, "rl_s": rl_s,
               "evaluations": stats.get("evaluations"), "ref_over_best": None if ref is None else ref / best}
        rows.append(row)
        gap = rec.get("gap")
        print("  ".join([g.name, str(g.num_nodes), spec.cluster, fmt(best, ".5g"), source,
                         f"{fmt(ref, '.5g')} ({rec.get('status', '-')}, {fmt(None if gap is None else 100 * gap, '.1f')}%)",
                         fmt(row["dp"]), fmt(row["rl0"]), f"{fmt(row['rl1'])} ({rl1_s:.2f})",
                         f"{fmt(row['rl'])} ({rl_s:.0f})", fmt(row["ls"]), str(row["evaluations"])]), flush=True)
        if note:
            print(f"    note: {note}")
    r60, r1 = [r["rl"] for r in rows], [r["rl1"] for r in rows]
    print(f"\nrl<=60s / best known: median {statistics.median(r60):.4f}, worst {max(r60):.4f} (targets 1.02 / 1.05)")
    print(f"rl<=1s (zero-shot) / best known: median {statistics.median(r1):.4f}, worst {max(r1):.4f}, "
          f"slowest run {max(r['rl1_s'] for r in rows):.2f} s (target: median 1.10)")
    print(f"rl-0 (one sweep): median {statistics.median(r['rl0'] for r in rows):.4f}; "
          f"dp (contiguous optimum): median {statistics.median(r['dp'] for r in rows):.4f}, "
          f"min {min(r['dp'] for r in rows):.4f}")
    beaten = [r for r in rows if r["ref_over_best"] and r["ref_over_best"] > 1 + 1e-9]
    print(f"best known below the stored ILP incumbent on {len(beaten)}/{len(rows)} graphs"
          + (": " + ", ".join(f"{r['key']} by {r['source']} ({100 * (r['ref_over_best'] - 1):.2f}%)" for r in beaten)
             if beaten else ""))

    split_rows = []
    splits = [s for s in args.splits.split(",") if s]
    split_hists = {}
    if splits:
        print(f"\nTable 2: generalisation, policies trained on two families, on graphs of the others "
              f"(ratio to the best known of table 1; <= {args.split_budget:g} s)")
        print("trained on  graph  cluster  rl-0  rl<=1s  rl<=%gs  | shipped: rl-0  rl<=1s" % args.split_budget)
        by_key = {r["key"]: r for r in rows}
        for split in splits:
            pol, split_hists[split] = split_policy(split, args.train_splits)
            fams = set(split.split("+"))
            for key, (spec, g, cluster) in built.items():
                if spec.family in fams:
                    continue
                best = by_key[key]["best_known"]
                v0, _, _ = solve(g, cluster, {"mode": "greedy"}, pol)
                v1, _, _ = solve(g, cluster, {"mode": "sample", "time_limit": args.zero_budget, "seed": 0}, pol)
                vs, _, _ = solve(g, cluster, {"mode": "finetune", "time_limit": args.split_budget, "seed": 0}, pol)
                r = {"split": split, "key": key, "rl0": v0 / best, "rl1": v1 / best, "rl_split": vs / best,
                     "shipped_rl0": by_key[key]["rl0"], "shipped_rl1": by_key[key]["rl1"]}
                split_rows.append(r)
                print(f"{split}  {g.name}  {spec.cluster}  {r['rl0']:.4f}  {r['rl1']:.4f}  {r['rl_split']:.4f}  |  "
                      f"{r['shipped_rl0']:.4f}  {r['shipped_rl1']:.4f}", flush=True)
        for split in splits:
            sub = [r for r in split_rows if r["split"] == split]
            print(f"{split}: median rl-0 {statistics.median(r['rl0'] for r in sub):.4f}, rl<=1s "
                  f"{statistics.median(r['rl1'] for r in sub):.4f}, rl<={args.split_budget:g}s "
                  f"{statistics.median(r['rl_split'] for r in sub):.4f} (shipped on the same graphs: rl-0 "
                  f"{statistics.median(r['shipped_rl0'] for r in sub):.4f}, rl<=1s "
                  f"{statistics.median(r['shipped_rl1'] for r in sub):.4f})")

    hist_path = shipped_policy_path().with_name("rl_policy_history.json")
    if not args.policy and hist_path.is_file():
        curve(json.loads(hist_path.read_text()), "shipped policy")
    for split, hist in split_hists.items():
        curve(hist, f"policy trained on {split}", chunks=4)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"table1": rows, "table2": split_rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
