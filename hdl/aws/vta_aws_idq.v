`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_aws_idq: the PCIS port's ID queue.  The shell's PCIS master uses 6-bit (F1)
 * or 16-bit (F2) AXI IDs, the card memory 16-bit ones, and the crossbar needs one
 * ID bit of its own.  Instead of widening, this module sends every PCIS request on
 * to the crossbar with one ID (so the memory answers them in issue order, which
 * AXI allows) and keeps the shell's IDs in two FIFOs, one per direction, to put
 * them back on the responses.
 *
 * The FIFOs hold 2**LOG_DEPTH + 1 requests each: the shell has at most 32 reads
 * and 32 writes outstanding, so with LOG_DEPTH 5 the custom logic knows about
 * every request the shell issued (the shell interface specification's advice).
 * `rd_full` / `wr_full` say a FIFO is full (the shell's cl_sh_dma_rd_full /
 * cl_sh_dma_wr_full hints); `wr_busy` says a host write is offered or awaits its
 * response.
 */
module vta_aws_idq #(
    // AXI data width
    parameter DATA_WIDTH = 512,
    // AXI address width
    parameter ADDR_WIDTH = 64,
    // the shell's PCIS ID width (6 on F1, 16 on F2)
    parameter ID_WIDTH = 6,
    // log2 of the requests remembered per direction (minus one)
    parameter LOG_DEPTH = 5
) (
    input  wire                      clk,
    input  wire                      rst,

    output wire                      rd_full,
    output wire                      wr_full,
    output wire                      wr_busy,

    // from the shell
    input  wire [ID_WIDTH-1:0]       s_axi_awid,
    input  wire [ADDR_WIDTH-1:0]     s_axi_awaddr,
    input  wire [7:0]                s_axi_awlen,
    input  wire [2:0]                s_axi_awsize,
    input  wire                      s_axi_awvalid,
    output wire                      s_axi_awready,
    input  wire [DATA_WIDTH-1:0]     s_axi_wdata,
    input  wire [DATA_WIDTH/8-1:0]   s_axi_wstrb,
    input  wire                      s_axi_wlast,
    input  wire                      s_axi_wvalid,
    output wire                      s_axi_wready,
    output wire [ID_WIDTH-1:0]       s_axi_bid,
    output wire [1:0]                s_axi_bresp,
    output wire                      s_axi_bvalid,
    input  wire                      s_axi_bready,
    input  wire [ID_WIDTH-1:0]       s_axi_arid,
    input  wire [ADDR_WIDTH-1:0]     s_axi_araddr,
    input  wire [7:0]                s_axi_arlen,
    input  wire [2:0]                s_axi_arsize,
    input  wire                      s_axi_arvalid,
    output wire                      s_axi_arready,
    output wire [ID_WIDTH-1:0]       s_axi_rid,
    output wire [DATA_WIDTH-1:0]     s_axi_rdata,
    output wire [1:0]                s_axi_rresp,
    output wire                      s_axi_rlast,
    output wire                      s_axi_rvalid,
    input  wire                      s_axi_rready,

    // to the crossbar (one ID, not carried)
    output wire [ADDR_WIDTH-1:0]     m_axi_awaddr,
    output wire [7:0]                m_axi_awlen,
    output wire [2:0]                m_axi_awsize,
    output wire                      m_axi_awvalid,
    input  wire                      m_axi_awready,
    output wire [DATA_WIDTH-1:0]     m_axi_wdata,
    output wire [DATA_WIDTH/8-1:0]   m_axi_wstrb,
    output wire                      m_axi_wlast,
    output wire                      m_axi_wvalid,
    input  wire                      m_axi_wready,
    input  wire [1:0]                m_axi_bresp,
    input  wire                      m_axi_bvalid,
    output wire                      m_axi_bready,
    output wire [ADDR_WIDTH-1:0]     m_axi_araddr,
    output wire [7:0]                m_axi_arlen,
    output wire [2:0]                m_axi_arsize,
    output wire                      m_axi_arvalid,
    input  wire                      m_axi_arready,
    input  wire [DATA_WIDTH-1:0]     m_axi_rdata,
    input  wire [1:0]                m_axi_rresp,
    input  wire                      m_axi_rlast,
    input  wire                      m_axi_rvalid,
    output wire                      m_axi_rready
);

// FIFO occupancies (unused: in_ready says full)
wire [LOG_DEPTH+1:0] count1, count2;
wire _unused_counts = &{1'b0, count2, 1'b0};

// ------------------------------------------------------------------ writes
wire                aw_room;
wire                b_known;
wire [ID_WIDTH-1:0] b_id;
assign m_axi_awaddr = s_axi_awaddr;
assign m_axi_awlen = s_axi_awlen;
assign m_axi_awsize = s_axi_awsize;
assign m_axi_awvalid = s_axi_awvalid && aw_room;
assign s_axi_awready = m_axi_awready && aw_room;
assign wr_full = !aw_room;
// a host write is offered, or accepted and not yet answered
assign wr_busy = s_axi_awvalid || count1 != {(LOG_DEPTH+2){1'b0}};

vta_fifo #(.WIDTH(ID_WIDTH), .LOG_DEPTH(LOG_DEPTH)) bids (
    .clk(clk), .rst(rst), .clear(1'b0),
    .in_valid(s_axi_awvalid && s_axi_awready), .in_ready(aw_room), .in_data(s_axi_awid),
    .out_valid(b_known), .out_ready(s_axi_bvalid && s_axi_bready), .out_data(b_id), .count(count1)
);

assign m_axi_wdata = s_axi_wdata;
assign m_axi_wstrb = s_axi_wstrb;
assign m_axi_wlast = s_axi_wlast;
assign m_axi_wvalid = s_axi_wvalid;
assign s_axi_wready = m_axi_wready;

// a response waits until its request's ID is readable
assign s_axi_bvalid = m_axi_bvalid && b_known;
assign s_axi_bid = b_id;
assign s_axi_bresp = m_axi_bresp;
assign m_axi_bready = s_axi_bready && b_known;

// ------------------------------------------------------------------- reads
wire                ar_room;
wire                r_known;
wire [ID_WIDTH-1:0] r_id;
assign m_axi_araddr = s_axi_araddr;
assign m_axi_arlen = s_axi_arlen;
assign m_axi_arsize = s_axi_arsize;
assign m_axi_arvalid = s_axi_arvalid && ar_room;
assign s_axi_arready = m_axi_arready && ar_room;
assign rd_full = !ar_room;

vta_fifo #(.WIDTH(ID_WIDTH), .LOG_DEPTH(LOG_DEPTH)) rids (
    .clk(clk), .rst(rst), .clear(1'b0),
    .in_valid(s_axi_arvalid && s_axi_arready), .in_ready(ar_room), .in_data(s_axi_arid),
    .out_valid(r_known), .out_ready(s_axi_rvalid && s_axi_rready && s_axi_rlast),
    .out_data(r_id), .count(count2)
);

assign s_axi_rvalid = m_axi_rvalid && r_known;
assign s_axi_rid = r_id;
assign s_axi_rdata = m_axi_rdata;
assign s_axi_rresp = m_axi_rresp;
assign s_axi_rlast = m_axi_rlast;
assign m_axi_rready = s_axi_rready && r_known;

endmodule

`resetall
