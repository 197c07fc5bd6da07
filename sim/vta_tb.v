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
 *             trace monitor ($fwrite, only while trace_en)
 *             watchdog (cycles without any retire, dispatch or DRAM beat)
 *             per-engine last started / retired instruction index
 *
 * Python posts register commands (cmd_*), backdoor copies (bd_*) and waits
 * for cmd_ack, bd_ack, irq or wd_fire: one wake per request, never per clock.
 * The clock comes from cocotb's GPI clock.
 *
 * Every input from Python (rst included) reaches the design and the DRAM model
 * only through flip-flops: with no combinational path from a top-level input,
 * Verilator never re-evaluates the design's combinational logic for an input
 * change (which each clock toggle is), the difference between ~40k and
 * several 100k cycles/s on the default configuration.
 *
 * Trace lines (when +VTA_TRACE_FILE= is given and trace_en is high):
 *   <cycle> <module> <index> <event>     event: dispatch | start | retire
 * written at the rising edge that sees the event pulse; cycle counts rising
 * edges since reset was released.  vta/driver/rtl.py turns them into the
 * shared text format of vta/trace.py.
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
    output reg  [7:0]  cmd_ack,
    output reg  [31:0] cmd_rdata,
    output reg  [1:0]  cmd_resp,

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
    output reg         wd_fire,
    output reg  [63:0] cycle,
    output reg  [63:0] idle_cycles,

    // last instruction index each engine started / retired (all ones: none yet)
    output reg  [31:0] last_fetch,
    output reg  [31:0] load_started,
    output reg  [31:0] load_retired,
    output reg  [31:0] compute_started,
    output reg  [31:0] compute_retired,
    output reg  [31:0] store_started,
    output reg  [31:0] store_retired,

    // DRAM statistics and checks
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
reg [11:0] s_axil_awaddr, s_axil_araddr;
reg [31:0] s_axil_wdata;
reg        s_axil_awvalid, s_axil_wvalid, s_axil_bready, s_axil_arvalid, s_axil_rready;
wire       s_axil_awready, s_axil_wready, s_axil_bvalid, s_axil_arready, s_axil_rvalid;
wire [1:0] s_axil_bresp, s_axil_rresp;
wire [31:0] s_axil_rdata;
reg        cmd_busy;

always @(posedge clk) begin
    if (!cmd_busy && cmd_req != cmd_ack) begin
        // start the posted command
        cmd_busy <= 1'b1;
        if (cmd_write) begin
            s_axil_awaddr <= cmd_addr;
            s_axil_wdata <= cmd_wdata;
            s_axil_awvalid <= 1'b1;
            s_axil_wvalid <= 1'b1;
            s_axil_bready <= 1'b1;
        end else begin
            s_axil_araddr <= cmd_addr;
            s_axil_arvalid <= 1'b1;
            s_axil_rready <= 1'b1;
        end
    end
    if (s_axil_awvalid && s_axil_awready) s_axil_awvalid <= 1'b0;
    if (s_axil_wvalid && s_axil_wready) s_axil_wvalid <= 1'b0;
    if (s_axil_arvalid && s_axil_arready) s_axil_arvalid <= 1'b0;
    if (s_axil_bready && s_axil_bvalid) begin
        // write response: done
        s_axil_bready <= 1'b0;
        cmd_resp <= s_axil_bresp;
        cmd_rdata <= 32'd0;
        cmd_ack <= cmd_req;
        cmd_busy <= 1'b0;
    end
    if (s_axil_rready && s_axil_rvalid) begin
        // read data: done
        s_axil_rready <= 1'b0;
        cmd_resp <= s_axil_rresp;
        cmd_rdata <= s_axil_rdata;
        cmd_ack <= cmd_req;
        cmd_busy <= 1'b0;
    end
    if (rst_r) begin
        s_axil_awvalid <= 1'b0;
        s_axil_wvalid <= 1'b0;
        s_axil_bready <= 1'b0;
        s_axil_arvalid <= 1'b0;
        s_axil_rready <= 1'b0;
        cmd_busy <= 1'b0;
        cmd_ack <= cmd_req;
    end
end

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
wire        evt_compute_start, evt_compute_retire;
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
    .s_axil_awready(s_axil_awready), .s_axil_wdata(s_axil_wdata), .s_axil_wstrb(4'hF),
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
    .evt_compute_index(evt_compute_index),
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
    .protocol_errors(dram_protocol_errors), .read_beats(dram_read_beats),
    .write_beats(dram_write_beats)
);

// ------------------------------------------------------------ watchdog
wire activity = evt_fetch_valid | evt_load_start | evt_load_retire | evt_compute_start
              | evt_compute_retire | evt_store_start | evt_store_retire
              | (m_axi_rvalid & m_axi_rready) | (m_axi_wvalid & m_axi_wready);
always @(posedge clk) begin
    if (rst_r || wd_clear_r || activity || irq)
        idle_cycles <= 0;
    else if (!wd_fire)
        idle_cycles <= idle_cycles + 1;
    wd_fire <= !rst_r && !wd_clear_r && wd_limit_r != 0 && idle_cycles >= {32'd0, wd_limit_r}
               && !irq;
end

// ------------------------------------------------------------ progress and trace
integer trace_fd;
reg [8*512-1:0] trace_file;
reg irq_q, wd_q;
initial begin
    trace_fd = 0;
    if ($value$plusargs("VTA_TRACE_FILE=%s", trace_file))
        trace_fd = $fopen(trace_file, "w");
    cycle = 0;
    idle_cycles = 0;
    irq_q = 0;
    wd_q = 0;
    wd_fire = 0;
    cmd_ack = 0;
    cmd_busy = 0;
end

always @(posedge clk) begin
    if (rst_r) begin
        cycle <= 0;
        last_fetch <= 32'hFFFF_FFFF;
        load_started <= 32'hFFFF_FFFF;
        load_retired <= 32'hFFFF_FFFF;
        compute_started <= 32'hFFFF_FFFF;
        compute_retired <= 32'hFFFF_FFFF;
        store_started <= 32'hFFFF_FFFF;
        store_retired <= 32'hFFFF_FFFF;
    end else begin
        cycle <= cycle + 1;
        if (evt_fetch_valid) last_fetch <= evt_fetch_index;
        if (evt_load_start) load_started <= evt_load_index;
        if (evt_load_retire) load_retired <= evt_load_index;
        if (evt_compute_start) compute_started <= evt_compute_index;
        if (evt_compute_retire) compute_retired <= evt_compute_index;
        if (evt_store_start) store_started <= evt_store_index;
        if (evt_store_retire) store_retired <= evt_store_index;
    end
    irq_q <= irq;
    wd_q <= wd_fire;
    if (trace_fd != 0 && trace_en_r && !rst_r) begin
        if (evt_fetch_valid)
            $fwrite(trace_fd, "%0d fetch %0d dispatch\n", cycle, evt_fetch_index);
        if (evt_load_start)
            $fwrite(trace_fd, "%0d load %0d start\n", cycle, evt_load_index);
        if (evt_load_retire)
            $fwrite(trace_fd, "%0d load %0d retire\n", cycle, evt_load_index);
        if (evt_compute_start)
            $fwrite(trace_fd, "%0d compute %0d start\n", cycle, evt_compute_index);
        if (evt_compute_retire)
            $fwrite(trace_fd, "%0d compute %0d retire\n", cycle, evt_compute_index);
        if (evt_store_start)
            $fwrite(trace_fd, "%0d store %0d start\n", cycle, evt_store_index);
        if (evt_store_retire)
            $fwrite(trace_fd, "%0d store %0d retire\n", cycle, evt_store_index);
    end
    if (trace_fd != 0 && ((irq && !irq_q) || (wd_fire && !wd_q)))
        $fflush(trace_fd);
end

endmodule

`resetall
