`resetall
`timescale 1ns / 1ps
`default_nettype none

`include "vta_aws_regs.vh"

/*
 * vta_aws_f2: VTA as custom logic for the AWS F2 Small Shell (0x10212415).  The
 * shell-facing ports are named and sized as in its cl_ports.vh (aws/aws-fpga f2
 * branch, hdk/common/shell_stable/design/interfaces); the card-memory port is named
 * as the AXI4 slave port of AWS's sh_ddr block, which the HDK's CL top
 * (hdl/aws/hdk/f2/cl_vta.sv) instantiates beside this module with the DDR4
 * controller present.
 *
 *   ocl_cl_* (BAR0, AXI4-Lite)             --> VTA registers + wrapper registers
 *   sh_cl_dma_pcis_* (BAR4, 16-bit IDs)    --+
 *                                            +--> cl_sh_ddr_axi_* (sh_ddr: DDR4, 64 GiB)
 *   vta_top's DRAM master -------------------+
 *   cl_sh_apppf_irq_req[0]                 <--  VTA finished (DONE or ERROR)
 *   PCIM, SDA, HBM monitor APB, C2C, debug bridge: tied off (unused)
 *
 * Card memory is the DDR4 DIMM, not HBM: VTA has one 512-bit master, whose peak
 * (64 bytes per clk_main_a0 cycle) one DDR4 channel covers, while HBM would need
 * 32 AXI3 pseudo-channels of 256 bits, an interconnect across them, the HBM IP and
 * its APB monitor (docs/aws.md, "F2 choices").
 */
module vta_aws_f2 #(
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
    // log2 of the DDR4 bytes VTA and BAR4 reach (36: 64 GiB; smaller in simulation)
    parameter LOG_MEM_BYTES = 36
) (
    // globals
    input  wire         clk_main_a0,
    input  wire         rst_main_n,
    input  wire         sh_cl_flr_assert,
    output wire         cl_sh_flr_done,
    output wire [31:0]  cl_sh_status0,
    output wire [31:0]  cl_sh_status1,
    output wire [31:0]  cl_sh_status2,
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
    output wire [1:0]   cl_sh_pcim_awburst,
    output wire [3:0]   cl_sh_pcim_awcache,
    output wire         cl_sh_pcim_awlock,
    output wire [2:0]   cl_sh_pcim_awprot,
    output wire [3:0]   cl_sh_pcim_awqos,
    output wire [54:0]  cl_sh_pcim_awuser,
    output wire         cl_sh_pcim_awvalid,
    output wire [15:0]  cl_sh_pcim_wid,
    output wire [511:0] cl_sh_pcim_wdata,
    output wire [63:0]  cl_sh_pcim_wstrb,
    output wire         cl_sh_pcim_wlast,
    output wire [63:0]  cl_sh_pcim_wuser,
    output wire         cl_sh_pcim_wvalid,
    output wire         cl_sh_pcim_bready,
    output wire [15:0]  cl_sh_pcim_arid,
    output wire [63:0]  cl_sh_pcim_araddr,
    output wire [7:0]   cl_sh_pcim_arlen,
    output wire [2:0]   cl_sh_pcim_arsize,
    output wire [1:0]   cl_sh_pcim_arburst,
    output wire [3:0]   cl_sh_pcim_arcache,
    output wire         cl_sh_pcim_arlock,
    output wire [2:0]   cl_sh_pcim_arprot,
    output wire [3:0]   cl_sh_pcim_arqos,
    output wire [54:0]  cl_sh_pcim_aruser,
    output wire         cl_sh_pcim_arvalid,
    output wire         cl_sh_pcim_rready,

    // card memory: AXI4 slave port of sh_ddr
    output wire [15:0]  cl_sh_ddr_axi_awid,
    output wire [63:0]  cl_sh_ddr_axi_awaddr,
    output wire [7:0]   cl_sh_ddr_axi_awlen,
    output wire [2:0]   cl_sh_ddr_axi_awsize,
    output wire [1:0]   cl_sh_ddr_axi_awburst,
    output wire         cl_sh_ddr_axi_awvalid,
    input  wire         cl_sh_ddr_axi_awready,
    output wire [511:0] cl_sh_ddr_axi_wdata,
    output wire [63:0]  cl_sh_ddr_axi_wstrb,
    output wire         cl_sh_ddr_axi_wlast,
    output wire         cl_sh_ddr_axi_wvalid,
    input  wire         cl_sh_ddr_axi_wready,
    input  wire [15:0]  cl_sh_ddr_axi_bid,
    input  wire [1:0]   cl_sh_ddr_axi_bresp,
    input  wire         cl_sh_ddr_axi_bvalid,
    output wire         cl_sh_ddr_axi_bready,
    output wire [15:0]  cl_sh_ddr_axi_arid,
    output wire [63:0]  cl_sh_ddr_axi_araddr,
    output wire [7:0]   cl_sh_ddr_axi_arlen,
    output wire [2:0]   cl_sh_ddr_axi_arsize,
    output wire [1:0]   cl_sh_ddr_axi_arburst,
    output wire         cl_sh_ddr_axi_arvalid,
    input  wire         cl_sh_ddr_axi_arready,
    input  wire [15:0]  cl_sh_ddr_axi_rid,
    input  wire [511:0] cl_sh_ddr_axi_rdata,
    input  wire [1:0]   cl_sh_ddr_axi_rresp,
    input  wire         cl_sh_ddr_axi_rlast,
    input  wire         cl_sh_ddr_axi_rvalid,
    output wire         cl_sh_ddr_axi_rready,
    input  wire         sh_cl_ddr_is_ready,

    // user interrupts
    output wire [15:0]  cl_sh_apppf_irq_req,
    input  wire [15:0]  sh_cl_apppf_irq_ack,

    // PCIS (BAR4; 16-bit IDs)
    input  wire [15:0]  sh_cl_dma_pcis_awid,
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
    output wire [15:0]  cl_sh_dma_pcis_bid,
    output wire [1:0]   cl_sh_dma_pcis_bresp,
    output wire         cl_sh_dma_pcis_bvalid,
    input  wire         sh_cl_dma_pcis_bready,
    input  wire [15:0]  sh_cl_dma_pcis_arid,
    input  wire [63:0]  sh_cl_dma_pcis_araddr,
    input  wire [7:0]   sh_cl_dma_pcis_arlen,
    input  wire [2:0]   sh_cl_dma_pcis_arsize,
    input  wire         sh_cl_dma_pcis_arvalid,
    output wire         cl_sh_dma_pcis_arready,
    output wire [15:0]  cl_sh_dma_pcis_rid,
    output wire [511:0] cl_sh_dma_pcis_rdata,
    output wire [1:0]   cl_sh_dma_pcis_rresp,
    output wire         cl_sh_dma_pcis_rlast,
    output wire [63:0]  cl_sh_dma_pcis_ruser,
    output wire         cl_sh_dma_pcis_rvalid,
    input  wire         sh_cl_dma_pcis_rready,

    // OCL (application PF BAR0)
    input  wire [31:0]  ocl_cl_awaddr,
    input  wire         ocl_cl_awvalid,
    output wire         cl_ocl_awready,
    input  wire [31:0]  ocl_cl_wdata,
    input  wire [3:0]   ocl_cl_wstrb,
    input  wire         ocl_cl_wvalid,
    output wire         cl_ocl_wready,
    output wire [1:0]   cl_ocl_bresp,
    output wire         cl_ocl_bvalid,
    input  wire         ocl_cl_bready,
    input  wire [31:0]  ocl_cl_araddr,
    input  wire         ocl_cl_arvalid,
    output wire         cl_ocl_arready,
    output wire [31:0]  cl_ocl_rdata,
    output wire [1:0]   cl_ocl_rresp,
    output wire         cl_ocl_rvalid,
    input  wire         ocl_cl_rready,

    // SDA (unused)
    output wire         cl_sda_awready,
    output wire         cl_sda_wready,
    output wire [1:0]   cl_sda_bresp,
    output wire         cl_sda_bvalid,
    output wire         cl_sda_arready,
    output wire [31:0]  cl_sda_rdata,
    output wire [1:0]   cl_sda_rresp,
    output wire         cl_sda_rvalid,

    // virtual JTAG (unused)
    output wire         tdo,

    // HBM monitor APB (HBM unused)
    output wire [21:0]  hbm_apb_paddr_1,
    output wire [2:0]   hbm_apb_pprot_1,
    output wire         hbm_apb_psel_1,
    output wire         hbm_apb_penable_1,
    output wire         hbm_apb_pwrite_1,
    output wire [31:0]  hbm_apb_pwdata_1,
    output wire [3:0]   hbm_apb_pstrb_1,
    output wire         hbm_apb_pready_1,
    output wire [31:0]  hbm_apb_prdata_1,
    output wire         hbm_apb_pslverr_1,
    output wire [21:0]  hbm_apb_paddr_0,
    output wire [2:0]   hbm_apb_pprot_0,
    output wire         hbm_apb_psel_0,
    output wire         hbm_apb_penable_0,
    output wire         hbm_apb_pwrite_0,
    output wire [31:0]  hbm_apb_pwdata_0,
    output wire [3:0]   hbm_apb_pstrb_0,
    output wire         hbm_apb_pready_0,
    output wire [31:0]  hbm_apb_prdata_0,
    output wire         hbm_apb_pslverr_0,

    // C2C PCIe (unused)
    output wire [7:0]   PCIE_EP_TXP,
    output wire [7:0]   PCIE_EP_TXN,
    output wire         PCIE_RP_PERSTN,
    output wire [7:0]   PCIE_RP_TXP,
    output wire [7:0]   PCIE_RP_TXN
);

// ------------------------------------------------------------ identification
assign cl_sh_id0 = {`VTA_AWS_PCI_DEVICE_F2, `VTA_AWS_PCI_VENDOR};
assign cl_sh_id1 = {`VTA_AWS_PCI_SUBSYSTEM, `VTA_AWS_PCI_SUBSYSTEM_VENDOR};
assign cl_sh_status0 = 32'd0;
assign cl_sh_status1 = 32'd0;
assign cl_sh_status2 = 32'd0;
wire _unused_ok = &{1'b0, sh_cl_status_vdip, sh_cl_apppf_irq_ack[15:1], 1'b0};

// ------------------------------------------------------------ VTA with its bus fabric
wire [15:0] vled;
assign cl_sh_status_vled = vled;
assign cl_sh_ddr_axi_awburst = 2'b01;
assign cl_sh_ddr_axi_arburst = 2'b01;
assign cl_sh_dma_pcis_ruser = 64'd0;
assign cl_sh_apppf_irq_req[15:1] = 15'd0;

vta_aws_cl #(
    .LOG_INP_WIDTH(LOG_INP_WIDTH), .LOG_WGT_WIDTH(LOG_WGT_WIDTH),
    .LOG_ACC_WIDTH(LOG_ACC_WIDTH), .LOG_BATCH(LOG_BATCH), .LOG_BLOCK(LOG_BLOCK),
    .LOG_UOP_BUFF_SIZE(LOG_UOP_BUFF_SIZE), .LOG_INP_BUFF_SIZE(LOG_INP_BUFF_SIZE),
    .LOG_WGT_BUFF_SIZE(LOG_WGT_BUFF_SIZE), .LOG_ACC_BUFF_SIZE(LOG_ACC_BUFF_SIZE),
    .LOG_BUS_WIDTH(LOG_BUS_WIDTH), .CONFIG_SIG(CONFIG_SIG),
    .SHELL(2), .LOG_MEM_BYTES(LOG_MEM_BYTES), .PCIS_ID_WIDTH(16), .MEM_ID_WIDTH(16)
) cl (
    .clk(clk_main_a0), .rst_n(rst_main_n),
    .flr_assert(sh_cl_flr_assert), .flr_done(cl_sh_flr_done),
    .mem_ready(sh_cl_ddr_is_ready),
    // OCL
    .s_axil_awaddr(ocl_cl_awaddr), .s_axil_awvalid(ocl_cl_awvalid),
    .s_axil_awready(cl_ocl_awready), .s_axil_wdata(ocl_cl_wdata), .s_axil_wstrb(ocl_cl_wstrb),
    .s_axil_wvalid(ocl_cl_wvalid), .s_axil_wready(cl_ocl_wready),
    .s_axil_bresp(cl_ocl_bresp), .s_axil_bvalid(cl_ocl_bvalid), .s_axil_bready(ocl_cl_bready),
    .s_axil_araddr(ocl_cl_araddr), .s_axil_arvalid(ocl_cl_arvalid),
    .s_axil_arready(cl_ocl_arready), .s_axil_rdata(cl_ocl_rdata), .s_axil_rresp(cl_ocl_rresp),
    .s_axil_rvalid(cl_ocl_rvalid), .s_axil_rready(ocl_cl_rready),
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
    // card memory
    .m_axi_awid(cl_sh_ddr_axi_awid), .m_axi_awaddr(cl_sh_ddr_axi_awaddr),
    .m_axi_awlen(cl_sh_ddr_axi_awlen), .m_axi_awsize(cl_sh_ddr_axi_awsize),
    .m_axi_awvalid(cl_sh_ddr_axi_awvalid), .m_axi_awready(cl_sh_ddr_axi_awready),
    .m_axi_wdata(cl_sh_ddr_axi_wdata), .m_axi_wstrb(cl_sh_ddr_axi_wstrb),
    .m_axi_wlast(cl_sh_ddr_axi_wlast), .m_axi_wvalid(cl_sh_ddr_axi_wvalid),
    .m_axi_wready(cl_sh_ddr_axi_wready),
    .m_axi_bid(cl_sh_ddr_axi_bid), .m_axi_bresp(cl_sh_ddr_axi_bresp),
    .m_axi_bvalid(cl_sh_ddr_axi_bvalid), .m_axi_bready(cl_sh_ddr_axi_bready),
    .m_axi_arid(cl_sh_ddr_axi_arid), .m_axi_araddr(cl_sh_ddr_axi_araddr),
    .m_axi_arlen(cl_sh_ddr_axi_arlen), .m_axi_arsize(cl_sh_ddr_axi_arsize),
    .m_axi_arvalid(cl_sh_ddr_axi_arvalid), .m_axi_arready(cl_sh_ddr_axi_arready),
    .m_axi_rid(cl_sh_ddr_axi_rid), .m_axi_rdata(cl_sh_ddr_axi_rdata),
    .m_axi_rresp(cl_sh_ddr_axi_rresp), .m_axi_rlast(cl_sh_ddr_axi_rlast),
    .m_axi_rvalid(cl_sh_ddr_axi_rvalid), .m_axi_rready(cl_sh_ddr_axi_rready),
    // interrupt, LEDs
    .irq_req(cl_sh_apppf_irq_req[0]), .irq_ack(sh_cl_apppf_irq_ack[0]),
    .vled(vled)
);

// ------------------------------------------------------------ unused interfaces
assign cl_sh_pcim_awid = 16'd0;
assign cl_sh_pcim_awaddr = 64'd0;
assign cl_sh_pcim_awlen = 8'd0;
assign cl_sh_pcim_awsize = 3'd0;
assign cl_sh_pcim_awburst = 2'b01;
assign cl_sh_pcim_awcache = 4'd0;
assign cl_sh_pcim_awlock = 1'b0;
assign cl_sh_pcim_awprot = 3'd0;
assign cl_sh_pcim_awqos = 4'd0;
assign cl_sh_pcim_awuser = 55'd0;
assign cl_sh_pcim_awvalid = 1'b0;
assign cl_sh_pcim_wid = 16'd0;
assign cl_sh_pcim_wdata = 512'd0;
assign cl_sh_pcim_wstrb = 64'd0;
assign cl_sh_pcim_wlast = 1'b0;
assign cl_sh_pcim_wuser = 64'd0;
assign cl_sh_pcim_wvalid = 1'b0;
assign cl_sh_pcim_bready = 1'b0;
assign cl_sh_pcim_arid = 16'd0;
assign cl_sh_pcim_araddr = 64'd0;
assign cl_sh_pcim_arlen = 8'd0;
assign cl_sh_pcim_arsize = 3'd0;
assign cl_sh_pcim_arburst = 2'b01;
assign cl_sh_pcim_arcache = 4'd0;
assign cl_sh_pcim_arlock = 1'b0;
assign cl_sh_pcim_arprot = 3'd0;
assign cl_sh_pcim_arqos = 4'd0;
assign cl_sh_pcim_aruser = 55'd0;
assign cl_sh_pcim_arvalid = 1'b0;
assign cl_sh_pcim_rready = 1'b0;

assign cl_sda_awready = 1'b0;
assign cl_sda_wready = 1'b0;
assign cl_sda_bresp = 2'b00;
assign cl_sda_bvalid = 1'b0;
assign cl_sda_arready = 1'b0;
assign cl_sda_rdata = 32'd0;
assign cl_sda_rresp = 2'b00;
assign cl_sda_rvalid = 1'b0;

assign tdo = 1'b0;

assign hbm_apb_paddr_1 = 22'd0;
assign hbm_apb_pprot_1 = 3'd0;
assign hbm_apb_psel_1 = 1'b0;
assign hbm_apb_penable_1 = 1'b0;
assign hbm_apb_pwrite_1 = 1'b0;
assign hbm_apb_pwdata_1 = 32'd0;
assign hbm_apb_pstrb_1 = 4'd0;
assign hbm_apb_pready_1 = 1'b0;
assign hbm_apb_prdata_1 = 32'd0;
assign hbm_apb_pslverr_1 = 1'b0;
assign hbm_apb_paddr_0 = 22'd0;
assign hbm_apb_pprot_0 = 3'd0;
assign hbm_apb_psel_0 = 1'b0;
assign hbm_apb_penable_0 = 1'b0;
assign hbm_apb_pwrite_0 = 1'b0;
assign hbm_apb_pwdata_0 = 32'd0;
assign hbm_apb_pstrb_0 = 4'd0;
assign hbm_apb_pready_0 = 1'b0;
assign hbm_apb_prdata_0 = 32'd0;
assign hbm_apb_pslverr_0 = 1'b0;

assign PCIE_EP_TXP = 8'd0;
assign PCIE_EP_TXN = 8'd0;
assign PCIE_RP_PERSTN = 1'b0;
assign PCIE_RP_TXP = 8'd0;
assign PCIE_RP_TXN = 8'd0;

endmodule

`resetall
