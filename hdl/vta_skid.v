`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_skid: a register slice (two-entry skid buffer) for one valid/ready
 * stream.  Breaks the combinational valid and ready paths between its sides
 * while sustaining one transfer per cycle; used on the AXI R and W channels.
 */
module vta_skid #(
    // Bits of payload.
    parameter WIDTH = 64
) (
    input  wire             clk,
    input  wire             rst,

    input  wire             s_valid,
    output wire             s_ready,
    input  wire [WIDTH-1:0] s_data,

    output wire             m_valid,
    input  wire             m_ready,
    output wire [WIDTH-1:0] m_data
);

reg             m_valid_reg, m_valid_next;
reg [WIDTH-1:0] m_data_reg, m_data_next;
reg             skid_valid_reg, skid_valid_next;
reg [WIDTH-1:0] skid_data_reg, skid_data_next;

assign s_ready = !skid_valid_reg;
assign m_valid = m_valid_reg;
assign m_data = m_data_reg;

always @* begin
    m_valid_next = m_valid_reg;
    m_data_next = m_data_reg;
    skid_valid_next = skid_valid_reg;
    skid_data_next = skid_data_reg;

    if (!m_valid_reg || m_ready) begin
        // output register free: fill it from the skid entry, else from the input
        if (skid_valid_reg) begin
            m_valid_next = 1'b1;
            m_data_next = skid_data_reg;
            skid_valid_next = 1'b0;
        end else begin
            m_valid_next = s_valid;
            m_data_next = s_data;
        end
    end else if (s_valid && s_ready) begin
        // output held: park the input in the skid entry
        skid_valid_next = 1'b1;
        skid_data_next = s_data;
    end
end

always @(posedge clk) begin
    m_valid_reg <= m_valid_next;
    m_data_reg <= m_data_next;
    skid_valid_reg <= skid_valid_next;
    skid_data_reg <= skid_data_next;
    if (rst) begin
        m_valid_reg <= 1'b0;
        skid_valid_reg <= 1'b0;
    end
end

endmodule

`resetall
