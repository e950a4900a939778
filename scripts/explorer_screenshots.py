"""Take the README's screenshots of the explorer (JupyterLab + headless Chromium, Playwright).

    .venv/bin/python scripts/explorer_screenshots.py [--out docs/img]

Writes ``graph_gpt2.png`` (GPT-2 sample: modules as boxes split by device, one
block opened), ``graph_resnet50.png`` (ONNX ResNet-50, every block open, zoomed
in until the op labels show), and ``pipeline.png`` (the Pipeline tab after the DP: the Gantt chart, the single-sample
schedule and the device graph).
Images are 256-colour PNGs about 1,000 px wide.
"""
from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from test_browser import NOTEBOOK, LabSession, browser_skip_reason  # noqa: E402

STATE_JS = """() => {
  const idx = window.Bokeh ? Bokeh.index : null; if (!idx) return null;
  const roots = typeof idx[Symbol.iterator] === 'function' ? [...idx] : Object.values(idx);
  const pv = roots.find(v => v.model && v.model.title && v.model.title.text && v.model.title.text.includes(' nodes, '));
  if (!pv || !pv.has_finished()) return null;
  const c = pv.canvas_view.el.getBoundingClientRect();
  const src = pv.model.renderers.find(r => r.data_source.data.op != null).data_source;
  const k = Math.floor(src.data.x.length * 0.3);
  return {left: c.left, top: c.top, width: c.width, height: c.height,
          node: [c.left + pv.frame.x_scale.compute(src.data.x[k]), c.top + pv.frame.y_scale.compute(src.data.y[k])]};
}"""


def notebook(code: str) -> str:
    nb = json.loads(NOTEBOOK.read_text())
    cell = [c for c in nb["cells"] if c["cell_type"] == "code"][0]
    cell["source"] = code
    nb["cells"] = [cell]
    return json.dumps(nb)


def save(png: bytes, path: Path, width: int = 1000) -> None:
    from PIL import Image
    img = Image.open(io.BytesIO(png)).convert("RGB")
    if img.width > width:
        img = img.resize((width, round(img.height * width / img.width)), Image.LANCZOS)
    img.quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(path, optimize=True)
    print(f"{path}: {path.stat().st_size / 1e3:.0f} kB")


def shoot(out: Path, name: str, code: str, actions, clip: str = "explorer") -> None:
    with tempfile.TemporaryDirectory() as d, LabSession(Path(d), notebook(code), viewport=(1500, 1250)) as lab:
        lab.open_and_run_all(timeout_ms=120000)
        page = lab.page
        page.evaluate("window.jupyterapp.commands.execute('application:toggle-left-area')")
        time.sleep(1.5)
        actions(lab)
        page.mouse.move(5, 5)   # no hover tooltip in the picture
        time.sleep(1.0)
        if clip == "graph":
            c = page.evaluate(STATE_JS)
            png = page.screenshot(clip={"x": c["left"], "y": c["top"], "width": c["width"] + 150, "height": c["height"]})
        else:
            png = page.locator(clip).first.screenshot()
        save(png, out / name)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "img")
    args = ap.parse_args(argv)
    reason = browser_skip_reason()
    if reason:
        print(reason)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    head = "from viz_place.widgets import PlacementExplorer\n"

    def gpt2(lab):
        lab.page.evaluate("() => 0")
    shoot(args.out, "graph_gpt2.png",
          head + 'explorer = PlacementExplorer("gpt2_small")\n'
                 'explorer.graph_panel.expand(explorer.graph_panel.view.boxes.data["gid"][0])\nexplorer',
          gpt2, clip="graph")

    def resnet(lab):
        c = lab.page.evaluate(STATE_JS)
        lab.page.mouse.move(*c["node"])   # zoom in around an op (the wheel zooms about the pointer)
        for _ in range(4):
            lab.page.mouse.wheel(0, -240)
            time.sleep(0.1)
    shoot(args.out, "graph_resnet50.png",
          head + 'explorer = PlacementExplorer("onnx_resnet50")\nexplorer.run("dp")\nexplorer.graph_panel.expand_all()\n'
                 "explorer",
          resnet, clip="graph")

    def pipeline(lab):
        lab.open_tab("Pipeline")
        lab.page.wait_for_timeout(4000)
    shoot(args.out, "pipeline.png", head + 'explorer = PlacementExplorer("residual")\nexplorer.run("dp")\nexplorer',
          pipeline, clip=".vp-explorer")
    return 0


if __name__ == "__main__":
    sys.exit(main())
