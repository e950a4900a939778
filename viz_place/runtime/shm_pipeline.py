"""A GPipe-style inference pipeline of CPU processes over shared-memory buffers allocated once.

Why not gloo: on this 2-core machine every gloo message costs milliseconds (its I/O
threads compete with the two stage processes for the cores, see
``../shared/NOTES-ecosystem.md`` and :mod:`viz_place.runtime.calibrate`), so the
transport here is plain shared memory: for every (producer, consumer) pair of stages a
ring of ``slots`` preallocated shared tensors per value and two semaphores (free slots,
filled slots). The producer waits for a free slot, copies its outputs in and posts; the
consumer waits, copies them out into its own preallocated tensors and frees the slot.
Model inputs of every microbatch are in shared memory before the clock starts; the last
stage copies the model's outputs into shared output tensors the parent checks.

The stages themselves are torch's: every process rebuilds the model from its
:class:`~viz_place.runtime.recipe.ModelRecipe`, calls ``pipeline()`` with the placement's
split points and runs ``pipe.get_stage_module(its stage)``; the dataflow between stages is
read from the pipe's own graph (:func:`~viz_place.runtime.stages.stage_plan`).
"""
from __future__ import annotations

import os
import time
import traceback
from typing import Any

from .procs import start_watchdog
from .stages import as_list, build_pipe, compiled_stage, stage_plan


def allocate(plan, values: dict, microbatch_inputs: list[tuple], slots: int):
    """Shared buffers: model inputs (per microbatch), links (a ring of ``slots``), outputs."""
    import torch
    m = len(microbatch_inputs)
    inputs = [torch.stack([mb[k] for mb in microbatch_inputs]).share_memory_() for k in range(plan.num_inputs)]
    links = {}
    for (j, s), idx in plan.links().items():
        links[(j, s)] = {k: torch.empty((slots, *values[(j, k)].shape), dtype=values[(j, k)].dtype).share_memory_()
                         for k in idx}
    outputs = []
    for r in plan.outputs:
        like = microbatch_inputs[0][r[1]] if r[0] == "in" else values[(r[1], r[2])]
        outputs.append(torch.empty((m, *like.shape), dtype=like.dtype).share_memory_())
    return inputs, links, outputs


def stage_main(stage: int, recipe, split, parent_pid: int, buffers, sems, go, barrier, queue,
               microbatches: int, slots: int, repeats: int) -> None:
    """One stage process (spawned): build, report ready, wait for go, run ``repeats`` + 1 streams."""
    start_watchdog(parent_pid)
    try:
        import torch
        torch.set_num_threads(1)
        module, example = recipe.build()
        pipe = build_pipe(module, example, split)
        plan = stage_plan(pipe)
        submod = compiled_stage(pipe.get_stage_module(stage))
        inputs, links, outputs = buffers
        my_args = plan.stage_args[stage]
        in_links = sorted({(r[1], stage) for r in my_args if r[0] == "st"})
        out_links = sorted(k for k in links if k[0] == stage)
        finals = [(i, r[2]) for i, r in enumerate(plan.outputs) if r[0] == "st" and r[1] == stage]
        recv = {(j, k): torch.empty_like(buf[0]) for (j, s) in in_links for k, buf in links[(j, s)].items()}
        del module, pipe
        queue.put(("ready", stage, os.getpid()))
        go.wait()
        for rep in range(repeats + 1):
            barrier.wait()
            stats = {"compute": 0.0, "recv_wait": 0.0, "recv_copy": 0.0, "send_wait": 0.0, "send_copy": 0.0}
            done = []
            now = time.perf_counter
            start = now()
            with torch.no_grad():
                for m in range(microbatches):
                    slot = m % slots
                    for key in in_links:
                        t0 = now()
                        sems[key][1].acquire()
                        t1 = now()
                        for (j, k), dst in recv.items():
                            if j == key[0]:
                                dst.copy_(links[key][k][slot])
                        sems[key][0].release()
                        stats["recv_wait"] += t1 - t0
                        stats["recv_copy"] += now() - t1
                    args = [inputs[r[1]][m] if r[0] == "in" else recv[(r[1], r[2])] for r in my_args]
                    t0 = now()
                    out = as_list(submod(*args))
                    stats["compute"] += now() - t0
                    for key in out_links:
                        t0 = now()
                        sems[key][0].acquire()
                        t1 = now()
                        for k, buf in links[key].items():
                            buf[slot].copy_(out[k])
                        sems[key][1].release()
                        stats["send_wait"] += t1 - t0
                        stats["send_copy"] += now() - t1
                    for i, k in finals:
                        outputs[i][m].copy_(out[k])
                    done.append(now())
            stats.update(start=start, done=done, warmup=rep == 0)
            queue.put(("result", stage, stats))
        queue.put(("exit", stage, None))
    except BaseException as err:  # reported to the parent, which names the stage
        msg = f"{type(err).__name__}: {' '.join(str(err).split())[:400]}"
        tb = traceback.extract_tb(err.__traceback__)
        if tb:
            msg += f" (at {os.path.basename(tb[-1].filename)}:{tb[-1].lineno})"
        queue.put(("error", stage, msg))
        raise SystemExit(1)


def make_sync(ctx, plan, slots: int):
    """(free slots, filled slots) semaphores per link."""
    return {key: (ctx.Semaphore(slots), ctx.Semaphore(0)) for key in plan.links()}
