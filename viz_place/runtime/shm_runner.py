"""The parent side of the shared-memory pipeline: buffers, processes, the timed streams."""
from __future__ import annotations

import os
import time

from .procs import StageGroup
from .shm_pipeline import allocate, make_sync, stage_main
from ..io.torch_models import output_tensors


def single_process_time(module, mbs, targets=None) -> float:
    """ms per sample of the unsplit model in this process (one thread), median of 3 passes;
    with ``targets``, of a training step (forward, loss, backward per microbatch)."""
    import statistics
    import torch

    def once():
        if targets is None:
            with torch.no_grad():
                for mb in mbs:
                    module(*mb)
            return
        from .gloo_pipeline import pipeline_loss
        for mb, t in zip(mbs, targets):
            pipeline_loss(module(*mb), t).backward()
        module.zero_grad(set_to_none=True)

    once()
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        once()
        times.append((time.perf_counter() - t0) / len(mbs) * 1e3)
    return statistics.median(times)


def run_shm(recipe, split, plan, values, mbs, module, *, slots, repeats, timeout, cancel, on_start, say):
    """(outputs per microbatch, per-stage stats per timed repeat, single-process ms per sample)."""
    import torch.multiprocessing as tmp
    ctx = tmp.get_context("spawn")
    n = split.num_stages
    buffers = allocate(plan, values, mbs, slots)
    sems = make_sync(ctx, plan, slots)
    go, barrier, queue = ctx.Event(), ctx.Barrier(n), ctx.Queue()
    args = [(s, recipe, split, os.getpid(), buffers, sems, go, barrier, queue, len(mbs), slots, repeats)
            for s in range(n)]
    with StageGroup(ctx, stage_main, args, split.devices, queue=queue) as group:
        if on_start:
            on_start(group.pids)
        say(f"started {n} stage processes (shared-memory transport); waiting for them to build their stages")
        group.collect("ready", range(n), timeout=timeout, cancel=cancel)
        single = single_process_time(module, mbs)  # the stages wait on `go`: the cores are free
        go.set()
        say(f"running {repeats} + 1 streams of {len(mbs)} microbatches")
        stats = group.timed_streams(repeats, timeout=timeout, cancel=cancel)
        group.collect("exit", range(n), timeout=30, cancel=cancel)
    outputs = buffers[2]
    got = [[out[m].clone() for out in outputs] for m in range(len(mbs))]
    return got, stats, single, None
