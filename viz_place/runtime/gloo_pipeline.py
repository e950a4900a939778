"""torch's own pipeline runtime: ``PipelineStage`` + ``ScheduleGPipe`` (inference) or
``Schedule1F1B`` (training steps) over gloo on loopback.

One spawned process per stage (one torch thread each) joins a gloo process group on a free
127.0.0.1 port, rebuilds the model, splits it with ``pipeline()`` and runs
``pipe.build_stage(rank, cpu)`` under the schedule. Compute is timed around the stage's
forward (and, in training, backward) chunks; gloo's sends and receives cannot be told apart
from waiting, so the rest of a step is reported as wait. The last stage copies the merged
output into shared tensors the parent checks; in training every stage also sends its
parameters' gradients. Kept beside the shared-memory transport to measure which serves.
"""
from __future__ import annotations

import os
import time
import traceback

from .calibrate import free_port
from .procs import StageGroup, start_watchdog
from .shm_pipeline import allocate
from ..io.torch_models import output_tensors
from .stages import as_list, build_pipe, compiled_stage, stage_plan


def contiguous_transfers(stage_module) -> list[str]:
    """Make every activation a stage sends and receives over gloo contiguous (same shape, dtype, values).

    gloo sends and receives contiguous tensors only (``input tensor has to be contiguous``:
    ViT-B/16 split at a layer boundary passes a strided view), while ``PipelineStage`` sends a
    stage's outputs as they are and allocates each receive buffer with the strides torch.export
    traced (``torch.empty_strided`` from the placeholder's ``meta["val"]``). So: a forward hook
    returns the outputs ``.contiguous()`` (a copy only where one is strided), and every strided
    placeholder gets a contiguous ``meta["val"]``. Call before ``pipe.build_stage``. Returns the
    placeholders changed.

    >>> import torch
    >>> gm = torch.fx.symbolic_trace(torch.nn.Identity())
    >>> x = next(n for n in gm.graph.nodes if n.op == "placeholder")
    >>> x.meta["val"] = torch.empty(4, 3, device="meta").t()
    >>> contiguous_transfers(gm), x.meta["val"].is_contiguous(), tuple(x.meta["val"].shape)
    (['input_1'], True, (3, 4))
    >>> gm(torch.ones(4, 3).t()).is_contiguous()
    True
    """
    import torch
    changed = []
    for node in stage_module.graph.nodes:
        val = node.meta.get("val") if node.op == "placeholder" else None
        if isinstance(val, torch.Tensor) and not val.is_contiguous():
            node.meta["val"] = torch.empty(tuple(val.shape), dtype=val.dtype, device="meta")
            changed.append(node.name)
    stage_module.register_forward_hook(_contiguous_outputs)
    return changed


def _contiguous_outputs(module, args, out):
    import torch
    if isinstance(out, torch.Tensor):
        return out.contiguous()
    if isinstance(out, (tuple, list)):
        return type(out)(o.contiguous() if isinstance(o, torch.Tensor) else o for o in out)
    return out


def pipeline_loss(output, target):
    """The training runs' loss per microbatch: mean squared error of the model's first output
    tensor (logits, features) against a fixed random target. Picklable, so every stage has it."""
    first = output_tensors(output)[0]
    return ((first.float() - target) ** 2).mean()


def _timed_chunks(stage, marks: list) -> None:
    """Record ("for" | "bac", start, end) of every forward and backward chunk the schedule runs."""
    for name in ("forward_one_chunk", "backward_one_chunk"):
        inner = getattr(stage, name)

        def timed(*args, inner_=inner, kind_=name[:3], **kwargs):
            t0 = time.perf_counter()
            try:
                return inner_(*args, **kwargs)
            finally:
                marks.append((kind_, t0, time.perf_counter()))
        setattr(stage, name, timed)


def gloo_stage_main(rank, world, port, recipe, split, parent_pid, batch, outputs, go, queue, microbatches, repeats,
                    target=None):
    """One gloo stage: ``ScheduleGPipe`` forward only, or with ``target`` a 1F1B training step
    (``Schedule1F1B``, loss :func:`pipeline_loss`, summed over microbatches) whose gradients
    are sent to the parent after the last step."""
    start_watchdog(parent_pid)
    training = target is not None
    try:
        import torch
        import torch.distributed as dist
        from torch.distributed.pipelining import Schedule1F1B, ScheduleGPipe
        torch.set_num_threads(1)
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
        try:
            module, example = recipe.build()
            pipe = build_pipe(module, example, split)
            contiguous_transfers(pipe.get_stage_module(rank))
            stage = pipe.build_stage(rank, torch.device("cpu"))
            compiled_stage(stage.submod)
            spans: list[tuple[str, float, float]] = []
            if training:
                schedule = Schedule1F1B(stage, n_microbatches=microbatches, loss_fn=pipeline_loss, scale_grads=False)
                _timed_chunks(stage, spans)
            else:
                schedule = ScheduleGPipe(stage, n_microbatches=microbatches)
                marks: list[float] = []
                stage.submod.register_forward_pre_hook(lambda *a: marks.append(time.perf_counter()))
                stage.submod.register_forward_hook(lambda *a: spans.append(("for", marks.pop(), time.perf_counter())))
            last = rank == world - 1
            queue.put(("ready", rank, os.getpid()))
            go.wait()
            for rep in range(repeats + 1):
                spans.clear()
                dist.barrier()
                start = time.perf_counter()
                if training:
                    stage.submod.zero_grad(set_to_none=True)
                    kw = {"target": target, "losses": []} if last else {}
                    out = schedule.step(*batch, **kw) if rank == 0 else schedule.step(**kw)
                else:
                    with torch.no_grad():
                        out = schedule.step(*batch) if rank == 0 else schedule.step()
                end = time.perf_counter()
                compute = sum(b - a for _, a, b in spans)
                # a microbatch is done at a stage when its last chunk there ends (the backward in training)
                done = [b for kind, _, b in spans if kind == ("bac" if training else "for")]
                queue.put(("result", rank, {"compute": compute, "recv_wait": 0.0, "recv_copy": 0.0,
                                            "send_wait": end - start - compute, "send_copy": 0.0,
                                            "start": start, "done": done, "warmup": rep == 0}))
            if last:
                with torch.no_grad():
                    for buf, val in zip(outputs, as_list(out)):
                        buf.copy_(val.reshape(buf.shape))
            if training:
                # by value (numpy): a tensor would travel as a file descriptor that dies with this process
                queue.put(("grads", rank, {name: p.grad.detach().numpy().copy() for name, p in
                                           stage.submod.named_parameters() if p.grad is not None}))
            dist.barrier()
        finally:
            dist.destroy_process_group()
        queue.put(("exit", rank, None))
    except BaseException as err:
        msg = f"{type(err).__name__}: {' '.join(str(err).split())[:400]}"
        tb = traceback.extract_tb(err.__traceback__)
        if tb:
            msg += f" (at {os.path.basename(tb[-1].filename)}:{tb[-1].lineno})"
        queue.put(("error", rank, msg))
        raise SystemExit(1)


def run_gloo(recipe, split, plan, values, mbs, module, *, repeats, timeout, cancel, on_start, say, targets=None):
    """(outputs per microbatch, per-stage stats, single-process ms per sample, stage gradients or None).
    With ``targets`` (one per microbatch) every stream is a 1F1B training step."""
    import torch
    import torch.multiprocessing as tmp
    from .shm_runner import single_process_time
    ctx = tmp.get_context("spawn")
    n = split.num_stages
    _, _, outputs = allocate(plan, values, mbs, 1)
    go, queue = ctx.Event(), ctx.Queue()
    port = free_port()
    batch = tuple(torch.cat(list(xs)).share_memory_() for xs in zip(*mbs))
    target = torch.cat(list(targets)).share_memory_() if targets is not None else None
    args = [(r, n, port, recipe, split, os.getpid(), batch, outputs, go, queue, len(mbs), repeats, target)
            for r in range(n)]
    grads = None
    with StageGroup(ctx, gloo_stage_main, args, split.devices, queue=queue) as group:
        if on_start:
            on_start(group.pids)
        say(f"started {n} stage processes (gloo on 127.0.0.1:{port}); waiting for them to build their stages")
        group.collect("ready", range(n), timeout=timeout, cancel=cancel)
        single = single_process_time(module, mbs, targets=targets)
        go.set()
        say(f"running {repeats} + 1 {'training steps' if targets is not None else 'streams'} of {len(mbs)} microbatches")
        stats = group.timed_streams(repeats, timeout=timeout, cancel=cancel)
        if targets is not None:
            grads = group.collect("grads", range(n), timeout=timeout, cancel=cancel)
        group.collect("exit", range(n), timeout=30, cancel=cancel)
    got = [[out[m].clone() for out in outputs] for m in range(len(mbs))]
    return got, stats, single, grads
