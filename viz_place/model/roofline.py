"""A roofline cost model per device kind, and device presets from public spec sheets.

An op with ``F`` FLOPs that moves ``B`` bytes takes, on a device kind with
peak ``P`` FLOP/s, memory bandwidth ``M`` B/s and launch overhead ``o`` s::

    latency = max(F / P, B / M) + o          (reported in milliseconds)

View-like ops (``Reshape``, ``Flatten``, ``Squeeze``, ``Unsqueeze``,
``Identity``, ``Dropout`` at inference, see :data:`VIEW_OPS`) launch no kernel
and cost 0. ``B`` is :func:`node_bytes`: the node's weights (``size``) plus the
tensors arriving on its in-edges plus its output (``output_bytes``).

A node's ``transfer_cost`` (the time to move its output between an
accelerator and host memory, paid per *source* node as in the paper) is
``output_bytes / L`` with ``L`` the *reference* link bandwidth — that of the
first non-host kind in ``specs_by_kind``. A device class whose link is faster
or slower gets ``link_factor = L / its link bandwidth`` (:func:`roofline_cluster`
sets it), so every class pays its own link's time.

Time unit: **milliseconds** (latencies and transfer costs); sizes in bytes.

Edit a device's figures and call :func:`apply_roofline` again: it returns a new
graph with every latency and transfer cost recomputed.

>>> from viz_place.model import OpGraph
>>> g = OpGraph.from_records([{"id": "mm", "op_type": "MatMul", "flops": 2e9, "size": 4e6,
...                            "output_bytes": 4e6}], [])
>>> specs = {"cpu": PRESETS["xeon-8380"], "gpu": PRESETS["a100"]}
>>> g2 = apply_roofline(g, specs)
>>> round(g2.node("mm").latency["gpu"], 4), round(g2.node("mm").transfer_cost, 4)
(0.1076, 0.125)
>>> faster = dict(specs, gpu=specs["gpu"].with_(peak_flops=2 * specs["gpu"].peak_flops))
>>> round(apply_roofline(g, faster).node("mm").latency["gpu"], 4)
0.0563
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Mapping

import networkx as nx

from ..errors import DeviceError, GraphValidationError
from .devices import Cluster, DeviceClass
from .graph import OpGraph

#: Unit of every latency and transfer cost this module produces.
TIME_UNIT = "ms"
_MS = 1e3

#: Op types that only re-label a tensor (no kernel, no data moved): latency 0.
VIEW_OPS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"})


@dataclass(frozen=True)
class RooflineSpec:
    """Roofline figures of one device kind (SI units: FLOP/s, B/s, s, bytes).

    Parameters
    ----------
    peak_flops : peak arithmetic throughput, FLOP/s (> 0).
    memory_bandwidth : device memory bandwidth, B/s (> 0).
    link_bandwidth : bandwidth of the link to host memory, B/s (> 0).
    launch_overhead : fixed time added to every op that launches a kernel, s (>= 0).
    memory : device memory in bytes, or ``None`` (unlimited, as for the host).
    host : ``True`` for the host CPU (it pays no transfers, as in the paper).
    source : where the figures come from (spec sheet, assumptions).

    >>> RooflineSpec(1e12, 1e11, 1e10, 5e-6).with_(peak_flops=2e12).peak_flops
    2000000000000.0
    """

    peak_flops: float
    memory_bandwidth: float
    link_bandwidth: float
    launch_overhead: float = 0.0
    memory: float | None = None
    host: bool = False
    source: str = ""

    def __post_init__(self) -> None:
        for name in ("peak_flops", "memory_bandwidth", "link_bandwidth"):
            v = getattr(self, name)
            if not _number(v) or not math.isfinite(v) or v <= 0:
                raise DeviceError(f"roofline spec: field {name!r} must be a finite number > 0, got {v!r}")
            object.__setattr__(self, name, float(v))
        if not _number(self.launch_overhead) or not math.isfinite(self.launch_overhead) or self.launch_overhead < 0:
            raise DeviceError(f"roofline spec: field 'launch_overhead' must be a finite number >= 0 (seconds), "
                              f"got {self.launch_overhead!r}")
        object.__setattr__(self, "launch_overhead", float(self.launch_overhead))
        if self.memory is not None:
            if not _number(self.memory) or math.isnan(self.memory) or self.memory < 0:
                raise DeviceError(f"roofline spec: field 'memory' must be a number >= 0 or null, got {self.memory!r}")
            object.__setattr__(self, "memory", None if math.isinf(self.memory) else float(self.memory))
        if not isinstance(self.host, bool):
            raise DeviceError("roofline spec: field 'host' must be true or false")

    def with_(self, **changes: Any) -> "RooflineSpec":
        """A copy with some figures changed (validated again)."""
        return replace(self, **changes)

    def op_latency(self, flops: float, nbytes: float) -> float:
        """``max(flops / peak, bytes / bandwidth) + overhead``, in milliseconds."""
        return _MS * (max(flops / self.peak_flops, nbytes / self.memory_bandwidth) + self.launch_overhead)

    def to_dict(self) -> dict[str, Any]:
        return {"peak_flops": self.peak_flops, "memory_bandwidth": self.memory_bandwidth,
                "link_bandwidth": self.link_bandwidth, "launch_overhead": self.launch_overhead,
                "memory": self.memory, "host": self.host, "source": self.source}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str = "roofline spec") -> "RooflineSpec":
        """From ``{"preset": NAME, <overrides>}`` or the full set of figures."""
        if isinstance(data, str):
            data = {"preset": data}
        if not isinstance(data, Mapping):
            raise DeviceError(f"{where}: must be an object or a preset name, got {type(data).__name__}")
        allowed = {"preset", "peak_flops", "memory_bandwidth", "link_bandwidth", "launch_overhead",
                   "memory", "host", "source"}
        unknown = set(data) - allowed
        if unknown:
            raise DeviceError(f"{where}: unknown field(s) {sorted(unknown)}; allowed: {sorted(allowed)}")
        fields = {k: v for k, v in data.items() if k != "preset"}
        if "preset" in data:
            base = preset(data["preset"], where=where)
            try:
                return base.with_(**fields)
            except DeviceError as err:
                raise err.prefixed(where) from None
        missing = [k for k in ("peak_flops", "memory_bandwidth", "link_bandwidth") if k not in data]
        if missing:
            raise DeviceError(f"{where}: missing field(s) {missing} (or give 'preset': one of {sorted(PRESETS)})")
        try:
            return cls(**fields)
        except DeviceError as err:
            raise err.prefixed(where) from None


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


#: Device presets. Figures are FP32 peaks from the vendors' public spec sheets.
PRESETS: dict[str, RooflineSpec] = {
    # Intel Xeon Platinum 8380 (Ice Lake-SP), Intel ARK product page: 40 cores,
    # 2.30 GHz base, 8 channels DDR4-3200 = 204.8 GB/s max memory bandwidth.
    # Peak FP32 = 40 cores x 2.3e9 Hz x 32 FLOP/cycle (2 AVX-512 FMA units) = 2.944 TFLOP/s.
    # It is the host: its "link" is its own memory. Overhead: framework op dispatch, assumed 5 us.
    "xeon-8380": RooflineSpec(2.944e12, 204.8e9, 204.8e9, 5e-6, None, True,
                              "Intel ARK, Xeon Platinum 8380: 40 cores @2.3 GHz, AVX-512 x2 FMA; 204.8 GB/s DDR4-3200"),
    # NVIDIA Tesla V100 SXM2 16 GB (Volta), NVIDIA V100 datasheet (2018): 15.7 TFLOPS FP32,
    # 900 GB/s HBM2, 16 GB; host link PCIe Gen3 x16 = 32 GB/s both ways, 16 GB/s each way.
    # Overhead: CUDA kernel launch, assumed 5 us.
    "v100": RooflineSpec(15.7e12, 900e9, 16e9, 5e-6, 16e9, False,
                         "NVIDIA Tesla V100 SXM2 datasheet: 15.7 TFLOPS FP32, 900 GB/s HBM2, 16 GB, PCIe Gen3 x16"),
    # NVIDIA A100 80 GB SXM (Ampere), NVIDIA A100 datasheet (2021): 19.5 TFLOPS FP32,
    # 2,039 GB/s HBM2e, 80 GB; host link PCIe Gen4 = 64 GB/s both ways, 32 GB/s each way.
    "a100": RooflineSpec(19.5e12, 2039e9, 32e9, 5e-6, 80e9, False,
                         "NVIDIA A100 80GB SXM datasheet: 19.5 TFLOPS FP32, 2039 GB/s HBM2e, 80 GB, PCIe Gen4 x16"),
    # Google Coral Edge TPU (M.2 / Mini PCIe accelerator), coral.ai datasheets: 4 TOPS (INT8),
    # PCIe Gen2 x1 = 500 MB/s; about 8 MB of on-chip SRAM caches the model's parameters
    # (coral.ai "Edge TPU Compiler" docs). Its memory bandwidth is NOT published: 50 GB/s is
    # our assumption for on-chip SRAM — edit it. INT8 ops are counted as FLOPs here.
    "coral-edgetpu": RooflineSpec(4e12, 50e9, 0.5e9, 5e-6, 8e6, False,
                                  "Coral Edge TPU datasheet: 4 TOPS INT8, PCIe Gen2 x1, ~8 MB SRAM; "
                                  "memory bandwidth 50 GB/s assumed (unpublished)"),
}

#: Which preset a bare kind name means (``"cpu"``, ``"gpu"``, ``"npu"``).
KIND_PRESETS = {"cpu": "xeon-8380", "gpu": "a100", "npu": "coral-edgetpu"}

#: Number of accelerators in :func:`default_cluster`.
DEFAULT_GPU_COUNT = 4


def preset(name: str, *, where: str = "roofline spec") -> RooflineSpec:
    """The preset called ``name`` (or the default preset of a kind such as ``"gpu"``).

    >>> preset("gpu") is PRESETS["a100"]
    True
    """
    key = KIND_PRESETS.get(name, name)
    if key not in PRESETS:
        raise DeviceError(f"{where}: unknown preset {name!r}; presets: {', '.join(sorted(PRESETS))} "
                          f"(or a kind: {', '.join(sorted(KIND_PRESETS))})")
    return PRESETS[key]


def default_specs() -> dict[str, RooflineSpec]:
    """``{"cpu": Xeon 8380, "gpu": A100}`` — the kinds imported graphs carry by default."""
    return {"cpu": PRESETS["xeon-8380"], "gpu": PRESETS["a100"]}


def reference_link_bandwidth(specs_by_kind: Mapping[str, RooflineSpec]) -> float:
    """Link bandwidth that ``transfer_cost`` is priced at: the first non-host kind's."""
    _check_specs(specs_by_kind)
    for spec in specs_by_kind.values():
        if not spec.host:
            return spec.link_bandwidth
    return next(iter(specs_by_kind.values())).link_bandwidth


def node_bytes(graph: OpGraph, node_id: str) -> float:
    """Bytes an op moves: weights (``size``) + tensors on data in-edges + ``output_bytes``.

    >>> g = OpGraph.from_records([{"id": "a", "output_bytes": 8.0}, {"id": "b", "size": 4.0, "output_bytes": 2.0}],
    ...                          [("a", "b", {"bytes": 8.0})])
    >>> node_bytes(g, "b")
    14.0
    """
    node = graph.node(node_id)
    nx_g = graph.nx
    incoming = sum((nx_g.edges[u, node_id].get("bytes") or 0.0) for u in nx_g.predecessors(node_id)
                   if not nx_g.edges[u, node_id].get("artificial"))
    return float(node.size + incoming + (node.output_bytes or 0.0))


def is_view(op_type: str, flops: float | None) -> bool:
    """View-like ops (and their gradients) with no arithmetic cost nothing."""
    base = op_type[:-4] if op_type.endswith("Grad") else op_type
    return base in VIEW_OPS and not flops


def apply_roofline(graph: OpGraph, specs_by_kind: Mapping[str, RooflineSpec], *,
                   cluster: Cluster | None = None) -> OpGraph:
    """A new graph whose latencies (one per kind of ``specs_by_kind``) and transfer
    costs follow the roofline model (module docstring). Every non-artificial node
    needs ``flops``; a missing ``output_bytes`` counts as 0 bytes.

    ``cluster`` (optional) becomes the new graph's ``default_cluster``; by default
    the old one is kept.
    """
    _check_specs(specs_by_kind)
    link = reference_link_bandwidth(specs_by_kind)
    src = graph.nx
    g = nx.DiGraph()
    for node in graph.nodes():
        attrs = node.to_attrs()
        if node.artificial:
            attrs["latency"] = {k: 0.0 for k in specs_by_kind}
        else:
            if node.flops is None:
                raise GraphValidationError(f"node {node.id!r}: field 'flops' is unknown; the roofline model needs "
                                           "FLOPs for every op")
            nbytes = node_bytes(graph, node.id)
            if is_view(node.op_type, node.flops):
                attrs["latency"] = {k: 0.0 for k in specs_by_kind}
            else:
                attrs["latency"] = {k: s.op_latency(node.flops, nbytes) for k, s in specs_by_kind.items()}
            attrs["transfer_cost"] = _MS * (node.output_bytes or 0.0) / link
        g.add_node(node.id, **attrs)
    for u, v in src.edges:
        g.add_edge(u, v, **src.edges[u, v])
    return OpGraph(g, name=graph.name, notes=list(graph.notes), source=graph.source,
                   default_cluster=cluster if cluster is not None else graph.default_cluster)


def roofline_cluster(specs_by_kind: Mapping[str, RooflineSpec], counts: Mapping[str, int] | None = None, *,
                     base: Cluster | None = None) -> Cluster:
    """Device classes matching ``specs_by_kind``.

    With ``base`` (a user's cluster) each class keeps its name, count and flags
    but takes memory (if the class gives none and the spec does) and
    ``link_factor`` (multiplied by the reference link / its kind's link
    bandwidth, for classes that pay transfers) from its kind's spec. Without ``base``, one class per kind named
    after it: host kinds get count 1 and pay no transfers, others
    ``counts.get(kind, DEFAULT_GPU_COUNT)``.

    >>> c = roofline_cluster({"cpu": PRESETS["xeon-8380"], "gpu": PRESETS["v100"], "npu": PRESETS["coral-edgetpu"]})
    >>> [(k.name, k.count, k.link_factor) for k in c.classes]
    [('cpu', 1, 1.0), ('gpu', 4, 1.0), ('npu', 4, 32.0)]
    """
    link = reference_link_bandwidth(specs_by_kind)
    counts = dict(counts or {})
    if base is None:
        classes = []
        for kind, spec in specs_by_kind.items():
            count = counts.get(kind, 1 if spec.host else DEFAULT_GPU_COUNT)
            classes.append(DeviceClass(kind, kind, count, memory=spec.memory, pays_communication=not spec.host,
                                       link_factor=1.0 if spec.host else link / spec.link_bandwidth))
        return Cluster(tuple(classes))
    out = []
    for c in base.classes:
        if c.kind not in specs_by_kind:
            raise DeviceError(f"device class {c.name!r}: kind {c.kind!r} has no roofline figures; "
                              f"kinds with figures: {', '.join(specs_by_kind)}")
        spec = specs_by_kind[c.kind]
        memory = c.memory if c.memory is not None else spec.memory
        factor = c.link_factor * link / spec.link_bandwidth if c.pays_communication else c.link_factor
        out.append(c.with_(memory=memory, link_factor=factor))
    return Cluster(tuple(out))


def default_cluster() -> Cluster:
    """One Xeon 8380 host (``cpu``) and :data:`DEFAULT_GPU_COUNT` A100s (``gpu``)."""
    return roofline_cluster(default_specs())


def specs_from_dict(data: Mapping[str, Any], kinds: tuple[str, ...] = ()) -> dict[str, RooflineSpec]:
    """``{kind: spec-or-preset}`` from JSON; ``kinds`` without an entry use :func:`preset` of the kind name.

    >>> sorted(specs_from_dict({"gpu": {"preset": "v100", "peak_flops": 1e13}}, ("cpu", "gpu")))
    ['cpu', 'gpu']
    """
    if not isinstance(data, Mapping):
        raise DeviceError(f"roofline: expected an object mapping device kinds to figures, got {type(data).__name__}")
    specs = {str(k): RooflineSpec.from_dict(v, where=f"roofline figures of kind {k!r}") for k, v in data.items()}
    for kind in kinds:
        if kind not in specs:
            specs[kind] = preset(kind, where=f"device kind {kind!r} (no 'roofline' entry)")
    return specs


def _check_specs(specs_by_kind: Mapping[str, RooflineSpec]) -> None:
    if not isinstance(specs_by_kind, Mapping) or not specs_by_kind:
        raise DeviceError("roofline: at least one device kind with figures is required")
    for kind, spec in specs_by_kind.items():
        if not isinstance(spec, RooflineSpec):
            raise DeviceError(f"roofline figures of kind {kind!r} must be a RooflineSpec, got {type(spec).__name__}")


def devices_from_dict(data: Mapping[str, Any]) -> tuple[dict[str, RooflineSpec], Cluster | None]:
    """Roofline figures and the user's classes from a devices JSON object.

    ``{"classes": [...], "roofline": {kind: {"preset": NAME, <overrides>} | {<figures>} | NAME}}``:
    ``classes`` as in :meth:`Cluster.from_dict` (optional: without them the
    cluster is ``None`` and importers make one class per ``roofline`` kind); a
    class kind with no ``roofline`` entry uses the preset of that name (``cpu``,
    ``gpu``, ``npu`` or a preset such as ``v100``). Pass both to the importers,
    which complete the classes with :func:`roofline_cluster`.

    >>> specs, base = devices_from_dict({"classes": [{"name": "host", "kind": "cpu", "pays_communication": False},
    ...                                              {"name": "edge", "kind": "npu", "count": 2}]})
    >>> [(k.name, k.memory, k.link_factor) for k in roofline_cluster(specs, base=base).classes]
    [('host', None, 1.0), ('edge', 8000000.0, 1.0)]
    """
    if not isinstance(data, Mapping):
        raise DeviceError(f"devices must be a JSON object, got {type(data).__name__}")
    roof = data.get("roofline", {})
    if "classes" in data or "maxFPGAs" in data:
        base = Cluster.from_dict(data)
        return specs_from_dict(roof, base.kinds), base
    if not roof:
        raise DeviceError("devices: expected field 'classes' and/or 'roofline' (kind -> figures or preset)")
    return specs_from_dict(roof), None
