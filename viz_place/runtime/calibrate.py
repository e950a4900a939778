"""Link calibration: a ping-pong of the pipeline's own transport, run on its own.

Two spawned processes bounce a message of ``B`` bytes back and forth through the very
mechanism the pipeline uses (``shm``: a preallocated shared slot, copy in, post, wait, copy
out; ``gloo``: ``torch.distributed`` send/recv over loopback). A round trip holds four
one-sided costs (each side sends once and receives once), so the cost one device pays per
message is ``round trip / 4``; a least-squares line over the sizes gives
``latency_ms + bytes / bandwidth``. The calibration is run before, and independently of,
any pipeline run it is compared with: a prediction is never fitted to the run it predicts.

:class:`LinkCalibration` is saved as JSON (``viz_place.link/1``) and read back with
:func:`read_link`.

>>> link = LinkCalibration("shm", latency_ms=0.02, bandwidth_bytes_per_ms=2e6)
>>> round(link.cost_ms(4e6), 3)
2.02
"""
from __future__ import annotations

import json
import os
import socket
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..errors import InputFormatError
from ..io.atomic import atomic_write_json
from .procs import StageGroup, start_watchdog

FORMAT = "viz_place.link/1"
DEFAULT_SIZES = (4_096, 65_536, 262_144, 1_048_576, 4_194_304)
TRANSPORTS = ("shm", "gloo")


@dataclass(frozen=True)
class LinkCalibration:
    """Per-message cost one side pays: ``latency_ms + bytes / bandwidth_bytes_per_ms``."""

    transport: str
    latency_ms: float
    bandwidth_bytes_per_ms: float
    points: tuple = field(default=())  # (bytes, round-trip ms) measured
    measured_at: str = ""

    def cost_ms(self, nbytes: float) -> float:
        return self.latency_ms + float(nbytes) / self.bandwidth_bytes_per_ms

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "transport": self.transport, "latency_ms": self.latency_ms,
                "bandwidth_bytes_per_ms": self.bandwidth_bytes_per_ms,
                "bandwidth_GB_per_s": self.bandwidth_bytes_per_ms * 1e3 / 1e9,
                "points": [{"bytes": b, "round_trip_ms": t} for b, t in self.points],
                "measured_at": self.measured_at, "model": "per side and message: latency_ms + bytes / bandwidth"}

    @classmethod
    def from_dict(cls, data: Any, *, where: str = "link") -> "LinkCalibration":
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise InputFormatError(f"{where}: not a link calibration (expected format {FORMAT!r}; "
                                   "write one with viz-place calibrate-link)")
        try:
            lat, bw = float(data["latency_ms"]), float(data["bandwidth_bytes_per_ms"])
        except (KeyError, TypeError, ValueError):
            raise InputFormatError(f"{where}: fields 'latency_ms' and 'bandwidth_bytes_per_ms' must be numbers") from None
        if data.get("transport") not in TRANSPORTS:
            raise InputFormatError(f"{where}: field 'transport' must be one of {TRANSPORTS}")
        if not (lat >= 0 and bw > 0):
            raise InputFormatError(f"{where}: latency_ms must be >= 0 and bandwidth_bytes_per_ms > 0")
        pts = tuple((p["bytes"], p["round_trip_ms"]) for p in data.get("points", []))
        return cls(data["transport"], lat, bw, pts, str(data.get("measured_at", "")))


def read_link(path: str) -> LinkCalibration:
    if not os.path.exists(path):
        raise InputFormatError(f"{path}: file not found")
    with open(path) as fh:
        try:
            data = json.load(fh)
        except json.JSONDecodeError as err:
            raise InputFormatError(f"{path}: not JSON: {err}") from None
    return LinkCalibration.from_dict(data, where=path)


def write_link(path: str, link: LinkCalibration) -> None:
    atomic_write_json(path, link.to_dict())


def fit(points: Sequence[tuple[float, float]], transport: str) -> LinkCalibration:
    """Weighted least squares of ``round_trip / 4`` against bytes, weights ``1 / t**2`` (so every
    size counts by its relative error, not the largest by its absolute one); latency >= 0."""
    xs = [float(b) for b, _ in points]
    ys = [t / 4.0 for _, t in points]
    ws = [1.0 / max(y, 1e-9) ** 2 for y in ys]
    sw = sum(ws)
    mx = sum(w * x for w, x in zip(ws, xs)) / sw
    my = sum(w * y for w, y in zip(ws, ys)) / sw
    sxx = sum(w * (x - mx) ** 2 for w, x in zip(ws, xs))
    slope = sum(w * (x - mx) * (y - my) for w, x, y in zip(ws, xs, ys)) / sxx if sxx else 0.0
    slope = max(slope, 1e-12)
    lat = max(0.0, my - slope * mx)
    return LinkCalibration(transport, lat, 1.0 / slope, tuple(points), time.strftime("%Y-%m-%dT%H:%M:%S"))


def _shm_peer(rank, parent_pid, bufs, sems, sizes, rounds, queue) -> None:
    start_watchdog(parent_pid)
    try:
        import torch
        torch.set_num_threads(1)
        out_buf, in_buf = (bufs[0], bufs[1]) if rank == 0 else (bufs[1], bufs[0])
        post, wait = (sems[0], sems[1]) if rank == 0 else (sems[1], sems[0])
        result = []
        for n in sizes:
            mine = torch.ones(n // 4)
            got = torch.empty(n // 4)
            times = []
            for r in range(rounds + 2):
                t0 = time.perf_counter()
                if rank == 0:
                    out_buf[: n // 4].copy_(mine)
                    post.release()
                    wait.acquire()
                    got.copy_(in_buf[: n // 4])
                else:
                    wait.acquire()
                    got.copy_(in_buf[: n // 4])
                    out_buf[: n // 4].copy_(got)
                    post.release()
                times.append((time.perf_counter() - t0) * 1e3)
            result.append((n, statistics.median(times[2:])))
        queue.put(("result", rank, result))
        queue.put(("exit", rank, None))
    except BaseException as err:
        queue.put(("error", rank, f"{type(err).__name__}: {err}"))
        raise SystemExit(1)


def _gloo_peer(rank, parent_pid, port, sizes, rounds, queue) -> None:
    start_watchdog(parent_pid)
    try:
        import torch
        import torch.distributed as dist
        torch.set_num_threads(1)
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
        result = []
        try:
            for n in sizes:
                buf = torch.ones(n // 4)
                times = []
                for r in range(rounds + 2):
                    t0 = time.perf_counter()
                    if rank == 0:
                        dist.send(buf, 1)
                        dist.recv(buf, 1)
                    else:
                        dist.recv(buf, 0)
                        dist.send(buf, 0)
                    times.append((time.perf_counter() - t0) * 1e3)
                result.append((n, statistics.median(times[2:])))
        finally:
            dist.destroy_process_group()
        queue.put(("result", rank, result))
        queue.put(("exit", rank, None))
    except BaseException as err:
        queue.put(("error", rank, f"{type(err).__name__}: {err}"))
        raise SystemExit(1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def calibrate_link(transport: str = "shm", *, sizes: Sequence[int] = DEFAULT_SIZES, rounds: int = 20,
                   timeout: float = 120.0) -> LinkCalibration:
    """Run the ping-pong (two spawned processes, one torch thread each) and fit the line."""
    import torch.multiprocessing as tmp
    if transport not in TRANSPORTS:
        raise InputFormatError(f"transport {transport!r}: expected one of {TRANSPORTS}")
    sizes = sorted(int(s) // 4 * 4 for s in sizes)
    if len(sizes) < 2 or sizes[0] < 4:
        raise InputFormatError("calibration sizes: need at least two sizes of >= 4 bytes")
    ctx = tmp.get_context("spawn")
    if transport == "shm":
        import torch
        bufs = [torch.empty(sizes[-1] // 4).share_memory_() for _ in range(2)]
        sems = [ctx.Semaphore(0), ctx.Semaphore(0)]
        args = [(r, os.getpid(), bufs, sems, sizes, rounds) for r in range(2)]
        target = _shm_peer
    else:
        port = free_port()
        args = [(r, os.getpid(), port, sizes, rounds) for r in range(2)]
        target = _gloo_peer
    queue = ctx.Queue()
    with StageGroup(ctx, target, [a + (queue,) for a in args], ["peer:0", "peer:1"], queue=queue,
                    label="calibration peer") as group:
        got = group.collect("result", [0, 1], timeout=timeout)
        group.collect("exit", [0, 1], timeout=30)
    return fit(got[0], transport)
