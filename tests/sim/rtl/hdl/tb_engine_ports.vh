// The ports every engine test wrapper (tb_load, tb_compute, tb_store) shares with its
// engine: clock and reset, run and halt, the command queue's output, the fault report
// and the status events (connected by tb_engine_conns.vh).
    input  wire clk,
    input  wire rst,
    input  wire run,
    input  wire halt,
    input  wire cmd_valid,
    output wire cmd_ready,
    input  wire [159:0] cmd_data,
    output wire err,
    output wire [7:0] err_code,
    output wire [31:0] index,
    output wire evt_start,
    output wire evt_retire,
    output wire idle,
    output wire stall,
    output wire busy,
