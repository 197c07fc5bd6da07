`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_regs: the control port, an AXI4-Lite slave (12-bit address, 32-bit
 * data) implementing the register map of vta/regs.py; every offset,
 * error code and module number comes from the generated vta_regs.vh, the
 * counter order from vta_cfg.vh.
 *
 * Run control: CTRL.START (ignored while BUSY) clears DONE/ERROR, the error
 * registers and every counter and raises BUSY at once; the run itself
 * starts (`start` pulse) as soon as the DMA is quiet (`start_ok`, taken
 * through a register so that `halt` and `start` come straight from flip-flops),
 * so a run stopped on a fault can finish its bus transactions first.  While the run
 * goes, the first fault reported on err_* wins: ERROR with module, code and
 * ERR_INDEX; else `run_done` gives DONE.  `halt` (a fault on err_valid or
 * ERROR, or a START not yet started) stops the engines; irq is DONE | ERROR.  CTRL.CLEAR clears DONE,
 * ERROR and ERR_*; the engines stay stopped (`halt`) until the DMA is quiet,
 * so no beat still owed to a stopped run can reach the next one.
 *
 * Counters (64 bits each) add their cnt_inc lane every cycle of a run; the
 * lanes are registered first, so a counter shows a cycle's events one cycle
 * later (the totals are the same).
 * Unmapped and write-only registers read as 0; writes to read-only
 * registers are ignored; every response is OKAY.  A read answers two cycles
 * after its address (registered address, then the register mux).
 */
module vta_regs #(
    parameter LOG_INP_WIDTH = 3,
    parameter LOG_WGT_WIDTH = 3,
    parameter LOG_ACC_WIDTH = 5,
    parameter LOG_BATCH = 0,
    parameter LOG_BLOCK = 4,
    parameter LOG_UOP_BUFF_SIZE = 15,
    parameter LOG_INP_BUFF_SIZE = 15,
    parameter LOG_WGT_BUFF_SIZE = 18,
    parameter LOG_ACC_BUFF_SIZE = 17,
    parameter LOG_BUS_WIDTH = 6,
    // vta.Config.signature, returned by CONFIG_SIG
    parameter [31:0] CONFIG_SIG = 32'd0,
    // number of counters (regs.COUNTERS)
    parameter NUM_COUNTERS = 22
) (
    input  wire        clk,
    input  wire        rst,

    input  wire [11:0] s_axil_awaddr,
    input  wire [2:0]  s_axil_awprot,
    input  wire        s_axil_awvalid,
    output wire        s_axil_awready,
    input  wire [31:0] s_axil_wdata,
    input  wire [3:0]  s_axil_wstrb,
    input  wire        s_axil_wvalid,
    output wire        s_axil_wready,
    output wire [1:0]  s_axil_bresp,
    output wire        s_axil_bvalid,
    input  wire        s_axil_bready,
    input  wire [11:0] s_axil_araddr,
    input  wire [2:0]  s_axil_arprot,
    input  wire        s_axil_arvalid,
    output wire        s_axil_arready,
    output wire [31:0] s_axil_rdata,
    output wire [1:0]  s_axil_rresp,
    output wire        s_axil_rvalid,
    input  wire        s_axil_rready,

    // run control
    output wire [63:0] insn_addr,
    output wire [31:0] insn_count,
    output wire        start,
    output wire        run,
    output wire        halt,
    input  wire        start_ok,
    input  wire        run_done,
    input  wire        err_valid,
    input  wire [3:0]  err_module,
    input  wire [7:0]  err_code,
    input  wire [31:0] err_index,
    input  wire [63:0] err_addr,

    // live status
    input  wire [31:0] tokens,
    input  wire [31:0] fetch_index,
    input  wire [NUM_COUNTERS*32-1:0] cnt_inc,

    output wire        irq
);

`include "vta_regs.vh"

reg        busy_reg, busy_next;
reg        pending_reg, pending_next;    // START seen, run not started yet
reg        done_reg, done_next;
reg        error_reg, error_next;
reg [3:0]  emod_reg, emod_next;
reg [7:0]  ecode_reg, ecode_next;
reg [31:0] eindex_reg, eindex_next;
reg [63:0] eaddr_reg, eaddr_next;
reg [63:0] insn_addr_reg, insn_addr_next;
reg [31:0] insn_count_reg, insn_count_next;
reg        clear_cnt;
// the DMA was quiet last cycle; the counter increments of last cycle, and whether they count
reg        quiet_reg;
reg [NUM_COUNTERS*32-1:0] cnt_inc_reg;
reg        cnt_on_reg;
// error_reg || (!quiet_reg && (pending_reg || !busy_reg)), and run, as flip-flops
reg        halt_base_reg;
reg        running_reg;

reg [63:0] cnt_reg [0:NUM_COUNTERS-1];

// AXI-Lite handshakes
reg        bvalid_reg, bvalid_next;
reg        rvalid_reg, rvalid_next;
reg [31:0] rdata_reg, rdata_next;
// a read takes two cycles: the address is registered, then the register mux
reg        rpend_reg, rpend_next;
reg [11:0] ra_reg;

wire wr = s_axil_awvalid && s_axil_wvalid && !bvalid_reg;
wire rd = s_axil_arvalid && !rvalid_reg && !rpend_reg;

assign s_axil_awready = wr;
assign s_axil_wready = wr;
assign s_axil_bresp = 2'b00;
assign s_axil_bvalid = bvalid_reg;
assign s_axil_arready = rd;
assign s_axil_rdata = rdata_reg;
assign s_axil_rresp = 2'b00;
assign s_axil_rvalid = rvalid_reg;

assign insn_addr = insn_addr_reg;
assign insn_count = insn_count_reg;
assign start = busy_reg && pending_reg && quiet_reg;
assign run = busy_reg && !pending_reg;
// engines stay stopped after a fault, and until the run really starts: while
// the DMA still drains a stopped run, START waits (pending) and so does CLEAR
// (the DMA, halted, stays quiet once it is: quiet_reg one cycle late is safe)
// (a fault arriving on err_valid, itself from a register, halts at once; the
// rest of `halt` and a copy of `run` are computed into flip-flops, so halt is
// one gate deep)
assign halt = halt_base_reg || (running_reg && err_valid);
assign irq = done_reg || error_reg;

wire [31:0] status = {16'd0, ecode_reg, emod_reg, 1'b0, error_reg, done_reg, busy_reg};
wire [31:0] config0 = {8'd0, LOG_BUS_WIDTH[3:0], LOG_BLOCK[3:0], LOG_BATCH[3:0],
                       LOG_ACC_WIDTH[3:0], LOG_WGT_WIDTH[3:0], LOG_INP_WIDTH[3:0]};
wire [31:0] config1 = {LOG_ACC_BUFF_SIZE[7:0], LOG_WGT_BUFF_SIZE[7:0],
                       LOG_INP_BUFF_SIZE[7:0], LOG_UOP_BUFF_SIZE[7:0]};

// register read mux
wire [11:0] ra = {ra_reg[11:2], 2'b00};
wire [11:0] cnt_off = ra - `VTA_REG_CYCLES;
wire [8:0]  cnt_sel = cnt_off[11:3];
wire        cnt_hit = ra >= `VTA_REG_CYCLES && cnt_sel < NUM_COUNTERS;
wire [63:0] cnt_val = cnt_reg[cnt_sel[$clog2(NUM_COUNTERS)-1:0]];
reg  [31:0] rmux;
always @* begin
    rmux = 32'd0;
    case (ra)
        `VTA_REG_STATUS:       rmux = status;
        `VTA_REG_ERR_INDEX:    rmux = eindex_reg;
        `VTA_REG_ERR_ADDR:     rmux = eaddr_reg[31:0];
        `VTA_REG_ERR_ADDR_HI:  rmux = eaddr_reg[63:32];
        `VTA_REG_INSN_ADDR:    rmux = insn_addr_reg[31:0];
        `VTA_REG_INSN_ADDR_HI: rmux = insn_addr_reg[63:32];
        `VTA_REG_INSN_COUNT:   rmux = insn_count_reg;
        `VTA_REG_ID:           rmux = `VTA_ID_MAGIC;
        `VTA_REG_HW_VERSION:   rmux = `VTA_HW_VERSION;
        `VTA_REG_CONFIG_SIG:   rmux = CONFIG_SIG;
        `VTA_REG_CONFIG0:      rmux = config0;
        `VTA_REG_CONFIG1:      rmux = config1;
        `VTA_REG_TOKENS:       rmux = tokens;
        `VTA_REG_FETCH_INDEX:  rmux = fetch_index;
        default: begin
            if (cnt_hit) begin
                rmux = cnt_off[2] ? cnt_val[63:32] : cnt_val[31:0];
            end
        end
    endcase
end

wire [11:0] wa = {s_axil_awaddr[11:2], 2'b00};
// word registers only; protection is not checked
wire _unused_ok = &{1'b0, s_axil_awaddr[1:0], ra_reg[1:0], s_axil_awprot,
                    s_axil_arprot, cnt_off[1:0], 1'b0};
// byte-enable merge of a write into a 32-bit value
function [31:0] merge;
    input [31:0] old;
    input [31:0] data;
    input [3:0]  strb;
    integer b;
    begin
        for (b = 0; b < 4; b = b + 1) begin
            merge[b*8 +: 8] = strb[b] ? data[b*8 +: 8] : old[b*8 +: 8];
        end
    end
endfunction

always @* begin
    busy_next = busy_reg;
    pending_next = pending_reg;
    done_next = done_reg;
    error_next = error_reg;
    emod_next = emod_reg;
    ecode_next = ecode_reg;
    eindex_next = eindex_reg;
    eaddr_next = eaddr_reg;
    insn_addr_next = insn_addr_reg;
    insn_count_next = insn_count_reg;
    bvalid_next = bvalid_reg && !s_axil_bready;
    rvalid_next = rvalid_reg && !s_axil_rready;
    rpend_next = rpend_reg;
    rdata_next = rdata_reg;
    clear_cnt = 1'b0;

    // run progress
    if (start) begin
        pending_next = 1'b0;
    end
    if (run) begin
        if (err_valid) begin
            busy_next = 1'b0;
            error_next = 1'b1;
            emod_next = err_module;
            ecode_next = err_code;
            eindex_next = err_index;
            eaddr_next = err_addr;
        end else if (run_done) begin
            busy_next = 1'b0;
            done_next = 1'b1;
        end
    end

    // register writes
    if (wr) begin
        bvalid_next = 1'b1;
        case (wa)
            `VTA_REG_INSN_ADDR: insn_addr_next[31:0] = merge(insn_addr_reg[31:0], s_axil_wdata, s_axil_wstrb);
            `VTA_REG_INSN_ADDR_HI: insn_addr_next[63:32] = merge(insn_addr_reg[63:32], s_axil_wdata, s_axil_wstrb);
            `VTA_REG_INSN_COUNT: insn_count_next = merge(insn_count_reg, s_axil_wdata, s_axil_wstrb);
            `VTA_REG_CTRL: begin
                if (s_axil_wstrb[0] && s_axil_wdata[1] && !busy_reg) begin
                    done_next = 1'b0;
                    error_next = 1'b0;
                    emod_next = 4'd0;
                    ecode_next = 8'd0;
                    eindex_next = 32'd0;
                    eaddr_next = 64'd0;
                end
                if (s_axil_wstrb[0] && s_axil_wdata[0] && !busy_reg) begin
                    busy_next = 1'b1;
                    pending_next = 1'b1;
                    done_next = 1'b0;
                    error_next = 1'b0;
                    emod_next = 4'd0;
                    ecode_next = 8'd0;
                    eindex_next = 32'd0;
                    eaddr_next = 64'd0;
                    clear_cnt = 1'b1;
                end
            end
            default: begin
            end
        endcase
    end

    if (rd) begin
        rpend_next = 1'b1;
    end
    if (rpend_reg) begin
        rpend_next = 1'b0;
        rvalid_next = 1'b1;
        rdata_next = rmux;
    end
end

// one clocked block per counter, its lane a wire (a simulator such as Icarus runs every
// clocked block each cycle and pays for each variable it reads there: a loop over the
// counters would read the loop index and the whole cnt_inc vector once per counter)
wire cnt_clear = clear_cnt || rst;
genvar gk;
generate
    for (gk = 0; gk < NUM_COUNTERS; gk = gk + 1) begin : counter
        wire [31:0] inc = cnt_inc_reg[gk*32 +: 32];
        always @(posedge clk) begin
            if (cnt_clear) begin
                cnt_reg[gk] <= 64'd0;
            end else if (cnt_on_reg) begin
                cnt_reg[gk] <= cnt_reg[gk] + {32'd0, inc};
            end
        end
    end
endgenerate

always @(posedge clk) begin
    halt_base_reg <= error_next || (!start_ok && (pending_next || !busy_next));
    running_reg <= busy_next && !pending_next;
    quiet_reg <= start_ok;
    cnt_inc_reg <= cnt_inc;
    cnt_on_reg <= busy_reg && !clear_cnt;
    if (rst) begin
        halt_base_reg <= 1'b1;
        running_reg <= 1'b0;
        quiet_reg <= 1'b0;
        cnt_on_reg <= 1'b0;
    end
end

always @(posedge clk) begin
    busy_reg <= busy_next;
    pending_reg <= pending_next;
    done_reg <= done_next;
    error_reg <= error_next;
    emod_reg <= emod_next;
    ecode_reg <= ecode_next;
    eindex_reg <= eindex_next;
    eaddr_reg <= eaddr_next;
    insn_addr_reg <= insn_addr_next;
    insn_count_reg <= insn_count_next;
    bvalid_reg <= bvalid_next;
    rvalid_reg <= rvalid_next;
    rpend_reg <= rpend_next;
    if (rd) begin
        ra_reg <= s_axil_araddr;
    end
    rdata_reg <= rdata_next;
    if (rst) begin
        busy_reg <= 1'b0;
        pending_reg <= 1'b0;
        done_reg <= 1'b0;
        error_reg <= 1'b0;
        emod_reg <= 4'd0;
        ecode_reg <= 8'd0;
        eindex_reg <= 32'd0;
        eaddr_reg <= 64'd0;
        insn_addr_reg <= 64'd0;
        insn_count_reg <= 32'd0;
        bvalid_reg <= 1'b0;
        rvalid_reg <= 1'b0;
        rpend_reg <= 1'b0;
        rdata_reg <= 32'd0;
    end
end

endmodule

`resetall
