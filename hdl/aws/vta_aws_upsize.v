`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_aws_upsize: AXI4 data-width upsizer from VTA's DRAM master (2**LOG_S_WIDTH
 * bits) to the AWS card-memory width (2**LOG_M_WIDTH bits, 512).
 *
 * The AWS shell's AXI4 ports take full-width beats only (AxSIZE = 64 bytes), so a
 * narrow burst is re-cut into the wide beats it touches: a burst of N narrow beats
 * from byte address A becomes one wide INCR burst from A rounded down to the wide
 * beat, W beats are packed lane by lane with their strobes (lanes outside the burst
 * stay disabled), and each wide R beat is handed out lane by lane.  The narrow
 * master must keep its bursts INCR, full size, beat aligned and inside one 4 KiB
 * page (vta_top does: docs/rtl-interface.md), so a wide burst is at most 64 beats.
 *
 * Responses are matched to requests in order: every wide request carries ID 0, so
 * the slave returns them in issue order, and a FIFO per direction holds each
 * burst's narrow ID, first lane and beat count until its response arrives.  The
 * FIFOs also bound the bursts in flight (2**LOG_DEPTH + 1 each way).
 *
 * With equal widths the module is wires (IDs pass through unchanged).
 */
module vta_aws_upsize #(
    // log2 of the slave (VTA) data width in bits (6..9)
    parameter LOG_S_WIDTH = 6,
    // log2 of the master (card memory) data width in bits
    parameter LOG_M_WIDTH = 9,
    // AXI address width
    parameter ADDR_WIDTH = 64,
    // AXI ID width (both sides)
    parameter ID_WIDTH = 4,
    // log2 of the request FIFO depth (bursts in flight per direction)
    parameter LOG_DEPTH = 4
) (
    input  wire                           clk,
    input  wire                           rst,

    // narrow AXI4 slave (from vta_top)
    input  wire [ID_WIDTH-1:0]            s_axi_awid,
    input  wire [ADDR_WIDTH-1:0]          s_axi_awaddr,
    input  wire [7:0]                     s_axi_awlen,
    input  wire                           s_axi_awvalid,
    output wire                           s_axi_awready,
    input  wire [(1<<LOG_S_WIDTH)-1:0]    s_axi_wdata,
    input  wire [(1<<(LOG_S_WIDTH-3))-1:0] s_axi_wstrb,
    input  wire                           s_axi_wlast,
    input  wire                           s_axi_wvalid,
    output wire                           s_axi_wready,
    output wire [ID_WIDTH-1:0]            s_axi_bid,
    output wire [1:0]                     s_axi_bresp,
    output wire                           s_axi_bvalid,
    input  wire                           s_axi_bready,
    input  wire [ID_WIDTH-1:0]            s_axi_arid,
    input  wire [ADDR_WIDTH-1:0]          s_axi_araddr,
    input  wire [7:0]                     s_axi_arlen,
    input  wire                           s_axi_arvalid,
    output wire                           s_axi_arready,
    output wire [ID_WIDTH-1:0]            s_axi_rid,
    output wire [(1<<LOG_S_WIDTH)-1:0]    s_axi_rdata,
    output wire [1:0]                     s_axi_rresp,
    output wire                           s_axi_rlast,
    output wire                           s_axi_rvalid,
    input  wire                           s_axi_rready,

    // wide AXI4 master (INCR, AxSIZE = LOG_M_WIDTH - 3)
    output wire [ID_WIDTH-1:0]            m_axi_awid,
    output wire [ADDR_WIDTH-1:0]          m_axi_awaddr,
    output wire [7:0]                     m_axi_awlen,
    output wire                           m_axi_awvalid,
    input  wire                           m_axi_awready,
    output wire [(1<<LOG_M_WIDTH)-1:0]    m_axi_wdata,
    output wire [(1<<(LOG_M_WIDTH-3))-1:0] m_axi_wstrb,
    output wire                           m_axi_wlast,
    output wire                           m_axi_wvalid,
    input  wire                           m_axi_wready,
    input  wire [ID_WIDTH-1:0]            m_axi_bid,
    input  wire [1:0]                     m_axi_bresp,
    input  wire                           m_axi_bvalid,
    output wire                           m_axi_bready,
    output wire [ID_WIDTH-1:0]            m_axi_arid,
    output wire [ADDR_WIDTH-1:0]          m_axi_araddr,
    output wire [7:0]                     m_axi_arlen,
    output wire                           m_axi_arvalid,
    input  wire                           m_axi_arready,
    input  wire [ID_WIDTH-1:0]            m_axi_rid,
    input  wire [(1<<LOG_M_WIDTH)-1:0]    m_axi_rdata,
    input  wire [1:0]                     m_axi_rresp,
    input  wire                           m_axi_rlast,
    input  wire                           m_axi_rvalid,
    output wire                           m_axi_rready
);

initial begin
    if (LOG_S_WIDTH < 6 || LOG_S_WIDTH > LOG_M_WIDTH || LOG_M_WIDTH > 10) begin
        $display("%m: need 6 <= LOG_S_WIDTH (%0d) <= LOG_M_WIDTH (%0d) <= 10", LOG_S_WIDTH,
                 LOG_M_WIDTH);
        $finish;
    end
end

generate
if (LOG_S_WIDTH == LOG_M_WIDTH) begin : g_wires

    wire _unused_clk = &{1'b0, clk, rst, 1'b0};

    assign m_axi_awid = s_axi_awid;
    assign m_axi_awaddr = s_axi_awaddr;
    assign m_axi_awlen = s_axi_awlen;
    assign m_axi_awvalid = s_axi_awvalid;
    assign s_axi_awready = m_axi_awready;
    assign m_axi_wdata = s_axi_wdata;
    assign m_axi_wstrb = s_axi_wstrb;
    assign m_axi_wlast = s_axi_wlast;
    assign m_axi_wvalid = s_axi_wvalid;
    assign s_axi_wready = m_axi_wready;
    assign s_axi_bid = m_axi_bid;
    assign s_axi_bresp = m_axi_bresp;
    assign s_axi_bvalid = m_axi_bvalid;
    assign m_axi_bready = s_axi_bready;
    assign m_axi_arid = s_axi_arid;
    assign m_axi_araddr = s_axi_araddr;
    assign m_axi_arlen = s_axi_arlen;
    assign m_axi_arvalid = s_axi_arvalid;
    assign s_axi_arready = m_axi_arready;
    assign s_axi_rid = m_axi_rid;
    assign s_axi_rdata = m_axi_rdata;
    assign s_axi_rresp = m_axi_rresp;
    assign s_axi_rlast = m_axi_rlast;
    assign s_axi_rvalid = m_axi_rvalid;
    assign m_axi_rready = s_axi_rready;

end else begin : g_upsize

    localparam integer SW = 1 << LOG_S_WIDTH;           // narrow data bits
    localparam integer SS = SW / 8;                      // narrow strobe bits
    localparam integer MW = 1 << LOG_M_WIDTH;            // wide data bits
    localparam integer MS = MW / 8;                      // wide strobe bits
    localparam integer LB = LOG_M_WIDTH - LOG_S_WIDTH;   // bits of a lane number
    localparam integer RATIO = 1 << LB;                  // narrow lanes per wide beat
    localparam integer NB = LOG_S_WIDTH - 3;             // log2 narrow beat bytes
    localparam integer WB = LOG_M_WIDTH - 3;             // log2 wide beat bytes
    localparam [LB-1:0] LAST_LANE = {LB{1'b1}};
    // FIFO occupancies (unused: in_ready says full)
    wire [LOG_DEPTH+1:0] count1, count2, count3;
    wire _unused_counts = &{1'b0, count1, count2, count3, 1'b0};

    // ---------------------------------------------------------- burst geometry
    // a narrow burst of len + 1 beats from addr covers bytes addr .. addr + span
    // within its first wide beat: wide beats = span / wide bytes + 1 (at most 64, as
    // the burst stays in one 4 KiB page), first lane = addr's lane in that beat
    wire [WB+7:0] aw_span = {8'd0, s_axi_awaddr[WB-1:0]}
                          + (({{WB{1'b0}}, s_axi_awlen} + 1'b1) << NB) - 1'b1;
    wire [WB+7:0] ar_span = {8'd0, s_axi_araddr[WB-1:0]}
                          + (({{WB{1'b0}}, s_axi_arlen} + 1'b1) << NB) - 1'b1;
    wire [LB+7:0] aw_geo = {s_axi_awaddr[WB-1:NB], aw_span[WB+7:WB]};
    wire [LB+7:0] ar_geo = {s_axi_araddr[WB-1:NB], ar_span[WB+7:WB]};
    wire _unused_span = &{1'b0, aw_span[WB-1:0], ar_span[WB-1:0], 1'b0};

    // ---------------------------------------------------------------- AW
    reg                  aw_valid_reg, aw_valid_next;
    reg [ADDR_WIDTH-1:0] aw_addr_reg, aw_addr_next;
    reg [7:0]            aw_len_reg, aw_len_next;

    wire wq_in_ready, bq_in_ready;
    wire aw_take = s_axi_awvalid && s_axi_awready;
    assign s_axi_awready = (!aw_valid_reg || m_axi_awready) && wq_in_ready && bq_in_ready;
    assign m_axi_awid = {ID_WIDTH{1'b0}};
    assign m_axi_awaddr = aw_addr_reg;
    assign m_axi_awlen = aw_len_reg;
    assign m_axi_awvalid = aw_valid_reg;

    // first lane of each write burst, in AW order (W follows AW order)
    wire          wq_valid;
    wire          wq_pop;
    wire [LB-1:0] wq_lane;
    vta_fifo #(.WIDTH(LB), .LOG_DEPTH(LOG_DEPTH)) wq (
        .clk(clk), .rst(rst), .clear(1'b0),
        .in_valid(aw_take), .in_ready(wq_in_ready), .in_data(aw_geo[LB+7:8]),
        .out_valid(wq_valid), .out_ready(wq_pop), .out_data(wq_lane), .count(count1)
    );

    // narrow ID of each write burst, for its response
    wire                bq_valid;
    wire [ID_WIDTH-1:0] bq_id;
    wire                b_take;
    vta_fifo #(.WIDTH(ID_WIDTH), .LOG_DEPTH(LOG_DEPTH)) bq (
        .clk(clk), .rst(rst), .clear(1'b0),
        .in_valid(aw_take), .in_ready(bq_in_ready), .in_data(s_axi_awid),
        .out_valid(bq_valid), .out_ready(b_take), .out_data(bq_id), .count(count2)
    );

    // ---------------------------------------------------------------- W
    reg          w_active_reg, w_active_next;
    reg [LB-1:0] w_lane_reg, w_lane_next;
    reg [MW-1:0] acc_data_reg, acc_data_next;
    reg [MS-1:0] acc_strb_reg, acc_strb_next;
    reg          mw_valid_reg, mw_valid_next;
    reg [MW-1:0] mw_data_reg, mw_data_next;
    reg [MS-1:0] mw_strb_reg, mw_strb_next;
    reg          mw_last_reg, mw_last_next;

    assign wq_pop = !w_active_reg;
    assign s_axi_wready = w_active_reg && (!mw_valid_reg || m_axi_wready);
    assign m_axi_wdata = mw_data_reg;
    assign m_axi_wstrb = mw_strb_reg;
    assign m_axi_wlast = mw_last_reg;
    assign m_axi_wvalid = mw_valid_reg;

    // the accumulated wide beat with this narrow beat placed in its lane
    reg [MW-1:0] merged_data;
    reg [MS-1:0] merged_strb;
    integer k;
    always @* begin
        merged_data = acc_data_reg;
        merged_strb = acc_strb_reg;
        for (k = 0; k < RATIO; k = k + 1) begin
            if (w_lane_reg == k[LB-1:0]) begin
                merged_data[k*SW +: SW] = s_axi_wdata;
                merged_strb[k*SS +: SS] = s_axi_wstrb;
            end
        end
    end

    always @* begin
        w_active_next = w_active_reg;
        w_lane_next = w_lane_reg;
        acc_data_next = acc_data_reg;
        acc_strb_next = acc_strb_reg;
        mw_valid_next = mw_valid_reg;
        mw_data_next = mw_data_reg;
        mw_strb_next = mw_strb_reg;
        mw_last_next = mw_last_reg;

        if (m_axi_wready) begin
            mw_valid_next = 1'b0;
        end
        if (!w_active_reg && wq_valid) begin
            // next burst: its first lane
            w_active_next = 1'b1;
            w_lane_next = wq_lane;
        end
        if (s_axi_wvalid && s_axi_wready) begin
            w_lane_next = w_lane_reg + 1'b1;
            if (w_lane_reg == LAST_LANE || s_axi_wlast) begin
                // wide beat complete (or burst over): hand it out, start afresh
                mw_valid_next = 1'b1;
                mw_data_next = merged_data;
                mw_strb_next = merged_strb;
                mw_last_next = s_axi_wlast;
                acc_strb_next = {MS{1'b0}};
            end else begin
                acc_data_next = merged_data;
                acc_strb_next = merged_strb;
            end
            if (s_axi_wlast) begin
                w_active_next = 1'b0;
            end
        end
    end

    always @(posedge clk) begin
        w_active_reg <= w_active_next;
        w_lane_reg <= w_lane_next;
        acc_data_reg <= acc_data_next;
        acc_strb_reg <= acc_strb_next;
        mw_valid_reg <= mw_valid_next;
        mw_data_reg <= mw_data_next;
        mw_strb_reg <= mw_strb_next;
        mw_last_reg <= mw_last_next;
        if (rst) begin
            w_active_reg <= 1'b0;
            acc_strb_reg <= {MS{1'b0}};
            mw_valid_reg <= 1'b0;
        end
    end

    // ---------------------------------------------------------------- B
    reg                sb_valid_reg, sb_valid_next;
    reg [ID_WIDTH-1:0] sb_id_reg, sb_id_next;
    reg [1:0]          sb_resp_reg, sb_resp_next;

    assign m_axi_bready = bq_valid && (!sb_valid_reg || s_axi_bready);
    assign b_take = m_axi_bvalid && m_axi_bready;
    assign s_axi_bvalid = sb_valid_reg;
    assign s_axi_bid = sb_id_reg;
    assign s_axi_bresp = sb_resp_reg;
    wire _unused_b = &{1'b0, m_axi_bid, 1'b0};

    always @* begin
        sb_valid_next = sb_valid_reg;
        sb_id_next = sb_id_reg;
        sb_resp_next = sb_resp_reg;
        if (s_axi_bready) begin
            sb_valid_next = 1'b0;
        end
        if (b_take) begin
            // the oldest write burst's response
            sb_valid_next = 1'b1;
            sb_id_next = bq_id;
            sb_resp_next = m_axi_bresp;
        end
    end

    always @(posedge clk) begin
        sb_valid_reg <= sb_valid_next;
        sb_id_reg <= sb_id_next;
        sb_resp_reg <= sb_resp_next;
        if (rst) begin
            sb_valid_reg <= 1'b0;
        end
    end

    // ---------------------------------------------------------------- AR
    reg                  ar_valid_reg, ar_valid_next;
    reg [ADDR_WIDTH-1:0] ar_addr_reg, ar_addr_next;
    reg [7:0]            ar_len_reg, ar_len_next;

    wire rq_in_ready;
    wire ar_take = s_axi_arvalid && s_axi_arready;
    assign s_axi_arready = (!ar_valid_reg || m_axi_arready) && rq_in_ready;
    assign m_axi_arid = {ID_WIDTH{1'b0}};
    assign m_axi_araddr = ar_addr_reg;
    assign m_axi_arlen = ar_len_reg;
    assign m_axi_arvalid = ar_valid_reg;

    always @* begin
        aw_valid_next = aw_valid_reg;
        aw_addr_next = aw_addr_reg;
        aw_len_next = aw_len_reg;
        ar_valid_next = ar_valid_reg;
        ar_addr_next = ar_addr_reg;
        ar_len_next = ar_len_reg;
        if (m_axi_awready) begin
            aw_valid_next = 1'b0;
        end
        if (aw_take) begin
            aw_valid_next = 1'b1;
            aw_addr_next = (s_axi_awaddr >> WB) << WB;
            aw_len_next = aw_geo[7:0];
        end
        if (m_axi_arready) begin
            ar_valid_next = 1'b0;
        end
        if (ar_take) begin
            ar_valid_next = 1'b1;
            ar_addr_next = (s_axi_araddr >> WB) << WB;
            ar_len_next = ar_geo[7:0];
        end
    end

    always @(posedge clk) begin
        aw_valid_reg <= aw_valid_next;
        aw_addr_reg <= aw_addr_next;
        aw_len_reg <= aw_len_next;
        ar_valid_reg <= ar_valid_next;
        ar_addr_reg <= ar_addr_next;
        ar_len_reg <= ar_len_next;
        if (rst) begin
            aw_valid_reg <= 1'b0;
            ar_valid_reg <= 1'b0;
        end
    end

    // narrow ID, first lane and narrow beat count of each read burst, in AR order
    wire                      rq_valid;
    wire                      rq_pop;
    wire [ID_WIDTH+LB+7:0]    rq_data;
    vta_fifo #(.WIDTH(ID_WIDTH + LB + 8), .LOG_DEPTH(LOG_DEPTH)) rq (
        .clk(clk), .rst(rst), .clear(1'b0),
        .in_valid(ar_take), .in_ready(rq_in_ready),
        .in_data({s_axi_arid, ar_geo[LB+7:8], s_axi_arlen}),
        .out_valid(rq_valid), .out_ready(rq_pop), .out_data(rq_data), .count(count3)
    );

    // ---------------------------------------------------------------- R
    reg                r_active_reg, r_active_next;
    reg [ID_WIDTH-1:0] r_id_reg, r_id_next;
    reg [LB-1:0]       r_lane_reg, r_lane_next;
    reg [7:0]          r_left_reg, r_left_next;
    // the wide beat being handed out
    reg                rb_valid_reg, rb_valid_next;
    reg [MW-1:0]       rb_data_reg, rb_data_next;
    reg [1:0]          rb_resp_reg, rb_resp_next;

    assign rq_pop = !r_active_reg;
    assign s_axi_rvalid = r_active_reg && rb_valid_reg;
    assign s_axi_rid = r_id_reg;
    assign s_axi_rdata = rb_data_reg[r_lane_reg*SW +: SW];
    assign s_axi_rresp = rb_resp_reg;
    assign s_axi_rlast = r_left_reg == 8'd0;
    wire r_take = s_axi_rvalid && s_axi_rready;
    // the last lane of the held wide beat goes out: take the next one in the same cycle
    wire r_release = r_take && (r_lane_reg == LAST_LANE || r_left_reg == 8'd0);
    assign m_axi_rready = !rb_valid_reg || r_release;
    wire _unused_r = &{1'b0, m_axi_rid, m_axi_rlast, 1'b0};

    always @* begin
        r_active_next = r_active_reg;
        r_id_next = r_id_reg;
        r_lane_next = r_lane_reg;
        r_left_next = r_left_reg;
        rb_valid_next = rb_valid_reg;
        rb_data_next = rb_data_reg;
        rb_resp_next = rb_resp_reg;

        if (!r_active_reg && rq_valid) begin
            // next burst in AR order
            r_active_next = 1'b1;
            {r_id_next, r_lane_next, r_left_next} = rq_data;
        end
        if (r_take) begin
            r_lane_next = r_lane_reg + 1'b1;
            r_left_next = r_left_reg - 8'd1;
            if (r_left_reg == 8'd0) begin
                r_active_next = 1'b0;
            end
        end
        if (r_release) begin
            rb_valid_next = 1'b0;
        end
        if (m_axi_rvalid && m_axi_rready) begin
            rb_valid_next = 1'b1;
            rb_data_next = m_axi_rdata;
            rb_resp_next = m_axi_rresp;
        end
    end

    always @(posedge clk) begin
        r_active_reg <= r_active_next;
        r_id_reg <= r_id_next;
        r_lane_reg <= r_lane_next;
        r_left_reg <= r_left_next;
        rb_valid_reg <= rb_valid_next;
        rb_data_reg <= rb_data_next;
        rb_resp_reg <= rb_resp_next;
        if (rst) begin
            r_active_reg <= 1'b0;
            rb_valid_reg <= 1'b0;
        end
    end

end
endgenerate

endmodule

`resetall
