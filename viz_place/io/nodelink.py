"""networkx node-link JSON (our own graph format).

``{"format": "viz_place.graph/1", "name": ..., "default_cluster": {...} | null,
"nodes": [{"id": ..., <node attributes>}], "edges": [{"source", "target", "bytes", "artificial"}]}``
— the attributes are those documented in :mod:`viz_place.model.graph` — and,
when present, ``"notes": [...]`` and ``"source": {...}`` (where an imported
graph came from: :attr:`OpGraph.source`).

>>> import tempfile, os
>>> from viz_place.model import OpGraph
>>> g = OpGraph.from_records([{"id": "a", "latency": {"cpu": 1.0}}], [])
>>> p = os.path.join(tempfile.mkdtemp(), "g.json"); write_nodelink(p, g)
>>> read_nodelink(p).node("a").latency["cpu"]
1.0
>>> g = OpGraph.from_records([{"id": "a"}], [], source={"spec": "hf:gpt2", "seed": 0}, notes=["traced"])
>>> write_nodelink(p, g); g2 = read_nodelink(p); g2.source, g2.notes
({'spec': 'hf:gpt2', 'seed': 0}, ['traced'])
"""
from __future__ import annotations

import os
from typing import Any, Mapping

from ..errors import InputFormatError
from ..model import Cluster, OpGraph
from .atomic import atomic_write_json
from .jsonfile import read_json

FORMAT = "viz_place.graph/1"


def is_nodelink(data: Any) -> bool:
    from .paper import is_paper_graph
    return isinstance(data, Mapping) and "nodes" in data and ("edges" in data or "links" in data) \
        and not is_paper_graph(data)


def graph_to_nodelink(graph: OpGraph) -> dict[str, Any]:
    nodes, edges = graph.to_records()
    twins = [repr(n["id"]) for n in nodes if n.get("artificial")]
    notes = [t for t in graph.notes if not any(tw in t for tw in twins)]  # re-made when read
    nodes = [n for n in nodes if not n.get("artificial")]
    keep = {n["id"] for n in nodes}
    edges = [e for e in edges if e["source"] in keep and e["target"] in keep]
    return {"format": FORMAT, "directed": True, "name": graph.name,
            "default_cluster": graph.default_cluster.to_dict() if graph.default_cluster else None,
            "nodes": nodes, "edges": edges, **({"notes": notes} if notes else {}),
            **({"source": graph.source} if graph.source is not None else {})}


def graph_from_nodelink(data: Mapping[str, Any], *, name: str = "graph") -> OpGraph:
    if not is_nodelink(data):
        raise InputFormatError(f"{name}: expected node-link JSON with 'nodes' and 'edges'")
    edges_raw = data.get("edges", data.get("links"))
    if not isinstance(data["nodes"], list) or not isinstance(edges_raw, list):
        raise InputFormatError(f"{name}: 'nodes' and 'edges' must be lists")
    edges = []
    for i, e in enumerate(edges_raw):
        if not isinstance(e, Mapping) or "source" not in e or "target" not in e:
            raise InputFormatError(f"{name}: edge #{i} must be an object with 'source' and 'target'")
        attrs = {k: v for k, v in e.items() if k not in ("source", "target")}
        edges.append((e["source"], e["target"], attrs))
    cluster = Cluster.from_dict(data["default_cluster"]) if data.get("default_cluster") else None
    notes = data.get("notes") or []
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        raise InputFormatError(f"{name}: field 'notes' must be a list of strings")
    source = data.get("source")
    if source is not None and not isinstance(source, Mapping):
        raise InputFormatError(f"{name}: field 'source' must be an object (where the graph came from)")
    return OpGraph.from_records(data["nodes"], edges, name=str(data.get("name") or name), default_cluster=cluster,
                                notes=notes, source=source)


def read_nodelink(path: str | os.PathLike) -> OpGraph:
    name = os.path.splitext(os.path.basename(str(path)))[0]
    return graph_from_nodelink(read_json(path), name=name)


def write_nodelink(path: str | os.PathLike, graph: OpGraph) -> None:
    atomic_write_json(path, graph_to_nodelink(graph))
