"""Shared pieces of the CLI: loading inputs, printing, exit codes.

>>> load_graph_arg("chain").name          # a sample name, when no such file exists
'chain'
>>> jsonable({"latency": float("inf"), "loads": [1.5, float("nan")]})
{'latency': None, 'loads': [1.5, None]}
>>> print_table(["device", "load"], [["fpga:0", 1 / 3], ["cpu:0", float("inf")]])
device  load
------  --------
fpga:0  0.333333
cpu:0   inf
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import signal
import sys
import threading
from typing import Any, Iterator

from ..errors import InputFormatError
from ..io import load_graph, read_cluster, read_pins
from ..model import Cluster, OpGraph
from ..samples import load_sample, sample_names

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


def finite_number(text: str) -> float:
    """argparse type: a finite number (``nan`` and ``inf`` are refused).

    >>> finite_number("0.5")
    0.5
    >>> finite_number("nan")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected a finite number, got 'nan'
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def positive_seconds(text: str) -> float:
    """argparse type of ``--time-limit``: seconds, finite and > 0 (no limit = leave the flag out).

    >>> positive_seconds("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: a time limit must be positive, got '0' (leave --time-limit out for the solver's default)
    """
    value = finite_number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"a time limit must be positive, got {text!r} "
                                         "(leave --time-limit out for the solver's default)")
    return value


def non_negative_int(text: str) -> int:
    """argparse type of seeds: a whole number >= 0.

    >>> non_negative_int("-3")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected a whole number >= 0, got '-3'
    """
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return value


@contextlib.contextmanager
def interrupt_to_cancel() -> Iterator[threading.Event]:
    """Inside the block, Ctrl-C (SIGINT) sets the yielded event instead of raising.

    The event is the solver's ``cancel`` hook: the solver stops and returns its
    best placement so far, which the command still writes. A second Ctrl-C
    raises :class:`KeyboardInterrupt` (an immediate stop). Outside the main
    thread (where signals cannot be caught) the event is simply never set.
    """
    event = threading.Event()
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGINT) is signal.SIG_IGN:   # not ours to catch, or deliberately ignored
        yield event
        return

    def on_sigint(signum, frame) -> None:
        if event.is_set():
            raise KeyboardInterrupt
        event.set()

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield event
    finally:
        signal.signal(signal.SIGINT, previous)


def add_graph_args(p, *, devices: bool = True, pins: bool = False, model: bool = True) -> None:
    p.add_argument("graph", help="graph file (paper JSON, node-link JSON, .onnx), a sample name, "
                                 "or a model SPEC hf:MODEL_TYPE (with the model flags below)")
    if devices:
        p.add_argument("--devices", metavar="FILE", help="devices JSON ({'classes': [...]} or the paper's maxFPGAs/...)")
    if pins:
        p.add_argument("--pins", metavar="FILE", help="pins JSON ({node: device})")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    if model:
        from .model_args import add_model_args
        add_model_args(p)


def load_graph_arg(spec: str, args: Any = None) -> OpGraph:
    """The graph a GRAPH argument names: a sample, a file, or a model SPEC (with ``args``' model flags)."""
    if args is not None:
        from .model_args import load_spec
        g = load_spec(spec, args)
        if g is not None:
            return g
    if not os.path.exists(spec) and spec in sample_names():
        return load_sample(spec)
    return load_graph(spec)


def cluster_for(graph: OpGraph, devices_path: str | None) -> Cluster:
    if devices_path:
        return read_cluster(devices_path)
    if graph.default_cluster is not None:
        return graph.default_cluster
    raise InputFormatError(f"graph {graph.name!r} carries no device set; pass --devices FILE")


def pins_for(graph: OpGraph, cluster: Cluster, pins_path: str | None) -> dict[str, str]:
    return read_pins(pins_path, graph, cluster) if pins_path else {}


def jsonable(x: Any) -> Any:
    """Replace inf/NaN (not valid JSON) with None, recursively."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    return x


def print_json(obj: Any) -> None:
    json.dump(jsonable(obj), sys.stdout, indent=1, allow_nan=False)
    sys.stdout.write("\n")


def fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        if math.isinf(x):
            return "inf"
        return f"{x:.6g}"
    return str(x)


def print_table(headers: list[str], rows: list[list[Any]]) -> None:
    cells = [[fmt(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)))
    print("  ".join("-" * w for w in widths))
    for r in cells:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
