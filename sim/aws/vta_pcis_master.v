`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_pcis_master: simulation model of the AWS shell's PCIS port (the AXI4 master
 * behind BAR4, and on F1 behind the XDMA engine too), driven by the harness one
 * bulk transfer at a time so Python never runs per beat.
 *
 * A command (pc_op, pc_addr, pc_bytes, pc_id, pc_beats; then change pc_req) moves
 * pc_bytes between card address pc_addr and a staging buffer, which the harness
 * fills or empties through the file +PCIS_FILE= (raw 64-byte words, each most
 * significant byte first, as the DRAM model's backdoor): op 1 loads the file and
 * writes it to the card, op 2 reads the card and dumps the buffer with $writememh.
 * pc_ack follows pc_req when the transfer is complete.
 *
 * As the shell does: every beat is 64 bytes (AxSIZE 6); the first request of a
 * transfer carries the unaligned byte address and the first and last beats enable
 * only the bytes of the transfer; requests are INCR bursts of at most pc_beats
 * beats that never cross a 4 KiB boundary; up to 32 reads and 32 writes are
 * outstanding; every request carries pc_id.
 *
 * Checks (counted, for the harness to report):
 *  - pc_late: requests that did not complete within TIMEOUT cycles of their
 *    AxVALID (the shell's 8 us rule; the real shell would have terminated them);
 *    pc_max_wait is the longest any request took
 *  - pc_id_errors: responses whose BID / RID is not the request's ID
 *  - pc_resp_errors: responses other than OKAY
 * +PCIS_STALL= (per 256) withholds AWVALID, ARVALID, WVALID, BREADY and RREADY at
 * random (+PCIS_SEED=), as a busy host would.
 */
module vta_pcis_master #(
    // AXI ID bits (F1 6, F2 16)
    parameter ID_WIDTH = 6,
    // log2 of the staging buffer's 64-byte words
    parameter LOG_BUF_WORDS = 14,
    // cycles a request may take (8 us of clk_main_a0)
    parameter TIMEOUT = 1000,
    // requests outstanding per direction
    parameter MAX_OUTSTANDING = 32
) (
    input  wire                clk,
    input  wire                rst,

    input  wire [7:0]          pc_req,
    input  wire [1:0]          pc_op,
    input  wire [63:0]         pc_addr,
    input  wire [31:0]         pc_bytes,
    input  wire [15:0]         pc_id,
    input  wire [8:0]          pc_beats,
    output reg  [7:0]          pc_ack,
    output reg  [31:0]         pc_late,
    output reg  [31:0]         pc_max_wait,
    output reg  [31:0]         pc_id_errors,
    output reg  [31:0]         pc_resp_errors,

    output reg  [ID_WIDTH-1:0] m_axi_awid,
    output reg  [63:0]         m_axi_awaddr,
    output reg  [7:0]          m_axi_awlen,
    output wire [2:0]          m_axi_awsize,
    output reg                 m_axi_awvalid,
    input  wire                m_axi_awready,
    output reg  [511:0]        m_axi_wdata,
    output reg  [63:0]         m_axi_wstrb,
    output reg                 m_axi_wlast,
    output reg                 m_axi_wvalid,
    input  wire                m_axi_wready,
    input  wire [ID_WIDTH-1:0] m_axi_bid,
    input  wire [1:0]          m_axi_bresp,
    input  wire                m_axi_bvalid,
    output wire                m_axi_bready,
    output reg  [ID_WIDTH-1:0] m_axi_arid,
    output reg  [63:0]         m_axi_araddr,
    output reg  [7:0]          m_axi_arlen,
    output wire [2:0]          m_axi_arsize,
    output reg                 m_axi_arvalid,
    input  wire                m_axi_arready,
    input  wire [ID_WIDTH-1:0] m_axi_rid,
    input  wire [511:0]        m_axi_rdata,
    input  wire [1:0]          m_axi_rresp,
    input  wire                m_axi_rlast,
    input  wire                m_axi_rvalid,
    output wire                m_axi_rready
);

localparam BUF_WORDS = 1 << LOG_BUF_WORDS;
localparam QW = 6;  // bits of a request-queue index (64 entries)

assign m_axi_awsize = 3'd6;
assign m_axi_arsize = 3'd6;

reg [511:0] buffer [0:BUF_WORDS-1];

// run-time settings
integer stall;
reg [31:0] rnd;
reg [8*512-1:0] pc_file;
initial begin
    stall = 0;
    rnd = 32'h2468_ACE1;
    pc_file = "vta_pcis.bin";
    if ($value$plusargs("PCIS_STALL=%d", stall)) ;
    if ($value$plusargs("PCIS_SEED=%d", rnd)) ;
    if ($value$plusargs("PCIS_FILE=%s", pc_file)) ;
    if (rnd == 0) rnd = 1;
end

function [31:0] xorshift(input [31:0] x);
    reg [31:0] y;
    begin
        y = x ^ (x << 13);
        y = y ^ (y >> 17);
        xorshift = y ^ (y << 5);
    end
endfunction

wire stall_a = stall != 0 && rnd[7:0] < stall;
wire stall_w = stall != 0 && rnd[15:8] < stall;
wire stall_r = stall != 0 && rnd[23:16] < stall;
wire stall_b = stall != 0 && rnd[31:24] < stall;

// ------------------------------------------------------------ the transfer
reg         active;
reg [1:0]   op;
reg [63:0]  base;        // card address of buffer word 0 (64-byte aligned)
reg [5:0]   first_off;   // first byte of the transfer in word 0
reg [5:0]   last_off;    // last byte of the transfer in the last word
reg [31:0]  nwords;
reg [31:0]  req_word;    // next word to request
reg [31:0]  data_word;   // next word to send (W) or receive (R)
reg [8:0]   max_beats;
reg [ID_WIDTH-1:0] id;
reg [63:0]  cycle;

// per request in flight: issue cycle; for writes also its beat count (W order)
reg [63:0]  q_time [0:(1<<QW)-1];
reg [8:0]   q_beats [0:(1<<QW)-1];
reg [QW:0]  q_wr, q_rd, q_w;     // push, response pop, W pop pointers
wire [QW:0] q_used = q_wr - q_rd;
reg [8:0]   w_left;              // beats left in the burst W is sending

assign m_axi_bready = active && op == 2'd1 && !stall_b;
assign m_axi_rready = active && op == 2'd2 && !stall_r;

// beats of the next request: up to max_beats, the 4 KiB page end, the transfer end
wire [63:0] req_addr = base + {req_word, 6'd0};
wire [31:0] to_page = 32'd64 - {26'd0, req_addr[11:6]};
wire [31:0] to_end = nwords - req_word;
wire [31:0] lim_a = (to_page < to_end) ? to_page : to_end;
wire [31:0] req_beats = ({23'd0, max_beats} < lim_a) ? {23'd0, max_beats} : lim_a;
wire issue = active && req_word < nwords && q_used < MAX_OUTSTANDING && !stall_a
           && !(op == 2'd1 && m_axi_awvalid) && !(op == 2'd2 && m_axi_arvalid);

// strobes of word k of the transfer
function [63:0] strobes(input [31:0] k, input [31:0] n, input [5:0] lo, input [5:0] hi);
    integer j;
    begin
        for (j = 0; j < 64; j = j + 1)
            strobes[j] = (k != 0 || j >= lo) && (k != n - 1 || j <= hi);
    end
endfunction

wire [63:0] wait_now = cycle - q_time[q_rd[QW-1:0]];
integer fd, nread;

always @(posedge clk) begin
    cycle <= cycle + 1;
    rnd <= xorshift(rnd);

    // start a command
    if (!active && pc_req != pc_ack && !rst) begin
        active <= 1'b1;
        op <= pc_op;
        base <= {pc_addr[63:6], 6'd0};
        first_off <= pc_addr[5:0];
        last_off <= pc_addr[5:0] + pc_bytes[5:0] - 6'd1;
        nwords <= ({26'd0, pc_addr[5:0]} + pc_bytes + 32'd63) >> 6;
        req_word <= 32'd0;
        data_word <= 32'd0;
        max_beats <= (pc_beats == 9'd0 || pc_beats > 9'd256) ? 9'd1 : pc_beats;
        id <= pc_id[ID_WIDTH-1:0];
        w_left <= 9'd0;
        q_w <= q_wr;  // the W queue starts at this command's first request
        if (pc_op == 2'd1) begin
            fd = $fopen(pc_file, "rb");
            nread = $fread(buffer, fd, 0, ({26'd0, pc_addr[5:0]} + pc_bytes + 32'd63) >> 6);
            $fclose(fd);
        end
    end

    // requests (AW or AR)
    if (m_axi_awvalid && m_axi_awready) m_axi_awvalid <= 1'b0;
    if (m_axi_arvalid && m_axi_arready) m_axi_arvalid <= 1'b0;
    if (issue) begin
        q_time[q_wr[QW-1:0]] <= cycle;
        q_beats[q_wr[QW-1:0]] <= req_beats[8:0];
        q_wr <= q_wr + 1'b1;
        req_word <= req_word + req_beats;
        if (op == 2'd1) begin
            m_axi_awvalid <= 1'b1;
            m_axi_awid <= id;
            m_axi_awaddr <= req_word == 0 ? base + {58'd0, first_off} : req_addr;
            m_axi_awlen <= req_beats[7:0] - 8'd1;
        end else begin
            m_axi_arvalid <= 1'b1;
            m_axi_arid <= id;
            m_axi_araddr <= req_word == 0 ? base + {58'd0, first_off} : req_addr;
            m_axi_arlen <= req_beats[7:0] - 8'd1;
        end
    end

    // W: the bursts' beats in request order
    if (m_axi_wvalid && m_axi_wready) m_axi_wvalid <= 1'b0;
    if (active && op == 2'd1 && (!m_axi_wvalid || m_axi_wready) && !stall_w) begin
        if (w_left != 9'd0) begin
            m_axi_wvalid <= 1'b1;
            m_axi_wdata <= buffer[data_word[LOG_BUF_WORDS-1:0]];
            m_axi_wstrb <= strobes(data_word, nwords, first_off, last_off);
            m_axi_wlast <= w_left == 9'd1;
            data_word <= data_word + 32'd1;
            w_left <= w_left - 9'd1;
        end else if (q_w != q_wr) begin
            w_left <= q_beats[q_w[QW-1:0]];
            q_w <= q_w + 1'b1;
        end
    end

    // B / R: responses, checked
    if ((m_axi_bvalid && m_axi_bready) || (m_axi_rvalid && m_axi_rready && m_axi_rlast)) begin
        q_rd <= q_rd + 1'b1;
        if (wait_now > {32'd0, pc_max_wait}) pc_max_wait <= wait_now[31:0];
        if (wait_now > TIMEOUT) begin
            pc_late <= pc_late + 32'd1;
            $display("%m: a PCIS %0s at 0x%0h took %0d cycles (limit %0d: the shell's 8 us)",
                     op == 2'd1 ? "write" : "read", base, wait_now, TIMEOUT);
        end
    end
    if (m_axi_bvalid && m_axi_bready) begin
        if (m_axi_bid != id) pc_id_errors <= pc_id_errors + 32'd1;
        if (m_axi_bresp != 2'b00) pc_resp_errors <= pc_resp_errors + 32'd1;
    end
    if (m_axi_rvalid && m_axi_rready) begin
        buffer[data_word[LOG_BUF_WORDS-1:0]] <= m_axi_rdata;
        data_word <= data_word + 32'd1;
        if (m_axi_rid != id) pc_id_errors <= pc_id_errors + 32'd1;
        if (m_axi_rresp != 2'b00) pc_resp_errors <= pc_resp_errors + 32'd1;
    end

    // done: every request issued and answered
    if (active && req_word == nwords && q_used == 0 && !m_axi_awvalid && !m_axi_arvalid
            && !m_axi_wvalid && w_left == 9'd0) begin
        active <= 1'b0;
        pc_ack <= pc_req;
        if (op == 2'd2)
            $writememh(pc_file, buffer, 0, nwords - 1);
    end

    if (rst) begin
        active <= 1'b0;
        m_axi_awvalid <= 1'b0;
        m_axi_arvalid <= 1'b0;
        m_axi_wvalid <= 1'b0;
        q_wr <= 0;
        q_rd <= 0;
        q_w <= 0;
        pc_ack <= pc_req;
        pc_late <= 0;
        pc_max_wait <= 0;
        pc_id_errors <= 0;
        pc_resp_errors <= 0;
    end
end

initial begin
    active = 0;
    cycle = 0;
    pc_ack = 0;
    pc_late = 0;
    pc_max_wait = 0;
    pc_id_errors = 0;
    pc_resp_errors = 0;
    q_wr = 0;
    q_rd = 0;
    q_w = 0;
    w_left = 0;
    m_axi_awvalid = 0;
    m_axi_arvalid = 0;
    m_axi_wvalid = 0;
    m_axi_wlast = 0;
    m_axi_awid = 0;
    m_axi_arid = 0;
end

endmodule

`resetall
