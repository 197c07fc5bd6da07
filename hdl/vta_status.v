`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_status: what vta_regs reports about a run, gathered from the engines.
 *
 *   run end    DONE (run_done) when fetch has dispatched INSN_COUNT
 *              instructions, every command queue is empty, every engine idle
 *              and compute retired FINISH; drained without FINISH is the
 *              fault NO_FINISH.
 *   faults     the first fault of a cycle, by priority: an engine's own
 *              fault (fetch, load, compute, store), then a DRAM error
 *              response (read, then write: BUS_ERROR of the engine whose
 *              stream it answered, with the burst address), then DEADLOCK,
 *              then NO_FINISH.  A fetch bus error names the first instruction
 *              of the failing burst (from the registered burst address); the
 *              others name the engine's current instruction.
 *   deadlock   every engine either waits on an empty token queue or has
 *              nothing left to do, at least one waits, and fetch can dispatch
 *              nothing more, for 8 cycles in a row (decided from registered
 *              state: once stuck, nothing in the run can unstick it).
 *   counters   each counter's increment of this cycle (regs.COUNTERS order,
 *              vta_cfg.vh's VTA_CNT_*), and TOKENS (each queue's count,
 *              saturated at 255).
 *   start_ok   the DMA is quiet (a run may start).
 *
 * The run end, the deadlock test and the fault report come from registers (the
 * fault report a cycle after the fault), so no decision here feeds vta_regs'
 * halt in the cycle it is made; `start` clears them for the next run.
 */
`include "vta_isa.vh"
`include "vta_regs.vh"
`include "vta_cfg.vh"

module vta_status #(
    // AXI address width (the bus-error addresses)
    parameter ADDR_WIDTH = 32,
    // AXI ID width (the read engine's client number of a bus error)
    parameter ID_WIDTH = 4,
    // log2 of the command-queue depth (the queues' counts are LOG_QUEUE_DEPTH + 2 bits)
    parameter LOG_QUEUE_DEPTH = 9
) (
    input  wire                    clk,
    input  wire                    rst,
    input  wire                    start,
    input  wire                    run,
    input  wire [63:0]             insn_addr,

    // fetch and the command queues
    input  wire                    fetch_err,
    input  wire [7:0]              fetch_err_code,
    input  wire [`VTA_CMD_INDEX_W-1:0] fetch_err_index,
    input  wire                    fetch_done,
    input  wire                    fetch_quiet,
    input  wire [LOG_QUEUE_DEPTH+1:0] ldq_count,
    input  wire [LOG_QUEUE_DEPTH+1:0] cmpq_count,
    input  wire [LOG_QUEUE_DEPTH+1:0] stq_count,

    // the engines: fault, current instruction, state, retire, counter increments
    input  wire                    load_err,
    input  wire [7:0]              load_err_code,
    input  wire [`VTA_CMD_INDEX_W-1:0] load_index,
    input  wire                    load_idle,
    input  wire                    load_stall,
    input  wire                    load_busy,
    input  wire                    load_retire,
    input  wire [31:0]             load_inp_bytes,
    input  wire [31:0]             load_wgt_bytes,
    input  wire                    compute_err,
    input  wire [7:0]              compute_err_code,
    input  wire [`VTA_CMD_INDEX_W-1:0] compute_index,
    input  wire                    compute_idle,
    input  wire                    compute_stall,
    input  wire                    compute_busy,
    input  wire                    compute_retire,
    input  wire                    compute_finish,
    input  wire [31:0]             compute_uop_bytes,
    input  wire [31:0]             compute_acc_bytes,
    input  wire [31:0]             compute_acc8_bytes,
    input  wire [31:0]             compute_gemm_uops,
    input  wire [31:0]             compute_alu_uops,
    input  wire                    store_err,
    input  wire [7:0]              store_err_code,
    input  wire [`VTA_CMD_INDEX_W-1:0] store_index,
    input  wire                    store_idle,
    input  wire                    store_stall,
    input  wire                    store_busy,
    input  wire                    store_retire,
    input  wire [31:0]             store_out_bytes,

    // the DMA: idle, DRAM error responses (read client 0 fetch, 1-2 load, 3-5 compute)
    input  wire                    rd_idle,
    input  wire                    rd_bus_err,
    input  wire [ID_WIDTH-1:0]     rd_bus_err_client,
    input  wire [ADDR_WIDTH-1:0]   rd_bus_err_addr,
    input  wire                    wr_idle,
    input  wire                    wr_bus_err,
    input  wire [ADDR_WIDTH-1:0]   wr_bus_err_addr,

    // the token queues: pushes (counted) and counts (TOKENS)
    input  wire                    l2g_push,
    input  wire                    g2l_push,
    input  wire                    g2s_push,
    input  wire                    s2g_push,
    input  wire [$clog2(`VTA_TOKEN_QUEUE_DEPTH+1)-1:0] l2g_count,
    input  wire [$clog2(`VTA_TOKEN_QUEUE_DEPTH+1)-1:0] g2l_count,
    input  wire [$clog2(`VTA_TOKEN_QUEUE_DEPTH+1)-1:0] g2s_count,
    input  wire [$clog2(`VTA_TOKEN_QUEUE_DEPTH+1)-1:0] s2g_count,

    // to vta_regs
    output wire                    start_ok,
    output wire                    run_done,
    output wire                    err_valid,
    output wire [3:0]              err_module,
    output wire [7:0]              err_code,
    output wire [`VTA_CMD_INDEX_W-1:0] err_index,
    output wire [63:0]             err_addr,
    output wire [31:0]             tokens,
    output reg  [`VTA_NUM_COUNTERS*32-1:0] cnt_inc
);

localparam QW = LOG_QUEUE_DEPTH + 2;
localparam TCW = $clog2(`VTA_TOKEN_QUEUE_DEPTH + 1);
localparam IW = `VTA_CMD_INDEX_W;
// cycles in a row the engines must look stuck before DEADLOCK (the count saturates)
localparam DEAD_W = 3;
localparam [DEAD_W-1:0] DEAD_CYCLES = {DEAD_W{1'b1}};
// read clients of the load engine (1, 2; compute's are above)
localparam [ID_WIDTH-1:0] RD_LOAD_LAST = 2;

initial begin
    if (ADDR_WIDTH < 13 || ADDR_WIDTH > 64) begin
        $display("%m: ADDR_WIDTH must be in 13..64, not %0d", ADDR_WIDTH);
        $finish;
    end
    if (ID_WIDTH < 3) begin
        $display("%m: ID_WIDTH must be at least 3 (6 read streams), not %0d", ID_WIDTH);
        $finish;
    end
    if (LOG_QUEUE_DEPTH < 1) begin
        $display("%m: LOG_QUEUE_DEPTH must be at least 1, not %0d", LOG_QUEUE_DEPTH);
        $finish;
    end
end

assign start_ok = rd_idle && wr_idle;

// ---------------------------------------------------------------- run end, deadlock
// decided from last cycle's state (registered): once drained, nothing can start
// again in a run; a deadlock lasts anyway
reg              finish_seen_reg, finish_seen_next;
reg              drained_reg, drained_next;
reg              dead_reg, dead_next;
reg [DEAD_W-1:0] dead_cnt_reg, dead_cnt_next;

wire load_free = load_idle && ldq_count == {QW{1'b0}};
wire compute_free = compute_idle && cmpq_count == {QW{1'b0}};
wire store_free = store_idle && stq_count == {QW{1'b0}};
assign run_done = drained_reg && finish_seen_reg;

always @* begin
    finish_seen_next = finish_seen_reg || compute_finish;
    drained_next = fetch_done && load_free && compute_free && store_free;
    dead_next = fetch_quiet && (load_stall || load_free) && (compute_stall || compute_free)
                && (store_stall || store_free) && (load_stall || compute_stall || store_stall);
    dead_cnt_next = {DEAD_W{1'b0}};
    if (dead_reg && run) begin
        dead_cnt_next = (dead_cnt_reg == DEAD_CYCLES) ? dead_cnt_reg : dead_cnt_reg + 1'b1;
    end
end

// ---------------------------------------------------------------- the fault report
// the fault of this cycle (first by priority), registered; a fetch bus error's index
// comes from the registered burst address (fetch_bus_reg)
reg         err_valid_reg, err_valid_next;
reg  [3:0]  err_module_reg, err_module_next;
reg  [7:0]  err_code_reg, err_code_next;
reg  [IW-1:0] err_index_reg, err_index_next;
reg  [63:0] err_addr_reg, err_addr_next;
reg         fetch_bus_reg, fetch_bus_next;

// bus-error addresses zero-extended to 64 bits through a wider concatenation (ADDR_WIDTH
// may be 64); a fetch bus error's instruction: the burst's offset in the stream / 16
wire [63+ADDR_WIDTH:0] rd_err_wide = {64'd0, rd_bus_err_addr};
wire [63+ADDR_WIDTH:0] wr_err_wide = {64'd0, wr_bus_err_addr};
wire [63:0] stream_base = {insn_addr[63:4], 4'd0};
wire [63:0] fetch_err_off = (err_addr_reg > stream_base) ? err_addr_reg - stream_base : 64'd0;
wire _unused_ok = &{1'b0, rd_err_wide[63+ADDR_WIDTH:64], wr_err_wide[63+ADDR_WIDTH:64],
                    fetch_err_off[63:IW+4], fetch_err_off[3:0], insn_addr[3:0], 1'b0};

assign err_valid = err_valid_reg;
assign err_module = err_module_reg;
assign err_code = err_code_reg;
assign err_index = fetch_bus_reg ? fetch_err_off[IW+3:4] : err_index_reg;
assign err_addr = err_addr_reg;

always @* begin
    err_valid_next = 1'b1;
    err_module_next = `VTA_MOD_NONE;
    err_code_next = `VTA_ERR_NONE;
    err_index_next = {IW{1'b0}};
    err_addr_next = 64'd0;
    fetch_bus_next = 1'b0;
    if (fetch_err) begin
        err_module_next = `VTA_MOD_FETCH;
        err_code_next = fetch_err_code;
        err_index_next = fetch_err_index;
    end else if (load_err) begin
        err_module_next = `VTA_MOD_LOAD;
        err_code_next = load_err_code;
        err_index_next = load_index;
    end else if (compute_err) begin
        err_module_next = `VTA_MOD_COMPUTE;
        err_code_next = compute_err_code;
        err_index_next = compute_index;
    end else if (store_err) begin
        err_module_next = `VTA_MOD_STORE;
        err_code_next = store_err_code;
        err_index_next = store_index;
    end else if (rd_bus_err) begin
        err_code_next = `VTA_ERR_BUS_ERROR;
        err_addr_next = rd_err_wide[63:0];
        if (rd_bus_err_client == {ID_WIDTH{1'b0}}) begin
            err_module_next = `VTA_MOD_FETCH;
            fetch_bus_next = 1'b1;
        end else if (rd_bus_err_client <= RD_LOAD_LAST) begin
            err_module_next = `VTA_MOD_LOAD;
            err_index_next = load_index;
        end else begin
            err_module_next = `VTA_MOD_COMPUTE;
            err_index_next = compute_index;
        end
    end else if (wr_bus_err) begin
        err_module_next = `VTA_MOD_STORE;
        err_code_next = `VTA_ERR_BUS_ERROR;
        err_index_next = store_index;
        err_addr_next = wr_err_wide[63:0];
    end else if (dead_cnt_reg == DEAD_CYCLES) begin
        err_code_next = `VTA_ERR_DEADLOCK;
        if (load_stall) begin
            err_module_next = `VTA_MOD_LOAD;
            err_index_next = load_index;
        end else if (compute_stall) begin
            err_module_next = `VTA_MOD_COMPUTE;
            err_index_next = compute_index;
        end else begin
            err_module_next = `VTA_MOD_STORE;
            err_index_next = store_index;
        end
    end else if (drained_reg && !finish_seen_reg) begin
        err_module_next = `VTA_MOD_COMPUTE;
        err_code_next = `VTA_ERR_NO_FINISH;
        err_index_next = {IW{1'b1}};
    end else begin
        err_valid_next = 1'b0;
    end
end

// vta_regs halts the engines on the fault report in the cycle it arrives
always @(posedge clk) begin
    finish_seen_reg <= finish_seen_next;
    drained_reg <= drained_next;
    dead_reg <= dead_next;
    dead_cnt_reg <= dead_cnt_next;
    err_valid_reg <= err_valid_next;
    err_module_reg <= err_module_next;
    err_code_reg <= err_code_next;
    err_index_reg <= err_index_next;
    err_addr_reg <= err_addr_next;
    fetch_bus_reg <= fetch_bus_next;
    if (rst || start) begin
        finish_seen_reg <= 1'b0;
        drained_reg <= 1'b0;
        dead_reg <= 1'b0;
        dead_cnt_reg <= {DEAD_W{1'b0}};
        err_valid_reg <= 1'b0;
    end
end

// ---------------------------------------------------------------- TOKENS, counters
function [7:0] sat8;
    input [TCW-1:0] v;
    begin
        sat8 = (v > 255) ? 8'd255 : v[7:0];
    end
endfunction
assign tokens = {sat8(s2g_count), sat8(g2s_count), sat8(g2l_count), sat8(l2g_count)};

always @* begin
    cnt_inc = {`VTA_NUM_COUNTERS*32{1'b0}};
    cnt_inc[`VTA_CNT_CYCLES*32 +: 32] = 32'd1;
    cnt_inc[`VTA_CNT_LOAD_BUSY*32] = load_busy;
    cnt_inc[`VTA_CNT_LOAD_STALL*32] = load_stall;
    cnt_inc[`VTA_CNT_COMPUTE_BUSY*32] = compute_busy;
    cnt_inc[`VTA_CNT_COMPUTE_STALL*32] = compute_stall;
    cnt_inc[`VTA_CNT_STORE_BUSY*32] = store_busy;
    cnt_inc[`VTA_CNT_STORE_STALL*32] = store_stall;
    cnt_inc[`VTA_CNT_UOP_LOAD_BYTES*32 +: 32] = compute_uop_bytes;
    cnt_inc[`VTA_CNT_INP_LOAD_BYTES*32 +: 32] = load_inp_bytes;
    cnt_inc[`VTA_CNT_WGT_LOAD_BYTES*32 +: 32] = load_wgt_bytes;
    cnt_inc[`VTA_CNT_ACC_LOAD_BYTES*32 +: 32] = compute_acc_bytes;
    cnt_inc[`VTA_CNT_ACC8_LOAD_BYTES*32 +: 32] = compute_acc8_bytes;
    cnt_inc[`VTA_CNT_OUT_STORE_BYTES*32 +: 32] = store_out_bytes;
    cnt_inc[`VTA_CNT_GEMM_UOPS*32 +: 32] = compute_gemm_uops;
    cnt_inc[`VTA_CNT_ALU_UOPS*32 +: 32] = compute_alu_uops;
    cnt_inc[`VTA_CNT_LOAD_INSNS*32] = load_retire;
    cnt_inc[`VTA_CNT_COMPUTE_INSNS*32] = compute_retire;
    cnt_inc[`VTA_CNT_STORE_INSNS*32] = store_retire;
    cnt_inc[`VTA_CNT_L2G_TOKENS*32] = l2g_push;
    cnt_inc[`VTA_CNT_G2L_TOKENS*32] = g2l_push;
    cnt_inc[`VTA_CNT_G2S_TOKENS*32] = g2s_push;
    cnt_inc[`VTA_CNT_S2G_TOKENS*32] = s2g_push;
end

endmodule

`resetall
