"""The set-partitioning bound's local search for columns (:mod:`.set_bound`): sets of groups with a high
``pi(S)`` that fit one device of a type, found by single-group moves and swaps (it proves nothing; the
pricing of :mod:`.set_pricing` gives the bounds).
"""
from __future__ import annotations

import numpy as np

from .set_pricing import DeviceType, Sources, _pricing, device_types, set_load  # noqa: F401 (doctests)


class LocalPricer:
    """A fast heuristic for the pricing problem: from a start set, single-group additions, removals and
    swaps that raise ``pi(S)`` while the load stays within ``T`` and the memory within capacity (the load
    kept up to date incrementally). It proposes columns; it proves nothing (the MILP :class:`.set_pricing.Pricer`
    gives the bound). The search runs compiled (``_pricing.local_improve``) when the extension is built,
    move for move the Python loop's (:meth:`improve_python`, the fallback; the same sets, bit for bit:
    ``tests/test_set_bound.py``): compiled, a refutation on inception_100_s2_training takes 6 % less time.

    >>> from viz_place.testing import random_instance
    >>> from viz_place.cost import compile_problem
    >>> from viz_place.solvers.groups import allowed_devices
    >>> inst = random_instance(2)
    >>> prob = compile_problem(inst.graph, inst.cluster)
    >>> t = device_types(prob, allowed_devices(prob, inst.pins))[0]
    >>> local, pi = LocalPricer(t, Sources.of(prob)), np.ones(len(prob.groups))
    >>> empty = np.zeros(len(prob.groups), dtype=bool)
    >>> fast, slow = local.improve(pi, 1e9, empty), local.improve_python(pi, 1e9, empty)
    >>> bool((fast == slow).all()), int(fast.sum()) == len(t.groups)     # room for every group: all taken
    (True, True)
    """

    def __init__(self, t: DeviceType, sources: Sources) -> None:
        self.t, self.sources = t, sources
        G = len(t.mem)
        src = sources.src_group.tolist()
        # per group, the sources its move touches: (source, own group is g, g is a successor group)
        touch: list[dict[int, list[bool]]] = [{} for _ in range(G)]
        for i, (g, succ) in enumerate(zip(src, sources.succ_groups)):
            touch[g].setdefault(i, [False, False])[0] = True
            for h in succ.tolist():
                touch[h].setdefault(i, [False, False])[1] = True
        self.touch = [[(i, o, n) for i, (o, n) in d.items()] for d in touch] if t.pay else [[] for _ in range(G)]
        self.src = src
        self.nsucc = [len(succ) for succ in sources.succ_groups]
        self.cost = (sources.cost * t.pay).tolist() if t.pay else [0.0] * len(src)
        self.work = [float(w) if np.isfinite(w) else 0.0 for w in t.work]
        self.mem = t.mem.tolist()
        self.allowed = np.isfinite(t.work)
        # the same, as the compiled search reads it: touches in CSR (per group, in the order of self.touch)
        i8, f8 = np.int64, np.float64
        self._touch_ptr = np.zeros(G + 1, dtype=i8)
        self._touch_ptr[1:] = np.cumsum([len(x) for x in self.touch])
        flat = [e for x in self.touch for e in x]
        self._touch_src = np.array([i for i, _, _ in flat], dtype=i8)
        self._touch_own = np.array([o for _, o, _ in flat], dtype=np.uint8)
        self._touch_succ = np.array([n for _, _, n in flat], dtype=np.uint8)
        self._src, self._nsucc = np.array(src, dtype=i8), np.array(self.nsucc, dtype=i8)
        self._cost, self._work, self._mem = (np.array(x, dtype=f8) for x in (self.cost, self.work, self.mem))
        self._succ_ptr, self._succ = sources.successor_arrays()

    def _delta(self, g: int, S: list[bool], inside: list[int]) -> float:
        """Change of communication if ``g`` is toggled."""
        d = 0.0
        step = -1 if S[g] else 1
        src, nsucc, cost = self.src, self.nsucc, self.cost
        for i, is_own, is_succ in self.touch[g]:
            ins = inside[i]
            own = S[src[i]]
            new_ins = ins + step if is_succ else ins
            new_own = (not own) if is_own else own
            before = (ins < nsucc[i]) if own else (ins > 0)
            after = (new_ins < nsucc[i]) if new_own else (new_ins > 0)
            if before != after:
                d += cost[i] if after else -cost[i]
        return d

    def _toggle(self, g: int, S: list[bool], inside: list[int]) -> None:
        step = -1 if S[g] else 1
        for i, _, is_succ in self.touch[g]:
            if is_succ:
                inside[i] += step
        S[g] = not S[g]

    def _candidates(self, pi: np.ndarray) -> list[int]:
        """The allowed groups, dearest first (the order the search tries them in)."""
        return [g for g in np.argsort(-pi).tolist() if self.allowed[g]]

    def improve(self, pi: np.ndarray, T: float, start: np.ndarray, rounds: int = 4) -> np.ndarray:
        """A set at least as good as ``start`` (which must fit) under prices ``pi``."""
        if _pricing is None:
            return self.improve_python(pi, T, start, rounds)
        t = self.t
        load = set_load(t, self.sources, start)
        mem = float(t.mem[start].sum())
        raw = _pricing.local_improve(
            np.ascontiguousarray(pi, dtype=np.float64), float(T), np.ascontiguousarray(start, dtype=np.uint8),
            float(load), mem, float(t.capacity), np.array(self._candidates(pi), dtype=np.int64), self._work,
            self._mem, self._touch_ptr, self._touch_src, self._touch_own, self._touch_succ, self._src,
            self._nsucc, self._cost, self._succ_ptr, self._succ, int(rounds))
        return np.frombuffer(raw, dtype=np.uint8).astype(bool)

    def improve_python(self, pi: np.ndarray, T: float, start: np.ndarray, rounds: int = 4) -> np.ndarray:
        """:meth:`improve` in Python (the fallback when the extension is not built)."""
        t = self.t
        S = start.tolist()
        inside = [int(start[succ].sum()) for succ in self.sources.succ_groups]
        load = set_load(t, self.sources, start)
        mem = float(t.mem[start].sum())
        cap, work, gm, price = t.capacity, self.work, self.mem, pi.tolist()
        cand = self._candidates(pi)
        for _ in range(rounds):
            moved = False
            for g in cand:                      # additions (best price first) and removals
                if S[g] and price[g] < 0 or not S[g] and price[g] > 0:
                    sign = -1.0 if S[g] else 1.0
                    dl = sign * work[g] + self._delta(g, S, inside)
                    dm = sign * gm[g]
                    if load + dl <= T and mem + dm <= cap:
                        self._toggle(g, S, inside)
                        load, mem, moved = load + dl, mem + dm, True
            outs = [h for h in cand[::-1] if S[h]]
            for g in cand:                      # swaps: a dearer group in for a cheaper one out
                if S[g] or price[g] <= 0:
                    continue
                for h in outs:
                    if not S[h] or price[h] >= price[g] or mem - gm[h] + gm[g] > cap:
                        continue
                    dl1 = -work[h] + self._delta(h, S, inside)
                    self._toggle(h, S, inside)
                    dl2 = work[g] + self._delta(g, S, inside)
                    if load + dl1 + dl2 <= T:
                        self._toggle(g, S, inside)
                        load, mem, moved = load + dl1 + dl2, mem - gm[h] + gm[g], True
                        break
                    self._toggle(h, S, inside)
            if not moved:
                break
        return np.array(S, dtype=bool)
