`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * tb_fetch: test wrapper for vta_fetch: fetch, its DMA stream on vta_dma_rd
 * and the three 512-deep command queues, whose outputs are exposed.
 */
module tb_fetch #(
`include "tb_params.vh"
) (
    input  wire clk,
    input  wire rst,
    input  wire start,
    input  wire halt,
    input  wire [63:0] insn_addr,
    input  wire [31:0] insn_count,
    output wire err,
    output wire [7:0] err_code,
    output wire [31:0] err_index,
    output wire evt_valid,
    output wire [31:0] evt_index,
    output wire [31:0] dispatched,
    output wire done,
    output wire quiet,
    output wire rd_idle,
    output wire ld_valid,
    input  wire ld_ready,
    output wire [159:0] ld_data,
    output wire cmp_valid,
    input  wire cmp_ready,
    output wire [159:0] cmp_data,
    output wire st_valid,
    input  wire st_ready,
    output wire [159:0] st_data,
`include "tb_axi_ports.vh"
);

localparam NRD = 1;
`include "tb_axi_rd.vh"
`include "tb_axi_no_wr.vh"

wire q_ld_valid, q_ld_ready, q_cmp_valid, q_cmp_ready, q_st_valid, q_st_ready;
wire [10:0] ld_count, cmp_count, st_count;
wire [159:0] q_data;

vta_fetch #(.LOG_BUS_WIDTH(LOG_BUS_WIDTH), .ADDR_WIDTH(ADDR_WIDTH), .BEATS_WIDTH(48),
            .LOG_QUEUE_DEPTH(9), .MEM_SIZE(MEM_SIZE)) fetch (
    .clk(clk), .rst(rst), .start(start), .halt(halt), .insn_addr(insn_addr),
    .insn_count(insn_count),
    .dma_req_valid(rd_req_valid[0]), .dma_req_ready(rd_req_ready[0]),
    .dma_req_addr(rd_req_addr), .dma_req_beats(rd_req_beats),
    .dma_rd_valid(rd_valid[0]), .dma_rd_ready(rd_ready[0]), .dma_rd_data(rd_data),
    .ld_valid(q_ld_valid), .ld_ready(q_ld_ready), .ld_count(ld_count),
    .cmp_valid(q_cmp_valid), .cmp_ready(q_cmp_ready), .cmp_count(cmp_count),
    .st_valid(q_st_valid), .st_ready(q_st_ready), .st_count(st_count),
    .cmd_data(q_data), .err(err), .err_code(err_code), .err_index(err_index),
    .evt_valid(evt_valid), .evt_index(evt_index), .dispatched(dispatched), .done(done),
    .quiet(quiet)
);

vta_fifo #(.WIDTH(160), .LOG_DEPTH(9)) ld_q (
    .clk(clk), .rst(rst), .clear(start), .in_valid(q_ld_valid), .in_ready(q_ld_ready),
    .in_data(q_data), .out_valid(ld_valid), .out_ready(ld_ready), .out_data(ld_data),
    .count(ld_count));
vta_fifo #(.WIDTH(160), .LOG_DEPTH(9)) cmp_q (
    .clk(clk), .rst(rst), .clear(start), .in_valid(q_cmp_valid), .in_ready(q_cmp_ready),
    .in_data(q_data), .out_valid(cmp_valid), .out_ready(cmp_ready), .out_data(cmp_data),
    .count(cmp_count));
vta_fifo #(.WIDTH(160), .LOG_DEPTH(9)) st_q (
    .clk(clk), .rst(rst), .clear(start), .in_valid(q_st_valid), .in_ready(q_st_ready),
    .in_data(q_data), .out_valid(st_valid), .out_ready(st_ready), .out_data(st_data),
    .count(st_count));

endmodule

`resetall
