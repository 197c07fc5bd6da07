"""`vta bench` and `vta cache`."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from vta.cli import main


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_bench_quick_reports_checked_figures():
    result = invoke("bench", "--quick", "--rtl", "none", "--json")
    assert result.exit_code == 0, result.output
    results = {r["name"]: r for r in json.loads(result.stdout)["results"]}
    assert list(results) == ["golden GEMM 128^3", "conv2d ResNet-18 C5", "conv2d ResNet-18 C11"]
    gemm = results["golden GEMM 128^3"]
    assert gemm["golden_ms"] > 0 and gemm["numpy_ms"] > 0
    assert abs(gemm["golden_gmacs"] - 128 ** 3 / gemm["golden_ms"] / 1e6) < 1e-6
    layer = results["conv2d ResNet-18 C5"]
    assert abs(layer["mmacs"] - 128 * 128 * 9 * 28 * 28 / 1e6) < 1e-9  # 3x3, stride 1, pad 1
    # not a terminal: no progress bar, a log line on stderr as each benchmark starts
    assert [line for line in result.stderr.splitlines() if "benchmark" in line] == [
        "vta: benchmark 1/3: golden GEMM", "vta: benchmark 2/3: conv2d C5",
        "vta: benchmark 3/3: conv2d C11"]


@pytest.mark.slow
def test_bench_rtl_figures():
    result = invoke("bench", "--quick", "--rtl", "icarus", "-c", "tiny", "--json")
    assert result.exit_code == 0, result.output
    rtl = {r["name"]: r for r in json.loads(result.stdout)["results"]}["icarus matmul 64^3"]
    assert 0 < rtl["gemm_utilisation"] <= 1  # at most one micro-op per cycle
    assert rtl["cycles"] >= 64 ** 3 / 16  # tiny: 1x4x4 MACs per micro-op


def test_bench_fails_when_a_result_is_wrong(monkeypatch):
    from vta.progfile import handbuilt as programs

    real = programs.MatmulProgram.expected
    monkeypatch.setattr(programs.MatmulProgram, "expected",
                        lambda self, a, w: real(self, a, w) + 1)
    result = invoke("bench", "--quick", "--rtl", "none")
    assert result.exit_code == 1
    assert "golden GEMM: the golden model's matmul differs from NumPy" in result.output


@pytest.mark.sim
def test_cache_list_and_clean(tmp_path, monkeypatch):
    from vta.backends.rtl import build_testbench
    from vta.config import Config

    monkeypatch.setenv("VTA_CACHE_DIR", str(tmp_path))
    assert invoke("cache", "list").output == "no simulator builds cached\n"
    build_testbench("icarus", Config.load("tiny"))
    listed = json.loads(invoke("cache", "list", "--json").output)
    assert len(listed) == 1
    assert listed[0]["simulator"] == "icarus" and listed[0]["top"] == "vta_tb"
    assert listed[0]["config"] == "1x4 10_9_10_11 bus 64 mem 2^24"  # tiny, Icarus 16 MiB
    assert listed[0]["size"] > 10_000
    text = invoke("cache", "list").output
    assert "icarus" in text and "1 build(s)" in text
    assert invoke("cache", "clean", "--simulator", "verilator", "-y").output == \
        "nothing to remove\n"
    cleaned = invoke("cache", "clean", "-y")
    assert cleaned.exit_code == 0 and cleaned.output.startswith("removed 1 build(s)")
    assert list((tmp_path / "sim").iterdir()) == []
