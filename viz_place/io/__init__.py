"""Reading and writing graphs, placements, devices and pins.

:func:`load_graph` picks the reader from the file: the paper's graph JSON,
our node-link JSON, or (with the ``onnx`` extra) an ONNX model.
:func:`load_placement` reads our placement JSON or the paper's split format.

>>> import os, tempfile
>>> from viz_place.model import OpGraph
>>> path = os.path.join(tempfile.mkdtemp(), "two.json")
>>> write_nodelink(path, OpGraph.from_records([{"id": "a", "latency": {"cpu": 1.0}}, {"id": "b"}], [("a", "b")]))
>>> g = load_graph(path)
>>> g.num_nodes, g.num_edges
(2, 1)
"""
from __future__ import annotations

import os
from typing import Any, Callable

from ..errors import InputFormatError, PlacementError
from ..model import Cluster, OpGraph, Placement, validate_pins
from ..model.placement import check_complete
from .atomic import atomic_write_bytes, atomic_write_json, atomic_write_text
from .jsonfile import read_json
from .nodelink import graph_from_nodelink, graph_to_nodelink, is_nodelink, read_nodelink, write_nodelink
from .paper import (graph_from_paper_dict, graph_to_paper_dict, is_paper_graph, placement_from_split,
                    read_paper_graph, read_paper_split, split_from_placement, write_paper_split)
from .placement_json import (placement_from_dict, placement_to_csv, placement_to_dict, read_cluster, read_pins,
                             write_placement, write_placement_csv)

#: Extra graph readers by file suffix. ``".onnx"`` is registered just below: a thin reader that imports
#: :mod:`viz_place.io.onnx` (and the optional ``onnx`` package) on first use.
GRAPH_READERS: dict[str, Callable[..., OpGraph]] = {}


def _onnx_reader(path: str, **kw: Any) -> OpGraph:
    try:
        from .onnx import read_onnx
    except ImportError as err:
        raise InputFormatError(f"{path}: reading ONNX needs the 'onnx' package (pip install 'viz_place[onnx]'): {err}") from None
    return read_onnx(path, **kw)


GRAPH_READERS[".onnx"] = _onnx_reader


def graph_from_dict(data: Any, *, name: str = "graph") -> OpGraph:
    """Graph from already-parsed JSON in either supported format."""
    if is_paper_graph(data):
        return graph_from_paper_dict(data, name=name)
    if is_nodelink(data):
        return graph_from_nodelink(data, name=name)
    raise InputFormatError(f"{name}: not a graph file: expected the paper's format (maxFPGAs, nodes, edges) "
                           "or node-link JSON (nodes, edges)")


def load_graph(path: str | os.PathLike, **kw: Any) -> OpGraph:
    """Read a graph from ``path``, choosing the reader from the suffix and content;
    a model SPEC ``hf:MODEL_TYPE`` is built and imported (:func:`viz_place.io.torch_import.import_torch`)."""
    path = str(path)
    if path.startswith("hf:"):  # a model SPEC: built from its config, imported (kw as import_torch takes)
        from .torch_import import import_torch
        return import_torch(path, **kw)
    suffix = os.path.splitext(path)[1].lower()
    if suffix in GRAPH_READERS:
        if not os.path.exists(path):
            raise InputFormatError(f"{path}: file not found")
        return GRAPH_READERS[suffix](path, **kw)
    name = os.path.splitext(os.path.basename(path))[0]
    return graph_from_dict(read_json(path), name=name)


def load_placement(path: str | os.PathLike, graph: OpGraph, cluster: Cluster) -> tuple[Placement, dict[str, str]]:
    """(placement, pins) from our placement JSON or the paper's split format.

    A file is checked against ``graph`` and ``cluster``: a node on a device the
    cluster does not have (``fpga:9`` when there are two), an unknown node, or
    a pin in the file naming an unknown node or device is refused with
    :class:`~viz_place.errors.PlacementError` — the same refusal as for
    ``--pins`` — rather than evaluated as a violation.
    """
    data = read_json(path)
    if isinstance(data, dict) and "assignment" in data:
        placement, pins, _ = placement_from_dict(data, source=str(path))
    elif isinstance(data, dict) and "fpgas" in data and "cpus" in data:
        placement, pins = placement_from_split(graph, cluster, data, source=str(path)), {}
    else:
        raise InputFormatError(f"{path}: not a placement: expected our placement JSON ('assignment') "
                               "or the paper's split format ('cpus', 'fpgas')")
    try:
        check_complete(graph, cluster, placement)
        pins = validate_pins(graph, cluster, pins)
    except PlacementError as err:
        raise err.prefixed(str(path)) from None
    return placement, pins


__all__ = [
    "GRAPH_READERS", "load_graph", "load_placement", "graph_from_dict", "read_json",
    "atomic_write_bytes", "atomic_write_json", "atomic_write_text",
    "graph_from_nodelink", "graph_to_nodelink", "read_nodelink", "write_nodelink",
    "graph_from_paper_dict", "graph_to_paper_dict", "read_paper_graph", "read_paper_split",
    "placement_from_split", "split_from_placement", "write_paper_split",
    "placement_from_dict", "placement_to_dict", "placement_to_csv", "write_placement",
    "write_placement_csv", "read_cluster", "read_pins",
]
