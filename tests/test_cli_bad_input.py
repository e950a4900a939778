"""Bad input, one table: every case exits 2 with exactly one line on stderr naming the problem,
no traceback, and writes nothing (issue #13, "Bad input").

Each row is ``(id, argv, files, fragment)``: ``files`` maps file names to their
content (a JSON-able object, or raw text for what JSON cannot hold: NaN,
Infinity, deep nesting, syntax errors), written into a fresh folder; ``{d}``
in ``argv`` is that folder. Commands that can write get ``--out {d}/out.json``
(or ``out.npz``), and the test checks that no file at all appeared.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from viz_place.cli.main import main

PAPER = {"maxFPGAs": 2, "maxCPUs": 1, "maxSizePerFPGA": 10.0,
         "nodes": [{"id": 1, "cpuLatency": 2.0, "fpgaLatency": 1.0, "isBackwardNode": 0, "supportedOnFpga": 1,
                    "size": 1.0},
                   {"id": 2, "cpuLatency": 3.0, "fpgaLatency": 1.5, "isBackwardNode": 0, "supportedOnFpga": 1,
                    "size": 1.0},
                   {"id": 3, "cpuLatency": 1.0, "fpgaLatency": 0.5, "isBackwardNode": 0, "supportedOnFpga": 1,
                    "size": 1.0}],
         "edges": [{"sourceId": 1, "destId": 2, "cost": 0.5}, {"sourceId": 2, "destId": 3, "cost": 0.25}]}


def paper(**changes) -> dict:
    """PAPER with top-level fields replaced, ``node0_<field>``/``edge0_<field>`` replacing one field."""
    d = json.loads(json.dumps(PAPER))
    for key, value in changes.items():
        if key.startswith(("node0_", "edge0_")):
            what, field = key.split("_", 1)
            d["nodes" if what == "node0" else "edges"][0][field] = value
        else:
            d[key] = value
    return d


def paper_text(**raw) -> str:
    """PAPER as text with ``"node0_cpuLatency": "NaN"``-style raw JSON tokens substituted."""
    d = paper(**{k: f"@@{k}@@" for k in raw})
    text = json.dumps(d)
    for k, token in raw.items():
        text = text.replace(f'"@@{k}@@"', token)
    return text


NODELINK = {"format": "viz_place.graph/1", "nodes": [{"id": "a", "latency": {"cpu": 1.0}},
                                                      {"id": "b", "latency": {"cpu": 1.0}}],
            "edges": [{"source": "a", "target": "b"}],
            "default_cluster": {"classes": [{"name": "cpu", "kind": "cpu", "count": 1, "pays_communication": False}]}}


def nodelink(node0=None, **top) -> dict:
    d = json.loads(json.dumps(NODELINK))
    if node0:
        d["nodes"][0].update(node0)
    d.update(top)
    return d


def devices(**fields) -> dict:
    return {"classes": [{"name": "gpu", "kind": "fpga", "count": 2, **fields},
                        {"name": "cpu", "kind": "cpu", "count": 1, "pays_communication": False}]}


DEEP = "[" * 100_000 + "]" * 100_000
G = ["{d}/g.json"]                       # the graph argument: the file "g.json"
OUT = ["--out", "{d}/out.json"]
CHAIN_OK = {"assignment": {}}            # filled in by the fixture (every chain node on fpga:0)

CASES = [
    # --- item 9: option values, in one place (SolverOptions) and the flags ---------------------
    ("max_ideals-text", ["solve", "chain", "--solver", "dp", "-o", "max_ideals=lots", *OUT], {},
     "option 'max_ideals': expected a whole number, got 'lots'"),
    ("max_ideals-list", ["solve", "chain", "--solver", "dp", "-o", "max_ideals=[1,2]", *OUT], {},
     "option 'max_ideals': expected a whole number, got [1, 2]"),
    ("max_ideals-fraction", ["solve", "chain", "--solver", "dp", "-o", "max_ideals=2.7", *OUT], {},
     "option 'max_ideals': expected a whole number, got 2.7"),
    ("time_limit-null", ["solve", "chain", "--solver", "ilp", "-o", "time_limit=null", *OUT], {},
     "option 'time_limit': expected a number, got None"),
    ("pieces-text", ["solve", "chain", "--solver", "latency-ilp", "-o", "max_pieces_per_accelerator=x", *OUT], {},
     "option 'max_pieces_per_accelerator': expected a whole number"),
    ("ls-time_limit-text", ["solve", "chain", "--solver", "local-search", "-o", "time_limit=soon", *OUT], {},
     "option 'time_limit': expected a number, got 'soon'"),
    ("compare-bad-option", ["compare", "chain", "--solvers", "dp,pipedream", "-o", "max_ideals=lots"], {},
     "option 'max_ideals': expected a whole number"),
    ("compare-option-of-none", ["compare", "chain", "--solvers", "pipedream,topo-fill", "-o", "max_ideals=5"], {},
     "option(s) ['max_ideals'] belong to none of the solvers"),
    ("flag-time-limit-nan", ["solve", "chain", "--solver", "dp", "--time-limit", "nan", *OUT], {},
     "argument --time-limit: expected a finite number, got 'nan'"),
    ("flag-gap-nan", ["solve", "chain", "--solver", "ilp", "--gap", "nan", *OUT], {},
     "argument --gap: expected a finite number, got 'nan'"),
    ("rl-lr-nan", ["solve", "chain", "--solver", "rl", "-o", "lr=NaN", *OUT], {},
     "option 'lr': expected a finite number, got nan"),
    ("rl-time-limit-inf", ["solve", "chain", "--solver", "rl", "--time-limit", "inf", *OUT], {},
     "argument --time-limit: expected a finite number, got 'inf'"),
    ("option-time_limit-1e999", ["solve", "chain", "--solver", "local-search", "-o", "time_limit=1e999", *OUT], {},
     "option 'time_limit': expected a finite number, got inf"),
    ("bool-3", ["solve", "chain", "--solver", "dp", "-o", "contract_layers=3", *OUT], {},
     "option 'contract_layers': expected true or false, got 3"),
    ("bool-maybe", ["solve", "chain", "--solver", "dp", "-o", "contract_layers=maybe", *OUT], {},
     "option 'contract_layers': expected true or false, got 'maybe'"),
    ("int-true", ["solve", "chain", "--solver", "local-search", "-o", "seed=true", *OUT], {},
     "option 'seed': expected a whole number, got True"),
    ("time-limit-0-dp", ["solve", "chain", "--solver", "dp", "--time-limit", "0", *OUT], {},
     "argument --time-limit: a time limit must be positive"),
    ("time-limit-0-ilp", ["solve", "chain", "--solver", "ilp", "--time-limit", "0", *OUT], {},
     "argument --time-limit: a time limit must be positive"),
    ("time-limit-0-local-search", ["solve", "chain", "--solver", "local-search", "--time-limit", "0", *OUT], {},
     "argument --time-limit: a time limit must be positive"),
    ("time-limit-0-rl", ["solve", "chain", "--solver", "rl", "--time-limit", "0", *OUT], {},
     "argument --time-limit: a time limit must be positive"),
    ("time-limit-0-compare", ["compare", "chain", "--solvers", "dp,rl", "--time-limit", "0"], {},
     "argument --time-limit: a time limit must be positive"),
    ("option-time_limit-0-dp", ["solve", "chain", "--solver", "dp", "-o", "time_limit=0", *OUT], {},
     "option 'time_limit': 0.0 seconds: a time limit must be positive"),
    ("option-time_limit-0-rl", ["solve", "chain", "--solver", "rl", "-o", "time_limit=0", *OUT], {},
     "option 'time_limit': 0.0 seconds: a time limit must be positive"),
    ("time-limit-negative", ["solve", "chain", "--solver", "dp", "--time-limit", "-5", *OUT], {},
     "argument --time-limit: a time limit must be positive"),
    ("time-limit-text", ["solve", "chain", "--solver", "dp", "--time-limit", "soon", *OUT], {},
     "argument --time-limit: expected a number, got 'soon'"),
    ("seed-negative", ["solve", "chain", "--solver", "local-search", "--seed", "-1", *OUT], {},
     "option 'seed': -1 is below the minimum 0"),
    ("gap-above-1", ["solve", "chain", "--solver", "ilp", "--gap", "2", *OUT], {},
     "option 'gap': 2.0 is above the maximum 1.0"),
    ("backend-unknown", ["solve", "chain", "--solver", "ilp", "--backend", "gurobi", *OUT], {},
     "option 'backend': 'gurobi' is not one of"),
    ("objective-unknown", ["solve", "chain", "--solver", "ilp", "-o", "objective=speed", *OUT], {},
     "option 'objective': 'speed' is not one of"),
    ("rl-mode-unknown", ["solve", "chain", "--solver", "rl", "-o", "mode=fast", *OUT], {},
     "option 'mode': 'fast' is not one of"),
    ("option-unknown", ["solve", "chain", "--solver", "dp", "-o", "speed=1", *OUT], {},
     "unknown option(s) ['speed']"),
    ("option-no-equals", ["solve", "chain", "--solver", "dp", "-o", "max_ideals", *OUT], {},
     "--option 'max_ideals': expected KEY=VALUE"),
    ("option-deep", ["solve", "chain", "--solver", "dp", "-o", "max_ideals=" + DEEP[:200_000], *OUT], {},
     "VALUE is nested too deeply"),
    ("flag-solver-lacks", ["solve", "chain", "--solver", "topo-fill", "--time-limit", "5", *OUT], {},
     "solver 'topo-fill' has no option for --time-limit"),
    ("solver-unknown", ["solve", "chain", "--solver", "no-such-solver", *OUT], {}, "unknown solver 'no-such-solver'"),
    ("format-unknown", ["solve", "chain", "--solver", "dp", "--format", "xml", *OUT], {},
     "argument --format: invalid choice: 'xml'"),
    # --- item 10: graph input ------------------------------------------------------------------
    ("cpuLatency-null", ["info", *G], {"g.json": paper(node0_cpuLatency=None)},
     "node '1': field 'cpuLatency' must be a number, got None"),
    ("fpgaLatency-null", ["solve", *G, "--solver", "dp", *OUT], {"g.json": paper(node0_fpgaLatency=None)},
     "node '1': field 'fpgaLatency' must be a number, got None"),
    ("cpuLatency-text", ["info", *G], {"g.json": paper(node0_cpuLatency="fast")},
     "field 'cpuLatency' must be a number, got 'fast'"),
    ("cpuLatency-negative", ["info", *G], {"g.json": paper(node0_cpuLatency=-1.0)},
     "node '1': latency on 'cpu' is negative"),
    ("cpuLatency-NaN", ["info", *G], {"g.json": paper_text(node0_cpuLatency="NaN")},
     "node '1': latency on 'cpu' is NaN"),
    ("cpuLatency-Infinity", ["info", *G], {"g.json": paper_text(node0_cpuLatency="Infinity")},
     "node '1': latency on 'cpu' is infinite"),
    ("size-null", ["info", *G], {"g.json": paper(node0_size=None)}, "node '1': field 'size' must be a number"),
    ("size-negative", ["info", *G], {"g.json": paper(node0_size=-5)}, "node '1': field 'size' is negative"),
    ("isBackwardNode-maybe", ["info", *G], {"g.json": paper(node0_isBackwardNode="maybe")},
     "field 'isBackwardNode' must be 0 or 1 (or true/false), got 'maybe'"),
    ("supportedOnFpga-3", ["info", *G], {"g.json": paper(node0_supportedOnFpga=3)},
     "field 'supportedOnFpga' must be 0 or 1"),
    ("maxFPGAs-fraction", ["solve", *G, "--solver", "dp", *OUT], {"g.json": paper(maxFPGAs=2.7)},
     "field 'maxFPGAs' must be a whole number >= 0, got 2.7"),
    ("maxFPGAs-Infinity", ["info", *G], {"g.json": paper_text(maxFPGAs="Infinity")},
     "field 'maxFPGAs' must be a whole number >= 0, got inf"),
    ("maxFPGAs-negative", ["info", *G], {"g.json": paper(maxFPGAs=-1)}, "field 'maxFPGAs' must be a whole number"),
    ("maxCPUs-text", ["info", *G], {"g.json": paper(maxCPUs="two")}, "field 'maxCPUs' must be a whole number"),
    ("maxFPGAs-huge", ["info", *G], {"g.json": paper(maxFPGAs=10**6)}, "at most 4096 devices per class"),
    ("maxSizePerFPGA-negative", ["info", *G], {"g.json": paper(maxSizePerFPGA=-3)},
     "field 'maxSizePerFPGA' must be a number >= 0 or null (unlimited)"),
    ("maxSizePerFPGA-NaN", ["info", *G], {"g.json": paper_text(maxSizePerFPGA="NaN")},
     "field 'maxSizePerFPGA' must be a number >= 0 or null"),
    ("edge-cost-negative", ["info", *G], {"g.json": paper(edge0_cost=-1)},
     "edge 1 -> 2: field 'cost' must be a number >= 0"),
    ("edge-cost-null", ["info", *G], {"g.json": paper(edge0_cost=None)}, "edge 1 -> 2: field 'cost' must be a number"),
    ("edge-unknown-node", ["info", *G], {"g.json": paper(edge0_destId=9)}, "edge 1 -> 9: unknown destination node '9'"),
    ("edge-cycle", ["info", *G],
     {"g.json": paper(edges=PAPER["edges"] + [{"sourceId": 3, "destId": 1, "cost": 0.1}])}, "graph has a cycle"),
    ("edge-self-loop", ["info", *G], {"g.json": paper(edge0_destId=1)}, "edge 1 -> 1: self-loop"),
    ("edge-duplicate", ["info", *G], {"g.json": paper(edges=PAPER["edges"] + [PAPER["edges"][0]])},
     "edge 1 -> 2: duplicate edge"),
    ("edge-two-costs", ["info", *G],
     {"g.json": paper(edges=PAPER["edges"] + [{"sourceId": 1, "destId": 3, "cost": 0.7}])},
     "node '1' has two different outgoing edge costs"),
    ("node-duplicate-id", ["info", *G], {"g.json": paper(nodes=PAPER["nodes"] + [PAPER["nodes"][0]])},
     "duplicate node id '1'"),
    ("node-missing-field", ["info", *G],
     {"g.json": paper(nodes=[{k: v for k, v in PAPER["nodes"][0].items() if k != "cpuLatency"}] + PAPER["nodes"][1:])},
     "missing field 'cpuLatency'"),
    ("graph-missing-maxFPGAs", ["info", *G], {"g.json": {k: v for k, v in PAPER.items() if k != "maxFPGAs"}},
     "missing field 'maxFPGAs'"),
    ("backward-to-forward", ["info", *G],
     {"g.json": paper(nodes=[dict(PAPER["nodes"][0], isBackwardNode=1)] + PAPER["nodes"][1:])},
     "edge 1 -> 2: goes from a backward node to a forward node"),
    ("graph-empty", ["solve", *G, "--solver", "rl", *OUT], {"g.json": paper(nodes=[], edges=[])},
     "graph has no nodes"),
    ("graph-deep-json", ["info", *G], {"g.json": DEEP}, "g.json: JSON nested too deeply to read"),
    ("graph-bad-syntax", ["info", *G], {"g.json": "{ not json"}, "g.json: invalid JSON at line 1"),
    ("graph-not-a-graph", ["info", *G], {"g.json": {"hello": 1}}, "not a graph file"),
    ("graph-missing-file", ["info", "{d}/nope.json"], {}, "nope.json: file not found"),
    ("graph-is-directory", ["info", "{d}"], {}, "is a directory, expected a file"),
    ("nodelink-backward-maybe", ["info", *G], {"g.json": nodelink({"backward": "maybe"})},
     "node 'a': field 'backward' must be true or false, got 'maybe'"),
    ("nodelink-latency-null", ["info", *G], {"g.json": nodelink({"latency": {"cpu": None}})},
     "node 'a': latency on 'cpu' must be a number, got None"),
    ("nodelink-unknown-attribute", ["info", *G], {"g.json": nodelink({"colour": "red"})},
     "node 'a': unknown attribute(s) ['colour']"),
    ("nodelink-empty", ["info", *G], {"g.json": nodelink(nodes=[], edges=[])}, "graph has no nodes"),
    # --- devices files -------------------------------------------------------------------------
    ("devices-count-negative", ["info", "chain", "--devices", "{d}/dev.json"], {"dev.json": devices(count=-2)},
     "device class 'gpu': field 'count'"),
    ("devices-memory-negative", ["solve", "chain", "--solver", "dp", "--devices", "{d}/dev.json", *OUT],
     {"dev.json": devices(memory=-3)}, "device class 'gpu': field 'memory'"),
    ("devices-memory-text", ["info", "chain", "--devices", "{d}/dev.json"], {"dev.json": devices(memory="lots")},
     "device class 'gpu': field 'memory' must be a number >= 0 or null (unlimited)"),
    ("devices-speed-zero", ["info", "chain", "--devices", "{d}/dev.json"], {"dev.json": devices(speed=0)},
     "device class 'gpu': field 'speed'"),
    ("devices-pays-yes", ["info", "chain", "--devices", "{d}/dev.json"],
     {"dev.json": devices(pays_communication="yes")}, "field 'pays_communication' must be true or false"),
    ("devices-unknown-field", ["info", "chain", "--devices", "{d}/dev.json"], {"dev.json": devices(colour=1)},
     "unknown field(s) ['colour']"),
    ("devices-classes-not-list", ["info", "chain", "--devices", "{d}/dev.json"], {"dev.json": {"classes": 3}},
     "field 'classes' must be a list"),
    ("devices-deep-json", ["info", "chain", "--devices", "{d}/dev.json"], {"dev.json": DEEP},
     "dev.json: JSON nested too deeply"),
    # --- item 11: everything else --------------------------------------------------------------
    ("import-unknown-dim", ["import", "{d}/m.onnx", "--dim", "nosuchdim=4", *OUT], {"m.onnx": "ONNX"},
     "'nosuchdim' are not symbolic input dimensions of this model; its symbolic dimensions: batch"),
    ("import-dim-zero", ["import", "{d}/m.onnx", "--dim", "batch=0", *OUT], {"m.onnx": "ONNX"},
     "--dim 'batch=0': expected NAME=VALUE"),
    ("import-missing-model", ["import", "{d}/missing.onnx", *OUT], {}, "missing.onnx: file not found"),
    ("compare-empty-list", ["compare", "chain", "--solvers", ","], {}, "--solvers ',': no solver names given"),
    ("compare-all-fail", ["compare", *G, "--solvers", "dp,pipedream,ilp", "--devices", "{d}/dev.json"],
     {"g.json": PAPER, "dev.json": {"classes": [{"name": "gpu", "kind": "fpga", "count": 1, "memory": 0.5}]}},
     "every solver failed: dp:"),
    ("placement-device-beyond-count", ["evaluate", "chain", "{d}/p.json"], {"p.json": "CHAIN fpga:9"},
     "on unknown device 'fpga:9'"),
    ("placement-file-pin-unknown-device", ["evaluate", "chain", "{d}/p.json"], {"p.json": "CHAIN fpga:0 PIN fpga:7"},
     "pinned to unknown device 'fpga:7'"),
    ("placement-file-pin-unknown-node", ["evaluate", "chain", "{d}/p.json"], {"p.json": "CHAIN fpga:0 PINNODE zz"},
     "pin: unknown node 'zz'"),
    ("pins-flag-unknown-device", ["solve", "chain", "--solver", "dp", "--pins", "{d}/pins.json", *OUT],
     {"pins.json": "PINS fpga:7"}, "pinned to unknown device 'fpga:7'"),
    ("pins-flag-unknown-node", ["solve", "chain", "--solver", "dp", "--pins", "{d}/pins.json", *OUT],
     {"pins.json": {"zz": "fpga:0"}}, "pin: unknown node 'zz'"),
    ("placement-unknown-node", ["evaluate", "chain", "{d}/p.json"], {"p.json": "CHAIN fpga:0 EXTRA zz"},
     "unknown node(s) 'zz'"),
    ("placement-incomplete", ["evaluate", "chain", "{d}/p.json"], {"p.json": {"assignment": {}}}, "are not placed"),
    ("placement-device-not-text", ["evaluate", "chain", "{d}/p.json"], {"p.json": {"assignment": {"0": 5}}},
     "is assigned to 5, expected a device name"),
    ("placement-options-not-object", ["evaluate", "chain", "{d}/p.json"], {"p.json": "CHAIN fpga:0 FIELD options=3"},
     "field 'options' must be an object or null, got 3"),
    ("placement-wall-time-text", ["evaluate", "chain", "{d}/p.json"], {"p.json": "CHAIN fpga:0 FIELD wall_time=soon"},
     "field 'wall_time' must be a number or null, got 'soon'"),
    ("placement-not-a-placement", ["evaluate", "chain", "{d}/p.json"], {"p.json": {"hello": 1}}, "not a placement"),
    ("placement-deep-json", ["evaluate", "chain", "{d}/p.json"], {"p.json": DEEP}, "p.json: JSON nested too deeply"),
    ("split-unknown-node", ["evaluate", *G, "{d}/s.json"],
     {"g.json": PAPER, "s.json": {"maxLoad": 1, "cpus": [{"nodes": [1, 2, 3, 99]}], "fpgas": []}},
     "lists unknown node '99'"),
    ("expert-device-beyond-count", ["solve", "chain", "--solver", "expert", "-o", "path={d}/p.json", *OUT],
     {"p.json": "CHAIN fpga:9"}, "on unknown device 'fpga:9'"),
    ("out-unwritable", ["solve", "chain", "--solver", "topo-fill", "--out", "/proc/viz_place_test/x.json"], {},
     "/proc/viz_place_test/x.json: cannot write"),
    ("train-rl-negative-seed", ["train-rl", "--family", "chain", "--seed", "-3", "--out", "{d}/out.npz"], {},
     "argument --seed: expected a whole number >= 0, got '-3'"),
    ("train-rl-minutes-nan", ["train-rl", "--family", "chain", "--minutes", "nan", "--out", "{d}/out.npz"], {},
     "argument --minutes: expected a finite number, got 'nan'"),
    ("train-rl-unknown-family", ["train-rl", "--family", "nope", "--out", "{d}/out.npz"], {},
     "unknown graph family 'nope'"),
    ("train-rl-bad-sizes", ["train-rl", "--family", "chain", "--sizes", "abc", "--out", "{d}/out.npz"], {},
     "--sizes 'abc': expected MIN,MAX"),
]


def _symbolic_onnx(path) -> None:
    """A two-op ONNX model whose input has the symbolic dimension ``batch``."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    w = numpy_helper.from_array(np.ones((4, 3), dtype=np.float32), name="w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])], "sym",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])], initializer=[w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


def _write_files(d, files) -> None:
    from viz_place.samples import load_sample
    chain = load_sample("chain").node_ids
    for name, content in files.items():
        path = d / name
        if content == "ONNX":
            _symbolic_onnx(path)
            continue
        if isinstance(content, str) and content.startswith(("CHAIN", "PINS")):
            words = content.split()
            if words[0] == "PINS":
                content = {chain[0]: words[1]}
            else:
                content = {"assignment": {n: words[1] for n in chain}}
                for key, value in zip(words[2::2], words[3::2]):
                    if key == "PIN":
                        content["pins"] = {chain[0]: value}
                    elif key == "PINNODE":
                        content["pins"] = {value: "fpga:0"}
                    elif key == "EXTRA":
                        content["assignment"][value] = "fpga:0"
                    elif key == "FIELD":
                        name, _, raw = value.partition("=")
                        try:
                            content[name] = json.loads(raw)
                        except ValueError:
                            content[name] = raw
        path.write_text(content if isinstance(content, str) else json.dumps(content))


def _run(capsys, argv):
    try:
        code = main(argv)
    except SystemExit as exit_:          # argparse's own refusals
        code = exit_.code
    out, err = capsys.readouterr()
    return code, out, err


def test_the_table_is_large_and_ids_are_unique():
    assert len(CASES) >= 60
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("argv, files, fragment", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_exits_2_with_one_line_and_writes_nothing(capsys, tmp_path, argv, files, fragment):
    d = tmp_path / "work"
    d.mkdir()
    _write_files(d, files)
    before = sorted(os.listdir(d))
    code, out, err = _run(capsys, [a.replace("{d}", str(d)) for a in argv])
    assert code == 2, (code, err)
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert "Traceback" not in err and "internal error" not in err
    assert fragment in err, err
    assert ".tmp" not in err
    assert sorted(os.listdir(d)) == before, "a bad input must not write anything"


@pytest.mark.parametrize("case_id", ["graph-deep-json", "rl-lr-nan", "time-limit-0-dp", "cpuLatency-null",
                                     "compare-all-fail", "placement-device-beyond-count"])
def test_bad_input_in_a_real_process(tmp_path, case_id):
    """The same rows through the console script: one line, exit 2, nothing written, no traceback."""
    argv, files, fragment = next(c[1:] for c in CASES if c[0] == case_id)
    d = tmp_path / "work"
    d.mkdir()
    _write_files(d, files)
    before = sorted(os.listdir(d))
    proc = subprocess.run([sys.executable, "-m", "viz_place", *[a.replace("{d}", str(d)) for a in argv]],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and fragment in proc.stderr and "Traceback" not in proc.stderr
    assert sorted(os.listdir(d)) == before


def test_the_same_inputs_done_right_are_accepted(capsys, tmp_path):
    """Controls: the valid neighbours of some rows succeed (the refusals are about the value, not the command)."""
    _symbolic_onnx(tmp_path / "m.onnx")
    code, _, err = _run(capsys, ["import", str(tmp_path / "m.onnx"), "--dim", "batch=4", "--out", str(tmp_path / "g.json")])
    assert code == 0, err
    code, _, err = _run(capsys, ["solve", "chain", "--solver", "dp", "--time-limit", "5", "-o", "contract_layers=true",
                                 "-o", "max_ideals=300000.0"])
    assert code == 0, err
    (tmp_path / "p.json").write_text(json.dumps(paper(maxFPGAs=2.0, maxSizePerFPGA=None)))
    code, out, err = _run(capsys, ["info", str(tmp_path / "p.json"), "--json"])
    assert code == 0, err
    fpga = json.loads(out)["devices"][0]
    assert fpga["count"] == 2 and fpga["memory"] is None


def test_errors_carry_what_is_wrong_as_attributes(tmp_path):
    """The same refusals from Python: the error names the option / node / device / field as attributes."""
    from viz_place.errors import GraphValidationError, InputFormatError, PlacementError, SolverError
    from viz_place.io import load_graph, load_placement
    from viz_place.samples import load_sample
    from viz_place.solvers import get_solver, make_options
    with pytest.raises(SolverError) as err:
        make_options(get_solver("dp").options_cls, {"max_ideals": "lots"})
    assert err.value.field == "max_ideals"
    with pytest.raises(SolverError) as err:
        make_options(get_solver("rl").options_cls, {"time_limit": 0})
    assert err.value.field == "time_limit"
    (tmp_path / "g.json").write_text(json.dumps(paper(node0_cpuLatency=None)))
    with pytest.raises(GraphValidationError) as err:
        load_graph(tmp_path / "g.json")
    assert (err.value.node, err.value.field) == ("1", "cpuLatency")
    (tmp_path / "g.json").write_text(json.dumps(paper(maxFPGAs=2.7)))
    with pytest.raises(InputFormatError) as err:
        load_graph(tmp_path / "g.json")
    assert err.value.field == "maxFPGAs"
    chain = load_sample("chain")
    (tmp_path / "p.json").write_text(json.dumps({"assignment": {n: "fpga:9" for n in chain.node_ids}}))
    with pytest.raises(PlacementError) as err:
        load_placement(tmp_path / "p.json", chain, chain.default_cluster)
    assert err.value.device == "fpga:9" and err.value.node in chain.node_ids
    assert str(err.value).startswith(f"{tmp_path / 'p.json'}: ")
