"""The CLI with the integer programs and the baselines: solve, compare, solvers."""
from __future__ import annotations

import json

import pytest

from viz_place.cli.main import main
from viz_place.solvers.milp import available_backends

BACKEND = "highs" if "highs" in available_backends() else "cbc"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_solve_ilp_with_flags_json(capsys):
    code, out, _ = run(capsys, "solve", "residual", "--solver", "ilp", "--time-limit", "3", "--gap", "0.01",
                       "--backend", BACKEND, "--json")
    assert code == 0
    data = json.loads(out)
    assert data["solver"] == "ilp" and data["feasible"] is True
    assert data["status"] in ("optimal", "feasible")
    assert data["options"]["time_limit"] == 3 and data["options"]["gap"] == 0.01
    assert data["options"]["backend"] == BACKEND
    assert data["value"] == pytest.approx(data["max_load"], rel=1e-9)


def test_solve_latency_ilp_with_pieces_option(capsys, tmp_path):
    out_file = tmp_path / "p.json"
    code, out, _ = run(capsys, "solve", "chain", "--solver", "latency-ilp", "--backend", BACKEND, "--time-limit", "3",
                       "-o", "max_pieces_per_accelerator=2", "--out", str(out_file))
    assert code == 0
    assert "latency-ilp: latency value" in out
    saved = json.loads(out_file.read_text())
    assert saved["solver"] == "latency-ilp" and saved["options"]["max_pieces_per_accelerator"] == 2
    # the saved split loads back through the expert solver with the same latency
    code, out, _ = run(capsys, "solve", "chain", "--solver", "expert", "-o", f"path={out_file}",
                       "-o", "objective=latency", "--json")
    assert code == 0
    assert json.loads(out)["value"] == pytest.approx(saved["value"], rel=1e-9)


def test_compare_table_and_json(capsys):
    names = "ilp,ilp-noncontig,pipedream,topo-fill,single-device,local-search,greedy-latency"
    code, out, _ = run(capsys, "compare", "chain", "--solvers", names, "--time-limit", "2", "--backend", BACKEND,
                       "--json")
    assert code == 0
    rows = {r["solver"]: r for r in json.loads(out)}
    assert set(rows) == set(names.split(","))
    assert rows["ilp-noncontig"]["value"] <= rows["ilp"]["value"] + 1e-9
    for name in ("pipedream", "topo-fill", "local-search"):
        assert rows[name]["ratio_to_best"] >= 1 - 1e-9
        assert rows[name]["value"] >= rows["ilp-noncontig"]["value"] - 1e-9 or rows["ilp-noncontig"]["status"] != "optimal"
    code, out, _ = run(capsys, "compare", "chain", "--solvers", "pipedream,topo-fill")
    assert code == 0 and "pipedream" in out and "ratio" in out


def test_json_stdout_is_clean_in_a_real_process():
    """HiGHS prints a banner on stdout when created; the adapter keeps it out of --json output."""
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-m", "viz_place", "solve", "chain", "--solver", "ilp", "--backend", BACKEND,
                           "--time-limit", "2", "--json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["solver"] == "ilp"


def test_bad_backend_is_one_line_exit_2(capsys):
    code, out, err = run(capsys, "solve", "chain", "--solver", "ilp", "--backend", "gurobi")
    assert code == 2
    assert err.count("\n") == 1 and "backend" in err


def test_flag_a_baseline_lacks_is_refused(capsys):
    code, _, err = run(capsys, "solve", "chain", "--solver", "pipedream", "--time-limit", "3")
    assert code == 2 and "--time-limit" in err


def test_solvers_lists_ours_with_options(capsys):
    code, out, _ = run(capsys, "solvers", "--json")
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)}
    for name in ("ilp", "ilp-noncontig", "latency-ilp", "greedy-latency", "local-search", "pipedream",
                 "single-device", "topo-fill", "expert"):
        assert name in rows
    opts = {o["name"]: o for o in rows["ilp"]["options"]}
    assert {"time_limit", "gap", "backend", "contiguous", "objective"} <= set(opts)
    noncontig = {o["name"]: o for o in rows["ilp-noncontig"]["options"]}
    assert noncontig["contiguous"]["default"] is False and opts["contiguous"]["default"] is True
    assert "max_pieces_per_accelerator" in {o["name"] for o in rows["latency-ilp"]["options"]}
