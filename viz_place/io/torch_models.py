"""Build PyTorch models from a SPEC string: Hugging Face ``transformers`` models
from their configs, with random weights (never a hub download).

``hf:MODEL_TYPE`` takes ``transformers.AutoConfig.for_model(MODEL_TYPE, **overrides)``
and builds the model class of :data:`HF_MODELS` (the task head chosen for it):

==========  ==================================  ===============================================
SPEC        model class                         example inputs
==========  ==================================  ===============================================
hf:gpt2     ``GPT2LMHeadModel`` (``use_cache``   ``input_ids`` (batch, seq_len = 128)
            off)
hf:bert     ``BertModel`` (encoder + pooler)     ``input_ids`` (batch, seq_len = 128)
hf:llama    ``LlamaForCausalLM`` (``use_cache``  ``input_ids`` (batch, seq_len = 128)
            off)
hf:resnet   ``ResNetForImageClassification``     ``pixel_values`` (batch, 3, 224, 224)
hf:vit      ``ViTForImageClassification``        ``pixel_values`` (batch, 3, image_size, image_size)
hf:convnext ``ConvNextForImageClassification``   ``pixel_values`` (batch, 3, 224, 224)
==========  ==================================  ===============================================

The vision models get ``num_labels=1000`` (an ImageNet head) unless overridden,
so ``hf:resnet`` is ResNet-50 and ``hf:vit`` ViT-B/16 as published. The
defaults are transformers' own configs: ``hf:llama`` is the 6.7 B-parameter
Llama (27 GB in fp32), which builds on the ``meta`` device only; make a small
Llama-style decoder with overrides (``num_hidden_layers=2, hidden_size=256,
intermediate_size=688, num_attention_heads=4, num_key_value_heads=4``).

Weights come from ``torch.manual_seed(seed)`` before the model is built;
inputs from a generator seeded with ``seed`` too, so the same arguments
rebuild the same model and inputs. A model whose parameters need more memory
than this machine has available is refused (with the figures) unless
``meta=True``.

>>> b = build_model("hf:gpt2", {"n_layer": 1, "n_embd": 32, "n_head": 2, "vocab_size": 100}, seq_len=8)
>>> type(b.module).__name__, tuple(b.example_inputs[0].shape), b.module.training
('GPT2LMHeadModel', (1, 8), False)
>>> parse_overrides(["n_layer=2", "depths=[1,1,1,1]", "hidden_act=gelu"])
{'n_layer': 2, 'depths': [1, 1, 1, 1], 'hidden_act': 'gelu'}
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..errors import InputFormatError

#: MODEL_TYPE -> (transformers class name, input kind, config fields set unless overridden).
HF_MODELS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "gpt2": ("GPT2LMHeadModel", "text", {"use_cache": False}),
    "bert": ("BertModel", "text", {}),
    "llama": ("LlamaForCausalLM", "text", {"use_cache": False}),
    "resnet": ("ResNetForImageClassification", "image", {"num_labels": 1000}),
    "vit": ("ViTForImageClassification", "image", {"num_labels": 1000}),
    "convnext": ("ConvNextForImageClassification", "image", {"num_labels": 1000}),
}

DEFAULT_SEQ_LEN = 128
DEFAULT_IMAGE_SIZE = 224
#: Share of the available memory real weights may take (the rest is for activations and the tool).
MEMORY_FRACTION = 0.8


@dataclass
class BuiltModel:
    """A model ready to trace: ``module`` (eval mode), ``example_inputs`` (a tuple of
    tensors), ``config`` (the transformers config, or None) and the arguments that rebuild it."""

    module: Any
    example_inputs: tuple
    config: Any = None
    spec: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    batch: int = 1
    seq_len: int | None = None
    image_size: int | None = None
    seed: int = 0
    meta: bool = False
    parameter_bytes: float = 0.0

    def source(self) -> dict[str, Any]:
        """What rebuilds this model (see :func:`build_model`)."""
        return {"spec": self.spec, "overrides": dict(self.overrides), "batch": self.batch,
                "seq_len": self.seq_len, "image_size": self.image_size, "seed": self.seed}


def is_model_spec(spec: Any) -> bool:
    """True for a SPEC string this module builds (``hf:...``)."""
    return isinstance(spec, str) and spec.startswith("hf:")


def parse_overrides(items: Sequence[str], *, flag: str = "--set") -> dict[str, Any]:
    """``["KEY=VALUE", ...]`` -> dict, VALUE parsed as JSON, else kept as a string (as ``-o`` does)."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = str(item).partition("=")
        key = key.strip()
        if not sep or not key:
            raise InputFormatError(f"{flag} {item!r}: expected KEY=VALUE")
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out


def available_memory_bytes() -> float:
    """Memory this process may still use (``MemAvailable`` of /proc/meminfo, else all of RAM)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def _torch():
    try:
        import torch
        import transformers
    except ImportError as err:
        raise InputFormatError(f"building hf: models needs 'torch' and 'transformers' "
                               f"(pip install 'viz_place[torch]'): {err}") from None
    return torch, transformers


def hf_config(model_type: str, overrides: Mapping[str, Any] | None = None):
    """``AutoConfig.for_model(model_type, **defaults, **overrides)``, unknown fields refused by name."""
    torch, transformers = _torch()
    if model_type not in HF_MODELS:
        raise InputFormatError(f"hf:{model_type}: unknown model type; supported: "
                               + ", ".join(f"hf:{k}" for k in HF_MODELS))
    _, _, defaults = HF_MODELS[model_type]
    overrides = dict(overrides or {})
    base = transformers.AutoConfig.for_model(model_type)
    unknown = [k for k in overrides if not hasattr(base, k) and k not in ("num_labels",)]
    if unknown:
        raise InputFormatError(f"hf:{model_type}: config has no field(s) {unknown} "
                               f"(set one of its fields, e.g. {_example_fields(base)})")
    try:
        return transformers.AutoConfig.for_model(model_type, **{**defaults, **overrides})
    except (TypeError, ValueError) as err:
        raise InputFormatError(f"hf:{model_type}: bad config override(s) {overrides}: {err}") from None


def _example_fields(config) -> str:
    keys = [k for k in ("n_layer", "n_embd", "num_hidden_layers", "hidden_size", "depths", "hidden_sizes",
                        "image_size", "vocab_size") if hasattr(config, k)]
    return ", ".join(keys)


def build_model(spec: str, overrides: Mapping[str, Any] | None = None, *, batch: int = 1,
                seq_len: int | None = None, image_size: int | None = None, seed: int = 0,
                meta: bool = False) -> BuiltModel:
    """The model ``spec`` names with its example inputs (see the module docstring).

    ``seq_len`` applies to language models (default 128), ``image_size`` to
    vision models (default the config's ``image_size``, else 224). ``meta=True``
    builds on the ``meta`` device (shapes only: nothing allocated, any size).
    Raises :class:`~viz_place.errors.InputFormatError` naming what is wrong.
    """
    if not is_model_spec(spec):
        raise InputFormatError(f"model spec {spec!r}: expected hf:MODEL_TYPE (one of "
                               + ", ".join(f"hf:{k}" for k in HF_MODELS) + ") or a path to an .onnx file")
    for name, value in (("batch", batch), ("seq_len", seq_len), ("image_size", image_size)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise InputFormatError(f"{spec}: {name} must be a whole number >= 1, got {value!r}")
    model_type = spec[3:]
    torch, transformers = _torch()
    config = hf_config(model_type, overrides)
    cls_name, kind, _ = HF_MODELS[model_type]
    cls = getattr(transformers, cls_name)
    if kind == "text" and image_size is not None:
        raise InputFormatError(f"{spec}: --image-size applies to vision models; this one takes --seq-len")
    if kind == "image" and seq_len is not None:
        raise InputFormatError(f"{spec}: --seq-len applies to language models; this one takes --image-size")
    if kind == "image" and image_size is not None and hasattr(config, "image_size"):
        config.image_size = image_size  # ViT's position embeddings follow the image size
    with torch.device("meta"):
        shell = cls(config)
    nparams = sum(p.numel() for p in shell.parameters())
    pbytes = float(sum(p.numel() * p.element_size() for p in shell.parameters())
                   + sum(b.numel() * b.element_size() for b in shell.buffers()))
    if not meta:
        budget = MEMORY_FRACTION * available_memory_bytes()
        if pbytes > budget:
            raise InputFormatError(
                f"{spec}: {nparams / 1e9:.3g} B parameters need {pbytes / 1e9:.3g} GB of real weights, more than "
                f"{MEMORY_FRACTION:.0%} of the {available_memory_bytes() / 1e9:.3g} GB available here; import "
                "without --profile (built on the meta device) or make it smaller with --set")
        torch.manual_seed(seed)
        module = cls(config)
    else:
        module = shell
    module.eval()
    gen = torch.Generator().manual_seed(seed)
    device = "meta" if meta else "cpu"
    if kind == "text":
        seq_len = DEFAULT_SEQ_LEN if seq_len is None else seq_len
        limit = next((getattr(config, k) for k in ("n_positions", "max_position_embeddings")
                      if getattr(config, k, None)), None)
        if limit is not None and seq_len > limit:
            raise InputFormatError(f"{spec}: seq_len {seq_len} is longer than the model's {limit} positions")
        ids = torch.randint(0, config.vocab_size, (batch, seq_len), generator=gen)
        inputs = (ids.to(device),)
    else:
        size = image_size or getattr(config, "image_size", None) or DEFAULT_IMAGE_SIZE
        channels = getattr(config, "num_channels", 3)
        inputs = (torch.randn(batch, channels, size, size, generator=gen).to(device),)
        image_size = size
    return BuiltModel(module=module, example_inputs=inputs, config=config, spec=spec,
                      overrides=dict(overrides or {}), batch=batch, seq_len=seq_len if kind == "text" else None,
                      image_size=image_size if kind == "image" else None, seed=seed, meta=meta,
                      parameter_bytes=pbytes)


def build_from_source(source: Mapping[str, Any] | None, *, meta: bool = False) -> BuiltModel:
    """Rebuild the model a graph was imported from (``graph.source``, written by ``import``).

    >>> b = build_model("hf:gpt2", {"n_layer": 1, "n_embd": 32, "n_head": 2, "vocab_size": 100}, seq_len=8)
    >>> again = build_from_source({**b.source(), "granularity": "op"})
    >>> again.example_inputs[0].tolist() == b.example_inputs[0].tolist()
    True
    """
    if not source or not is_model_spec(source.get("spec")):
        what = "no source record" if not source else f"source {dict(source).get('spec') or dict(source).get('module')!r}"
        raise InputFormatError(f"cannot rebuild the model: the graph has {what}; only graphs imported from an "
                               "hf: SPEC record how to rebuild them (a Python module must be passed in again)")
    return build_model(source["spec"], source.get("overrides") or {}, batch=int(source.get("batch") or 1),
                       seq_len=source.get("seq_len"), image_size=source.get("image_size"),
                       seed=int(source.get("seed") or 0), meta=meta)


def output_tensors(out: Any) -> list:
    """The tensors of a model output (``ModelOutput``, tuple, dict or a tensor), in order."""
    import torch
    if isinstance(out, torch.Tensor):
        return [out]
    if hasattr(out, "to_tuple"):
        out = out.to_tuple()
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in output_tensors(o)]
    return []
