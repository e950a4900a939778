"""The course (notebooks/01-*.ipynb ... 06-*.ipynb) runs top to bottom headless, in its FAST setting.

Each notebook checks its own key numbers in cells (a hand computation equals ``evaluate``'s, the DP
table's last entry equals the solver's optimum...), so a wrong lesson fails here. Outputs are never
committed: diffs of the course stay readable (``make docs`` renders the executed course to HTML).
"""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
COURSE = sorted(NOTEBOOKS.glob("[0-9][0-9]-*.ipynb"))


def test_the_course_is_there():
    names = [p.stem for p in COURSE]
    assert names == ["01-cost-model", "02-contiguity-and-ideals", "03-exact-methods",
                         "04-throughput-vs-latency", "05-learned-placement", "06-your-model"], names


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.stem)
def test_notebooks_are_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count"))]
    assert not dirty, f"{path.name}: cells {dirty} carry outputs; clear them before committing"


@pytest.mark.slow
@pytest.mark.parametrize("path", COURSE, ids=lambda p: p.stem)
def test_course_notebook_runs_and_checks_itself(path, monkeypatch):
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("VIZ_PLACE_COURSE_FAST", "1")
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()            # a failing check raises CellExecutionError naming the cell
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    shown = [o for o in outputs if "application/vnd.bokehjs_exec.v0+json" in o.get("data", {})
             or "text/html" in o.get("data", {})]
    assert shown, f"{path.name} drew no figure"
    assert "cdn.bokeh.org" not in "".join(str(o.get("data", {})) for o in outputs)   # BokehJS inline, offline
