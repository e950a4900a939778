"""Options of the throughput integer programs (``ilp``, ``ilp-noncontig``) and the set each model
optimises over.

>>> IlpNoncontigOptions().contiguous, model_set(IlpNoncontigOptions())
(False, 'any')
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...model import OBJECTIVES as ALL_OBJECTIVES
from ...model.objective import OBJECTIVE_ALIASES
from .backends import MilpOptions

OBJECTIVES = tuple(o for o in ALL_OBJECTIVES if o != "latency")

#: The sets of placements the models optimise over (``bound_set`` of their proven bounds).
SET_PIPELINE, SET_CONVEX, SET_ANY = "pipeline", "convex", "any"


#: ``set_bound`` left at none: in a process beside the integer program for time limits of at least
#: SET_BOUND_BESIDE_MIN_S seconds (with a second core); else after it, in SET_BOUND_AUTO_SHARE of time limits
#: of at least SET_BOUND_AUTO_MIN_S seconds (below, it rarely gets far enough to settle a gap, and its time
#: would come out of the integer program's; see "Why the set bound runs beside" in docs/proofs.md).
SET_BOUND_BESIDE_MIN_S, SET_BOUND_AUTO_SHARE, SET_BOUND_AUTO_MIN_S = 60.0, 0.55, 300.0
#: ``lns`` left at none: its share, and its share when the set-partitioning bound runs.
LNS_AUTO_SHARE, LNS_AUTO_SHARE_WITH_SET_BOUND = 0.3, 0.15


@dataclass(frozen=True)
class IlpOptions(MilpOptions):
    """Options of ``ilp`` (contiguous by default) and ``ilp-noncontig``.

    >>> IlpOptions(time_limit=5, gap=0.01).contiguous
    True
    """

    contiguous: bool = field(default=True, metadata={
        "help": "contiguous splits: pipeline splits (the DP's set), or per-device convex sets with device_cycles"})
    device_cycles: bool = field(default=False, metadata={
        "help": "with contiguous: only require each device's forward set to be convex (the authors' IP), which "
                "lets two devices feed each other in a cycle; default: pipeline splits, as the DP"})
    objective: str = field(default="max_load", metadata={
        "help": "max_load, or max_forward_plus_max_backward (training: max forward load + max backward load)",
        "choices": OBJECTIVES, "aliases": OBJECTIVE_ALIASES})
    bound_phase: float = field(default=0.0, metadata={
        "help": "share of the time limit for a first integer program in which only the largest groups are "
                "integral (a relaxation: its bound holds for every placement and lifts the main model's); "
                "0 = off (the default: on the published graphs it proved nothing beyond the packing floor)",
        "min": 0.0, "max": 0.8})
    overlap: bool = field(default=False, metadata={
        "help": "communication overlaps compute: a device's load is max(compute, communication) (the paper's "
                "Appendix G; the value is then evaluate(..., overlap=True))"})
    polish: float = field(default=0.1, metadata={
        "help": "share of the time limit for polishing placements with moves, swaps and kicks (the warm start, "
                "then each new incumbent of HiGHS, which continues from the polished one); ilp-noncontig, "
                "objective max_load without overlap; 0 = off", "min": 0.0, "max": 0.5})
    lns: float | None = field(default=None, metadata={
        "help": "share of the time limit kept for re-solving the groups of two devices at a time (more after a "
                "round without gain) exactly, the others fixed (large-neighbourhood search), after the integer "
                "program when it has not reached the gap (with the set-partitioning bound, up to three quarters of "
                "it first, on pairs then three devices, before the integer program, and on past that while it "
                "keeps finding better placements); ilp-noncontig, objective max_load without overlap; 0 = off; "
                "none (the default) = 0.3, or 0.15 when the set-partitioning bound runs",
        "min": 0.0, "max": 0.8})
    lns_dive: float = field(default=0.0, metadata={
        "help": "share of the time limit for re-solving device subsets (as lns) from a placement the "
                "set-partitioning dives find when it beats the integer program's incumbent, at once, the "
                "integer program waiting; per placement; 0 = off (the default: one 300 s run on residual_75_s2_training "
                "with 0.2 ended at 1.73 %, no better than without)", "min": 0.0, "max": 0.8})
    set_bound: float | None = field(default=None, metadata={
        "help": "the set-partitioning bound (column generation with exact pricing: each device's set with its "
                "exact communication), when communication matters (see set_bound_comm); ilp-noncontig, "
                "objective max_load without overlap. With set_bound_beside and a second core it runs in a "
                "process of its own for the whole run; else this share of the time limit is kept for it, "
                "after the integer program. 0 = off; none (the default) = beside for time limits of 60 s or "
                "more, else 0.55 of time limits of 300 s or more (when the compiled pricing is built)",
        "min": 0.0, "max": 0.8})
    set_bound_beside: bool = field(default=True, metadata={
        "help": "run the set-partitioning bound in a process of its own beside the integer program (on a "
                "second core), rather than after it in its share of the time"})
    set_bound_comm: float = field(default=0.01, metadata={
        "help": "run the set-partitioning bound only when some device of the warm start pays at least this "
                "share of its max-load in communication (below it, a communication bound cannot close much)",
        "min": 0.0, "max": 1.0})


@dataclass(frozen=True)
class IlpNoncontigOptions(IlpOptions):
    """Options of ``ilp-noncontig``: as :class:`IlpOptions`, ``contiguous`` off."""

    contiguous: bool = field(default=False, metadata={
        "help": "contiguous splits: pipeline splits (the DP's set), or per-device convex sets with device_cycles"})


def model_set(opts: IlpOptions) -> str:
    """The set of placements the model optimises over (its ``bound_set``).

    >>> model_set(IlpOptions()), model_set(IlpOptions(device_cycles=True)), model_set(IlpNoncontigOptions())
    ('pipeline', 'convex', 'any')
    """
    if not opts.contiguous:
        return SET_ANY
    return SET_CONVEX if opts.device_cycles else SET_PIPELINE
