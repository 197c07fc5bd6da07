`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_top: the VTA accelerator (contract: docs/rtl-interface.md).
 *
 * Decoupled access-execute, as upstream VTA: fetch reads the instruction
 * stream and dispatches it to three command queues; load, compute and store
 * run concurrently, ordered only by the four dependency-token queues; every
 * DRAM access goes through one AXI4 master.  This module is the netlist only;
 * what is decided about a run (its end, its first fault, a deadlock, the
 * counters) is vta_status's.
 *
 *   s_axil <-> [vta_regs] --start/run/halt--> every engine, queue and DMA
 *                  ^   ^
 *                  |   +-- err_*, run_done, tokens, cnt_inc -- [vta_status]
 *                  |                              ^ faults, idle/stall/busy,
 *             insn_addr/insn_count                | retires, queue and token
 *                  v                              | counts, bus errors
 *              [vta_fetch] --> (ld_queue)  --> [vta_load] ----------> INP, WGT SRAM
 *                  |       --> (cmp_queue) --> [vta_compute] <------- INP, WGT
 *                  |       --> (st_queue)  --> [vta_store]    |  (UOP, ACC inside)
 *                  |                            ^   |         +-----> OUT SRAM
 *                  |     l2g/g2l: load <-> compute  |                    |
 *                  |     g2s/s2g: compute <-> store +<-------------------+
 *                  |                                |
 *   m_axi AR/R <-- [vta_dma_rd] <-- fetch, INP, WGT, UOP, ACC, ACC_8BIT streams
 *   m_axi AW/W/B <-- [vta_dma_wr] <-- store
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
// (the run's start, run and halt; the status of vta_status below)
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
wire [NCNT*32-1:0] cnt_inc;

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
// reads: client 0 fetch, 1-2 load (INP, WGT), 3-5 compute (UOP, ACC, ACC_8BIT), each its
// own ARID; writes: the store engine
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


// ---------------------------------------------------------------- fetch and command queues
wire         ldq_in_valid, ldq_in_ready, ldq_out_valid, ldq_out_ready;
wire         cmpq_in_valid, cmpq_in_ready, cmpq_out_valid, cmpq_out_ready;
wire         stq_in_valid, stq_in_ready, stq_out_valid, stq_out_ready;
wire [`VTA_CMD_W-1:0] q_in_data, ldq_out_data, cmpq_out_data, stq_out_data;
wire [QW-1:0] ldq_count, cmpq_count, stq_count;
wire         fetch_err;
wire [7:0]   fetch_err_code;
wire [31:0]  fetch_err_index;
wire         fetch_done;
wire         fetch_quiet;

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
    .err(fetch_err), .err_code(fetch_err_code), .err_index(fetch_err_index),
    .evt_valid(evt_fetch_valid), .evt_index(evt_fetch_index),
    .dispatched(fetch_index), .done(fetch_done), .quiet(fetch_quiet)
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
wire        load_err, load_idle, load_stall, load_busy;
wire [7:0]  load_err_code;
wire [31:0] load_inp_bytes, load_wgt_bytes;

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
    .err(load_err), .err_code(load_err_code), .index(evt_load_index),
    .evt_start(evt_load_start), .evt_retire(evt_load_retire),
    .idle(load_idle), .stall(load_stall), .busy(load_busy),
    .inp_bytes(load_inp_bytes), .wgt_bytes(load_wgt_bytes)
);

// ---------------------------------------------------------------- compute engine
wire        compute_err, compute_finish, compute_idle, compute_stall, compute_busy;
wire [7:0]  compute_err_code;
wire [31:0] compute_uop_bytes, compute_acc_bytes, compute_acc8_bytes;
wire [31:0] compute_gemm_uops, compute_alu_uops;

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
    .err(compute_err), .err_code(compute_err_code), .index(evt_compute_index),
    .evt_start(evt_compute_start), .evt_retire(evt_compute_retire), .evt_uop(evt_compute_uop),
    .finish(compute_finish),
    .idle(compute_idle), .stall(compute_stall), .busy(compute_busy),
    .uop_bytes(compute_uop_bytes), .acc_bytes(compute_acc_bytes), .acc8_bytes(compute_acc8_bytes),
    .gemm_uops(compute_gemm_uops), .alu_uops(compute_alu_uops)
);

// ---------------------------------------------------------------- store engine
wire        store_err, store_idle, store_stall, store_busy;
wire [7:0]  store_err_code;
wire [31:0] store_out_bytes;

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
    .err(store_err), .err_code(store_err_code), .index(evt_store_index),
    .evt_start(evt_store_start), .evt_retire(evt_store_retire),
    .idle(store_idle), .stall(store_stall), .busy(store_busy),
    .out_bytes(store_out_bytes)
);

// ---------------------------------------------------------------- run end, faults, counters
vta_status #(
    .ADDR_WIDTH(ADDR_WIDTH), .ID_WIDTH(ID_WIDTH), .LOG_QUEUE_DEPTH(LOG_QUEUE_DEPTH)
) status (
    .clk(clk), .rst(rst), .start(start), .run(run), .insn_addr(insn_addr),
    .fetch_err(fetch_err), .fetch_err_code(fetch_err_code), .fetch_err_index(fetch_err_index),
    .fetch_done(fetch_done), .fetch_quiet(fetch_quiet),
    .ldq_count(ldq_count), .cmpq_count(cmpq_count), .stq_count(stq_count),
    .load_err(load_err), .load_err_code(load_err_code), .load_index(evt_load_index),
    .load_idle(load_idle), .load_stall(load_stall), .load_busy(load_busy),
    .load_retire(evt_load_retire),
    .load_inp_bytes(load_inp_bytes), .load_wgt_bytes(load_wgt_bytes),
    .compute_err(compute_err), .compute_err_code(compute_err_code),
    .compute_index(evt_compute_index),
    .compute_idle(compute_idle), .compute_stall(compute_stall), .compute_busy(compute_busy),
    .compute_retire(evt_compute_retire), .compute_finish(compute_finish),
    .compute_uop_bytes(compute_uop_bytes), .compute_acc_bytes(compute_acc_bytes),
    .compute_acc8_bytes(compute_acc8_bytes),
    .compute_gemm_uops(compute_gemm_uops), .compute_alu_uops(compute_alu_uops),
    .store_err(store_err), .store_err_code(store_err_code), .store_index(evt_store_index),
    .store_idle(store_idle), .store_stall(store_stall), .store_busy(store_busy),
    .store_retire(evt_store_retire), .store_out_bytes(store_out_bytes),
    .rd_idle(rd_idle), .rd_bus_err(rd_bus_err), .rd_bus_err_client(rd_bus_err_client),
    .rd_bus_err_addr(rd_bus_err_addr),
    .wr_idle(wr_idle), .wr_bus_err(wr_bus_err), .wr_bus_err_addr(wr_bus_err_addr),
    .l2g_push(l2g_push), .g2l_push(g2l_push), .g2s_push(g2s_push), .s2g_push(s2g_push),
    .l2g_count(l2g_count), .g2l_count(g2l_count), .g2s_count(g2s_count), .s2g_count(s2g_count),
    .start_ok(start_ok), .run_done(run_done),
    .err_valid(err_valid), .err_module(err_module), .err_code(err_code),
    .err_index(err_index), .err_addr(err_addr),
    .tokens(tokens), .cnt_inc(cnt_inc)
);

endmodule

`resetall
