`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_dram: simulation-only device DRAM with an AXI4 slave port.
 *
 * The memory the design reaches through its AXI4 master.  It lives in HDL so
 * that no Python runs per beat (docs: "Simulation performance rules").
 *
 *  - AXI4 slave, data width DATA_WIDTH, INCR bursts (FIXED/WRAP are flagged as
 *    protocol errors and treated as INCR), any AxSIZE up to the bus width,
 *    WSTRB honoured per byte.  Up to FIFO_DEPTH outstanding AR and AW
 *    requests each; reads and writes proceed independently.
 *  - Latency: a read burst's first beat is offered no earlier than READ_LATENCY
 *    cycles after its AR handshake; a write response no earlier than
 *    WRITE_LATENCY cycles after the last W beat.
 *  - Optional random stalls: every ready/valid this model drives (ARREADY,
 *    RVALID, AWREADY, WREADY, BVALID) is withheld with probability STALL/256
 *    per cycle, from a 32-bit xorshift generator seeded with SEED.
 *    +DRAM_RLAT=, +DRAM_WLAT=, +DRAM_STALL=, +DRAM_SEED= plusargs override the
 *    parameters at run time, so one build serves every latency setting.
 *  - Addresses at or beyond 2**LOG_MEM_BYTES answer DECERR; reads return 0 and
 *    writes are dropped.  +DRAM_ERR_ADDR= / +DRAM_ERR_BYTES= name a window of
 *    beats that answer SLVERR the same way (fault injection).
 *  - Outstanding requests: at most +DRAM_OUTSTANDING= (1..FIFO_DEPTH, default
 *    FIFO_DEPTH) AR and AW requests each are accepted at a time.
 *  - Response order: read bursts are answered in request order per ARID; with
 *    +DRAM_REORDER=1, bursts of different ARIDs whose latency has passed are
 *    answered in random order (legal AXI4: the master must steer by RID).
 *  - Protocol checks (each adds one to protocol_errors and prints a message
 *    naming this instance): a burst that crosses a 4 KiB boundary, a non-INCR
 *    burst, an AxSIZE wider than the bus, a WLAST that disagrees with AWLEN;
 *    on AR, AW and W, VALID dropped or the payload changed before READY.
 *  - Memory never written reads as zero on both simulators (Icarus X bytes are
 *    turned into zeros on the way out).
 *
 * Backdoor (host access without per-beat Python): the testbench sets bd_op,
 * bd_word and bd_count, then changes bd_req.  On the next rising edge the
 * model copies words bd_word .. bd_word+bd_count-1 from or to the file named
 * by the +DRAM_BD_FILE= plusarg, and copies bd_req to bd_ack:
 *   bd_op 1: $readmemh (file -> memory; one hex word per line, most
 *            significant digit first)
 *   bd_op 2: $writememh (memory -> file, same text format)
 *   bd_op 3: $fread (file -> memory; raw bytes, each word most significant
 *            byte first): no text to parse, the fastest host write
 * Words are DATA_WIDTH bits, byte 0 of a word in bits [7:0] (little-endian).
 * `busy` is high while a request is accepted and not yet answered.
 */
module vta_dram #(
    // AXI data width in bits (64..512)
    parameter DATA_WIDTH = 64,
    // AXI address width in bits
    parameter ADDR_WIDTH = 32,
    // AXI ID width in bits
    parameter ID_WIDTH = 4,
    // log2 of the memory size in bytes
    parameter LOG_MEM_BYTES = 24,
    // minimum cycles from AR handshake to the first R beat
    parameter READ_LATENCY = 2,
    // minimum cycles from the last W beat to the B response
    parameter WRITE_LATENCY = 2,
    // stall probability per channel and cycle, in 1/256 units (0: never)
    parameter STALL = 0,
    // random seed of the stall generator (non-zero)
    parameter SEED = 32'h1234_5678,
    // outstanding AR / AW requests accepted
    parameter FIFO_DEPTH = 8
) (
    input  wire                    clk,
    input  wire                    rst,

    input  wire [ID_WIDTH-1:0]     s_axi_awid,
    input  wire [ADDR_WIDTH-1:0]   s_axi_awaddr,
    input  wire [7:0]              s_axi_awlen,
    input  wire [2:0]              s_axi_awsize,
    input  wire [1:0]              s_axi_awburst,
    input  wire                    s_axi_awvalid,
    output wire                    s_axi_awready,
    input  wire [DATA_WIDTH-1:0]   s_axi_wdata,
    input  wire [DATA_WIDTH/8-1:0] s_axi_wstrb,
    input  wire                    s_axi_wlast,
    input  wire                    s_axi_wvalid,
    output wire                    s_axi_wready,
    output reg  [ID_WIDTH-1:0]     s_axi_bid,
    output reg  [1:0]              s_axi_bresp,
    output reg                     s_axi_bvalid,
    input  wire                    s_axi_bready,
    input  wire [ID_WIDTH-1:0]     s_axi_arid,
    input  wire [ADDR_WIDTH-1:0]   s_axi_araddr,
    input  wire [7:0]              s_axi_arlen,
    input  wire [2:0]              s_axi_arsize,
    input  wire [1:0]              s_axi_arburst,
    input  wire                    s_axi_arvalid,
    output wire                    s_axi_arready,
    output reg  [ID_WIDTH-1:0]     s_axi_rid,
    output reg  [DATA_WIDTH-1:0]   s_axi_rdata,
    output reg  [1:0]              s_axi_rresp,
    output reg                     s_axi_rlast,
    output reg                     s_axi_rvalid,
    input  wire                    s_axi_rready,

    // backdoor
    input  wire [7:0]              bd_req,
    input  wire [1:0]              bd_op,
    input  wire [31:0]             bd_word,
    input  wire [31:0]             bd_count,
    output reg  [7:0]              bd_ack,

    // statistics and checks
    output wire                    busy,
    output reg  [31:0]             protocol_errors,
    output reg  [63:0]             read_beats,
    output reg  [63:0]             write_beats
);

localparam STRB_WIDTH = DATA_WIDTH / 8;
localparam WORD_SHIFT = $clog2(STRB_WIDTH);
localparam WORDS = 1 << (LOG_MEM_BYTES - WORD_SHIFT);
localparam FIFO_AW = $clog2(FIFO_DEPTH);

initial begin
    if (DATA_WIDTH < 8 || (DATA_WIDTH & (DATA_WIDTH - 1)) != 0) begin
        $display("%m: DATA_WIDTH must be a power of two >= 8, not %0d", DATA_WIDTH);
        $finish;
    end
    if (LOG_MEM_BYTES > ADDR_WIDTH || LOG_MEM_BYTES <= WORD_SHIFT) begin
        $display("%m: LOG_MEM_BYTES must be in %0d..%0d, not %0d", WORD_SHIFT + 1, ADDR_WIDTH,
                 LOG_MEM_BYTES);
        $finish;
    end
end

reg [DATA_WIDTH-1:0] mem [0:WORDS-1];

// run-time settings (plusargs override the parameters)
integer rlat, wlat, stall, outstanding, reorder;
reg [31:0] seed;
reg [63:0] err_lo, err_bytes;
reg [8*512-1:0] bd_file;
initial begin
    rlat = READ_LATENCY;
    wlat = WRITE_LATENCY;
    stall = STALL;
    seed = SEED;
    outstanding = FIFO_DEPTH;
    reorder = 0;
    err_lo = 0;
    err_bytes = 0;
    bd_file = "vta_dram_backdoor.hex";
    if ($value$plusargs("DRAM_RLAT=%d", rlat)) ;
    if ($value$plusargs("DRAM_WLAT=%d", wlat)) ;
    if ($value$plusargs("DRAM_STALL=%d", stall)) ;
    if ($value$plusargs("DRAM_SEED=%d", seed)) ;
    if ($value$plusargs("DRAM_OUTSTANDING=%d", outstanding)) ;
    if ($value$plusargs("DRAM_REORDER=%d", reorder)) ;
    if ($value$plusargs("DRAM_ERR_ADDR=%d", err_lo)) ;
    if ($value$plusargs("DRAM_ERR_BYTES=%d", err_bytes)) ;
    if ($value$plusargs("DRAM_BD_FILE=%s", bd_file)) ;
    if (seed == 0) seed = 1;
    if (outstanding < 1 || outstanding > FIFO_DEPTH) outstanding = FIFO_DEPTH;
    rnd = seed;
end

// free-running cycle count and stall generator
reg [63:0] cycle;
reg [31:0] rnd;
wire stall_ar = stall != 0 && rnd[7:0] < stall;
wire stall_r = stall != 0 && rnd[15:8] < stall;
wire stall_aw = stall != 0 && rnd[23:16] < stall;
wire stall_w = stall != 0 && rnd[31:24] < stall;
wire stall_b = stall != 0 && {rnd[3:0], rnd[31:28]} < stall;

function [31:0] xorshift(input [31:0] x);
    reg [31:0] y;
    begin
        y = x ^ (x << 13);
        y = y ^ (y >> 17);
        xorshift = y ^ (y << 5);
    end
endfunction

// a word as read: Icarus X/Z bytes (never written) become zero
function [DATA_WIDTH-1:0] clean(input [DATA_WIDTH-1:0] w);
    integer k;
    begin
        clean = w;
`ifndef VERILATOR
        // (the whole word first: most words are clean, and Icarus is slow at loops)
        if (^w === 1'bx)
            for (k = 0; k < STRB_WIDTH; k = k + 1)
                if (^w[k*8 +: 8] === 1'bx)
                    clean[k*8 +: 8] = 8'd0;
`endif
    end
endfunction

// ------------------------------------------------------------------ read side
// accepted read requests: slots, each with its arrival number (per-ID order)
reg                  ar_v    [0:FIFO_DEPTH-1];
reg [ID_WIDTH-1:0]   ar_id   [0:FIFO_DEPTH-1];
reg [ADDR_WIDTH-1:0] ar_addr [0:FIFO_DEPTH-1];
reg [7:0]            ar_len  [0:FIFO_DEPTH-1];
reg [2:0]            ar_size [0:FIFO_DEPTH-1];
reg [63:0]           ar_time [0:FIFO_DEPTH-1];
reg [63:0]           ar_seq  [0:FIFO_DEPTH-1];
reg [63:0]           ar_count;
integer ar_used, ar_delta;
assign s_axi_arready = !rst && ar_used < outstanding && !stall_ar;

reg                  r_active;
reg [ID_WIDTH-1:0]   r_id;
reg [ADDR_WIDTH-1:0] r_addr;
reg [7:0]            r_left;
reg [2:0]            r_size;

// ----------------------------------------------------------------- write side
reg [ID_WIDTH-1:0]   aw_id   [0:FIFO_DEPTH-1];
reg [ADDR_WIDTH-1:0] aw_addr [0:FIFO_DEPTH-1];
reg [7:0]            aw_len  [0:FIFO_DEPTH-1];
reg [2:0]            aw_size [0:FIFO_DEPTH-1];
reg [FIFO_AW:0] aw_wr, aw_rd;
wire [FIFO_AW:0] aw_used = aw_wr - aw_rd;
wire aw_full = aw_used >= outstanding;
wire aw_empty = aw_wr == aw_rd;
assign s_axi_awready = !rst && !aw_full && !stall_aw;

reg                  w_active;
reg [ID_WIDTH-1:0]   w_id;
reg [ADDR_WIDTH-1:0] w_addr;
reg [7:0]            w_left;
reg [2:0]            w_size;
reg [1:0]            w_resp;
assign s_axi_wready = !rst && w_active && !stall_w;

reg [ID_WIDTH-1:0]   b_id   [0:FIFO_DEPTH-1];
reg [1:0]            b_resp [0:FIFO_DEPTH-1];
reg [63:0]           b_time [0:FIFO_DEPTH-1];
reg [FIFO_AW:0] b_wr, b_rd;
wire [FIFO_AW:0] b_used = b_wr - b_rd;
wire b_empty = b_wr == b_rd;

function in_range(input [ADDR_WIDTH-1:0] a);
    in_range = (a >> LOG_MEM_BYTES) == 0;
endfunction

// the response of a beat at address a: OKAY, SLVERR (error window), DECERR (beyond memory)
function [1:0] beat_resp(input [ADDR_WIDTH-1:0] a);
    reg [63:0] a64;
    begin
        a64 = a;
        if (!in_range(a))
            beat_resp = 2'b11;
        else if (a64 >= err_lo && a64 - err_lo < err_bytes)
            beat_resp = 2'b10;
        else
            beat_resp = 2'b00;
    end
endfunction

function crosses_4k(input [ADDR_WIDTH-1:0] a, input [7:0] len, input [2:0] size);
    reg [ADDR_WIDTH+12:0] last;
    begin
        last = ((a >> size) << size) + ((len + 1) << size) - 1;
        crosses_4k = (a >> 12) != (last >> 12);
    end
endfunction

// a transaction accepted and not yet answered (or a W beat owed)
assign busy = ar_used != 0 || r_active || s_axi_rvalid || !aw_empty || w_active || !b_empty
              || s_axi_bvalid;

integer i, j, k, bd_fd, bd_n, pick, npick;
reg r_next, w_next, older;
reg [1:0] resp;
reg [DATA_WIDTH-1:0] word;
reg [ADDR_WIDTH-1:0] widx;

// protocol: the master's payload on AR, AW, W while VALID waits for READY
reg        ar_wait, aw_wait, w_wait;
reg [ID_WIDTH+ADDR_WIDTH+13-1:0] ar_held, aw_held;
reg [DATA_WIDTH+DATA_WIDTH/8:0]  w_held;
wire [ID_WIDTH+ADDR_WIDTH+13-1:0] ar_now = {s_axi_arid, s_axi_araddr, s_axi_arlen, s_axi_arsize,
                                            s_axi_arburst};
wire [ID_WIDTH+ADDR_WIDTH+13-1:0] aw_now = {s_axi_awid, s_axi_awaddr, s_axi_awlen, s_axi_awsize,
                                            s_axi_awburst};
wire [DATA_WIDTH+DATA_WIDTH/8:0]  w_now = {s_axi_wdata, s_axi_wstrb, s_axi_wlast};

task stable(input waiting, input valid, input same, input [8*2-1:0] name);
    begin
        if (waiting && !valid) begin
            protocol_errors <= protocol_errors + 1;
            $display("%m: %0sVALID dropped before %0sREADY (cycle %0d)", name, name, cycle);
        end else if (waiting && !same) begin
            protocol_errors <= protocol_errors + 1;
            $display("%m: %0s payload changed while %0sVALID waited for %0sREADY (cycle %0d)",
                     name, name, name, cycle);
        end
    end
endtask

always @(posedge clk) begin
    cycle <= cycle + 1;
    // (the random numbers only decide stalls and reordering)
    if (stall != 0 || reorder != 0)
        rnd <= xorshift(rnd);

    // VALID and payload stay until READY (checked only while waiting: the
    // simulator runs this block every cycle)
    if (!rst) begin
        if (ar_wait)
            stable(ar_wait, s_axi_arvalid, ar_now === ar_held, "AR");
        if (aw_wait)
            stable(aw_wait, s_axi_awvalid, aw_now === aw_held, "AW");
        if (w_wait)
            stable(w_wait, s_axi_wvalid, w_now === w_held, "W");
    end
    ar_wait <= s_axi_arvalid && !s_axi_arready;
    aw_wait <= s_axi_awvalid && !s_axi_awready;
    w_wait <= s_axi_wvalid && !s_axi_wready;
    ar_held <= ar_now;
    aw_held <= aw_now;
    w_held <= w_now;

    // AR accept (into the lowest free slot)
    ar_delta = 0;
    if (s_axi_arvalid && s_axi_arready) begin
        k = -1;
        for (i = FIFO_DEPTH - 1; i >= 0; i = i - 1)
            if (!ar_v[i]) k = i;
        ar_v[k] <= 1'b1;
        ar_id[k] <= s_axi_arid;
        ar_addr[k] <= s_axi_araddr;
        ar_len[k] <= s_axi_arlen;
        ar_size[k] <= s_axi_arsize;
        ar_time[k] <= cycle;
        ar_seq[k] <= ar_count;
        ar_count <= ar_count + 1;
        ar_delta = ar_delta + 1;
        if (s_axi_arburst != 2'b01 || s_axi_arsize > WORD_SHIFT
                || crosses_4k(s_axi_araddr, s_axi_arlen, s_axi_arsize)) begin
            protocol_errors <= protocol_errors + 1;
            $display("%m: read burst at 0x%0h (len %0d, size %0d, burst %0d) is not INCR within one 4 KiB page",
                     s_axi_araddr,
                     s_axi_arlen, s_axi_arsize, s_axi_arburst);
        end
    end

    // R: offer the next beat whenever the current one is taken (or none is shown);
    // the next burst is loaded while the last beat of this one goes out
    r_next = !r_active;
    if (!s_axi_rvalid || s_axi_rready) begin
        s_axi_rvalid <= 1'b0;
        if (s_axi_rvalid)
            read_beats <= read_beats + 1;
        if (r_active && !stall_r) begin
            widx = r_addr >> WORD_SHIFT;
            s_axi_rvalid <= 1'b1;
            s_axi_rid <= r_id;
            s_axi_rlast <= r_left == 0;
            resp = beat_resp(r_addr);
            s_axi_rresp <= resp;
            if (resp == 2'b00)
                s_axi_rdata <= clean(mem[widx[LOG_MEM_BYTES-WORD_SHIFT-1:0]]);
            else
                s_axi_rdata <= {DATA_WIDTH{1'b0}};
            r_addr <= r_addr + (1 << r_size);
            r_left <= r_left - 1;
            if (r_left == 0) begin
                r_active <= 1'b0;
                r_next = 1'b1;
            end
        end
    end
    if (r_next && ar_used != 0) begin
        // the next burst: the oldest of its ARID, latency passed; the oldest such
        // (or, reordering, a random one)
        pick = -1;
        npick = 0;
        for (i = 0; i < FIFO_DEPTH; i = i + 1) begin
            older = 1'b0;
            // (an older request of the same ARID is looked for only for a candidate)
            if (ar_v[i] && cycle >= ar_time[i] + rlat)
                for (j = 0; j < FIFO_DEPTH; j = j + 1)
                    if (ar_v[j] && j != i && ar_id[j] == ar_id[i] && ar_seq[j] < ar_seq[i])
                        older = 1'b1;
            if (ar_v[i] && !older && cycle >= ar_time[i] + rlat) begin
                if (reorder != 0) begin
                    npick = npick + 1;
                    if (pick < 0 || (rnd >> (i % 29)) % npick == 0) pick = i;
                end else if (pick < 0 || ar_seq[i] < ar_seq[pick]) begin
                    pick = i;
                end
            end
        end
        if (pick >= 0) begin
            r_active <= 1'b1;
            r_id <= ar_id[pick];
            r_addr <= ar_addr[pick];
            r_left <= ar_len[pick];
            r_size <= ar_size[pick];
            ar_v[pick] <= 1'b0;
            ar_delta = ar_delta - 1;
        end
    end

    // AW accept
    if (s_axi_awvalid && s_axi_awready) begin
        aw_id[aw_wr[FIFO_AW-1:0]] <= s_axi_awid;
        aw_addr[aw_wr[FIFO_AW-1:0]] <= s_axi_awaddr;
        aw_len[aw_wr[FIFO_AW-1:0]] <= s_axi_awlen;
        aw_size[aw_wr[FIFO_AW-1:0]] <= s_axi_awsize;
        aw_wr <= aw_wr + 1;
        if (s_axi_awburst != 2'b01 || s_axi_awsize > WORD_SHIFT
                || crosses_4k(s_axi_awaddr, s_axi_awlen, s_axi_awsize)) begin
            protocol_errors <= protocol_errors + 1;
            $display("%m: write burst at 0x%0h (len %0d, size %0d, burst %0d) is not INCR within one 4 KiB page",
                     s_axi_awaddr,
                     s_axi_awlen, s_axi_awsize, s_axi_awburst);
        end
    end

    // W: one burst at a time, in AW order; the next burst is loaded with the last beat
    w_next = !w_active;
    if (w_active && s_axi_wvalid && s_axi_wready) begin
        write_beats <= write_beats + 1;
        widx = w_addr >> WORD_SHIFT;
        if (beat_resp(w_addr) == 2'b00) begin
            word = mem[widx[LOG_MEM_BYTES-WORD_SHIFT-1:0]];
            for (i = 0; i < STRB_WIDTH; i = i + 1)
                if (s_axi_wstrb[i])
                    word[i*8 +: 8] = s_axi_wdata[i*8 +: 8];
            mem[widx[LOG_MEM_BYTES-WORD_SHIFT-1:0]] <= word;
        end
        w_addr <= w_addr + (1 << w_size);
        w_left <= w_left - 1;
        if (s_axi_wlast != (w_left == 0)) begin
            protocol_errors <= protocol_errors + 1;
            $display("%m: WLAST is %0d on a beat with %0d beats left in the burst",
                     s_axi_wlast, w_left);
        end
        if (w_left == 0) begin
            w_active <= 1'b0;
            w_next = 1'b1;
            b_id[b_wr[FIFO_AW-1:0]] <= w_id;
            b_resp[b_wr[FIFO_AW-1:0]] <= (beat_resp(w_addr) > w_resp) ? beat_resp(w_addr)
                                                                          : w_resp;
            b_time[b_wr[FIFO_AW-1:0]] <= cycle;
            b_wr <= b_wr + 1;
        end else if (beat_resp(w_addr) > w_resp) begin
            w_resp <= beat_resp(w_addr);
        end
    end
    if (w_next && !aw_empty && b_used < FIFO_DEPTH - 1) begin
        w_active <= 1'b1;
        w_id <= aw_id[aw_rd[FIFO_AW-1:0]];
        w_addr <= aw_addr[aw_rd[FIFO_AW-1:0]];
        w_left <= aw_len[aw_rd[FIFO_AW-1:0]];
        w_size <= aw_size[aw_rd[FIFO_AW-1:0]];
        w_resp <= 2'b00;
        aw_rd <= aw_rd + 1;
    end

    // B
    if (!s_axi_bvalid || s_axi_bready) begin
        s_axi_bvalid <= 1'b0;
        if (!b_empty && !stall_b && cycle >= b_time[b_rd[FIFO_AW-1:0]] + wlat) begin
            s_axi_bvalid <= 1'b1;
            s_axi_bid <= b_id[b_rd[FIFO_AW-1:0]];
            s_axi_bresp <= b_resp[b_rd[FIFO_AW-1:0]];
            b_rd <= b_rd + 1;
        end
    end

    ar_used <= ar_used + ar_delta;

    // backdoor
    if (bd_req != bd_ack) begin
        if (bd_op == 2'd1) begin
            $readmemh(bd_file, mem, bd_word, bd_word + bd_count - 1);
        end else if (bd_op == 2'd2) begin
            $writememh(bd_file, mem, bd_word, bd_word + bd_count - 1);
        end else if (bd_op == 2'd3) begin
            bd_fd = $fopen(bd_file, "rb");
            bd_n = $fread(mem, bd_fd, bd_word, bd_count);
            $fclose(bd_fd);
        end
        bd_ack <= bd_req;
    end

    if (rst) begin
        for (i = 0; i < FIFO_DEPTH; i = i + 1)
            ar_v[i] <= 1'b0;
        ar_used <= 0;
        ar_wait <= 1'b0;
        aw_wait <= 1'b0;
        w_wait <= 1'b0;
        aw_wr <= 0;
        aw_rd <= 0;
        b_wr <= 0;
        b_rd <= 0;
        r_active <= 1'b0;
        w_active <= 1'b0;
        s_axi_rvalid <= 1'b0;
        s_axi_bvalid <= 1'b0;
        protocol_errors <= 0;
        read_beats <= 0;
        write_beats <= 0;
    end
end

initial begin
    cycle = 0;
    bd_ack = 0;
    for (i = 0; i < FIFO_DEPTH; i = i + 1)
        ar_v[i] = 1'b0;
    ar_used = 0;
    ar_count = 0;
    ar_wait = 0;
    aw_wait = 0;
    w_wait = 0;
    aw_wr = 0;
    aw_rd = 0;
    b_wr = 0;
    b_rd = 0;
    r_active = 0;
    w_active = 0;
    s_axi_rvalid = 0;
    s_axi_bvalid = 0;
    s_axi_rlast = 0;
    s_axi_rid = 0;
    s_axi_rdata = 0;
    s_axi_rresp = 0;
    s_axi_bid = 0;
    s_axi_bresp = 0;
    protocol_errors = 0;
    read_beats = 0;
    write_beats = 0;
end

endmodule

`resetall
