`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_gemm: the GEMM core's multiply-add array, pipelined.  For an INP
 * element (BATCH x BLOCK int8 lanes, lane b*BLOCK + ic) and a WGT element
 * (BLOCK x BLOCK int8 lanes, lane oc*BLOCK + ic) presented with in_valid, it
 * gives LATENCY = 3 cycles later the BATCH x BLOCK dot products
 * sum_ic inp[b][ic] * wgt[oc][ic] as int32 lanes (lane b*BLOCK + oc):
 * out = inp . wgt^T, products summed exactly.  One new operand pair enters
 * per cycle.
 *
 *   stage 1  every product in its own register (a DSP48 multiplier with its
 *            M register, or LUTs)
 *   stage 2  products summed in groups of 2**ceil(LOG_BLOCK/2)
 *   stage 3  the groups of a lane summed into the 32-bit lane
 *
 * so no stage adds more than about 3 adders deep.  The stages are written
 * out unrolled in vta_gemm.vh, generated for the configuration by
 * vta.hdltools.hdlgen (render_gemm): the operand lanes split once into register
 * arrays, one register per product and partial sum (array elements with
 * constant indices), and `sum` written by one assignment, which a simulator
 * evaluates once per clock edge.  A stage only loads when its input is valid
 * (clock enables); `sum` is meaningful LATENCY cycles after in_valid and
 * holds until the next valid result.
 */
module vta_gemm #(
    // GEMM core shape: BATCH x BLOCK x BLOCK
    parameter LOG_BATCH = 0,
    parameter LOG_BLOCK = 4,
    // log2 of the INP/WGT lane width (8-bit lanes: 3)
    parameter LOG_INP_WIDTH = 3,
    parameter LOG_WGT_WIDTH = 3,
    // log2 of the ACC lane width (32-bit lanes: 5)
    parameter LOG_ACC_WIDTH = 5,
    // cycles from in_valid to sum (the pipeline as written: 3)
    parameter LATENCY = 3
) (
    input  wire                                               clk,
    input  wire                                               in_valid,
    input  wire [(1<<(LOG_BATCH+LOG_BLOCK+LOG_INP_WIDTH))-1:0] inp,
    input  wire [(1<<(2*LOG_BLOCK+LOG_WGT_WIDTH))-1:0]         wgt,
    output wire [(1<<(LOG_BATCH+LOG_BLOCK+LOG_ACC_WIDTH))-1:0] sum
);

`include "vta_cfg.vh"

initial begin
    if (LOG_BATCH != `VTA_CFG_LOG_BATCH || LOG_BLOCK != `VTA_CFG_LOG_BLOCK
        || LOG_INP_WIDTH != `VTA_CFG_LOG_INP_WIDTH || LOG_WGT_WIDTH != `VTA_CFG_LOG_WGT_WIDTH
        || LOG_ACC_WIDTH != `VTA_CFG_LOG_ACC_WIDTH) begin
        $display("%m: parameters differ from the configuration vta_gemm.vh was generated for");
        $finish;
    end
    if (LATENCY != 3) begin
        $display("%m: LATENCY must be 3 (the pipeline of vta_gemm.vh), not %0d", LATENCY);
        $finish;
    end
end

// stage enables: stage 2 loads the cycle after stage 1 did, and so on
reg p_en_reg;
reg t_en_reg;
always @(posedge clk) begin
    p_en_reg <= in_valid;
    t_en_reg <= p_en_reg;
end

`include "vta_gemm.vh"

endmodule

`resetall
