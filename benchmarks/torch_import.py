"""Hugging Face models in: FLOPs against analytic counts, import time, and the
``--profile`` calibration (sum of per-op CPU times vs a measured forward pass)
for GPT-2 (12 layers, sequence 128), ViT-B/16 and ResNet-50, all from
transformers configs with random weights.

    .venv/bin/python benchmarks/torch_import.py [--no-profile] [--repeats N] [--models gpt2,vit,resnet]

Target: profile ratio within 15% of 1 for each model (both clocks are reported:
the thread's CPU time, used as latencies by default, and wall time, which also
holds the waits for a core on a shared machine). Times are wall seconds on
this machine, which is shared (2 cores): the profile runs on one torch thread
and interleaves the per-op runs with the end-to-end ones so both see the same load.
"""
from __future__ import annotations

import argparse
import sys
import time

from viz_place.io.torch_import import import_torch


def gpt2_flops(layers=12, d=768, tokens=128, vocab=50257) -> float:
    """12 d^2 MACs per token per layer (QKV, projection, MLP), 2 T d for attention, d V for the LM head."""
    return layers * (24 * tokens * d * d + 4 * tokens * tokens * d) + 2 * tokens * d * vocab


def vit_flops(layers=12, d=768, image=224, patch=16, labels=1000) -> float:
    n = (image // patch) ** 2 + 1
    return layers * (24 * n * d * d + 4 * n * n * d) + 2 * (n - 1) * d * 3 * patch * patch + 2 * d * labels


def resnet50_flops(image=224, labels=1000) -> float:
    h = image // 2
    total = 2 * h * h * 64 * 3 * 49
    h //= 2
    cin = 64
    for mid, out, blocks, stride in ((64, 256, 3, 1), (128, 512, 4, 2), (256, 1024, 6, 2), (512, 2048, 3, 2)):
        for i in range(blocks):
            ho = h // (stride if i == 0 else 1)
            total += 2 * h * h * mid * cin + 2 * ho * ho * mid * mid * 9 + 2 * ho * ho * out * mid
            total += 2 * ho * ho * out * cin if i == 0 else 0
            h, cin = ho, out
    return total + 2 * 2048 * labels


MODELS = {"gpt2": ("hf:gpt2", gpt2_flops()), "vit": ("hf:vit", vit_flops()), "resnet": ("hf:resnet", resnet50_flops())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-profile", action="store_true", help="FLOPs and import time only")
    ap.add_argument("--repeats", type=int, default=10, help="profile repeats per op (median)")
    ap.add_argument("--models", default="gpt2,vit,resnet")
    args = ap.parse_args(argv)
    rows = []
    for key in args.models.split(","):
        spec, analytic = MODELS[key]
        t = time.perf_counter()
        g = import_torch(spec)
        t_import = time.perf_counter() - t
        m = import_torch(spec, granularity="module")
        row = [spec, g.num_nodes, m.num_nodes, f"{g.total_flops / 1e9:.2f}", f"{analytic / 1e9:.2f}",
               f"{g.total_flops / analytic:.3f}", f"{t_import:.1f}", g.source["tracer"]]
        if not args.no_profile:
            t = time.perf_counter()
            p = import_torch(spec, profile=True, repeats=args.repeats)
            meas = p.source["measured"]
            for clock in ("cpu", "wall"):
                fwd, ratio = meas[f"forward_{clock}_ms"], meas[f"ratio_{clock}"]
                row += [f"{ratio * fwd:.1f}", f"{fwd:.1f}", f"{ratio:.3f}", "yes" if abs(ratio - 1) <= 0.15 else "NO"]
            row.append(f"{time.perf_counter() - t:.0f}")
        rows.append(row)
        print(" | ".join(str(c) for c in row), flush=True)
    head = ["model", "ops", "module nodes", "GFLOPs", "analytic", "ratio", "import s", "tracer"]
    if not args.no_profile:
        for clock in ("cpu", "wall"):
            head += [f"sum of ops ms ({clock})", f"forward ms ({clock})", f"ratio ({clock})", "within 15%"]
        head.append("profile s")
    print()
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(str(c) for c in r) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
