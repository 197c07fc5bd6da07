`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_dma_rd_port: one element stream of a DMA read client.  Takes requests
 * in elements (byte address aligned to the element size, element count),
 * hands the read engine the beat-aligned burst range that covers them, and
 * turns the returned bus beats into elements, in order:
 *
 *   - element at least as wide as the bus: 2**(LOG_ELEM_BYTES - bus bytes
 *     log) beats are gathered into one element, least significant first;
 *   - element narrower than the bus: each beat holds several elements; the
 *     first element of a request may sit in the middle of its first beat and
 *     the last in the middle of its last beat.  A small FIFO remembers, per
 *     request in flight, the lane of its first element and its length.
 *
 * The element output delivers at most one element per cycle.  `halt` drops
 * everything in flight (the read engine discards the data): from the cycle
 * after it rises, the port is empty and ignores the beats still shown to it
 * (in its first cycle, an element may still go out, from the state before).
 */
module vta_dma_rd_port #(
    // log2 of the element size in bytes.
    parameter LOG_ELEM_BYTES = 4,
    // log2 of the data-bus width in bits.
    parameter LOG_BUS_WIDTH = 6,
    // AXI address width.
    parameter ADDR_WIDTH = 32,
    // Bits of a beat count.
    parameter BEATS_WIDTH = 48,
    // log2 of the number of requests in flight (narrow elements).
    parameter LOG_INFLIGHT = 4
) (
    input  wire                        clk,
    input  wire                        rst,
    input  wire                        halt,

    input  wire                        req_valid,
    output wire                        req_ready,
    input  wire [ADDR_WIDTH-1:0]       req_addr,
    input  wire [31:0]                 req_n,

    output wire                        dma_req_valid,
    input  wire                        dma_req_ready,
    output wire [ADDR_WIDTH-1:0]       dma_req_addr,
    output wire [BEATS_WIDTH-1:0]      dma_req_beats,

    input  wire                        beat_valid,
    output wire                        beat_ready,
    input  wire [(1<<LOG_BUS_WIDTH)-1:0] beat_data,

    output wire                        elem_valid,
    input  wire                        elem_ready,
    output wire [(8<<LOG_ELEM_BYTES)-1:0] elem_data
);

localparam integer DW = 1 << LOG_BUS_WIDTH;
localparam integer EW = 8 << LOG_ELEM_BYTES;
localparam LOG_BUS_BYTES = LOG_BUS_WIDTH - 3;

// an element address is element aligned: its low bits are zero
wire _unused_ok = &{1'b0, req_addr[LOG_ELEM_BYTES-1:0], 1'b0};

initial begin
    if (BEATS_WIDTH < 34 + (LOG_ELEM_BYTES > LOG_BUS_BYTES ? LOG_ELEM_BYTES - LOG_BUS_BYTES : 0)) begin
        $display("%m: BEATS_WIDTH (%0d) too narrow for 32-bit element counts", BEATS_WIDTH);
        $finish;
    end
end

generate
if (LOG_ELEM_BYTES >= LOG_BUS_BYTES) begin : wide
    // ------------------------------------------------ element >= bus beat
    localparam R_LOG = LOG_ELEM_BYTES - LOG_BUS_BYTES;

    assign dma_req_valid = req_valid;
    assign req_ready = dma_req_ready;
    assign dma_req_addr = req_addr;
    assign dma_req_beats = {{(BEATS_WIDTH-32){1'b0}}, req_n} << R_LOG;

    reg [EW-1:0]  buf_reg;
    reg [R_LOG:0] cnt_reg, cnt_next;

    wire full = cnt_reg[R_LOG];
    wire take = beat_valid && beat_ready;

    assign elem_valid = full;
    assign elem_data = buf_reg;
    assign beat_ready = !full || elem_ready;

    always @* begin
        cnt_next = cnt_reg;
        if (full && elem_ready) begin
            cnt_next = {(R_LOG+1){1'b0}};
        end
        if (take) begin
            cnt_next = cnt_next + 1'b1;
        end
    end

    if (R_LOG == 0) begin : one
        always @(posedge clk) begin
            if (take) begin
                buf_reg <= beat_data;
            end
        end
    end else begin : many
        always @(posedge clk) begin
            if (take) begin
                buf_reg <= {beat_data, buf_reg[EW-1:DW]};
            end
        end
    end

    always @(posedge clk) begin
        cnt_reg <= cnt_next;
        if (rst || halt) begin
            cnt_reg <= {(R_LOG+1){1'b0}};
        end
    end
end else begin : narrow
    // ------------------------------------------------ element < bus beat
    localparam LOG_K = LOG_BUS_BYTES - LOG_ELEM_BYTES;
    localparam integer K = 1 << LOG_K;
    // per request: {lane of its first element, element count, count == 1}
    localparam MW = LOG_K + 33;
    localparam integer MD = 1 << LOG_INFLIGHT;

    reg [MW-1:0] meta [0:MD-1];
    reg [LOG_INFLIGHT-1:0] wp_reg, rp_reg;
    reg [LOG_INFLIGHT:0]   mcount_reg, mcount_next;

    wire [LOG_K-1:0] lane0 = req_addr[LOG_BUS_BYTES-1:LOG_ELEM_BYTES];
    wire meta_full = mcount_reg[LOG_INFLIGHT];
    wire meta_nonempty = mcount_reg != {(LOG_INFLIGHT+1){1'b0}};

    assign dma_req_valid = req_valid && !meta_full;
    assign req_ready = dma_req_ready && !meta_full;
    assign dma_req_addr = {req_addr[ADDR_WIDTH-1:LOG_BUS_BYTES], {LOG_BUS_BYTES{1'b0}}};
    wire [32:0] lanes = {{(33-LOG_K){1'b0}}, lane0} + {1'b0, req_n} + (K - 1);
    assign dma_req_beats = {{(BEATS_WIDTH-33){1'b0}}, lanes >> LOG_K};

    wire push = req_valid && req_ready;

    reg             first_reg, first_next;
    reg [LOG_K-1:0] lane_reg, lane_next;
    reg [31:0]      rem_reg, rem_next;
    reg             last_reg, last_next;       // rem_reg == 1 (kept beside it)

    wire [MW-1:0]    head = meta[rp_reg];
    wire [LOG_K-1:0] cur_lane = first_reg ? head[MW-1:33] : lane_reg;
    wire [31:0]      cur_rem = first_reg ? head[32:1] : rem_reg;
    // the element is its request's last: from flip-flops and the FIFO, no compare
    wire             last = first_reg ? head[0] : last_reg;

    assign elem_valid = beat_valid && meta_nonempty;
    assign elem_data = beat_data[cur_lane*EW +: EW];
    assign beat_ready = meta_nonempty && elem_ready && (cur_lane == K[LOG_K-1:0] - 1'b1 || last);

    wire step = elem_valid && elem_ready;
    wire pop = step && last;

    always @* begin
        first_next = first_reg;
        lane_next = lane_reg;
        rem_next = rem_reg;
        last_next = last_reg;
        mcount_next = mcount_reg + {{LOG_INFLIGHT{1'b0}}, push} - {{LOG_INFLIGHT{1'b0}}, pop};
        if (step) begin
            first_next = last;
            lane_next = cur_lane + 1'b1;
            rem_next = cur_rem - 1'b1;
            last_next = cur_rem == 32'd2;
        end
    end

    always @(posedge clk) begin
        if (push) begin
            meta[wp_reg] <= {lane0, req_n, req_n == 32'd1};
        end
    end

    always @(posedge clk) begin
        first_reg <= first_next;
        lane_reg <= lane_next;
        rem_reg <= rem_next;
        last_reg <= last_next;
        mcount_reg <= mcount_next;
        if (push) begin
            wp_reg <= wp_reg + 1'b1;
        end
        if (pop) begin
            rp_reg <= rp_reg + 1'b1;
        end
        if (rst || halt) begin
            first_reg <= 1'b1;
            mcount_reg <= {(LOG_INFLIGHT+1){1'b0}};
            wp_reg <= {LOG_INFLIGHT{1'b0}};
            rp_reg <= {LOG_INFLIGHT{1'b0}};
        end
    end
end
endgenerate

endmodule

`resetall
