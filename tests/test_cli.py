"""The CLI contract: names, JSON fields, exit status 2 with one line on errors."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from viz_place.cli.main import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_info_json_fields(capsys):
    code, out, _ = run(capsys, "info", "residual_training", "--json")
    data = json.loads(out)
    assert code == 0
    for key in ("nodes", "edges", "forward_nodes", "backward_nodes", "devices", "flops"):
        assert key in data
    assert data["forward_nodes"] == data["backward_nodes"] == data["nodes"] // 2
    assert data["devices"][0]["name"] == "fpga" and data["devices"][0]["count"] == 4
    assert isinstance(data["flops"], float)


def test_evaluate_json_fields(capsys, tmp_path):
    p = tmp_path / "p.json"
    from viz_place.samples import load_sample
    g = load_sample("chain")
    p.write_text(json.dumps({"assignment": {n: f"fpga:{i * 4 // g.num_nodes}" for i, n in enumerate(g.node_ids)}}))
    code, out, _ = run(capsys, "evaluate", "chain", str(p), "--json")
    data = json.loads(out)
    assert code == 0
    for key in ("max_load", "throughput", "latency", "feasible", "violations", "bottleneck", "devices"):
        assert key in data
    assert set(data["devices"][0]) >= {"name", "load", "compute", "communication", "memory", "memory_capacity"}
    assert data["feasible"] is True and data["bottleneck"].startswith("fpga:")


def test_evaluate_paper_split(capsys, workloads):
    g = workloads / "throughput-inputs/LayerGraphs/gnmt_training.json"
    s = workloads / "human-experts/gnmt_inference_expert.json"
    code, out, _ = run(capsys, "evaluate", str(g), str(s), "--json")
    assert code == 0 and json.loads(out)["max_load"] == pytest.approx(137.153902, rel=1e-6)


@pytest.mark.parametrize("argv, fragment", [
    (["info", "no_such_graph.json"], "no_such_graph.json: file not found"),
    (["evaluate", "chain", "missing_placement.json"], "missing_placement.json: file not found"),
    (["info", "chain", "--devices", "nope.json"], "nope.json: file not found"),
    (["solve", "chain", "--solver", "no-such-solver"], "unknown solver 'no-such-solver'"),
])
def test_errors_exit_2_with_one_line(capsys, argv, fragment):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert fragment in err and err.count("\n") == 1 and "Traceback" not in err


def test_bad_device_file_names_the_field(capsys, tmp_path):
    d = tmp_path / "d.json"
    d.write_text(json.dumps({"classes": [{"name": "gpu", "kind": "fpga", "count": -2}]}))
    code, _, err = run(capsys, "info", "chain", "--devices", str(d))
    assert code == 2 and "device class 'gpu': field 'count'" in err


def test_console_script_runs_as_module():
    r = subprocess.run([sys.executable, "-m", "viz_place", "info", "nope.json"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.strip() == "viz-place: error: nope.json: file not found"
