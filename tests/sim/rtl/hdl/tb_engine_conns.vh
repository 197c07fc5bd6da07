// An engine instance's connections to the ports of tb_engine_ports.vh.
    .clk(clk), .rst(rst), .run(run), .halt(halt),
    .cmd_valid(cmd_valid), .cmd_ready(cmd_ready), .cmd_data(cmd_data),
    .err(err), .err_code(err_code), .index(index), .evt_start(evt_start),
    .evt_retire(evt_retire), .idle(idle), .stall(stall), .busy(busy),
