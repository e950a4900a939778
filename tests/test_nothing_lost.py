"""Nothing lost (issue #13): infinite figures are written and read back, Ctrl-C keeps the best
placement so far, file writes are atomic, name their target, leave no temp files and honour the umask."""
from __future__ import annotations

import json
import math
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from viz_place.cli.main import main
from viz_place.io import atomic_write_text, load_graph, load_placement
from viz_place.io.atomic import TEMP_SUFFIX, remove_stale_temp_files
from viz_place.io.placement_json import decode_non_finite, encode_non_finite
from viz_place.solvers.milp import available_backends

BACKEND = "highs" if "highs" in available_backends() else "cbc"
ZERO = {"maxFPGAs": 2, "maxCPUs": 1, "maxSizePerFPGA": 10.0,
        "nodes": [{"id": i, "cpuLatency": 0, "fpgaLatency": 0, "isBackwardNode": 0, "supportedOnFpga": 1}
                  for i in (1, 2, 3)],
        "edges": [{"sourceId": 1, "destId": 2, "cost": 0}, {"sourceId": 2, "destId": 3, "cost": 0}]}


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# --- item 5: infinite figures ------------------------------------------------------------------

def test_non_finite_round_trip_keeps_every_figure_and_its_reason():
    data = {"value": math.inf, "options": {"stats": {"upper_bound": math.inf, "ok": 1.0}},
            "evaluation": {"latency": math.inf, "latency_issue": "fpga:0 and fpga:1 wait on each other",
                           "devices": [{"load": -math.inf}, {"load": 2.0}], "throughput": math.nan},
            "assignment": {"a/b~c": "cpu:0"}}
    safe = encode_non_finite(data)
    text = json.dumps(safe, allow_nan=False)           # valid JSON, no Infinity/NaN tokens
    back = decode_non_finite(json.loads(text))
    assert back["value"] == math.inf and back["options"]["stats"]["upper_bound"] == math.inf
    assert back["evaluation"]["latency"] == math.inf and back["evaluation"]["devices"][0]["load"] == -math.inf
    assert math.isnan(back["evaluation"]["throughput"]) and back["options"]["stats"]["ok"] == 1.0
    assert safe["non_finite"]["/evaluation/latency"]["why"] == "fpga:0 and fpga:1 wait on each other"
    assert "non_finite" not in back and back["assignment"] == {"a/b~c": "cpu:0"}


def test_all_zero_latency_graph_writes_infinite_throughput(capsys, tmp_path):
    g = tmp_path / "zero.json"
    g.write_text(json.dumps(ZERO))
    for solver in ("dp", "local-search", "pipedream"):
        out = tmp_path / f"{solver}.json"
        extra = ["--time-limit", "2"] if solver == "local-search" else []
        code, _, err = run(capsys, "solve", g, "--solver", solver, "--out", out, *extra)
        assert code == 0, err
        saved = json.loads(out.read_text())
        assert saved["evaluation"]["throughput"] is None
        assert saved["non_finite"]["/evaluation/throughput"] == {
            "value": "inf", "why": "max-load is 0, so the throughput (1 / max-load) is infinite"}
        graph = load_graph(g)
        placement, _ = load_placement(out, graph, graph.default_cluster)
        assert placement.claimed_value == 0.0
        code, text, err = run(capsys, "evaluate", g, out, "--json")
        assert code == 0 and json.loads(text)["max_load"] == 0.0 and json.loads(text)["throughput"] is None


@pytest.mark.parametrize("solver, extra, surely_infinite", [
    ("local-search", ["--time-limit", "2"], True),          # seed 0: devices feed each other in a cycle
    ("ilp-noncontig", ["--time-limit", "3", "--backend", BACKEND], False)])
def test_non_contiguous_placement_with_infinite_latency_is_written_and_read(capsys, tmp_path, workloads, solver, extra,
                                                                            surely_infinite):
    g = workloads / "throughput-inputs/LayerGraphs/inceptionv3_training.json"
    out = tmp_path / "p.json"
    code, text, err = run(capsys, "solve", g, "--solver", solver, "--out", out, *extra)
    assert code == 0, err
    saved = json.loads(out.read_text())
    graph = load_graph(g)
    placement, _ = load_placement(out, graph, graph.default_cluster)
    code, text, err = run(capsys, "evaluate", g, out, "--json")
    assert code == 0, err
    ev = json.loads(text)
    assert ev["max_load"] == pytest.approx(saved["value"], rel=1e-12) == pytest.approx(placement.claimed_value)
    assert ev["latency"] is None or not surely_infinite
    if ev["latency"] is None:          # the case of the issue: every non-finite figure is listed with a reason
        assert saved["evaluation"]["latency"] is None
        assert saved["non_finite"]["/evaluation/latency"]["value"] == "inf"
        assert saved["non_finite"]["/evaluation/latency"]["why"] == saved["evaluation"]["latency_issue"]
    assert all(v is None for v in _values_at(saved, saved.get("non_finite", {})))


def _values_at(data, marks):
    for pointer in marks:
        node = data
        for part in pointer[1:].split("/"):
            node = node[int(part)] if isinstance(node, list) else node[part]
        yield node


def test_paper_split_of_an_infinite_max_load_is_null(tmp_path):
    from viz_place.io import read_paper_split, write_paper_split
    from viz_place.model import Placement
    from viz_place.samples import load_sample
    g = load_sample("chain")
    p = Placement({n: "fpga:0" for n in g.node_ids})
    write_paper_split(tmp_path / "s.json", g, g.default_cluster, p, math.inf)
    assert json.loads((tmp_path / "s.json").read_text())["maxLoad"] is None
    assert read_paper_split(tmp_path / "s.json", g, g.default_cluster).claimed_value is None


# --- item 6: Ctrl-C ------------------------------------------------------------------------------

def _spawn(*argv):
    """The console script as a user runs it; SIGINT restored to its default (a background parent may ignore it)."""
    return subprocess.Popen([sys.executable, "-m", "viz_place", *map(str, argv)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _threads(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return int(next(ln for ln in fh if ln.startswith("Threads:")).split()[1])
    except (OSError, StopIteration):
        return 0


def _interrupt_after(proc, delay: float):
    time.sleep(delay)
    t0 = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err, time.perf_counter() - t0


@pytest.mark.parametrize("graph, solver", [("transformer_large", "rl"), ("transformer_large", "local-search")])
def test_ctrl_c_during_solve_writes_the_best_placement_so_far(tmp_path, graph, solver):
    out = tmp_path / "p.json"
    for delay in (3.0, 6.0, 12.0):     # the first delays may land while the inputs still load (then: retry)
        proc = _spawn("solve", graph, "--solver", solver, "--time-limit", "120", "--out", out)
        code, stdout, err, stop = _interrupt_after(proc, delay)
        if err != "viz-place: interrupted\n":
            break
    assert code == 130, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{solver} stopped with its best placement so far (status cancelled); wrote it to {out}" in err
    assert stop < 5.0, f"took {stop:.1f} s to stop"
    saved = json.loads(out.read_text())
    assert saved["status"] == "cancelled" and saved["solver"] == solver
    assert f"({saved['status']})" in stdout
    r = subprocess.run([sys.executable, "-m", "viz_place", "evaluate", graph, str(out), "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and json.loads(r.stdout)["max_load"] == pytest.approx(saved["value"], rel=1e-9)
    assert [p.name for p in tmp_path.iterdir()] == ["p.json"]


def test_ctrl_c_during_compare_prints_the_rows_so_far():
    for delay in (3.0, 6.0, 12.0):
        proc = _spawn("compare", "transformer_large", "--solvers", "rl,local-search", "--time-limit", "120", "--json")
        code, stdout, err, stop = _interrupt_after(proc, delay)
        if err != "viz-place: interrupted\n":
            break
    assert code == 130 and err == "viz-place: interrupted after 1 of 2 solver(s)\n"
    rows = json.loads(stdout)
    assert [r["solver"] for r in rows] == ["rl"] and rows[0]["status"] == "cancelled"
    assert stop < 5.0


def test_ctrl_c_during_start_up_prints_one_line(tmp_path):
    out = tmp_path / "p.json"
    proc = _spawn("solve", "transformer_large", "--solver", "rl", "--time-limit", "60", "--out", out)
    t0 = time.perf_counter()
    while _threads(proc.pid) < 2 and time.perf_counter() - t0 < 10:   # numpy's first thread: modules are loading
        time.sleep(0.002)
    proc.send_signal(signal.SIGINT)
    stdout, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert err == "viz-place: interrupted\n" and stdout == ""
    assert not out.exists()


def test_ctrl_c_before_any_placement_says_nothing_was_written(tmp_path, monkeypatch, capsys):
    """The solver is cancelled before it has a placement: one line, 130, no file."""
    from viz_place.cli import solve_cmds
    from viz_place.errors import SolverError

    def cancelled_run(info, opts, g, cluster, pins, cancel=None):
        os.kill(os.getpid(), signal.SIGINT)          # a real SIGINT, caught by the solve command
        assert cancel.wait(5)
        raise SolverError(f"{info.name}: cancelled before any placement was found")
    monkeypatch.setattr(solve_cmds, "_run_one", cancelled_run)
    # as in a terminal (a pytest-xdist worker ignores SIGINT, which the command rightly leaves alone)
    outer = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        code, _, err = run(capsys, "solve", "chain", "--solver", "dp", "--out", tmp_path / "p.json")
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, outer)
    assert code == 130 and err == "viz-place: interrupted before dp found a placement; nothing written\n"
    assert not (tmp_path / "p.json").exists()


# --- item 8: files -------------------------------------------------------------------------------

def test_failed_write_names_the_target_and_leaves_no_temp_file(tmp_path, monkeypatch, capsys):
    target = tmp_path / "p.json"

    def no_space(*a, **k):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "replace", no_space)
    code, _, err = run(capsys, "solve", "chain", "--solver", "topo-fill", "--out", target)
    assert code == 2
    assert err == f"viz-place: error: {target}: cannot write: No space left on device\n"
    assert list(tmp_path.iterdir()) == []


def test_unwritable_target_is_named(capsys, tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o500)
    try:
        code, _, err = run(capsys, "solve", "chain", "--solver", "topo-fill", "--out", d / "p.json")
        if os.access(d, os.W_OK):          # root ignores the mode; /proc refuses anyone
            code, _, err = run(capsys, "solve", "chain", "--solver", "topo-fill", "--out", "/proc/p.json")
            assert err.startswith("viz-place: error: /proc/p.json: cannot write")
        else:
            assert err.startswith(f"viz-place: error: {d / 'p.json'}: cannot write: Permission denied")
        assert code == 2 and ".tmp" not in err
    finally:
        d.chmod(0o700)


def test_a_killed_write_leaves_a_temp_file_the_next_write_removes(tmp_path):
    """kill -9 in the middle of a write (between the temp file and the rename), then write again."""
    script = (f"import os, time\nimport viz_place.io.atomic as a\n"
              f"os.replace = lambda *x: time.sleep(60)\n"
              f"a.atomic_write_text({str(tmp_path / 'p.json')!r}, 'new')\n")
    proc = subprocess.Popen([sys.executable, "-c", script])
    t0 = time.perf_counter()
    while not [p for p in tmp_path.iterdir() if p.name.endswith(TEMP_SUFFIX)] and time.perf_counter() - t0 < 30:
        time.sleep(0.01)
    proc.kill()
    proc.wait()
    left = [p.name for p in tmp_path.iterdir()]
    assert len(left) == 1 and left[0].startswith(".p.json.") and left[0].endswith(f".{proc.pid}{TEMP_SUFFIX}")
    foreign = tmp_path / ".p.json.mine.tmp"            # not this tool's: never touched
    foreign.write_text("x")
    atomic_write_text(tmp_path / "other.json", "{}")   # any write into the folder cleans up
    assert sorted(p.name for p in tmp_path.iterdir()) == [".p.json.mine.tmp", "other.json"]


def test_stale_rules_keep_live_writers_and_remove_old_ones(tmp_path):
    live = tmp_path / f".a.json.x1.{os.getppid()}{TEMP_SUFFIX}"   # a running process (our parent)
    old = tmp_path / f".b.json.x2.{os.getppid()}{TEMP_SUFFIX}"    # running pid, but hours old (pid reuse)
    mine = tmp_path / f".c.json.x3.{os.getpid()}{TEMP_SUFFIX}"    # this process, fresh: another thread's
    for p in (live, old, mine):
        p.write_text("x")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    assert remove_stale_temp_files(tmp_path) == [old.name]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, mine.name])


def test_written_files_honour_the_umask_and_keep_an_existing_mode(tmp_path):
    old = os.umask(0o027)
    try:
        atomic_write_text(tmp_path / "new.json", "{}")
        assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o640
        os.umask(0o002)
        atomic_write_text(tmp_path / "new2.json", "{}")
        assert stat.S_IMODE((tmp_path / "new2.json").stat().st_mode) == 0o664
        (tmp_path / "kept.json").write_text("old")
        (tmp_path / "kept.json").chmod(0o600)
        atomic_write_text(tmp_path / "kept.json", "new")
        assert stat.S_IMODE((tmp_path / "kept.json").stat().st_mode) == 0o600
        assert (tmp_path / "kept.json").read_text() == "new"
    finally:
        os.umask(old)


def test_cli_output_file_mode_follows_the_umask(tmp_path):
    out = tmp_path / "p.json"
    r = subprocess.run(["sh", "-c", f"umask 022 && exec {sys.executable} -m viz_place solve chain --solver topo-fill "
                                    f"--out {out}"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    assert Path(out).read_text().startswith("{")
