`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * tb_dma: test wrapper for the DMA layer: vta_dma_rd with two element streams
 * (vta_dma_rd_port; element sizes 2**LOG_E0 and 2**LOG_E1 bytes, one narrower
 * and one wider than the bus) and vta_dma_wr, on one AXI4 master.
 */
module tb_dma #(
    parameter LOG_BUS_WIDTH = 6,
    parameter LOG_E0 = 2,
    parameter LOG_E1 = 5,
    parameter ADDR_WIDTH = 32,
    parameter ID_WIDTH = 4
) (
    input  wire clk,
    input  wire rst,
    input  wire halt,
    output wire rd_idle,
    output wire wr_idle,

    input  wire                  p0_req_valid,
    output wire                  p0_req_ready,
    input  wire [ADDR_WIDTH-1:0] p0_req_addr,
    input  wire [31:0]           p0_req_n,
    output wire                  p0_elem_valid,
    input  wire                  p0_elem_ready,
    output wire [(8<<LOG_E0)-1:0] p0_elem_data,
    input  wire                  p1_req_valid,
    output wire                  p1_req_ready,
    input  wire [ADDR_WIDTH-1:0] p1_req_addr,
    input  wire [31:0]           p1_req_n,
    output wire                  p1_elem_valid,
    input  wire                  p1_elem_ready,
    output wire [(8<<LOG_E1)-1:0] p1_elem_data,

    input  wire                  wr_req_valid,
    output wire                  wr_req_ready,
    input  wire [ADDR_WIDTH-1:0] wr_req_addr,
    input  wire [47:0]           wr_req_beats,
    input  wire                  wr_valid,
    output wire                  wr_ready,
    input  wire [(1<<LOG_BUS_WIDTH)-1:0]     wr_data,
    input  wire [(1<<(LOG_BUS_WIDTH-3))-1:0] wr_strb,

`include "tb_axi_ports.vh"
);

localparam NRD = 2;
`include "tb_axi_rd.vh"
`include "tb_axi_wr.vh"

// the two element streams, clients 0 and 1 of vta_dma_rd
vta_dma_rd_port #(.LOG_ELEM_BYTES(LOG_E0), .LOG_BUS_WIDTH(LOG_BUS_WIDTH),
                  .ADDR_WIDTH(ADDR_WIDTH), .BEATS_WIDTH(48)) p0 (
    .clk(clk), .rst(rst), .halt(halt),
    .req_valid(p0_req_valid), .req_ready(p0_req_ready), .req_addr(p0_req_addr), .req_n(p0_req_n),
    .dma_req_valid(rd_req_valid[0]), .dma_req_ready(rd_req_ready[0]),
    .dma_req_addr(rd_req_addr[0 +: ADDR_WIDTH]), .dma_req_beats(rd_req_beats[0 +: 48]),
    .beat_valid(rd_valid[0]), .beat_ready(rd_ready[0]), .beat_data(rd_data),
    .elem_valid(p0_elem_valid), .elem_ready(p0_elem_ready), .elem_data(p0_elem_data)
);
vta_dma_rd_port #(.LOG_ELEM_BYTES(LOG_E1), .LOG_BUS_WIDTH(LOG_BUS_WIDTH),
                  .ADDR_WIDTH(ADDR_WIDTH), .BEATS_WIDTH(48)) p1 (
    .clk(clk), .rst(rst), .halt(halt),
    .req_valid(p1_req_valid), .req_ready(p1_req_ready), .req_addr(p1_req_addr), .req_n(p1_req_n),
    .dma_req_valid(rd_req_valid[1]), .dma_req_ready(rd_req_ready[1]),
    .dma_req_addr(rd_req_addr[ADDR_WIDTH +: ADDR_WIDTH]), .dma_req_beats(rd_req_beats[48 +: 48]),
    .beat_valid(rd_valid[1]), .beat_ready(rd_ready[1]), .beat_data(rd_data),
    .elem_valid(p1_elem_valid), .elem_ready(p1_elem_ready), .elem_data(p1_elem_data)
);

endmodule

`resetall
