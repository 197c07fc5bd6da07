`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_dma_rd: the read half of the DRAM master.  N clients each hand over
 * (beat-aligned byte address, beat count) requests; per client a splitter
 * cuts the request into AXI4 INCR bursts of at most 256 beats that never
 * cross a 4 KiB boundary, and a round-robin arbiter issues one burst per
 * cycle from the clients that have one, with ARID = client number.  Read
 * data passes a register slice and is steered to the client named by RID,
 * so responses for different clients may interleave; each client must take
 * every beat it asked for without waiting on anything but itself.
 *
 * `halt` (a run stopped on a fault) drops the requests not yet issued and
 * discards the data of bursts already issued; `idle` is high when no burst is
 * pending or owed, so a new run starts on a quiet bus.
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
    parameter BEATS_WIDTH = 40
) (
    input  wire                        clk,
    input  wire                        rst,
    input  wire                        halt,
    output wire                        idle,

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
reg [N-1:0]             sp_active_reg, sp_active_next;
reg [N*ADDR_WIDTH-1:0]  sp_addr_reg, sp_addr_next;
reg [N*BEATS_WIDTH-1:0] sp_rem_reg, sp_rem_next;

// AR register
reg                  ar_valid_reg, ar_valid_next;
reg [ID_WIDTH-1:0]   ar_id_reg, ar_id_next;
reg [ADDR_WIDTH-1:0] ar_addr_reg, ar_addr_next;
reg [7:0]            ar_len_reg, ar_len_next;

// round robin: last client served
reg [ID_WIDTH-1:0]   rr_reg, rr_next;
// beats owed by the slave
reg [CNT_W-1:0]      owed_reg, owed_next;

assign req_ready = ~sp_active_reg & {N{~halt}};
assign idle = (sp_active_reg == {N{1'b0}}) && !ar_valid_reg && owed_reg == {CNT_W{1'b0}};

assign m_axi_arid = ar_id_reg;
assign m_axi_araddr = ar_addr_reg;
assign m_axi_arlen = ar_len_reg;
assign m_axi_arsize = LOG_BUS_BYTES[2:0];
assign m_axi_arburst = 2'b01;
assign m_axi_arlock = 1'b0;
assign m_axi_arcache = 4'b0011;
assign m_axi_arprot = 3'b000;
assign m_axi_arvalid = ar_valid_reg;

// choose the next client with a pending burst after rr_reg
reg                  pick_valid;
reg [ID_WIDTH-1:0]   pick;
reg [31:0]           cand;
integer k;
always @* begin
    pick_valid = 1'b0;
    pick = {ID_WIDTH{1'b0}};
    for (k = N - 1; k >= 0; k = k - 1) begin
        // later candidates in round-robin order overwrite earlier ones, so scan backwards
        cand = ({{(32-ID_WIDTH){1'b0}}, rr_reg} + 32'd1 + k) % N;
        if (sp_active_reg[cand[CW-1:0]]) begin
            pick_valid = 1'b1;
            pick = cand[ID_WIDTH-1:0];
        end
    end
end

wire [ADDR_WIDTH-1:0]  pick_addr = sp_addr_reg[pick*ADDR_WIDTH +: ADDR_WIDTH];
wire [BEATS_WIDTH-1:0] pick_rem = sp_rem_reg[pick*BEATS_WIDTH +: BEATS_WIDTH];
// beats left before the next 4 KiB boundary
wire [12:0] to_page = PAGE_BEATS[12:0] - {1'b0, pick_addr[11:0] >> LOG_BUS_BYTES};
reg  [12:0] burst;
always @* begin
    burst = to_page;
    if (burst > 13'd256) begin
        burst = 13'd256;
    end
    if (pick_rem < {{(BEATS_WIDTH-13){1'b0}}, burst}) begin
        burst = pick_rem[12:0];
    end
end

wire ar_load = pick_valid && (!ar_valid_reg || m_axi_arready) && !halt;

// ---------------------------------------------------------------- read data
wire               r_valid;
wire               r_ready;
wire [ID_WIDTH-1:0] r_id;
wire [DW-1:0]      r_data;

vta_skid #(
    .WIDTH(ID_WIDTH + DW)
) r_slice (
    .clk(clk),
    .rst(rst),
    .s_valid(m_axi_rvalid),
    .s_ready(m_axi_rready),
    .s_data({m_axi_rid, m_axi_rdata}),
    .m_valid(r_valid),
    .m_ready(r_ready),
    .m_data({r_id, r_data})
);

// a beat for an unknown id, or any beat while halted, is dropped
wire r_known = r_id < N;
wire [ID_WIDTH-1:0] r_sel = r_known ? r_id : {ID_WIDTH{1'b0}};
assign r_ready = halt || !r_known || rd_ready[r_sel[CW-1:0]];
// the master reads every burst to its end and ignores RRESP (a DRAM_RANGE
// fault is found before any access)
wire _unused_ok = &{1'b0, m_axi_rresp, m_axi_rlast, r_sel, cand, 1'b0};
assign rd_data = r_data;

genvar g;
generate
    for (g = 0; g < N; g = g + 1) begin : route
        assign rd_valid[g] = r_valid && !halt && r_id == g;
    end
endgenerate

// counted after the slice, so `idle` also means the slice is empty
wire owed_dec = r_valid && r_ready;

integer c;
always @* begin
    sp_active_next = sp_active_reg;
    sp_addr_next = sp_addr_reg;
    sp_rem_next = sp_rem_reg;
    ar_valid_next = ar_valid_reg;
    ar_id_next = ar_id_reg;
    ar_addr_next = ar_addr_reg;
    ar_len_next = ar_len_reg;
    rr_next = rr_reg;
    owed_next = owed_reg;

    if (m_axi_arready) begin
        ar_valid_next = 1'b0;
    end

    // accept new requests
    for (c = 0; c < N; c = c + 1) begin
        if (req_valid[c] && req_ready[c] && req_beats[c*BEATS_WIDTH +: BEATS_WIDTH] != 0) begin
            sp_active_next[c] = 1'b1;
            sp_addr_next[c*ADDR_WIDTH +: ADDR_WIDTH] = req_addr[c*ADDR_WIDTH +: ADDR_WIDTH];
            sp_rem_next[c*BEATS_WIDTH +: BEATS_WIDTH] = req_beats[c*BEATS_WIDTH +: BEATS_WIDTH];
        end
    end

    // issue one burst
    if (ar_load) begin
        ar_valid_next = 1'b1;
        ar_id_next = pick;
        ar_addr_next = pick_addr;
        ar_len_next = burst[7:0] - 8'd1;
        rr_next = pick;
        sp_addr_next[pick*ADDR_WIDTH +: ADDR_WIDTH] =
            pick_addr + ({{(ADDR_WIDTH-13){1'b0}}, burst} << LOG_BUS_BYTES);
        sp_rem_next[pick*BEATS_WIDTH +: BEATS_WIDTH] =
            pick_rem - {{(BEATS_WIDTH-13){1'b0}}, burst};
        if (pick_rem == {{(BEATS_WIDTH-13){1'b0}}, burst}) begin
            sp_active_next[pick[CW-1:0]] = 1'b0;
        end
    end

    owed_next = owed_reg + (ar_load ? {{(CNT_W-13){1'b0}}, burst} : {CNT_W{1'b0}})
                - {{(CNT_W-1){1'b0}}, owed_dec};

    if (halt) begin
        sp_active_next = {N{1'b0}};
    end
end

always @(posedge clk) begin
    sp_active_reg <= sp_active_next;
    sp_addr_reg <= sp_addr_next;
    sp_rem_reg <= sp_rem_next;
    ar_valid_reg <= ar_valid_next;
    ar_id_reg <= ar_id_next;
    ar_addr_reg <= ar_addr_next;
    ar_len_reg <= ar_len_next;
    rr_reg <= rr_next;
    owed_reg <= owed_next;
    if (rst) begin
        sp_active_reg <= {N{1'b0}};
        ar_valid_reg <= 1'b0;
        rr_reg <= {ID_WIDTH{1'b0}};
        owed_reg <= {CNT_W{1'b0}};
    end
end

endmodule

`resetall
