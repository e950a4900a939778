"""Module paths of imported PyTorch models: ``layer`` strings, the model's main
repeated blocks, and module-granular placements as ``device_map`` dicts.

An op imported from a ``torch.nn.Module`` keeps the module it ran in as its
``layer``, written as torch's ONNX exporter scopes names: ``/transformer/h/0/attn``
for the dotted path ``transformer.h.0.attn`` (the root module is ``""``).

:func:`repeated_blocks` finds the children of the model's main block list
(GPT-2's ``transformer.h.*``, BERT's ``encoder.layer.*``, ResNet's stage blocks
``resnet.encoder.stages.*.layers.*``) from the layers and sizes alone;
:func:`assignment_from_device_map` reads a ``{dotted.module.path: device}`` map
(as accelerate's ``dispatch_model`` and transformers' ``from_pretrained(device_map=...)``
take it) back into node -> device; the map itself is written by
:func:`viz_place.io.torch_export_placement.device_map`.

>>> layer_to_path("/transformer/h/0/attn"), path_to_layer("transformer.h.0"), truncate("a.b.c.d", 2)
('transformer.h.0.attn', '/transformer/h/0', 'a.b')
>>> from viz_place.model import OpGraph
>>> g = OpGraph.from_records([{"id": f"op{i}", "layer": f"/h/{i // 2}", "size": 10.0} for i in range(6)]
...                          + [{"id": "head", "layer": "/lm_head", "size": 5.0}], [])
>>> repeated_blocks(g).blocks
('h.0', 'h.1', 'h.2')
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from ..errors import PlacementError, SolverError
from .graph import OpGraph

#: Names of module lists whose entries are stages (each with its own list of blocks).
STAGE_LISTS = frozenset({"stages"})


def layer_to_path(layer: str | None) -> str:
    """``"/a/b/0"`` -> ``"a.b.0"``; ``None`` or ``"/"`` -> ``""`` (the root module)."""
    if not layer:
        return ""
    return ".".join(p for p in str(layer).split("/") if p)


def path_to_layer(path: str) -> str:
    """``"a.b.0"`` -> ``"/a/b/0"``; ``""`` -> ``"/"``."""
    return "/" + "/".join(p for p in path.split(".") if p)


def truncate(path: str, depth: int) -> str:
    """The first ``depth`` components of a dotted path."""
    return ".".join(path.split(".")[:depth]) if path else ""


def path_depth(path: str) -> int:
    return len(path.split(".")) if path else 0


def is_within(path: str, prefix: str) -> bool:
    """``path`` is ``prefix`` or inside it (component-wise; ``""`` contains everything)."""
    return not prefix or path == prefix or path.startswith(prefix + ".")


def has_module_paths(graph: OpGraph) -> bool:
    """True when the graph's forward nodes carry module paths (``layer``)."""
    fwd = [n for n in graph.nodes() if not n.backward and not n.artificial]
    return bool(fwd) and any(n.layer for n in fwd)


def require_module_paths(graph: OpGraph, what: str) -> None:
    """Refuse a graph without module paths, saying so (for module-order baselines)."""
    if not has_module_paths(graph):
        raise SolverError(f"{what}: graph {graph.name!r} has no module paths (node field 'layer'); import a "
                          "PyTorch model with `viz-place import hf:...` or "
                          "viz_place.io.torch_import.import_torch(module, inputs)")


@dataclass(frozen=True)
class BlockList:
    """The main repeated blocks: dotted paths in model order, and the list(s) they come from."""

    blocks: tuple[str, ...]
    containers: tuple[str, ...]

    @property
    def depth(self) -> int:
        """Deepest block path (the ``--depth`` at which each block is one node)."""
        return max(path_depth(b) for b in self.blocks)


def _weights(graph: OpGraph) -> dict[str, float]:
    """Weight (size, else FLOPs) of every module path and each of its prefixes."""
    out: dict[str, float] = {}
    use_flops = not any(n.size for n in graph.nodes() if not n.backward)
    for n in graph.nodes():
        if n.backward or n.artificial:
            continue
        w = float(n.flops or 0.0) if use_flops else float(n.size)
        parts = layer_to_path(n.layer).split(".") if n.layer else []
        for i in range(len(parts) + 1):
            key = ".".join(parts[:i])
            out[key] = out.get(key, 0.0) + w
    return out


def _numbered_children(paths: Iterable[str]) -> dict[str, list[str]]:
    """Container path -> its numbered children (``h`` -> ``h.0, h.1, ...``), in numeric order."""
    kids: dict[str, set[str]] = {}
    for p in paths:
        parts = p.split(".") if p else []
        for i, part in enumerate(parts):
            if part.isdigit():
                kids.setdefault(".".join(parts[:i]), set()).add(".".join(parts[:i + 1]))
    return {c: sorted(ks, key=lambda k: int(k.rsplit(".", 1)[-1])) for c, ks in kids.items()}


def repeated_blocks(graph: OpGraph) -> BlockList:
    """The children of the model's main block list, in model order.

    The main list is the outermost numbered module list (``h.0, h.1, ...``) with the
    most weight (parameter bytes; FLOPs when the graph has no sizes). A list named
    as in :data:`STAGE_LISTS` (``stages``: ResNet, ConvNeXt) holds stages, not
    blocks: the blocks are then the entries of each stage's outermost own list
    (``stages.0.layers.*``, ``stages.1.layers.*``...). Raises
    :class:`~viz_place.errors.SolverError` when the graph has no module paths or
    no numbered module list.
    """
    require_module_paths(graph, "finding the repeated blocks")
    weights = _weights(graph)
    lists = _numbered_children(weights)
    outer = [c for c in lists if not any(o != c and is_within(c, o) for o in lists)]
    if not outer or all(len(lists[c]) < 2 for c in outer):
        raise SolverError(f"graph {graph.name!r}: no repeated blocks (no numbered module list such as 'h.0', 'h.1' "
                          "in the node layers)")
    top = max((c for c in outer if len(lists[c]) >= 2), key=lambda c: (weights.get(c, 0.0), len(lists[c])))
    blocks, containers = list(lists[top]), [top]
    while containers[0].rsplit(".", 1)[-1] in STAGE_LISTS:
        nested = []
        for b in blocks:
            inner = [c for c in lists if is_within(c, b) and c != b
                     and not any(o != c and o != b and is_within(c, o) and is_within(o, b) for o in lists)]
            if not inner:
                break
            nested.append(max(inner, key=lambda c: weights.get(c, 0.0)))
        if len(nested) != len(blocks):
            break
        blocks = [k for c in nested for k in lists[c]]
        containers = nested
    return BlockList(tuple(blocks), tuple(containers))


def assignment_from_device_map(graph: OpGraph, device_map: Mapping[str, str]) -> dict[str, str]:
    """node -> device from ``{module path: device}`` (the longest matching key wins);
    the inverse of :func:`viz_place.io.torch_export_placement.device_map` on module-granular
    placements. Backward nodes follow their forward twins' module."""
    keys = sorted(device_map, key=lambda k: -path_depth(k))
    out: dict[str, str] = {}
    for n in graph.nodes():
        if n.artificial:
            continue
        path = layer_to_path(n.layer)
        match = next((k for k in keys if is_within(path, k)), None)
        if match is None:
            # a parent's own ops without parameters: with the next module in order, as its data flows there
            continue
        out[n.id] = device_map[match]
    missing = [n.id for n in graph.nodes() if not n.artificial and n.id not in out]
    for nid in missing:  # own-ops nodes: the device of a neighbour that is placed (predecessor, else successor)
        near = [p for p in graph.predecessors(nid) if p in out] or [s for s in graph.successors(nid) if s in out]
        if not near:
            raise PlacementError(f"device_map places no module containing node {nid!r} "
                                 f"(module {layer_to_path(graph.node(nid).layer) or '(root)'})")
        out[nid] = out[near[0]]
    return out
