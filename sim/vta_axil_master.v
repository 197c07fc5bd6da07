`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_axil_master: simulation-only AXI4-Lite master performing one register access
 * per command, so Python wakes once per access instead of once per clock.
 *
 * The harness sets cmd_write / cmd_addr / cmd_wdata and changes cmd_req; when the
 * transaction is complete cmd_ack follows cmd_req, with cmd_rdata / cmd_resp holding
 * its result.  Used by sim/vta_tb.v (VTA's own port) and sim/aws/vta_aws_tb.v (the
 * AWS shell's OCL port).
 *
 * TIMEOUT (cycles, 0: never) models the AWS shell: an access the slave has not
 * completed in time is terminated, a read returns all ones (cmd_resp SLVERR), and
 * `timeouts` counts it.  The stuck AXI transaction itself stays valid until the
 * slave takes it (AXI forbids withdrawing it); its late response is dropped, and
 * every command issued meanwhile is terminated at once the same way (the shell's
 * moderation after a timeout).
 */
module vta_axil_master #(
    // address bits
    parameter ADDR_WIDTH = 12,
    // cycles before an access is terminated (0: wait forever)
    parameter TIMEOUT = 0
) (
    input  wire                  clk,
    input  wire                  rst,

    input  wire [7:0]            cmd_req,
    input  wire                  cmd_write,
    input  wire [ADDR_WIDTH-1:0] cmd_addr,
    input  wire [31:0]           cmd_wdata,
    output reg  [7:0]            cmd_ack,
    output reg  [31:0]           cmd_rdata,
    output reg  [1:0]            cmd_resp,
    output reg  [31:0]           timeouts,

    output reg  [ADDR_WIDTH-1:0] m_axil_awaddr,
    output reg                   m_axil_awvalid,
    input  wire                  m_axil_awready,
    output reg  [31:0]           m_axil_wdata,
    output wire [3:0]            m_axil_wstrb,
    output reg                   m_axil_wvalid,
    input  wire                  m_axil_wready,
    input  wire [1:0]            m_axil_bresp,
    input  wire                  m_axil_bvalid,
    output reg                   m_axil_bready,
    output reg  [ADDR_WIDTH-1:0] m_axil_araddr,
    output reg                   m_axil_arvalid,
    input  wire                  m_axil_arready,
    input  wire [31:0]           m_axil_rdata,
    input  wire [1:0]            m_axil_rresp,
    input  wire                  m_axil_rvalid,
    output reg                   m_axil_rready
);

assign m_axil_wstrb = 4'hF;

reg        busy;      // an AXI transaction is in flight
reg        stuck;     // ... and its command was already terminated
reg [31:0] waited;

// (all of it skipped while idle: the simulator runs this block every cycle)
always @(posedge clk) if (busy || cmd_req != cmd_ack || rst) begin
    if (!busy && cmd_req != cmd_ack) begin
        // start the posted command
        busy <= 1'b1;
        waited <= 32'd0;
        if (cmd_write) begin
            m_axil_awaddr <= cmd_addr;
            m_axil_wdata <= cmd_wdata;
            m_axil_awvalid <= 1'b1;
            m_axil_wvalid <= 1'b1;
            m_axil_bready <= 1'b1;
        end else begin
            m_axil_araddr <= cmd_addr;
            m_axil_arvalid <= 1'b1;
            m_axil_rready <= 1'b1;
        end
    end
    if (busy) waited <= waited + 32'd1;
    if (m_axil_awvalid && m_axil_awready) m_axil_awvalid <= 1'b0;
    if (m_axil_wvalid && m_axil_wready) m_axil_wvalid <= 1'b0;
    if (m_axil_arvalid && m_axil_arready) m_axil_arvalid <= 1'b0;
    if (m_axil_bready && m_axil_bvalid) begin
        // write response: done (dropped when the command was terminated)
        m_axil_bready <= 1'b0;
        busy <= 1'b0;
        stuck <= 1'b0;
        if (!stuck) begin
            cmd_resp <= m_axil_bresp;
            cmd_rdata <= 32'd0;
            cmd_ack <= cmd_req;
        end
    end
    if (m_axil_rready && m_axil_rvalid) begin
        // read data: done (dropped when the command was terminated)
        m_axil_rready <= 1'b0;
        busy <= 1'b0;
        stuck <= 1'b0;
        if (!stuck) begin
            cmd_resp <= m_axil_rresp;
            cmd_rdata <= m_axil_rdata;
            cmd_ack <= cmd_req;
        end
    end
    if (TIMEOUT != 0 && cmd_req != cmd_ack
            && ((busy && !stuck && waited >= TIMEOUT) || stuck)) begin
        // the shell terminates the access: all ones, SLVERR
        stuck <= 1'b1;
        cmd_resp <= 2'b10;
        cmd_rdata <= 32'hFFFF_FFFF;
        cmd_ack <= cmd_req;
        timeouts <= timeouts + 32'd1;
    end
    if (rst) begin
        m_axil_awvalid <= 1'b0;
        m_axil_wvalid <= 1'b0;
        m_axil_bready <= 1'b0;
        m_axil_arvalid <= 1'b0;
        m_axil_rready <= 1'b0;
        busy <= 1'b0;
        stuck <= 1'b0;
        cmd_ack <= cmd_req;
        timeouts <= 32'd0;
    end
end

initial begin
    cmd_ack = 0;
    busy = 0;
    stuck = 0;
    waited = 0;
    timeouts = 0;
    m_axil_awvalid = 0;
    m_axil_wvalid = 0;
    m_axil_bready = 0;
    m_axil_arvalid = 0;
    m_axil_rready = 0;
end

endmodule

`resetall
