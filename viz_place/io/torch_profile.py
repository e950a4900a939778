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
        other = ""
        if self.other_node_ms is not None and self.other_forward_ms:
            o_total = sum(v for k, v in self.other_node_ms.items() if names is None or k in names)
            other = (f"; {_other(self.clock)} clock: {o_total:.4g} ms vs {self.other_forward_ms:.4g} ms, "
                     f"ratio {o_total / self.other_forward_ms:.3f}")
        return (f"profile calibration ({self.clock} clock, used as latencies): sum of per-node times {total:.4g} ms "
                f"vs measured end-to-end forward {self.forward_ms:.4g} ms (ratio {ratio:.3f}{other}; median of "
                f"{self.repeats} runs after {self.warmup} warm-up, {self.threads} torch thread)")


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


def profile_traced(gm: Any, module: Any, example_inputs: Sequence[Any], *, warmup: int = DEFAULT_WARMUP,
                   repeats: int = DEFAULT_REPEATS, threads: int = 1, clock: str = "cpu") -> Profile:
    """Time every node of ``gm`` and the forward pass of ``module`` (see the module docstring)."""
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
    finally:
        torch.set_num_threads(old_threads)
    kind = {n.name: n.op for n in gm.graph.nodes}

    def medians(by_name):
        return {k: statistics.median(ts) / 1e6 for k, ts in by_name.items()
                if kind.get(k) not in ("placeholder", "output", "get_attr")}

    other = _other(clock)
    return Profile(medians(samples[clock]), statistics.median(forward[clock]) / 1e6, warmup, repeats, threads,
                   clock, medians(samples[other]), statistics.median(forward[other]) / 1e6)
