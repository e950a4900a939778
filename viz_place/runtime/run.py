"""Run a placement as a real pipeline of CPU processes and set it beside the prediction.

:func:`run_pipeline` splits the model with ``torch.distributed.pipelining`` at the
placement's split points, starts one spawned process per stage (one torch thread each),
streams ``microbatches`` inputs through a GPipe-style schedule (every stage runs every
microbatch forward as soon as its inputs are there), checks the outputs against the unsplit
model and reports, next to the evaluator's figures for the same placement priced for this
machine (:mod:`viz_place.runtime.costs`):

* ``measured_time_per_sample`` — steady state at the last stage: the time between its first
  and last microbatch over ``microbatches - 1`` (a *sample* is one forward pass of the graph
  at its imported batch size, what the graph's costs describe); ``wall_time_per_sample``
  includes filling and draining the pipeline; both are medians over ``repeats`` streams after
  one warm-up stream;
* ``predicted_time_per_sample`` — the evaluator's max-load of the placement;
* per stage, the measured compute and transfer (copies and posts; waiting is reported apart)
  per sample, next to the evaluator's compute and communication of that device.

Transports: ``shm`` (:mod:`viz_place.runtime.shm_pipeline`, the default) and ``gloo``
(:mod:`viz_place.runtime.gloo_pipeline`: torch's ``PipelineStage`` + ``ScheduleGPipe``).
A training graph (``import --training``) runs 1F1B training steps over gloo instead
(``Schedule1F1B``), and the stages' gradients are checked against the unsplit model's.
"""
from __future__ import annotations

import os
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Mapping

from ..cost import evaluate
from ..errors import InputFormatError, PlacementError
from ..io.torch_export_placement import PipelineSplit, pipeline_split
from ..model import OpGraph, Placement
from .calibrate import LinkCalibration, calibrate_link
from .costs import runtime_problem, to_runtime_placement
from .errors import InternalError
from .procs import RunCancelled, StageGroup
from .recipe import ModelRecipe, graph_source
from ..io.torch_models import output_tensors
from .stages import as_list, build_pipe, check_weights, compiled_stage, stage_plan

TRANSPORTS = ("shm", "gloo")


@dataclass
class StageFigures:
    stage: int
    device: str
    nodes: int
    measured_compute: float
    measured_transfer: float
    measured_wait: float
    predicted_compute: float
    predicted_communication: float
    predicted_load: float


@dataclass
class PipelineRun:
    """What :func:`run_pipeline` measured and predicted (times in ms)."""

    graph: str
    transport: str
    stages: int
    devices: list[str]
    split_spec: dict[str, str]
    microbatches: int
    outputs_match: bool
    max_abs_diff: float
    measured_time_per_sample: float
    wall_time_per_sample: float
    predicted_time_per_sample: float
    single_process_time_per_sample: float
    per_stage: list[StageFigures]
    link: dict[str, Any]
    costs: str
    time_unit: str = "ms"
    repeats: int = 0
    notes: list[str] = field(default_factory=list)
    training: bool = False
    grads_match: bool | None = None        # training: every parameter's gradient equals the unsplit model's
    grads_max_abs_diff: float | None = None

    @property
    def ratio(self) -> float:
        """measured / predicted."""
        return self.measured_time_per_sample / self.predicted_time_per_sample if self.predicted_time_per_sample else float("inf")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["measured_over_predicted"] = self.ratio
        return d


def _microbatch_inputs(example: tuple, count: int, seed: int) -> list[tuple]:
    """``count`` inputs shaped like ``example``: floats redrawn, integers (token ids) shuffled."""
    import torch
    gen = torch.Generator().manual_seed(seed)
    out = []
    for m in range(count):
        mb = []
        for x in example:
            if not isinstance(x, torch.Tensor):
                raise InputFormatError(f"example inputs must be tensors, got {type(x).__name__}")
            if m == 0:
                mb.append(x.clone())
            elif x.is_floating_point():
                mb.append(torch.randn(x.shape, generator=gen, dtype=x.dtype))
            else:
                flat = x.reshape(-1)
                mb.append(flat[torch.randperm(flat.numel(), generator=gen)].reshape(x.shape).clone())
        out.append(tuple(mb))
    return out


def _costs_kind(graph: OpGraph) -> str:
    profiled = bool((graph.source or {}).get("profile"))
    return "measured cpu latencies (import --profile)" if profiled else "roofline estimates (import without --profile)"


def run_pipeline(graph: OpGraph, placement: Placement | Mapping[str, str], *, recipe: ModelRecipe | None = None,
                 link: LinkCalibration | None = None, microbatches: int = 4, repeats: int = 3,
                 transport: str = "shm", slots: int = 2, seed: int = 0, timeout: float = 600.0,
                 cancel=None, progress: Callable[[str], None] | None = None,
                 on_start: Callable[[list[int]], None] | None = None, training: bool | None = None) -> PipelineRun:
    """Run ``placement`` of ``graph`` for real (module docstring); ``recipe`` rebuilds the model
    (default: the source the importer recorded on ``graph``). ``link`` is a calibration of the
    same transport (default: one is measured now, before the run). ``on_start`` gets the stage
    pids. ``training`` (default: whether ``graph`` has backward nodes, ``import --training``)
    runs every stream as a 1F1B training step (torch's ``Schedule1F1B`` over gloo) and checks
    every parameter's gradient against the unsplit model's. Raises
    :class:`~viz_place.runtime.errors.PipelineRunError` naming a stage that failed."""
    say = progress or (lambda msg: None)
    if transport not in TRANSPORTS:
        raise InputFormatError(f"transport {transport!r}: expected one of {TRANSPORTS}")
    training = graph.is_training if training is None else bool(training)
    if training:
        check_training_run(graph, transport)
    elif graph.is_training:
        raise InputFormatError(f"graph {graph.name!r} has backward nodes, so its prediction is a training step: run it "
                               "with training=True or import the model without --training for an inference run")
    if isinstance(microbatches, bool) or not isinstance(microbatches, int) or microbatches < 1:
        raise InputFormatError(f"microbatches must be a whole number >= 1, got {microbatches!r}")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise InputFormatError(f"repeats must be a whole number >= 1, got {repeats!r}")
    if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
        raise InputFormatError(f"slots must be a whole number >= 1, got {slots!r}")
    split = pipeline_split(graph, placement)
    if training and microbatches < split.num_stages:
        raise InputFormatError(f"microbatches {microbatches}: a 1F1B schedule needs at least as many microbatches "
                               f"as stages ({split.num_stages})")
    if recipe is None:
        source = graph_source(graph)
        if source is None:
            raise InputFormatError(f"graph {graph.name!r} records no model source (import it from a SPEC such as "
                                   "hf:gpt2, or pass the module: run_pipeline(..., recipe=ModelRecipe.from_module(m, inputs)))")
        recipe = ModelRecipe.from_source(source)
    if link is None:
        say(f"calibrating the {transport} link (ping-pong)")
        link = calibrate_link(transport)
    elif link.transport != transport:
        raise InputFormatError(f"link calibration is for transport {link.transport!r}, the run uses {transport!r}")
    cost_graph, cluster = runtime_problem(graph, link, split.num_stages)
    ev = evaluate(cost_graph, cluster, to_runtime_placement(placement, split.devices))
    import torch
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        say(f"building {recipe.describe()} and splitting it into {split.num_stages} stages")
        module, example = recipe.build()
        pipe = build_pipe(recipe.build()[0], example, split)  # pipeline() alters the module it splits
        check_weights(pipe, split, graph, module)
        plan = stage_plan(pipe)
        mbs = _microbatch_inputs(example, microbatches, seed)
        values = _dry_run(pipe, plan, mbs[0])
        targets = _targets(module, mbs, seed) if training else None
        if transport == "shm":
            from .shm_runner import run_shm
            got, stats, single, grads = run_shm(recipe, split, plan, values, mbs, module, slots=slots,
                                                repeats=repeats, timeout=timeout, cancel=cancel, on_start=on_start,
                                                say=say)
        else:
            from .gloo_pipeline import run_gloo
            got, stats, single, grads = run_gloo(recipe, split, plan, values, mbs, module, repeats=repeats,
                                                 timeout=timeout, cancel=cancel, on_start=on_start, say=say,
                                                 targets=targets)
        with torch.no_grad():
            reference = [output_tensors(module(*mb)) for mb in mbs]
        grad_diff, grads_match = _compare_grads(module, mbs, targets, grads) if training else (None, None)
    finally:
        torch.set_num_threads(threads)
    diff, match = _compare(got, reference)
    per_stage, measured, wall = _figures(split, stats, ev, microbatches)
    return PipelineRun(graph=graph.name, transport=transport, stages=split.num_stages, devices=list(split.devices),
                       split_spec=dict(split.split_spec), microbatches=microbatches, outputs_match=match,
                       max_abs_diff=diff, measured_time_per_sample=measured, wall_time_per_sample=wall,
                       predicted_time_per_sample=ev.max_load, single_process_time_per_sample=single,
                       per_stage=per_stage, link=link.to_dict(), costs=_costs_kind(graph), repeats=repeats,
                       notes=_notes(transport, graph, training), training=training, grads_match=grads_match,
                       grads_max_abs_diff=grad_diff)


def check_training_run(graph: OpGraph, transport: str) -> None:
    """Refuse a training run that cannot be predicted (no backward nodes) or run (not over gloo)."""
    if not graph.is_training:
        raise InputFormatError(f"graph {graph.name!r} has no backward nodes, so nothing predicts a training step "
                               "(import it with --training)")
    if transport != "gloo":
        raise InputFormatError("training runs use torch's Schedule1F1B, which moves activations and gradients over "
                               "a process group: pass transport='gloo' (--transport gloo)")


def _targets(module, mbs: list[tuple], seed: int) -> list:
    """One fixed random target per microbatch, shaped like the model's first output tensor."""
    import torch
    with torch.no_grad():
        first = output_tensors(module(*mbs[0]))[0]
    gen = torch.Generator().manual_seed(seed + 1)
    return [torch.randn(first.shape, generator=gen) for _ in mbs]


def _compare_grads(module, mbs: list[tuple], targets: list, grads: Mapping[int, Mapping[str, Any]]
                   ) -> tuple[float, bool]:
    """(max abs difference, match) of the stages' gradients (a tied parameter's summed over the
    stages that hold it, under any of its names) against the unsplit model's, loss summed over
    the same microbatches."""
    import torch
    from .gloo_pipeline import pipeline_loss
    module.zero_grad(set_to_none=True)
    for mb, t in zip(mbs, targets):
        pipeline_loss(module(*mb), t).backward()
    summed: dict[str, Any] = {}
    for stage_grads in grads.values():
        for name, g in stage_grads.items():
            g = torch.as_tensor(g)
            summed[name] = summed[name] + g if name in summed else g
    aliases: dict[int, list[str]] = {}  # a tied parameter's names (GPT-2: transformer.wte.weight, lm_head.weight)
    for name, p in module.named_parameters(remove_duplicate=False):
        aliases.setdefault(id(p), []).append(name)
    diff, scale, missing = 0.0, 1e-12, []
    for name, p in module.named_parameters():
        if p.grad is None:
            continue
        held = [summed[a] for a in aliases[id(p)] if a in summed]
        if not held:
            missing.append(name)
            continue
        diff = max(diff, float((sum(held).double() - p.grad.double()).abs().max()))
        scale = max(scale, float(p.grad.double().abs().max()))
    module.zero_grad(set_to_none=True)
    if missing:
        raise InternalError(f"training run: no stage returned a gradient for {missing[:3]} "
                            f"({len(missing)} parameter(s))")
    return diff, diff <= 1e-4 * scale


def _notes(transport: str, graph: OpGraph, training: bool = False) -> list[str]:
    notes = []
    if training:
        notes.append("training: one 1F1B step per stream (Schedule1F1B, MSE loss of the first output vs a fixed random "
                     "target, summed over microbatches, dropout off); a sample is one forward + backward")
    if transport == "gloo":
        notes.append("gloo: a stage's sends and receives cannot be told apart from waiting; they are in 'wait'")
    if not (graph.source or {}).get("profile"):
        notes.append("cpu latencies are roofline estimates (import --profile measures them on this machine)")
    return notes


def _dry_run(pipe, plan, inputs: tuple) -> dict:
    """Run the stages one after another in this process: every value that crosses a boundary."""
    import torch
    vals = {}
    with torch.no_grad():
        for s, args in enumerate(plan.stage_args):
            real = [inputs[r[1]] if r[0] == "in" else vals[(r[1], r[2])] for r in args]
            for k, v in enumerate(as_list(compiled_stage(pipe.get_stage_module(s))(*real))):
                vals[(s, k)] = v
    for (j, s), idx in plan.links().items():
        for k in idx:
            if not isinstance(vals[(j, k)], torch.Tensor):
                raise PlacementError(f"stage {j} passes a {type(vals[(j, k)]).__name__} to stage {s}; the runner "
                                     "moves tensors only (move the boundary)")
    return vals


def _compare(got: list[list], reference: list[list]) -> tuple[float, bool]:
    diff, scale = 0.0, 1.0
    for g, r in zip(got, reference):
        if len(g) != len(r):
            g, r = g[:1], r[:1]
        for a, b in zip(g, r):
            if a.shape != b.shape:
                return float("inf"), False
            diff = max(diff, float((a.double() - b.double()).abs().max()) if a.numel() else 0.0)
            scale = max(scale, float(b.double().abs().max()) if b.numel() else 0.0)
    return diff, diff <= 1e-5 * scale


def _figures(split: PipelineSplit, stats: list[list[dict]], ev, microbatches: int):
    """Per-stage figures (medians over the timed repeats, per sample) and the two times per sample."""
    per_stage = []
    for s, runs in enumerate(stats):
        med = {k: statistics.median(r[k] for r in runs) / microbatches * 1e3
               for k in ("compute", "recv_wait", "recv_copy", "send_wait", "send_copy")}
        dev = ev.device(f"proc:{s}")
        per_stage.append(StageFigures(s, split.devices[s], len(split.stage_nodes[s]), med["compute"],
                                      med["recv_copy"] + med["send_copy"], med["recv_wait"] + med["send_wait"],
                                      dev.compute, dev.communication, dev.load))
    last = stats[-1]
    if microbatches > 1:
        measured = statistics.median((r["done"][-1] - r["done"][0]) / (microbatches - 1) for r in last) * 1e3
    else:
        measured = statistics.median(r["done"][-1] - min(x["start"] for x in stats[0]) for r in last) * 1e3
    firsts = [min(stats[s][i]["start"] for s in range(len(stats))) for i in range(len(last))]
    wall = statistics.median((r["done"][-1] - f) / microbatches for r, f in zip(last, firsts)) * 1e3
    return per_stage, measured, wall
