`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_tb: simulation top for the persistent cocotb harness (sim/vta_harness.py).
 *
 *                 +-----------+  m_axi   +-----------+
 *   s_axil  ----> |  vta_top  | -------> | vta_dram  | <---- bd_* backdoor
 *   (harness)     |           |          | (AXI4 RAM)|       ($readmemh/$writememh)
 *                 +-----------+          +-----------+
 *                   | irq, evt_*
 *                   v
 *             [vta_monitor]: watchdog, per-engine last started / retired
 *             instruction index, trace ($fwrite, only while trace_en)
 *
 * Python posts register commands (cmd_*, performed by vta_axil_master),
 * backdoor copies (bd_*) and waits for cmd_ack, bd_ack, irq or wd_fire: one
 * wake per request, never per clock.
 * The clock comes from cocotb's GPI clock.
 *
 * Every input from Python (rst included) reaches the design and the DRAM model
 * only through flip-flops: with no combinational path from a top-level input,
 * Verilator never re-evaluates the design's combinational logic for an input
 * change (which each clock toggle is), the difference between ~40k and
 * several 100k cycles/s on the default configuration.
 *
 * Trace lines: see sim/vta_monitor.v.
 */
module vta_tb #(
    // configuration (names as vta.Config keys; see docs/rtl-interface.md)
    parameter LOG_INP_WIDTH = 3,
    parameter LOG_WGT_WIDTH = 3,
    parameter LOG_ACC_WIDTH = 5,
    parameter LOG_BATCH = 0,
    parameter LOG_BLOCK = 4,
    parameter LOG_UOP_BUFF_SIZE = 15,
    parameter LOG_INP_BUFF_SIZE = 15,
    parameter LOG_WGT_BUFF_SIZE = 18,
    parameter LOG_ACC_BUFF_SIZE = 17,
    parameter LOG_BUS_WIDTH = 6,
    parameter [31:0] CONFIG_SIG = 32'd0,
    parameter ADDR_WIDTH = 32,
    parameter ID_WIDTH = 4,
    // log2 of the device memory size in bytes (vta_top MEM_SIZE = 2**LOG_MEM_BYTES)
    parameter LOG_MEM_BYTES = 26,
    // DRAM model defaults (overridable with +DRAM_RLAT= etc., see vta_dram.v)
    parameter READ_LATENCY = 2,
    parameter WRITE_LATENCY = 2,
    parameter STALL = 0
) (
    input  wire        clk,
    input  wire        rst,

    // register access command, performed by the AXI4-Lite master below: set
    // cmd_write/cmd_addr/cmd_wdata, change cmd_req; cmd_ack follows cmd_req when the
    // transaction is complete (cmd_rdata/cmd_resp hold its result)
    input  wire [7:0]  cmd_req,
    input  wire        cmd_write,
    input  wire [11:0] cmd_addr,
    input  wire [31:0] cmd_wdata,
    output wire [7:0]  cmd_ack,
    output wire [31:0] cmd_rdata,
    output wire [1:0]  cmd_resp,

    output wire        irq,

    // DRAM backdoor
    input  wire [7:0]  bd_req,
    input  wire [1:0]  bd_op,
    input  wire [31:0] bd_word,
    input  wire [31:0] bd_count,
    output wire [7:0]  bd_ack,

    // trace and watchdog
    input  wire        trace_en,
    input  wire [31:0] wd_limit,
    input  wire        wd_clear,
    output wire        wd_fire,
    output wire [63:0] cycle,
    output wire [63:0] idle_cycles,

    // last instruction index each engine started / retired (all ones: none yet)
    output wire [31:0] last_fetch,
    output wire [31:0] load_started,
    output wire [31:0] load_retired,
    output wire [31:0] compute_started,
    output wire [31:0] compute_retired,
    output wire [31:0] store_started,
    output wire [31:0] store_retired,

    // DRAM statistics and checks
    output wire        dram_busy,
    output wire [31:0] dram_protocol_errors,
    output wire [63:0] dram_read_beats,
    output wire [63:0] dram_write_beats
);

localparam DW = 1 << LOG_BUS_WIDTH;

// ------------------------------------------------------------ registered reset
reg rst_r = 1'b1;
always @(posedge clk)
    rst_r <= rst;

// ------------------------------------------------------------ AXI4-Lite master
wire [11:0] s_axil_awaddr, s_axil_araddr;
wire [31:0] s_axil_wdata;
wire [3:0]  s_axil_wstrb;
wire        s_axil_awvalid, s_axil_wvalid, s_axil_bready, s_axil_arvalid, s_axil_rready;
wire        s_axil_awready, s_axil_wready, s_axil_bvalid, s_axil_arready, s_axil_rvalid;
wire [1:0]  s_axil_bresp, s_axil_rresp;
wire [31:0] s_axil_rdata;
wire [31:0] cmd_timeouts;

vta_axil_master #(.ADDR_WIDTH(12), .TIMEOUT(0)) axil (
    .clk(clk), .rst(rst_r),
    .cmd_req(cmd_req), .cmd_write(cmd_write), .cmd_addr(cmd_addr), .cmd_wdata(cmd_wdata),
    .cmd_ack(cmd_ack), .cmd_rdata(cmd_rdata), .cmd_resp(cmd_resp), .timeouts(cmd_timeouts),
    .m_axil_awaddr(s_axil_awaddr), .m_axil_awvalid(s_axil_awvalid),
    .m_axil_awready(s_axil_awready), .m_axil_wdata(s_axil_wdata), .m_axil_wstrb(s_axil_wstrb),
    .m_axil_wvalid(s_axil_wvalid), .m_axil_wready(s_axil_wready),
    .m_axil_bresp(s_axil_bresp), .m_axil_bvalid(s_axil_bvalid), .m_axil_bready(s_axil_bready),
    .m_axil_araddr(s_axil_araddr), .m_axil_arvalid(s_axil_arvalid),
    .m_axil_arready(s_axil_arready), .m_axil_rdata(s_axil_rdata), .m_axil_rresp(s_axil_rresp),
    .m_axil_rvalid(s_axil_rvalid), .m_axil_rready(s_axil_rready)
);

// backdoor and trace controls, registered
reg [7:0]  bd_req_r;
reg [1:0]  bd_op_r;
reg [31:0] bd_word_r, bd_count_r, wd_limit_r;
reg        trace_en_r, wd_clear_r;
always @(posedge clk) begin
    bd_req_r <= bd_req;
    bd_op_r <= bd_op;
    bd_word_r <= bd_word;
    bd_count_r <= bd_count;
    wd_limit_r <= wd_limit;
    trace_en_r <= trace_en;
    wd_clear_r <= wd_clear;
end

// ------------------------------------------------------------ AXI4 DRAM bus
wire [ID_WIDTH-1:0]   m_axi_awid;
wire [ADDR_WIDTH-1:0] m_axi_awaddr;
wire [7:0]            m_axi_awlen;
wire [2:0]            m_axi_awsize;
wire [1:0]            m_axi_awburst;
wire                  m_axi_awlock;
wire [3:0]            m_axi_awcache;
wire [2:0]            m_axi_awprot;
wire                  m_axi_awvalid;
wire                  m_axi_awready;
wire [DW-1:0]         m_axi_wdata;
wire [DW/8-1:0]       m_axi_wstrb;
wire                  m_axi_wlast;
wire                  m_axi_wvalid;
wire                  m_axi_wready;
wire [ID_WIDTH-1:0]   m_axi_bid;
wire [1:0]            m_axi_bresp;
wire                  m_axi_bvalid;
wire                  m_axi_bready;
wire [ID_WIDTH-1:0]   m_axi_arid;
wire [ADDR_WIDTH-1:0] m_axi_araddr;
wire [7:0]            m_axi_arlen;
wire [2:0]            m_axi_arsize;
wire [1:0]            m_axi_arburst;
wire                  m_axi_arlock;
wire [3:0]            m_axi_arcache;
wire [2:0]            m_axi_arprot;
wire                  m_axi_arvalid;
wire                  m_axi_arready;
wire [ID_WIDTH-1:0]   m_axi_rid;
wire [DW-1:0]         m_axi_rdata;
wire [1:0]            m_axi_rresp;
wire                  m_axi_rlast;
wire                  m_axi_rvalid;
wire                  m_axi_rready;

// trace event pulses
wire        evt_fetch_valid;
wire [31:0] evt_fetch_index;
wire        evt_load_start, evt_load_retire;
wire [31:0] evt_load_index;
wire        evt_compute_start, evt_compute_retire, evt_compute_uop;
wire [31:0] evt_compute_index;
wire        evt_store_start, evt_store_retire;
wire [31:0] evt_store_index;

// ------------------------------------------------------------ the design
vta_top #(
    .LOG_INP_WIDTH(LOG_INP_WIDTH), .LOG_WGT_WIDTH(LOG_WGT_WIDTH),
    .LOG_ACC_WIDTH(LOG_ACC_WIDTH), .LOG_BATCH(LOG_BATCH), .LOG_BLOCK(LOG_BLOCK),
    .LOG_UOP_BUFF_SIZE(LOG_UOP_BUFF_SIZE), .LOG_INP_BUFF_SIZE(LOG_INP_BUFF_SIZE),
    .LOG_WGT_BUFF_SIZE(LOG_WGT_BUFF_SIZE), .LOG_ACC_BUFF_SIZE(LOG_ACC_BUFF_SIZE),
    .LOG_BUS_WIDTH(LOG_BUS_WIDTH), .CONFIG_SIG(CONFIG_SIG), .ADDR_WIDTH(ADDR_WIDTH),
    .ID_WIDTH(ID_WIDTH), .MEM_SIZE(64'd1 << LOG_MEM_BYTES)
) dut (
    .clk(clk), .rst(rst_r),
    // control
    .s_axil_awaddr(s_axil_awaddr), .s_axil_awprot(3'd0), .s_axil_awvalid(s_axil_awvalid),
    .s_axil_awready(s_axil_awready), .s_axil_wdata(s_axil_wdata), .s_axil_wstrb(s_axil_wstrb),
    .s_axil_wvalid(s_axil_wvalid), .s_axil_wready(s_axil_wready), .s_axil_bresp(s_axil_bresp),
    .s_axil_bvalid(s_axil_bvalid), .s_axil_bready(s_axil_bready),
    .s_axil_araddr(s_axil_araddr), .s_axil_arprot(3'd0), .s_axil_arvalid(s_axil_arvalid),
    .s_axil_arready(s_axil_arready), .s_axil_rdata(s_axil_rdata), .s_axil_rresp(s_axil_rresp),
    .s_axil_rvalid(s_axil_rvalid), .s_axil_rready(s_axil_rready),
    // DRAM
    .m_axi_awid(m_axi_awid), .m_axi_awaddr(m_axi_awaddr), .m_axi_awlen(m_axi_awlen),
    .m_axi_awsize(m_axi_awsize), .m_axi_awburst(m_axi_awburst), .m_axi_awlock(m_axi_awlock),
    .m_axi_awcache(m_axi_awcache), .m_axi_awprot(m_axi_awprot),
    .m_axi_awvalid(m_axi_awvalid), .m_axi_awready(m_axi_awready),
    .m_axi_wdata(m_axi_wdata), .m_axi_wstrb(m_axi_wstrb), .m_axi_wlast(m_axi_wlast),
    .m_axi_wvalid(m_axi_wvalid), .m_axi_wready(m_axi_wready),
    .m_axi_bid(m_axi_bid), .m_axi_bresp(m_axi_bresp), .m_axi_bvalid(m_axi_bvalid),
    .m_axi_bready(m_axi_bready),
    .m_axi_arid(m_axi_arid), .m_axi_araddr(m_axi_araddr), .m_axi_arlen(m_axi_arlen),
    .m_axi_arsize(m_axi_arsize), .m_axi_arburst(m_axi_arburst), .m_axi_arlock(m_axi_arlock),
    .m_axi_arcache(m_axi_arcache), .m_axi_arprot(m_axi_arprot),
    .m_axi_arvalid(m_axi_arvalid), .m_axi_arready(m_axi_arready),
    .m_axi_rid(m_axi_rid), .m_axi_rdata(m_axi_rdata), .m_axi_rresp(m_axi_rresp),
    .m_axi_rlast(m_axi_rlast), .m_axi_rvalid(m_axi_rvalid), .m_axi_rready(m_axi_rready),
    // interrupt and trace events
    .irq(irq),
    .evt_fetch_valid(evt_fetch_valid), .evt_fetch_index(evt_fetch_index),
    .evt_load_start(evt_load_start), .evt_load_retire(evt_load_retire),
    .evt_load_index(evt_load_index),
    .evt_compute_start(evt_compute_start), .evt_compute_retire(evt_compute_retire),
    .evt_compute_index(evt_compute_index), .evt_compute_uop(evt_compute_uop),
    .evt_store_start(evt_store_start), .evt_store_retire(evt_store_retire),
    .evt_store_index(evt_store_index)
);

// ------------------------------------------------------------ device memory
vta_dram #(
    .DATA_WIDTH(DW), .ADDR_WIDTH(ADDR_WIDTH), .ID_WIDTH(ID_WIDTH),
    .LOG_MEM_BYTES(LOG_MEM_BYTES), .READ_LATENCY(READ_LATENCY),
    .WRITE_LATENCY(WRITE_LATENCY), .STALL(STALL)
) dram (
    .clk(clk), .rst(rst_r),
    .s_axi_awid(m_axi_awid), .s_axi_awaddr(m_axi_awaddr), .s_axi_awlen(m_axi_awlen),
    .s_axi_awsize(m_axi_awsize), .s_axi_awburst(m_axi_awburst),
    .s_axi_awvalid(m_axi_awvalid), .s_axi_awready(m_axi_awready),
    .s_axi_wdata(m_axi_wdata), .s_axi_wstrb(m_axi_wstrb), .s_axi_wlast(m_axi_wlast),
    .s_axi_wvalid(m_axi_wvalid), .s_axi_wready(m_axi_wready),
    .s_axi_bid(m_axi_bid), .s_axi_bresp(m_axi_bresp), .s_axi_bvalid(m_axi_bvalid),
    .s_axi_bready(m_axi_bready),
    .s_axi_arid(m_axi_arid), .s_axi_araddr(m_axi_araddr), .s_axi_arlen(m_axi_arlen),
    .s_axi_arsize(m_axi_arsize), .s_axi_arburst(m_axi_arburst),
    .s_axi_arvalid(m_axi_arvalid), .s_axi_arready(m_axi_arready),
    .s_axi_rid(m_axi_rid), .s_axi_rdata(m_axi_rdata), .s_axi_rresp(m_axi_rresp),
    .s_axi_rlast(m_axi_rlast), .s_axi_rvalid(m_axi_rvalid), .s_axi_rready(m_axi_rready),
    .bd_req(bd_req_r), .bd_op(bd_op_r), .bd_word(bd_word_r), .bd_count(bd_count_r),
    .bd_ack(bd_ack),
    .busy(dram_busy), .protocol_errors(dram_protocol_errors), .read_beats(dram_read_beats),
    .write_beats(dram_write_beats)
);

// ------------------------------------------------------------ watchdog, progress, trace
vta_monitor monitor (
    .clk(clk), .rst(rst_r), .trace_en(trace_en_r), .wd_limit(wd_limit_r), .wd_clear(wd_clear_r),
    // progress: a DRAM beat or a GEMM/ALU micro-op
    .irq(irq), .beat((m_axi_rvalid & m_axi_rready) | (m_axi_wvalid & m_axi_wready)
                     | evt_compute_uop),
    .evt_fetch_valid(evt_fetch_valid), .evt_fetch_index(evt_fetch_index),
    .evt_load_start(evt_load_start), .evt_load_retire(evt_load_retire),
    .evt_load_index(evt_load_index),
    .evt_compute_start(evt_compute_start), .evt_compute_retire(evt_compute_retire),
    .evt_compute_index(evt_compute_index),
    .evt_store_start(evt_store_start), .evt_store_retire(evt_store_retire),
    .evt_store_index(evt_store_index),
    .wd_fire(wd_fire), .cycle(cycle), .idle_cycles(idle_cycles), .last_fetch(last_fetch),
    .load_started(load_started), .load_retired(load_retired),
    .compute_started(compute_started), .compute_retired(compute_retired),
    .store_started(store_started), .store_retired(store_retired)
);

wire _unused_tb = &{1'b0, cmd_timeouts, 1'b0};

endmodule

`resetall
