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
