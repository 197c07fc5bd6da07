`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_aws_tb: simulation top for an AWS custom-logic wrapper (hdl/aws/vta_aws_f1 or
 * vta_aws_f2, chosen by SHELL) with models of the shell's ports, served by the
 * persistent cocotb harness sim/aws/vta_aws_harness.py.
 *
 *   cmd_*  --> [vta_axil_master: OCL, 8 us timeout] --> sh_ocl_* / ocl_cl_*   (BAR0)
 *   pc_*   --> [vta_pcis_master: PCIS, 8 us check]  --> sh_cl_dma_pcis_*      (BAR4)
 *                                                       +----------------+
 *                                                       | vta_aws_f1/f2  |
 *   bd_*   --> [vta_dram: card memory, 512-bit] <------ | DDR C / sh_ddr |
 *              (backdoor for tests)                     +----------------+
 *   irq ack model: acknowledges user interrupt 0 a few cycles after each request
 *   [vta_monitor]: watchdog, progress, trace, from vta_top's event pulses (read
 *   hierarchically: the wrapper has no such ports)
 *
 * The port names the harness uses are those of sim/vta_tb.v, so the same harness
 * code serves both; pc_* and the shell-side counters are added.  Every input from
 * Python reaches the design through flip-flops (see vta_tb.v for why).
 *
 * rst resets everything; cl_hold holds the custom logic in reset (rst_main_n low)
 * and with it the card memory's AXI port (its contents stay), while the OCL and
 * PCIS models keep running: accesses then time out as on an instance whose AFI
 * does not answer.
 */
module vta_aws_tb #(
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
    // shell: 1 F1, 2 F2
    parameter SHELL = 1,
    // log2 of the card memory in bytes
    parameter LOG_MEM_BYTES = 26,
    // clk_main_a0 cycles in the shell's 8 us timeout
    parameter TIMEOUT = 1000,
    // DRAM model defaults (overridable with +DRAM_RLAT= etc., see vta_dram.v)
    parameter READ_LATENCY = 2,
    parameter WRITE_LATENCY = 2,
    parameter STALL = 0
) (
    input  wire        clk,
    input  wire        rst,
    input  wire        cl_hold,
    input  wire        flr,

    // OCL register access (see vta_axil_master.v)
    input  wire [7:0]  cmd_req,
    input  wire        cmd_write,
    input  wire [31:0] cmd_addr,
    input  wire [31:0] cmd_wdata,
    output wire [7:0]  cmd_ack,
    output wire [31:0] cmd_rdata,
    output wire [1:0]  cmd_resp,
    output wire [31:0] cmd_timeouts,

    // PCIS bulk transfers (see vta_pcis_master.v)
    input  wire [7:0]  pc_req,
    input  wire [1:0]  pc_op,
    input  wire [63:0] pc_addr,
    input  wire [31:0] pc_bytes,
    input  wire [15:0] pc_id,
    input  wire [8:0]  pc_beats,
    output wire [7:0]  pc_ack,
    output wire [31:0] pc_late,
    output wire [31:0] pc_max_wait,
    output wire [31:0] pc_id_errors,
    output wire [31:0] pc_resp_errors,

    // VTA finished (DONE or ERROR), and interrupts the shell model acknowledged
    output wire        irq,
    output reg  [31:0] irq_seen,
    output wire        flr_done,
    // the PCI IDs the custom logic reports (cl_sh_id0 / cl_sh_id1)
    output wire [31:0] cl_id0,
    output wire [31:0] cl_id1,

    // card-memory backdoor
    input  wire [7:0]  bd_req,
    input  wire [1:0]  bd_op,
    input  wire [31:0] bd_word,
    input  wire [31:0] bd_count,
    output wire [7:0]  bd_ack,

    // trace and watchdog (see vta_monitor.v)
    input  wire        trace_en,
    input  wire [31:0] wd_limit,
    input  wire        wd_clear,
    output wire        wd_fire,
    output wire [63:0] cycle,
    output wire [63:0] idle_cycles,
    output wire [31:0] last_fetch,
    output wire [31:0] load_started,
    output wire [31:0] load_retired,
    output wire [31:0] compute_started,
    output wire [31:0] compute_retired,
    output wire [31:0] store_started,
    output wire [31:0] store_retired,

    // card-memory statistics and checks
    output wire        dram_busy,
    output wire [31:0] dram_protocol_errors,
    output wire [63:0] dram_read_beats,
    output wire [63:0] dram_write_beats
);

localparam PCIS_ID_WIDTH = (SHELL == 1) ? 6 : 16;

// ------------------------------------------------------------ registered inputs
reg rst_r = 1'b1;
reg hold_r = 1'b0;
reg flr_r = 1'b0;
reg [7:0]  bd_req_r;
reg [1:0]  bd_op_r;
reg [31:0] bd_word_r, bd_count_r, wd_limit_r;
reg        trace_en_r, wd_clear_r;
always @(posedge clk) begin
    rst_r <= rst;
    hold_r <= cl_hold;
    flr_r <= flr;
    bd_req_r <= bd_req;
    bd_op_r <= bd_op;
    bd_word_r <= bd_word;
    bd_count_r <= bd_count;
    wd_limit_r <= wd_limit;
    trace_en_r <= trace_en;
    wd_clear_r <= wd_clear;
end
wire rst_main_n = !(rst_r || hold_r);

// ------------------------------------------------------------ OCL: shell's AXI4-Lite master
wire [31:0] ocl_awaddr, ocl_araddr, ocl_wdata, ocl_rdata;
wire [3:0]  ocl_wstrb;
wire        ocl_awvalid, ocl_awready, ocl_wvalid, ocl_wready, ocl_bvalid, ocl_bready;
wire        ocl_arvalid, ocl_arready, ocl_rvalid, ocl_rready;
wire [1:0]  ocl_bresp, ocl_rresp;

vta_axil_master #(.ADDR_WIDTH(32), .TIMEOUT(TIMEOUT)) ocl (
    .clk(clk), .rst(rst_r),
    .cmd_req(cmd_req), .cmd_write(cmd_write), .cmd_addr(cmd_addr), .cmd_wdata(cmd_wdata),
    .cmd_ack(cmd_ack), .cmd_rdata(cmd_rdata), .cmd_resp(cmd_resp), .timeouts(cmd_timeouts),
    .m_axil_awaddr(ocl_awaddr), .m_axil_awvalid(ocl_awvalid), .m_axil_awready(ocl_awready),
    .m_axil_wdata(ocl_wdata), .m_axil_wstrb(ocl_wstrb), .m_axil_wvalid(ocl_wvalid),
    .m_axil_wready(ocl_wready), .m_axil_bresp(ocl_bresp), .m_axil_bvalid(ocl_bvalid),
    .m_axil_bready(ocl_bready), .m_axil_araddr(ocl_araddr), .m_axil_arvalid(ocl_arvalid),
    .m_axil_arready(ocl_arready), .m_axil_rdata(ocl_rdata), .m_axil_rresp(ocl_rresp),
    .m_axil_rvalid(ocl_rvalid), .m_axil_rready(ocl_rready)
);

// ------------------------------------------------------------ PCIS: shell's AXI4 master
wire [PCIS_ID_WIDTH-1:0] pcis_awid, pcis_bid, pcis_arid, pcis_rid;
wire [63:0]  pcis_awaddr, pcis_araddr;
wire [7:0]   pcis_awlen, pcis_arlen;
wire [2:0]   pcis_awsize, pcis_arsize;
wire         pcis_awvalid, pcis_awready, pcis_wlast, pcis_wvalid, pcis_wready;
wire         pcis_bvalid, pcis_bready, pcis_arvalid, pcis_arready;
wire         pcis_rlast, pcis_rvalid, pcis_rready;
wire [511:0] pcis_wdata, pcis_rdata;
wire [63:0]  pcis_wstrb;
wire [1:0]   pcis_bresp, pcis_rresp;

vta_pcis_master #(.ID_WIDTH(PCIS_ID_WIDTH), .TIMEOUT(TIMEOUT)) pcis (
    .clk(clk), .rst(rst_r),
    .pc_req(pc_req), .pc_op(pc_op), .pc_addr(pc_addr), .pc_bytes(pc_bytes), .pc_id(pc_id),
    .pc_beats(pc_beats), .pc_ack(pc_ack), .pc_late(pc_late), .pc_max_wait(pc_max_wait),
    .pc_id_errors(pc_id_errors), .pc_resp_errors(pc_resp_errors),
    .m_axi_awid(pcis_awid), .m_axi_awaddr(pcis_awaddr), .m_axi_awlen(pcis_awlen),
    .m_axi_awsize(pcis_awsize), .m_axi_awvalid(pcis_awvalid), .m_axi_awready(pcis_awready),
    .m_axi_wdata(pcis_wdata), .m_axi_wstrb(pcis_wstrb), .m_axi_wlast(pcis_wlast),
    .m_axi_wvalid(pcis_wvalid), .m_axi_wready(pcis_wready),
    .m_axi_bid(pcis_bid), .m_axi_bresp(pcis_bresp), .m_axi_bvalid(pcis_bvalid),
    .m_axi_bready(pcis_bready),
    .m_axi_arid(pcis_arid), .m_axi_araddr(pcis_araddr), .m_axi_arlen(pcis_arlen),
    .m_axi_arsize(pcis_arsize), .m_axi_arvalid(pcis_arvalid), .m_axi_arready(pcis_arready),
    .m_axi_rid(pcis_rid), .m_axi_rdata(pcis_rdata), .m_axi_rresp(pcis_rresp),
    .m_axi_rlast(pcis_rlast), .m_axi_rvalid(pcis_rvalid), .m_axi_rready(pcis_rready)
);

// ------------------------------------------------------------ card memory
wire [15:0]  mem_awid, mem_bid, mem_arid, mem_rid;
wire [63:0]  mem_awaddr, mem_araddr;
wire [7:0]   mem_awlen, mem_arlen;
wire [2:0]   mem_awsize, mem_arsize;
wire [1:0]   mem_awburst, mem_arburst;
wire         mem_awvalid, mem_awready, mem_wlast, mem_wvalid, mem_wready;
wire         mem_bvalid, mem_bready, mem_arvalid, mem_arready;
wire         mem_rlast, mem_rvalid, mem_rready;
wire [511:0] mem_wdata, mem_rdata;
wire [63:0]  mem_wstrb;
wire [1:0]   mem_bresp, mem_rresp;

vta_dram #(
    .DATA_WIDTH(512), .ADDR_WIDTH(64), .ID_WIDTH(16), .LOG_MEM_BYTES(LOG_MEM_BYTES),
    .READ_LATENCY(READ_LATENCY), .WRITE_LATENCY(WRITE_LATENCY), .STALL(STALL)
) dram (
    .clk(clk), .rst(!rst_main_n),
    .s_axi_awid(mem_awid), .s_axi_awaddr(mem_awaddr), .s_axi_awlen(mem_awlen),
    .s_axi_awsize(mem_awsize), .s_axi_awburst(mem_awburst),
    .s_axi_awvalid(mem_awvalid), .s_axi_awready(mem_awready),
    .s_axi_wdata(mem_wdata), .s_axi_wstrb(mem_wstrb), .s_axi_wlast(mem_wlast),
    .s_axi_wvalid(mem_wvalid), .s_axi_wready(mem_wready),
    .s_axi_bid(mem_bid), .s_axi_bresp(mem_bresp), .s_axi_bvalid(mem_bvalid),
    .s_axi_bready(mem_bready),
    .s_axi_arid(mem_arid), .s_axi_araddr(mem_araddr), .s_axi_arlen(mem_arlen),
    .s_axi_arsize(mem_arsize), .s_axi_arburst(mem_arburst),
    .s_axi_arvalid(mem_arvalid), .s_axi_arready(mem_arready),
    .s_axi_rid(mem_rid), .s_axi_rdata(mem_rdata), .s_axi_rresp(mem_rresp),
    .s_axi_rlast(mem_rlast), .s_axi_rvalid(mem_rvalid), .s_axi_rready(mem_rready),
    .bd_req(bd_req_r), .bd_op(bd_op_r), .bd_word(bd_word_r), .bd_count(bd_count_r),
    .bd_ack(bd_ack),
    .busy(dram_busy), .protocol_errors(dram_protocol_errors), .read_beats(dram_read_beats),
    .write_beats(dram_write_beats)
);

// ------------------------------------------------------------ interrupt acknowledgement
wire [15:0] irq_req;
reg  [15:0] irq_ack;
reg  [2:0]  ack_delay;
always @(posedge clk) begin
    irq_ack <= 16'd0;
    if (ack_delay != 3'd0) begin
        ack_delay <= ack_delay - 3'd1;
        if (ack_delay == 3'd1) begin
            irq_ack[0] <= 1'b1;
            irq_seen <= irq_seen + 32'd1;
        end
    end else if (irq_req[0]) begin
        ack_delay <= 3'd3;
    end
    if (rst_r) begin
        ack_delay <= 3'd0;
        irq_seen <= 32'd0;
    end
end

// ------------------------------------------------------------ the custom logic
wire        vta_irq;
wire        evt_fetch_valid, evt_load_start, evt_load_retire, evt_compute_start;
wire        evt_compute_retire, evt_store_start, evt_store_retire;
wire [31:0] evt_fetch_index, evt_load_index, evt_compute_index, evt_store_index;
wire [15:0] vled;

generate
if (SHELL == 1) begin : g_f1
    vta_aws_f1 #(
        .LOG_INP_WIDTH(LOG_INP_WIDTH), .LOG_WGT_WIDTH(LOG_WGT_WIDTH),
        .LOG_ACC_WIDTH(LOG_ACC_WIDTH), .LOG_BATCH(LOG_BATCH), .LOG_BLOCK(LOG_BLOCK),
        .LOG_UOP_BUFF_SIZE(LOG_UOP_BUFF_SIZE), .LOG_INP_BUFF_SIZE(LOG_INP_BUFF_SIZE),
        .LOG_WGT_BUFF_SIZE(LOG_WGT_BUFF_SIZE), .LOG_ACC_BUFF_SIZE(LOG_ACC_BUFF_SIZE),
        .LOG_BUS_WIDTH(LOG_BUS_WIDTH), .CONFIG_SIG(CONFIG_SIG), .LOG_MEM_BYTES(LOG_MEM_BYTES)
    ) dut (
        .clk_main_a0(clk), .rst_main_n(rst_main_n),
        .sh_cl_flr_assert(flr_r), .cl_sh_flr_done(flr_done),
        .cl_sh_status0(), .cl_sh_status1(), .cl_sh_id0(cl_id0), .cl_sh_id1(cl_id1),
        .sh_cl_status_vdip(16'd0), .cl_sh_status_vled(vled),
        .cl_sh_dma_wr_full(), .cl_sh_dma_rd_full(),
        .cl_sh_pcim_awid(), .cl_sh_pcim_awaddr(), .cl_sh_pcim_awlen(), .cl_sh_pcim_awsize(),
        .cl_sh_pcim_awuser(), .cl_sh_pcim_awvalid(), .cl_sh_pcim_wdata(), .cl_sh_pcim_wstrb(),
        .cl_sh_pcim_wlast(), .cl_sh_pcim_wvalid(), .cl_sh_pcim_bready(), .cl_sh_pcim_arid(),
        .cl_sh_pcim_araddr(), .cl_sh_pcim_arlen(), .cl_sh_pcim_arsize(), .cl_sh_pcim_aruser(),
        .cl_sh_pcim_arvalid(), .cl_sh_pcim_rready(),
        // DDR C
        .cl_sh_ddr_awid(mem_awid), .cl_sh_ddr_awaddr(mem_awaddr), .cl_sh_ddr_awlen(mem_awlen),
        .cl_sh_ddr_awsize(mem_awsize), .cl_sh_ddr_awburst(mem_awburst),
        .cl_sh_ddr_awvalid(mem_awvalid), .sh_cl_ddr_awready(mem_awready),
        .cl_sh_ddr_wid(), .cl_sh_ddr_wdata(mem_wdata), .cl_sh_ddr_wstrb(mem_wstrb),
        .cl_sh_ddr_wlast(mem_wlast), .cl_sh_ddr_wvalid(mem_wvalid),
        .sh_cl_ddr_wready(mem_wready),
        .sh_cl_ddr_bid(mem_bid), .sh_cl_ddr_bresp(mem_bresp), .sh_cl_ddr_bvalid(mem_bvalid),
        .cl_sh_ddr_bready(mem_bready),
        .cl_sh_ddr_arid(mem_arid), .cl_sh_ddr_araddr(mem_araddr), .cl_sh_ddr_arlen(mem_arlen),
        .cl_sh_ddr_arsize(mem_arsize), .cl_sh_ddr_arburst(mem_arburst),
        .cl_sh_ddr_arvalid(mem_arvalid), .sh_cl_ddr_arready(mem_arready),
        .sh_cl_ddr_rid(mem_rid), .sh_cl_ddr_rdata(mem_rdata), .sh_cl_ddr_rresp(mem_rresp),
        .sh_cl_ddr_rlast(mem_rlast), .sh_cl_ddr_rvalid(mem_rvalid),
        .cl_sh_ddr_rready(mem_rready), .sh_cl_ddr_is_ready(!rst_r),
        // interrupts
        .cl_sh_apppf_irq_req(irq_req), .sh_cl_apppf_irq_ack(irq_ack),
        // PCIS
        .sh_cl_dma_pcis_awid(pcis_awid), .sh_cl_dma_pcis_awaddr(pcis_awaddr),
        .sh_cl_dma_pcis_awlen(pcis_awlen), .sh_cl_dma_pcis_awsize(pcis_awsize),
        .sh_cl_dma_pcis_awvalid(pcis_awvalid), .cl_sh_dma_pcis_awready(pcis_awready),
        .sh_cl_dma_pcis_wdata(pcis_wdata), .sh_cl_dma_pcis_wstrb(pcis_wstrb),
        .sh_cl_dma_pcis_wlast(pcis_wlast), .sh_cl_dma_pcis_wvalid(pcis_wvalid),
        .cl_sh_dma_pcis_wready(pcis_wready),
        .cl_sh_dma_pcis_bid(pcis_bid), .cl_sh_dma_pcis_bresp(pcis_bresp),
        .cl_sh_dma_pcis_bvalid(pcis_bvalid), .sh_cl_dma_pcis_bready(pcis_bready),
        .sh_cl_dma_pcis_arid(pcis_arid), .sh_cl_dma_pcis_araddr(pcis_araddr),
        .sh_cl_dma_pcis_arlen(pcis_arlen), .sh_cl_dma_pcis_arsize(pcis_arsize),
        .sh_cl_dma_pcis_arvalid(pcis_arvalid), .cl_sh_dma_pcis_arready(pcis_arready),
        .cl_sh_dma_pcis_rid(pcis_rid), .cl_sh_dma_pcis_rdata(pcis_rdata),
        .cl_sh_dma_pcis_rresp(pcis_rresp), .cl_sh_dma_pcis_rlast(pcis_rlast),
        .cl_sh_dma_pcis_rvalid(pcis_rvalid), .sh_cl_dma_pcis_rready(pcis_rready),
        // SDA (unused)
        .cl_sda_awready(), .cl_sda_wready(), .cl_sda_bvalid(), .cl_sda_bresp(),
        .cl_sda_arready(), .cl_sda_rvalid(), .cl_sda_rdata(), .cl_sda_rresp(),
        // OCL
        .sh_ocl_awvalid(ocl_awvalid), .sh_ocl_awaddr(ocl_awaddr), .ocl_sh_awready(ocl_awready),
        .sh_ocl_wvalid(ocl_wvalid), .sh_ocl_wdata(ocl_wdata), .sh_ocl_wstrb(ocl_wstrb),
        .ocl_sh_wready(ocl_wready), .ocl_sh_bvalid(ocl_bvalid), .ocl_sh_bresp(ocl_bresp),
        .sh_ocl_bready(ocl_bready), .sh_ocl_arvalid(ocl_arvalid), .sh_ocl_araddr(ocl_araddr),
        .ocl_sh_arready(ocl_arready), .ocl_sh_rvalid(ocl_rvalid), .ocl_sh_rdata(ocl_rdata),
        .ocl_sh_rresp(ocl_rresp), .sh_ocl_rready(ocl_rready),
        // BAR1 (unused), debug
        .bar1_sh_awready(), .bar1_sh_wready(), .bar1_sh_bvalid(), .bar1_sh_bresp(),
        .bar1_sh_arready(), .bar1_sh_rvalid(), .bar1_sh_rdata(), .bar1_sh_rresp(),
        .tdo()
    );
    assign vta_irq = dut.cl.vta_irq;
    assign evt_fetch_valid = dut.cl.evt_fetch_valid;
    assign evt_fetch_index = dut.cl.evt_fetch_index;
    assign evt_load_start = dut.cl.evt_load_start;
    assign evt_load_retire = dut.cl.evt_load_retire;
    assign evt_load_index = dut.cl.evt_load_index;
    assign evt_compute_start = dut.cl.evt_compute_start;
    assign evt_compute_retire = dut.cl.evt_compute_retire;
    assign evt_compute_index = dut.cl.evt_compute_index;
    assign evt_store_start = dut.cl.evt_store_start;
    assign evt_store_retire = dut.cl.evt_store_retire;
    assign evt_store_index = dut.cl.evt_store_index;
end else begin : g_f2
    vta_aws_f2 #(
        .LOG_INP_WIDTH(LOG_INP_WIDTH), .LOG_WGT_WIDTH(LOG_WGT_WIDTH),
        .LOG_ACC_WIDTH(LOG_ACC_WIDTH), .LOG_BATCH(LOG_BATCH), .LOG_BLOCK(LOG_BLOCK),
        .LOG_UOP_BUFF_SIZE(LOG_UOP_BUFF_SIZE), .LOG_INP_BUFF_SIZE(LOG_INP_BUFF_SIZE),
        .LOG_WGT_BUFF_SIZE(LOG_WGT_BUFF_SIZE), .LOG_ACC_BUFF_SIZE(LOG_ACC_BUFF_SIZE),
        .LOG_BUS_WIDTH(LOG_BUS_WIDTH), .CONFIG_SIG(CONFIG_SIG), .LOG_MEM_BYTES(LOG_MEM_BYTES)
    ) dut (
        .clk_main_a0(clk), .rst_main_n(rst_main_n),
        .sh_cl_flr_assert(flr_r), .cl_sh_flr_done(flr_done),
        .cl_sh_status0(), .cl_sh_status1(), .cl_sh_status2(),
        .cl_sh_id0(cl_id0), .cl_sh_id1(cl_id1),
        .sh_cl_status_vdip(16'd0), .cl_sh_status_vled(vled),
        .cl_sh_dma_wr_full(), .cl_sh_dma_rd_full(),
        .cl_sh_pcim_awid(), .cl_sh_pcim_awaddr(), .cl_sh_pcim_awlen(), .cl_sh_pcim_awsize(),
        .cl_sh_pcim_awburst(), .cl_sh_pcim_awcache(), .cl_sh_pcim_awlock(),
        .cl_sh_pcim_awprot(), .cl_sh_pcim_awqos(), .cl_sh_pcim_awuser(),
        .cl_sh_pcim_awvalid(), .cl_sh_pcim_wid(), .cl_sh_pcim_wdata(), .cl_sh_pcim_wstrb(),
        .cl_sh_pcim_wlast(), .cl_sh_pcim_wuser(), .cl_sh_pcim_wvalid(), .cl_sh_pcim_bready(),
        .cl_sh_pcim_arid(), .cl_sh_pcim_araddr(), .cl_sh_pcim_arlen(), .cl_sh_pcim_arsize(),
        .cl_sh_pcim_arburst(), .cl_sh_pcim_arcache(), .cl_sh_pcim_arlock(),
        .cl_sh_pcim_arprot(), .cl_sh_pcim_arqos(), .cl_sh_pcim_aruser(),
        .cl_sh_pcim_arvalid(), .cl_sh_pcim_rready(),
        // sh_ddr's AXI4 port
        .cl_sh_ddr_axi_awid(mem_awid), .cl_sh_ddr_axi_awaddr(mem_awaddr),
        .cl_sh_ddr_axi_awlen(mem_awlen), .cl_sh_ddr_axi_awsize(mem_awsize),
        .cl_sh_ddr_axi_awburst(mem_awburst), .cl_sh_ddr_axi_awvalid(mem_awvalid),
        .cl_sh_ddr_axi_awready(mem_awready),
        .cl_sh_ddr_axi_wdata(mem_wdata), .cl_sh_ddr_axi_wstrb(mem_wstrb),
        .cl_sh_ddr_axi_wlast(mem_wlast), .cl_sh_ddr_axi_wvalid(mem_wvalid),
        .cl_sh_ddr_axi_wready(mem_wready),
        .cl_sh_ddr_axi_bid(mem_bid), .cl_sh_ddr_axi_bresp(mem_bresp),
        .cl_sh_ddr_axi_bvalid(mem_bvalid), .cl_sh_ddr_axi_bready(mem_bready),
        .cl_sh_ddr_axi_arid(mem_arid), .cl_sh_ddr_axi_araddr(mem_araddr),
        .cl_sh_ddr_axi_arlen(mem_arlen), .cl_sh_ddr_axi_arsize(mem_arsize),
        .cl_sh_ddr_axi_arburst(mem_arburst), .cl_sh_ddr_axi_arvalid(mem_arvalid),
        .cl_sh_ddr_axi_arready(mem_arready),
        .cl_sh_ddr_axi_rid(mem_rid), .cl_sh_ddr_axi_rdata(mem_rdata),
        .cl_sh_ddr_axi_rresp(mem_rresp), .cl_sh_ddr_axi_rlast(mem_rlast),
        .cl_sh_ddr_axi_rvalid(mem_rvalid), .cl_sh_ddr_axi_rready(mem_rready),
        .sh_cl_ddr_is_ready(!rst_r),
        // interrupts
        .cl_sh_apppf_irq_req(irq_req), .sh_cl_apppf_irq_ack(irq_ack),
        // PCIS
        .sh_cl_dma_pcis_awid(pcis_awid), .sh_cl_dma_pcis_awaddr(pcis_awaddr),
        .sh_cl_dma_pcis_awlen(pcis_awlen), .sh_cl_dma_pcis_awsize(pcis_awsize),
        .sh_cl_dma_pcis_awvalid(pcis_awvalid), .cl_sh_dma_pcis_awready(pcis_awready),
        .sh_cl_dma_pcis_wdata(pcis_wdata), .sh_cl_dma_pcis_wstrb(pcis_wstrb),
        .sh_cl_dma_pcis_wlast(pcis_wlast), .sh_cl_dma_pcis_wvalid(pcis_wvalid),
        .cl_sh_dma_pcis_wready(pcis_wready),
        .cl_sh_dma_pcis_bid(pcis_bid), .cl_sh_dma_pcis_bresp(pcis_bresp),
        .cl_sh_dma_pcis_bvalid(pcis_bvalid), .sh_cl_dma_pcis_bready(pcis_bready),
        .sh_cl_dma_pcis_arid(pcis_arid), .sh_cl_dma_pcis_araddr(pcis_araddr),
        .sh_cl_dma_pcis_arlen(pcis_arlen), .sh_cl_dma_pcis_arsize(pcis_arsize),
        .sh_cl_dma_pcis_arvalid(pcis_arvalid), .cl_sh_dma_pcis_arready(pcis_arready),
        .cl_sh_dma_pcis_rid(pcis_rid), .cl_sh_dma_pcis_rdata(pcis_rdata),
        .cl_sh_dma_pcis_rresp(pcis_rresp), .cl_sh_dma_pcis_rlast(pcis_rlast),
        .cl_sh_dma_pcis_ruser(), .cl_sh_dma_pcis_rvalid(pcis_rvalid),
        .sh_cl_dma_pcis_rready(pcis_rready),
        // OCL
        .ocl_cl_awaddr(ocl_awaddr), .ocl_cl_awvalid(ocl_awvalid), .cl_ocl_awready(ocl_awready),
        .ocl_cl_wdata(ocl_wdata), .ocl_cl_wstrb(ocl_wstrb), .ocl_cl_wvalid(ocl_wvalid),
        .cl_ocl_wready(ocl_wready), .cl_ocl_bresp(ocl_bresp), .cl_ocl_bvalid(ocl_bvalid),
        .ocl_cl_bready(ocl_bready), .ocl_cl_araddr(ocl_araddr), .ocl_cl_arvalid(ocl_arvalid),
        .cl_ocl_arready(ocl_arready), .cl_ocl_rdata(ocl_rdata), .cl_ocl_rresp(ocl_rresp),
        .cl_ocl_rvalid(ocl_rvalid), .ocl_cl_rready(ocl_rready),
        // SDA (unused), debug, HBM monitor, C2C
        .cl_sda_awready(), .cl_sda_wready(), .cl_sda_bresp(), .cl_sda_bvalid(),
        .cl_sda_arready(), .cl_sda_rdata(), .cl_sda_rresp(), .cl_sda_rvalid(),
        .tdo(),
        .hbm_apb_paddr_1(), .hbm_apb_pprot_1(), .hbm_apb_psel_1(), .hbm_apb_penable_1(),
        .hbm_apb_pwrite_1(), .hbm_apb_pwdata_1(), .hbm_apb_pstrb_1(), .hbm_apb_pready_1(),
        .hbm_apb_prdata_1(), .hbm_apb_pslverr_1(),
        .hbm_apb_paddr_0(), .hbm_apb_pprot_0(), .hbm_apb_psel_0(), .hbm_apb_penable_0(),
        .hbm_apb_pwrite_0(), .hbm_apb_pwdata_0(), .hbm_apb_pstrb_0(), .hbm_apb_pready_0(),
        .hbm_apb_prdata_0(), .hbm_apb_pslverr_0(),
        .PCIE_EP_TXP(), .PCIE_EP_TXN(), .PCIE_RP_PERSTN(), .PCIE_RP_TXP(), .PCIE_RP_TXN()
    );
    assign vta_irq = dut.cl.vta_irq;
    assign evt_fetch_valid = dut.cl.evt_fetch_valid;
    assign evt_fetch_index = dut.cl.evt_fetch_index;
    assign evt_load_start = dut.cl.evt_load_start;
    assign evt_load_retire = dut.cl.evt_load_retire;
    assign evt_load_index = dut.cl.evt_load_index;
    assign evt_compute_start = dut.cl.evt_compute_start;
    assign evt_compute_retire = dut.cl.evt_compute_retire;
    assign evt_compute_index = dut.cl.evt_compute_index;
    assign evt_store_start = dut.cl.evt_store_start;
    assign evt_store_retire = dut.cl.evt_store_retire;
    assign evt_store_index = dut.cl.evt_store_index;
end
endgenerate

assign irq = vta_irq;

// ------------------------------------------------------------ watchdog, progress, trace
vta_monitor monitor (
    .clk(clk), .rst(rst_r), .trace_en(trace_en_r), .wd_limit(wd_limit_r), .wd_clear(wd_clear_r),
    .irq(vta_irq), .beat((mem_rvalid & mem_rready) | (mem_wvalid & mem_wready)),
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

wire _unused_tb = &{1'b0, vled, 1'b0};

initial begin
    irq_seen = 0;
    ack_delay = 0;
    irq_ack = 0;
end

endmodule

`resetall
