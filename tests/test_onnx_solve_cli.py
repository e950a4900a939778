"""Imported real models solve, and the CLI imports, inspects and solves ONNX files."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

onnx = pytest.importorskip("onnx")

from viz_place.cli.main import main  # noqa: E402
from viz_place.errors import SolverError  # noqa: E402
from viz_place.io import load_graph  # noqa: E402
from viz_place.io.onnx import read_onnx  # noqa: E402
from viz_place.solvers import list_solvers, run_solver  # noqa: E402
from viz_place.testing import check_placement  # noqa: E402

LIGHT = Path(onnx.__file__).resolve().parent / "backend" / "test" / "data" / "light"
LIGHT_MODELS = sorted(p.stem for p in LIGHT.glob("light_*.onnx"))
#: Cheap solvers to fall back on when the exact DP is out of reach, most preferred first.
FALLBACKS = ("pipedream", "topo-fill", "local-search")
#: Small enough that the DP answers at once or says it is out of reach (inception_v2 has more ideals).
MAX_IDEALS = 20_000


def _registered() -> set[str]:
    return {s.name for s in list_solvers()}


def _solve_with_fallback(g):
    """The DP, or (when it says it is out of reach) another solver: (placement, dp error or None)."""
    names = _registered()
    if "dp" not in names:
        pytest.skip("the 'dp' solver is not registered on this checkout")
    try:
        return run_solver("dp", g, g.default_cluster, options={"max_ideals": MAX_IDEALS}), None
    except SolverError as err:
        message = str(err)
    assert "beyond reach" in message and "ideals" in message, message
    for name in FALLBACKS:
        if name in names:
            return run_solver(name, g, g.default_cluster), message
    # no baseline registered yet: the DP's own coarsening (one topological order) still answers
    return run_solver("dp", g, g.default_cluster, options={"linearize": True}), message


@pytest.mark.parametrize("stem", LIGHT_MODELS)
def test_every_light_model_solves(stem):
    g = read_onnx(LIGHT / f"{stem}.onnx")
    placement, dp_error = _solve_with_fallback(g)
    assert check_placement(g, g.default_cluster, placement) == []
    if dp_error is None:
        assert placement.status == "optimal"
    used = {placement[n] for n in g.node_ids}
    assert any(d.startswith("gpu:") for d in used)  # the accelerators are worth using


def test_training_graph_solves_with_twins_together():
    g = read_onnx(LIGHT / "light_resnet50.onnx", training=True)
    placement, _ = _solve_with_fallback(g)
    assert check_placement(g, g.default_cluster, placement) == []
    for n in g.nodes():
        if not n.backward:
            assert placement[n.id] == placement[f"{n.id}__grad"]


# --- CLI ---------------------------------------------------------------------
def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_import_writes_a_graph_that_info_reads(capsys, tmp_path):
    out = tmp_path / "r50.json"
    code, text, err = run(capsys, "import", LIGHT / "light_resnet50.onnx", "--out", out)
    assert code == 0 and out.exists() and "GFLOPs" in text, err
    code, text, _ = run(capsys, "info", out, "--json")
    data = json.loads(text)
    assert code == 0 and data["flops"] == pytest.approx(8.2e9, rel=0.1)
    assert data["kinds"] == ["cpu", "gpu"] and {d["name"] for d in data["devices"]} == {"cpu", "gpu"}
    assert load_graph(out).num_nodes == read_onnx(LIGHT / "light_resnet50.onnx").num_nodes


def test_info_and_solve_accept_onnx_directly(capsys, tmp_path):
    code, text, _ = run(capsys, "info", LIGHT / "light_squeezenet.onnx", "--json")
    assert code == 0 and json.loads(text)["flops"] > 5e8
    if "dp" not in _registered():
        pytest.skip("the 'dp' solver is not registered on this checkout")
    out = tmp_path / "p.json"
    code, text, err = run(capsys, "solve", LIGHT / "light_squeezenet.onnx", "--solver", "dp", "--out", out)
    assert code == 0, err
    assert set(json.loads(out.read_text())["assignment"]) == set(read_onnx(LIGHT / "light_squeezenet.onnx").node_ids)


def test_import_with_devices_file_and_training(capsys, tmp_path):
    devices = tmp_path / "devices.json"
    devices.write_text(json.dumps({
        "classes": [{"name": "host", "kind": "cpu", "count": 1, "pays_communication": False},
                    {"name": "old", "kind": "gpu", "count": 2}, {"name": "edge", "kind": "npu", "count": 1}],
        "roofline": {"gpu": {"preset": "v100", "peak_flops": 10e12}}}))
    out = tmp_path / "sq.json"
    code, text, err = run(capsys, "import", LIGHT / "light_squeezenet.onnx", "--out", out, "--devices", devices,
                          "--training", "--json")
    assert code == 0, err
    data = json.loads(text)
    assert data["kinds"] == ["cpu", "gpu", "npu"]
    g = load_graph(out)
    assert g.is_training and g.default_cluster.class_named("edge").memory == 8e6
    assert g.default_cluster.class_named("edge").link_factor == pytest.approx(16e9 / 0.5e9)
    conv = next(n for n in g.nodes() if n.op_type == "Conv" and not n.backward)
    assert conv.latency["gpu"] >= 1e3 * conv.flops / 10e12


@pytest.mark.parametrize("extra, fragment", [
    ([], "missing.onnx: file not found"),
    (["--devices", "DEV"], "kind 'tpu'"),
    (["--dim", "batch=zero"], "--dim 'batch=zero'"),
])
def test_import_errors_exit_2_with_one_line(capsys, tmp_path, extra, fragment):
    dev = tmp_path / "dev.json"
    dev.write_text(json.dumps({"classes": [{"name": "t", "kind": "tpu"}]}))
    model = "missing.onnx" if not extra else LIGHT / "light_squeezenet.onnx"
    extra = [str(dev) if a == "DEV" else a for a in extra]
    code, _, err = run(capsys, "import", model, "--out", tmp_path / "x.json", *extra)
    assert code == 2 and fragment in err and err.count("\n") == 1


def test_committed_samples_match_the_script(tmp_path):
    import runpy
    import sys
    repo = Path(__file__).resolve().parents[1]
    script = repo / "scripts" / "import_light_models.py"
    argv = sys.argv
    try:
        sys.argv = [str(script), "--out", str(tmp_path)]
        with pytest.raises(SystemExit) as done:
            runpy.run_path(str(script), run_name="__main__")
    finally:
        sys.argv = argv
    assert done.value.code == 0
    made = sorted(p.name for p in tmp_path.glob("onnx_*.json"))
    assert made and made == sorted(p.name for p in (repo / "sample_graphs").glob("onnx_*.json"))
    for name in made:
        fresh, committed = json.loads((tmp_path / name).read_text()), json.loads((repo / "sample_graphs" / name).read_text())
        assert fresh == committed, f"sample_graphs/{name} is stale: run scripts/import_light_models.py"
        assert (repo / "sample_graphs" / name).stat().st_size < 1.5e6
