"""The test graphs of ``benchmarks/rl.py`` and their cached best-known non-contiguous placements.

Each test graph is a generator call (family, nodes, seed, backward twins) and a
cluster: the generator's default one (four accelerators that together hold
4/3 of the weights, one host CPU) or a *memory-bound* one (three accelerators
holding 30% of the weights each, one host CPU: a pipeline split must spill whole
slices to the slow host, a non-contiguous placement picks what to spill).

The reference of a graph is the incumbent of a long ``ilp-noncontig`` run (HiGHS),
with its status, proven bound and gap, possibly improved afterwards by re-solving
device subsets (``benchmarks/rl.py --improve-references S``; the record's
``improved_by`` says so). Those runs are expensive, so
``benchmarks/rl.py --refresh-references`` computes them once and writes
``benchmarks/data/rl_references.json`` (generator and seed, cluster, the placement,
value, bound, status, gap, solver settings, date). On load every stored placement
is re-evaluated with :func:`viz_place.cost.evaluate` (a stored number is never
trusted; a placement that no longer fits the regenerated graph is refused by name).
"""
from __future__ import annotations

import datetime
import hashlib
import json
import platform
from dataclasses import dataclass
from pathlib import Path

from viz_place import run_solver
from viz_place.cost import evaluate, gap
from viz_place.model import Cluster, DeviceClass
from viz_place.samples import make_graph

REFERENCES = Path(__file__).resolve().parent / "data" / "rl_references.json"


@dataclass(frozen=True)
class Spec:
    """One test graph: ``make_graph(family, n, seed, training=training)`` on cluster ``cluster``
    (``"default"`` or ``"memory"``). Seeds >= 1000: never drawn by training (its seeds are random 30-bit ints
    from the config's seed; the graphs' shapes are new anyway)."""

    family: str
    n: int
    seed: int
    training: bool = False
    cluster: str = "default"

    def build(self):
        g = make_graph(self.family, self.n, seed=self.seed, training=self.training)
        if self.cluster == "default":
            return g, g.default_cluster
        total = sum(node.size for node in g.nodes())
        return g, Cluster([DeviceClass("fpga", "fpga", count=3, memory=0.3 * total),
                           DeviceClass("cpu", "cpu", count=1, pays_communication=False)])

    @property
    def key(self) -> str:
        return f"{self.family}_{self.n}_s{self.seed}{'_training' if self.training else ''}@{self.cluster}"


SPECS = [
    Spec("residual", 80, 1001), Spec("transformer", 120, 1002), Spec("inception", 100, 1003),
    Spec("fork_join", 60, 1004, True), Spec("chain", 100, 1005),
    Spec("transformer", 60, 1013, cluster="memory"), Spec("residual", 60, 1014, cluster="memory"),
    Spec("inception", 45, 1015, True, cluster="memory"), Spec("chain", 50, 1016, True, cluster="memory"),
    Spec("fork_join", 100, 1017, cluster="memory"),
]


def fingerprint(graph, cluster) -> str:
    """A hash of the graph's nodes, edges and figures and of the cluster: a stored placement is used only
    for the very graph it was computed on."""
    h = hashlib.sha256()
    for node in graph.nodes():
        h.update(json.dumps(node.to_attrs(), sort_keys=True, default=str).encode())
    h.update(json.dumps(sorted(graph.edges), default=str).encode())
    h.update(json.dumps(cluster.to_dict(), sort_keys=True).encode())
    return h.hexdigest()[:16]


def compute_reference(spec: Spec, time_limit: float, backend: str = "highs") -> dict:
    """One long ``ilp-noncontig`` run on ``spec``'s graph: the record stored in the reference file."""
    g, cluster = spec.build()
    settings = {"time_limit": time_limit, "backend": backend, "gap": 0.0, "warm_start": True,
                "symmetry_breaking": True}
    p = run_solver("ilp-noncontig", g, cluster, options=settings)
    ev = evaluate(g, cluster, p)
    if ev.violations:
        raise RuntimeError(f"{spec.key}: ilp-noncontig returned an invalid placement: {ev.violations}")
    bound = p.lower_bound if p.bound_set == "any" else None
    return {"key": spec.key, "graph": g.name, "generator": {"family": spec.family, "n": spec.n, "seed": spec.seed,
                                                            "training": spec.training},
            "cluster": spec.cluster, "cluster_spec": cluster.to_dict(), "fingerprint": fingerprint(g, cluster),
            "nodes": g.num_nodes, "solver": "ilp-noncontig", "settings": settings, "status": p.status,
            "value": ev.max_load, "lower_bound": bound,
            "gap": gap(ev.max_load, bound),
            "wall_seconds": round(p.wall_time, 1), "message": p.message,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine": f"{platform.machine()}, {platform.python_version()}", "placement": dict(p.assignment)}


def improve_reference(spec: Spec, record: dict, seconds: float) -> dict:
    """``record`` with its placement improved by re-solving device subsets for ``seconds``
    (:func:`viz_place.solvers.milp.neighbourhoods.improve_by_subsets`, HiGHS, 1 thread), the
    proven bound kept; unchanged when nothing better is found. An ``improved_by`` entry says how."""
    from viz_place.cost import compile_problem
    from viz_place.solvers.groups import allowed_devices
    from viz_place.solvers.milp.max_load import IlpNoncontigOptions
    from viz_place.solvers.milp.neighbourhoods import improve_by_subsets
    g, cluster = spec.build()
    value, _ = checked_reference(spec, record, g, cluster)
    if value is None:
        raise RuntimeError(f"{spec.key}: no usable stored reference to improve")
    prob = compile_problem(g, cluster)
    out = improve_by_subsets(prob, allowed_devices(prob, {}), prob.to_index_array(record["placement"]),
                             time_limit=seconds, opts=IlpNoncontigOptions(backend="highs", threads=1))
    ev = evaluate(g, cluster, prob.to_assignment(out.dev))
    if ev.violations or not ev.max_load < value * (1 - 1e-9):
        return record
    rec = dict(record, placement=prob.to_assignment(out.dev), value=ev.max_load)
    rec["gap"] = gap(ev.max_load, rec.get("lower_bound"))
    rec.setdefault("improved_by", []).append(
        {"method": "re-solving device subsets (viz_place.solvers.milp.neighbourhoods.improve_by_subsets)",
         "seconds": seconds, "from_value": value, "improvements": out.improvements,
         "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")})
    return rec


def read_references(path: Path = REFERENCES) -> dict[str, dict]:
    """The stored records by key (empty when the file is absent)."""
    if not path.is_file():
        return {}
    return {r["key"]: r for r in json.loads(path.read_text())["references"]}


def write_references(records: dict[str, dict], path: Path = REFERENCES) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"about": "best-known non-contiguous placements of the benchmarks/rl.py test graphs: the incumbent of "
                    "a long ilp-noncontig run; recomputed by `benchmarks/rl.py --refresh-references`; every "
                    "placement is re-evaluated with viz_place.cost.evaluate when read",
           "references": [records[k] for k in sorted(records)]}
    path.write_text(json.dumps(doc, indent=1) + "\n")


def checked_reference(spec: Spec, record: dict | None, graph, cluster) -> tuple[float | None, str]:
    """``(value, note)``: the stored placement's max-load as :func:`viz_place.cost.evaluate` computes it now,
    or ``(None, why)`` when there is no usable record."""
    if record is None:
        return None, "no stored reference (run --refresh-references)"
    if record.get("fingerprint") != fingerprint(graph, cluster):
        return None, "stored reference is for another graph (generator changed): refresh it"
    ev = evaluate(graph, cluster, record["placement"])
    if ev.violations:
        return None, f"stored placement is invalid now: {ev.violations[0]}"
    note = ""
    if abs(ev.max_load - record["value"]) > 1e-9 * max(1.0, abs(ev.max_load)):
        note = f"stored value {record['value']:.6g} differs from the evaluator's {ev.max_load:.6g} (evaluator used)"
    return ev.max_load, note
