`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_aws_cl: VTA as AWS custom logic, independent of the shell's port names
 * (vta_aws_f1 and vta_aws_f2 map those onto this module).
 *
 *   rst_n (shell, active low) --> root register --> one register per block (active high)
 *
 *   OCL (BAR0) --> [vta_aws_ocl] --> vta_top s_axil       (VTA registers at 0x0000)
 *                        |-------> wrapper registers         (0x1000: vta/aws/regs.py)
 *
 *   PCIS (BAR4) --> [vta_aws_idq] --> s0 +-------------+
 *                                         | vta_aws_xbar | --> card memory (AXI4, 512)
 *   vta_top m_axi --> [AR/AW/W slices] --> [vta_aws_upsize] --> s1 +---------+
 *
 *   vta_top irq --> rising edge --> irq_req pulse (user interrupt 0), one at a time
 *
 * Host (BAR4) and VTA see card memory at the same addresses: a VTA device address
 * is a BAR4 offset.  VTA's DRAM_RANGE check uses 2**LOG_MEM_BYTES.
 */
module vta_aws_cl #(
    // VTA configuration (docs/rtl-interface.md)
    parameter LOG_INP_WIDTH = 3,
    parameter LOG_WGT_WIDTH = 3,
    parameter LOG_ACC_WIDTH = 5,
    parameter LOG_BATCH = 0,
    parameter LOG_BLOCK = 4,
    parameter LOG_UOP_BUFF_SIZE = 15,
    parameter LOG_INP_BUFF_SIZE = 15,
    parameter LOG_WGT_BUFF_SIZE = 18,
    parameter LOG_ACC_BUFF_SIZE = 17,
    parameter LOG_BUS_WIDTH = 9,
    parameter [31:0] CONFIG_SIG = 32'd0,
    // shell number (vta/aws/regs.py SHELLS) reported in CL_INFO
    parameter SHELL = 1,
    // log2 of the card-memory bytes behind the memory port
    parameter LOG_MEM_BYTES = 34,
    // the shell's PCIS ID width
    parameter PCIS_ID_WIDTH = 6,
    // the memory port's ID width
    parameter MEM_ID_WIDTH = 16,
    // log2 of VTA's read-data buffer in beats (bounds the host's PCIS latency)
    parameter LOG_VTA_READ_BEATS = 7,
    // VTA write bursts waiting for their response
    parameter VTA_WRITES = 4
) (
    input  wire                      clk,
    input  wire                      rst_n,
    input  wire                      flr_assert,
    output wire                      flr_done,
    // card memory trained and ready (reported in CL_INFO)
    input  wire                      mem_ready,

    // OCL: AXI4-Lite from the shell (BAR0)
    input  wire [31:0]               s_axil_awaddr,
    input  wire                      s_axil_awvalid,
    output wire                      s_axil_awready,
    input  wire [31:0]               s_axil_wdata,
    input  wire [3:0]                s_axil_wstrb,
    input  wire                      s_axil_wvalid,
    output wire                      s_axil_wready,
    output wire [1:0]                s_axil_bresp,
    output wire                      s_axil_bvalid,
    input  wire                      s_axil_bready,
    input  wire [31:0]               s_axil_araddr,
    input  wire                      s_axil_arvalid,
    output wire                      s_axil_arready,
    output wire [31:0]               s_axil_rdata,
    output wire [1:0]                s_axil_rresp,
    output wire                      s_axil_rvalid,
    input  wire                      s_axil_rready,

    // PCIS: AXI4 from the shell (BAR4, XDMA on F1)
    input  wire [PCIS_ID_WIDTH-1:0]  s_axi_awid,
    input  wire [63:0]               s_axi_awaddr,
    input  wire [7:0]                s_axi_awlen,
    input  wire [2:0]                s_axi_awsize,
    input  wire                      s_axi_awvalid,
    output wire                      s_axi_awready,
    input  wire [511:0]              s_axi_wdata,
    input  wire [63:0]               s_axi_wstrb,
    input  wire                      s_axi_wlast,
    input  wire                      s_axi_wvalid,
    output wire                      s_axi_wready,
    output wire [PCIS_ID_WIDTH-1:0]  s_axi_bid,
    output wire [1:0]                s_axi_bresp,
    output wire                      s_axi_bvalid,
    input  wire                      s_axi_bready,
    input  wire [PCIS_ID_WIDTH-1:0]  s_axi_arid,
    input  wire [63:0]               s_axi_araddr,
    input  wire [7:0]                s_axi_arlen,
    input  wire [2:0]                s_axi_arsize,
    input  wire                      s_axi_arvalid,
    output wire                      s_axi_arready,
    output wire [PCIS_ID_WIDTH-1:0]  s_axi_rid,
    output wire [511:0]              s_axi_rdata,
    output wire [1:0]                s_axi_rresp,
    output wire                      s_axi_rlast,
    output wire                      s_axi_rvalid,
    input  wire                      s_axi_rready,
    output wire                      pcis_rd_full,
    output wire                      pcis_wr_full,

    // card memory: AXI4 master (INCR, 64-byte beats)
    output wire [MEM_ID_WIDTH-1:0]   m_axi_awid,
    output wire [63:0]               m_axi_awaddr,
    output wire [7:0]                m_axi_awlen,
    output wire [2:0]                m_axi_awsize,
    output wire                      m_axi_awvalid,
    input  wire                      m_axi_awready,
    output wire [511:0]              m_axi_wdata,
    output wire [63:0]               m_axi_wstrb,
    output wire                      m_axi_wlast,
    output wire                      m_axi_wvalid,
    input  wire                      m_axi_wready,
    input  wire [MEM_ID_WIDTH-1:0]   m_axi_bid,
    input  wire [1:0]                m_axi_bresp,
    input  wire                      m_axi_bvalid,
    output wire                      m_axi_bready,
    output wire [MEM_ID_WIDTH-1:0]   m_axi_arid,
    output wire [63:0]               m_axi_araddr,
    output wire [7:0]                m_axi_arlen,
    output wire [2:0]                m_axi_arsize,
    output wire                      m_axi_arvalid,
    input  wire                      m_axi_arready,
    input  wire [MEM_ID_WIDTH-1:0]   m_axi_rid,
    input  wire [511:0]              m_axi_rdata,
    input  wire [1:0]                m_axi_rresp,
    input  wire                      m_axi_rlast,
    input  wire                      m_axi_rvalid,
    output wire                      m_axi_rready,

    // interrupt (shell user interrupt 0): single-cycle request, single-cycle ack
    output wire                      irq_req,
    input  wire                      irq_ack,

    // virtual LEDs: [0] VTA finished (DONE or ERROR), [1] interrupt awaiting its ack
    output wire [15:0]               vled
);

localparam ID_WIDTH = 4;
localparam DW = 1 << LOG_BUS_WIDTH;
// VTA's own address width: card memory and BAR4 (128 GiB) need 37 bits; the AXI
// ports are 64 bits wide, so VTA's addresses are zero-extended
localparam VTA_ADDR_WIDTH = 48;

// ------------------------------------------------------------ reset tree, FLR
// The shell's rst_main_n is synchronous to clk_main_a0: no synchronizer.  Pipelined as
// AWS's examples do, registered per block: a root register takes rst_n and a
// function-level reset, and each block has its own register fed by the root, which the
// placer puts next to its block -- no single net reaches the whole design across SLRs
// (VTA's reset alone has thousands of loads).  Every block leaves reset in the same cycle.
// The HDK's synthesis keeps the per-block copies (-keep_equivalent_registers).
localparam RST_VTA = 0, RST_OCL = 1, RST_UPSIZE = 2, RST_IDQ = 3, RST_XBAR = 4, RST_GLUE = 5;
localparam RST_SLICES = 6;
localparam RST_BLOCKS = 7;
reg rst_root_reg, flr_q_reg, flr_done_reg, flr_acked_reg;
(* shreg_extract = "no" *) reg [RST_BLOCKS-1:0] rst_blk_reg;
always @(posedge clk) begin
    flr_q_reg <= flr_assert && rst_n;
    rst_root_reg <= !rst_n || flr_q_reg;
    rst_blk_reg <= {RST_BLOCKS{rst_root_reg}};
    // a function-level reset is acknowledged once, when every block is in reset
    flr_done_reg <= 1'b0;
    if (flr_q_reg && &rst_blk_reg && !flr_acked_reg) begin
        flr_done_reg <= 1'b1;
        flr_acked_reg <= 1'b1;
    end
    if (!flr_q_reg) begin
        flr_acked_reg <= 1'b0;
    end
end
assign flr_done = flr_done_reg;
wire rst = rst_blk_reg[RST_GLUE];

// ------------------------------------------------------------ VTA
wire [11:0] v_awaddr, v_araddr;
wire        v_awvalid, v_awready, v_wvalid, v_wready, v_bvalid, v_bready;
wire        v_arvalid, v_arready, v_rvalid, v_rready;
wire [31:0] v_wdata, v_rdata;
wire [3:0]  v_wstrb;
wire [1:0]  v_bresp, v_rresp;

wire [ID_WIDTH-1:0] n_awid, n_bid, n_arid, n_rid;
wire [VTA_ADDR_WIDTH-1:0] n_awaddr, n_araddr;
wire [7:0]          n_awlen, n_arlen;
wire                n_awvalid, n_awready, n_wlast, n_wvalid, n_wready, n_bvalid, n_bready;
wire                n_arvalid, n_arready, n_rlast, n_rvalid, n_rready;
wire [DW-1:0]       n_wdata, n_rdata;
wire [DW/8-1:0]     n_wstrb;
wire [1:0]          n_bresp, n_rresp;
wire                vta_irq;
// AXI attributes the upsizer does not need (INCR, full size by vta_top's contract)
wire [2:0]          n_awsize, n_arsize, n_awprot, n_arprot;
wire [1:0]          n_awburst, n_arburst;
wire                n_awlock, n_arlock;
wire [3:0]          n_awcache, n_arcache;
wire                evt_fetch_valid, evt_load_start, evt_load_retire, evt_compute_start;
wire                evt_compute_retire, evt_compute_uop, evt_store_start, evt_store_retire;
wire [31:0]         evt_fetch_index, evt_load_index, evt_compute_index, evt_store_index;
wire [ID_WIDTH-1:0] h_bid_unused, h_rid_unused;
wire _unused_vta = &{1'b0, n_awsize, n_arsize, n_awprot, n_arprot, n_awburst, n_arburst,
                     n_awlock, n_arlock, n_awcache, n_arcache, evt_fetch_valid, evt_load_start,
                     evt_load_retire, evt_compute_start, evt_compute_retire, evt_store_start,
                     evt_store_retire, evt_fetch_index, evt_load_index, evt_compute_index,
                     evt_store_index, evt_compute_uop, h_bid_unused, h_rid_unused, 1'b0};

vta_top #(
    .LOG_INP_WIDTH(LOG_INP_WIDTH), .LOG_WGT_WIDTH(LOG_WGT_WIDTH),
    .LOG_ACC_WIDTH(LOG_ACC_WIDTH), .LOG_BATCH(LOG_BATCH), .LOG_BLOCK(LOG_BLOCK),
    .LOG_UOP_BUFF_SIZE(LOG_UOP_BUFF_SIZE), .LOG_INP_BUFF_SIZE(LOG_INP_BUFF_SIZE),
    .LOG_WGT_BUFF_SIZE(LOG_WGT_BUFF_SIZE), .LOG_ACC_BUFF_SIZE(LOG_ACC_BUFF_SIZE),
    .LOG_BUS_WIDTH(LOG_BUS_WIDTH), .CONFIG_SIG(CONFIG_SIG), .ADDR_WIDTH(VTA_ADDR_WIDTH),
    .ID_WIDTH(ID_WIDTH), .MEM_SIZE(64'd1 << LOG_MEM_BYTES)
) vta (
    .clk(clk), .rst(rst_blk_reg[RST_VTA]),
    // control
    .s_axil_awaddr(v_awaddr), .s_axil_awprot(3'd0), .s_axil_awvalid(v_awvalid),
    .s_axil_awready(v_awready), .s_axil_wdata(v_wdata), .s_axil_wstrb(v_wstrb),
    .s_axil_wvalid(v_wvalid), .s_axil_wready(v_wready), .s_axil_bresp(v_bresp),
    .s_axil_bvalid(v_bvalid), .s_axil_bready(v_bready),
    .s_axil_araddr(v_araddr), .s_axil_arprot(3'd0), .s_axil_arvalid(v_arvalid),
    .s_axil_arready(v_arready), .s_axil_rdata(v_rdata), .s_axil_rresp(v_rresp),
    .s_axil_rvalid(v_rvalid), .s_axil_rready(v_rready),
    // DRAM master (narrow side of the upsizer)
    .m_axi_awid(n_awid), .m_axi_awaddr(n_awaddr), .m_axi_awlen(n_awlen),
    .m_axi_awsize(n_awsize), .m_axi_awburst(n_awburst), .m_axi_awlock(n_awlock),
    .m_axi_awcache(n_awcache), .m_axi_awprot(n_awprot),
    .m_axi_awvalid(n_awvalid), .m_axi_awready(n_awready),
    .m_axi_wdata(n_wdata), .m_axi_wstrb(n_wstrb), .m_axi_wlast(n_wlast),
    .m_axi_wvalid(n_wvalid), .m_axi_wready(n_wready),
    .m_axi_bid(n_bid), .m_axi_bresp(n_bresp), .m_axi_bvalid(n_bvalid), .m_axi_bready(n_bready),
    .m_axi_arid(n_arid), .m_axi_araddr(n_araddr), .m_axi_arlen(n_arlen),
    .m_axi_arsize(n_arsize), .m_axi_arburst(n_arburst), .m_axi_arlock(n_arlock),
    .m_axi_arcache(n_arcache), .m_axi_arprot(n_arprot),
    .m_axi_arvalid(n_arvalid), .m_axi_arready(n_arready),
    .m_axi_rid(n_rid), .m_axi_rdata(n_rdata), .m_axi_rresp(n_rresp), .m_axi_rlast(n_rlast),
    .m_axi_rvalid(n_rvalid), .m_axi_rready(n_rready),
    // completion
    .irq(vta_irq),
    // trace events: read by simulation monitors (hierarchically), unused here
    .evt_fetch_valid(evt_fetch_valid), .evt_fetch_index(evt_fetch_index),
    .evt_load_start(evt_load_start), .evt_load_retire(evt_load_retire),
    .evt_load_index(evt_load_index),
    .evt_compute_start(evt_compute_start), .evt_compute_retire(evt_compute_retire),
    .evt_compute_index(evt_compute_index), .evt_compute_uop(evt_compute_uop),
    .evt_store_start(evt_store_start), .evt_store_retire(evt_store_retire),
    .evt_store_index(evt_store_index)
);

// ------------------------------------------------------------ OCL: registers
reg [31:0] irq_count_reg;
reg        mem_ready_reg;
wire       pcis_wr_busy;
always @(posedge clk) mem_ready_reg <= mem_ready;

vta_aws_ocl #(.SHELL(SHELL), .LOG_MEM_BYTES(LOG_MEM_BYTES)) ocl (
    .clk(clk), .rst(rst_blk_reg[RST_OCL]),
    .s_axil_awaddr(s_axil_awaddr), .s_axil_awvalid(s_axil_awvalid),
    .s_axil_awready(s_axil_awready), .s_axil_wdata(s_axil_wdata), .s_axil_wstrb(s_axil_wstrb),
    .s_axil_wvalid(s_axil_wvalid), .s_axil_wready(s_axil_wready),
    .s_axil_bresp(s_axil_bresp), .s_axil_bvalid(s_axil_bvalid), .s_axil_bready(s_axil_bready),
    .s_axil_araddr(s_axil_araddr), .s_axil_arvalid(s_axil_arvalid),
    .s_axil_arready(s_axil_arready), .s_axil_rdata(s_axil_rdata), .s_axil_rresp(s_axil_rresp),
    .s_axil_rvalid(s_axil_rvalid), .s_axil_rready(s_axil_rready),
    .m_axil_awaddr(v_awaddr), .m_axil_awvalid(v_awvalid), .m_axil_awready(v_awready),
    .m_axil_wdata(v_wdata), .m_axil_wstrb(v_wstrb), .m_axil_wvalid(v_wvalid),
    .m_axil_wready(v_wready), .m_axil_bresp(v_bresp), .m_axil_bvalid(v_bvalid),
    .m_axil_bready(v_bready), .m_axil_araddr(v_araddr), .m_axil_arvalid(v_arvalid),
    .m_axil_arready(v_arready), .m_axil_rdata(v_rdata), .m_axil_rresp(v_rresp),
    .m_axil_rvalid(v_rvalid), .m_axil_rready(v_rready),
    .irq_count(irq_count_reg), .mem_ready(mem_ready_reg), .fence(pcis_wr_busy)
);

// ------------------------------------------------------------ VTA's requests: register slices
// VTA's AR, AW and W channels pass a register slice each before the upsizer: the
// crossbar's grant (which depends on the host's requests and the ID queue's room) and
// the write buffer's room reach VTA from a register, not through the fabric's logic,
// and VTA's request logic ends at a register; one cycle more per request, one beat
// per cycle as before.
wire [ID_WIDTH-1:0]       q_arid, q_awid;
wire [VTA_ADDR_WIDTH-1:0] q_araddr, q_awaddr;
wire [7:0]                q_arlen, q_awlen;
wire                      q_arvalid, q_arready, q_awvalid, q_awready, q_wlast, q_wvalid, q_wready;
wire [DW-1:0]             q_wdata;
wire [DW/8-1:0]           q_wstrb;
vta_skid #(.WIDTH(ID_WIDTH + VTA_ADDR_WIDTH + 8)) ar_slice (
    .clk(clk), .rst(rst_blk_reg[RST_SLICES]),
    .s_valid(n_arvalid), .s_ready(n_arready), .s_data({n_arid, n_araddr, n_arlen}),
    .m_valid(q_arvalid), .m_ready(q_arready), .m_data({q_arid, q_araddr, q_arlen})
);
vta_skid #(.WIDTH(ID_WIDTH + VTA_ADDR_WIDTH + 8)) aw_slice (
    .clk(clk), .rst(rst_blk_reg[RST_SLICES]),
    .s_valid(n_awvalid), .s_ready(n_awready), .s_data({n_awid, n_awaddr, n_awlen}),
    .m_valid(q_awvalid), .m_ready(q_awready), .m_data({q_awid, q_awaddr, q_awlen})
);
vta_skid #(.WIDTH(DW + DW / 8 + 1)) w_slice (
    .clk(clk), .rst(rst_blk_reg[RST_SLICES]),
    .s_valid(n_wvalid), .s_ready(n_wready), .s_data({n_wdata, n_wstrb, n_wlast}),
    .m_valid(q_wvalid), .m_ready(q_wready), .m_data({q_wdata, q_wstrb, q_wlast})
);

// ------------------------------------------------------------ VTA master: 512-bit
wire [ID_WIDTH-1:0] w_awid, w_bid, w_arid, w_rid;
wire [63:0]         w_awaddr, w_araddr;
wire [7:0]          w_awlen, w_arlen;
wire                w_awvalid, w_awready, w_wlast, w_wvalid, w_wready, w_bvalid, w_bready;
wire                w_arvalid, w_arready, w_rlast, w_rvalid, w_rready;
wire [511:0]        w_wdata, w_rdata;
wire [63:0]         w_wstrb;
wire [1:0]          w_bresp, w_rresp;

vta_aws_upsize #(
    .LOG_S_WIDTH(LOG_BUS_WIDTH), .LOG_M_WIDTH(9), .ADDR_WIDTH(64), .ID_WIDTH(ID_WIDTH)
) upsize (
    .clk(clk), .rst(rst_blk_reg[RST_UPSIZE]),
    .s_axi_awid(q_awid), .s_axi_awaddr({{(64-VTA_ADDR_WIDTH){1'b0}}, q_awaddr}),
    .s_axi_awlen(q_awlen),
    .s_axi_awvalid(q_awvalid), .s_axi_awready(q_awready),
    .s_axi_wdata(q_wdata), .s_axi_wstrb(q_wstrb), .s_axi_wlast(q_wlast),
    .s_axi_wvalid(q_wvalid), .s_axi_wready(q_wready),
    .s_axi_bid(n_bid), .s_axi_bresp(n_bresp), .s_axi_bvalid(n_bvalid), .s_axi_bready(n_bready),
    .s_axi_arid(q_arid), .s_axi_araddr({{(64-VTA_ADDR_WIDTH){1'b0}}, q_araddr}),
    .s_axi_arlen(q_arlen),
    .s_axi_arvalid(q_arvalid), .s_axi_arready(q_arready),
    .s_axi_rid(n_rid), .s_axi_rdata(n_rdata), .s_axi_rresp(n_rresp), .s_axi_rlast(n_rlast),
    .s_axi_rvalid(n_rvalid), .s_axi_rready(n_rready),
    .m_axi_awid(w_awid), .m_axi_awaddr(w_awaddr), .m_axi_awlen(w_awlen),
    .m_axi_awvalid(w_awvalid), .m_axi_awready(w_awready),
    .m_axi_wdata(w_wdata), .m_axi_wstrb(w_wstrb), .m_axi_wlast(w_wlast),
    .m_axi_wvalid(w_wvalid), .m_axi_wready(w_wready),
    .m_axi_bid(w_bid), .m_axi_bresp(w_bresp), .m_axi_bvalid(w_bvalid), .m_axi_bready(w_bready),
    .m_axi_arid(w_arid), .m_axi_araddr(w_araddr), .m_axi_arlen(w_arlen),
    .m_axi_arvalid(w_arvalid), .m_axi_arready(w_arready),
    .m_axi_rid(w_rid), .m_axi_rdata(w_rdata), .m_axi_rresp(w_rresp), .m_axi_rlast(w_rlast),
    .m_axi_rvalid(w_rvalid), .m_axi_rready(w_rready)
);

// ------------------------------------------------------------ PCIS: one ID
wire [63:0]  h_awaddr, h_araddr;
wire [7:0]   h_awlen, h_arlen;
wire [2:0]   h_awsize, h_arsize;
wire         h_awvalid, h_awready, h_wlast, h_wvalid, h_wready, h_bvalid, h_bready;
wire         h_arvalid, h_arready, h_rlast, h_rvalid, h_rready;
wire [511:0] h_wdata, h_rdata;
wire [63:0]  h_wstrb;
wire [1:0]   h_bresp, h_rresp;

vta_aws_idq #(.DATA_WIDTH(512), .ADDR_WIDTH(64), .ID_WIDTH(PCIS_ID_WIDTH)) idq (
    .clk(clk), .rst(rst_blk_reg[RST_IDQ]), .rd_full(pcis_rd_full), .wr_full(pcis_wr_full),
    .wr_busy(pcis_wr_busy),
    .s_axi_awid(s_axi_awid), .s_axi_awaddr(s_axi_awaddr), .s_axi_awlen(s_axi_awlen),
    .s_axi_awsize(s_axi_awsize), .s_axi_awvalid(s_axi_awvalid), .s_axi_awready(s_axi_awready),
    .s_axi_wdata(s_axi_wdata), .s_axi_wstrb(s_axi_wstrb), .s_axi_wlast(s_axi_wlast),
    .s_axi_wvalid(s_axi_wvalid), .s_axi_wready(s_axi_wready),
    .s_axi_bid(s_axi_bid), .s_axi_bresp(s_axi_bresp), .s_axi_bvalid(s_axi_bvalid),
    .s_axi_bready(s_axi_bready),
    .s_axi_arid(s_axi_arid), .s_axi_araddr(s_axi_araddr), .s_axi_arlen(s_axi_arlen),
    .s_axi_arsize(s_axi_arsize), .s_axi_arvalid(s_axi_arvalid), .s_axi_arready(s_axi_arready),
    .s_axi_rid(s_axi_rid), .s_axi_rdata(s_axi_rdata), .s_axi_rresp(s_axi_rresp),
    .s_axi_rlast(s_axi_rlast), .s_axi_rvalid(s_axi_rvalid), .s_axi_rready(s_axi_rready),
    .m_axi_awaddr(h_awaddr), .m_axi_awlen(h_awlen), .m_axi_awsize(h_awsize),
    .m_axi_awvalid(h_awvalid), .m_axi_awready(h_awready),
    .m_axi_wdata(h_wdata), .m_axi_wstrb(h_wstrb), .m_axi_wlast(h_wlast),
    .m_axi_wvalid(h_wvalid), .m_axi_wready(h_wready),
    .m_axi_bresp(h_bresp), .m_axi_bvalid(h_bvalid), .m_axi_bready(h_bready),
    .m_axi_araddr(h_araddr), .m_axi_arlen(h_arlen), .m_axi_arsize(h_arsize),
    .m_axi_arvalid(h_arvalid), .m_axi_arready(h_arready),
    .m_axi_rdata(h_rdata), .m_axi_rresp(h_rresp), .m_axi_rlast(h_rlast),
    .m_axi_rvalid(h_rvalid), .m_axi_rready(h_rready)
);

// ------------------------------------------------------------ crossbar onto card memory
vta_aws_xbar #(
    .DATA_WIDTH(512), .ADDR_WIDTH(64), .S_ID_WIDTH(ID_WIDTH), .M_ID_WIDTH(MEM_ID_WIDTH),
    .LOG_R_BEATS(LOG_VTA_READ_BEATS), .S1_WRITES(VTA_WRITES)
) xbar (
    .clk(clk), .rst(rst_blk_reg[RST_XBAR]),
    // port 0: host
    .s0_axi_awid({ID_WIDTH{1'b0}}), .s0_axi_awaddr(h_awaddr), .s0_axi_awlen(h_awlen),
    .s0_axi_awsize(h_awsize), .s0_axi_awvalid(h_awvalid), .s0_axi_awready(h_awready),
    .s0_axi_wdata(h_wdata), .s0_axi_wstrb(h_wstrb), .s0_axi_wlast(h_wlast),
    .s0_axi_wvalid(h_wvalid), .s0_axi_wready(h_wready),
    .s0_axi_bid(h_bid_unused), .s0_axi_bresp(h_bresp), .s0_axi_bvalid(h_bvalid), .s0_axi_bready(h_bready),
    .s0_axi_arid({ID_WIDTH{1'b0}}), .s0_axi_araddr(h_araddr), .s0_axi_arlen(h_arlen),
    .s0_axi_arsize(h_arsize), .s0_axi_arvalid(h_arvalid), .s0_axi_arready(h_arready),
    .s0_axi_rid(h_rid_unused), .s0_axi_rdata(h_rdata), .s0_axi_rresp(h_rresp), .s0_axi_rlast(h_rlast),
    .s0_axi_rvalid(h_rvalid), .s0_axi_rready(h_rready),
    // port 1: VTA
    .s1_axi_awid(w_awid), .s1_axi_awaddr(w_awaddr), .s1_axi_awlen(w_awlen),
    .s1_axi_awsize(3'd6), .s1_axi_awvalid(w_awvalid), .s1_axi_awready(w_awready),
    .s1_axi_wdata(w_wdata), .s1_axi_wstrb(w_wstrb), .s1_axi_wlast(w_wlast),
    .s1_axi_wvalid(w_wvalid), .s1_axi_wready(w_wready),
    .s1_axi_bid(w_bid), .s1_axi_bresp(w_bresp), .s1_axi_bvalid(w_bvalid),
    .s1_axi_bready(w_bready),
    .s1_axi_arid(w_arid), .s1_axi_araddr(w_araddr), .s1_axi_arlen(w_arlen),
    .s1_axi_arsize(3'd6), .s1_axi_arvalid(w_arvalid), .s1_axi_arready(w_arready),
    .s1_axi_rid(w_rid), .s1_axi_rdata(w_rdata), .s1_axi_rresp(w_rresp), .s1_axi_rlast(w_rlast),
    .s1_axi_rvalid(w_rvalid), .s1_axi_rready(w_rready),
    // card memory
    .m_axi_awid(m_axi_awid), .m_axi_awaddr(m_axi_awaddr), .m_axi_awlen(m_axi_awlen),
    .m_axi_awsize(m_axi_awsize), .m_axi_awvalid(m_axi_awvalid), .m_axi_awready(m_axi_awready),
    .m_axi_wdata(m_axi_wdata), .m_axi_wstrb(m_axi_wstrb), .m_axi_wlast(m_axi_wlast),
    .m_axi_wvalid(m_axi_wvalid), .m_axi_wready(m_axi_wready),
    .m_axi_bid(m_axi_bid), .m_axi_bresp(m_axi_bresp), .m_axi_bvalid(m_axi_bvalid),
    .m_axi_bready(m_axi_bready),
    .m_axi_arid(m_axi_arid), .m_axi_araddr(m_axi_araddr), .m_axi_arlen(m_axi_arlen),
    .m_axi_arsize(m_axi_arsize), .m_axi_arvalid(m_axi_arvalid), .m_axi_arready(m_axi_arready),
    .m_axi_rid(m_axi_rid), .m_axi_rdata(m_axi_rdata), .m_axi_rresp(m_axi_rresp),
    .m_axi_rlast(m_axi_rlast), .m_axi_rvalid(m_axi_rvalid), .m_axi_rready(m_axi_rready)
);

// ------------------------------------------------------------ completion interrupt
// a request is pulsed on each rising edge of vta_top's irq; a rise while the last
// request still waits for its ack is remembered and requested after the ack
reg irq_q_reg, irq_wait_reg, irq_pending_reg, irq_req_reg;
wire irq_rise = vta_irq && !irq_q_reg;
always @(posedge clk) begin
    irq_q_reg <= vta_irq;
    irq_req_reg <= 1'b0;
    if (irq_ack) begin
        irq_wait_reg <= 1'b0;
    end
    if ((irq_rise || irq_pending_reg) && !irq_wait_reg && !irq_req_reg) begin
        irq_req_reg <= 1'b1;
        irq_wait_reg <= 1'b1;
        irq_pending_reg <= 1'b0;
        irq_count_reg <= irq_count_reg + 32'd1;
    end else if (irq_rise) begin
        irq_pending_reg <= 1'b1;
    end
    if (rst) begin
        irq_q_reg <= 1'b0;
        irq_wait_reg <= 1'b0;
        irq_pending_reg <= 1'b0;
        irq_req_reg <= 1'b0;
        irq_count_reg <= 32'd0;
    end
end
assign irq_req = irq_req_reg;

// ------------------------------------------------------------ virtual LEDs
// (vled_q: the register F1's cl_pnr_user.xdc names; the shell samples it in its own domain)
reg [1:0] vled_q;
always @(posedge clk) vled_q <= {irq_wait_reg, vta_irq};
assign vled = {14'd0, vled_q};

endmodule

`resetall
