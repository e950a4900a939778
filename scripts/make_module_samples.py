"""Regenerate the samples whose ops carry module paths (``layer`` like ``/h/0/attn``):
``gpt2_small`` (GPT-2, 2 layers) and ``resnet_small`` (ResNet-18 layout, narrow),
both built from their Hugging Face ``transformers`` configs with random weights
(nothing is downloaded) and imported with :func:`viz_place.io.torch_fx.read_torch`.

    .venv/bin/python scripts/make_module_samples.py [--out DIR]

The explorer draws these graphs collapsed to one box per module; a tap expands one.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "sample_graphs"



def gpt2_small():
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(n_layer=2, n_embd=128, n_head=4, n_positions=64, vocab_size=1000,
                     attn_implementation="eager", use_cache=False)
    model = GPT2LMHeadModel(cfg).eval()

    class Logits(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, ids):
            return self.m(input_ids=ids, use_cache=False, return_dict=False)[0]
    return Logits(model), (torch.randint(0, 1000, (1, 32)),)


def resnet_small():
    import torch
    from transformers import ResNetConfig, ResNetModel

    cfg = ResNetConfig(embedding_size=32, hidden_sizes=[32, 64, 128, 256], depths=[2, 2, 2, 2],
                       layer_type="basic")
    model = ResNetModel(cfg).eval()

    class Pooled(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, x):
            return self.m(pixel_values=x, return_dict=False)[1]
    return Pooled(model), (torch.randn(1, 3, 64, 64),)


SAMPLES = {"gpt2_small": gpt2_small, "resnet_small": resnet_small}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT, help=f"output folder (default {OUT})")
    args = ap.parse_args(argv)
    import torch
    from viz_place.io import write_nodelink
    from viz_place.io.torch_fx import read_torch

    torch.manual_seed(0)
    args.out.mkdir(exist_ok=True)
    for name, build in SAMPLES.items():
        module, inputs = build()
        with torch.no_grad():
            g = read_torch(module, inputs, name=name)
        g.name = name
        write_nodelink(args.out / f"{name}.json", g)
        layers = {n.layer for n in g.nodes() if n.layer}
        size = (args.out / f"{name}.json").stat().st_size
        print(f"{name}: {g.num_nodes} nodes, {g.num_edges} edges, {len(layers)} module paths, {size / 1e3:.0f} kB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
