"""The exact throughput DP (solver ``dp``): the optimal *contiguous* placement for max-load.

Tarnawski et al. (NeurIPS 2020), generalised to any number of device classes
(counts, speeds, memory, communication rules) and to pins:

1. :func:`~viz_place.solvers.dp.contraction.contract` turns the graph into a DAG of
   supernodes (colour classes with their backward twins, fused cycles, merged
   zero-cost leaves; optionally whole layers or a linear order).
2. :func:`~viz_place.solvers.dp.ideals.enumerate_ideals` lists its ideals.
3. :mod:`~viz_place.solvers.dp.recursion` runs the recursion over (ideal, devices
   used per class). A pinned device instance is its own class of count 1; a
   set holding a node pinned elsewhere is never put on a device.
4. Thresholds: a quick pass over the prefixes of a few topological orders,
   improved by a local search (:mod:`~viz_place.solvers.dp.upper_bound`), gives a
   placement and an upper bound ``UB``; the exact pass then skips every
   set costing more than ``UB`` and every state whose devices cannot hold the
   rest of the graph within ``UB``. Without an upper bound (no prefix split
   fits), passes run with a growing threshold from a lower bound; the first
   pass that finds a chain has found the optimum.

The claimed value is ``evaluate(...)``'s max-load of the returned placement
(the DP's own value must agree, else :class:`~viz_place.errors.InternalError`).
When optimal, that value is also a proven lower bound over pipeline splits
(``bound_set="pipeline"``); a coarsened or interrupted run proves no bound.

>>> from viz_place.model import OpGraph, Cluster
>>> from viz_place.solvers import run_solver
>>> g = OpGraph.from_records([
...     {"id": "a", "latency": {"cpu": 4.0, "fpga": 2.0}, "transfer_cost": 0.5},
...     {"id": "b", "latency": {"cpu": 4.0, "fpga": 2.0}}], [("a", "b")])
>>> p = run_solver("dp", g, Cluster.paper(2, 1, None))
>>> p.claimed_value, p.status, p.lower_bound, p.bound_set
(2.5, 'optimal', 2.5, 'pipeline')
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...errors import Cancelled, InfeasibleError, InternalError, SolverError
from ...model import Cluster, OpGraph
from ..base import Hooks, SolverOptions, Stopwatch, collector_paused
from ..contract import Problem, SolverResult
from . import recursion
from .contraction import Contracted, contract
from .ideals import TooManyIdeals, chain_decomposition, enumerate_ideals
from .upper_bound import upper_bound

#: The set of placements the DP's optimum is a lower bound for.
BOUND_SET = "pipeline"
#: Up to this many ideals the exact pass runs once with no threshold (no upper-bound search first).
SMALL_IDEALS = 1000


@dataclass(frozen=True)
class DPOptions(SolverOptions):
    """Options of the ``dp`` solver."""

    time_limit: float | None = field(default=None, metadata={
        "help": "seconds; when reached, return the best placement found so far (status 'feasible'); "
                "none = no limit"})
    max_ideals: int = field(default=200_000, metadata={
        "help": "stop with an error when the contracted graph has more ideals than this", "min": 1, "max": 20_000_000})
    contract_layers: bool = field(default=False, metadata={
        "help": "coarsen: keep the nodes of one layer (node attribute 'layer') together"})
    linearize: bool = field(default=False, metadata={
        "help": "coarsen: only split along one topological order (fast, not exact for the full problem)"})
    zero_cost_leaves: str = field(default="safe", metadata={
        "help": "merge zero-cost leaf nodes into their only neighbour: 'safe' keeps the optimum, 'always' also "
                "when their memory could matter (the authors' rule, far fewer ideals), 'off'",
        "choices": ("safe", "always", "off")})
    max_memory_mb: int = field(default=3000, metadata={
        "help": "stop with an error when the DP tables would need more memory than this (MB)", "min": 1})
    heuristic_orders: int = field(default=6, metadata={
        "help": "topological orders whose prefixes give the first (upper-bound) placement", "min": 1, "max": 1000})
    local_search_rounds: int = field(default=12, metadata={
        "help": "rounds of local search around the first placement (tightens the bound that prunes the exact pass)",
        "min": 0, "max": 1000})
    growth: float = field(default=1.25, metadata={
        "help": "factor by which the pruning threshold grows between passes when no upper bound is known",
        "min": 1.01, "max": 100.0})
    kernel: str = field(default="auto", metadata={
        "help": "inner loop of the exact pass: 'c' (compiled at install), 'numpy', or 'auto' (compiled when built); "
                "same optimum either way",
        "choices": recursion.KERNELS})


@dataclass
class _Class:
    name: str           # cluster class name
    count: int
    instances: list[str]
    pin_device: str | None
    pays: bool
    link: float
    cap: float
    col: int            # a device column of this class in the compiled problem


@dataclass
class DPStats:
    """What a solve did (also stored in ``Placement.options['stats']``)."""

    supernodes: int = 0
    ideals: int = 0
    pairs: int = 0
    passes: int = 0
    upper_bound: float = math.inf
    thresholds: list = field(default_factory=list)
    kernel: str = ""        # the exact pass's inner loop: "c" (compiled) or "numpy"


def _dp_classes(cluster: Cluster, pins: dict[str, str], prob) -> list[_Class]:
    pinned_devices = sorted(set(pins.values()), key=cluster.device_index)
    out = []
    for cls in cluster.classes:
        if cls.count == 0:
            continue
        names = list(cls.instance_names())
        cols = [cluster.device_index(n) for n in names]
        own_pins = [n for n in names if n in pinned_devices]
        free = [n for n in names if n not in own_pins]
        common = dict(pays=cls.pays_communication, link=cls.link_factor,
                      cap=math.inf if cls.memory is None else cls.memory, col=cols[0])
        if free:
            out.append(_Class(cls.name, len(free), free, None, **common))
        for n in own_pins:
            out.append(_Class(cls.name, 1, [n], n, **common))
    return out


def _hyperedges(prob, ct: Contracted) -> list[tuple[int, float]]:
    agg: dict[int, float] = {}
    sup = ct.node_super.tolist()
    for u, (tc, succ) in enumerate(zip(prob.tcost.tolist(), prob.data_succs)):
        if tc <= 0 or not succ:
            continue
        mask = 1 << sup[u]
        for v in succ:
            mask |= 1 << sup[v]
        if mask & (mask - 1):
            agg[mask] = agg.get(mask, 0.0) + tc
    return list(agg.items())


def _check_pins(graph: OpGraph, ct: Contracted, prob, pins: dict[str, str]) -> dict[int, str]:
    """Supernode -> pinned device; two pins on one supernode must agree."""
    out: dict[int, tuple[str, str]] = {}
    for node, dev in pins.items():
        s = int(ct.node_super[prob.graph.index[node]])
        if s in out and out[s][1] != dev:
            other, odev = out[s]
            raise InfeasibleError(
                f"pins contradict the colour classes / contiguity: nodes {other!r} (pinned to {odev}) and {node!r} "
                f"(pinned to {dev}) must share a device (same colour class, or joined by a cycle that "
                f"contracting colour classes creates{', or by a chosen coarsening' if ct.reasons else ''})")
        out[s] = (node, dev)
    return {s: d for s, (_, d) in out.items()}


def _supernode_tables(graph, prob, ct: Contracted, classes: list[_Class], pin_of: dict[int, str]):
    K = ct.num
    k = len(classes)
    lat = np.zeros((K, k))
    sup = ct.node_super
    size = np.bincount(sup, weights=prob.size, minlength=K)
    forbid = np.zeros((K, k), dtype=bool)
    for c, cl in enumerate(classes):
        lat[:, c] = np.bincount(sup, weights=prob.lat[:, cl.col], minlength=K)   # inf (unsupported) stays inf
        for s, dev in pin_of.items():
            forbid[s, c] = cl.pin_device != dev
    cap = np.array([cl.cap for cl in classes])
    fits = np.isfinite(lat) & ~forbid & (size[:, None] <= cap * (1 + 1e-9))
    for s in map(int, np.flatnonzero(~fits.any(1))):   # the first supernode that fits nowhere
        names = [prob.node_ids[i] for i in ct.members[s][:4]]
        what = f"node {names[0]!r}" if len(ct.members[s]) == 1 else \
            f"the nodes {', '.join(map(repr, names))}{' ...' if len(ct.members[s]) > 4 else ''} (kept together)"
        def why(c, cl):
            if math.isinf(lat[s, c]):
                return "cannot run it"
            if forbid[s, c]:
                return "not the pinned device" if cl.pin_device else "its pin is elsewhere"
            return f"memory {cl.cap:.6g}"
        reasons = "; ".join(f"{cl.instances[0] if cl.pin_device else cl.name}: {why(c, cl)}"
                            for c, cl in enumerate(classes))
        pinned = f", pinned to {pin_of[s]}" if s in pin_of else ""
        raise InfeasibleError(f"{what} fit(s) on no device (size {size[s]:.6g}{pinned}) — {reasons}")
    return lat, size, forbid


def _placement_from_chain(prob, ct: Contracted, tables: recursion.Tables, classes, chain) -> np.ndarray:
    """Device index per node (``prob`` order) of a chain of sets, the ``t``-th set of class ``c`` on that class's
    ``t``-th instance."""
    used = [0] * len(classes)
    dev_of_super = [-1] * ct.num
    bits = tables.ideals.bits
    for c, j, i in reversed(chain):
        dev = prob.cluster.device_index(classes[c].instances[used[c]])
        used[c] += 1
        new = 0            # the supernodes of I \ J as one Python int (64 per word)
        for w, (a, b) in enumerate(zip(bits[i].tolist(), bits[j].tolist())):
            new |= (a & ~b) << (64 * w)
        while new:
            low = new & -new
            new ^= low
            dev_of_super[low.bit_length() - 1] = dev
    return np.array(dev_of_super, dtype=np.int64)[ct.node_super]


def solve(problem: Problem, opts: DPOptions, user_hooks: Hooks) -> SolverResult:
    """Optimal contiguous placement for max-load (see the module docstring)."""
    with collector_paused():
        return _solve(problem, opts, user_hooks)


def _solve(problem: Problem, opts: DPOptions, user_hooks: Hooks) -> SolverResult:
    graph, cluster, pins, prob = problem.graph, problem.cluster, problem.pins, problem.compiled
    watch = Stopwatch()
    timed_out = [False]

    def out_of_time() -> bool:
        if opts.time_limit is not None and watch.elapsed > opts.time_limit:
            timed_out[0] = True
        return timed_out[0]
    hooks = user_hooks.with_stop(out_of_time)
    stats = DPStats(kernel=_kernel_or_error(opts.kernel))
    hooks.report(0.0, "contracting colour classes", force=True)
    ct = contract(graph, cluster, pins=pins, contract_layers=opts.contract_layers, linearize=opts.linearize,
                  zero_cost_leaves=opts.zero_cost_leaves)
    stats.supernodes = ct.num
    classes = _dp_classes(cluster, pins, prob)
    for cl in classes:   # more devices than supernodes can never be used
        cl.count = min(cl.count, ct.num)
    states = math.prod(cl.count + 1 for cl in classes)
    _check_memory(states, 1, opts)
    pin_of = _check_pins(graph, ct, prob, pins)
    lat, size, forbid = _supernode_tables(graph, prob, ct, classes, pin_of)
    hyper = _hyperedges(prob, ct)
    succs = ct.succ_lists
    common = dict(succs=succs, lat=lat, size=size, forbid=forbid, hyperedges=hyper, counts=[cl.count for cl in classes],
                  pays=[cl.pays for cl in classes], link=[cl.link for cl in classes], cap=[cl.cap for cl in classes])
    # ideals first: an out-of-reach graph fails fast, before any other work
    hooks.report(0.01, f"enumerating the ideals of {ct.num} supernodes", force=True)

    def check_enum(count):
        hooks.check()
        hooks.report(0.02, f"enumerating ideals: {count:,} so far")
    pred_masks = ct.pred_masks
    try:
        ids = enumerate_ideals(ct.num, pred_masks, succs, limit=opts.max_ideals, check=check_enum)
    except TooManyIdeals as err:
        raise SolverError(_too_many_message(graph, cluster, pins, ct, err, opts)) from None
    except Cancelled:
        ids = None     # still return the quick heuristic placement below
    n_ideals = ids.count if ids is not None else 0
    stats.ideals = n_ideals
    _check_memory(states, max(n_ideals, min(ct.num * opts.heuristic_orders, 20_000)), opts)
    common["chains"] = chain_decomposition(ct.num, succs)      # once for every table of this solve

    def first_placement(check):
        """A quick chain (its value the upper bound that prunes the exact pass) and its placement."""
        hooks.report(0.03, "searching a first placement (upper bound)", force=True)
        # local search pays off only when the exact pass is large
        rounds = opts.local_search_rounds if n_ideals > 20_000 else 0
        ub = upper_bound(ct.num, pred_masks, succs, common, orders=opts.heuristic_orders,
                         rounds=rounds, limit=min(20_000, max(2_000, n_ideals // 8)), check=check,
                         kernel=stats.kernel)
        stats.upper_bound = ub.value
        return ub, (_placement_from_chain(prob, ct, ub.tables, classes, ub.chain) if ub.chain else None)
    # a small exact pass needs no bound to prune it: one pass with no threshold, a first placement only if stopped
    small = ids is not None and n_ideals <= SMALL_IDEALS
    ub, incumbent = (None, None) if small else first_placement(hooks.check)

    def finish(assignment, status, message, value=None):
        bound = value if status == "optimal" else None
        return SolverResult(assignment, status=status, message=message, stats=stats.__dict__,
                            expected_value=value, lower_bound=bound, bound_set=BOUND_SET if bound is not None else None)

    try:
        if ids is None or (ub is not None and ub.cancelled):
            raise Cancelled()
        hooks.check()
        hooks.report(0.1, f"{ids.count:,} ideals; building tables", force=True)
        tables = recursion.Tables.build(ids, **common)
        if small:
            result = _one_pass(tables, stats, hooks)
        else:
            result = _threshold_passes(tables, lat, classes, ub.value, opts, stats, hooks)
    except Cancelled:
        if incumbent is None and small:
            _, incumbent = first_placement(None)
        if incumbent is None:
            raise SolverError("dp: cancelled before any placement was found") from None
        if timed_out[0]:
            return finish(incumbent, "feasible", f"not proven optimal among pipeline splits: time limit of "
                                                 f"{opts.time_limit:g} s reached before the exact pass finished; "
                                                 "returning the best placement found so far")
        return finish(incumbent, "cancelled", "cancelled: best so far among pipeline splits")
    if not math.isfinite(result.value):
        raise InfeasibleError(
            f"dp: no contiguous placement (pipeline split) fits: with {', '.join(f'{cl.count} x {cl.instances[0] if cl.pin_device else cl.name}' for cl in classes)} "
            f"every split breaks a memory limit, an unsupported op or a pin")
    assignment = _placement_from_chain(prob, ct, tables, classes, result.chain)
    coarsened = [text for flag, text in (
        (opts.contract_layers, "layers kept together"), (opts.linearize, "split along one topological order"),
        (ct.unsafe_merges, f"{ct.unsafe_merges} zero-cost leaves with memory merged into their neighbour")) if flag]
    message = (f"optimal among pipeline splits of the coarsened graph ({'; '.join(coarsened)})" if coarsened
               else "optimal among pipeline splits")
    hooks.report(1.0, f"optimum {result.value:.6g}", force=True)
    return finish(assignment, "feasible" if coarsened else "optimal", message, value=float(result.value))


def _kernel_or_error(kernel: str) -> str:
    try:
        return recursion.kernel_name(kernel)
    except ValueError as err:
        raise SolverError(f"dp: option kernel: {err}", field="kernel") from None


def _check_memory(states: int, ideals: int, opts: DPOptions) -> None:
    need = states * max(ideals, 1) * 13 / 2**20   # best value (8 bytes) + choice (4 + 1) per state and ideal
    if need > opts.max_memory_mb:
        raise SolverError(f"dp: {ideals:,} ideals x {states:,} device-count states need about {need:,.0f} MB "
                          f"(limit max_memory_mb={opts.max_memory_mb}); fewer devices or pinned devices, a "
                          f"coarsening (contract_layers, linearize) or a higher max_memory_mb would do")


def _too_many_message(graph, cluster, pins, ct: Contracted, err: TooManyIdeals, opts: DPOptions) -> str:
    hint = ""
    if opts.zero_cost_leaves == "safe" and contract(
            graph, cluster, pins=pins, contract_layers=opts.contract_layers, linearize=opts.linearize,
            zero_cost_leaves="always").num < ct.num:
        hint = ("zero_cost_leaves=always (merge zero-cost leaves such as weights into their consumer even "
                "though memory limits could then bind; the authors' rule), ")
    return (f"dp: the contracted graph ({ct.num} supernodes) has more than {err.limit:,} ideals "
            f"({err.found:,} found before stopping), beyond reach of the exact DP. Coarsen it with option "
            f"{hint}contract_layers=true (keep each layer together) or linearize=true (split along one "
            f"topological order), raise max_ideals if you have the time and memory, or use the integer "
            f"program (solver ilp) or the RL solver (rl)")


def _lower_bound(lat: np.ndarray, classes: list[_Class]) -> float:
    per_node = np.min(np.where(np.isinf(lat), np.inf, lat), axis=1)
    per_node = np.where(np.isinf(per_node), 0.0, per_node)
    total = sum(cl.count for cl in classes)
    return max(float(per_node.max(initial=0.0)), float(per_node.sum()) / max(total, 1))


def _one_pass(tables, stats: DPStats, hooks: Hooks):
    """The exact pass with no threshold (small problems)."""
    stats.passes += 1
    stats.thresholds.append(math.inf)
    message = f"DP pass 1 (no threshold, {tables.ideals.count:,} ideals)"
    hooks.report(0.1, message, force=True)

    def check(frac):
        hooks.check()
        hooks.report(0.1 + 0.89 * frac, message)
    res = recursion.run(tables, math.inf, check=check, kernel=stats.kernel)
    stats.pairs += res.pairs
    return res


def _threshold_passes(tables, lat, classes, ub: float, opts: DPOptions, stats: DPStats, hooks: Hooks):
    finite = np.where(np.isinf(lat), 0.0, lat)
    t_max = float(finite.max(1).sum()) + 2.0 * float(tables.htc.sum()) * max([cl.link for cl in classes] + [0.0])
    # with an upper bound one pass at T = UB is exact; else grow T from a lower bound
    T = ub if math.isfinite(ub) else _lower_bound(lat, classes)
    if T <= 0:
        T = math.inf
    while True:
        if math.isfinite(ub) and T >= ub:
            T = ub
        elif T >= t_max:
            T = math.inf
        stats.passes += 1
        stats.thresholds.append(T)
        # progress: the k-th pass spans [1 - 2**(1-k), 1 - 2**-k] of the range 0.1 .. 0.99 (one pass: all of it)
        lo_f, hi_f = (0.0, 1.0) if T == ub else (1 - 0.5 ** (stats.passes - 1), 1 - 0.5 ** stats.passes)
        message = f"DP pass {stats.passes} (threshold {T:.6g}, {tables.ideals.count:,} ideals)"
        inc = ub if math.isfinite(ub) else None
        hooks.report(0.1 + 0.89 * lo_f, message, force=True, incumbent=inc)

        def check(frac, message=message, lo_f=lo_f, hi_f=hi_f, inc=inc):
            hooks.check()
            hooks.report(0.1 + 0.89 * (lo_f + (hi_f - lo_f) * frac), message, incumbent=inc)
        res = recursion.run(tables, T, check=check, kernel=stats.kernel)
        stats.pairs += res.pairs
        if math.isfinite(res.value) or T == math.inf or T == ub:
            if not math.isfinite(res.value) and T == ub and math.isfinite(ub):
                raise InternalError("dp: the pass at the upper bound found no chain")
            return res
        T = T * opts.growth
