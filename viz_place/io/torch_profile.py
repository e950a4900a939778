"""Measure every node of a traced PyTorch module on this machine's CPU.

:class:`NodeTimer` is a ``torch.fx.Interpreter`` that times each node it runs
(``time.perf_counter_ns`` around ``run_node``). :func:`profile_traced` runs it
``warmup`` times untimed, then ``repeats`` times, on one torch thread, and
keeps each node's median; it also times the whole module's forward pass after
each of those runs (median of ``repeats``: interleaved, so that both see the
same load on a shared machine), so the sum of the per-node times can be
checked against it (the *calibration line*, kept in ``graph.notes``).

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


@dataclass(frozen=True)
class Profile:
    """Per-node medians (ms, by fx node name), the measured forward pass (ms) and how it was measured."""

    node_ms: dict[str, float]
    forward_ms: float
    warmup: int
    repeats: int
    threads: int

    @property
    def sum_ms(self) -> float:
        return float(sum(self.node_ms.values()))

    def calibration_line(self, counted_ms: float | None = None) -> str:
        """``sum of per-node times vs the end-to-end forward`` as one line."""
        total = self.sum_ms if counted_ms is None else counted_ms
        ratio = total / self.forward_ms if self.forward_ms > 0 else float("inf")
        return (f"profile calibration: sum of per-node times {total:.4g} ms vs measured end-to-end forward "
                f"{self.forward_ms:.4g} ms (ratio {ratio:.3f}; median of {self.repeats} runs after {self.warmup} "
                f"warm-up, {self.threads} torch thread)")


def _node_timer_class():
    import torch.fx

    class NodeTimer(torch.fx.Interpreter):
        """An interpreter that adds each node's wall time (ns) to ``self.times``."""

        def __init__(self, gm):
            super().__init__(gm)
            self.times: dict[str, int] = {}

        def run_node(self, n):
            t0 = time.perf_counter_ns()
            out = super().run_node(n)
            self.times[n.name] = time.perf_counter_ns() - t0
            return out

    return NodeTimer


def profile_traced(gm: Any, module: Any, example_inputs: Sequence[Any], *, warmup: int = DEFAULT_WARMUP,
                   repeats: int = DEFAULT_REPEATS, threads: int = 1) -> Profile:
    """Time every node of ``gm`` and the forward pass of ``module`` (see the module docstring)."""
    import torch
    for label, v, low in (("warmup", warmup, 0), ("repeats", repeats, 1), ("threads", threads, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise InputFormatError(f"profile: {label} must be a whole number >= {low}, got {v!r}")
    if any(getattr(t, "is_meta", False) for t in example_inputs):
        raise InputFormatError("profile: the model was built on the meta device (no real weights); "
                               "profiling needs real tensors")
    old_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        timer_cls = _node_timer_class()
        samples: dict[str, list[int]] = {}
        forward: list[int] = []
        with torch.no_grad():
            for i in range(warmup + repeats):  # interleaved, so both see the same machine load
                timer = timer_cls(gm)
                try:
                    timer.run(*example_inputs)
                except Exception as err:
                    raise InputFormatError(f"profile: running the traced module failed ({type(err).__name__}: "
                                           f"{' '.join(str(err).split())[:300]})") from None
                t0 = time.perf_counter_ns()
                module(*example_inputs)
                t1 = time.perf_counter_ns()
                if i >= warmup:
                    for name, t in timer.times.items():
                        samples.setdefault(name, []).append(t)
                    forward.append(t1 - t0)
    finally:
        torch.set_num_threads(old_threads)
    node_ms = {name: statistics.median(ts) / 1e6 for name, ts in samples.items()}
    kind = {n.name: n.op for n in gm.graph.nodes}
    node_ms = {k: v for k, v in node_ms.items() if kind.get(k) not in ("placeholder", "output", "get_attr")}
    return Profile(node_ms, statistics.median(forward) / 1e6, warmup, repeats, threads)
