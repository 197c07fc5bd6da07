// vta_dma_wr on the wrapper's AXI write ports (tb_axi_ports.vh): its request and data
// buses wr_req_* and wr_* and its idle output wr_idle, declared by the includer.
vta_dma_wr #(.ADDR_WIDTH(ADDR_WIDTH), .ID_WIDTH(ID_WIDTH),
             .LOG_BUS_WIDTH(LOG_BUS_WIDTH), .BEATS_WIDTH(48)) dma_wr (
    .clk(clk), .rst(rst), .halt(halt), .idle(wr_idle),
    .req_valid(wr_req_valid), .req_ready(wr_req_ready), .req_addr(wr_req_addr),
    .req_beats(wr_req_beats),
    .wr_valid(wr_valid), .wr_ready(wr_ready), .wr_data(wr_data), .wr_strb(wr_strb),
    .m_axi_awid(m_axi_awid), .m_axi_awaddr(m_axi_awaddr), .m_axi_awlen(m_axi_awlen),
    .m_axi_awsize(m_axi_awsize), .m_axi_awburst(m_axi_awburst), .m_axi_awlock(m_axi_awlock),
    .m_axi_awcache(m_axi_awcache), .m_axi_awprot(m_axi_awprot), .m_axi_awvalid(m_axi_awvalid),
    .m_axi_awready(m_axi_awready), .m_axi_wdata(m_axi_wdata), .m_axi_wstrb(m_axi_wstrb),
    .m_axi_wlast(m_axi_wlast), .m_axi_wvalid(m_axi_wvalid), .m_axi_wready(m_axi_wready),
    .m_axi_bid(m_axi_bid), .m_axi_bresp(m_axi_bresp), .m_axi_bvalid(m_axi_bvalid),
    .m_axi_bready(m_axi_bready)
);
