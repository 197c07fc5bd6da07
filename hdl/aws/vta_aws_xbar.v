`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_aws_xbar: two AXI4 masters onto one card-memory port.  Port 0 is the host
 * (the shell's PCIS port, through vta_aws_idq), port 1 is VTA (through
 * vta_aws_upsize).
 *
 *   s0 (host) ------------------+     AR, AW arbiters     +--> m AR/AW: round robin,
 *                               |---  (one request per ---|    ID = {port, slave ID}
 *   s1 (VTA) --> [W buffer] ----+     cycle), W route     +--> m W: granted bursts'
 *            <-- [R buffer] <------- R, B: demux by ID <--     beats, in AW order
 *
 * Bounded host latency: the shell terminates a PCIS transaction that takes longer
 * than 8 us (1,000 cycles of a 125 MHz clk_main_a0, 2,000 at 250 MHz), however
 * busy VTA keeps the memory.  So VTA is never allowed to hold a channel at its own
 * pace:
 *  - reads: VTA's read data lands in a buffer of R_BEATS beats, and a VTA read is
 *    granted only when the buffer has room reserved for all its beats; the memory's
 *    R channel never waits for VTA, and at most R_BEATS beats of VTA data are ever
 *    ahead of a host read in the memory;
 *  - writes: a VTA write burst is granted only once all its beats are buffered, so
 *    the W channel streams it at full rate and a host write waits for at most one
 *    VTA burst (64 beats) per turn of the round robin.
 * A host request therefore waits behind at most R_BEATS + 64 VTA beats plus the
 * memory's own latency (docs/aws.md, "Latency of host accesses").
 */
module vta_aws_xbar #(
    // AXI data width
    parameter DATA_WIDTH = 512,
    // AXI address width
    parameter ADDR_WIDTH = 64,
    // ID width of both slave ports
    parameter S_ID_WIDTH = 4,
    // ID width of the memory port (> S_ID_WIDTH)
    parameter M_ID_WIDTH = 16,
    // log2 of VTA's read-data buffer in beats (its reads in flight, in beats)
    parameter LOG_R_BEATS = 7,
    // write bursts VTA may have waiting for their response (1..255)
    parameter S1_WRITES = 4
) (
    input  wire                      clk,
    input  wire                      rst,

    // port 0: host
    input  wire [S_ID_WIDTH-1:0]     s0_axi_awid,
    input  wire [ADDR_WIDTH-1:0]     s0_axi_awaddr,
    input  wire [7:0]                s0_axi_awlen,
    input  wire [2:0]                s0_axi_awsize,
    input  wire                      s0_axi_awvalid,
    output wire                      s0_axi_awready,
    input  wire [DATA_WIDTH-1:0]     s0_axi_wdata,
    input  wire [DATA_WIDTH/8-1:0]   s0_axi_wstrb,
    input  wire                      s0_axi_wlast,
    input  wire                      s0_axi_wvalid,
    output wire                      s0_axi_wready,
    output wire [S_ID_WIDTH-1:0]     s0_axi_bid,
    output wire [1:0]                s0_axi_bresp,
    output wire                      s0_axi_bvalid,
    input  wire                      s0_axi_bready,
    input  wire [S_ID_WIDTH-1:0]     s0_axi_arid,
    input  wire [ADDR_WIDTH-1:0]     s0_axi_araddr,
    input  wire [7:0]                s0_axi_arlen,
    input  wire [2:0]                s0_axi_arsize,
    input  wire                      s0_axi_arvalid,
    output wire                      s0_axi_arready,
    output wire [S_ID_WIDTH-1:0]     s0_axi_rid,
    output wire [DATA_WIDTH-1:0]     s0_axi_rdata,
    output wire [1:0]                s0_axi_rresp,
    output wire                      s0_axi_rlast,
    output wire                      s0_axi_rvalid,
    input  wire                      s0_axi_rready,

    // port 1: VTA
    input  wire [S_ID_WIDTH-1:0]     s1_axi_awid,
    input  wire [ADDR_WIDTH-1:0]     s1_axi_awaddr,
    input  wire [7:0]                s1_axi_awlen,
    input  wire [2:0]                s1_axi_awsize,
    input  wire                      s1_axi_awvalid,
    output wire                      s1_axi_awready,
    input  wire [DATA_WIDTH-1:0]     s1_axi_wdata,
    input  wire [DATA_WIDTH/8-1:0]   s1_axi_wstrb,
    input  wire                      s1_axi_wlast,
    input  wire                      s1_axi_wvalid,
    output wire                      s1_axi_wready,
    output wire [S_ID_WIDTH-1:0]     s1_axi_bid,
    output wire [1:0]                s1_axi_bresp,
    output wire                      s1_axi_bvalid,
    input  wire                      s1_axi_bready,
    input  wire [S_ID_WIDTH-1:0]     s1_axi_arid,
    input  wire [ADDR_WIDTH-1:0]     s1_axi_araddr,
    input  wire [7:0]                s1_axi_arlen,
    input  wire [2:0]                s1_axi_arsize,
    input  wire                      s1_axi_arvalid,
    output wire                      s1_axi_arready,
    output wire [S_ID_WIDTH-1:0]     s1_axi_rid,
    output wire [DATA_WIDTH-1:0]     s1_axi_rdata,
    output wire [1:0]                s1_axi_rresp,
    output wire                      s1_axi_rlast,
    output wire                      s1_axi_rvalid,
    input  wire                      s1_axi_rready,

    // card memory
    output wire [M_ID_WIDTH-1:0]     m_axi_awid,
    output wire [ADDR_WIDTH-1:0]     m_axi_awaddr,
    output wire [7:0]                m_axi_awlen,
    output wire [2:0]                m_axi_awsize,
    output wire                      m_axi_awvalid,
    input  wire                      m_axi_awready,
    output wire [DATA_WIDTH-1:0]     m_axi_wdata,
    output wire [DATA_WIDTH/8-1:0]   m_axi_wstrb,
    output wire                      m_axi_wlast,
    output wire                      m_axi_wvalid,
    input  wire                      m_axi_wready,
    input  wire [M_ID_WIDTH-1:0]     m_axi_bid,
    input  wire [1:0]                m_axi_bresp,
    input  wire                      m_axi_bvalid,
    output wire                      m_axi_bready,
    output wire [M_ID_WIDTH-1:0]     m_axi_arid,
    output wire [ADDR_WIDTH-1:0]     m_axi_araddr,
    output wire [7:0]                m_axi_arlen,
    output wire [2:0]                m_axi_arsize,
    output wire                      m_axi_arvalid,
    input  wire                      m_axi_arready,
    input  wire [M_ID_WIDTH-1:0]     m_axi_rid,
    input  wire [DATA_WIDTH-1:0]     m_axi_rdata,
    input  wire [1:0]                m_axi_rresp,
    input  wire                      m_axi_rlast,
    input  wire                      m_axi_rvalid,
    output wire                      m_axi_rready
);

localparam DS = DATA_WIDTH / 8;
localparam PAD = M_ID_WIDTH - S_ID_WIDTH - 1;

initial begin
    if (PAD < 0) begin
        $display("%m: M_ID_WIDTH (%0d) must exceed S_ID_WIDTH (%0d)", M_ID_WIDTH, S_ID_WIDTH);
        $finish;
    end
    if (LOG_R_BEATS < 6 || LOG_R_BEATS > 12) begin
        $display("%m: LOG_R_BEATS must be in 6..12 (room for a 64-beat burst), not %0d",
                 LOG_R_BEATS);
        $finish;
    end
    if (S1_WRITES < 1 || S1_WRITES > 255) begin
        $display("%m: S1_WRITES must be in 1..255, not %0d", S1_WRITES);
        $finish;
    end
end

// ---------------------------------------------------------------- AR arbiter
reg                  ar_valid_reg, ar_valid_next;
reg [M_ID_WIDTH-1:0] ar_id_reg, ar_id_next;
reg [ADDR_WIDTH-1:0] ar_addr_reg, ar_addr_next;
reg [7:0]            ar_len_reg, ar_len_next;
reg [2:0]            ar_size_reg, ar_size_next;
// port granted last (round robin)
reg                  ar_last_reg, ar_last_next;
// beats of VTA's read buffer reserved by granted reads and not yet handed to VTA
reg [LOG_R_BEATS:0]  rd1_reg, rd1_next;

// no request is taken in reset (it would be lost)
wire ar_free = !rst && (!ar_valid_reg || m_axi_arready);
wire ar_can0 = s0_axi_arvalid;
wire [LOG_R_BEATS+1:0] rd1_after = {1'b0, rd1_reg} + {{(LOG_R_BEATS-6){1'b0}}, s1_axi_arlen}
                                 + 1'b1;
wire ar_can1 = s1_axi_arvalid && rd1_after <= (1 << LOG_R_BEATS);
wire ar_pick1 = ar_can1 && (!ar_can0 || !ar_last_reg);
assign s0_axi_arready = ar_free && ar_can0 && !ar_pick1;
assign s1_axi_arready = ar_free && ar_pick1;

assign m_axi_arid = ar_id_reg;
assign m_axi_araddr = ar_addr_reg;
assign m_axi_arlen = ar_len_reg;
assign m_axi_arsize = ar_size_reg;
assign m_axi_arvalid = ar_valid_reg;

// ---------------------------------------------------------------- R demux
wire                  r_valid;
wire                  r_ready;
wire [M_ID_WIDTH-1:0] r_id;
wire [DATA_WIDTH-1:0] r_data;
wire [1:0]            r_resp;
wire                  r_last;
vta_skid #(.WIDTH(M_ID_WIDTH + DATA_WIDTH + 3)) r_slice (
    .clk(clk), .rst(rst),
    .s_valid(m_axi_rvalid), .s_ready(m_axi_rready),
    .s_data({m_axi_rid, m_axi_rdata, m_axi_rresp, m_axi_rlast}),
    .m_valid(r_valid), .m_ready(r_ready), .m_data({r_id, r_data, r_resp, r_last})
);
wire r_port = r_id[S_ID_WIDTH];
wire rbuf_room;
assign s0_axi_rvalid = r_valid && !r_port;
assign r_ready = r_port ? rbuf_room : s0_axi_rready;
assign s0_axi_rid = r_id[S_ID_WIDTH-1:0];
assign s0_axi_rdata = r_data;
assign s0_axi_rresp = r_resp;
assign s0_axi_rlast = r_last;

// VTA's read data, buffered (room for it was reserved when its read was granted)
wire [LOG_R_BEATS+1:0] count_r;
vta_fifo #(.WIDTH(S_ID_WIDTH + DATA_WIDTH + 3), .LOG_DEPTH(LOG_R_BEATS)) rbuf (
    .clk(clk), .rst(rst), .clear(1'b0),
    .in_valid(r_valid && r_port), .in_ready(rbuf_room),
    .in_data({r_id[S_ID_WIDTH-1:0], r_data, r_resp, r_last}),
    .out_valid(s1_axi_rvalid), .out_ready(s1_axi_rready),
    .out_data({s1_axi_rid, s1_axi_rdata, s1_axi_rresp, s1_axi_rlast}), .count(count_r)
);
wire rd1_done = s1_axi_rvalid && s1_axi_rready;

// ---------------------------------------------------------------- AW arbiter
reg                  aw_valid_reg, aw_valid_next;
reg [M_ID_WIDTH-1:0] aw_id_reg, aw_id_next;
reg [ADDR_WIDTH-1:0] aw_addr_reg, aw_addr_next;
reg [7:0]            aw_len_reg, aw_len_next;
reg [2:0]            aw_size_reg, aw_size_next;
reg                  aw_last_reg, aw_last_next;
// VTA write bursts in flight
reg [7:0]            wr1_reg, wr1_next;

// VTA write bursts whose every beat is in the W buffer, not yet granted
reg [7:0]            wfull1_reg, wfull1_next;

wire wroute_room;
wire aw_free = !rst && (!aw_valid_reg || m_axi_awready) && wroute_room;
wire aw_can0 = s0_axi_awvalid;
wire aw_can1 = s1_axi_awvalid && wr1_reg < S1_WRITES && wfull1_reg != 8'd0;
wire aw_pick1 = aw_can1 && (!aw_can0 || !aw_last_reg);
assign s0_axi_awready = aw_free && aw_can0 && !aw_pick1;
assign s1_axi_awready = aw_free && aw_pick1;
wire aw_grant = (s0_axi_awvalid && s0_axi_awready) || (s1_axi_awvalid && s1_axi_awready);

assign m_axi_awid = aw_id_reg;
assign m_axi_awaddr = aw_addr_reg;
assign m_axi_awlen = aw_len_reg;
assign m_axi_awsize = aw_size_reg;
assign m_axi_awvalid = aw_valid_reg;

// ---------------------------------------------------------------- W buffer (VTA)
// whole VTA bursts are collected before their AW competes (at most 64 beats each)
wire                  wb_valid, wb_ready, wb_last;
wire [DATA_WIDTH-1:0] wb_data;
wire [DS-1:0]         wb_strb;
wire [7:0]            count_w;
vta_fifo #(.WIDTH(DATA_WIDTH + DS + 1), .LOG_DEPTH(6)) wbuf (
    .clk(clk), .rst(rst), .clear(1'b0),
    .in_valid(s1_axi_wvalid), .in_ready(s1_axi_wready),
    .in_data({s1_axi_wdata, s1_axi_wstrb, s1_axi_wlast}),
    .out_valid(wb_valid), .out_ready(wb_ready), .out_data({wb_data, wb_strb, wb_last}),
    .count(count_w)
);
wire wfull1_in = s1_axi_wvalid && s1_axi_wready && s1_axi_wlast;

// ---------------------------------------------------------------- W route
wire [3:0] count1;
wire w_known;
wire w_port;
wire w_valid = w_known && (w_port ? wb_valid : s0_axi_wvalid);
wire w_ready;
wire w_last = w_port ? wb_last : s0_axi_wlast;
vta_fifo #(.WIDTH(1), .LOG_DEPTH(2)) wroute (
    .clk(clk), .rst(rst), .clear(1'b0),
    .in_valid(aw_grant), .in_ready(wroute_room), .in_data(aw_pick1),
    .out_valid(w_known), .out_ready(w_valid && w_ready && w_last), .out_data(w_port),
    .count(count1)
);
assign s0_axi_wready = w_known && !w_port && w_ready;
assign wb_ready = w_known && w_port && w_ready;
vta_skid #(.WIDTH(DATA_WIDTH + DS + 1)) w_slice (
    .clk(clk), .rst(rst),
    .s_valid(w_valid), .s_ready(w_ready),
    .s_data(w_port ? {wb_data, wb_strb, wb_last}
                   : {s0_axi_wdata, s0_axi_wstrb, s0_axi_wlast}),
    .m_valid(m_axi_wvalid), .m_ready(m_axi_wready),
    .m_data({m_axi_wdata, m_axi_wstrb, m_axi_wlast})
);

// ---------------------------------------------------------------- B demux
wire b_port = m_axi_bid[S_ID_WIDTH];
assign s0_axi_bvalid = m_axi_bvalid && !b_port;
assign s1_axi_bvalid = m_axi_bvalid && b_port;
assign m_axi_bready = b_port ? s1_axi_bready : s0_axi_bready;
assign s0_axi_bid = m_axi_bid[S_ID_WIDTH-1:0];
assign s1_axi_bid = m_axi_bid[S_ID_WIDTH-1:0];
assign s0_axi_bresp = m_axi_bresp;
assign s1_axi_bresp = m_axi_bresp;
wire wr1_done = s1_axi_bvalid && s1_axi_bready;
wire _unused_id = &{1'b0, m_axi_bid, m_axi_rid, count1, count_r, count_w, 1'b0};

// ---------------------------------------------------------------- registers
always @* begin
    ar_valid_next = ar_valid_reg;
    ar_id_next = ar_id_reg;
    ar_addr_next = ar_addr_reg;
    ar_len_next = ar_len_reg;
    ar_size_next = ar_size_reg;
    ar_last_next = ar_last_reg;
    aw_valid_next = aw_valid_reg;
    aw_id_next = aw_id_reg;
    aw_addr_next = aw_addr_reg;
    aw_len_next = aw_len_reg;
    aw_size_next = aw_size_reg;
    aw_last_next = aw_last_reg;

    if (m_axi_arready) begin
        ar_valid_next = 1'b0;
    end
    if (s1_axi_arvalid && s1_axi_arready) begin
        // VTA read granted
        ar_valid_next = 1'b1;
        ar_id_next = {{PAD{1'b0}}, 1'b1, s1_axi_arid};
        ar_addr_next = s1_axi_araddr;
        ar_len_next = s1_axi_arlen;
        ar_size_next = s1_axi_arsize;
        ar_last_next = 1'b1;
    end else if (s0_axi_arvalid && s0_axi_arready) begin
        // host read granted
        ar_valid_next = 1'b1;
        ar_id_next = {{PAD{1'b0}}, 1'b0, s0_axi_arid};
        ar_addr_next = s0_axi_araddr;
        ar_len_next = s0_axi_arlen;
        ar_size_next = s0_axi_arsize;
        ar_last_next = 1'b0;
    end

    if (m_axi_awready) begin
        aw_valid_next = 1'b0;
    end
    if (s1_axi_awvalid && s1_axi_awready) begin
        // VTA write granted
        aw_valid_next = 1'b1;
        aw_id_next = {{PAD{1'b0}}, 1'b1, s1_axi_awid};
        aw_addr_next = s1_axi_awaddr;
        aw_len_next = s1_axi_awlen;
        aw_size_next = s1_axi_awsize;
        aw_last_next = 1'b1;
    end else if (s0_axi_awvalid && s0_axi_awready) begin
        // host write granted
        aw_valid_next = 1'b1;
        aw_id_next = {{PAD{1'b0}}, 1'b0, s0_axi_awid};
        aw_addr_next = s0_axi_awaddr;
        aw_len_next = s0_axi_awlen;
        aw_size_next = s0_axi_awsize;
        aw_last_next = 1'b0;
    end

    rd1_next = rd1_reg - {{LOG_R_BEATS{1'b0}}, rd1_done};
    if (s1_axi_arvalid && s1_axi_arready) begin
        rd1_next = rd1_after[LOG_R_BEATS:0] - {{LOG_R_BEATS{1'b0}}, rd1_done};
    end
    wr1_next = wr1_reg + {7'd0, s1_axi_awvalid && s1_axi_awready} - {7'd0, wr1_done};
    wfull1_next = wfull1_reg + {7'd0, wfull1_in} - {7'd0, s1_axi_awvalid && s1_axi_awready};
end

always @(posedge clk) begin
    ar_valid_reg <= ar_valid_next;
    ar_id_reg <= ar_id_next;
    ar_addr_reg <= ar_addr_next;
    ar_len_reg <= ar_len_next;
    ar_size_reg <= ar_size_next;
    ar_last_reg <= ar_last_next;
    aw_valid_reg <= aw_valid_next;
    aw_id_reg <= aw_id_next;
    aw_addr_reg <= aw_addr_next;
    aw_len_reg <= aw_len_next;
    aw_size_reg <= aw_size_next;
    aw_last_reg <= aw_last_next;
    rd1_reg <= rd1_next;
    wr1_reg <= wr1_next;
    wfull1_reg <= wfull1_next;
    if (rst) begin
        ar_valid_reg <= 1'b0;
        ar_last_reg <= 1'b0;
        aw_valid_reg <= 1'b0;
        aw_last_reg <= 1'b0;
        rd1_reg <= {(LOG_R_BEATS+1){1'b0}};
        wr1_reg <= 8'd0;
        wfull1_reg <= 8'd0;
    end
end

endmodule

`resetall
