"""What rebuilds a model in a fresh process: a SPEC with its recorded source, or a module.

Stage processes are *spawned* (never forked: torch's thread pools do not survive a
fork), and ``torch.distributed.pipelining`` stage modules cannot be pickled, so each
stage process rebuilds the model from a :class:`ModelRecipe` and splits it itself,
as torch's own pipelining examples do on every rank.

>>> import torch
>>> r = ModelRecipe.from_module(torch.nn.Linear(4, 2), (torch.ones(1, 4),))
>>> module, inputs = r.build()
>>> type(module).__name__, tuple(inputs[0].shape)
('Linear', (1, 4))
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..errors import InputFormatError

SOURCE_KEYS = ("spec", "overrides", "batch", "seq_len", "image_size", "seed")


@dataclass(frozen=True)
class ModelRecipe:
    """Either ``source`` (the arguments of ``viz_place.io.torch_models.build_model``) or a
    picklable ``module`` with its ``example_inputs``."""

    source: Mapping[str, Any] | None = None
    payload: bytes = b""      # the module and its example inputs, saved with torch.save
    name: str = ""

    @classmethod
    def from_source(cls, source: Mapping[str, Any]) -> "ModelRecipe":
        if not isinstance(source, Mapping) or not source.get("spec"):
            raise InputFormatError("model source: expected a record with 'spec' (e.g. hf:gpt2), as import writes")
        return cls(source={k: source[k] for k in SOURCE_KEYS if k in source and source[k] is not None})

    @classmethod
    def from_module(cls, module: Any, example_inputs: tuple) -> "ModelRecipe":
        """A snapshot of ``module`` (weights included) taken now, before anything splits it.
        Its class must be importable by a fresh process (not defined in a notebook cell)."""
        import io
        import torch
        buf = io.BytesIO()
        try:
            torch.save((module, tuple(example_inputs)), buf)
        except Exception as err:
            raise InputFormatError(f"module {type(module).__name__}: cannot be saved for the stage processes "
                                   f"({type(err).__name__}: {err})") from None
        return cls(payload=buf.getvalue(), name=type(module).__name__)

    def describe(self) -> str:
        return self.source["spec"] if self.source else self.name

    def build(self) -> tuple[Any, tuple]:
        """(module in eval mode, example inputs)."""
        if self.source is not None:
            from ..io.torch_models import build_from_source
            b = build_from_source(self.source)
            return b.module.eval(), tuple(b.example_inputs)
        import io
        import torch
        module, inputs = torch.load(io.BytesIO(self.payload), weights_only=False)
        return module.eval(), tuple(inputs)


def graph_source(graph: Any) -> dict[str, Any] | None:
    """The model source an importer recorded on ``graph`` (``None`` if there is none)."""
    from ..io.torch_models import is_model_spec
    src = getattr(graph, "source", None)
    return dict(src) if isinstance(src, Mapping) and is_model_spec(src.get("spec")) else None
