"""Program files: capture from the runtime, text round trip, replay on every backend, errors."""

from __future__ import annotations

import numpy as np
import pytest
from hand_programs import GEMM_1X4 as HAND

import vta
from vta import isa, ops, progfile
from vta.errors import AssemblyError, DeadlockError, DeviceError
from vta.progfile import handbuilt as programs


def _dense_expected(x, w, shift):
    acc = x.astype(np.int64) @ w.astype(np.int64).T
    acc = ((acc + 2**31) % 2**32) - 2**31
    return np.maximum(acc >> shift, 0).astype(np.int8)


def _unpack_dense(raw: bytes, cfg, m, n):
    """The dense op's output region (1, N/bo, 1, M/b, b, bo) as (M, N) int8."""
    b, bo = cfg.BATCH, cfg.BLOCK_OUT
    mp, np_ = -(-m // b) * b, -(-n // bo) * bo
    out = np.frombuffer(raw, dtype=np.int8).reshape(np_ // bo, mp // b, b, bo)
    return out.transpose(1, 2, 0, 3).reshape(mp, np_)[:m, :n]


@pytest.fixture(scope="module")
def dense_capture(tmp_path_factory):
    """A dense layer captured on golden (tiny): (path, x, w)."""
    folder = tmp_path_factory.mktemp("cap")
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, (6, 11), dtype=np.int8)
    w = rng.integers(-128, 128, (5, 11), dtype=np.int8)
    with vta.open_device("golden", "tiny", capture=folder) as dev:
        y = ops.dense(dev, x, w, shift=5, relu=True)
    np.testing.assert_array_equal(y, _dense_expected(x, w, 5))
    files = sorted(folder.iterdir())
    assert [f.name for f in files] == ["run-0001.vtaprog"]
    return files[0], x, w


def test_capture_names_regions_and_round_trips(dense_capture):
    path, x, w = dense_capture
    text = path.read_text()
    prog = progfile.load(path)
    assert prog.to_text() == text  # the canonical form reads back to itself
    roles = {r.name: r.role for r in prog.regions}
    assert roles == {"data": "in", "weights": "in", "out": "out", "insn": "insn", "uop": "uop"}
    assert prog.cfg == vta.Config.load("tiny")
    assert text.splitlines()[0] == progfile.HEADER
    assert "captured by vta" in text and "golden backend" in text
    # instructions are text with symbolic addresses; the stream decodes to the same words
    assert "dram_base=@data" in text and "dram_base=@weights" in text and "@out" in text
    assert prog.insns()[-1].opcode == isa.Opcode.FINISH
    expect = prog.region("out").expected()
    np.testing.assert_array_equal(_unpack_dense(expect, prog.cfg, 6, 5),
                                  _dense_expected(x, w, 5))


def test_replay_matches_numpy_on_every_backend(dense_capture, backend):
    path, x, w = dense_capture
    prog = progfile.load(path)
    with vta.open_device(backend, prog.cfg) as dev:
        result = progfile.replay(prog, dev)
    got = _unpack_dense(result.outputs["out"], prog.cfg, 6, 5)
    np.testing.assert_array_equal(got, _dense_expected(x, w, 5))
    assert progfile.compare(progfile.expectations(prog), result.outputs) == []
    assert result.stats.insn_count == prog.insn_count
    if backend != "golden":
        assert result.stats.cycles > 0




def test_hand_written_program_runs():
    prog = progfile.parse(HAND)
    assert prog.insn_count == 7  # .run without a count: every instruction of the region
    assert [r.role for r in prog.regions] == ["in", "in", "out", "uop", "insn"]
    assert [r.addr for r in prog.regions] == [0x1000, 0x2000, 0x3000, 0x4000, 0x5000]
    with vta.open_device("golden", "tiny") as dev:
        result = progfile.replay(prog, dev)
    x = np.array([1, -2, 3, 4])
    w = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [2, 2, 2, 2]])
    assert np.frombuffer(result.outputs["out"], np.int8).tolist() == list(w @ x)
    again = progfile.parse(prog.to_text())  # canonical text keeps every byte
    assert again.stream() == prog.stream()
    assert [(r.name, r.addr, r.size, r.role, r.data) for r in again.regions] == \
        [(r.name, r.addr, r.size, r.role, r.data) for r in prog.regions]


def test_raw_memory_program_is_captured_as_pages(tmp_path):
    """A program placed in device memory without buffers is recorded from what it touches."""
    cfg = vta.Config.load("tiny")
    prog = programs.build_matmul(cfg, 4, 8, 4, shift=None)
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, (4, 8), dtype=np.int8)
    w = rng.integers(-128, 128, (4, 8), dtype=np.int8)
    with vta.open_device("golden", cfg) as dev:
        mem = dev.driver.transport.mem
        prog.write(mem, a, w)
        dev.run(prog.insn_addr, prog.insn_count, capture=tmp_path / "m.vtaprog")
        np.testing.assert_array_equal(prog.read_result(mem), prog.expected(a, w))
    captured = progfile.load(tmp_path / "m.vtaprog")
    assert all(r.name.startswith(("mem", "insn", "uop")) for r in captured.regions)
    assert all(r.addr % progfile.PAGE == 0 for r in captured.regions)
    with vta.open_device("golden", cfg) as dev:
        result = progfile.replay(captured, dev)
    out = [r for r in captured.outputs if r.addr <= prog.out_addr < r.end][0]
    raw = result.outputs[out.name][prog.out_addr - out.addr:][:4 * 4]
    np.testing.assert_array_equal(
        programs.unpack_out(np.frombuffer(raw, np.int8), cfg, 4, 4), prog.expected(a, w))


def test_failed_run_is_captured_with_its_error(tmp_path, monkeypatch):
    monkeypatch.setenv("VTA_CAPTURE", str(tmp_path))
    text = HAND.replace("deps=pop_prev,push_next", "deps=pop_prev,pop_next")  # s2g never comes
    prog = progfile.parse(text)
    with vta.open_device("golden", "tiny") as dev, pytest.raises(DeadlockError):
        progfile.replay(prog, dev)
    saved = tmp_path / "run-0001.vtaprog"
    content = saved.read_text()
    assert "# the run failed: DeadlockError: run of 7 instructions" in content
    assert "compute at instruction 4 waits on s2g" in content
    assert progfile.load(saved).stream() == prog.stream()


def test_undefined_opcode_is_kept_exactly():
    prog = progfile.parse(HAND)
    code = prog.region("code")
    bad = bytearray(code.data)
    bad[16 * 6] = 0x06 | 0x80  # instruction 6: opcode 6 (undefined) with a stray high bit
    code.data = bytes(bad)
    text = prog.to_text()
    assert "# 6: OP6" in text  # kept as hex, disassembly as a comment
    assert progfile.parse(text).stream() == prog.stream()


def test_replay_refuses_other_config_and_used_memory():
    prog = progfile.parse(HAND)
    with vta.open_device("golden", "default") as dev, \
            pytest.raises(DeviceError, match="another configuration than the device's: "
                                             "LOG_BLOCK: 2 vs 4"):
        progfile.replay(prog, dev)
    with vta.open_device("golden", "tiny") as dev:
        dev.alloc(100)
        with pytest.raises(DeviceError, match=r"needs device memory 0x1000..0x5070 free"):
            progfile.replay(prog, dev)


@pytest.mark.parametrize("edit, message", [
    (("FINISH", "FINISH\n.bogus 1"), "line 20: unknown directive '.bogus'"),
    ((".region x\n", ".region x addr=0x1000 size=4\n.region y addr=0x1002 size=4\n"),
     "regions x (0x1000..0x1004) and y (0x1002..0x1006) overlap"),
    (("dram_base=@x", "dram_base=@nope"), "line 14: dram_base names region 'nope'"),
    ((".i8 1 -2 3 4", ".i8 1 -2 3 400"), "line 5: .i8 values must be in -128..127, not 400"),
    ((".i8 1 -2 3 4", "+0000: 0g"), "line 5: data must be hex byte pairs, not '0g'"),
    ((".config tiny", ".vta_program 9\n.config tiny"), "line 2: format version 9 is newer"),
    (("UOP wgt_idx=0", "UOP wgt_idx=0 wgt_idx=1"), "line 11: field 'wgt_idx' is given twice"),
    (("iter_out=1 iter_in=1 deps=pop_prev", "iter_out=1 iter_in=1 bogus=2 deps=pop_prev"),
     "line 17: GEMM has no field 'bogus' (its fields: reset_reg, uop_bgn, uop_end, iter_out"),
    (("GEMM reset_reg=1", "GEMM reset_reg=2"),
     "line 16: GEMM field 'reset_reg' is 1 bits wide and holds 0..1, not 2"),
    ((".region x\n", "FINISH\n.region x\n"), "line 4: data or instructions outside a region"),
    ((".config tiny\n", ""), "no `.config` line"),
    ((".region x\n", ".region x size=2\n"), "line 4: region x: its lines fill 4 bytes, more than "
                                              "size=2"),
])
def test_parse_errors_name_the_line(edit, message):
    text = HAND.replace(*edit, 1)
    assert text != HAND
    with pytest.raises(AssemblyError) as info:
        progfile.parse(text, where="hand.s")
    assert message in str(info.value)
    assert str(info.value).startswith("hand.s")
