"""Regenerate sample_graphs/onnx_*.json from the real architectures shipped in the
onnx wheel (onnx/backend/test/data/light/light_*.onnx; weights replaced by
ConstantOfShape, so the files are small), through viz_place's ONNX importer.

    .venv/bin/python scripts/import_light_models.py [--list] [--out DIR]

Latencies are the roofline model's (milliseconds) for the default kinds
``cpu`` (Xeon 8380) and ``gpu`` (A100); each graph carries the default cluster
(1 cpu + 4 gpu).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from viz_place.io import write_nodelink
from viz_place.io.onnx import read_onnx

OUT = Path(__file__).resolve().parents[1] / "sample_graphs"

#: sample name -> (light model stem, training)
SAMPLES = {
    "onnx_resnet50": ("resnet50", False),
    "onnx_resnet50_training": ("resnet50", True),
    "onnx_inception_v1": ("inception_v1", False),
    "onnx_squeezenet": ("squeezenet", False),
    "onnx_densenet121": ("densenet121", False),
}


def light_dir() -> Path:
    import onnx
    return Path(onnx.__file__).resolve().parent / "backend" / "test" / "data" / "light"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", action="store_true", help="list the light models available and exit")
    ap.add_argument("--out", type=Path, default=OUT, help=f"output folder (default {OUT})")
    args = ap.parse_args(argv)
    src = light_dir()
    if args.list:
        for p in sorted(src.glob("light_*.onnx")):
            print(p.stem)
        return 0
    args.out.mkdir(exist_ok=True)
    for name, (stem, training) in SAMPLES.items():
        path = src / f"light_{stem}.onnx"
        g = read_onnx(path, training=training)
        g.name = name
        write_nodelink(args.out / f"{name}.json", g)
        size = (args.out / f"{name}.json").stat().st_size
        print(f"{name}: {g.num_nodes} nodes, {g.num_edges} edges, {g.total_flops / 1e9:.3f} GFLOPs, "
              f"{size / 1e3:.0f} kB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
