"""Design sweeps without a cluster: cells, hashes, the results file, resume, the CLI's errors.

The Dask runs (a real scheduler and two workers) are in tests/test_sweep_dask.py.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from viz_place.errors import DeviceError, InputFormatError, SolverError
from viz_place.model import Cluster, DeviceClass
from viz_place.runtime.design_sweep import refine_bounds, sweep
from viz_place.runtime.sweep_cells import plan_cells, run_cell
from viz_place.runtime.sweep_store import COLUMNS, read_rows, repair_tail
from viz_place.samples import make_graph


@pytest.fixture(scope="module")
def chain():
    return make_graph("chain", 10, seed=0)


def test_cell_key_depends_on_graph_content_devices_solver_options_and_seed(chain):
    base = plan_cells({"a": chain}, ["local-search"], seeds=[0], time_limit=1.0)[0]
    same_content = plan_cells({"other name": make_graph("chain", 10, seed=0)}, ["local-search"], seeds=[0],
                              time_limit=1.0)[0]
    assert same_content.key == base.key          # the label is not part of the identity, the content is
    variants = [
        plan_cells({"a": make_graph("chain", 10, seed=1)}, ["local-search"], seeds=[0], time_limit=1.0)[0],
        plan_cells({"a": chain}, ["local-search"], seeds=[0], time_limit=1.0, accelerators=[3])[0],
        plan_cells({"a": chain}, ["local-search"], seeds=[1], time_limit=1.0)[0],
        plan_cells({"a": chain}, ["local-search"], seeds=[0], time_limit=2.0)[0],
        plan_cells({"a": chain}, ["rl"], seeds=[0], time_limit=1.0)[0],
    ]
    keys = {v.key for v in variants}
    assert base.key not in keys and len(keys) == len(variants)


def test_plan_grid_and_seed_collapse(chain):
    cells = plan_cells({"c": chain}, ["dp", "local-search"], accelerators=[1, 2, 4], seeds=[0, 1])
    # dp has no seed: one cell per count; local-search: one per count and seed
    assert sorted((c.solver, c.accelerators, c.seed) for c in cells) == sorted(
        [("dp", n, None) for n in (1, 2, 4)] + [("local-search", n, s) for n in (1, 2, 4) for s in (0, 1)])
    assert {Cluster.from_dict(c.devices).class_named("fpga").count for c in cells} == {1, 2, 4}
    assert all(c.options.get("seed") == c.seed for c in cells if c.solver == "local-search")


def test_plan_errors_name_the_culprit(chain):
    with pytest.raises(SolverError, match="unknown solver 'nope'"):
        plan_cells({"c": chain}, ["nope"])
    with pytest.raises(SolverError, match=r"option\(s\) \['bogus'\] belong to none"):
        plan_cells({"c": chain}, ["dp"], options={"bogus": 1})
    with pytest.raises(SolverError, match="whole numbers >= 0"):
        plan_cells({"c": chain}, ["dp"], accelerators=[-1])
    two = Cluster((DeviceClass("gpu", "fpga", 2), DeviceClass("tpu", "fpga", 1),
                   DeviceClass("cpu", "cpu", 1, pays_communication=False)))
    with pytest.raises(DeviceError, match="several accelerator classes \\(gpu, tpu\\).*--vary"):
        plan_cells({"c": chain}, ["dp"], accelerators=[1], device_sets=[two])
    with pytest.raises(DeviceError, match="--vary 'npu' is not a device class"):
        plan_cells({"c": chain}, ["dp"], accelerators=[1], device_sets=[two], vary="npu")
    cells = plan_cells({"c": chain}, ["dp"], accelerators=[1, 3], device_sets=[two], vary="tpu")
    assert [Cluster.from_dict(c.devices).class_named("tpu").count for c in cells] == [1, 3]


def test_bad_cell_is_an_error_row_not_an_exception(chain):
    tiny = Cluster((DeviceClass("fpga", "fpga", 1, memory=0.5), DeviceClass("cpu", "cpu", 0, pays_communication=False)))
    big = make_graph("chain", 10, seed=0)
    cell = plan_cells({"c": big}, ["dp"], device_sets=[tiny])[0]
    row = run_cell(big, cell)
    assert row["status"] == "error" and row["message"] and row["value"] is None


def test_results_file_append_torn_tail_and_resume(tmp_path, chain):
    out = tmp_path / "r.csv"
    t1 = sweep([chain], ["dp", "topo-fill"], accelerators=[1, 2], workers=0, out=out)
    assert len(t1) == 4 and t1.skipped == 0
    rows = read_rows(out)
    assert [r["key"] for r in rows] == [r["key"] for r in t1]
    assert all(r[c] == t1[i][c] for i, r in enumerate(rows) for c in ("value", "status", "seconds", "worker"))
    with pytest.raises(InputFormatError, match="exists; pass --resume"):
        sweep([chain], ["dp"], workers=0, out=out)
    # a kill during a write leaves a torn line: it is cut, the rows before it are kept
    with open(out, "a") as fh:
        fh.write("chain,fpga\u00d71,dp,{},1.0,opt")
    t2 = sweep([chain], ["dp", "topo-fill"], accelerators=[1, 2, 3], workers=0, out=out, resume=True)
    assert t2.skipped == 4 and len(t2) == 6
    again = {r["key"]: r for r in read_rows(out)}
    assert len(again) == 6 and len(read_rows(out)) == 6
    for r in t1:   # finished rows were not recomputed: same timing, same worker
        assert again[r["key"]]["seconds"] == r["seconds"]


def test_repair_tail(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text(",".join(COLUMNS) + "\nabc")
    assert repair_tail(p) == 3 and p.read_text().endswith("\n")
    assert read_rows(p) == []


def test_not_a_results_file(tmp_path, chain):
    p = tmp_path / "other.csv"
    p.write_text("a,b\n1,2\n")
    with pytest.raises(InputFormatError, match="not a viz-place sweep results file"):
        sweep([chain], ["dp"], workers=0, out=p, resume=True)


def test_refine_bounds_uses_the_best_any_placement_bound_of_the_same_cell_group():
    rows = [{"graph_hash": "g", "devices_json": {"d": 1}, "objective": "max_load", "options": {},
             "value": 12.0, "bound": 8.0, "bound_source": "simple"},
            {"graph_hash": "g", "devices_json": {"d": 1}, "objective": "max_load", "options": {},
             "value": 10.0, "bound": 10.0, "bound_source": "ilp-noncontig (proven for any placement)"},
            {"graph_hash": "g", "devices_json": {"d": 2}, "objective": "max_load", "options": {},
             "value": 9.0, "bound": 3.0, "bound_source": "simple"}]
    refine_bounds(rows)
    assert [r["bound"] for r in rows] == [10.0, 10.0, 3.0]
    assert rows[0]["gap"] == pytest.approx(0.2) and rows[1]["gap"] == 0.0 and rows[2]["gap"] == pytest.approx(2.0)


def test_python_entry_is_viz_place_sweep(chain):
    import viz_place
    t = viz_place.sweep({"c": chain}, ["pipedream"], accelerators=[2], workers=0)
    assert t.series() == {"pipedream": ([2], [t[0]["value"]])}


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "viz_place", *args], capture_output=True, text=True, timeout=120)


def test_cli_json_stdout_is_pure_and_progress_goes_to_stderr(tmp_path):
    r = _cli("sweep", "--graphs", "chain", "--solvers", "dp,topo-fill", "--accelerators", "1,2", "--workers", "0",
             "--json", "--out", str(tmp_path / "r.csv"))
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert len(data["rows"]) == 4 and {row["solver"] for row in data["rows"]} == {"dp", "topo-fill"}
    assert "4/4 cells" in r.stderr


@pytest.mark.parametrize("args, message", [
    (("--graphs", "chain", "--solvers", "nope"), "unknown solver 'nope'"),
    (("--graphs", "no_such_graph.json", "--solvers", "dp"), "no_such_graph.json"),
    (("--graphs", "chain", "--solvers", "dp", "--accelerators", "1,x"), "--accelerators '1,x'"),
    (("--graphs", "chain", "--solvers", "dp", "--resume"), "--resume needs --out"),
    (("--graphs", "chain", "--solvers", "dp", "--scheduler", "tcp://127.0.0.1:9"), "cannot reach the Dask scheduler"),
])
def test_cli_bad_input_is_one_line_exit_2(args, message):
    r = _cli("sweep", *args)
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and message in lines[0], r.stderr


def test_cli_devices_grid_and_vary(tmp_path):
    grid = [{"classes": [{"name": "gpu", "kind": "fpga", "count": 1}, {"name": "tpu", "kind": "fpga", "count": 1,
                                                                       "speed": 2.0},
                         {"name": "cpu", "kind": "cpu", "count": 1, "pays_communication": False}]},
            {"maxFPGAs": 2, "maxCPUs": 1, "maxSizePerFPGA": None}]
    path = tmp_path / "grid.json"
    path.write_text(json.dumps(grid))
    r = _cli("sweep", "--graphs", "chain", "--solvers", "dp", "--devices-grid", str(path), "--workers", "0", "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["rows"]
    assert [row["devices"] for row in rows] == ["gpu\u00d71 + tpu\u00d71 + cpu\u00d71", "fpga\u00d72 + cpu\u00d71"]
    assert [row["status"] for row in rows] == ["optimal", "optimal"]
    # varying a count needs the class when a device set has several accelerator classes
    r = _cli("sweep", "--graphs", "chain", "--solvers", "dp", "--devices-grid", str(path), "--accelerators", "1,2",
             "--workers", "0")
    assert r.returncode == 2 and "several accelerator classes (gpu, tpu)" in r.stderr
    path.write_text(json.dumps(grid[:1]))
    r = _cli("sweep", "--graphs", "chain", "--solvers", "dp", "--devices-grid", str(path), "--accelerators", "1,3",
             "--vary", "tpu", "--workers", "0", "--json")
    assert r.returncode == 0, r.stderr
    assert [row["accelerators"] for row in json.loads(r.stdout)["rows"]] == [1, 3]
    path.write_text("[{\"classes\": [{\"name\": \"gpu\", \"kind\": \"fpga\", \"count\": -1}]}]")
    r = _cli("sweep", "--graphs", "chain", "--solvers", "dp", "--devices-grid", str(path), "--workers", "0")
    assert r.returncode == 2 and "device set #0" in r.stderr and "'count'" in r.stderr


def test_a_scheduler_without_workers_is_a_clear_error(chain):
    from distributed import LocalCluster
    from viz_place.runtime.dask_engine import EngineError
    with LocalCluster(n_workers=0, processes=False, dashboard_address="127.0.0.1:0") as c:
        with pytest.raises(EngineError, match="has no workers .*dask worker"):
            from viz_place.runtime.dask_engine import DaskEngine
            DaskEngine(c.scheduler_address, timeout=1)


def test_bound_and_gap_use_only_bounds_valid_for_every_placement():
    from viz_place.cost.bounds import simple_lower_bound
    g = make_graph("residual", 16, seed=2)
    t = sweep({"r": g}, ["dp", "topo-fill", "ilp-noncontig"], accelerators=[2], workers=0, time_limit=30)
    rows = {r["solver"]: r for r in t}
    ilp, dp = rows["ilp-noncontig"], rows["dp"]
    assert ilp["status"] == "optimal" and ilp["solver_bound_set"] == "any" and ilp["gap"] == pytest.approx(0, abs=1e-6)
    assert dp["solver_bound_set"] == "pipeline" and dp["solver_bound"] == pytest.approx(dp["value"])
    simple, _ = simple_lower_bound(g, Cluster.from_dict(t[0]["devices_json"]), "max_load")
    for r in t:      # one bound for the cell group: the best of the simple bound and the proven-for-any ones
        assert r["bound"] == pytest.approx(max(simple, ilp["solver_bound"]))
        assert r["gap"] == pytest.approx(r["value"] / r["bound"] - 1) and r["gap"] >= -1e-9
    # heuristics alone: the simple bound
    t2 = sweep({"r": g}, ["topo-fill"], accelerators=[2], workers=0)
    assert t2[0]["bound"] == pytest.approx(simple) and t2[0]["bound_source"]
