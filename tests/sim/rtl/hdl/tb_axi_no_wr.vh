// The wrapper's AXI write ports (tb_axi_ports.vh) idle: a wrapper that only reads.
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
