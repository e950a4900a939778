"""Reading and writing graphs, placements, devices and pins.

:func:`load_graph` picks the reader from the file: the paper's graph JSON,
our node-link JSON, or (with the ``onnx`` extra) an ONNX model.
:func:`load_placement` reads our placement JSON or the paper's split format.

>>> from viz_place.io import load_graph        # doctest: +SKIP
>>> g = load_graph("sample_graphs/residual.json")  # doctest: +SKIP
"""
from __future__ import annotations

import os
from typing import Any, Callable

from ..errors import InputFormatError
from ..model import Cluster, OpGraph, Placement
from .atomic import atomic_write_bytes, atomic_write_json, atomic_write_text
from .jsonfile import read_json
from .nodelink import graph_from_nodelink, graph_to_nodelink, is_nodelink, read_nodelink, write_nodelink
from .paper import (graph_from_paper_dict, graph_to_paper_dict, is_paper_graph, placement_from_split,
                    read_paper_graph, read_paper_split, split_from_placement, write_paper_split)
from .placement_json import (placement_from_dict, placement_to_csv, placement_to_dict, read_cluster, read_pins,
                             write_placement, write_placement_csv)

#: Extra graph readers by file suffix (``".onnx"`` is added by :mod:`viz_place.io.onnx`).
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
    """(placement, pins) from our placement JSON or the paper's split format."""
    data = read_json(path)
    if isinstance(data, dict) and "assignment" in data:
        placement, pins, _ = placement_from_dict(data, source=str(path))
        return placement, pins
    if isinstance(data, dict) and "fpgas" in data and "cpus" in data:
        return placement_from_split(graph, cluster, data, source=str(path)), {}
    raise InputFormatError(f"{path}: not a placement: expected our placement JSON ('assignment') "
                           "or the paper's split format ('cpus', 'fpgas')")


__all__ = [
    "GRAPH_READERS", "load_graph", "load_placement", "graph_from_dict", "read_json",
    "atomic_write_bytes", "atomic_write_json", "atomic_write_text",
    "graph_from_nodelink", "graph_to_nodelink", "read_nodelink", "write_nodelink",
    "graph_from_paper_dict", "graph_to_paper_dict", "read_paper_graph", "read_paper_split",
    "placement_from_split", "split_from_placement", "write_paper_split",
    "placement_from_dict", "placement_to_dict", "placement_to_csv", "write_placement",
    "write_placement_csv", "read_cluster", "read_pins",
]
