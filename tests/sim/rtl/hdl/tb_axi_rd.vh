// vta_dma_rd with NRD clients (a localparam of the includer) on the wrapper's AXI read
// ports (tb_axi_ports.vh): the clients' buses rd_*, its idle output rd_idle.
wire [NRD-1:0] rd_req_valid, rd_req_ready, rd_valid, rd_ready;
wire [NRD*ADDR_WIDTH-1:0] rd_req_addr;
wire [NRD*48-1:0] rd_req_beats;
wire [(1<<LOG_BUS_WIDTH)-1:0] rd_data;

vta_dma_rd #(.N(NRD), .ADDR_WIDTH(ADDR_WIDTH), .ID_WIDTH(ID_WIDTH),
             .LOG_BUS_WIDTH(LOG_BUS_WIDTH), .BEATS_WIDTH(48)) dma_rd (
    .clk(clk), .rst(rst), .halt(halt), .idle(rd_idle),
    .req_valid(rd_req_valid), .req_ready(rd_req_ready), .req_addr(rd_req_addr),
    .req_beats(rd_req_beats), .rd_valid(rd_valid), .rd_ready(rd_ready), .rd_data(rd_data),
    .m_axi_arid(m_axi_arid), .m_axi_araddr(m_axi_araddr), .m_axi_arlen(m_axi_arlen),
    .m_axi_arsize(m_axi_arsize), .m_axi_arburst(m_axi_arburst), .m_axi_arlock(m_axi_arlock),
    .m_axi_arcache(m_axi_arcache), .m_axi_arprot(m_axi_arprot), .m_axi_arvalid(m_axi_arvalid),
    .m_axi_arready(m_axi_arready), .m_axi_rid(m_axi_rid), .m_axi_rdata(m_axi_rdata),
    .m_axi_rresp(m_axi_rresp), .m_axi_rlast(m_axi_rlast), .m_axi_rvalid(m_axi_rvalid),
    .m_axi_rready(m_axi_rready)
);
