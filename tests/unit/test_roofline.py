"""The roofline (`vta.roofline`): bounds of small layers and programs worked out by hand.

Every expected figure below is computed in the comment beside it from the
configuration's sizes (default: 16-lane blocks, INP entries of 16 bytes,
WGT 256, ACC 64, OUT 16, a 64-bit bus; aws: the same with a 512-bit bus),
not from the module's formulas.
"""

from __future__ import annotations

import vta
from vta import isa, ops
from vta import roofline as rf

DEFAULT = vta.Config.load("default")
AWS = vta.Config.load("aws")


def test_conv3x3_with_bias_is_bound_by_its_reads():
    # 1 image, 2 input blocks, 4x4, one output block, 3x3, stride 1, pad 1: 16 outputs
    b = ops.conv2d_bound(DEFAULT, (1, 2, 4, 4), (1, 2, 3, 3), stride=1, padding=1, bias=True,
                         shift=4, clip=(0, 127))
    w = b.work
    assert (w.gemm_uops, w.resets, w.alu_uops) == (16 * 2 * 9, 16, 16 * 4)  # bias, >>, max, min
    # every input row and column is read: 2 x 4 x 4 entries of 16 B; 18 weight entries of
    # 256 B; one bias entry of 64 B; 16 outputs of 16 B
    assert (w.inp_bytes, w.wgt_bytes, w.acc_bytes, w.out_bytes) == (512, 4608, 64, 256)
    assert b.resources == {"compute": 288 + 16 + 64 + 64 / 8, "load": (512 + 4608) / 8,
                           "store": 256 / 8, "bus read": (512 + 4608 + 64) / 8,
                           "bus write": 256 / 8}
    assert (b.cycles, b.binding) == (648, "bus read")
    assert b.of(1296) == 0.5 and b.of(None) is None


def test_1x1_stride_2_reads_only_the_pixels_it_uses():
    # 8x8 input, 1x1 kernel, stride 2: output 4x4 reads rows and columns 0, 2, 4, 6 only
    b = ops.conv2d_bound(DEFAULT, (1, 1, 8, 8), (2, 1, 1, 1), stride=2)
    assert b.work.inp_bytes == 4 * 4 * 16  # not the 7 x 7 window a dense load brings
    assert (b.work.gemm_uops, b.work.resets, b.work.alu_uops) == (32, 32, 0)
    assert b.resources["compute"] == 64 and b.resources["load"] == (256 + 512) / 8
    assert (b.cycles, b.binding) == (96, "load")  # a tie with the bus: the engine is named


def test_padding_rows_are_not_read():
    # 3x3, stride 2, pad 1 over 5 rows: outputs 0..2 read rows -1..1, 1..3, 3..5 -> 0..4
    assert rf._used(3, 2, 1, 3, 5) == 5
    # 1x1 stride 3 over 7 rows: rows 0, 3, 6
    assert rf._used(3, 3, 0, 1, 7) == 3
    # 2x2 stride 3 over 8 rows: rows 0, 1, 3, 4, 6, 7
    assert rf._used(3, 3, 0, 2, 8) == 6


def test_dense_one_row_is_bound_by_its_weights():
    # 1 x 512 @ 512 x 1000: 32 input blocks, 63 output blocks (1008 padded channels)
    b = ops.dense_bound(DEFAULT, 1, 512, 1000, bias=True, shift=11, clip=(-128, 127))
    assert b.work.wgt_bytes == 63 * 32 * 256 and b.work.gemm_uops == 63 * 32
    assert (b.binding, b.cycles) == ("bus read", -(-(63 * 32 * 256 + 32 * 16 + 63 * 64) // 8))
    aws = ops.dense_bound(AWS, 1, 512, 1000, bias=True, shift=11, clip=(-128, 127))
    assert aws.cycles == -(-(63 * 32 * 256 + 32 * 16 + 63 * 64) // 64)  # 8x the bus


def test_add_counts_its_alu_steps_and_operand_loads():
    # (a << 1) + b + 1, >> 1, clip 0..127: SHL a, ADD, ADD 1, SHR, MAX, MIN = 6 steps
    b = ops.add_bound(DEFAULT, 10, a_lshift=1, offset=1, shift=1, clip=(0, 127))
    assert b.work.alu_uops == 60 and b.work.acc8_bytes == 2 * 10 * 16
    assert b.resources["compute"] == 60 + 320 / 8  # the compute engine loads both operands
    assert (b.cycles, b.binding) == (100, "compute")
    # on a 512-bit bus an ACC_8BIT entry (16 B) still takes a cycle: 20 load cycles
    assert ops.add_bound(AWS, 10, a_lshift=1, offset=1, shift=1,
                         clip=(0, 127)).resources["compute"] == 60 + 20


def test_program_work_counts_what_the_instructions_ask():
    text = "\n".join([
        "LOAD INP sram_base=0 dram_base=64 y_size=10 x_size=10 x_stride=10",   # 100 entries
        "LOAD WGT y_size=1 x_size=4 x_stride=4",                                # 4 entries
        "GEMM reset_reg=1 uop_end=1 iter_out=4 iter_in=5",                      # 20 resets
        "GEMM uop_end=3 iter_out=2 iter_in=7",                                  # 42 products
        "MUL uop_end=3 iter_out=2 iter_in=2",                               # 12 MUL uops
        "ADD uop_end=1 iter_out=1 iter_in=5 use_imm=1 imm=3",                   # 5 uops
        "STORE OUT y_size=2 x_size=3 x_stride=3",                               # 6 entries
        "LOAD ACC_8BIT y_size=1 x_size=0 x_stride=0",                           # a no-op
        "FINISH",
    ])
    insns = [isa.assemble(line) for line in text.splitlines()]
    work = rf.program_work(AWS, insns)
    assert (work.gemm_uops, work.resets) == (42, 20)
    assert work.alu_uops == (2 * 12 - 1) + 5  # a MUL instruction issues every other cycle
    assert (work.inp_bytes, work.wgt_bytes, work.out_bytes, work.acc8_bytes) == (
        1600, 1024, 96, 0)
    b = rf.bound(AWS, work)
    # INP entries are 16 B: one per cycle although the bus carries 64 B; WGT 256 B: 64 B a cycle
    assert b.resources["load"] == 100 + 1024 / 64
    assert b.resources["bus read"] == (1600 + 1024) / 64
    assert b.resources["store"] == 6 and b.resources["bus write"] == 96 / 64
    assert b.resources["compute"] == 42 + 20 + 28 and b.binding == "load"


def test_bounds_add_resource_by_resource():
    a = ops.conv2d_bound(DEFAULT, (1, 2, 4, 4), (1, 2, 3, 3), padding=1)
    b = ops.add_bound(DEFAULT, 16)
    both = a + b
    assert both.work == a.work + b.work
    assert all(both.resources[r] == a.resources[r] + b.resources[r] for r in rf.RESOURCES)
    assert both.as_dict()["work"]["gemm_uops"] == 288
