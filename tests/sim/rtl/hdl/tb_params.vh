// The parameters of every engine test wrapper: vta_top's configuration (the test passes
// hdlgen.top_parameters of its preset, without CONFIG_SIG).
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
    parameter ADDR_WIDTH = 32,
    parameter ID_WIDTH = 4,
    parameter [63:0] MEM_SIZE = 64'h100000
