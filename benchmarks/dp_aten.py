"""The exact throughput DP on Hugging Face models at core-ATen granularity.

GPT-2 (12 layers, seq 128), BERT-base (seq 128), ViT-B/16 (224 px) and
ResNet-50, built from their transformers configs with random weights (no
download), traced with ``torch.export`` and lowered to core ATen ops
(``--granularity aten``: linear -> transpose + addmm, attention -> its matmuls,
scaling and softmax), costed by the roofline model, then solved by ``dp`` on
the graph's default cluster (1 CPU + 4 GPUs of 80 GB). Each model runs in its
own subprocess (peak memory is that run's own); importing is not timed.
Prints nodes, supernodes after the optimum-keeping contractions, ideals, (J, I)
pairs, solver CPU and wall seconds, peak resident memory, the optimum and the
status (``optimal``: proven for contiguous (pipeline) splits of the full graph,
no coarsening).

    .venv/bin/python benchmarks/dp_aten.py              # the four models, inference graphs
    .venv/bin/python benchmarks/dp_aten.py --training   # with backward nodes
    .venv/bin/python benchmarks/dp_aten.py gpt2         # the models whose spec contains 'gpt2'
"""
from __future__ import annotations

import json
import sys

from _common import run_isolated, timed_solve

MODELS = [("hf:gpt2", {"n_layer": 12}, 128), ("hf:bert", {}, 128), ("hf:vit", {}, None), ("hf:resnet", {}, None)]


def run_one(spec: str, overrides: dict, seq_len, training: bool) -> dict:
    from viz_place.io.torch_import import import_torch
    return timed_solve(import_torch(spec, overrides=overrides, seq_len=seq_len, granularity="aten", training=training))


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--one":
        spec, overrides, seq_len, training = json.loads(argv[1])
        print(json.dumps(run_one(spec, overrides, seq_len, training)))
        return 0
    training = "--training" in argv
    names = [a for a in argv if not a.startswith("--")]
    models = [m for m in MODELS if not names or any(n in m[0] for n in names)]
    head = (f"{'model (aten' + (', training)' if training else ')'):24s} {'nodes':>5s} {'super':>5s} {'ideals':>7s} "
            f"{'pairs':>11s} {'cpu s':>7s} {'wall s':>7s} {'peak MB':>8s} {'optimum (max-load)':>19s} {'status':>8s}")
    print(head)
    print("-" * len(head))
    for spec, overrides, seq_len in models:
        r = run_isolated(__file__, json.dumps([spec, overrides, seq_len, training]))
        if isinstance(r, str):
            print(f"{spec:24s} failed: {r}")
            continue
        print(f"{spec:24s} {r['nodes']:5d} {r['supernodes']:5d} {r['ideals']:7,d} {r['pairs']:11,d} "
              f"{r['cpu']:7.2f} {r['wall']:7.2f} {r['peak_mb']:8.0f} {r['value']:19.10g} {r['status']:>8s}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
