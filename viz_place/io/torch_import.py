"""Import a PyTorch model — a ``torch.nn.Module`` with example inputs, or an
``hf:MODEL_TYPE`` SPEC — as a costed graph, at op or module granularity,
with roofline or measured CPU latencies.

Steps: build the model (:func:`viz_place.io.torch_models.build_model`; on the
``meta`` device unless real weights are needed), trace it
(:func:`viz_place.io.torch_fx.trace_module`: ``torch.fx`` or ``torch.export``,
the one that ran is in ``graph.notes``), cost every op (FLOPs rules of
:mod:`viz_place.io.flops`, roofline latencies per device kind), optionally
replace the host kind's latencies by measured ones (``profile=True``:
:mod:`viz_place.io.torch_profile`), scale any kind by a calibration factor
(``calibration={"gpu": 1.4}``), and optionally coarsen to one node per module
(:mod:`viz_place.io.torch_modules`). The graph's :attr:`~viz_place.model.OpGraph.source`
records what rebuilds the same model.

>>> g = import_torch("hf:gpt2", overrides={"n_layer": 2, "n_embd": 64, "n_head": 4}, seq_len=16,
...                  granularity="module")
>>> [n.id for n in g.nodes()][:5], g.source["tracer"], g.source["depth"]
(['transformer', 'transformer.wte', 'transformer#2', 'transformer.drop', 'transformer.h.0'], 'export', 3)
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import networkx as nx

from ..errors import InputFormatError
from ..model import Cluster, OpGraph
from ..model.modules import repeated_blocks
from ..model.roofline import RooflineSpec, default_specs
from .costed import build_graph
from .torch_fx import TRACERS, trace_module, traced_ops
from .torch_models import build_model, is_model_spec
from .torch_modules import coarsen_modules

#: ``op``: one node per op torch.export records (``linear``, ``scaled_dot_product_attention``
#: ...); ``aten``: the program lowered to core ATen ops (matmuls, softmax, elementwise);
#: ``module``: one node per module at a depth.
GRANULARITIES = ("op", "aten", "module")


def import_torch(model: Any, example_inputs: Sequence[Any] | None = None, *,
                 overrides: Mapping[str, Any] | None = None, batch: int = 1, seq_len: int | None = None,
                 image_size: int | None = None, seed: int = 0, granularity: str = "op", depth: int | None = None,
                 training: bool = False, profile: bool = False, calibration: Mapping[str, float] | None = None,
                 specs: Mapping[str, RooflineSpec] | None = None, cluster: Cluster | None = None,
                 tracer: str = "auto", name: str | None = None, repeats: int | None = None,
                 profile_clock: str = "cpu") -> OpGraph:
    """A costed graph of ``model`` (see the module docstring).

    ``model`` is a ``torch.nn.Module`` (then ``example_inputs`` is required) or an
    ``hf:`` SPEC string (``overrides``, ``batch``, ``seq_len``, ``image_size``,
    ``seed`` build it). ``granularity="module"`` gives one node per module at
    ``depth`` (default: the depth of the model's main repeated blocks, e.g. 3
    for GPT-2's ``transformer.h.N``). ``profile=True`` measures every op on this
    CPU (one torch thread) and uses the times as the host kind's latencies (ms):
    per-op medians of the thread's CPU time (``profile_clock="cpu"``, the default:
    it leaves out waiting for a core on a shared machine) or of wall time (``"wall"``).
    ``calibration`` multiplies the roofline latencies of the kinds it names.
    """
    if granularity not in GRANULARITIES:
        raise InputFormatError(f"--granularity {granularity!r}: expected op, aten or module")
    if tracer not in TRACERS:
        raise InputFormatError(f"tracer {tracer!r}: expected one of {', '.join(TRACERS)}")
    specs = dict(specs) if specs is not None else default_specs()
    host = _host_kind(specs) if profile else None
    factors = _check_calibration(calibration, specs, host)
    source: dict[str, Any]
    built = None
    if is_model_spec(model):
        built, traced = _build_and_trace(model, overrides, batch, seq_len, image_size, seed, profile, tracer,
                                         decompose=granularity == "aten")
        module, inputs = built.module, built.example_inputs
        source = {"spec": model, **{k: v for k, v in built.source().items() if k != "spec"}}
        name = name or model[3:]
    elif isinstance(model, str):
        raise InputFormatError(f"model {model!r}: expected a torch.nn.Module or hf:MODEL_TYPE")
    else:
        if example_inputs is None:
            raise InputFormatError("example_inputs: a torch.nn.Module needs example inputs (a tuple of tensors)")
        if overrides:
            raise InputFormatError("overrides apply to hf: specs only, not to a torch.nn.Module")
        module, inputs = model, tuple(example_inputs) if isinstance(example_inputs, (list, tuple)) else example_inputs
        traced = trace_module(module, inputs, name=name, tracer=tracer, decompose=granularity == "aten")
        source = {"spec": None, "module": type(module).__name__}
    ops, edges = traced_ops(traced)
    notes = list(traced.notes) + _tied_note(module)
    g = build_graph(ops, edges, name=name or traced.name, notes=notes, specs=specs, cluster=cluster,
                    training=training)
    measured = None
    if profile:
        g, measured = _with_profile(g, traced, module, inputs, host, repeats, profile_clock)
    if factors:
        g = _scaled(g, factors)
    source.update(tracer=traced.tracer, training=bool(training), granularity=granularity, profile=bool(profile),
                  **({"profile_clock": profile_clock} if profile else {}),
                  calibration=dict(factors))
    if measured is not None:
        source["measured"] = measured
    if granularity == "module":
        op_graph = OpGraph(g.nx.copy(), name=g.name, default_cluster=g.default_cluster, notes=g.notes)
        if depth is None:
            try:
                depth = repeated_blocks(op_graph).depth
            except Exception as err:
                raise InputFormatError(f"--granularity module: no --depth given and {err}; pass --depth N") from None
        types = {path: type(m).__name__ for path, m in module.named_modules()}
        source["depth"] = depth
        g = coarsen_modules(OpGraph(g.nx.copy(), name=g.name, default_cluster=g.default_cluster, notes=g.notes,
                                    source=source), depth, module_types=types)
    else:
        source["depth"] = depth
        g = OpGraph(g.nx.copy(), name=g.name, default_cluster=g.default_cluster, notes=g.notes, source=source)
    return g


def _build_and_trace(spec, overrides, batch, seq_len, image_size, seed, profile, tracer, decompose=False):
    kw = dict(batch=batch, seq_len=seq_len, image_size=image_size, seed=seed)
    tracer = "export" if tracer == "auto" else tracer  # transformers models do not symbolic_trace
    if profile:
        built = build_model(spec, overrides, meta=False, **kw)
        return built, trace_module(built.module, built.example_inputs, name=spec[3:], tracer=tracer, decompose=decompose)
    built = build_model(spec, overrides, meta=True, **kw)
    try:
        return built, trace_module(built.module, built.example_inputs, name=spec[3:], tracer=tracer, decompose=decompose)
    except InputFormatError as meta_err:  # some models need real tensors to trace: retry if they fit
        try:
            built = build_model(spec, overrides, meta=False, **kw)
        except InputFormatError:
            raise meta_err from None
        traced = trace_module(built.module, built.example_inputs, name=spec[3:], tracer=tracer, decompose=decompose)
        traced.notes.append(f"traced with real weights (on the meta device: {meta_err})")
        return built, traced


def _host_kind(specs: Mapping[str, RooflineSpec]) -> str:
    if "cpu" in specs:
        return "cpu"
    hosts = [k for k, s in specs.items() if s.host]
    if not hosts:
        raise InputFormatError("--profile measures the host CPU, but the devices have no 'cpu' (or host) kind")
    return hosts[0]


def _check_calibration(calibration, specs, host) -> dict[str, float]:
    out = {}
    for kind, f in dict(calibration or {}).items():
        if kind not in specs:
            raise InputFormatError(f"--calibration {kind}={f}: no device kind {kind!r} (kinds: {', '.join(specs)})")
        if kind == host:
            raise InputFormatError(f"--calibration {kind}={f}: kind {kind!r} is measured by --profile; "
                                   "a factor applies to roofline kinds only")
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not math.isfinite(f) or f <= 0:
            raise InputFormatError(f"--calibration {kind}={f!r}: the factor must be a finite number > 0")
        out[kind] = float(f)
    return out


def _tied_note(module) -> list[str]:
    seen: dict[int, str] = {}
    tied = []
    for path, p in module.named_parameters(remove_duplicate=False):
        if id(p) in seen:
            tied.append(f"{path} = {seen[id(p)]}")
        else:
            seen[id(p)] = path
    if not tied:
        return []
    return [f"tied parameters ({'; '.join(tied[:3])}): counted in the size of every op that reads them, "
            "as each device holding one of those ops needs its own copy"]


def _with_profile(g: OpGraph, traced, module, inputs, host: str, repeats: int | None, clock: str):
    from .torch_profile import DEFAULT_REPEATS, profile_traced
    prof = profile_traced(traced.gm, module, inputs, repeats=repeats or DEFAULT_REPEATS, clock=clock,
                          backward=g.is_training)
    h = g.nx.copy()
    counted = counted_back = 0.0
    for nid, a in h.nodes(data=True):
        lat = dict(a["latency"])
        if a.get("backward"):
            lat[host] = prof.backward_node_ms.get(nid[:-len("__grad")], 0.0)
            counted_back += lat[host]
        else:
            lat[host] = prof.node_ms.get(nid, 0.0)
            counted += lat[host]
        a["latency"] = lat
    line = prof.calibration_line(counted, names=set(h.nodes))
    notes = list(g.notes) + [line, f"latencies of kind {host!r}: measured on this CPU (ms, median per op)"
                             + ("; backward ops: the autograd nodes their forward op created, timed in the "
                                "backward pass" if g.is_training else "")]
    ratios = prof.ratios(names=set(h.nodes))
    measured = {"clock": prof.clock, "sum_of_nodes_ms": counted, "forward_ms": prof.forward_ms,
                "ratio": counted / prof.forward_ms, "ratio_wall": ratios.get("wall"), "ratio_cpu": ratios.get("cpu"),
                "forward_wall_ms": prof.forward_ms if prof.clock == "wall" else prof.other_forward_ms,
                "forward_cpu_ms": prof.forward_ms if prof.clock == "cpu" else prof.other_forward_ms,
                "repeats": prof.repeats, "warmup": prof.warmup, "threads": prof.threads}
    if g.is_training:
        notes.append(prof.backward_line(counted_back))
        measured.update(backward_sum_of_nodes_ms=counted_back, backward_ms=prof.backward_ms,
                        backward_ratio=counted_back / prof.backward_ms if prof.backward_ms else None)
    return OpGraph(h, name=g.name, default_cluster=g.default_cluster, notes=notes), measured


def _scaled(g: OpGraph, factors: Mapping[str, float]) -> OpGraph:
    h: nx.DiGraph = g.nx.copy()
    for _, a in h.nodes(data=True):
        a["latency"] = {k: t * factors.get(k, 1.0) for k, t in a["latency"].items()}
    note = "calibration factors on roofline latencies: " + ", ".join(f"{k} x{f:g}" for k, f in factors.items())
    return OpGraph(h, name=g.name, default_cluster=g.default_cluster, notes=list(g.notes) + [note])
