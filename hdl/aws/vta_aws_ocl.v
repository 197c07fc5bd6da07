`resetall
`timescale 1ns / 1ps
`default_nettype none

`include "vta_aws_regs.vh"

/*
 * vta_aws_ocl: the OCL AXI4-Lite port (host BAR0) of the AWS custom logic.
 *
 *   BAR0 0x0000 .. 0x0FFF  VTA's control registers (vta_top s_axil, 12-bit)
 *   BAR0 0x1000 .. 0x1FFF  this wrapper's registers (vta/aws/regs.py:
 *                          identification, shell, memory size, scratch, interrupts)
 *   elsewhere              DECERR; reads return VTA_AWS_UNMAPPED
 *
 * One write and one read are handled at a time, each in three steps: take the
 * address (and, for a write, the data: AW and W are accepted together), perform it
 * (forward to vta_top and wait for its response, or use a local register), then
 * hold the response until the shell takes it.
 *
 * Ordering: a register write is taken only once no host write to card memory
 * (PCIS) awaits its response (`fence`), so the data the host wrote through BAR4
 * before starting a run is in card memory before VTA can read it; the shell's OCL
 * and PCIS ports are separate AXI interfaces, and nothing else orders them.
 */
module vta_aws_ocl #(
    // shell number reported in CL_INFO (vta/aws/regs.py SHELLS)
    parameter SHELL = 1,
    // log2 of the card-memory bytes VTA addresses
    parameter LOG_MEM_BYTES = 34
) (
    input  wire        clk,
    input  wire        rst,

    // from the shell (AXI4-Lite, 32-bit address)
    input  wire [31:0] s_axil_awaddr,
    input  wire        s_axil_awvalid,
    output wire        s_axil_awready,
    input  wire [31:0] s_axil_wdata,
    input  wire [3:0]  s_axil_wstrb,
    input  wire        s_axil_wvalid,
    output wire        s_axil_wready,
    output wire [1:0]  s_axil_bresp,
    output wire        s_axil_bvalid,
    input  wire        s_axil_bready,
    input  wire [31:0] s_axil_araddr,
    input  wire        s_axil_arvalid,
    output wire        s_axil_arready,
    output wire [31:0] s_axil_rdata,
    output wire [1:0]  s_axil_rresp,
    output wire        s_axil_rvalid,
    input  wire        s_axil_rready,

    // to vta_top (AXI4-Lite, 12-bit address)
    output wire [11:0] m_axil_awaddr,
    output wire        m_axil_awvalid,
    input  wire        m_axil_awready,
    output wire [31:0] m_axil_wdata,
    output wire [3:0]  m_axil_wstrb,
    output wire        m_axil_wvalid,
    input  wire        m_axil_wready,
    input  wire [1:0]  m_axil_bresp,
    input  wire        m_axil_bvalid,
    output wire        m_axil_bready,
    output wire [11:0] m_axil_araddr,
    output wire        m_axil_arvalid,
    input  wire        m_axil_arready,
    input  wire [31:0] m_axil_rdata,
    input  wire [1:0]  m_axil_rresp,
    input  wire        m_axil_rvalid,
    output wire        m_axil_rready,

    // wrapper status
    input  wire [31:0] irq_count,
    input  wire        mem_ready,
    // a host write to card memory awaits its response: hold register writes
    input  wire        fence
);

localparam [7:0] SHELL_NO = SHELL;
localparam [7:0] LOG_MEM = LOG_MEM_BYTES;
localparam [1:0] RESP_OKAY = 2'b00;
localparam [1:0] RESP_DECERR = 2'b11;

localparam [1:0] STATE_IDLE = 2'd0;
localparam [1:0] STATE_VTA = 2'd1;
localparam [1:0] STATE_RESP = 2'd2;

// which window an address falls in
localparam [1:0] WIN_VTA = 2'd0;
localparam [1:0] WIN_CL = 2'd1;
localparam [1:0] WIN_NONE = 2'd2;
localparam [31:0] CL_BASE = `VTA_AWS_CL_WINDOW;
function [1:0] window(input [19:0] page);
    if (page == 20'd0)
        window = WIN_VTA;
    else if (page == CL_BASE[31:12])
        window = WIN_CL;
    else
        window = WIN_NONE;
endfunction

// ------------------------------------------------------------- wrapper registers
reg [31:0] scratch_reg, scratch_next;

function [31:0] cl_read(input [11:0] offset, input [31:0] scratch, input [31:0] irqs,
                        input ready);
    case (offset & 12'hFFC)
        `VTA_AWS_REG_CL_ID:     cl_read = `VTA_AWS_CL_MAGIC;
        `VTA_AWS_REG_CL_INFO:   cl_read = {15'd0, ready, LOG_MEM, SHELL_NO};
        `VTA_AWS_REG_SCRATCH:   cl_read = scratch;
        `VTA_AWS_REG_IRQ_COUNT: cl_read = irqs;
        default:                cl_read = `VTA_AWS_UNMAPPED;
    endcase
endfunction

// ------------------------------------------------------------------- writes
reg [1:0]  w_state_reg, w_state_next;
reg [11:0] w_addr_reg, w_addr_next;
reg [31:0] w_data_reg, w_data_next;
reg [3:0]  w_strb_reg, w_strb_next;
reg        fw_aw_reg, fw_aw_next;   // AW still owed to vta_top
reg        fw_w_reg, fw_w_next;     // W still owed to vta_top
reg [1:0]  b_resp_reg, b_resp_next;

// nothing is taken while in reset: the shell's access stays pending, and times out
wire w_take = !rst && !fence && w_state_reg == STATE_IDLE && s_axil_awvalid && s_axil_wvalid;
assign s_axil_awready = w_take;
assign s_axil_wready = w_take;
assign s_axil_bvalid = w_state_reg == STATE_RESP;
assign s_axil_bresp = b_resp_reg;
assign m_axil_awaddr = w_addr_reg;
assign m_axil_awvalid = fw_aw_reg;
assign m_axil_wdata = w_data_reg;
assign m_axil_wstrb = w_strb_reg;
assign m_axil_wvalid = fw_w_reg;
assign m_axil_bready = w_state_reg == STATE_VTA && !fw_aw_reg && !fw_w_reg;

integer i;
always @* begin
    w_state_next = w_state_reg;
    w_addr_next = w_addr_reg;
    w_data_next = w_data_reg;
    w_strb_next = w_strb_reg;
    fw_aw_next = fw_aw_reg;
    fw_w_next = fw_w_reg;
    b_resp_next = b_resp_reg;
    scratch_next = scratch_reg;

    case (w_state_reg)
        STATE_IDLE: begin
            // waits for AW and W together, and for host writes to card memory to land
            if (w_take) begin
                w_addr_next = s_axil_awaddr[11:0];
                w_data_next = s_axil_wdata;
                w_strb_next = s_axil_wstrb;
                case (window(s_axil_awaddr[31:12]))
                    WIN_VTA: begin
                        fw_aw_next = 1'b1;
                        fw_w_next = 1'b1;
                        w_state_next = STATE_VTA;
                    end
                    WIN_CL: begin
                        if ((s_axil_awaddr[11:0] & 12'hFFC) == `VTA_AWS_REG_SCRATCH) begin
                            for (i = 0; i < 4; i = i + 1)
                                if (s_axil_wstrb[i])
                                    scratch_next[i*8 +: 8] = s_axil_wdata[i*8 +: 8];
                        end
                        b_resp_next = RESP_OKAY;
                        w_state_next = STATE_RESP;
                    end
                    default: begin
                        b_resp_next = RESP_DECERR;
                        w_state_next = STATE_RESP;
                    end
                endcase
            end
        end
        STATE_VTA: begin
            // waits for vta_top to take AW and W, then for its response
            if (m_axil_awready) fw_aw_next = 1'b0;
            if (m_axil_wready) fw_w_next = 1'b0;
            if (m_axil_bvalid && m_axil_bready) begin
                b_resp_next = m_axil_bresp;
                w_state_next = STATE_RESP;
            end
        end
        default: begin
            // waits for the shell to take the response
            if (s_axil_bready) w_state_next = STATE_IDLE;
        end
    endcase
end

// -------------------------------------------------------------------- reads
reg [1:0]  r_state_reg, r_state_next;
reg [11:0] r_addr_reg, r_addr_next;
reg        fw_ar_reg, fw_ar_next;   // AR still owed to vta_top
reg [31:0] r_data_reg, r_data_next;
reg [1:0]  r_resp_reg, r_resp_next;

wire r_take = !rst && r_state_reg == STATE_IDLE && s_axil_arvalid;
assign s_axil_arready = r_take;
assign s_axil_rvalid = r_state_reg == STATE_RESP;
assign s_axil_rdata = r_data_reg;
assign s_axil_rresp = r_resp_reg;
assign m_axil_araddr = r_addr_reg;
assign m_axil_arvalid = fw_ar_reg;
assign m_axil_rready = r_state_reg == STATE_VTA && !fw_ar_reg;

always @* begin
    r_state_next = r_state_reg;
    r_addr_next = r_addr_reg;
    fw_ar_next = fw_ar_reg;
    r_data_next = r_data_reg;
    r_resp_next = r_resp_reg;

    case (r_state_reg)
        STATE_IDLE: begin
            // waits for AR
            if (r_take) begin
                r_addr_next = s_axil_araddr[11:0];
                case (window(s_axil_araddr[31:12]))
                    WIN_VTA: begin
                        fw_ar_next = 1'b1;
                        r_state_next = STATE_VTA;
                    end
                    WIN_CL: begin
                        r_data_next = cl_read(s_axil_araddr[11:0], scratch_reg, irq_count,
                                              mem_ready);
                        r_resp_next = RESP_OKAY;
                        r_state_next = STATE_RESP;
                    end
                    default: begin
                        r_data_next = `VTA_AWS_UNMAPPED;
                        r_resp_next = RESP_DECERR;
                        r_state_next = STATE_RESP;
                    end
                endcase
            end
        end
        STATE_VTA: begin
            // waits for vta_top to take AR, then for its data
            if (m_axil_arready) fw_ar_next = 1'b0;
            if (m_axil_rvalid && m_axil_rready) begin
                r_data_next = m_axil_rdata;
                r_resp_next = m_axil_rresp;
                r_state_next = STATE_RESP;
            end
        end
        default: begin
            // waits for the shell to take the data
            if (s_axil_rready) r_state_next = STATE_IDLE;
        end
    endcase
end

always @(posedge clk) begin
    w_state_reg <= w_state_next;
    w_addr_reg <= w_addr_next;
    w_data_reg <= w_data_next;
    w_strb_reg <= w_strb_next;
    fw_aw_reg <= fw_aw_next;
    fw_w_reg <= fw_w_next;
    b_resp_reg <= b_resp_next;
    scratch_reg <= scratch_next;
    r_state_reg <= r_state_next;
    r_addr_reg <= r_addr_next;
    fw_ar_reg <= fw_ar_next;
    r_data_reg <= r_data_next;
    r_resp_reg <= r_resp_next;
    if (rst) begin
        w_state_reg <= STATE_IDLE;
        fw_aw_reg <= 1'b0;
        fw_w_reg <= 1'b0;
        scratch_reg <= 32'd0;
        r_state_reg <= STATE_IDLE;
        fw_ar_reg <= 1'b0;
    end
end

endmodule

`resetall
