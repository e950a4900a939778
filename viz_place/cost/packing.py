"""Packing lower bounds on the max-load: pigeonhole and bin-packing arguments over a device subset.

The total-work bound (:mod:`.bounds`) treats work as fluid. These bounds use
that a colocation group (a *unit*) is not divisible. Split the devices into a
set ``A`` (e.g. the accelerators) and the rest ``B`` (e.g. the slow CPUs), and
take any candidate value ``beta``. Suppose the optimum ``T*`` were below
``beta``. Then every unit whose fastest latency on ``B`` is at least ``beta``
must run on ``A`` (it would overload any ``B`` device), with at least its
fastest latency on ``A``; the ``B`` devices together run at most ``|B| beta``
of their own time. From there:

* **pigeonhole** — of the ``j k + 1`` largest forced units (``k = |A|``) some
  device holds ``j + 1``, so ``T*`` is at least the sum of the ``j + 1``
  smallest of them (the classic bound for scheduling on identical machines);
* **packing** — for a size ``a <= beta / 2``, a device holding a forced unit
  larger than ``beta - a`` has room for no forced unit of size ``>= a``; so the
  forced units with sizes in ``[a, beta - a]`` share the other devices and
  ``T*`` is at least their total over ``k`` minus the number of larger ones;
* **volume** — the work left for ``A`` (all units at their fastest on ``A``,
  minus the most the ``B`` devices can absorb: a fractional knapsack of
  capacity ``|B| beta``) over ``k``;
* **exact packing** — the largest forced units do not fit in ``k`` bins of
  capacity ``beta`` (a small exhaustive search, abandoned — proving nothing —
  after a budget of search nodes): then ``T* >= beta``.

Each gives a value ``X``, so ``T* >= min(beta, X)``: either ``T* >= beta``, or
the argument holds. The bound is the best ``min(beta, X)`` over a grid of
candidates. Communication only adds to a load and memory, pins and colour
classes only restrict placements, so the bound holds for every valid placement
(contiguous or not, with or without overlap).

>>> import numpy as np
>>> glat = np.array([[3.6] * 6 + [36.0]] * 13)   # 13 equal units; 6 accelerators, 1 CPU 10x slower
>>> value, text = packing_lower_bound(glat, np.array([True] * 6 + [False]))
>>> round(value, 6), text.split(":")[0]
(10.8, 'pigeonhole')
"""
from __future__ import annotations

import math

import numpy as np

#: Relative steps of the grid of candidate values ``beta`` above the fluid bound.
GRID_STEPS = 300
GRID_SPAN = 1.0


def packing_lower_bound(glat: np.ndarray, in_a: np.ndarray, base: float = 0.0, *,
                        exact_nodes: int = 2000) -> tuple[float, str]:
    """``(value, text)``: the best packing bound for units with latencies ``glat[unit, device]``
    (``inf`` = cannot run there or does not fit) when ``in_a`` marks the devices of ``A``.
    ``base``: a known lower bound (the grid of candidates starts there); ``exact_nodes``: the
    search budget of each exact packing check (0 = skip it). ``(0.0, "")`` when nothing is
    proven (no device in ``A``)."""
    in_a = np.asarray(in_a, dtype=bool)
    k = int(in_a.sum())
    if k == 0 or glat.shape[0] == 0:
        return 0.0, ""
    lat_a = glat[:, in_a].min(axis=1)
    lat_b = glat[:, ~in_a].min(axis=1) if (~in_a).any() else np.full(glat.shape[0], math.inf)
    nb = int((~in_a).sum())
    ok = np.isfinite(lat_a)
    if not ok.all():          # units that only run on B: the largest-unit bound covers them
        lat_a, lat_b = lat_a[ok], lat_b[ok]
    if lat_a.size == 0:
        return 0.0, ""
    grid = candidate_grid(lat_a, lat_b, k, nb, base)
    v = np.minimum(grid, _bounds_below(lat_a, lat_b, k, nb, grid))
    at = int(np.argmax(v))     # the first candidate reaching the best value, as a scan upwards keeps it
    best, best_text = 0.0, ""
    if v[at] > 0.0:
        x, best_text = _bound_below(lat_a, lat_b, k, nb, float(grid[at]))     # the one argument's words
        best = float(min(float(grid[at]), x))
    exact = _exact_packing_bound(lat_a, lat_b, k, best, exact_nodes) if exact_nodes > 0 else 0.0
    if exact > best:
        best, best_text = exact, (f"exact packing: the largest units that cannot run elsewhere below {exact:.6g} "
                                  f"do not fit on {k} devices of that capacity")
    return best, best_text


def candidate_grid(lat_a: np.ndarray, lat_b: np.ndarray, k: int, nb: int, base: float = 0.0) -> np.ndarray:
    """The candidates ``beta`` of :func:`packing_lower_bound`, ascending: :data:`GRID_STEPS` steps from the
    fluid bound (or ``base``) up to ``1 + GRID_SPAN`` times it, and every ``lat_b`` in that range."""
    fluid = max(base, float(lat_a.sum()) / (k + nb), 1e-12)     # where the grid starts (any start is valid)
    betas = set(fluid * (1 + GRID_SPAN * i / GRID_STEPS) for i in range(GRID_STEPS + 1))
    betas.update(float(b) for b in lat_b if math.isfinite(b) and fluid <= b <= fluid * (1 + GRID_SPAN))
    return np.array(sorted(betas))


#: The exact packing check looks at this many of the largest forced units.
EXACT_UNITS = 28


def _exact_packing_bound(lat_a: np.ndarray, lat_b: np.ndarray, k: int, start: float, nodes: int) -> float:
    """The largest ``beta`` (found by bisection above ``start``) at which the ``EXACT_UNITS`` largest
    units with ``lat_b >= beta`` provably do not fit in ``k`` bins of capacity ``beta``: then
    ``T* >= beta`` (below it they would have to fit). ``start`` when nothing more is proven."""
    if start <= 0 or k <= 0:
        return start

    def infeasible(beta: float) -> bool:
        units = np.sort(lat_a[lat_b >= beta])[::-1][:EXACT_UNITS]
        return _fits(units.tolist(), k, beta, nodes) is False

    lo, hi = start, start * 1.25
    if not infeasible(lo * (1 + 1e-9)):
        return start
    lo = lo * (1 + 1e-9)
    if infeasible(hi):
        return hi
    for _ in range(18):
        mid = 0.5 * (lo + hi)
        if infeasible(mid):
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-6 * hi:
            break
    return lo


def _fits(units: list[float], k: int, cap: float, budget: int = 20000) -> bool | None:
    """Do ``units`` (descending) fit in ``k`` bins of capacity ``cap``? ``None``: gave up.

    >>> _fits([6.0, 6.0, 6.0], 2, 11.0), _fits([6.0, 5.0, 5.0], 2, 11.0)
    (False, True)
    """
    if not units:
        return True
    if units[0] > cap or sum(units) > k * cap * (1 + 1e-12):
        return False
    loads = [0.0] * k
    rest = [0.0] * (len(units) + 1)
    for i in range(len(units) - 1, -1, -1):
        rest[i] = rest[i + 1] + units[i]
    nodes = [0]

    def place(i: int) -> bool | None:
        if i == len(units):
            return True
        nodes[0] += 1
        if nodes[0] > budget:
            return None
        if sum(cap - x for x in loads if cap - x >= units[-1]) < rest[i] * (1 - 1e-12):
            return False      # the room that can still take a unit is too small for what is left
        tried = set()
        gave_up = False
        for b in range(k):
            x = loads[b]
            if x + units[i] > cap * (1 + 1e-12) or x in tried:
                continue
            tried.add(x)
            loads[b] = x + units[i]
            r = place(i + 1)
            loads[b] = x
            if r:
                return True
            gave_up = gave_up or r is None
        return None if gave_up else False

    return place(0)


def _bound_below(lat_a: np.ndarray, lat_b: np.ndarray, k: int, nb: int, beta: float) -> tuple[float, str]:
    """The best value ``X`` the three arguments give if ``T* < beta`` (see the module docstring)."""
    asc = np.sort(lat_a[lat_b >= beta])          # the forced units, ascending
    m = asc.size
    out, text = 0.0, ""
    if m:
        pre = np.concatenate(([0.0], np.cumsum(asc)))
        # pigeonhole: the j + 1 smallest of the j k + 1 largest forced units (positions m-jk-1 .. m-jk+j-1)
        j = np.arange(1, (m - 1) // k + 1)
        if j.size:
            lo = m - (j * k + 1)
            vals = pre[lo + j + 1] - pre[lo]
            i = int(np.argmax(vals))
            if vals[i] > out:
                jj = int(j[i])
                out, text = float(vals[i]), (f"pigeonhole: {jj * k + 1} units that cannot run elsewhere below "
                                             f"{beta:.6g} share {k} devices, so one holds {jj + 1} of them")
        # packing: units in [a, beta - a] avoid the devices of the units larger than beta - a
        a = np.unique(asc[asc <= beta / 2])
        if a.size:
            big = m - np.searchsorted(asc, beta - a, side="right")
            hi = np.searchsorted(asc, beta - a, side="right")
            lo = np.searchsorted(asc, a, side="left")
            mid = pre[hi] - pre[lo]
            room = k - big
            vals = np.where((room > 0) & (hi > lo), mid / np.maximum(room, 1), 0.0)
            i = int(np.argmax(vals))
            if vals[i] > out:
                out, text = float(vals[i]), (f"packing: {int(hi[i] - lo[i])} units of {a[i]:.6g} to "
                                             f"{beta - a[i]:.6g} cannot join the {int(big[i])} larger ones, "
                                             f"leaving them {int(room[i])} devices")
    # volume: the work A must do after B absorbs what it can in |B| beta of its own time
    free = lat_b < beta
    absorb = 0.0
    if nb and free.any():
        va, vb = lat_a[free], lat_b[free]
        order = np.argsort(-(va / np.maximum(vb, 1e-300)), kind="stable")
        va, vb = va[order], vb[order]
        cum_b = np.cumsum(vb)
        room = nb * beta
        full = int(np.searchsorted(cum_b, room, side="right"))
        absorb = float(va[:full].sum())
        if full < va.size:
            left = room - (cum_b[full - 1] if full else 0.0)
            absorb += va[full] * min(1.0, left / vb[full]) if vb[full] > 0 else va[full]
    v = (float(lat_a.sum()) - absorb) / k
    if v > out:
        out, text = v, f"volume: the work left after the other devices absorb what they can, over {k} devices"
    return out, text


def _bounds_below(lat_a: np.ndarray, lat_b: np.ndarray, k: int, nb: int, betas: np.ndarray) -> np.ndarray:
    """:func:`_bound_below`'s value ``X`` at every candidate of ``betas`` (ascending), the same floats
    (the same operations on the same numbers, element by element), in a few array operations per set of
    forced units instead of a dozen per candidate: the forced units (``lat_b >= beta``) change only where
    ``beta`` passes a ``lat_b``, so the candidates are taken in runs that share them.

    >>> la, lb = np.array([3.0, 3.0, 2.0, 1.0]), np.array([9.0, 4.0, 9.0, 2.0])
    >>> betas = np.array([2.5, 3.5, 4.5, 6.0])
    >>> bool(all(_bounds_below(la, lb, 2, 1, betas) == [_bound_below(la, lb, 2, 1, b)[0] for b in betas]))
    True
    """
    out = np.zeros(len(betas))
    if not len(betas):
        return out
    total = float(lat_a.sum())
    ranked = np.sort(lat_b)
    forced_count = len(lat_b) - np.searchsorted(ranked, betas, side="left")   # how many lat_b >= beta
    cuts = np.flatnonzero(np.diff(forced_count)) + 1
    for lo_run, hi_run in zip(np.concatenate(([0], cuts)), np.concatenate((cuts, [len(betas)]))):
        run = betas[lo_run:hi_run]
        forced = lat_b >= run[0]
        asc = np.sort(lat_a[forced])
        m = asc.size
        x = np.zeros(len(run))
        if m:
            pre = np.concatenate(([0.0], np.cumsum(asc)))
            j = np.arange(1, (m - 1) // k + 1)
            if j.size:        # pigeonhole: the same for every candidate of the run
                lo = m - (j * k + 1)
                x = np.maximum(x, float((pre[lo + j + 1] - pre[lo]).max()))
            a = np.unique(asc)
            ok = a[None, :] <= (run / 2)[:, None]                  # a <= beta / 2
            if ok.any():      # packing, for every (candidate, a)
                rest = run[:, None] - a[None, :]
                hi = np.searchsorted(asc, rest.ravel(), side="right").reshape(rest.shape)
                lo = np.searchsorted(asc, a, side="left")[None, :]
                room = k - (m - hi)
                vals = np.where(ok & (room > 0) & (hi > lo), (pre[hi] - pre[lo]) / np.maximum(room, 1), 0.0)
                x = np.maximum(x, vals.max(axis=1))
        free = ~forced
        if nb and free.any():     # volume: B absorbs a prefix of the units by ratio, then a share of one
            va, vb = lat_a[free], lat_b[free]
            order = np.argsort(-(va / np.maximum(vb, 1e-300)), kind="stable")
            va, vb = va[order], vb[order]
            cum_b = np.cumsum(vb)
            room = nb * run
            full = np.searchsorted(cum_b, room, side="right")
            sums = {f: float(va[:f].sum()) for f in set(full.tolist())}   # summed as _bound_below sums them
            absorb = np.array([sums[f] for f in full.tolist()])
            part = full < va.size
            if part.any():
                f = full[part]
                left = room[part] - np.where(f > 0, cum_b[np.maximum(f - 1, 0)], 0.0)
                share = np.where(vb[f] > 0, va[f] * np.minimum(1.0, left / np.where(vb[f] > 0, vb[f], 1.0)), va[f])
                absorb[part] = absorb[part] + share
        else:
            absorb = np.zeros(len(run))
        x = np.maximum(x, (total - absorb) / k)
        out[lo_run:hi_run] = x
    return out
