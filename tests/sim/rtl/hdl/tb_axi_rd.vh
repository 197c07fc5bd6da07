// vta_dma_rd with NRD clients on the wrapper's AXI ports (rd_* client buses declared by the includer).
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
// no writes
assign m_axi_awid = {ID_WIDTH{1'b0}};
assign m_axi_awaddr = {ADDR_WIDTH{1'b0}};
assign m_axi_awlen = 8'd0;
assign m_axi_awsize = 3'd0;
assign m_axi_awburst = 2'd1;
assign m_axi_awlock = 1'b0;
assign m_axi_awcache = 4'd0;
assign m_axi_awprot = 3'd0;
assign m_axi_awvalid = 1'b0;
assign m_axi_wdata = {(1<<LOG_BUS_WIDTH){1'b0}};
assign m_axi_wstrb = {(1<<(LOG_BUS_WIDTH-3)){1'b0}};
assign m_axi_wlast = 1'b0;
assign m_axi_wvalid = 1'b0;
assign m_axi_bready = 1'b1;
