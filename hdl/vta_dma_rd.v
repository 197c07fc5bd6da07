`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_dma_rd: the read half of the DRAM master.  N clients each hand over
 * (beat-aligned byte address, beat count) requests; per client a splitter
 * cuts the request into AXI4 INCR bursts of at most 256 beats that never
 * cross a 4 KiB boundary (each client's next burst is computed in its own
 * registers the cycle after its address changes), and a round-robin arbiter
 * issues one burst per cycle from the clients that have one ready (a client
 * at most every other cycle), with ARID = client number.  Read
 * data passes a register slice and is steered to the client named by RID,
 * so responses for different clients may interleave; each client must take
 * every beat it asked for without waiting on anything but itself.
 *
 * Each client has at most 2**LOG_OUTSTANDING bursts in flight, whose
 * addresses are kept: a read beat with RRESP SLVERR or DECERR is reported on
 * `bus_err` with the client and the address of its burst (its data still
 * reaches the client, which the fault then stops).
 *
 * `halt` (a run stopped on a fault) drops the requests not yet issued and
 * discards the data of bursts already issued; `idle` is high when no burst is
 * pending or owed, so a new run starts on a quiet bus.  Read data goes to the
 * client RID names whether halted or not (the routing does not wait on the
 * fault logic): a client ignores its beats while halted (its read port is held
 * in reset by the same `halt`).
 */
module vta_dma_rd #(
    // Number of clients (ARID = client number).
    parameter N = 2,
    // AXI address width.
    parameter ADDR_WIDTH = 32,
    // AXI ID width; must hold N - 1.
    parameter ID_WIDTH = 4,
    // log2 of the data-bus width in bits (6..9).
    parameter LOG_BUS_WIDTH = 6,
    // Bits of a request's beat count.
    parameter BEATS_WIDTH = 48,
    // log2 of the bursts each client may have in flight.
    parameter LOG_OUTSTANDING = 3
) (
    input  wire                        clk,
    input  wire                        rst,
    input  wire                        halt,
    output wire                        idle,
    // a read beat with SLVERR/DECERR, while it is shown (not while halted)
    output wire                        bus_err,
    output wire [ID_WIDTH-1:0]         bus_err_client,
    output wire [ADDR_WIDTH-1:0]       bus_err_addr,

    // client requests
    input  wire [N-1:0]                req_valid,
    output wire [N-1:0]                req_ready,
    input  wire [N*ADDR_WIDTH-1:0]     req_addr,
    input  wire [N*BEATS_WIDTH-1:0]    req_beats,

    // client data (rd_data is shared; rd_valid names the client)
    output wire [N-1:0]                rd_valid,
    input  wire [N-1:0]                rd_ready,
    output wire [(1<<LOG_BUS_WIDTH)-1:0] rd_data,

    // AXI4 read channels
    output wire [ID_WIDTH-1:0]         m_axi_arid,
    output wire [ADDR_WIDTH-1:0]       m_axi_araddr,
    output wire [7:0]                  m_axi_arlen,
    output wire [2:0]                  m_axi_arsize,
    output wire [1:0]                  m_axi_arburst,
    output wire                        m_axi_arlock,
    output wire [3:0]                  m_axi_arcache,
    output wire [2:0]                  m_axi_arprot,
    output wire                        m_axi_arvalid,
    input  wire                        m_axi_arready,
    input  wire [ID_WIDTH-1:0]         m_axi_rid,
    input  wire [(1<<LOG_BUS_WIDTH)-1:0] m_axi_rdata,
    input  wire [1:0]                  m_axi_rresp,
    input  wire                        m_axi_rlast,
    input  wire                        m_axi_rvalid,
    output wire                        m_axi_rready
);

localparam integer DW = 1 << LOG_BUS_WIDTH;
localparam LOG_BUS_BYTES = LOG_BUS_WIDTH - 3;
// beats per 4 KiB page
localparam PAGE_BEATS = 4096 >> LOG_BUS_BYTES;
localparam CNT_W = BEATS_WIDTH + 1;
// bits of a client number
localparam CW = (N > 1) ? $clog2(N) : 1;

initial begin
    if (N < 1 || (1 << ID_WIDTH) < N) begin
        $display("%m: ID_WIDTH (%0d) must number N (%0d) clients", ID_WIDTH, N);
        $finish;
    end
    if (LOG_BUS_WIDTH < 6 || LOG_BUS_WIDTH > 9) begin
        $display("%m: LOG_BUS_WIDTH must be in 6..9, not %0d", LOG_BUS_WIDTH);
        $finish;
    end
end

// ------------------------------------------------------------------ splitters
// Per client: the rest of its request (address, beats) and, one cycle after
// each change, its next burst (at most 256 beats, not across a 4 KiB page)
// precomputed from its own registers, so the arbiter only picks and muxes.
wire [N-1:0]            sp_active;
wire [N-1:0]            sp_ready;            // active, next burst computed
wire [N*ADDR_WIDTH-1:0] sp_addr;
wire [N*9-1:0]          sp_burst;            // 1..256 beats

// AR register
reg                  ar_valid_reg;
reg                  ar_new_reg;             // the AR register was loaded last cycle
reg [ID_WIDTH-1:0]   ar_id_reg;
reg [ADDR_WIDTH-1:0] ar_addr_reg;
reg [7:0]            ar_len_reg;

// round robin: last client served
reg [ID_WIDTH-1:0]   rr_reg;
// beats owed by the slave (counted from the cycle after an AR is loaded)
reg [CNT_W-1:0]      owed_reg;
// a beat taken last cycle, subtracted from owed_reg now (`idle` waits for it)
reg                  owed_dec_reg;

assign req_ready = ~sp_active & {N{~halt}};
assign idle = (sp_active == {N{1'b0}}) && !ar_valid_reg && owed_reg == {CNT_W{1'b0}}
              && !owed_dec_reg;

assign m_axi_arid = ar_id_reg;
assign m_axi_araddr = ar_addr_reg;
assign m_axi_arlen = ar_len_reg;
assign m_axi_arsize = LOG_BUS_BYTES[2:0];
assign m_axi_arburst = 2'b01;
assign m_axi_arlock = 1'b0;
assign m_axi_arcache = 4'b0011;
assign m_axi_arprot = 3'b000;
assign m_axi_arvalid = ar_valid_reg;

// choose the next client with a burst ready after rr_reg, in cyclic order:
// the lowest ready client above rr_reg, else the lowest ready client
reg                  pick_valid;
reg [ID_WIDTH-1:0]   pick;
reg                  above_valid;
reg [ID_WIDTH-1:0]   above;
integer k;
always @* begin
    pick_valid = 1'b0;
    pick = {ID_WIDTH{1'b0}};
    above_valid = 1'b0;
    above = {ID_WIDTH{1'b0}};
    for (k = N - 1; k >= 0; k = k - 1) begin
        // scanned downwards, so the lowest match is the one left
        if (sp_ready[k]) begin
            pick_valid = 1'b1;
            pick = k[ID_WIDTH-1:0];
            if (k[ID_WIDTH-1:0] > rr_reg) begin
                above_valid = 1'b1;
                above = k[ID_WIDTH-1:0];
            end
        end
    end
    if (above_valid) begin
        pick = above;
    end
end

wire ar_load = pick_valid && (!ar_valid_reg || m_axi_arready) && !halt;

// read data after the slice (below); the last beat of a burst frees its in-flight entry
// (taken by its client, or dropped while halted)
wire               r_valid;
wire               r_ready;
wire [ID_WIDTH-1:0] r_id;
wire [DW-1:0]      r_data;
wire               r_err;
wire               r_last;
wire [N-1:0]       r_hot;              // the client RID names (none: unknown id)
wire r_known = |r_hot;
wire [N*ADDR_WIDTH-1:0] inflight_head;   // per client: address of its oldest burst in flight

genvar g;
generate
    for (g = 0; g < N; g = g + 1) begin : client
        reg                   active_reg, ready_reg, last_reg;
        reg [ADDR_WIDTH-1:0]  addr_reg;
        reg [BEATS_WIDTH-1:0] rem_reg;
        reg [8:0]             burst_reg;
        // beats left before the next 4 KiB boundary, capped at 256
        wire [12:0] to_page = PAGE_BEATS[12:0] - {1'b0, addr_reg[11:0] >> LOG_BUS_BYTES};
        wire [12:0] cap = (to_page > 13'd256) ? 13'd256 : to_page;
        wire        fits = rem_reg <= {{(BEATS_WIDTH-13){1'b0}}, cap};
        // (a request of 0 beats is taken and leaves the client inactive)
        wire        take = req_valid[g] && req_ready[g];
        wire        issued = ar_load && pick == g;
        // addresses of the bursts in flight (RID order is issue order within a client)
        reg [ADDR_WIDTH-1:0]      fly_mem [0:(1<<LOG_OUTSTANDING)-1];
        reg [LOG_OUTSTANDING-1:0] fly_wp_reg, fly_rp_reg;
        reg [LOG_OUTSTANDING:0]   fly_count_reg;
        // (written out for this client: its own ready, not the routed one)
        wire        landed = r_valid && r_last && r_hot[g] && (halt || rd_ready[g]);
        always @(posedge clk) begin
            if (issued) begin
                fly_mem[fly_wp_reg] <= addr_reg;
                fly_wp_reg <= fly_wp_reg + 1'b1;
            end
            if (landed) begin
                fly_rp_reg <= fly_rp_reg + 1'b1;
            end
            fly_count_reg <= fly_count_reg + {{LOG_OUTSTANDING{1'b0}}, issued}
                             - {{LOG_OUTSTANDING{1'b0}}, landed};
            if (rst) begin
                fly_wp_reg <= {LOG_OUTSTANDING{1'b0}};
                fly_rp_reg <= {LOG_OUTSTANDING{1'b0}};
                fly_count_reg <= {(LOG_OUTSTANDING+1){1'b0}};
            end
        end
        assign inflight_head[g*ADDR_WIDTH +: ADDR_WIDTH] = fly_mem[fly_rp_reg];
        always @(posedge clk) begin
            if (take) begin
                active_reg <= req_beats[g*BEATS_WIDTH +: BEATS_WIDTH] != {BEATS_WIDTH{1'b0}};
                ready_reg <= 1'b0;
                addr_reg <= req_addr[g*ADDR_WIDTH +: ADDR_WIDTH];
                rem_reg <= req_beats[g*BEATS_WIDTH +: BEATS_WIDTH];
            end else if (issued) begin
                ready_reg <= 1'b0;
                addr_reg <= addr_reg + ({{(ADDR_WIDTH-9){1'b0}}, burst_reg} << LOG_BUS_BYTES);
                rem_reg <= rem_reg - {{(BEATS_WIDTH-9){1'b0}}, burst_reg};
                if (last_reg) begin
                    active_reg <= 1'b0;
                end
            end else if (active_reg && !ready_reg) begin
                ready_reg <= 1'b1;
                last_reg <= fits;
                burst_reg <= fits ? rem_reg[8:0] : cap[8:0];
            end
            if (rst || halt) begin
                active_reg <= 1'b0;
                ready_reg <= 1'b0;
            end
        end
        assign sp_active[g] = active_reg;
        assign sp_ready[g] = active_reg && ready_reg && !fly_count_reg[LOG_OUTSTANDING];
        assign sp_addr[g*ADDR_WIDTH +: ADDR_WIDTH] = addr_reg;
        assign sp_burst[g*9 +: 9] = burst_reg;
        // 4 KiB pages: the low address bits below a beat are zero (beat-aligned requests)
        wire _unused_client = &{1'b0, to_page[12:9], 1'b0};
    end
endgenerate

// ---------------------------------------------------------------- read data
// RID is decoded into one bit per client before the slice, so the routing
// after it (valid to the client, its ready back) is one gate deep
wire [N-1:0] rid_hot;
generate
    for (g = 0; g < N; g = g + 1) begin : rid_decode
        assign rid_hot[g] = m_axi_rid == g;
    end
endgenerate

vta_skid #(
    .WIDTH(N + ID_WIDTH + DW + 2)
) r_slice (
    .clk(clk),
    .rst(rst),
    .s_valid(m_axi_rvalid),
    .s_ready(m_axi_rready),
    .s_data({rid_hot, m_axi_rid, m_axi_rdata, m_axi_rresp[1], m_axi_rlast}),
    .m_valid(r_valid),
    .m_ready(r_ready),
    .m_data({r_hot, r_id, r_data, r_err, r_last})
);

// a beat for an unknown id, or any beat while halted, is dropped
wire [ID_WIDTH-1:0] r_sel = r_known ? r_id : {ID_WIDTH{1'b0}};
assign r_ready = halt || !r_known || |(r_hot & rd_ready);
// RRESP[0] tells SLVERR from DECERR; both are errors
wire _unused_ok = &{1'b0, m_axi_rresp[0], r_sel, 1'b0};
assign rd_data = r_data;

// (reported when the beat is shown, so the report does not wait on the client's ready)
assign bus_err = r_valid && r_known && r_err && !halt;
assign bus_err_client = r_id;
assign bus_err_addr = inflight_head[r_sel[CW-1:0]*ADDR_WIDTH +: ADDR_WIDTH];

generate
    for (g = 0; g < N; g = g + 1) begin : route
        assign rd_valid[g] = r_valid && r_hot[g];
    end
endgenerate

// counted after the slice, so `idle` also means the slice is empty
always @(posedge clk) begin
    owed_dec_reg <= r_valid && r_ready;
    if (m_axi_arready) begin
        ar_valid_reg <= 1'b0;
    end
    ar_new_reg <= ar_load;
    if (ar_load) begin
        ar_valid_reg <= 1'b1;
        ar_id_reg <= pick;
        ar_addr_reg <= sp_addr[pick*ADDR_WIDTH +: ADDR_WIDTH];
        ar_len_reg <= sp_burst[pick*9 +: 8] - 8'd1;
        rr_reg <= pick;
    end
    owed_reg <= owed_reg + (ar_new_reg ? {{(CNT_W-9){1'b0}}, {1'b0, ar_len_reg} + 9'd1}
                                       : {CNT_W{1'b0}})
                - {{(CNT_W-1){1'b0}}, owed_dec_reg};
    if (rst) begin
        ar_valid_reg <= 1'b0;
        ar_new_reg <= 1'b0;
        rr_reg <= {ID_WIDTH{1'b0}};
        owed_reg <= {CNT_W{1'b0}};
        owed_dec_reg <= 1'b0;
    end
end

endmodule

`resetall
