`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_top: the VTA accelerator (contract: docs/rtl-interface.md).
 *
 * Decoupled access-execute, as upstream VTA: fetch reads the instruction
 * stream and dispatches it to three command queues; load, compute and store
 * run concurrently, ordered only by the four dependency-token queues; every
 * DRAM access goes through one AXI4 master.
 *
 *   s_axil --> [vta_regs] --start/halt--> all      counters <-- events
 *                  |
 *               [vta_fetch] ---> (ld_q) ---> [vta_load] ----> INP, WGT SRAM
 *                  |        ---> (cmp_q) --> [vta_compute] <-- INP, WGT
 *                  |        ---> (st_q) ---> [vta_store]  |     UOP, ACC inside
 *                  |                            ^    |    +--> OUT SRAM
 *                  |        l2g/g2l: load <-> compute    |          |
 *                  |        g2s/s2g: compute <-> store   +<---------+
 *                  |                                     |
 *   m_axi AR/R <-- [vta_dma_rd] <-- fetch, INP, WGT, UOP, ACC, ACC_8BIT streams
 *   m_axi AW/W/B <-- [vta_dma_wr] <-- store
 *
 * Run end: DONE when fetch has dispatched INSN_COUNT instructions, every
 * queue is empty, every engine idle and compute retired FINISH; the same
 * without FINISH is NO_FINISH.  DEADLOCK when, for a few cycles in a row,
 * every engine either waits on an empty token queue or has nothing to do, at
 * least one waits, and fetch can dispatch nothing more.  The first fault
 * (fetch, load, compute, store priority within a cycle) stops the run.  A
 * DRAM error response (SLVERR/DECERR) is BUS_ERROR of the engine whose stream
 * it answered (fetch: ERR_INDEX is the first instruction of the failing
 * burst; the others: their current instruction), ERR_ADDR the burst address.
 *
 * MEM_SIZE is the device-memory size behind the master: an access beyond it
 * is a DRAM_RANGE fault (the golden model's memory size).
 */
`include "vta_isa.vh"

module vta_top #(
    // log2 of the INP / WGT / ACC lane widths in bits (3, 3, 5)
    parameter LOG_INP_WIDTH = 3,
    parameter LOG_WGT_WIDTH = 3,
    parameter LOG_ACC_WIDTH = 5,
    // GEMM core shape: BATCH x BLOCK x BLOCK
    parameter LOG_BATCH = 0,
    parameter LOG_BLOCK = 4,
    // log2 of the scratchpad sizes in bytes
    parameter LOG_UOP_BUFF_SIZE = 15,
    parameter LOG_INP_BUFF_SIZE = 15,
    parameter LOG_WGT_BUFF_SIZE = 18,
    parameter LOG_ACC_BUFF_SIZE = 17,
    // log2 of the AXI4 master data width in bits (6..9)
    parameter LOG_BUS_WIDTH = 6,
    // vta.Config.signature (CONFIG_SIG register)
    parameter [31:0] CONFIG_SIG = 32'd0,
    // AXI address width
    parameter ADDR_WIDTH = 32,
    // AXI ID width
    parameter ID_WIDTH = 4,
    // device-memory bytes behind the AXI master (DRAM_RANGE check)
    parameter [63:0] MEM_SIZE = 64'h10000000
) (
    input  wire        clk,
    input  wire        rst,

    // control: AXI4-Lite slave
    input  wire [11:0] s_axil_awaddr,
    input  wire [2:0]  s_axil_awprot,
    input  wire        s_axil_awvalid,
    output wire        s_axil_awready,
    input  wire [31:0] s_axil_wdata,
    input  wire [3:0]  s_axil_wstrb,
    input  wire        s_axil_wvalid,
    output wire        s_axil_wready,
    output wire [1:0]  s_axil_bresp,
    output wire        s_axil_bvalid,
    input  wire        s_axil_bready,
    input  wire [11:0] s_axil_araddr,
    input  wire [2:0]  s_axil_arprot,
    input  wire        s_axil_arvalid,
    output wire        s_axil_arready,
    output wire [31:0] s_axil_rdata,
    output wire [1:0]  s_axil_rresp,
    output wire        s_axil_rvalid,
    input  wire        s_axil_rready,

    // DRAM: AXI4 master
    output wire [ID_WIDTH-1:0]   m_axi_awid,
    output wire [ADDR_WIDTH-1:0] m_axi_awaddr,
    output wire [7:0]            m_axi_awlen,
    output wire [2:0]            m_axi_awsize,
    output wire [1:0]            m_axi_awburst,
    output wire                  m_axi_awlock,
    output wire [3:0]            m_axi_awcache,
    output wire [2:0]            m_axi_awprot,
    output wire                  m_axi_awvalid,
    input  wire                  m_axi_awready,
    output wire [(1<<LOG_BUS_WIDTH)-1:0]     m_axi_wdata,
    output wire [(1<<(LOG_BUS_WIDTH-3))-1:0] m_axi_wstrb,
    output wire                  m_axi_wlast,
    output wire                  m_axi_wvalid,
    input  wire                  m_axi_wready,
    input  wire [ID_WIDTH-1:0]   m_axi_bid,
    input  wire [1:0]            m_axi_bresp,
    input  wire                  m_axi_bvalid,
    output wire                  m_axi_bready,
    output wire [ID_WIDTH-1:0]   m_axi_arid,
    output wire [ADDR_WIDTH-1:0] m_axi_araddr,
    output wire [7:0]            m_axi_arlen,
    output wire [2:0]            m_axi_arsize,
    output wire [1:0]            m_axi_arburst,
    output wire                  m_axi_arlock,
    output wire [3:0]            m_axi_arcache,
    output wire [2:0]            m_axi_arprot,
    output wire                  m_axi_arvalid,
    input  wire                  m_axi_arready,
    input  wire [ID_WIDTH-1:0]   m_axi_rid,
    input  wire [(1<<LOG_BUS_WIDTH)-1:0] m_axi_rdata,
    input  wire [1:0]            m_axi_rresp,
    input  wire                  m_axi_rlast,
    input  wire                  m_axi_rvalid,
    output wire                  m_axi_rready,

    output wire        irq,

    // trace events (one-cycle pulses)
    output wire        evt_fetch_valid,
    output wire [31:0] evt_fetch_index,
    output wire        evt_load_start,
    output wire        evt_load_retire,
    output wire [31:0] evt_load_index,
    output wire        evt_compute_start,
    output wire        evt_compute_retire,
    output wire [31:0] evt_compute_index,
    output wire        evt_compute_uop,
    output wire        evt_store_start,
    output wire        evt_store_retire,
    output wire [31:0] evt_store_index
);

`include "vta_regs.vh"
`include "vta_cfg.vh"

// ---------------------------------------------------------------- sizes
localparam LOG_INP_BYTES = LOG_BATCH + LOG_BLOCK + LOG_INP_WIDTH - 3;
localparam LOG_WGT_BYTES = 2 * LOG_BLOCK + LOG_WGT_WIDTH - 3;
localparam LOG_ACC_BYTES = LOG_BATCH + LOG_BLOCK + LOG_ACC_WIDTH - 3;
localparam LOG_OUT_BYTES = LOG_BATCH + LOG_BLOCK + LOG_INP_WIDTH - 3;
localparam LOG_INP_DEPTH = LOG_INP_BUFF_SIZE - LOG_INP_BYTES;
localparam LOG_WGT_DEPTH = LOG_WGT_BUFF_SIZE - LOG_WGT_BYTES;
localparam LOG_ACC_DEPTH = LOG_ACC_BUFF_SIZE - LOG_ACC_BYTES;
// OUT has as many entries as ACC (LOG_OUT_BUFF_SIZE = LOG_ACC_BUFF_SIZE + 3 - 5)
localparam LOG_OUT_BUFF_SIZE = LOG_ACC_BUFF_SIZE + LOG_INP_WIDTH - LOG_ACC_WIDTH;
localparam integer INP_W = 8 << LOG_INP_BYTES;
localparam integer WGT_W = 8 << LOG_WGT_BYTES;
localparam integer OUT_W = 8 << LOG_OUT_BYTES;
localparam integer DW = 1 << LOG_BUS_WIDTH;
localparam BEATS_WIDTH = 48;
localparam LOG_QUEUE_DEPTH = 9;
localparam QW = LOG_QUEUE_DEPTH + 2;
localparam NRD = 6;   // read clients: fetch, INP, WGT, UOP, ACC, ACC_8BIT
localparam NCNT = `VTA_NUM_COUNTERS;

initial begin
    if (LOG_INP_WIDTH != `VTA_CFG_LOG_INP_WIDTH || LOG_WGT_WIDTH != `VTA_CFG_LOG_WGT_WIDTH
        || LOG_ACC_WIDTH != `VTA_CFG_LOG_ACC_WIDTH || LOG_BATCH != `VTA_CFG_LOG_BATCH
        || LOG_BLOCK != `VTA_CFG_LOG_BLOCK || LOG_UOP_BUFF_SIZE != `VTA_CFG_LOG_UOP_BUFF_SIZE
        || LOG_INP_BUFF_SIZE != `VTA_CFG_LOG_INP_BUFF_SIZE
        || LOG_WGT_BUFF_SIZE != `VTA_CFG_LOG_WGT_BUFF_SIZE
        || LOG_ACC_BUFF_SIZE != `VTA_CFG_LOG_ACC_BUFF_SIZE
        || LOG_BUS_WIDTH != `VTA_CFG_LOG_BUS_WIDTH) begin
        $display("%m: parameters differ from the configuration vta_isa.vh/vta_cfg.vh were generated for");
        $finish;
    end
    if (LOG_BUS_WIDTH < 6 || LOG_BUS_WIDTH > 9) begin
        $display("%m: LOG_BUS_WIDTH must be in 6..9, not %0d", LOG_BUS_WIDTH);
        $finish;
    end
    if (ADDR_WIDTH < 13 || ADDR_WIDTH > 64) begin
        $display("%m: ADDR_WIDTH must be in 13..64, not %0d", ADDR_WIDTH);
        $finish;
    end
    if (ADDR_WIDTH < 64 && MEM_SIZE > (64'd1 << ADDR_WIDTH)) begin
        $display("%m: MEM_SIZE (%0d) exceeds the %0d-bit address space", MEM_SIZE, ADDR_WIDTH);
        $finish;
    end
    if ((1 << ID_WIDTH) < NRD) begin
        $display("%m: ID_WIDTH must be at least 3 (6 read streams), not %0d", ID_WIDTH);
        $finish;
    end
end

// ---------------------------------------------------------------- control registers
wire [63:0] insn_addr;
wire [31:0] insn_count;
wire        start;
wire        run;
wire        halt;
wire        start_ok;
wire        run_done;
wire        err_valid;
wire [3:0]  err_module;
wire [7:0]  err_code;
wire [31:0] err_index;
wire [63:0] err_addr;
wire [31:0] tokens;
wire [31:0] fetch_index;
reg  [NCNT*32-1:0] cnt_inc;

vta_regs #(
    .LOG_INP_WIDTH(LOG_INP_WIDTH), .LOG_WGT_WIDTH(LOG_WGT_WIDTH), .LOG_ACC_WIDTH(LOG_ACC_WIDTH),
    .LOG_BATCH(LOG_BATCH), .LOG_BLOCK(LOG_BLOCK),
    .LOG_UOP_BUFF_SIZE(LOG_UOP_BUFF_SIZE), .LOG_INP_BUFF_SIZE(LOG_INP_BUFF_SIZE),
    .LOG_WGT_BUFF_SIZE(LOG_WGT_BUFF_SIZE), .LOG_ACC_BUFF_SIZE(LOG_ACC_BUFF_SIZE),
    .LOG_BUS_WIDTH(LOG_BUS_WIDTH), .CONFIG_SIG(CONFIG_SIG), .NUM_COUNTERS(NCNT)
) regs (
    .clk(clk), .rst(rst),
    .s_axil_awaddr(s_axil_awaddr), .s_axil_awprot(s_axil_awprot),
    .s_axil_awvalid(s_axil_awvalid), .s_axil_awready(s_axil_awready),
    .s_axil_wdata(s_axil_wdata), .s_axil_wstrb(s_axil_wstrb),
    .s_axil_wvalid(s_axil_wvalid), .s_axil_wready(s_axil_wready),
    .s_axil_bresp(s_axil_bresp), .s_axil_bvalid(s_axil_bvalid), .s_axil_bready(s_axil_bready),
    .s_axil_araddr(s_axil_araddr), .s_axil_arprot(s_axil_arprot),
    .s_axil_arvalid(s_axil_arvalid), .s_axil_arready(s_axil_arready),
    .s_axil_rdata(s_axil_rdata), .s_axil_rresp(s_axil_rresp),
    .s_axil_rvalid(s_axil_rvalid), .s_axil_rready(s_axil_rready),
    .insn_addr(insn_addr), .insn_count(insn_count),
    .start(start), .run(run), .halt(halt), .start_ok(start_ok), .run_done(run_done),
    .err_valid(err_valid), .err_module(err_module), .err_code(err_code), .err_index(err_index),
    .err_addr(err_addr), .tokens(tokens), .fetch_index(fetch_index), .cnt_inc(cnt_inc),
    .irq(irq)
);

// ---------------------------------------------------------------- DMA: one AXI4 master
wire [NRD-1:0]             rd_req_valid;
wire [NRD-1:0]             rd_req_ready;
wire [NRD*ADDR_WIDTH-1:0]  rd_req_addr;
wire [NRD*BEATS_WIDTH-1:0] rd_req_beats;
wire [NRD-1:0]             rd_valid;
wire [NRD-1:0]             rd_ready;
wire [DW-1:0]              rd_data;
wire                       rd_idle;
wire                       rd_bus_err;
wire [ID_WIDTH-1:0]        rd_bus_err_client;
wire [ADDR_WIDTH-1:0]      rd_bus_err_addr;

vta_dma_rd #(
    .N(NRD), .ADDR_WIDTH(ADDR_WIDTH), .ID_WIDTH(ID_WIDTH),
    .LOG_BUS_WIDTH(LOG_BUS_WIDTH), .BEATS_WIDTH(BEATS_WIDTH)
) dma_rd (
    .clk(clk), .rst(rst), .halt(halt), .idle(rd_idle),
    .bus_err(rd_bus_err), .bus_err_client(rd_bus_err_client), .bus_err_addr(rd_bus_err_addr),
    .req_valid(rd_req_valid), .req_ready(rd_req_ready),
    .req_addr(rd_req_addr), .req_beats(rd_req_beats),
    .rd_valid(rd_valid), .rd_ready(rd_ready), .rd_data(rd_data),
    .m_axi_arid(m_axi_arid), .m_axi_araddr(m_axi_araddr), .m_axi_arlen(m_axi_arlen),
    .m_axi_arsize(m_axi_arsize), .m_axi_arburst(m_axi_arburst), .m_axi_arlock(m_axi_arlock),
    .m_axi_arcache(m_axi_arcache), .m_axi_arprot(m_axi_arprot),
    .m_axi_arvalid(m_axi_arvalid), .m_axi_arready(m_axi_arready),
    .m_axi_rid(m_axi_rid), .m_axi_rdata(m_axi_rdata), .m_axi_rresp(m_axi_rresp),
    .m_axi_rlast(m_axi_rlast), .m_axi_rvalid(m_axi_rvalid), .m_axi_rready(m_axi_rready)
);

wire                   wr_req_valid;
wire                   wr_req_ready;
wire [ADDR_WIDTH-1:0]  wr_req_addr;
wire [BEATS_WIDTH-1:0] wr_req_beats;
wire                   wr_valid;
wire                   wr_ready;
wire [DW-1:0]          wr_data;
wire [DW/8-1:0]        wr_strb;
wire                   wr_idle;
wire                   wr_bus_err;
wire [ADDR_WIDTH-1:0]  wr_bus_err_addr;

vta_dma_wr #(
    .ADDR_WIDTH(ADDR_WIDTH), .ID_WIDTH(ID_WIDTH),
    .LOG_BUS_WIDTH(LOG_BUS_WIDTH), .BEATS_WIDTH(BEATS_WIDTH)
) dma_wr (
    .clk(clk), .rst(rst), .halt(halt), .idle(wr_idle),
    .bus_err(wr_bus_err), .bus_err_addr(wr_bus_err_addr),
    .req_valid(wr_req_valid), .req_ready(wr_req_ready),
    .req_addr(wr_req_addr), .req_beats(wr_req_beats),
    .wr_valid(wr_valid), .wr_ready(wr_ready), .wr_data(wr_data), .wr_strb(wr_strb),
    .m_axi_awid(m_axi_awid), .m_axi_awaddr(m_axi_awaddr), .m_axi_awlen(m_axi_awlen),
    .m_axi_awsize(m_axi_awsize), .m_axi_awburst(m_axi_awburst), .m_axi_awlock(m_axi_awlock),
    .m_axi_awcache(m_axi_awcache), .m_axi_awprot(m_axi_awprot),
    .m_axi_awvalid(m_axi_awvalid), .m_axi_awready(m_axi_awready),
    .m_axi_wdata(m_axi_wdata), .m_axi_wstrb(m_axi_wstrb), .m_axi_wlast(m_axi_wlast),
    .m_axi_wvalid(m_axi_wvalid), .m_axi_wready(m_axi_wready),
    .m_axi_bid(m_axi_bid), .m_axi_bresp(m_axi_bresp),
    .m_axi_bvalid(m_axi_bvalid), .m_axi_bready(m_axi_bready)
);

assign start_ok = rd_idle && wr_idle;

// ---------------------------------------------------------------- fetch and command queues
wire         ldq_in_valid, ldq_in_ready, ldq_out_valid, ldq_out_ready;
wire         cmpq_in_valid, cmpq_in_ready, cmpq_out_valid, cmpq_out_ready;
wire         stq_in_valid, stq_in_ready, stq_out_valid, stq_out_ready;
wire [`VTA_CMD_W-1:0] q_in_data, ldq_out_data, cmpq_out_data, stq_out_data;
wire [QW-1:0] ldq_count, cmpq_count, stq_count;
wire         f_err;
wire [7:0]   f_err_code;
wire [31:0]  f_err_index;
wire         f_done;
wire         f_quiet;

vta_fetch #(
    .LOG_BUS_WIDTH(LOG_BUS_WIDTH), .ADDR_WIDTH(ADDR_WIDTH), .BEATS_WIDTH(BEATS_WIDTH),
    .LOG_QUEUE_DEPTH(LOG_QUEUE_DEPTH), .MEM_SIZE(MEM_SIZE)
) fetch (
    .clk(clk), .rst(rst), .start(start), .halt(halt),
    .insn_addr(insn_addr), .insn_count(insn_count),
    .dma_req_valid(rd_req_valid[0]), .dma_req_ready(rd_req_ready[0]),
    .dma_req_addr(rd_req_addr[0 +: ADDR_WIDTH]), .dma_req_beats(rd_req_beats[0 +: BEATS_WIDTH]),
    .dma_rd_valid(rd_valid[0]), .dma_rd_ready(rd_ready[0]), .dma_rd_data(rd_data),
    .ld_valid(ldq_in_valid), .ld_ready(ldq_in_ready), .ld_count(ldq_count),
    .cmp_valid(cmpq_in_valid), .cmp_ready(cmpq_in_ready), .cmp_count(cmpq_count),
    .st_valid(stq_in_valid), .st_ready(stq_in_ready), .st_count(stq_count),
    .cmd_data(q_in_data),
    .err(f_err), .err_code(f_err_code), .err_index(f_err_index),
    .evt_valid(evt_fetch_valid), .evt_index(evt_fetch_index),
    .dispatched(fetch_index), .done(f_done), .quiet(f_quiet)
);

vta_fifo #(.WIDTH(`VTA_CMD_W), .LOG_DEPTH(LOG_QUEUE_DEPTH)) ld_queue (
    .clk(clk), .rst(rst), .clear(start),
    .in_valid(ldq_in_valid), .in_ready(ldq_in_ready), .in_data(q_in_data),
    .out_valid(ldq_out_valid), .out_ready(ldq_out_ready), .out_data(ldq_out_data),
    .count(ldq_count)
);

vta_fifo #(.WIDTH(`VTA_CMD_W), .LOG_DEPTH(LOG_QUEUE_DEPTH)) cmp_queue (
    .clk(clk), .rst(rst), .clear(start),
    .in_valid(cmpq_in_valid), .in_ready(cmpq_in_ready), .in_data(q_in_data),
    .out_valid(cmpq_out_valid), .out_ready(cmpq_out_ready), .out_data(cmpq_out_data),
    .count(cmpq_count)
);

vta_fifo #(.WIDTH(`VTA_CMD_W), .LOG_DEPTH(LOG_QUEUE_DEPTH)) st_queue (
    .clk(clk), .rst(rst), .clear(start),
    .in_valid(stq_in_valid), .in_ready(stq_in_ready), .in_data(q_in_data),
    .out_valid(stq_out_valid), .out_ready(stq_out_ready), .out_data(stq_out_data),
    .count(stq_count)
);

// ---------------------------------------------------------------- dependency-token queues
localparam TCW = $clog2(`VTA_TOKEN_QUEUE_DEPTH + 1);
wire l2g_push, l2g_pop, l2g_nonempty, l2g_full;
wire g2l_push, g2l_pop, g2l_nonempty, g2l_full;
wire g2s_push, g2s_pop, g2s_nonempty, g2s_full;
wire s2g_push, s2g_pop, s2g_nonempty, s2g_full;
wire [TCW-1:0] l2g_count, g2l_count, g2s_count, s2g_count;

vta_token_queue #(.DEPTH(`VTA_TOKEN_QUEUE_DEPTH)) l2g (
    .clk(clk), .rst(rst), .clear(start), .push(l2g_push), .pop(l2g_pop),
    .nonempty(l2g_nonempty), .full(l2g_full), .count(l2g_count)
);
vta_token_queue #(.DEPTH(`VTA_TOKEN_QUEUE_DEPTH)) g2l (
    .clk(clk), .rst(rst), .clear(start), .push(g2l_push), .pop(g2l_pop),
    .nonempty(g2l_nonempty), .full(g2l_full), .count(g2l_count)
);
vta_token_queue #(.DEPTH(`VTA_TOKEN_QUEUE_DEPTH)) g2s (
    .clk(clk), .rst(rst), .clear(start), .push(g2s_push), .pop(g2s_pop),
    .nonempty(g2s_nonempty), .full(g2s_full), .count(g2s_count)
);
vta_token_queue #(.DEPTH(`VTA_TOKEN_QUEUE_DEPTH)) s2g (
    .clk(clk), .rst(rst), .clear(start), .push(s2g_push), .pop(s2g_pop),
    .nonempty(s2g_nonempty), .full(s2g_full), .count(s2g_count)
);

function [7:0] sat8;
    input [TCW-1:0] v;
    begin
        sat8 = (v > 255) ? 8'd255 : v[7:0];
    end
endfunction
assign tokens = {sat8(s2g_count), sat8(g2s_count), sat8(g2l_count), sat8(l2g_count)};

// ---------------------------------------------------------------- scratchpads shared between engines
// (INP and WGT: compute reads them through the RAM output register, latency 2)
wire                     inp_we, inp_re;
wire [LOG_INP_DEPTH-1:0] inp_waddr, inp_raddr;
wire [INP_W-1:0]         inp_wdata, inp_rdata;
wire                     wgt_we, wgt_re;
wire [LOG_WGT_DEPTH-1:0] wgt_waddr, wgt_raddr;
wire [WGT_W-1:0]         wgt_wdata, wgt_rdata;
wire                     out_we, out_re;
wire [LOG_ACC_DEPTH-1:0] out_waddr, out_raddr;
wire [OUT_W-1:0]         out_wdata, out_rdata;

vta_sram #(.WIDTH(INP_W), .LOG_DEPTH(LOG_INP_DEPTH), .OUTPUT_REG(1)) inp_mem (
    .clk(clk), .we(inp_we), .waddr(inp_waddr), .wdata(inp_wdata),
    .re(inp_re), .raddr(inp_raddr), .rdata(inp_rdata)
);
vta_sram #(.WIDTH(WGT_W), .LOG_DEPTH(LOG_WGT_DEPTH), .OUTPUT_REG(1)) wgt_mem (
    .clk(clk), .we(wgt_we), .waddr(wgt_waddr), .wdata(wgt_wdata),
    .re(wgt_re), .raddr(wgt_raddr), .rdata(wgt_rdata)
);
vta_sram #(.WIDTH(OUT_W), .LOG_DEPTH(LOG_ACC_DEPTH)) out_mem (
    .clk(clk), .we(out_we), .waddr(out_waddr), .wdata(out_wdata),
    .re(out_re), .raddr(out_raddr), .rdata(out_rdata)
);

// ---------------------------------------------------------------- load engine
wire        l_err, l_start, l_retire, l_idle, l_stall, l_busy;
wire [7:0]  l_err_code;
wire [31:0] l_index, l_inp_bytes, l_wgt_bytes;

vta_load #(
    .LOG_INP_WIDTH(LOG_INP_WIDTH), .LOG_WGT_WIDTH(LOG_WGT_WIDTH),
    .LOG_BATCH(LOG_BATCH), .LOG_BLOCK(LOG_BLOCK),
    .LOG_INP_BUFF_SIZE(LOG_INP_BUFF_SIZE), .LOG_WGT_BUFF_SIZE(LOG_WGT_BUFF_SIZE),
    .LOG_BUS_WIDTH(LOG_BUS_WIDTH), .ADDR_WIDTH(ADDR_WIDTH), .BEATS_WIDTH(BEATS_WIDTH),
    .MEM_SIZE(MEM_SIZE)
) load (
    .clk(clk), .rst(rst), .run(run), .halt(halt),
    .cmd_valid(ldq_out_valid), .cmd_ready(ldq_out_ready), .cmd_data(ldq_out_data),
    .g2l_nonempty(g2l_nonempty), .g2l_pop(g2l_pop), .l2g_full(l2g_full), .l2g_push(l2g_push),
    .dma_req_valid(rd_req_valid[2:1]), .dma_req_ready(rd_req_ready[2:1]),
    .dma_req_addr(rd_req_addr[ADDR_WIDTH +: 2*ADDR_WIDTH]),
    .dma_req_beats(rd_req_beats[BEATS_WIDTH +: 2*BEATS_WIDTH]),
    .dma_rd_valid(rd_valid[2:1]), .dma_rd_ready(rd_ready[2:1]), .dma_rd_data(rd_data),
    .inp_we(inp_we), .inp_waddr(inp_waddr), .inp_wdata(inp_wdata),
    .wgt_we(wgt_we), .wgt_waddr(wgt_waddr), .wgt_wdata(wgt_wdata),
    .err(l_err), .err_code(l_err_code), .index(l_index),
    .evt_start(l_start), .evt_retire(l_retire),
    .idle(l_idle), .stall(l_stall), .busy(l_busy),
    .inp_bytes(l_inp_bytes), .wgt_bytes(l_wgt_bytes)
);

// ---------------------------------------------------------------- compute engine
wire        c_err, c_start, c_retire, c_finish, c_idle, c_stall, c_busy;
wire [7:0]  c_err_code;
wire [31:0] c_index, c_uop_bytes, c_acc_bytes, c_acc8_bytes, c_gemm_uops, c_alu_uops;

vta_compute #(
    .LOG_INP_WIDTH(LOG_INP_WIDTH), .LOG_WGT_WIDTH(LOG_WGT_WIDTH), .LOG_ACC_WIDTH(LOG_ACC_WIDTH),
    .LOG_BATCH(LOG_BATCH), .LOG_BLOCK(LOG_BLOCK),
    .LOG_UOP_BUFF_SIZE(LOG_UOP_BUFF_SIZE), .LOG_INP_BUFF_SIZE(LOG_INP_BUFF_SIZE),
    .LOG_WGT_BUFF_SIZE(LOG_WGT_BUFF_SIZE), .LOG_ACC_BUFF_SIZE(LOG_ACC_BUFF_SIZE),
    .LOG_BUS_WIDTH(LOG_BUS_WIDTH), .ADDR_WIDTH(ADDR_WIDTH), .BEATS_WIDTH(BEATS_WIDTH),
    .MEM_SIZE(MEM_SIZE)
) compute (
    .clk(clk), .rst(rst), .run(run), .halt(halt),
    .cmd_valid(cmpq_out_valid), .cmd_ready(cmpq_out_ready), .cmd_data(cmpq_out_data),
    .l2g_nonempty(l2g_nonempty), .l2g_pop(l2g_pop), .s2g_nonempty(s2g_nonempty), .s2g_pop(s2g_pop),
    .g2l_full(g2l_full), .g2l_push(g2l_push), .g2s_full(g2s_full), .g2s_push(g2s_push),
    .dma_req_valid(rd_req_valid[5:3]), .dma_req_ready(rd_req_ready[5:3]),
    .dma_req_addr(rd_req_addr[3*ADDR_WIDTH +: 3*ADDR_WIDTH]),
    .dma_req_beats(rd_req_beats[3*BEATS_WIDTH +: 3*BEATS_WIDTH]),
    .dma_rd_valid(rd_valid[5:3]), .dma_rd_ready(rd_ready[5:3]), .dma_rd_data(rd_data),
    .inp_re(inp_re), .inp_raddr(inp_raddr), .inp_rdata(inp_rdata),
    .wgt_re(wgt_re), .wgt_raddr(wgt_raddr), .wgt_rdata(wgt_rdata),
    .out_we(out_we), .out_waddr(out_waddr), .out_wdata(out_wdata),
    .err(c_err), .err_code(c_err_code), .index(c_index),
    .evt_start(c_start), .evt_retire(c_retire), .evt_uop(evt_compute_uop), .finish(c_finish),
    .idle(c_idle), .stall(c_stall), .busy(c_busy),
    .uop_bytes(c_uop_bytes), .acc_bytes(c_acc_bytes), .acc8_bytes(c_acc8_bytes),
    .gemm_uops(c_gemm_uops), .alu_uops(c_alu_uops)
);

// ---------------------------------------------------------------- store engine
wire        s_err, s_start, s_retire, s_idle, s_stall, s_busy;
wire [7:0]  s_err_code;
wire [31:0] s_index, s_out_bytes;

vta_store #(
    .LOG_OUT_WIDTH(LOG_INP_WIDTH), .LOG_BATCH(LOG_BATCH), .LOG_BLOCK(LOG_BLOCK),
    .LOG_OUT_BUFF_SIZE(LOG_OUT_BUFF_SIZE), .LOG_BUS_WIDTH(LOG_BUS_WIDTH),
    .ADDR_WIDTH(ADDR_WIDTH), .BEATS_WIDTH(BEATS_WIDTH), .MEM_SIZE(MEM_SIZE)
) store (
    .clk(clk), .rst(rst), .run(run), .halt(halt),
    .cmd_valid(stq_out_valid), .cmd_ready(stq_out_ready), .cmd_data(stq_out_data),
    .g2s_nonempty(g2s_nonempty), .g2s_pop(g2s_pop), .s2g_full(s2g_full), .s2g_push(s2g_push),
    .out_re(out_re), .out_raddr(out_raddr), .out_rdata(out_rdata),
    .dma_req_valid(wr_req_valid), .dma_req_ready(wr_req_ready),
    .dma_req_addr(wr_req_addr), .dma_req_beats(wr_req_beats),
    .dma_wr_valid(wr_valid), .dma_wr_ready(wr_ready), .dma_wr_data(wr_data),
    .dma_wr_strb(wr_strb), .dma_idle(wr_idle),
    .err(s_err), .err_code(s_err_code), .index(s_index),
    .evt_start(s_start), .evt_retire(s_retire),
    .idle(s_idle), .stall(s_stall), .busy(s_busy),
    .out_bytes(s_out_bytes)
);

// ---------------------------------------------------------------- trace events
assign evt_load_start = l_start;
assign evt_load_retire = l_retire;
assign evt_load_index = l_index;
assign evt_compute_start = c_start;
assign evt_compute_retire = c_retire;
assign evt_compute_index = c_index;
assign evt_store_start = s_start;
assign evt_store_retire = s_retire;
assign evt_store_index = s_index;

// ---------------------------------------------------------------- run end, faults, deadlock
reg       finish_seen_reg;
reg [2:0] dead_cnt_reg;
// run end and deadlock are decided from last cycle's state (registered): once
// drained, nothing can start again in a run; a deadlock lasts anyway
reg       drained_reg;
reg       dead_reg;

wire l_free = l_idle && ldq_count == {QW{1'b0}};
wire c_free = c_idle && cmpq_count == {QW{1'b0}};
wire s_free = s_idle && stq_count == {QW{1'b0}};
wire drained = f_done && l_free && c_free && s_free;
assign run_done = drained_reg && finish_seen_reg;

// the fault of this cycle (first by priority), registered into err_*_reg; a
// fetch bus error's index comes from the registered address (fetch_bus_reg)
reg         err_valid_d, err_valid_reg;
reg  [3:0]  err_module_d, err_module_reg;
reg  [7:0]  err_code_d, err_code_reg;
reg  [31:0] err_index_d, err_index_reg;
reg  [63:0] err_addr_d, err_addr_reg;
reg         fetch_bus_d, fetch_bus_reg;

// bus errors: read client -> engine (fetch 0, load 1-2, compute 3-5, as wired above)
// (zero-extended to 64 bits through a wider concatenation: ADDR_WIDTH may be 64)
wire [63+ADDR_WIDTH:0] rd_err_wide = {64'd0, rd_bus_err_addr};
wire [63+ADDR_WIDTH:0] wr_err_wide = {64'd0, wr_bus_err_addr};
wire [63:0] rd_err_addr64 = rd_err_wide[63:0];
wire [63:0] wr_err_addr64 = wr_err_wide[63:0];
wire [63:0] stream_base = {insn_addr[63:4], 4'd0};
wire [63:0] fetch_err_off = (err_addr_reg > stream_base) ? err_addr_reg - stream_base : 64'd0;
wire _unused_err = &{1'b0, rd_err_wide[63+ADDR_WIDTH:64], wr_err_wide[63+ADDR_WIDTH:64],
                     fetch_err_off[63:36], fetch_err_off[3:0], 1'b0};

assign err_valid = err_valid_reg;
assign err_module = err_module_reg;
assign err_code = err_code_reg;
assign err_index = fetch_bus_reg ? fetch_err_off[35:4] : err_index_reg;
assign err_addr = err_addr_reg;

wire dead_now = f_quiet && (l_stall || l_free) && (c_stall || c_free) && (s_stall || s_free)
                && (l_stall || c_stall || s_stall);

always @* begin
    err_valid_d = 1'b1;
    err_module_d = `VTA_MOD_NONE;
    err_code_d = `VTA_ERR_NONE;
    err_index_d = 32'd0;
    err_addr_d = 64'd0;
    fetch_bus_d = 1'b0;
    if (f_err) begin
        err_module_d = `VTA_MOD_FETCH;
        err_code_d = f_err_code;
        err_index_d = f_err_index;
    end else if (l_err) begin
        err_module_d = `VTA_MOD_LOAD;
        err_code_d = l_err_code;
        err_index_d = l_index;
    end else if (c_err) begin
        err_module_d = `VTA_MOD_COMPUTE;
        err_code_d = c_err_code;
        err_index_d = c_index;
    end else if (s_err) begin
        err_module_d = `VTA_MOD_STORE;
        err_code_d = s_err_code;
        err_index_d = s_index;
    end else if (rd_bus_err) begin
        err_code_d = `VTA_ERR_BUS_ERROR;
        err_addr_d = rd_err_addr64;
        if (rd_bus_err_client == {ID_WIDTH{1'b0}}) begin
            err_module_d = `VTA_MOD_FETCH;
            err_index_d = 32'd0;
            fetch_bus_d = 1'b1;
        end else if (rd_bus_err_client < 3) begin
            err_module_d = `VTA_MOD_LOAD;
            err_index_d = l_index;
        end else begin
            err_module_d = `VTA_MOD_COMPUTE;
            err_index_d = c_index;
        end
    end else if (wr_bus_err) begin
        err_module_d = `VTA_MOD_STORE;
        err_code_d = `VTA_ERR_BUS_ERROR;
        err_index_d = s_index;
        err_addr_d = wr_err_addr64;
    end else if (dead_cnt_reg == 3'd7) begin
        err_code_d = `VTA_ERR_DEADLOCK;
        if (l_stall) begin
            err_module_d = `VTA_MOD_LOAD;
            err_index_d = l_index;
        end else if (c_stall) begin
            err_module_d = `VTA_MOD_COMPUTE;
            err_index_d = c_index;
        end else begin
            err_module_d = `VTA_MOD_STORE;
            err_index_d = s_index;
        end
    end else if (drained_reg && !finish_seen_reg) begin
        err_module_d = `VTA_MOD_COMPUTE;
        err_code_d = `VTA_ERR_NO_FINISH;
        err_index_d = 32'hFFFFFFFF;
    end else begin
        err_valid_d = 1'b0;
    end
end

// the fault report is registered (the first fault of a cycle, by priority);
// vta_regs halts the engines on it in the cycle it arrives, as before
always @(posedge clk) begin
    err_valid_reg <= err_valid_d;
    err_module_reg <= err_module_d;
    err_code_reg <= err_code_d;
    err_index_reg <= err_index_d;
    err_addr_reg <= err_addr_d;
    fetch_bus_reg <= fetch_bus_d;
    if (rst || start) begin
        err_valid_reg <= 1'b0;
    end
end

always @(posedge clk) begin
    if (c_finish) begin
        finish_seen_reg <= 1'b1;
    end
    drained_reg <= drained;
    dead_reg <= dead_now;
    if (dead_reg && run) begin
        dead_cnt_reg <= (dead_cnt_reg == 3'd7) ? dead_cnt_reg : dead_cnt_reg + 3'd1;
    end else begin
        dead_cnt_reg <= 3'd0;
    end
    if (rst || start) begin
        finish_seen_reg <= 1'b0;
        dead_cnt_reg <= 3'd0;
        drained_reg <= 1'b0;
        dead_reg <= 1'b0;
    end
end

// ---------------------------------------------------------------- counters (regs.COUNTERS order)
always @* begin
    cnt_inc = {NCNT*32{1'b0}};
    cnt_inc[`VTA_CNT_CYCLES*32 +: 32] = 32'd1;
    cnt_inc[`VTA_CNT_LOAD_BUSY*32 +: 32] = {31'd0, l_busy};
    cnt_inc[`VTA_CNT_LOAD_STALL*32 +: 32] = {31'd0, l_stall};
    cnt_inc[`VTA_CNT_COMPUTE_BUSY*32 +: 32] = {31'd0, c_busy};
    cnt_inc[`VTA_CNT_COMPUTE_STALL*32 +: 32] = {31'd0, c_stall};
    cnt_inc[`VTA_CNT_STORE_BUSY*32 +: 32] = {31'd0, s_busy};
    cnt_inc[`VTA_CNT_STORE_STALL*32 +: 32] = {31'd0, s_stall};
    cnt_inc[`VTA_CNT_UOP_LOAD_BYTES*32 +: 32] = c_uop_bytes;
    cnt_inc[`VTA_CNT_INP_LOAD_BYTES*32 +: 32] = l_inp_bytes;
    cnt_inc[`VTA_CNT_WGT_LOAD_BYTES*32 +: 32] = l_wgt_bytes;
    cnt_inc[`VTA_CNT_ACC_LOAD_BYTES*32 +: 32] = c_acc_bytes;
    cnt_inc[`VTA_CNT_ACC8_LOAD_BYTES*32 +: 32] = c_acc8_bytes;
    cnt_inc[`VTA_CNT_OUT_STORE_BYTES*32 +: 32] = s_out_bytes;
    cnt_inc[`VTA_CNT_GEMM_UOPS*32 +: 32] = c_gemm_uops;
    cnt_inc[`VTA_CNT_ALU_UOPS*32 +: 32] = c_alu_uops;
    cnt_inc[`VTA_CNT_LOAD_INSNS*32 +: 32] = {31'd0, l_retire};
    cnt_inc[`VTA_CNT_COMPUTE_INSNS*32 +: 32] = {31'd0, c_retire};
    cnt_inc[`VTA_CNT_STORE_INSNS*32 +: 32] = {31'd0, s_retire};
    cnt_inc[`VTA_CNT_L2G_TOKENS*32 +: 32] = {31'd0, l2g_push};
    cnt_inc[`VTA_CNT_G2L_TOKENS*32 +: 32] = {31'd0, g2l_push};
    cnt_inc[`VTA_CNT_G2S_TOKENS*32 +: 32] = {31'd0, g2s_push};
    cnt_inc[`VTA_CNT_S2G_TOKENS*32 +: 32] = {31'd0, s2g_push};
end

endmodule

`resetall
