"""ISA codec: the worked encodings of vta-reference 2.7, layouts, round trips, errors."""

from __future__ import annotations

import random

import pytest

import vta
from vta import isa
from vta.config import Config
from vta.isa import AluInsn, AluOp, GemmInsn, Insn, MemId, MemInsn, Opcode, Uop

DEFAULT = Config.load("default")
CONFIGS = [Config.load(name) for name in ("default", "tiny", "aws")] + [
    # a few more legal shapes, to exercise the packing rule
    Config(LOG_BATCH=1, LOG_BLOCK=3, LOG_UOP_BUFF_SIZE=12, LOG_INP_BUFF_SIZE=14,
           LOG_WGT_BUFF_SIZE=15, LOG_ACC_BUFF_SIZE=16),
    Config(LOG_BATCH=2, LOG_BLOCK=5, LOG_UOP_BUFF_SIZE=13, LOG_INP_BUFF_SIZE=18,
           LOG_WGT_BUFF_SIZE=20, LOG_ACC_BUFF_SIZE=19),
    Config(LOG_BLOCK=1, LOG_UOP_BUFF_SIZE=3, LOG_INP_BUFF_SIZE=2, LOG_WGT_BUFF_SIZE=3,
           LOG_ACC_BUFF_SIZE=4),
]


def words(raw: bytes) -> tuple[int, int]:
    return int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:], "little")


WORKED = [
    ("FINISH", GemmInsn(opcode=Opcode.FINISH), 0x3, 0),
    ("compute no-op", MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP, pop_prev_dep=1,
                              pop_next_dep=1), 0x18, 0),
    ("load no-op", MemInsn(opcode=Opcode.LOAD, memory_type=MemId.INP, push_next_dep=1), 0x140, 0),
    ("store no-op", MemInsn(opcode=Opcode.STORE, memory_type=0, push_prev_dep=1), 0x21, 0),
    ("LOAD INP", MemInsn(opcode=Opcode.LOAD, memory_type=MemId.INP, pop_next_dep=1, sram_base=5,
                         dram_base=0x100, y_size=2, x_size=3, x_stride=4, y_pad_0=1, y_pad_1=2,
                         x_pad_0=3, x_pad_1=4), 0x0000000400001510, 0x4321000400030002),
    ("GEMM", GemmInsn(opcode=Opcode.GEMM, uop_bgn=1, uop_end=5, iter_out=2, iter_in=3,
                      dst_factor_out=4, dst_factor_in=1, src_factor_out=5, src_factor_in=2,
                      wgt_factor_out=6, wgt_factor_in=3), 0x0006001000a00102, 0x00c0600401400804),
    ("ALU SHR", AluInsn(opcode=Opcode.ALU, alu_opcode=AluOp.SHR, use_imm=1, imm=-3, uop_bgn=0,
                        uop_end=1, iter_out=1, iter_in=8, dst_factor_in=1, src_factor_in=1),
     0x0010000800200004, 0xFFFDB00200000800),
]


@pytest.mark.parametrize("name, insn, word0, word1", WORKED, ids=[w[0] for w in WORKED])
def test_worked_encodings(name, insn, word0, word1):
    raw = isa.encode(insn, DEFAULT)
    assert len(raw) == 16
    assert words(raw) == (word0, word1)
    assert isa.decode(raw, DEFAULT) == insn


def test_worked_micro_op():
    raw = isa.encode_uop(Uop(dst_idx=5, src_idx=7, wgt_idx=9), DEFAULT)
    assert int.from_bytes(raw, "little") == 0x02403805
    assert isa.decode_uop(raw, DEFAULT) == Uop(5, 7, 9)


def test_default_layout_positions():
    """The bit ranges of vta-reference 2.2-2.6 for the default configuration."""
    def ranges(fmt):
        return {f.name: (f.lo, f.hi) for f in isa.layout(fmt, DEFAULT)}

    mem = ranges("mem")
    assert mem["memory_type"] == (7, 9) and mem["dram_base"] == (26, 57)
    assert mem["y_size"] == (64, 79) and mem["x_pad_1"] == (124, 127)
    gemm = ranges("gemm")
    assert gemm["uop_end"] == (21, 34) and gemm["iter_in"] == (49, 62)
    assert gemm["dst_factor_out"] == (64, 74) and gemm["wgt_factor_in"] == (118, 127)
    alu = ranges("alu")
    assert alu["src_factor_in"] == (97, 107) and alu["alu_opcode"] == (108, 110)
    assert alu["use_imm"] == (111, 111) and alu["imm"] == (112, 127)
    assert ranges("uop") == {"dst_idx": (0, 10), "src_idx": (11, 21), "wgt_idx": (22, 31)}


def test_small_config_packs_later_fields_into_word_zero():
    tiny = Config.load("tiny")  # U = 8, A = 7: dst_factor_out fits below bit 64
    fields = {f.name: f for f in isa.layout("gemm", tiny)}
    assert fields["iter_in"].hi == 52
    assert (fields["dst_factor_out"].lo, fields["dst_factor_out"].hi) == (53, 59)
    assert fields["dst_factor_in"].lo == 64  # 60 + 7 would straddle bit 64


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.bitstream + f"_b{c.BUS_WIDTH}")
def test_no_field_straddles_a_word(cfg):
    for fmt, unit in (("mem", 64), ("gemm", 64), ("alu", 64), ("uop", 32)):
        placed = isa.layout(fmt, cfg)
        for prev, f in zip(placed, placed[1:], strict=False):
            assert f.lo >= prev.hi + 1  # in order, no overlap
            if f.lo != prev.hi + 1:  # a gap only where the next field would straddle
                assert (prev.hi + 1) % unit + f.width > unit
        for f in placed:
            assert f.lo // unit == f.hi // unit


def random_insn(rng: random.Random, cfg: Config) -> Insn:
    op = rng.choice([Opcode.LOAD, Opcode.STORE, Opcode.GEMM, Opcode.FINISH, Opcode.ALU])
    cls = isa.insn_class(op)
    values = {}
    for f in isa.layout(cls.FORMAT, cfg):
        values[f.name] = rng.randint(f.min, f.max)
    values["opcode"] = op
    if cls is AluInsn:
        values["alu_opcode"] = rng.randint(0, 7)
    return cls(**values)


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.bitstream + f"_b{c.BUS_WIDTH}")
def test_random_round_trips(cfg):
    rng = random.Random(cfg.signature)
    insns = [random_insn(rng, cfg) for _ in range(300)]
    for insn in insns:
        raw = isa.encode(insn, cfg)
        # independent check: every field sits at its documented bits
        value = int.from_bytes(raw, "little")
        for f in isa.layout(insn.FORMAT, cfg):
            got = (value >> f.lo) & ((1 << f.width) - 1)
            assert got == getattr(insn, f.name) & ((1 << f.width) - 1), f.name
        assert isa.decode(raw, cfg) == insn
        assert isa.assemble(isa.disassemble(insn)) == insn
    stream = isa.encode_stream(insns, cfg)
    assert isa.decode_stream(stream, cfg) == insns
    assert isa.assemble_stream(isa.disassemble_stream(stream, cfg), cfg) == stream
    for _ in range(200):
        uop = Uop(*(rng.randint(0, f.max) for f in isa.layout("uop", cfg)))
        assert isa.decode_uop(isa.encode_uop(uop, cfg), cfg) == uop


def test_undefined_opcode_decodes_to_generic_and_round_trips():
    raw = (0x5 | 1 << 6).to_bytes(16, "little")
    insn = isa.decode(raw, DEFAULT)
    assert type(insn) is Insn and insn.opcode == 5 and insn.push_next_dep == 1
    assert isa.disassemble(insn) == "OP5 deps=push_next"
    assert isa.encode(isa.assemble("OP5 deps=push_next"), DEFAULT) == raw


def test_disassembly_text():
    insn = WORKED[4][1]
    assert isa.disassemble(insn) == (
        "LOAD INP sram_base=5 dram_base=0x100 y_size=2 x_size=3 x_stride=4 y_pad_0=1 y_pad_1=2 "
        "x_pad_0=3 x_pad_1=4 deps=pop_next")
    assert isa.disassemble(WORKED[6][1]) == (
        "SHR uop_end=1 iter_out=1 iter_in=8 dst_factor_in=1 src_factor_in=1 use_imm=1 imm=-3")
    text = isa.disassemble_stream(isa.encode_stream([WORKED[0][1], WORKED[2][1]], DEFAULT),
                                  DEFAULT)
    assert text == "     0: FINISH\n     1: LOAD INP deps=push_next\n"


@pytest.mark.parametrize("insn, message", [
    (MemInsn(opcode=Opcode.LOAD, sram_base=1 << 16),
     "LOAD field 'sram_base' is 16 bits wide and holds 0..65535, not 65536"),
    (MemInsn(opcode=Opcode.STORE, x_pad_0=16), "STORE field 'x_pad_0' is 4 bits wide and holds "
     "0..15, not 16"),
    (GemmInsn(opcode=Opcode.GEMM, uop_bgn=8192), "GEMM field 'uop_bgn' is 13 bits wide and holds "
     "0..8191, not 8192"),
    (GemmInsn(opcode=Opcode.GEMM, iter_out=-1), "GEMM field 'iter_out' is 14 bits wide and holds "
     "0..16383, not -1"),
    (AluInsn(opcode=Opcode.ALU, imm=40000), "ALU field 'imm' is 16 bits wide and holds "
     "-32768..32767, not 40000"),
    (AluInsn(opcode=Opcode.ALU, dst_factor_in=2048), "ALU field 'dst_factor_in' is 11 bits wide "
     "and holds 0..2047, not 2048"),
    (MemInsn(opcode=Opcode.LOAD, x_size="3"), "LOAD field 'x_size' must be an integer, not '3'"),
])
def test_field_overflow_names_field_width_value(insn, message):
    with pytest.raises(vta.EncodingError, match=message.replace(".", r"\.")):
        isa.encode(insn, DEFAULT)


def test_stream_errors_name_the_index_and_line():
    good = GemmInsn(opcode=Opcode.FINISH)
    with pytest.raises(vta.EncodingError, match="instruction 1: GEMM field 'iter_in'"):
        isa.encode_stream([good, GemmInsn(opcode=Opcode.GEMM, iter_in=1 << 14)], DEFAULT)
    with pytest.raises(vta.EncodingError, match="multiple of 16 bytes, not 20"):
        isa.decode_stream(bytes(20), DEFAULT)
    with pytest.raises(vta.EncodingError, match="a micro-op is 4 bytes, not 3"):
        isa.decode_uop(bytes(3), DEFAULT)
    with pytest.raises(vta.EncodingError, match="needs a MemInsn, not a GemmInsn"):
        isa.encode(GemmInsn(opcode=Opcode.LOAD), DEFAULT)


@pytest.mark.parametrize("text, message", [
    ("FROB x=1", "line 3: unknown mnemonic 'FROB'"),
    ("LOAD", "line 3: LOAD needs a memory type"),
    ("LOAD FOO x_size=1", "line 3: unknown memory type 'FOO'"),
    ("GEMM iter_out", "line 3: expected field=value, not 'iter_out'"),
    ("GEMM imm=1", r"line 3: GEMM has no field 'imm' \(its fields: reset_reg, uop_bgn, "
                   r"uop_end, iter_out, iter_in, dst_factor_out, dst_factor_in, src_factor_out, "
                   r"src_factor_in, wgt_factor_out, wgt_factor_in, deps\)"),
    ("GEMM iter_in=1 iter_in=2", "line 3: field 'iter_in' is given twice"),
    ("ADD deps=pop_prev deps=push_next", "line 3: field 'deps' is given twice"),
    ("MAX iter_out=two", "line 3: field 'iter_out' needs an integer, not 'two'"),
    ("GEMM deps=pop_first", "line 3: unknown dependency flag 'pop_first'"),
    ("GEMM iter_out=16384", "line 3: GEMM field 'iter_out' is 14 bits wide"),
])
def test_assembler_errors(text, message):
    source = "# a comment\n\n" + text + "\nFINISH\n"
    with pytest.raises(vta.AssemblyError, match=message):
        isa.assemble_stream(source, DEFAULT)


def test_assembler_accepts_indices_comments_and_hex():
    text = "  7: LOAD WGT sram_base=0x10 dram_base=0x40 x_size=2 y_size=1 x_stride=2 # weights\n"
    raw = isa.assemble_stream(text, DEFAULT)
    assert isa.decode(raw, DEFAULT) == MemInsn(opcode=Opcode.LOAD, memory_type=MemId.WGT,
                                               sram_base=16, dram_base=64, x_size=2, y_size=1,
                                               x_stride=2)


def test_committed_isa_doc_is_generated_from_the_tables():
    from pathlib import Path

    doc = Path(__file__).resolve().parents[2] / "docs" / "isa.md"
    assert doc.read_text() == isa.render_markdown(DEFAULT), (
        "docs/isa.md is stale: regenerate it with `vta isa > docs/isa.md`")
    assert "| imm | [112..127] | 16, signed |" in doc.read_text()


def test_uop_text_round_trip_and_errors():
    rng = random.Random(5)
    fields = {f.name: f for f in isa.layout("uop", DEFAULT)}
    for _ in range(200):
        uop = isa.Uop(**{name: rng.randint(0, f.max) for name, f in fields.items()})
        text = isa.disassemble_uop(uop)
        assert isa.assemble_uop(text) == uop
        assert isa.encode_uop(isa.assemble_uop(text), DEFAULT) == isa.encode_uop(uop, DEFAULT)
    assert isa.disassemble_uop(isa.Uop()) == "UOP"
    assert isa.assemble_uop("  7: UOP wgt_idx=0x10  # comment") == isa.Uop(wgt_idx=16)
    with pytest.raises(vta.AssemblyError, match="line 1: UOP has no field 'acc' "
                                                r"\(its fields: dst_idx, src_idx, wgt_idx\)"):
        isa.assemble_uop("UOP acc=1")
    with pytest.raises(vta.AssemblyError, match="field 'dst_idx' is given twice"):
        isa.assemble_uop("UOP dst_idx=1 dst_idx=2")
    with pytest.raises(vta.AssemblyError, match="a micro-op line starts with UOP, not 'GEMM'"):
        isa.assemble_uop("GEMM")
