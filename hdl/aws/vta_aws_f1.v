`resetall
`timescale 1ns / 1ps
`default_nettype none

`include "vta_aws_regs.vh"

/*
 * vta_aws_f1: VTA as custom logic for the AWS F1 XDMA shell (F1.X.1.4,
 * 0x04261818).  Every port is named and sized as in the shell's cl_ports.vh
 * (aws/aws-fpga hdk/common/shell_v04261818/design/interfaces), so the HDK's CL
 * top (hdl/aws/hdk/f1/cl_vta.sv) connects it by name; that top also holds what
 * cannot be simulated here: sh_ddr with DDR A, B and D absent.
 *
 *   sh_ocl_* (BAR0, AXI4-Lite)        --> VTA registers + wrapper registers
 *   sh_cl_dma_pcis_* (BAR4 and XDMA)  --+
 *                                       +--> cl_sh_ddr_* (DDR C, 16 GiB, in the shell)
 *   vta_top's DRAM master ------------ -+
 *   cl_sh_apppf_irq_req[0]            <--  VTA finished (DONE or ERROR)
 *   PCIM, SDA, BAR1, debug bridge: tied off (unused)
 */
module vta_aws_f1 #(
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
    // log2 of the DDR C bytes VTA and BAR4 reach (34: 16 GiB; smaller in simulation)
    parameter LOG_MEM_BYTES = 34
) (
    // globals
    input  wire         clk_main_a0,
    input  wire         rst_main_n,
    input  wire         sh_cl_flr_assert,
    output wire         cl_sh_flr_done,
    output wire [31:0]  cl_sh_status0,
    output wire [31:0]  cl_sh_status1,
    output wire [31:0]  cl_sh_id0,
    output wire [31:0]  cl_sh_id1,
    input  wire [15:0]  sh_cl_status_vdip,
    output wire [15:0]  cl_sh_status_vled,
    output wire         cl_sh_dma_wr_full,
    output wire         cl_sh_dma_rd_full,

    // PCIM (unused)
    output wire [15:0]  cl_sh_pcim_awid,
    output wire [63:0]  cl_sh_pcim_awaddr,
    output wire [7:0]   cl_sh_pcim_awlen,
    output wire [2:0]   cl_sh_pcim_awsize,
    output wire [18:0]  cl_sh_pcim_awuser,
    output wire         cl_sh_pcim_awvalid,
    output wire [511:0] cl_sh_pcim_wdata,
    output wire [63:0]  cl_sh_pcim_wstrb,
    output wire         cl_sh_pcim_wlast,
    output wire         cl_sh_pcim_wvalid,
    output wire         cl_sh_pcim_bready,
    output wire [15:0]  cl_sh_pcim_arid,
    output wire [63:0]  cl_sh_pcim_araddr,
    output wire [7:0]   cl_sh_pcim_arlen,
    output wire [2:0]   cl_sh_pcim_arsize,
    output wire [18:0]  cl_sh_pcim_aruser,
    output wire         cl_sh_pcim_arvalid,
    output wire         cl_sh_pcim_rready,

    // DDR C (AXI4, the controller in the shell)
    output wire [15:0]  cl_sh_ddr_awid,
    output wire [63:0]  cl_sh_ddr_awaddr,
    output wire [7:0]   cl_sh_ddr_awlen,
    output wire [2:0]   cl_sh_ddr_awsize,
    output wire [1:0]   cl_sh_ddr_awburst,
    output wire         cl_sh_ddr_awvalid,
    input  wire         sh_cl_ddr_awready,
    output wire [15:0]  cl_sh_ddr_wid,
    output wire [511:0] cl_sh_ddr_wdata,
    output wire [63:0]  cl_sh_ddr_wstrb,
    output wire         cl_sh_ddr_wlast,
    output wire         cl_sh_ddr_wvalid,
    input  wire         sh_cl_ddr_wready,
    input  wire [15:0]  sh_cl_ddr_bid,
    input  wire [1:0]   sh_cl_ddr_bresp,
    input  wire         sh_cl_ddr_bvalid,
    output wire         cl_sh_ddr_bready,
    output wire [15:0]  cl_sh_ddr_arid,
    output wire [63:0]  cl_sh_ddr_araddr,
    output wire [7:0]   cl_sh_ddr_arlen,
    output wire [2:0]   cl_sh_ddr_arsize,
    output wire [1:0]   cl_sh_ddr_arburst,
    output wire         cl_sh_ddr_arvalid,
    input  wire         sh_cl_ddr_arready,
    input  wire [15:0]  sh_cl_ddr_rid,
    input  wire [511:0] sh_cl_ddr_rdata,
    input  wire [1:0]   sh_cl_ddr_rresp,
    input  wire         sh_cl_ddr_rlast,
    input  wire         sh_cl_ddr_rvalid,
    output wire         cl_sh_ddr_rready,
    input  wire         sh_cl_ddr_is_ready,

    // user interrupts
    output wire [15:0]  cl_sh_apppf_irq_req,
    input  wire [15:0]  sh_cl_apppf_irq_ack,

    // PCIS (BAR4 MMIO, ID 0x20; XDMA channels, IDs 0x00-0x03)
    input  wire [5:0]   sh_cl_dma_pcis_awid,
    input  wire [63:0]  sh_cl_dma_pcis_awaddr,
    input  wire [7:0]   sh_cl_dma_pcis_awlen,
    input  wire [2:0]   sh_cl_dma_pcis_awsize,
    input  wire         sh_cl_dma_pcis_awvalid,
    output wire         cl_sh_dma_pcis_awready,
    input  wire [511:0] sh_cl_dma_pcis_wdata,
    input  wire [63:0]  sh_cl_dma_pcis_wstrb,
    input  wire         sh_cl_dma_pcis_wlast,
    input  wire         sh_cl_dma_pcis_wvalid,
    output wire         cl_sh_dma_pcis_wready,
    output wire [5:0]   cl_sh_dma_pcis_bid,
    output wire [1:0]   cl_sh_dma_pcis_bresp,
    output wire         cl_sh_dma_pcis_bvalid,
    input  wire         sh_cl_dma_pcis_bready,
    input  wire [5:0]   sh_cl_dma_pcis_arid,
    input  wire [63:0]  sh_cl_dma_pcis_araddr,
    input  wire [7:0]   sh_cl_dma_pcis_arlen,
    input  wire [2:0]   sh_cl_dma_pcis_arsize,
    input  wire         sh_cl_dma_pcis_arvalid,
    output wire         cl_sh_dma_pcis_arready,
    output wire [5:0]   cl_sh_dma_pcis_rid,
    output wire [511:0] cl_sh_dma_pcis_rdata,
    output wire [1:0]   cl_sh_dma_pcis_rresp,
    output wire         cl_sh_dma_pcis_rlast,
    output wire         cl_sh_dma_pcis_rvalid,
    input  wire         sh_cl_dma_pcis_rready,

    // SDA (management PF BAR4; unused)
    output wire         cl_sda_awready,
    output wire         cl_sda_wready,
    output wire         cl_sda_bvalid,
    output wire [1:0]   cl_sda_bresp,
    output wire         cl_sda_arready,
    output wire         cl_sda_rvalid,
    output wire [31:0]  cl_sda_rdata,
    output wire [1:0]   cl_sda_rresp,

    // OCL (application PF BAR0)
    input  wire         sh_ocl_awvalid,
    input  wire [31:0]  sh_ocl_awaddr,
    output wire         ocl_sh_awready,
    input  wire         sh_ocl_wvalid,
    input  wire [31:0]  sh_ocl_wdata,
    input  wire [3:0]   sh_ocl_wstrb,
    output wire         ocl_sh_wready,
    output wire         ocl_sh_bvalid,
    output wire [1:0]   ocl_sh_bresp,
    input  wire         sh_ocl_bready,
    input  wire         sh_ocl_arvalid,
    input  wire [31:0]  sh_ocl_araddr,
    output wire         ocl_sh_arready,
    output wire         ocl_sh_rvalid,
    output wire [31:0]  ocl_sh_rdata,
    output wire [1:0]   ocl_sh_rresp,
    input  wire         sh_ocl_rready,

    // BAR1 (application PF; unused)
    output wire         bar1_sh_awready,
    output wire         bar1_sh_wready,
    output wire         bar1_sh_bvalid,
    output wire [1:0]   bar1_sh_bresp,
    output wire         bar1_sh_arready,
    output wire         bar1_sh_rvalid,
    output wire [31:0]  bar1_sh_rdata,
    output wire [1:0]   bar1_sh_rresp,

    // virtual JTAG (unused)
    output wire         tdo
);

// ------------------------------------------------------------ identification
assign cl_sh_id0 = {`VTA_AWS_PCI_DEVICE_F1, `VTA_AWS_PCI_VENDOR};
assign cl_sh_id1 = {`VTA_AWS_PCI_SUBSYSTEM, `VTA_AWS_PCI_SUBSYSTEM_VENDOR};
assign cl_sh_status0 = 32'd0;
assign cl_sh_status1 = 32'd0;
wire _unused_ok = &{1'b0, sh_cl_status_vdip, sh_cl_apppf_irq_ack[15:1], 1'b0};

// ------------------------------------------------------------ VTA with its bus fabric
wire [15:0] vled;
assign cl_sh_status_vled = vled;
assign cl_sh_ddr_awburst = 2'b01;
assign cl_sh_ddr_arburst = 2'b01;
assign cl_sh_ddr_wid = 16'd0;
assign cl_sh_apppf_irq_req[15:1] = 15'd0;

vta_aws_cl #(
    .LOG_INP_WIDTH(LOG_INP_WIDTH), .LOG_WGT_WIDTH(LOG_WGT_WIDTH),
    .LOG_ACC_WIDTH(LOG_ACC_WIDTH), .LOG_BATCH(LOG_BATCH), .LOG_BLOCK(LOG_BLOCK),
    .LOG_UOP_BUFF_SIZE(LOG_UOP_BUFF_SIZE), .LOG_INP_BUFF_SIZE(LOG_INP_BUFF_SIZE),
    .LOG_WGT_BUFF_SIZE(LOG_WGT_BUFF_SIZE), .LOG_ACC_BUFF_SIZE(LOG_ACC_BUFF_SIZE),
    .LOG_BUS_WIDTH(LOG_BUS_WIDTH), .CONFIG_SIG(CONFIG_SIG),
    .SHELL(1), .LOG_MEM_BYTES(LOG_MEM_BYTES), .PCIS_ID_WIDTH(6), .MEM_ID_WIDTH(16)
) cl (
    .clk(clk_main_a0), .rst_n(rst_main_n),
    .flr_assert(sh_cl_flr_assert), .flr_done(cl_sh_flr_done),
    .mem_ready(sh_cl_ddr_is_ready),
    // OCL
    .s_axil_awaddr(sh_ocl_awaddr), .s_axil_awvalid(sh_ocl_awvalid),
    .s_axil_awready(ocl_sh_awready), .s_axil_wdata(sh_ocl_wdata), .s_axil_wstrb(sh_ocl_wstrb),
    .s_axil_wvalid(sh_ocl_wvalid), .s_axil_wready(ocl_sh_wready),
    .s_axil_bresp(ocl_sh_bresp), .s_axil_bvalid(ocl_sh_bvalid), .s_axil_bready(sh_ocl_bready),
    .s_axil_araddr(sh_ocl_araddr), .s_axil_arvalid(sh_ocl_arvalid),
    .s_axil_arready(ocl_sh_arready), .s_axil_rdata(ocl_sh_rdata), .s_axil_rresp(ocl_sh_rresp),
    .s_axil_rvalid(ocl_sh_rvalid), .s_axil_rready(sh_ocl_rready),
    // PCIS
    .s_axi_awid(sh_cl_dma_pcis_awid), .s_axi_awaddr(sh_cl_dma_pcis_awaddr),
    .s_axi_awlen(sh_cl_dma_pcis_awlen), .s_axi_awsize(sh_cl_dma_pcis_awsize),
    .s_axi_awvalid(sh_cl_dma_pcis_awvalid), .s_axi_awready(cl_sh_dma_pcis_awready),
    .s_axi_wdata(sh_cl_dma_pcis_wdata), .s_axi_wstrb(sh_cl_dma_pcis_wstrb),
    .s_axi_wlast(sh_cl_dma_pcis_wlast), .s_axi_wvalid(sh_cl_dma_pcis_wvalid),
    .s_axi_wready(cl_sh_dma_pcis_wready),
    .s_axi_bid(cl_sh_dma_pcis_bid), .s_axi_bresp(cl_sh_dma_pcis_bresp),
    .s_axi_bvalid(cl_sh_dma_pcis_bvalid), .s_axi_bready(sh_cl_dma_pcis_bready),
    .s_axi_arid(sh_cl_dma_pcis_arid), .s_axi_araddr(sh_cl_dma_pcis_araddr),
    .s_axi_arlen(sh_cl_dma_pcis_arlen), .s_axi_arsize(sh_cl_dma_pcis_arsize),
    .s_axi_arvalid(sh_cl_dma_pcis_arvalid), .s_axi_arready(cl_sh_dma_pcis_arready),
    .s_axi_rid(cl_sh_dma_pcis_rid), .s_axi_rdata(cl_sh_dma_pcis_rdata),
    .s_axi_rresp(cl_sh_dma_pcis_rresp), .s_axi_rlast(cl_sh_dma_pcis_rlast),
    .s_axi_rvalid(cl_sh_dma_pcis_rvalid), .s_axi_rready(sh_cl_dma_pcis_rready),
    .pcis_rd_full(cl_sh_dma_rd_full), .pcis_wr_full(cl_sh_dma_wr_full),
    // DDR C
    .m_axi_awid(cl_sh_ddr_awid), .m_axi_awaddr(cl_sh_ddr_awaddr), .m_axi_awlen(cl_sh_ddr_awlen),
    .m_axi_awsize(cl_sh_ddr_awsize), .m_axi_awvalid(cl_sh_ddr_awvalid),
    .m_axi_awready(sh_cl_ddr_awready),
    .m_axi_wdata(cl_sh_ddr_wdata), .m_axi_wstrb(cl_sh_ddr_wstrb), .m_axi_wlast(cl_sh_ddr_wlast),
    .m_axi_wvalid(cl_sh_ddr_wvalid), .m_axi_wready(sh_cl_ddr_wready),
    .m_axi_bid(sh_cl_ddr_bid), .m_axi_bresp(sh_cl_ddr_bresp), .m_axi_bvalid(sh_cl_ddr_bvalid),
    .m_axi_bready(cl_sh_ddr_bready),
    .m_axi_arid(cl_sh_ddr_arid), .m_axi_araddr(cl_sh_ddr_araddr), .m_axi_arlen(cl_sh_ddr_arlen),
    .m_axi_arsize(cl_sh_ddr_arsize), .m_axi_arvalid(cl_sh_ddr_arvalid),
    .m_axi_arready(sh_cl_ddr_arready),
    .m_axi_rid(sh_cl_ddr_rid), .m_axi_rdata(sh_cl_ddr_rdata), .m_axi_rresp(sh_cl_ddr_rresp),
    .m_axi_rlast(sh_cl_ddr_rlast), .m_axi_rvalid(sh_cl_ddr_rvalid),
    .m_axi_rready(cl_sh_ddr_rready),
    // interrupt, LEDs
    .irq_req(cl_sh_apppf_irq_req[0]), .irq_ack(sh_cl_apppf_irq_ack[0]),
    .vled(vled)
);

// ------------------------------------------------------------ unused interfaces
assign cl_sh_pcim_awid = 16'd0;
assign cl_sh_pcim_awaddr = 64'd0;
assign cl_sh_pcim_awlen = 8'd0;
assign cl_sh_pcim_awsize = 3'd0;
assign cl_sh_pcim_awuser = 19'd0;
assign cl_sh_pcim_awvalid = 1'b0;
assign cl_sh_pcim_wdata = 512'd0;
assign cl_sh_pcim_wstrb = 64'd0;
assign cl_sh_pcim_wlast = 1'b0;
assign cl_sh_pcim_wvalid = 1'b0;
assign cl_sh_pcim_bready = 1'b0;
assign cl_sh_pcim_arid = 16'd0;
assign cl_sh_pcim_araddr = 64'd0;
assign cl_sh_pcim_arlen = 8'd0;
assign cl_sh_pcim_arsize = 3'd0;
assign cl_sh_pcim_aruser = 19'd0;
assign cl_sh_pcim_arvalid = 1'b0;
assign cl_sh_pcim_rready = 1'b0;

assign cl_sda_awready = 1'b0;
assign cl_sda_wready = 1'b0;
assign cl_sda_bvalid = 1'b0;
assign cl_sda_bresp = 2'b00;
assign cl_sda_arready = 1'b0;
assign cl_sda_rvalid = 1'b0;
assign cl_sda_rdata = 32'd0;
assign cl_sda_rresp = 2'b00;

assign bar1_sh_awready = 1'b0;
assign bar1_sh_wready = 1'b0;
assign bar1_sh_bvalid = 1'b0;
assign bar1_sh_bresp = 2'b00;
assign bar1_sh_arready = 1'b0;
assign bar1_sh_rvalid = 1'b0;
assign bar1_sh_rdata = 32'd0;
assign bar1_sh_rresp = 2'b00;

assign tdo = 1'b0;

endmodule

`resetall
