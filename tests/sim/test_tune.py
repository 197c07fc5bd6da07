"""`vta tune`: candidate plans measured on the RTL over Dask, the tuning log, resume, Ctrl-C.

The layers are the digits network's on the tiny preset (small: a candidate
runs in well under a second on Verilator); every measured run is checked
against NumPy by the tuner itself, and the log's entries against its
measurements here.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import needs
import numpy as np
import pytest
from click.testing import CliRunner
from interrupt import ctrl_c, lines_at_least

import vta
from vta import ops
from vta.cli import main
from vta.graph.models import digits_model
from vta.tune import log, run

pytest.importorskip("dask.distributed")
TINY = vta.Config.load("tiny")


@pytest.fixture(autouse=True)
def _verilator():
    needs.simulator("verilator")


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def lines(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def layers():
    return run.layers_of(digits_model(), TINY)


def test_layers_of_a_network_are_its_distinct_vta_layers(layers):
    # tiny's 4-lane blocks take conv1's one channel (4x the work, the most allowed); conv2
    # 3x3/2 16->32, conv3 3x3 32->32, the dense layer 512->10
    assert [layer.names for layer in layers] == [("conv1",), ("conv2",), ("conv3",), ("fc",)]
    conv2 = layers[1]
    assert conv2.shape == (1, 4, 8, 8, 8, 3, 3, 2, 2, 1, 1, True, False)  # 4-lane blocks
    assert layers[2].shape[12]  # conv3 does the residual add (vta.graph.fold)
    assert conv2.plans(TINY, 3)[0] == ops.plan_conv2d(
        TINY, conv2.data_shape, conv2.kernel_shape, conv2.stride, conv2.padding, True).tiling
    resnet = run.resnet_layers(["C4"], vta.Config.load("default"))
    assert resnet[0].shape == (1, 4, 56, 56, 8, 1, 1, 2, 2, 0, 0, True, False)
    with pytest.raises(run.TuneError, match="unknown layer 'C1'"):
        run.resnet_layers(["C1"], TINY)


def test_measure_checks_the_result_and_counts_cycles(layers, monkeypatch):
    folding = run.Task("verilator", {**TINY.to_dict(), "name": "tiny"}, layers[2].shape,
                       layers[2].plans(TINY, 1)[0])
    layer = run.resnet_layers(["C10"], TINY)[0]
    task = run.Task("verilator", {**TINY.to_dict(), "name": "tiny"}, layer.shape,
                    layer.plans(TINY, 1)[0], True)
    try:
        record = run.measure(task)
        assert record["status"] == "ok" and record["cycles"] > 0 and record["analytic"]
        assert run.measure(folding)["status"] == "ok"  # the add checked too
        bound = ops.conv2d_bound(TINY, layer.data_shape, layer.kernel_shape, stride=2,
                                 bias=True, shift=run.SHIFT, clip=run.CLIP)
        assert record["cycles"] >= bound.cycles
        # a plan whose output is wrong is reported, never kept
        monkeypatch.setattr(run, "_reference", lambda *a: np.zeros(1, np.int8))
        assert run.measure(task)["status"] == "wrong"
        bad = run.Task(task.backend, task.config, task.shape, dict(task.tiling, tcb=3))
        assert run.measure(bad)["status"] == "error"
    finally:
        run.close_devices()


def test_tune_logs_every_measure_and_each_layers_best(layers, tmp_path):
    path = tmp_path / "t.jsonl"
    seen = []
    summary = run.tune(layers, TINY, path, candidates=3, workers=2, processes=False,
                       on_result=lambda r, done, total: seen.append((done, total)))
    assert summary.ran == 12 and seen[-1] == (12, 12) and summary.workers == 2
    records = lines(path)
    measures = [r for r in records if r["type"] == "measure"]
    entries = [r for r in records if r["type"] == "entry"]
    assert len(measures) == 12 and all(m["status"] == "ok" for m in measures)
    assert len(entries) == 4
    for entry in entries:
        mine = [m for m in measures if m["shape"] == entry["shape"]]
        assert entry["cycles"] == min(m["cycles"] for m in mine)
        assert entry["tiling"] == min(mine, key=lambda m: m["cycles"])["tiling"]
        analytic = next(m for m in mine if m["analytic"])
        assert entry["analytic"] == {"tiling": analytic["tiling"], "cycles": analytic["cycles"]}
        assert entry["signature"] == log.signature(TINY) and entry["vta"] == vta.__version__
        shape = entry["shape"]
        with log.use(path):  # the planner now takes the measured best
            assert ops.plan_conv2d(TINY, shape[:4], (shape[4], shape[1], *shape[5:7]),
                                   shape[7:9], shape[9:11], True,
                                   residual=shape[12]).tiling == entry["tiling"]
    info = summary.as_dict()
    assert [r["tuned_cycles"] for r in info["layers"]] == [e["cycles"] for e in entries]
    # resumed: nothing left to measure, nothing written
    size = path.stat().st_size
    again = run.tune(layers, TINY, path, candidates=3, workers=1, processes=False)
    assert again.ran == 0 and path.stat().st_size == size
    assert [r["tuned_cycles"] for r in again.as_dict()["layers"]] == \
        [e["cycles"] for e in entries]
    # more candidates: only the new ones run
    more = run.tune(layers[:1], TINY, path, candidates=4, workers=1, processes=False)
    assert more.ran == 1


def test_cli_runs_and_graph_run_uses_the_log(tmp_path):
    path = tmp_path / "t.jsonl"
    result = invoke("tune", "digits", "-c", "tiny", "-n", "2", "-w", "1", "--log", path,
                    "--json")
    assert result.exit_code == 0, result.output
    info = json.loads(result.output[result.output.index("{"):])
    assert [r["nodes"] for r in info["layers"]] == [["conv1"], ["conv2"], ["conv3"], ["fc"]]
    assert all(r["measured"] == 2 and r["tuned_cycles"] <= r["analytic_cycles"]
               for r in info["layers"])
    assert all(r["bound"] <= r["tuned_cycles"] for r in info["layers"])
    x = tmp_path / "x.npy"
    from vta.graph.models import digits_test_set

    np.save(x, digits_test_set()[0][:2])
    ran = invoke("graph", "run", digits_model(), "-i", x, "-c", "tiny", "--tuning-log", path,
                 "--no-ort")
    assert ran.exit_code == 0 and "PASS" in ran.output, ran.output
    missing = invoke("graph", "run", digits_model(), "-i", x, "--tuning-log", tmp_path / "no")
    assert missing.exit_code == 2 and "does not exist" in missing.output
    assert invoke("tune", "digits", "-b", "golden").exit_code == 2
    bad = invoke("tune", "nosuch.onnx")
    assert bad.exit_code == 2 and "neither an ONNX file nor a bundled network" in bad.output
    bad = invoke("tune", "digits", "--layers", "C2")
    assert bad.exit_code == 2 and "MODEL must be resnet18" in bad.output


def test_existing_cluster_runs_the_shipped_package(layers, tmp_path):
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None,
                      silence_logs=40) as cluster:
        summary = run.tune(layers[3:], TINY, tmp_path / "t.jsonl", candidates=2,
                           cluster=cluster.scheduler_address)
        assert summary.ran == 2 and summary.workers == 2
        with Client(cluster) as client:  # the copy is gone again, and no worker imports it
            assert set(client.run(lambda: "vta" in sys.modules).values()) == {False}
    installed = str(Path(vta.__file__).resolve().parent)
    measured = [m for m in lines(tmp_path / "t.jsonl") if m["type"] == "measure"]
    packages = {m["package"] for m in measured}
    assert packages and all("/vta-ship-" in p and p != installed for p in packages), packages
    assert all(":" in m["worker"] for m in measured)


def test_ctrl_c_keeps_the_log_and_resumes(tmp_path):
    """SIGINT to the process group mid-run: exit 130, every line written is whole, and a
    second run measures only what is missing."""
    path = tmp_path / "t.jsonl"
    code, err = ctrl_c(["tune", "digits", "-c", "tiny", "-n", "6", "-w", "1", "--log", path,
                        "--json"], lines_at_least(path, 2))
    assert code == 130, err
    assert "Traceback" not in err
    before = [r for r in lines(path) if r["type"] == "measure"]
    assert 2 <= len(before) < 24
    layers = run.layers_of(digits_model(), TINY)
    summary = run.tune(layers, TINY, path, candidates=6, workers=1, processes=False)
    total = sum(len(layer.plans(TINY, 6)) for layer in layers)
    assert summary.ran == total - len(before)
    assert len([r for r in lines(path) if r["type"] == "entry"]) == 4
