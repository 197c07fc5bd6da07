"""`vta trace`: analysis of waits and tokens, exports (Perfetto JSON, PNG), show and diff."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from hand_programs import GEMM_1X4 as HAND

from vta import trace as vtrace
from vta.cli import main
from vta.config import Config

CFG = Config.load("tiny")


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def rec(index, module, text, dispatch, start, retire, popped=(), pushed=()):
    from vta import isa

    raw = int.from_bytes(isa.encode(isa.assemble(text), CFG), "little")
    return vtrace.TraceRecord(retire, module, index, raw, text, tuple(popped), tuple(pushed),
                              dispatch, start)


# Two loads push l2g at 20 and 40; compute pops twice; the second pop waits for the second
# token although the first arrived long before (the k-th pop takes the k-th push).
RECORDS = [
    rec(0, "load", "LOAD INP y_size=1 x_size=1 x_stride=1 deps=push_next", 1, 4, 20,
        pushed=["l2g"]),
    rec(1, "compute", "GEMM uop_end=1 iter_out=1 iter_in=1 deps=pop_prev", 2, 22, 30,
        popped=["l2g"]),
    rec(2, "load", "LOAD INP y_size=1 x_size=1 x_stride=1 deps=push_next", 3, 22, 40,
        pushed=["l2g"]),
    rec(3, "compute", "GEMM uop_end=1 iter_out=1 iter_in=1 deps=pop_prev", 4, 42, 50,
        popped=["l2g"]),
    rec(4, "compute", "FINISH", 5, 52, 54),
]


def test_analysis_matches_tokens_in_order_and_names_the_wait():
    steps = {s.index: s for s in vtrace.analyse(RECORDS)}
    assert steps[1].tokens == (vtrace.TokenIn("l2g", 0, 20),)
    assert steps[3].tokens == (vtrace.TokenIn("l2g", 2, 40),)
    # #3 was ready when #1 retired (30) and waited for the token #2 pushed at 40
    assert (steps[3].ready, steps[3].stalled, steps[3].reason) == (30, 12, "token l2g from #2")
    assert (steps[1].ready, steps[1].stalled, steps[1].reason) == (2, 20, "token l2g from #0")
    assert steps[2].reason == "previous instruction #0" and steps[2].stalled == 2
    assert steps[4].reason == "previous instruction #3" and steps[4].busy == 2
    assert steps[0].reason == "dispatch" and steps[0].busy == 16
    assert [s.index for s in vtrace.analyse(RECORDS)] == [0, 1, 2, 3, 4]  # retire order
    assert vtrace.busy_kind(RECORDS[0].text) == "DRAM" and vtrace.busy_kind("LOAD INP") == "sync"
    shown = vtrace.select(vtrace.analyse(RECORDS), ["compute"], 2, None)
    assert [s.index for s in shown] == [3, 4]


def check_chrome_trace(doc: dict) -> None:
    """The Chrome trace-event format's rules that a viewer relies on."""
    assert set(doc) >= {"traceEvents"} and isinstance(doc["traceEvents"], list)
    slices: dict[int, list[tuple[float, float]]] = {}
    flows: dict[int, dict[str, dict]] = {}
    for ev in doc["traceEvents"]:
        assert ev["ph"] in ("X", "M", "s", "f"), ev
        assert isinstance(ev["pid"], int) and isinstance(ev["tid"], int)
        assert isinstance(ev["name"], str) and ev["name"]
        if ev["ph"] == "M":
            assert ev["name"] in ("process_name", "thread_name", "thread_sort_index")
            continue
        assert isinstance(ev["ts"], (int, float)) and ev["ts"] >= 0
        if ev["ph"] == "X":
            assert isinstance(ev["dur"], (int, float)) and ev["dur"] >= 0
            slices.setdefault(ev["tid"], []).append((ev["ts"], ev["ts"] + ev["dur"]))
        else:
            flows.setdefault(ev["id"], {})[ev["ph"]] = ev
    for spans in slices.values():  # slices of one thread nest or are disjoint
        spans.sort(key=lambda s: (s[0], -s[1]))
        for (a0, a1), (b0, b1) in zip(spans, spans[1:], strict=False):
            assert b0 >= a1 or b1 <= a1, f"slices overlap partially: {(a0, a1)} {(b0, b1)}"
    for pair in flows.values():
        assert set(pair) == {"s", "f"} and pair["f"].get("bp") == "e"
        for ev in pair.values():  # each end of an arrow lies inside a slice of its thread
            assert any(lo <= ev["ts"] < hi or lo == ev["ts"] == hi
                       for lo, hi in slices[ev["tid"]]), ev
    json.dumps(doc)  # plain JSON types only


def test_chrome_json_follows_the_format_rules():
    doc = vtrace.to_chrome_json(vtrace.analyse(RECORDS), "t")
    check_chrome_trace(doc)
    waits = [e for e in doc["traceEvents"] if e.get("cat") == "wait"]
    assert [(e["ts"], e["dur"], e["name"]) for e in waits] == [
        (2, 20, "wait: token l2g from #0"), (30, 12, "wait: token l2g from #2")]
    assert sum(e["ph"] == "s" for e in doc["traceEvents"]) == 2




@pytest.fixture(scope="module")
def program(tmp_path_factory):
    folder = tmp_path_factory.mktemp("trace")
    (folder / "hand.s").write_text(HAND)
    assert invoke("asm", folder / "hand.s", "-o", folder / "hand.vtaprog").exit_code == 0
    return folder / "hand.vtaprog"


@pytest.mark.sim
def test_trace_on_the_rtl_and_golden_agree(program, tmp_path):
    rtl = invoke("trace", program, "-b", "verilator", "--out", tmp_path / "v.trace",
                 "--perfetto", tmp_path / "v.json", "--png", tmp_path / "v.png")
    assert rtl.exit_code == 0, rtl.output
    lines = rtl.output.splitlines()
    assert lines[0] == "hand.vtaprog on verilator (tiny): 7 of 7 instructions retired"
    row = next(ln for ln in lines if ln.split()[:2] == ["4", "compute"])
    by_index = {r.index: r for r in vtrace.read_trace(tmp_path / "v.trace")}
    wgt, reset, gemm = by_index[2], by_index[3], by_index[4]
    assert gemm.start > max(wgt.cycle, reset.cycle)  # after the l2g token and the reset
    # the GEMM waited for whichever came last: the WGT load's token or the reset before it
    want = "token l2g from #2" if wgt.cycle >= reset.cycle else "previous instruction #3"
    # stall: the cycles the compute engine sat idle in front of it (since the reset retired)
    assert f"{gemm.start - max(reset.cycle, gemm.dispatch):>7}  {want}" in row
    assert "GEMM uop_bgn=1" in row and "[pop l2g<#2, push g2s]" in row
    # the roofline of the issued work (tiny: 4-byte INP/OUT/UOP entries, 16-byte WGT, 8-byte
    # bus): compute 1 reset + 1 GEMM + 8 UOP bytes at 4 a cycle = 4; load 4/4 + 16/8 = 3
    span = max(r.cycle for r in by_index.values()) - min(r.dispatch for r in by_index.values())
    busy = {m: sum(r.cycle - r.start for r in by_index.values() if r.module == m)
            for m in ("load", "compute", "store")}
    assert f"roofline of the issued work: 4 cycles (compute binds); the run took {span:,} " \
           f"({4 / span:.1%} of the roofline); load busy {busy['load']} of 3 needed; compute " \
           f"busy {busy['compute']} of 4 needed; store busy {busy['store']} of 1 needed" in lines
    check_chrome_trace(json.loads((tmp_path / "v.json").read_text()))
    png = (tmp_path / "v.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    gold = invoke("trace", program, "-b", "golden", "--out", tmp_path / "g.trace", "--json")
    assert gold.exit_code == 0, gold.output
    steps = json.loads(gold.output)["steps"]
    roof = json.loads(gold.output)["roofline"]
    assert (roof["bound"]["cycles"], roof["cycles"], roof["engines"]["load"]) == (
        4, None, {"busy": None, "bound": 3})
    assert sorted(s["index"] for s in steps) == list(range(7))
    assert all(s["retire"] is None for s in steps)
    same = invoke("trace", "diff", tmp_path / "g.trace", tmp_path / "v.trace")
    assert same.exit_code == 0 and "same instructions and tokens on every engine" in same.output
    # a trace whose GEMM pushed nothing differs, exit status 3
    text = (tmp_path / "v.trace").read_text().replace("pop=l2g push=g2s", "pop=l2g push=-")
    (tmp_path / "w.trace").write_text(text)
    other = invoke("trace", "diff", tmp_path / "g.trace", tmp_path / "w.trace")
    assert other.exit_code == 3, other.output
    assert "#4: g.trace:" in other.output and "the traces differ at 1 instruction(s)" in \
        other.output


def test_trace_filters_and_show(program, tmp_path):
    result = invoke("trace", program, "-b", "golden", "--engine", "load", "--json")
    assert {s["engine"] for s in json.loads(result.output)["steps"]} == {"load"}
    result = invoke("trace", program, "-b", "golden", "--range", "3:4", "--out",
                    tmp_path / "g.trace")
    rows = [ln.split() for ln in result.output.splitlines()[2:-2]]
    assert sorted(int(r[1]) for r in rows) == [3, 4]
    shown = invoke("trace", "show", tmp_path / "g.trace", "--range", "5:", "-c", "tiny")
    assert shown.exit_code == 0
    assert [ln.split()[1] for ln in shown.output.splitlines()[2:-2]] == ["5", "6"]
    assert shown.output.splitlines()[-1].startswith("roofline of the issued work: 4 cycles")
    bad = invoke("trace", program, "-b", "golden", "--range", "9:3")
    assert bad.exit_code == 2 and "0 <= FIRST <= LAST, not '9:3'" in bad.output


def test_trace_of_a_deadlock_shows_what_ran_then_the_error(tmp_path):
    (tmp_path / "d.s").write_text(HAND.replace("deps=pop_prev,push_next", "deps=pop_prev,pop_next"))
    assert invoke("asm", tmp_path / "d.s", "-o", tmp_path / "d.vtaprog").exit_code == 0
    result = invoke("trace", tmp_path / "d.vtaprog", "-b", "golden")
    assert result.exit_code == 1
    assert "d.vtaprog on golden (tiny): 4 of 7 instructions retired" in result.output
    assert "DeadlockError" in result.output and "compute at instruction 4 waits on s2g" in \
        result.output


# --------------------------------------------------------------------- vta diff
@pytest.fixture(scope="module")
def dense_program(tmp_path_factory):
    folder = tmp_path_factory.mktemp("diff")
    result = invoke("demo", "-b", "golden", "-c", "tiny", "--shape", 3, 6, 5, "--seed", 2,
                    "--capture", folder)
    assert result.exit_code == 0, result.output
    return folder / "run-0001.vtaprog"


@pytest.mark.sim
def test_diff_agrees_when_the_rtl_is_right(dense_program):
    result = invoke("diff", dense_program, "-b", "verilator")
    assert result.exit_code == 0, result.output
    assert "verilator agrees with golden" in result.output


@pytest.mark.sim
def test_diff_finds_a_flipped_alu_result(dense_program, monkeypatch):
    """Golden patched to flip one bit of the first MAX result: the STORE of it is named."""
    import numpy as np

    from vta import golden, isa, progfile
    from vta.isa import AluOp

    real = golden.spec.ALU_FUNCTIONS[AluOp.MAX]

    def flipped_max(x, y):
        out = np.array(real(x, y), dtype=np.int32)
        out.reshape(-1)[0] ^= 1  # lane 0 of the first destination entry
        return out

    monkeypatch.setitem(golden.spec.ALU_FUNCTIONS, AluOp.MAX, flipped_max)
    result = invoke("diff", dense_program, "-b", "verilator", "--json")
    assert result.exit_code == 3, result.output
    found = json.loads(result.stdout)["divergence"]  # the error line goes to stderr
    prog = progfile.load(dense_program)
    insns = prog.insns()
    stores = [i for i, insn in enumerate(insns) if insn.opcode == isa.Opcode.STORE
              and insn.x_size]
    maxes = [i for i, insn in enumerate(insns) if insn.opcode == isa.Opcode.ALU
             and insn.alu_opcode == AluOp.MAX]
    assert found["after"] == stores[0] and found["what"] == "memory"
    assert found["producers"] == [[maxes[0], isa.disassemble(insns[maxes[0]])]]
    assert found["region"] == "out" and found["expected"] == found["actual"] ^ 1
    # the RTL value is the right one: relu((x @ w.T + bias) >> 7), recorded by the capture
    assert found["actual"] == prog.region("out").expected()[found["offset"]]
    text = invoke("diff", dense_program, "-b", "verilator")
    assert text.exit_code == 3
    assert f"after instruction {stores[0]} (STORE OUT" in text.output
    assert f"region out, byte {found['offset']}" in text.output
    assert "last written by #" in text.output and "(MAX " in text.output


TWO_STORES = """\
.config tiny
.run @code
.region acc
.i32 5 -7 9 200   -3 4 -500 6
.region out size=8 role=out
.region kernels
UOP
UOP dst_idx=1
.region code
LOAD UOP dram_base=@kernels y_size=1 x_size=2 x_stride=2
LOAD ACC dram_base=@acc y_size=1 x_size=2 x_stride=2
MAX uop_end=2 iter_out=1 iter_in=1 use_imm=1 imm=-4 deps=push_next
STORE OUT sram_base=1 dram_base=@out+1 y_size=1 x_size=1 x_stride=1 deps=pop_prev
STORE OUT dram_base=@out y_size=1 x_size=1 x_stride=1
FINISH
"""


@pytest.mark.sim
def test_diff_names_the_first_store_in_time_not_in_address(tmp_path, monkeypatch):
    """Both STOREs write wrong values; the first to run (the higher address) is named."""
    import numpy as np

    from vta import golden
    from vta.isa import AluOp

    real = golden.spec.ALU_FUNCTIONS[AluOp.MAX]

    def flipped_max(x, y):
        out = np.array(real(x, y), dtype=np.int32)
        out[..., 0] ^= 1  # lane 0 of every destination entry
        return out

    (tmp_path / "two.s").write_text(TWO_STORES)
    assert invoke("asm", tmp_path / "two.s", "-o", tmp_path / "two.vtaprog").exit_code == 0
    monkeypatch.setitem(golden.spec.ALU_FUNCTIONS, AluOp.MAX, flipped_max)
    result = invoke("diff", tmp_path / "two.vtaprog", "-b", "verilator", "--json")
    assert result.exit_code == 3, result.output
    found = json.loads(result.stdout)["divergence"]
    assert found["after"] == 3 and found["element"] == 1 and found["lane"] == 0
    assert (found["expected"], found["actual"]) == ((-3 ^ 1) & 0xFF, -3 & 0xFF)  # max(-3, -4)
    assert found["producers"] == [[2, "MAX uop_end=2 iter_out=1 iter_in=1 use_imm=1 imm=-4 "
                                      "deps=push_next"]]


# -------------------------------------------------------------------- vta waves
@pytest.mark.sim
def test_waves_whole_run_and_a_window(program, tmp_path):
    import pywellen

    def cycles_in(path):
        wave = pywellen.Waveform(str(path))
        counter = [v for v in wave.all_vars() if v.full_name == "vta_tb.cycle"]
        values = []
        wave.stream_changes(lambda t, s, v: values.append(v), counter)
        return values

    records = {}
    assert invoke("trace", program, "-b", "icarus", "--out", tmp_path / "i.trace").exit_code == 0
    records = {r.index: r for r in vtrace.read_trace(tmp_path / "i.trace")}
    whole = invoke("waves", program, "-b", "icarus", "-o", tmp_path / "run.fst")
    assert whole.exit_code == 0, whole.output
    assert (tmp_path / "run.fst").read_bytes()[0] == 0  # FST header block
    seen = cycles_in(tmp_path / "run.fst")
    assert min(seen) <= records[0].dispatch and max(seen) >= records[6].cycle
    window = invoke("waves", program, "-b", "icarus", "--insns", "3:4", "-o", tmp_path / "w.vcd")
    assert window.exit_code == 0, window.output
    first = min(records[3].dispatch, records[4].dispatch)
    last = max(records[3].cycle, records[4].cycle)
    assert f"cycles {first}..{last} of the run's" in window.output
    assert cycles_in(tmp_path / "w.vcd") == list(range(first, last + 1))
    # its header says what it is a window of (it named the temporary FST file it was cut from)
    assert (tmp_path / "w.vcd").read_text().splitlines()[0] == (
        f"$comment cycles {first}..{last} of a run of {program.name} on icarus (instructions "
        "3..4), cut by vta $end")
    bad = invoke("waves", program, "-b", "icarus", "--cycles", "5:9", "-o", tmp_path / "w.fst")
    assert bad.exit_code == 2 and "must end in .vcd (a window is written as VCD)" in bad.output
