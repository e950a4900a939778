"""Measure every node of a traced PyTorch module on this machine's CPU.

:class:`NodeTimer` is a ``torch.fx.Interpreter`` that times each node it runs
(around ``run_node``), on two clocks at once: wall time
(``time.perf_counter_ns``) and the CPU time of the calling thread
(``time.thread_time_ns``: with one torch thread every kernel runs in it, and
time the process spends waiting for a core on a shared machine is not
counted). :func:`profile_traced` runs it ``warmup`` times untimed, then
``repeats`` times, on one torch thread, and keeps each node's median; after
each of those runs it also times the whole module's forward pass (interleaved,
so both see the same load), so the sum of the per-node times can be checked
against the end-to-end median (the *calibration line*, kept in ``graph.notes``).
``clock`` chooses which clock's medians become the latencies (``"cpu"``, the
default, or ``"wall"``); the line reports both. On an idle machine the two
agree; on a shared one wall times also hold the waits for a core (measured
here at load average ~9 on 2 cores: GPT-2's forward took 1.6 s of wall time
for 0.48 s of CPU time), so the CPU clock is the default.

With ``backward=True`` (training graphs) the backward pass is measured the same
way: :class:`BackwardTimer` runs the nodes with autograd on and records which
autograd nodes (``grad_fn``) each fx node created; a pre-hook and a hook on each
of them time its part of the backward pass of the first output (the tensor a
training loss is taken of; on the CPU the engine runs in the calling thread),
summed per fx node, and after each run the model's own backward pass is timed
without hooks (the *backward calibration line*). The parameters hold zero
gradients before each pass, so the pass adds into them, as every microbatch
after the first does in a pipeline's training step (for GPT-2, 124 M
parameters, that is about 9 % of the backward pass); they are ``None`` again
afterwards.
An fx node whose outputs need no gradient created no autograd node: its
backward time is 0.

>>> import torch
>>> m = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU())
>>> gm = torch.fx.symbolic_trace(m)
>>> p = profile_traced(gm, m, (torch.randn(8, 64),), repeats=3)
>>> sorted(p.node_ms) == ['_0', '_1'] and all(t > 0 for t in p.node_ms.values()) and p.forward_ms > 0
True
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Sequence

from ..errors import InputFormatError
from .torch_models import output_tensors

DEFAULT_WARMUP = 3
DEFAULT_REPEATS = 10
CLOCKS = ("wall", "cpu")


@dataclass(frozen=True)
class Profile:
    """Per-node medians (ms, by fx node name) and the forward pass (ms) on the chosen ``clock``,
    the same on the other clock (``other_*``), and how they were measured."""

    node_ms: dict[str, float]
    forward_ms: float
    warmup: int
    repeats: int
    threads: int
    clock: str = "cpu"
    other_node_ms: dict[str, float] | None = None
    other_forward_ms: float | None = None
    #: with ``backward=True``: per fx node, the time of the autograd nodes it created, and the model's
    #: end-to-end backward pass (ms), on ``clock`` and on the other clock
    backward_node_ms: dict[str, float] | None = None
    backward_ms: float | None = None
    other_backward_node_ms: dict[str, float] | None = None
    other_backward_ms: float | None = None

    @property
    def sum_ms(self) -> float:
        return float(sum(self.node_ms.values()))

    def ratios(self, names=None) -> dict[str, float]:
        """Sum of the per-node medians / the end-to-end median, per clock (over ``names`` if given)."""
        out = {}
        for clock, nodes, fwd in ((self.clock, self.node_ms, self.forward_ms),
                                  (_other(self.clock), self.other_node_ms, self.other_forward_ms)):
            if nodes is None or not fwd:
                continue
            total = sum(v for k, v in nodes.items() if names is None or k in names)
            out[clock] = total / fwd
        return out

    def calibration_line(self, counted_ms: float | None = None, names=None) -> str:
        """``sum of per-node times vs the end-to-end forward`` as one line (both clocks)."""
        total = self.sum_ms if counted_ms is None else counted_ms
        ratio = total / self.forward_ms if self.forward_ms > 0 else float("inf")
        other = self._other_clock(self.other_node_ms, self.other_forward_ms, names)
        return (f"profile calibration ({self.clock} clock, used as latencies): sum of per-node times {total:.4g} ms "
                f"vs measured end-to-end forward {self.forward_ms:.4g} ms (ratio {ratio:.3f}{other}; median of "
                f"{self.repeats} runs after {self.warmup} warm-up, {self.threads} torch thread)")

    def backward_line(self, counted_ms: float) -> str:
        """``sum of per-node backward times vs the end-to-end backward`` as one line (both clocks)."""
        ratio = counted_ms / self.backward_ms if self.backward_ms else float("inf")
        other = self._other_clock(self.other_backward_node_ms, self.other_backward_ms)
        return (f"backward calibration ({self.clock} clock, used as the backward ops' latencies): sum of per-node "
                f"backward times {counted_ms:.4g} ms vs measured end-to-end backward {self.backward_ms:.4g} ms "
                f"(ratio {ratio:.3f}{other}; median of {self.repeats} runs after {self.warmup} warm-up)")

    def _other_clock(self, nodes: dict[str, float] | None, end_to_end: float | None, names=None) -> str:
        """The calibration lines' clause for the clock not used as latencies ('' when not measured)."""
        if nodes is None or not end_to_end:
            return ""
        total = sum(v for k, v in nodes.items() if names is None or k in names)
        return f"; {_other(self.clock)} clock: {total:.4g} ms vs {end_to_end:.4g} ms, ratio {total / end_to_end:.3f}"


def _other(clock: str) -> str:
    return "cpu" if clock == "wall" else "wall"


def _node_timer_class():
    import torch.fx

    class NodeTimer(torch.fx.Interpreter):
        """An interpreter that records each node's wall and thread-CPU time (ns)."""

        def __init__(self, gm):
            super().__init__(gm)
            self.wall: dict[str, int] = {}
            self.cpu: dict[str, int] = {}

        def run_node(self, n):
            w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
            out = super().run_node(n)
            c1, w1 = time.thread_time_ns(), time.perf_counter_ns()
            self.wall[n.name] = w1 - w0
            self.cpu[n.name] = c1 - c0
            return out

    return NodeTimer


def _backward_timer_class():
    import torch.fx

    class BackwardTimer(torch.fx.Interpreter):
        """Runs the nodes with autograd on and records which fx node created each autograd node
        (walking back from its outputs' ``grad_fn`` to the ones earlier nodes created); :meth:`arm` then
        hooks every one of them so that a backward pass adds its wall and thread-CPU time to its fx node."""

        def __init__(self, gm):
            super().__init__(gm)
            self.owner: dict[int, str] = {}
            self.fns: list = []                     # keeps the autograd nodes (and their ids) alive
            self.wall: dict[str, int] = {}
            self.cpu: dict[str, int] = {}
            self.handles: list = []
            self._last: tuple[str, int, int] | None = None

        def run_node(self, n):
            out = super().run_node(n)
            stack = [t.grad_fn for t in output_tensors(out) if t.grad_fn is not None]
            while stack:
                fn = stack.pop()
                if fn is None or id(fn) in self.owner:
                    continue
                self.owner[id(fn)] = n.name
                self.fns.append(fn)
                stack.extend(f for f, _ in fn.next_functions)
            return out

        def arm(self) -> None:
            """Hook every recorded autograd node. The engine's work after a node (adding the gradients it
            made into the next nodes' inputs, freeing what it saved) runs between its hook and the next
            node's pre-hook: that gap counts for the node too, so the per-node times add up to the pass."""
            started: dict[int, tuple[int, int]] = {}

            def pre(key):
                def hook(*_):
                    w, c = time.perf_counter_ns(), time.thread_time_ns()
                    self._close_gap(w, c)
                    started[key] = (w, c)
                return hook

            def post(key, name):
                def hook(*_):
                    c1, w1 = time.thread_time_ns(), time.perf_counter_ns()
                    w0, c0 = started.pop(key, (w1, c1))
                    self._add(name, w1 - w0, c1 - c0)
                    self._last = (name, time.perf_counter_ns(), time.thread_time_ns())
                return hook

            for fn in self.fns:     # (a parameter's AccumulateGrad node outlives the pass: hooks removed in finish)
                key = id(fn)
                self.handles += [fn.register_prehook(pre(key)), fn.register_hook(post(key, self.owner[key]))]

        def finish(self) -> None:
            """After the backward pass: the engine's work after the last node counts for it; hooks removed."""
            self._close_gap(time.perf_counter_ns(), time.thread_time_ns())
            for handle in self.handles:
                handle.remove()
            self.handles = []

        def _add(self, name: str, wall: int, cpu: int) -> None:
            self.wall[name] = self.wall.get(name, 0) + wall
            self.cpu[name] = self.cpu.get(name, 0) + cpu

        def _close_gap(self, w: int, c: int) -> None:
            """The time since the last node's hook (the engine's work after it) counts for that node."""
            if self._last is not None:
                name, w0, c0 = self._last
                self._add(name, w - w0, c - c0)
                self._last = None

    return BackwardTimer


def _backward_root(out, what: str):
    """The model's first output tensor: the one a training loss is taken of (as the pipeline runs do)."""
    tensors = output_tensors(out)
    if not tensors or not tensors[0].requires_grad or not tensors[0].is_floating_point():
        raise InputFormatError(f"profile: the first output of {what} needs no gradient (no parameter requires "
                               "grad?), so its backward pass cannot be measured")
    return tensors[0]


def _measure_backward(gm, module, example_inputs, warmup: int, repeats: int) -> dict:
    """Per-node and end-to-end backward times (ns lists per clock), interleaved run by run."""
    import torch
    timer_cls = _backward_timer_class()
    params = list(gm.parameters()) + list(module.parameters())
    nodes: dict[str, dict[str, list[int]]] = {"wall": {}, "cpu": {}}
    total: dict[str, list[int]] = {"wall": [], "cpu": []}

    def zero_grads():        # present, so every backward adds into them, as microbatches after the first do
        for p in params:
            if p.requires_grad:
                p.grad = torch.zeros_like(p)

    for i in range(warmup + repeats):
        zero_grads()
        timer = timer_cls(gm)
        try:
            with torch.enable_grad():
                root = _backward_root(timer.run(*example_inputs), "the traced module")
                timer.arm()
                try:
                    root.backward(torch.ones_like(root))
                finally:
                    timer.finish()
                zero_grads()
                root = _backward_root(module(*example_inputs), "the model")
                grad = torch.ones_like(root)
                w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
                root.backward(grad)
                c1, w1 = time.thread_time_ns(), time.perf_counter_ns()
        except InputFormatError:
            raise
        except Exception as err:
            raise InputFormatError(f"profile: the backward pass failed ({type(err).__name__}: "
                                   f"{' '.join(str(err).split())[:300]})") from None
        if i >= warmup:
            for clock, by_name in (("wall", timer.wall), ("cpu", timer.cpu)):
                for name in set(timer.owner.values()):
                    nodes[clock].setdefault(name, []).append(by_name.get(name, 0))
            total["wall"].append(w1 - w0)
            total["cpu"].append(c1 - c0)
    for p in params:
        p.grad = None
    return {"nodes": nodes, "total": total}


def profile_traced(gm: Any, module: Any, example_inputs: Sequence[Any], *, warmup: int = DEFAULT_WARMUP,
                   repeats: int = DEFAULT_REPEATS, threads: int = 1, clock: str = "cpu",
                   backward: bool = False) -> Profile:
    """Time every node of ``gm`` and the forward pass of ``module`` (see the module docstring); with
    ``backward``, each node's share of the backward pass and the model's backward pass too.

    >>> import torch
    >>> m = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU())
    >>> p = profile_traced(torch.fx.symbolic_trace(m), m, (torch.randn(8, 64),), repeats=3, backward=True)
    >>> p.backward_node_ms["_0"] > 0 and p.backward_ms > 0
    True
    """
    import torch
    for label, v, low in (("warmup", warmup, 0), ("repeats", repeats, 1), ("threads", threads, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise InputFormatError(f"profile: {label} must be a whole number >= {low}, got {v!r}")
    if clock not in CLOCKS:
        raise InputFormatError(f"profile: clock {clock!r}: expected wall or cpu")
    if any(getattr(t, "is_meta", False) for t in example_inputs):
        raise InputFormatError("profile: the model was built on the meta device (no real weights); "
                               "profiling needs real tensors")
    old_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    timer_cls = _node_timer_class()
    samples: dict[str, dict[str, list[int]]] = {"wall": {}, "cpu": {}}
    forward: dict[str, list[int]] = {"wall": [], "cpu": []}
    try:
        with torch.no_grad():
            for i in range(warmup + repeats):  # interleaved, so both see the same machine load
                timer = timer_cls(gm)
                try:
                    timer.run(*example_inputs)
                except Exception as err:
                    raise InputFormatError(f"profile: running the traced module failed ({type(err).__name__}: "
                                           f"{' '.join(str(err).split())[:300]})") from None
                w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
                module(*example_inputs)
                c1, w1 = time.thread_time_ns(), time.perf_counter_ns()
                if i >= warmup:
                    for name, t in timer.wall.items():
                        samples["wall"].setdefault(name, []).append(t)
                    for name, t in timer.cpu.items():
                        samples["cpu"].setdefault(name, []).append(t)
                    forward["wall"].append(w1 - w0)
                    forward["cpu"].append(c1 - c0)
        back = _measure_backward(gm, module, example_inputs, warmup, repeats) if backward else None
    finally:
        torch.set_num_threads(old_threads)
    kind = {n.name: n.op for n in gm.graph.nodes}

    def medians(by_name):
        return {k: statistics.median(ts) / 1e6 for k, ts in by_name.items()
                if kind.get(k) not in ("placeholder", "output", "get_attr")}

    other = _other(clock)
    extra = {}
    if back is not None:
        extra = dict(backward_node_ms=medians(back["nodes"][clock]),
                     backward_ms=statistics.median(back["total"][clock]) / 1e6,
                     other_backward_node_ms=medians(back["nodes"][other]),
                     other_backward_ms=statistics.median(back["total"][other]) / 1e6)
    return Profile(medians(samples[clock]), statistics.median(forward[clock]) / 1e6, warmup, repeats, threads,
                   clock, medians(samples[other]), statistics.median(forward[other]) / 1e6, **extra)
