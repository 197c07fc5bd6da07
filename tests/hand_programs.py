"""Hand-written program files shared by the CLI and program-file tests."""

#: A correct 1x4 @ 4x4 GEMM for the tiny preset (BATCH 1, BLOCK 4): the output is the low
#: 8 bits of w @ x.  Tests break it one way or another with str.replace.
GEMM_1X4 = """\
# a 1x4 @ 4x4 GEMM written by hand (tiny: BATCH 1, BLOCK 4)
.config tiny
.run @code
.region x
.i8 1 -2 3 4
.region w
.i8 1 0 0 0   0 1 0 0   0 0 1 0   2 2 2 2
.region out size=4 role=out
.region kernels
UOP                          # reset acc[0]
UOP wgt_idx=0
.region code
LOAD UOP dram_base=@kernels y_size=1 x_size=2 x_stride=2
LOAD INP dram_base=@x y_size=1 x_size=1 x_stride=1
LOAD WGT dram_base=@w y_size=1 x_size=1 x_stride=1 deps=push_next
GEMM reset_reg=1 uop_bgn=0 uop_end=1 iter_out=1 iter_in=1
GEMM uop_bgn=1 uop_end=2 iter_out=1 iter_in=1 deps=pop_prev,push_next
STORE OUT dram_base=@out y_size=1 x_size=1 x_stride=1 deps=pop_prev
FINISH
"""

#: GEMM_1X4 with the STORE before the GEMMs in the stream: it waits on the g2s token the
#: second GEMM pushes, so it runs after them (legal; token order, not stream order, decides).
STORE_FIRST = GEMM_1X4.replace(
    "STORE OUT dram_base=@out y_size=1 x_size=1 x_stride=1 deps=pop_prev\n", "").replace(
    "GEMM reset_reg=1", "STORE OUT dram_base=@out y_size=1 x_size=1 x_stride=1 deps=pop_prev\n"
                        "GEMM reset_reg=1")

#: OUT entry 0 stored twice: #5 stores the GEMM's result (#4) and hands a s2g token back;
#: #6 comes before the ADD (#7) that overwrites entry 0 in the stream, but waits for its
#: g2s token, so it stores the ADD's result: out2 = out1 + 1.
STORED_TWICE = GEMM_1X4.replace(
    ".region out size=4 role=out", ".region out1 size=4 role=out\n.region out2 size=4 role=out"
).replace(
    "STORE OUT dram_base=@out y_size=1 x_size=1 x_stride=1 deps=pop_prev",
    "STORE OUT dram_base=@out1 y_size=1 x_size=1 x_stride=1 deps=pop_prev,push_prev\n"
    "STORE OUT dram_base=@out2 y_size=1 x_size=1 x_stride=1 deps=pop_prev\n"
    "ADD uop_bgn=1 uop_end=2 iter_out=1 iter_in=1 use_imm=1 imm=1 deps=pop_next,push_next")
