`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_monitor: simulation-only watchdog, progress registers and trace writer for
 * vta_top's event pulses (docs/rtl-interface.md, "trace").  Shared by the
 * testbenches sim/vta_tb.v and sim/aws/vta_aws_tb.v.
 *
 *  - watchdog: idle_cycles counts cycles without any dispatch, start or retire,
 *    DRAM beat or micro-op (`beat`: the testbench ORs them) or irq; wd_fire rises
 *    once it reaches wd_limit (0: never)
 *  - progress: the last instruction index fetch dispatched and each engine started
 *    and retired (all ones: none yet); cycle counts rising edges since reset
 *  - trace (when +VTA_TRACE_FILE= is given and trace_en is high):
 *      <cycle> <module> <index> <event>     event: dispatch | start | retire
 *    written at the rising edge that sees the pulse, flushed when irq or wd_fire
 *    rises; vta/driver/rtl.py turns the lines into vta/trace.py records
 */
module vta_monitor (
    input  wire        clk,
    input  wire        rst,

    input  wire        trace_en,
    input  wire [31:0] wd_limit,
    input  wire        wd_clear,
    input  wire        irq,
    input  wire        beat,

    input  wire        evt_fetch_valid,
    input  wire [31:0] evt_fetch_index,
    input  wire        evt_load_start,
    input  wire        evt_load_retire,
    input  wire [31:0] evt_load_index,
    input  wire        evt_compute_start,
    input  wire        evt_compute_retire,
    input  wire [31:0] evt_compute_index,
    input  wire        evt_store_start,
    input  wire        evt_store_retire,
    input  wire [31:0] evt_store_index,

    output reg         wd_fire,
    output reg  [63:0] cycle,
    output reg  [63:0] idle_cycles,
    output reg  [31:0] last_fetch,
    output reg  [31:0] load_started,
    output reg  [31:0] load_retired,
    output reg  [31:0] compute_started,
    output reg  [31:0] compute_retired,
    output reg  [31:0] store_started,
    output reg  [31:0] store_retired
);

// ------------------------------------------------------------ watchdog
wire events = evt_fetch_valid | evt_load_start | evt_load_retire | evt_compute_start
            | evt_compute_retire | evt_store_start | evt_store_retire;
wire activity = events | beat;
always @(posedge clk) begin
    if (rst || wd_clear || activity || irq)
        idle_cycles <= 0;
    else if (!wd_fire)
        idle_cycles <= idle_cycles + 1;
    wd_fire <= !rst && !wd_clear && wd_limit != 0 && idle_cycles >= {32'd0, wd_limit} && !irq;
end

// ------------------------------------------------------------ progress and trace
integer trace_fd;
reg [8*512-1:0] trace_file;
reg irq_q, wd_q;
initial begin
    trace_fd = 0;
    if ($value$plusargs("VTA_TRACE_FILE=%s", trace_file))
        trace_fd = $fopen(trace_file, "w");
    cycle = 0;
    idle_cycles = 0;
    irq_q = 0;
    wd_q = 0;
    wd_fire = 0;
end

always @(posedge clk) begin
    if (rst) begin
        cycle <= 0;
        last_fetch <= 32'hFFFF_FFFF;
        load_started <= 32'hFFFF_FFFF;
        load_retired <= 32'hFFFF_FFFF;
        compute_started <= 32'hFFFF_FFFF;
        compute_retired <= 32'hFFFF_FFFF;
        store_started <= 32'hFFFF_FFFF;
        store_retired <= 32'hFFFF_FFFF;
    end else begin
        cycle <= cycle + 1;
    end
    // (the events looked at only in a cycle that has one: the simulator runs this block
    // every cycle)
    if (!rst && events) begin
        if (evt_fetch_valid) last_fetch <= evt_fetch_index;
        if (evt_load_start) load_started <= evt_load_index;
        if (evt_load_retire) load_retired <= evt_load_index;
        if (evt_compute_start) compute_started <= evt_compute_index;
        if (evt_compute_retire) compute_retired <= evt_compute_index;
        if (evt_store_start) store_started <= evt_store_index;
        if (evt_store_retire) store_retired <= evt_store_index;
        if (trace_fd != 0 && trace_en) begin
            if (evt_fetch_valid)
                $fwrite(trace_fd, "%0d fetch %0d dispatch\n", cycle, evt_fetch_index);
            if (evt_load_start)
                $fwrite(trace_fd, "%0d load %0d start\n", cycle, evt_load_index);
            if (evt_load_retire)
                $fwrite(trace_fd, "%0d load %0d retire\n", cycle, evt_load_index);
            if (evt_compute_start)
                $fwrite(trace_fd, "%0d compute %0d start\n", cycle, evt_compute_index);
            if (evt_compute_retire)
                $fwrite(trace_fd, "%0d compute %0d retire\n", cycle, evt_compute_index);
            if (evt_store_start)
                $fwrite(trace_fd, "%0d store %0d start\n", cycle, evt_store_index);
            if (evt_store_retire)
                $fwrite(trace_fd, "%0d store %0d retire\n", cycle, evt_store_index);
        end
    end
    irq_q <= irq;
    wd_q <= wd_fire;
    if (trace_fd != 0 && ((irq && !irq_q) || (wd_fire && !wd_q)))
        $fflush(trace_fd);
end

endmodule

`resetall
