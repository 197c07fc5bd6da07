`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_gemm: the GEMM core's multiply-add array for one micro-op.  For an INP
 * element (BATCH x BLOCK int8 lanes, lane b*BLOCK + ic) and a WGT element
 * (BLOCK x BLOCK int8 lanes, lane oc*BLOCK + ic) it computes the
 * BATCH x BLOCK dot products sum_ic inp[b][ic] * wgt[oc][ic] as int32 lanes
 * (lane b*BLOCK + oc): out = inp . wgt^T, products summed exactly.  The
 * array is combinational; vta_compute registers its result, so one
 * micro-op enters per cycle.
 */
module vta_gemm #(
    // GEMM core shape: BATCH x BLOCK x BLOCK
    parameter LOG_BATCH = 0,
    parameter LOG_BLOCK = 4,
    // log2 of the INP/WGT lane width (8-bit lanes: 3)
    parameter LOG_INP_WIDTH = 3,
    parameter LOG_WGT_WIDTH = 3,
    // log2 of the ACC lane width (32-bit lanes: 5)
    parameter LOG_ACC_WIDTH = 5
) (
    input  wire [(1<<(LOG_BATCH+LOG_BLOCK+LOG_INP_WIDTH))-1:0] inp,
    input  wire [(1<<(2*LOG_BLOCK+LOG_WGT_WIDTH))-1:0]         wgt,
    output reg  [(1<<(LOG_BATCH+LOG_BLOCK+LOG_ACC_WIDTH))-1:0] sum
);

localparam integer BATCH = 1 << LOG_BATCH;
localparam integer BLOCK = 1 << LOG_BLOCK;
localparam integer IW = 1 << LOG_INP_WIDTH;
localparam integer WW = 1 << LOG_WGT_WIDTH;
localparam integer AW = 1 << LOG_ACC_WIDTH;

initial begin
    if (IW + WW + LOG_BLOCK > AW) begin
        $display("%m: %0d-bit lanes cannot hold a %0d-term sum of %0dx%0d-bit products",
                 AW, BLOCK, IW, WW);
        $finish;
    end
end

integer b, oc, ic;
reg signed [AW-1:0] acc;
always @* begin
    sum = {(BATCH*BLOCK*AW){1'b0}};
    for (b = 0; b < BATCH; b = b + 1) begin
        for (oc = 0; oc < BLOCK; oc = oc + 1) begin
            acc = {AW{1'b0}};
            for (ic = 0; ic < BLOCK; ic = ic + 1) begin
                acc = acc + $signed(inp[(b*BLOCK+ic)*IW +: IW]) * $signed(wgt[(oc*BLOCK+ic)*WW +: WW]);
            end
            sum[(b*BLOCK+oc)*AW +: AW] = acc;
        end
    end
end

endmodule

`resetall
