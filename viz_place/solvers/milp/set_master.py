"""The restricted master LP of the set-partitioning bound (:mod:`.set_bound`): which columns (device sets)
cover the groups, at most ``k_t`` of each type; its duals are the prices column generation prices with.

>>> import numpy as np
>>> from viz_place.solvers.milp.set_pricing import DeviceType
>>> t = DeviceType(devices=(0, 1), groups=np.arange(3), work=np.ones(3), mem=np.ones(3), capacity=9.0, pay=0.0)
>>> master = Master(3, [t])
>>> master.add(0, np.array([True, True, False])), master.add(0, np.array([True, True, False]))
(True, False)
>>> lp, pi, m, values = master.solve()
>>> round(lp, 6)          # group 2 is in no column: uncovered
1.0
>>> [s.astype(int).tolist() for s in master.dearest(0, np.array([0.0, 0.0, 1.0]), 1)]
[[1, 1, 0]]
"""
from __future__ import annotations

import numpy as np

from .set_pricing import DeviceType


class MasterFailed(RuntimeError):
    """The restricted master LP did not solve to optimality (a back-end failure: no prices, no bound)."""


class Master:
    """The restricted phase-1 master LP: ``sum over columns holding g of x + s_g = 1`` per group,
    ``sum of x of type t <= k_t``, minimise ``sum(s)``."""

    def __init__(self, G: int, types: list[DeviceType], threads: int = 1, fixed: np.ndarray | None = None) -> None:
        import highspy
        from .backends import _new_highs
        self.G, self.threads = G, int(threads)
        self.h = h = _new_highs()
        h.setOptionValue("output_flag", False)
        if threads:
            h.setOptionValue("threads", self.threads)
        h.setOptionValue("random_seed", 0)
        inf = highspy.kHighsInf
        self.fixed = np.zeros(G, dtype=bool) if fixed is None else np.asarray(fixed, dtype=bool)
        for g in range(G):      # a group placed already (a dive's fixed column) needs no cover
            need = 0.0 if self.fixed[g] else 1.0
            h.addRow(need, need, 0, np.array([], dtype=np.int32), np.array([]))
        for t in types:
            h.addRow(-inf, float(t.count), 0, np.array([], dtype=np.int32), np.array([]))
        for g in range(G):
            h.addCol(1.0, 0.0, inf, 1, np.array([g], dtype=np.int32), np.array([1.0]))
        self.columns: list[tuple[int, np.ndarray]] = []
        self._seen: set[tuple[int, bytes]] = set()
        self._of_type: dict[int, list[np.ndarray]] = {}      # each type's columns, and stacked (for dearest)
        self._stacked: dict[int, np.ndarray] = {}

    def add(self, type_index: int, in_set: np.ndarray) -> bool:
        """Add a column (a set for a device of that type); False if it is already there or empty."""
        key = (type_index, np.packbits(in_set).tobytes())
        if key in self._seen or not in_set.any():
            return False
        import highspy
        self._seen.add(key)
        rows = np.concatenate([np.flatnonzero(in_set), [self.G + type_index]]).astype(np.int32)
        self.h.addCol(0.0, 0.0, highspy.kHighsInf, len(rows), rows, np.ones(len(rows)))
        self.columns.append((type_index, in_set.copy()))
        self._of_type.setdefault(type_index, []).append(self.columns[-1][1])
        return True

    def dearest(self, type_index: int, pi: np.ndarray, n: int) -> list[np.ndarray]:
        """The ``n`` columns of a type with the highest ``pi(S)``, dearest first."""
        sets = self._of_type.get(type_index, [])
        if not sets:
            return []
        if len(self._stacked.get(type_index, ())) != len(sets):
            self._stacked[type_index] = np.array(sets)
        value = self._stacked[type_index] @ pi
        top = np.argsort(-value, kind="stable")[:n]
        return [sets[i] for i in top.tolist()]

    def solve(self) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
        """Objective, group prices ``pi``, type prices ``m >= 0`` and the column values."""
        import highspy
        from .backends import _match_scheduler
        h = self.h
        _match_scheduler(self.threads)
        h.run()
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            raise MasterFailed(f"its master LP ended {h.modelStatusToString(h.getModelStatus())!r}")
        sol = h.getSolution()
        dual = np.asarray(sol.row_dual)
        pi = np.minimum(dual[:self.G], 1.0)     # the prices of a certificate are at most 1 (the s columns)
        pi[self.fixed] = 0.0                    # rows that need no cover (no column holds their groups)
        m = np.maximum(0.0, -dual[self.G:])
        return float(h.getInfo().objective_function_value), pi, m, np.asarray(sol.col_value[self.G:])
