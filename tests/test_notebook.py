"""notebooks/explorer.ipynb runs headless, top to bottom, on the .venv's python3 kernel."""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "explorer.ipynb"


def test_notebook_kernelspec_is_python3():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit the notebook without outputs"


@pytest.mark.slow
def test_notebook_executes_without_error(tmp_path):
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()   # raises CellExecutionError naming the failing cell
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    widget_views = [o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert widget_views, "the explorer widget was not displayed"
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "current max-load:" in text and "solvers:" in text
    # BokehJS is loaded inline (no CDN)
    js = "".join(str(o.get("data", {})) for o in outputs)
    assert "cdn.bokeh.org" not in js
