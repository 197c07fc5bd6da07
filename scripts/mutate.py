#!/usr/bin/env python3
"""Mutation runner: do the tests notice a plausible bug?

Each mutation below changes one code pattern of ``hdl/``, ``sim/`` or ``vta/golden/``
in a way a person could plausibly get wrong (a bound off by one, a lost sign
extension, a token not pushed, a pad not zeroed, a forwarding path dropped, an
AXI handshake rule broken, ...).  For each one the runner copies the source tree
to a scratch folder, applies the mutation there (never in the working tree),
and runs the tests named for it, cheapest first, until one fails: the mutation
is then *killed* by that test.  A mutation no listed test fails *survived*:
either a test is missing, or the mutation does not change behaviour (then it is
argued equivalent in docs/mutation.md).

Mutations are anchored on code text, not line numbers: ``find`` must occur
exactly once in the file, or the mutation is reported *stale* (the code was
rewritten and the mutation must be rewritten with it).

Usage (from the repository root, with the development environment's Python)::

    nice python scripts/mutate.py                     # all mutations, table on stdout
    python scripts/mutate.py --list                   # names and what each models
    nice python scripts/mutate.py --only rtl_acc_dst_bound,golden_shr_clip
    nice python scripts/mutate.py --table docs/mutation.md

RTL mutations rebuild the simulator (Icarus where it is enough, in a cache of
their own: ``--cache``, default ``~/.cache/vta-mutate``), so a full run takes a
while on a small machine; one mutation runs at a time.  Not part of the default
test run.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# ------------------------------------------------------------------ test selections
# Each is one pytest invocation (arguments after ``pytest``); cheapest first.
T_TOP = ("tests/sim/rtl/test_top.py", "-k", "icarus")
T_TOP_FAULTS = ("tests/sim/rtl/test_top_faults.py", "-k", "icarus")
T_DMA = ("tests/sim/rtl/test_dma.py", "-k", "icarus")
T_DMA_ARB = ("tests/sim/rtl/test_dma_arbiter.py", "-k", "icarus")
T_COMPUTE = ("tests/sim/rtl/test_compute.py", "-k", "icarus")
T_LOAD = ("tests/sim/rtl/test_load.py", "-k", "icarus")
T_STORE = ("tests/sim/rtl/test_store.py", "-k", "icarus")
T_FETCH = ("tests/sim/rtl/test_fetch.py", "-k", "icarus")
T_ALU = ("tests/sim/rtl/test_alu.py", "-k", "icarus")
T_GEMM = ("tests/sim/rtl/test_gemm.py", "-k", "icarus")
T_TOKENS = ("tests/sim/rtl/test_token_queue.py", "-k", "icarus")
T_FIFO = ("tests/sim/rtl/test_fifo.py", "-k", "icarus")
T_REGS = ("tests/sim/rtl/test_regs.py", "-k", "icarus")
T_STATUS = ("tests/sim/rtl/test_status.py", "-k", "icarus")
T_WALK = ("tests/sim/rtl/test_row_walk.py", "-k", "icarus")
T_DRAM = ("tests/sim/test_vta_dram.py", "-k", "icarus")
T_BACKEND = ("tests/sim/test_rtl_backend.py", "-k", "icarus or in_flight or watchdog_counts")
T_DIFF = ("tests/sim/test_differential.py", "-k", "icarus")
T_GOLDEN = ("tests/unit/test_golden.py", "tests/suite/test_driver.py",
            "tests/suite/test_runtime.py", "tests/suite/test_ops.py", "--backend", "golden")
#: The fast golden model against the specification model.
T_FAST = ("tests/unit/test_golden_fast.py",)


@dataclass(frozen=True)
class Mutation:
    """One plausible bug: replace ``find`` (exactly once in ``file``) with ``replace``."""

    name: str
    file: str
    find: str
    replace: str
    models: str  # the bug it stands for
    tests: tuple[tuple[str, ...], ...]


M = Mutation
MUTATIONS: tuple[Mutation, ...] = (
    # ------------------------------------------------------------ bounds
    M("rtl_acc_dst_bound", "hdl/vta_compute.v",
      "wire range_bad = top_dst >= ACC_DEPTH",
      "wire range_bad = top_dst > ACC_DEPTH",
      "ACC destination range check >= written as >: index == depth wraps to entry 0",
      (T_TOP, T_COMPUTE)),
    M("rtl_inp_src_bound", "hdl/vta_compute.v",
      "|| (check_src && top_src >= src_depth)",
      "|| (check_src && top_src > src_depth)",
      "GEMM/ALU source range check off by one",
      (T_TOP, T_COMPUTE)),
    M("rtl_wgt_bound", "hdl/vta_compute.v",
      "|| (check_wgt && top_wgt >= WGT_DEPTH)",
      "|| (check_wgt && top_wgt > WGT_DEPTH)",
      "WGT index range check off by one",
      (T_COMPUTE, T_TOP)),
    M("rtl_sram_range", "hdl/vta_row_walk.v",
      "sram_bad_reg <= sram_end > depth;",
      "sram_bad_reg <= sram_end > depth + 1'b1;",
      "LOAD / STORE scratchpad range check lets one entry past the end",
      (T_WALK, T_LOAD, T_STORE, T_TOP)),
    M("rtl_dram_range", "hdl/vta_row_walk.v",
      "dram_bad_reg <= {{(64-NW){1'b0}}, dram_end} > mem_elems;",
      "dram_bad_reg <= {{(64-NW){1'b0}}, dram_end} > mem_elems + 64'd1;",
      "LOAD / STORE DRAM range check lets a row run past device memory",
      (T_WALK, T_LOAD, T_STORE, T_TOP)),
    M("rtl_fetch_range", "hdl/vta_fetch.v",
      "stream_bad_reg <= stream_end > {1'b0, MEM_SIZE};",
      "stream_bad_reg <= stream_end > {1'b0, MEM_SIZE} + 65'd16;",
      "instruction stream range check lets the last instruction hang past memory",
      (T_TOP, T_FETCH)),
    # ------------------------------------------------------------ sign extension
    M("rtl_acc8_sign", "hdl/vta_compute.v",
      "acc8_wide[e*AL +: AL] = {{(AL-OL){acc8_elem[e*OL+OL-1]}}, acc8_elem[e*OL +: OL]};",
      "acc8_wide[e*AL +: AL] = {{(AL-OL){1'b0}}, acc8_elem[e*OL +: OL]};",
      "ACC_8BIT loads zero-extend instead of sign-extending",
      (T_TOP, T_COMPUTE)),
    M("rtl_imm_sign", "hdl/vta_compute_pipe.v",
      "? {{(AL-IMM_W){c7_imm[IMM_W-1]}}, c7_imm} : {AL{1'b0}};",
      "? {{(AL-IMM_W){1'b0}}, c7_imm} : {AL{1'b0}};",
      "ALU immediate zero-extended (negative immediates become large positive)",
      (T_TOP, T_COMPUTE)),
    M("rtl_gemm_unsigned", "vta/hdltools/hdlgen.py",
      'f"(* mem2reg *) reg signed [{ww - 1}:0] w [0:{block * block - 1}] {split};",',
      'f"(* mem2reg *) reg [{ww - 1}:0] w [0:{block * block - 1}] {split};",',
      "GEMM weights treated as unsigned",
      (T_GEMM, T_TOP)),
    M("rtl_shr_big", "hdl/vta_alu.v",
      "sh = (|y[30:5]) ? {32{x[31]}} : shifted;",
      "sh = shifted;",
      "SHR by 32 or more wraps the amount instead of saturating at 31",
      (T_ALU, T_TOP)),
    M("rtl_shr_logical", "hdl/vta_alu.v",
      "funnel = y[31] ? {x, 32'd0} : {{32{x[31]}}, x};",
      "funnel = y[31] ? {x, 32'd0} : {32'd0, x};",
      "SHR logical instead of arithmetic",
      (T_ALU, T_TOP)),
    # ------------------------------------------------------------ tokens
    M("rtl_store_no_s2g", "hdl/vta_store.v",
      "s2g_push = push_prev;",
      "s2g_push = 1'b0;",
      "STORE never pushes its s2g token",
      (T_STORE, T_TOP)),
    M("rtl_compute_no_l2g_pop", "hdl/vta_compute.v",
      "assign l2g_pop = evt_start && pop_prev;",
      "assign l2g_pop = 1'b0;",
      "compute waits for an l2g token but does not take it",
      (T_COMPUTE, T_TOP)),
    M("rtl_load_no_l2g_push", "hdl/vta_load.v",
      "l2g_push = push_next;",
      "l2g_push = 1'b0;",
      "LOAD never pushes its l2g token",
      (T_LOAD, T_TOP)),
    M("rtl_token_full", "hdl/vta_token_queue.v",
      "assign full = count_reg == DEPTH[CW-1:0];",
      "assign full = 1'b0;",
      "token queue never reports full: an overflowing push is silently dropped",
      (T_TOKENS, T_TOP)),
    # ------------------------------------------------------------ padding
    M("rtl_pad_not_zero", "hdl/vta_compute.v",
      "(state_reg != STATE_LOAD || ld_wr_pad) ? {ACC_W{1'b0}}",
      "(state_reg != STATE_LOAD) ? {ACC_W{1'b0}}",
      "ACC loads write the pending element instead of zeros into pad entries",
      (T_TOP, T_COMPUTE)),
    M("rtl_pad_rows", "hdl/vta_loader.v",
      "row_in_next = y_pad_0 == 0 && y_size != 0;",
      "row_in_next = y_size != 0;",
      "top padding rows treated as data rows",
      (T_LOAD, T_TOP)),
    # ------------------------------------------------------------ loop bounds
    M("rtl_uop_loop_end", "hdl/vta_compute.v",
      "wire last_u = {1'b0, u_reg} == uop_end - 1'b1;",
      "wire last_u = {1'b0, u_reg} == uop_end - 2'd2;",
      "micro-op loop stops one micro-op early",
      (T_COMPUTE, T_TOP)),
    M("rtl_inner_factor", "hdl/vta_compute.v",
      "i_off_next = {i_off_reg[S+W +: A] + dst_f_in,",
      "i_off_next = {i_off_reg[S+W +: A] + dst_f_out,",
      "inner loop advances dst by the outer factor",
      (T_COMPUTE, T_TOP)),
    # ------------------------------------------------------------ forwarding
    M("rtl_forward_w1", "hdl/vta_compute_pipe.v",
      "        2'd1: a = w1_data_reg;",
      "        2'd1: a = acc_dst_rdata;",
      "no forwarding of the newest ACC write to the next micro-op's destination",
      (T_COMPUTE, T_TOP)),
    M("rtl_forward_dst_w2", "hdl/vta_compute_pipe.v",
      "        2'd2: a = w2_data_reg;",
      "        2'd2: a = acc_dst_rdata;",
      "no forwarding of the second-newest ACC write to the destination operand",
      (T_COMPUTE, T_TOP)),
    M("rtl_mul_no_gap", "hdl/vta_compute.v",
      "mul_gap_reg <= issue && is_mul;",
      "mul_gap_reg <= 1'b0;",
      "MUL micro-ops issued every cycle although their results are written a cycle later",
      (T_COMPUTE, T_TOP)),
    M("rtl_mul_forward_d", "hdl/vta_compute_pipe.v",
      "wire [1:0] fa7 = (wr_valid && wr_addr == dst7) ? 2'd1",
      "wire [1:0] fa7 = (v_reg[8] && dst8 == dst7) ? 2'd1",
      "the destination operand is forwarded from stage D's micro-op, not from the write "
      "(a MUL writes from E)",
      (T_COMPUTE, T_TOP)),
    M("rtl_mul_cross_product", "hdl/vta_alu.v",
      "+ {pp_hl_reg[n*16 +: 16] + pp_lh_reg[n*16 +: 16], 16'd0};",
      "+ {pp_hl_reg[n*16 +: 16] + pp_hl_reg[n*16 +: 16], 16'd0};",
      "MUL sums one cross product twice (xh*yl for xl*yh)",
      (T_ALU, T_COMPUTE)),
    M("rtl_mul_reset", "hdl/vta_compute_pipe.v",
      "        e_valid_reg <= 1'b0;\n",
      "",
      "a reset leaves a MUL at stage E to write after it",
      (T_COMPUTE, T_TOP)),
    M("rtl_forward_src_w2", "hdl/vta_compute_pipe.v",
      ": (w1_valid_reg && w1_addr_reg == src7) ? 2'd2 : 2'd0;",
      ": 2'd0;",
      "no forwarding of the second-newest ACC write to an ALU source",
      (T_COMPUTE, T_TOP)),
    # ------------------------------------------------------------ FSM transitions, fault path
    M("rtl_store_retire_early", "hdl/vta_store.v",
      "if (!rq_valid && sent_reg == total && dma_idle) begin",
      "if (!rq_valid && sent_reg == total) begin",
      "STORE retires (and the run reports DONE) before its write responses are back",
      (T_BACKEND, T_STORE, T_TOP)),
    M("rtl_halt_drops_at_clear", "hdl/vta_regs.v",
      "halt_base_reg <= error_next || (!start_ok && (pending_next || !busy_next));",
      "halt_base_reg <= error_next || (pending_next && !start_ok);",
      "CLEAR releases the engines while a stopped run's DMA beats are still owed (issue 7.1)",
      (T_TOP_FAULTS, T_BACKEND)),
    M("rtl_rd_port_keeps_halted", "hdl/vta_dma_rd_port.v",
      "        if (rst || halt) begin\n            first_reg <= 1'b1;",
      "        if (rst) begin\n            first_reg <= 1'b1;",
      "a narrow read port keeps a halted read's requests and turns the beats still shown into "
      "elements",
      (T_DMA, T_TOP_FAULTS)),
    M("rtl_rd_halt_waits_client", "hdl/vta_dma_rd.v",
      "assign r_ready = halt || !r_known || |(r_hot & rd_ready);",
      "assign r_ready = !r_known || |(r_hot & rd_ready);",
      "while halted, the read engine waits for the clients to take their beats instead of "
      "dropping them",
      (T_DMA, T_TOP_FAULTS)),
    M("rtl_start_no_clear_counters", "hdl/vta_regs.v",
      "                    clear_cnt = 1'b1;",
      "                    clear_cnt = 1'b0;",
      "START does not clear the counters",
      (T_REGS, T_TOP)),
    M("rtl_fetch_ignores_halt", "hdl/vta_fetch.v",
      """    if (halt) begin
        state_next = STATE_IDLE;
    end
end""",
      """end""",
      "fetch keeps dispatching after a fault",
      (T_TOP, T_FETCH)),
    # ------------------------------------------------------------ AXI handshakes
    M("rtl_w_overwrite", "hdl/vta_dma_wr.v",
      "wire w_load = w_owed && (!w_valid_reg || m_axi_wready) && (halt || wr_valid);",
      "wire w_load = w_owed && (halt || wr_valid);",
      "a new W beat replaces one still waiting for WREADY (issue 7.2)",
      (T_DMA, T_TOP_FAULTS)),
    M("rtl_wlast", "hdl/vta_dma_wr.v",
      "w_last_reg <= w_rem_reg == 9'd1;",
      "w_last_reg <= w_rem_reg == 9'd0;",
      "WLAST on the wrong beat",
      (T_DMA, T_TOP)),
    M("rtl_wr_burst_stale", "hdl/vta_dma_wr.v",
      "    burst_ok_reg <= active_reg;",
      "    burst_ok_reg <= 1'b1;",
      "DMA write: a request's first burst announced from the burst computed for the one before",
      (T_DMA, T_TOP)),
    M("rtl_wr_burst_last", "hdl/vta_dma_wr.v",
      "wire        rem_fits = rem_reg <= {{(BEATS_WIDTH-13){1'b0}}, cap};",
      "wire        rem_fits = rem_reg < {{(BEATS_WIDTH-13){1'b0}}, cap};",
      "DMA write: a request ending at a page end or after exactly 256 beats misses its end",
      (T_DMA, T_TOP)),
    M("rtl_load_fault_while_busy", "hdl/vta_load.v",
      """            if (ld_err) begin
                err = 1'b1;""",
      """            if (ld_err && ld_busy) begin
                err = 1'b1;""",
      "the load engine takes the sequencer's fault only while it is busy (the fault comes "
      "from a register, a cycle after the verdict): a bad LOAD retires silently",
      (T_LOAD, T_TOP)),
    M("rtl_scan_cache_kept", "hdl/vta_compute.v",
      "    c_valid_next = c_valid_reg && !uop_we;",
      "    c_valid_next = c_valid_reg;",
      "a UOP load leaves compute's cached micro-op maxima valid: the range check of the next "
      "nest over the same range uses the old micro-ops' fields",
      (T_COMPUTE, T_TOP)),
    M("rtl_scan_cache_cleared", "hdl/vta_compute.v",
      """    if (to_scan) begin
        max_dst_reg <= {A{1'b0}};""",
      """    if (decode) begin
        max_dst_reg <= {A{1'b0}};""",
      "every DECODE clears the micro-op maxima, also of a cached range: a nest reusing it is "
      "checked as if its micro-ops were all index 0",
      (T_COMPUTE, T_TOP)),
    M("rtl_uop_end_check_stale", "hdl/vta_compute.v",
      "        bad_uop_end_reg <= bad_uop_end;",
      "        bad_uop_end_reg <= 1'b0;",
      "compute's registered uop_end check never set: a nest beyond the micro-op buffer runs",
      (T_COMPUTE, T_TOP)),
    M("rtl_fetch_slice_kept", "hdl/vta_fetch.v",
      "        .rst(rst || halt),",
      "        .rst(rst),",
      "fetch's register slice (wide bus) keeps a faulted run's instructions through halt",
      (T_FETCH, T_TOP)),
    M("rtl_ar_overwrite", "hdl/vta_dma_rd.v",
      "wire ar_load = pick_valid && (!ar_valid_reg || m_axi_arready) && !halt;",
      "wire ar_load = pick_valid && !halt;",
      "a new AR burst replaces one still waiting for ARREADY",
      (T_DMA, T_TOP)),
    M("rtl_arbiter_fixed_priority", "hdl/vta_dma_rd.v",
      "        pick = above;",
      "        pick = pick;",
      "read arbiter by fixed priority (lowest ready client) instead of round robin",
      (T_DMA, T_DMA_ARB, T_TOP)),
    M("rtl_arbiter_forgets", "hdl/vta_dma_rd.v",
      "        rr_reg <= pick;",
      "        rr_reg <= rr_reg;",
      "read arbiter never remembers whom it served (round robin stuck after client 0)",
      (T_DMA, T_DMA_ARB, T_TOP)),
    M("rtl_4k_cross", "hdl/vta_dma_rd.v",
      "wire [12:0] cap = (to_page > 13'd256) ? 13'd256 : to_page;",
      "wire [12:0] cap = 13'd256;",
      "read bursts cross 4 KiB boundaries",
      (T_DMA, T_TOP)),
    M("rtl_rresp_ignored", "hdl/vta_dma_rd.v",
      "assign bus_err = r_valid && r_known && r_err && !halt;",
      "assign bus_err = 1'b0;",
      "RRESP SLVERR/DECERR ignored (issue 7.3)",
      (T_TOP_FAULTS, T_BACKEND)),
    M("rtl_bresp_ignored", "hdl/vta_dma_wr.v",
      "assign bus_err = b_take && m_axi_bresp[1] && !halt;",
      "assign bus_err = 1'b0;",
      "BRESP SLVERR/DECERR ignored (issue 7.3)",
      (T_TOP_FAULTS, T_BACKEND)),
    M("rtl_fetch_err_index", "hdl/vta_status.v",
      "fetch_bus_reg ? fetch_err_off[IW+3:4] :",
      "fetch_bus_reg ? fetch_err_off[IW+3:4] + 1'b1 :",
      "a fetch bus error blames the instruction after the first one of the failing burst",
      (T_STATUS, T_TOP_FAULTS, T_BACKEND)),
    # ------------------------------------------------------------ row walk (LOAD and STORE)
    M("rtl_walk_merge", "hdl/vta_row_walk.v",
      "merged_reg <= y_size == 1 || x_stride == x_size;",
      "merged_reg <= y_size == 1 || x_stride >= x_size;",
      "rows further apart than their length taken as contiguous: one request for the block",
      (T_WALK, T_LOAD, T_STORE, T_TOP)),
    M("rtl_walk_last_row", "hdl/vta_row_walk.v",
      "        if (rows_reg == 1) begin",
      "        if (rows_reg == 2) begin",
      "the row walk stops one row early",
      (T_WALK, T_LOAD, T_STORE, T_TOP)),
    M("rtl_walk_stride_elems", "hdl/vta_row_walk.v",
      "byte_next = byte_reg + stride_bytes_reg;",
      "byte_next = byte_reg + {{(RW-TW){1'b0}}, x_stride};",
      "the next row's address advances by x_stride bytes instead of elements",
      (T_WALK, T_LOAD, T_STORE, T_TOP)),
    M("rtl_walk_empty_span", "hdl/vta_row_walk.v",
      "wire [NW-1:0] dram_end = (y_size == 0) ? {{(NW-BW){1'b0}}, dram_base}",
      "wire [NW-1:0] dram_end = 1'b0 ? {{(NW-BW){1'b0}}, dram_base}",
      "a block of no rows is range-checked as if it had 2**16 - 1 (y_size - 1 wraps)",
      (T_WALK, T_LOAD, T_STORE, T_TOP)),
    M("rtl_walk_resumes", "hdl/vta_row_walk.v",
      """    if (check) begin
        // back to the first row""",
      """    if (check && !active_reg) begin
        // back to the first row""",
      "a walk starts again only once the last one finished: after a halt mid-walk the next "
      "block continues the old one's rows",
      (T_WALK, T_TOP_FAULTS, T_TOP)),
    # ------------------------------------------------------------ run end, faults, deadlock
    M("rtl_deadlock_none_waits", "hdl/vta_status.v",
      "&& (store_stall || store_free) && (load_stall || compute_stall || store_stall);",
      "&& (store_stall || store_free);",
      "DEADLOCK also when no engine waits for a token (engines idle, fetch quiet)",
      (T_STATUS, T_TOP, T_TOP_FAULTS)),
    M("rtl_deadlock_first_stuck", "hdl/vta_status.v",
      """        if (load_stall) begin
            err_module_next = `VTA_MOD_LOAD;
            err_index_next = load_index;
        end else if (compute_stall) begin""",
      """        if (compute_stall) begin""",
      "DEADLOCK names compute or store when the load engine is the first one stuck",
      (T_STATUS, T_TOP, T_TOP_FAULTS)),
    M("rtl_bus_err_client", "hdl/vta_status.v",
      "end else if (rd_bus_err_client <= RD_LOAD_LAST) begin",
      "end else if (rd_bus_err_client < RD_LOAD_LAST) begin",
      "a bus error on the WGT read stream is blamed on compute instead of load",
      (T_STATUS, T_TOP_FAULTS, T_BACKEND)),
    M("rtl_no_finish_ignored", "hdl/vta_status.v",
      "end else if (drained_reg && !finish_seen_reg) begin",
      "end else if (1'b0) begin",
      "a stream that ends without FINISH never reports NO_FINISH (the run hangs)",
      (T_STATUS, T_TOP)),
    M("rtl_finish_kept_across_runs", "hdl/vta_status.v",
      """        finish_seen_reg <= 1'b0;
        drained_reg <= 1'b0;""",
      """        drained_reg <= 1'b0;""",
      "START does not forget the last run's FINISH: a next run without one reports DONE",
      (T_STATUS, T_TOP)),
    M("rtl_counter_lanes_swapped", "hdl/vta_status.v",
      "cnt_inc[`VTA_CNT_INP_LOAD_BYTES*32 +: 32] = load_inp_bytes;",
      "cnt_inc[`VTA_CNT_INP_LOAD_BYTES*32 +: 32] = load_wgt_bytes;",
      "the INP load-byte counter adds the WGT bytes",
      (T_STATUS, T_TOP)),
    M("rtl_tokens_wrap", "hdl/vta_status.v",
      "sat8 = (v > 255) ? 8'd255 : v[7:0];",
      "sat8 = v[7:0];",
      "TOKENS wraps a queue holding 256 or more tokens instead of saturating at 255",
      (T_STATUS, T_TOP)),
    # ------------------------------------------------------------ the DRAM model's checks
    M("dram_no_stability_check", "sim/vta_dram.v",
      """            stable(w_wait, s_axi_wvalid, w_now === w_held, "W");""",
      ";",
      "the DRAM model stops checking W payload stability",
      (T_DRAM,)),
    M("rtl_fifo_count", "hdl/vta_fifo.v",
      "assign count = {1'b0, mem_count_reg} + {{(LOG_DEPTH+1){1'b0}}, out_valid_reg};",
      "assign count = {1'b0, mem_count_reg};",
      "command-queue occupancy misses the output register: fetch overfills a queue",
      (T_FIFO, T_FETCH, T_TOP)),
    M("rtl_err_addr_lost", "hdl/vta_regs.v",
      "            eaddr_next = err_addr;",
      "            eaddr_next = 64'd0;",
      "ERR_ADDR not latched with a BUS_ERROR",
      (T_TOP_FAULTS, T_BACKEND)),
    # ------------------------------------------------------------ testbench and host side
    M("tb_watchdog_ignores_uops", "sim/vta_tb.v",
      "| evt_compute_uop),",
      "),",
      "the watchdog does not count micro-ops as progress (issue 7.6)",
      (T_BACKEND,)),
    M("driver_misaligned_insn_addr", "vta/driver/host.py",
      "        if insn_addr % INSN_BYTES:",
      "        if False:",
      "the driver passes a misaligned instruction address (issue 7.4)",
      (T_GOLDEN,)),
    M("config_typo_accepted", "vta/config.py",
      "        if unknown:\n            key = unknown[0]",
      "        if False:\n            key = unknown[0]",
      "an unknown configuration key is ignored (issue 7.9)",
      (("tests/unit/test_config.py",),)),
    # ------------------------------------------------------------ golden model: both
    M("golden_shr_clip", "vta/golden/spec.py",
      "right = x >> np.clip(y, 0, 31)",
      "right = x >> np.clip(y, 0, 30)",
      "SHR by 31 or more shifts by 30 (decision 3 saturates at 31)",
      (T_GOLDEN,)),
    M("golden_shl_wrap", "vta/golden/spec.py",
      "return np.where(y >= 0, right, np.where(y <= -32, np.int32(0), left))",
      "return np.where(y >= 0, right, left)",
      "SHR by -32 or less wraps the shift instead of giving 0",
      (T_GOLDEN,)),
    M("golden_bus_error_addr", "vta/golden/common.py",
      "addr = max(start - start % bus_bytes, lo)",
      "addr = max(start, lo)",
      "bus-error address not rounded down to the bus word (the burst's address)",
      (T_GOLDEN, T_BACKEND)),
    # ------------------------------------------------------------ golden model: the spec
    M("spec_token_overflow", "vta/golden/spec.py",
      "if self.tokens[queue] >= TOKEN_QUEUE_DEPTH:",
      "if self.tokens[queue] > TOKEN_QUEUE_DEPTH:",
      "token queue holds one token more than the hardware",
      (T_GOLDEN, T_FAST)),
    M("spec_nest_bound", "vta/golden/spec.py",
      "            if top >= size:",
      "            if top > size:",
      "micro-op index check off by one (index == depth accepted)",
      (T_GOLDEN, T_FAST)),
    M("spec_pad_zero", "vta/golden/spec.py",
      "block = np.zeros((y_total, x_total, *shape), dtype=buf.dtype)",
      "block = buf[first:end].reshape(y_total, x_total, *shape).copy()",
      "padded LOAD leaves stale scratchpad data in the pads",
      (T_GOLDEN, T_FAST)),
    M("spec_acc8_sign", "vta/golden/spec.py",
      'MemId.ACC_8BIT: ("acc", "i1", "acc8_load_bytes"),',
      'MemId.ACC_8BIT: ("acc", "u1", "acc8_load_bytes"),',
      "ACC_8BIT LOAD not sign-extended into the accumulator",
      (T_GOLDEN, T_FAST)),
    M("spec_dram_end", "vta/golden/spec.py",
      "end = rows[-1][1] if rows else start",
      "end = rows[-1][0] if rows else start",
      "DRAM range check on the last row's start, not its end",
      (T_GOLDEN, T_FAST)),
    M("spec_store_row_order", "vta/golden/spec.py",
      'for y, (lo, hi) in enumerate(self.dram_rows("store", index, insn, elem_bytes)):',
      'for y, (lo, hi) in reversed(list(enumerate(self.dram_rows("store", index, insn, '
      'elem_bytes)))):',
      "overlapping STORE rows written last row first (the first row wins)",
      (T_GOLDEN, T_FAST)),
    M("spec_reset_writes_out", "vta/golden/spec.py",
      "                sp.acc[dst] = 0\n",
      "                sp.acc[dst] = 0\n                sp.out[dst] = 0\n",
      "a GEMM reset zeroes OUT too (decision 2: it leaves OUT alone)",
      (T_GOLDEN, T_FAST)),
    M("spec_alu_no_out", "vta/golden/spec.py",
      "            sp.acc[dst] = func(sp.acc[dst], y)\n            sp.out[dst] = sp.acc[dst]"
      ".astype(np.int8)\n",
      "            sp.acc[dst] = func(sp.acc[dst], y)\n",
      "an ALU operation does not write OUT",
      (T_GOLDEN, T_FAST)),
    M("spec_gemm_untransposed", "vta/golden/spec.py",
      "@ sp.wgt[wgt].astype(np.int64).T",
      "@ sp.wgt[wgt].astype(np.int64)",
      "GEMM multiplies by the weight tile, not its transpose (rows are output channels)",
      (T_GOLDEN, T_FAST)),
    M("spec_factors_swapped", "vta/golden/spec.py",
      "yield (u.dst_idx + o * do + i * di,",
      "yield (u.dst_idx + o * di + i * do,",
      "the dst index takes the inner factor on the outer loop and vice versa",
      (T_GOLDEN, T_FAST)),
    M("spec_one_pop_checked", "vta/golden/spec.py",
      "return next((q for q in self.links(engine, insn)[0] if not self.tokens[q]), None)",
      "return next((q for q in self.links(engine, insn)[0][:1] if not self.tokens[q]), None)",
      "an instruction popping two queues waits only for the first",
      (T_GOLDEN, T_FAST)),
    M("spec_turn_order", "vta/golden/spec.py",
      "            for engine in ENGINES:\n                if engine not in heads:",
      "            for engine in reversed(ENGINES):\n                if engine not in heads:",
      "engines take turns store, compute, load instead of load, compute, store",
      (T_FAST, T_GOLDEN)),
    # ------------------------------------------------------------ golden model: fast
    M("golden_token_overflow", "vta/golden/fast/model.py",
      "if tokens[q] >= TOKEN_QUEUE_DEPTH:",
      "if tokens[q] > TOKEN_QUEUE_DEPTH:",
      "token queue holds one token more than the hardware",
      (T_GOLDEN, T_FAST)),
    M("golden_pop_both", "vta/golden/fast/model.py",
      "if pops and not (tokens[pops[0]] and tokens[pops[-1]]):",
      "if pops and not tokens[pops[0]]:",
      "an instruction popping two queues waits only for the first",
      (T_FAST, T_GOLDEN)),
    M("golden_nest_bound", "vta/golden/fast/model.py",
      "            if top >= depths[k]:",
      "            if top > depths[k]:",
      "micro-op index check off by one (index == depth accepted)",
      (T_GOLDEN, T_FAST)),
    M("golden_pad_zero", "vta/golden/fast/model.py",
      """            block = block.reshape(y_total, x_total, lanes)
            block[...] = 0""",
      """            block = block.reshape(y_total, x_total, lanes)""",
      "padded LOAD leaves stale scratchpad data in the pads",
      (T_GOLDEN, T_FAST)),
    M("fast_plain_bus_window", "vta/golden/fast/model.py",
      "                and self.bus_error is None):",
      "                ):",
      "plain LOADs and STOREs (one slice copy) skip the bus-error window",
      (T_FAST,)),
    M("fast_defer_rows", "vta/golden/fast/pending.py",
      "if self.pending is not None and (self.pending[0] != rows",
      "if self.pending is not None and (self.pending[0].start != rows.start",
      "an ALU operation joins the deferred ones on rows starting at the same entry",
      (T_FAST,)),
    M("fast_defer_clip_bounds", "vta/golden/fast/pending.py",
      "ops[-1] = (np.clip, (last[1], imm))",
      "ops[-1] = (np.clip, (imm, last[1]))",
      "MAX a then MIN b deferred as a clip to [b, a]",
      (T_FAST,)),
    M("fast_defer_repeat", "vta/golden/fast/pending.py",
      "if (func, imm) == last and func in (np.minimum, np.maximum):",
      "if (func, imm) == last:",
      "a repeated ADD, MUL or SHR is dropped as if idempotent like MIN and MAX",
      (T_FAST,)),
    M("fast_defer_min_max", "vta/golden/fast/pending.py",
      "if func is np.minimum and last is not None and last[0] is np.maximum:",
      "if func in (np.minimum, np.maximum) and last is not None and last[0] in (np.minimum, "
      "np.maximum):",
      "MIN then MAX deferred as one clip, as MAX then MIN is",
      (T_FAST,)),
    M("fast_gemm_after_out", "vta/golden/fast/plans.py",
      "reset = bool(pending[1])  # then the sums are the new values",
      "reset = True",
      "a GEMM after a deferred OUT write (not a reset) writes its sums instead of adding",
      (T_FAST,)),
    M("fast_reset_drops_pending", "vta/golden/fast/pending.py",
      "        self.settle()\n        self.pending = (rows, [RESET], False)",
      "        self.pending = (rows, [RESET], False)",
      "a deferred reset drops the ALU operations waiting on other entries",
      (T_FAST,)),
    M("fast_out_write_before_stores", "vta/golden/fast/pending.py",
      "        if self.stores is not None:\n            self.flush_stores()\n"
      "        self.out2[rows] = values",
      "        self.out2[rows] = values",
      "OUT written before the STOREs waiting to read it are copied",
      (T_FAST,)),
    M("fast_stores_before_loads", "vta/golden/fast/pending.py",
      "            if loads is not None and loads.dram < run.end and run.dram < loads.end:\n"
      "                self.flush_loads()\n",
      "",
      "STOREs copied before earlier LOADs that read the DRAM bytes they write",
      (T_FAST,)),
    M("fast_gemm_before_loads", "vta/golden/fast/model.py",
      "        if not reset and self.sp.loads is not None:\n            self.sp.flush_loads()",
      "        pass",
      "a GEMM reads INP and WGT before the LOADs waiting to write them are copied",
      (T_FAST,)),
    M("fast_load_run_buffers", "vta/golden/fast/pending.py",
      "if run.sram_bytes is target and run.extend(",
      "if run.extend(",
      "a LOAD of WGT joins the INP LOADs waiting when its bytes continue their pattern",
      (T_FAST,)),
    M("fast_copy_run_dram", "vta/golden/fast/pending.py",
      "        elif (sram != self.sram + count * self.sram_step\n"
      "              or dram != self.dram + count * self.dram_step):",
      "        elif sram != self.sram + count * self.sram_step:",
      "a LOAD or STORE joins a copy run whose DRAM pattern it does not continue",
      (T_FAST,)),
    M("fast_field_shift_carry", "vta/golden/fast/model.py",
      "        if hi + s > mask:\n            return None  # the field would carry into the next\n",
      "",
      "a nest whose field shift carries into the next field is taken as a shifted copy",
      (T_FAST,)),
    M("fast_grid_axis_order", "vta/golden/fast/plans.py",
      "s < 0 or w < 0 or (w == 0 and w_axes):",
      "s < 0 or w < 0:",
      "a grid whose input axis lies outside a weight axis is read as the product table",
      (T_FAST,)),
    M("fast_table_keys", "vta/golden/fast/plans.py",
      "if (x_table == x_table[0]).all() and (w_table == w_table[:, :1]).all():",
      "if (x_table == x_table[0]).all():",
      "GEMM pairs taken as the product table without checking one weight per block",
      (T_FAST,)),
    M("fast_split_last_piece", "vta/golden/fast/model.py",
      "            yield o0, min(step, iter_out - o0), 0, iter_in",
      "            yield o0, step, 0, iter_in",
      "the last piece of a nest split by outer iterations runs a whole step",
      (T_FAST,)),
    M("fast_plan_key", "vta/golden/fast/model.py",
      "key = (kind, loops, shape, offsets)",
      "key = (kind, loops, shape)",
      "ALU plans with a source cached without the distance between dst and src",
      (T_FAST,)),
    M("fast_nest_key", "vta/golden/fast/model.py",
      "key = (kind, iter_out, iter_in, factors, raw.tobytes())",
      "key = (kind, iter_out, iter_in, raw.tobytes())",
      "whole nests remembered without their loop factors",
      (T_FAST,)),
    M("fast_wgt_float_stale", "vta/golden/fast/model.py",
      "        if mem_type == _WGT:\n            self.sp.wgt_float.clear()\n",
      "",
      "float weight matrices kept across a LOAD of WGT",
      (T_FAST,)),
    M("fast_hazard_src", "vta/golden/fast/plans.py",
      "        conflict |= first[src] < steps\n",
      "        pass\n",
      "ALU segments ignore reads of entries written earlier in the same nest",
      (T_FAST, T_GOLDEN)),
    M("fast_consecutive_inner", "vta/golden/fast/plans.py",
      "if n_in > 1 and f_in[col] != 1 or n_out > 1",
      "if n_out > 1",
      "a one-micro-op nest taken as consecutive entries whatever its inner factor",
      (T_FAST,)),
    M("fast_float32_bound", "vta/golden/fast/plans.py",
      "self.ftype = np.float32 if self.k * (1 << 14) < (1 << 24) else np.float64",
      "self.ftype = np.float32 if self.k * (1 << 14) < (1 << 26) else np.float64",
      "GEMM sums in float32 beyond its exact range",
      (T_FAST, T_GOLDEN)),
    M("fast_decode_sign", "vta/golden/fast/decode.py",
      "                        insn[k] -= bit << 1",
      "                        insn[k] -= bit",
      "block decoding sign-extends ALU immediates wrongly",
      (T_FAST,)),
)


# ------------------------------------------------------------------ running
IGNORE = shutil.ignore_patterns(".venv", ".git", "__pycache__", "*.egg-info", ".pytest_cache",
                                ".ruff_cache", "build", "dist")


def scratch_copy(dest: Path) -> Path:
    """The working tree (uncommitted changes included) copied to ``dest``."""
    shutil.copytree(ROOT, dest, ignore=IGNORE, symlinks=True)
    return dest


def apply(tree: Path, m: Mutation) -> str | None:
    """Apply ``m`` in ``tree``; an error text when its anchor is not there exactly once."""
    path = tree / m.file
    text = path.read_text()
    count = text.count(m.find)
    if count != 1:
        return f"stale: pattern found {count} times in {m.file}"
    path.write_text(text.replace(m.find, m.replace))
    return None


def run_pytest(tree: Path, args: tuple[str, ...], env: dict[str, str],
               timeout: float) -> tuple[str, str]:
    """(outcome, detail) of ``pytest args`` in ``tree``: ("pass", ""), ("fail", the first
    failing test), ("invalid", why: the mutated design does not build or import) or
    ("timeout", "")."""
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-rf", *args]
    try:
        proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True,
                              timeout=timeout, start_new_session=True)
    except subprocess.TimeoutExpired:
        return "timeout", ""
    out = proc.stdout + proc.stderr
    if proc.returncode == 5 or "no tests ran" in out:
        raise SystemExit(f"pytest {' '.join(args)} collected no tests:\n{out[-2000:]}")
    if proc.returncode == 0:
        return "pass", ""
    if re.search(r"(verilator|icarus) build of \S+ failed|^E +SyntaxError|ERROR collecting", out,
                 flags=re.M):
        return "invalid", "does not build"
    failed = re.search(r"^FAILED (\S+)", out, flags=re.M)
    return "fail", failed.group(1) if failed else args[0]


def environment(tree: Path, cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree)  # the scratch copy's vta, not the installed one
    env["VTA_CACHE_DIR"] = str(cache)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def check_import(tree: Path, env: dict[str, str]) -> None:
    out = subprocess.run([sys.executable, "-c", "import vta; print(vta.__file__)"], cwd=tree,
                         env=env, capture_output=True, text=True, check=True).stdout.strip()
    if not out.startswith(str(tree)):
        raise SystemExit(f"the scratch tree's vta is not the one imported ({out})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="comma-separated mutation names")
    ap.add_argument("--list", action="store_true", help="list the mutations and exit")
    ap.add_argument("--table", type=Path, help="write the kill table (Markdown) to this file")
    ap.add_argument("--timeout", type=float, default=1800.0,
                    help="seconds one pytest invocation may take (default 1800)")
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "vta-mutate",
                    help="simulator build cache for the mutated trees")
    ap.add_argument("--no-baseline", action="store_true",
                    help="skip checking that every test selection passes unmutated")
    args = ap.parse_args(argv)

    chosen = list(MUTATIONS)
    if args.only:
        names = set(args.only.split(","))
        unknown = names - {m.name for m in MUTATIONS}
        if unknown:
            raise SystemExit(f"unknown mutation(s): {', '.join(sorted(unknown))}")
        chosen = [m for m in MUTATIONS if m.name in names]
    if args.list:
        for m in MUTATIONS:
            print(f"{m.name:28s} {m.file:22s} {m.models}")
        return 0

    rows = []
    with tempfile.TemporaryDirectory(prefix="vta-mutate-") as tmp:
        base = scratch_copy(Path(tmp) / "base")
        env = environment(base, args.cache)
        check_import(base, env)
        if not args.no_baseline:
            for sel in sorted({t for m in chosen for t in m.tests}):
                start = time.monotonic()
                outcome, detail = run_pytest(base, sel, env, args.timeout)
                print(f"baseline {' '.join(sel)}: {outcome} {detail} "
                      f"({time.monotonic() - start:.0f} s)", flush=True)
                if outcome != "pass":
                    raise SystemExit("the unmutated tree must pass every selection first")
        for m in chosen:
            tree = Path(tmp) / m.name
            shutil.copytree(base, tree, symlinks=True)
            start = time.monotonic()
            error = apply(tree, m)
            result = error or "SURVIVED"
            if error is None:
                env = environment(tree, args.cache)
                for sel in m.tests:
                    outcome, detail = run_pytest(tree, sel, env, args.timeout)
                    if outcome == "fail":
                        result = f"killed by `{detail}`"
                    elif outcome == "timeout":
                        result = f"killed (timeout) by {' '.join(sel)}"
                    elif outcome == "invalid":
                        result = f"invalid: {detail}"
                    if outcome != "pass":
                        break
            secs = time.monotonic() - start
            rows.append((m, result, secs))
            print(f"{m.name:28s} {result} ({secs:.0f} s)", flush=True)
            shutil.rmtree(tree, ignore_errors=True)
    killed = sum(r.startswith("killed") for _, r, _ in rows)
    print(f"{killed} of {len(rows)} mutations killed")
    if args.table:
        write_table(args.table, rows)
    return 0 if killed == len(rows) else 1


def write_table(path: Path, rows) -> None:
    """Replace the table between the markers of ``path`` (or write a new file)."""
    lines = ["| mutation | file | the bug it models | result | seconds |",
             "|---|---|---|---|---:|"]
    for m, result, secs in rows:
        lines.append(f"| `{m.name}` | `{m.file}` | {m.models} | {result} | {secs:.0f} |")
    killed = sum(r.startswith("killed") for _, r, _ in rows)
    lines.append("")
    lines.append(f"{killed} of {len(rows)} killed.")
    table = "\n".join(lines)
    begin, end = "<!-- mutate:begin -->", "<!-- mutate:end -->"
    text = path.read_text() if path.exists() else f"{begin}\n{end}\n"
    if begin not in text:
        text += f"\n{begin}\n{end}\n"
    head, rest = text.split(begin, 1)
    tail = rest.split(end, 1)[1]
    path.write_text(f"{head}{begin}\n{table}\n{end}{tail}")


if __name__ == "__main__":
    sys.exit(main())
