`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_dma_wr: the write half of the DRAM master (its one client is the store
 * engine).  A (beat-aligned byte address, beat count) request is cut into
 * AXI4 INCR bursts of at most 256 beats that never cross a 4 KiB boundary;
 * each burst's address goes out first, then its beats from the client data
 * stream (bytes enabled by the client's strobes), WLAST on the last.  Write
 * responses are counted: `idle` is high only when every burst has its B, so
 * the store engine retires an instruction only once its data is in DRAM.
 *
 * The W channel is driven from registers: a beat, once shown with WVALID,
 * keeps its data, strobes and WLAST until WREADY, whatever the client does.
 * At most 2**LOG_OUTSTANDING bursts wait for their response; their addresses
 * are kept, so a write response other than OKAY (SLVERR, DECERR) is reported
 * on `bus_err` with the address of its burst (`bus_err_addr`).
 *
 * `halt` drops the bursts not yet announced; a burst already announced on AW
 * is completed (a beat already shown unchanged, the rest with WSTRB = 0), so
 * every burst on the bus ends with its WLAST and nothing more is written.
 *
 * The next burst (its length, and whether it is the request's last) is computed
 * a cycle ahead into registers, so announcing it only adds and muxes: a request
 * waits one cycle after it is taken, and after a burst is announced its beats
 * keep AW busy for at least a cycle while the next burst is computed.
 */
module vta_dma_wr #(
    // AXI address width.
    parameter ADDR_WIDTH = 32,
    // AXI ID width (AWID is 0).
    parameter ID_WIDTH = 4,
    // log2 of the data-bus width in bits (6..9).
    parameter LOG_BUS_WIDTH = 6,
    // Bits of a request's beat count.
    parameter BEATS_WIDTH = 48,
    // log2 of the bursts that may wait for their write response.
    parameter LOG_OUTSTANDING = 3
) (
    input  wire                        clk,
    input  wire                        rst,
    input  wire                        halt,
    output wire                        idle,
    // a write response with SLVERR/DECERR (one-cycle pulse; not while halted)
    output wire                        bus_err,
    output wire [ADDR_WIDTH-1:0]       bus_err_addr,

    input  wire                        req_valid,
    output wire                        req_ready,
    input  wire [ADDR_WIDTH-1:0]       req_addr,
    input  wire [BEATS_WIDTH-1:0]      req_beats,

    input  wire                        wr_valid,
    output wire                        wr_ready,
    input  wire [(1<<LOG_BUS_WIDTH)-1:0]     wr_data,
    input  wire [(1<<(LOG_BUS_WIDTH-3))-1:0] wr_strb,

    output wire [ID_WIDTH-1:0]         m_axi_awid,
    output wire [ADDR_WIDTH-1:0]       m_axi_awaddr,
    output wire [7:0]                  m_axi_awlen,
    output wire [2:0]                  m_axi_awsize,
    output wire [1:0]                  m_axi_awburst,
    output wire                        m_axi_awlock,
    output wire [3:0]                  m_axi_awcache,
    output wire [2:0]                  m_axi_awprot,
    output wire                        m_axi_awvalid,
    input  wire                        m_axi_awready,
    output wire [(1<<LOG_BUS_WIDTH)-1:0]     m_axi_wdata,
    output wire [(1<<(LOG_BUS_WIDTH-3))-1:0] m_axi_wstrb,
    output wire                        m_axi_wlast,
    output wire                        m_axi_wvalid,
    input  wire                        m_axi_wready,
    input  wire [ID_WIDTH-1:0]         m_axi_bid,
    input  wire [1:0]                  m_axi_bresp,
    input  wire                        m_axi_bvalid,
    output wire                        m_axi_bready
);

localparam LOG_BUS_BYTES = LOG_BUS_WIDTH - 3;
localparam integer SW = 1 << LOG_BUS_BYTES;
localparam PAGE_BEATS = 4096 >> LOG_BUS_BYTES;

initial begin
    if (LOG_BUS_WIDTH < 6 || LOG_BUS_WIDTH > 9) begin
        $display("%m: LOG_BUS_WIDTH must be in 6..9, not %0d", LOG_BUS_WIDTH);
        $finish;
    end
end

reg                   active_reg;
reg [ADDR_WIDTH-1:0]  addr_reg;
reg [BEATS_WIDTH-1:0] rem_reg;
// the next burst from addr_reg / rem_reg, registered: its beats, whether it ends the
// request, and whether they are up to date (active_reg a cycle ago: a cycle after the
// request was taken)
reg [12:0]            burst_reg;
reg                   burst_last_reg;
reg                   burst_ok_reg;
reg                   aw_valid_reg;
reg [ADDR_WIDTH-1:0]  aw_addr_reg;
reg [7:0]             aw_len_reg;
// beats of the announced burst not yet loaded into the W register
reg [8:0]             w_rem_reg;
// the W register
reg                   w_valid_reg;
reg [(1<<LOG_BUS_WIDTH)-1:0] w_data_reg;
reg [SW-1:0]          w_strb_reg;
reg                   w_last_reg;
// bursts waiting for their response, and their addresses (oldest at b_rp_reg)
reg [LOG_OUTSTANDING:0]   b_owed_reg;
reg [ADDR_WIDTH-1:0]      b_addr [0:(1<<LOG_OUTSTANDING)-1];
reg [LOG_OUTSTANDING-1:0] b_wp_reg, b_rp_reg;

assign req_ready = !active_reg && !halt;
assign idle = !active_reg && !aw_valid_reg && w_rem_reg == 9'd0 && !w_valid_reg
              && b_owed_reg == {(LOG_OUTSTANDING+1){1'b0}};

assign m_axi_awid = {ID_WIDTH{1'b0}};
assign m_axi_awaddr = aw_addr_reg;
assign m_axi_awlen = aw_len_reg;
assign m_axi_awsize = LOG_BUS_BYTES[2:0];
assign m_axi_awburst = 2'b01;
assign m_axi_awlock = 1'b0;
assign m_axi_awcache = 4'b0011;
assign m_axi_awprot = 3'b000;
assign m_axi_awvalid = aw_valid_reg;

assign m_axi_wvalid = w_valid_reg;
assign m_axi_wdata = w_data_reg;
assign m_axi_wstrb = w_strb_reg;
assign m_axi_wlast = w_last_reg;
assign m_axi_bready = 1'b1;

// a beat of the announced burst may enter the W register: from the client,
// or (halted) an empty one
wire w_owed = w_rem_reg != 9'd0;
wire w_load = w_owed && (!w_valid_reg || m_axi_wready) && (halt || wr_valid);
assign wr_ready = w_owed && !halt && (!w_valid_reg || m_axi_wready);

// one write ID, so responses come in burst order
wire b_take = m_axi_bvalid && b_owed_reg != {(LOG_OUTSTANDING+1){1'b0}};
assign bus_err = b_take && m_axi_bresp[1] && !halt;
assign bus_err_addr = b_addr[b_rp_reg];
wire _unused_ok = &{1'b0, m_axi_bid, m_axi_bresp[0], 1'b0};

wire [12:0] to_page = PAGE_BEATS[12:0] - {1'b0, addr_reg[11:0] >> LOG_BUS_BYTES};
wire [12:0] cap = (to_page > 13'd256) ? 13'd256 : to_page;
wire        rem_fits = rem_reg <= {{(BEATS_WIDTH-13){1'b0}}, cap};
wire [12:0] burst = rem_fits ? rem_reg[12:0] : cap;

wire b_room = b_owed_reg < (1 << LOG_OUTSTANDING);
// (burst_reg is a cycle old after an announcement too: no announcement can follow in the
// next cycle, as the burst just announced owes at least one beat to the W register)
wire aw_load = active_reg && burst_ok_reg && !halt && !w_owed && b_room
               && (!aw_valid_reg || m_axi_awready);

// (one clocked block, later assignments winning: a simulator such as Icarus pays for
// every variable a block reads, and a combinational next-state block runs on every
// input change)
always @(posedge clk) begin
    if (m_axi_awready) begin
        aw_valid_reg <= 1'b0;
    end
    if (req_valid && req_ready && req_beats != {BEATS_WIDTH{1'b0}}) begin
        active_reg <= 1'b1;
        addr_reg <= req_addr;
        rem_reg <= req_beats;
    end
    if (m_axi_wready) begin
        w_valid_reg <= 1'b0;
    end
    // the W payload: held until WREADY (w_load only when the register is free or taken)
    if (w_load) begin
        w_valid_reg <= 1'b1;
        w_rem_reg <= w_rem_reg - 9'd1;
        w_data_reg <= wr_data;
        w_strb_reg <= halt ? {SW{1'b0}} : wr_strb;
        w_last_reg <= w_rem_reg == 9'd1;
    end
    burst_reg <= burst;
    burst_last_reg <= rem_fits;
    burst_ok_reg <= active_reg;
    if (aw_load) begin
        aw_valid_reg <= 1'b1;
        aw_addr_reg <= addr_reg;
        aw_len_reg <= burst_reg[7:0] - 8'd1;
        w_rem_reg <= burst_reg[8:0];
        addr_reg <= addr_reg + ({{(ADDR_WIDTH-13){1'b0}}, burst_reg} << LOG_BUS_BYTES);
        rem_reg <= rem_reg - {{(BEATS_WIDTH-13){1'b0}}, burst_reg};
        if (burst_last_reg) begin
            active_reg <= 1'b0;
        end
        b_addr[b_wp_reg] <= addr_reg;
        b_wp_reg <= b_wp_reg + 1'b1;
    end
    if (aw_load != b_take) begin
        b_owed_reg <= b_owed_reg + {{LOG_OUTSTANDING{1'b0}}, aw_load}
                      - {{LOG_OUTSTANDING{1'b0}}, b_take};
    end
    if (b_take) begin
        b_rp_reg <= b_rp_reg + 1'b1;
    end
    if (halt) begin
        active_reg <= 1'b0;
    end
    if (rst) begin
        active_reg <= 1'b0;
        burst_ok_reg <= 1'b0;
        aw_valid_reg <= 1'b0;
        w_rem_reg <= 9'd0;
        w_valid_reg <= 1'b0;
        b_owed_reg <= {(LOG_OUTSTANDING+1){1'b0}};
        b_wp_reg <= {LOG_OUTSTANDING{1'b0}};
        b_rp_reg <= {LOG_OUTSTANDING{1'b0}};
    end
end

endmodule

`resetall
