"""AWS FPGA targets (F1, F2): the custom-logic wrapper's register map, its HDL
sources and headers, the HDK build, AFI creation and loading (``vta aws ...``).

The host transports live in :mod:`vta.backends.aws` (hardware) and
:mod:`vta.backends.aws_sim` (the wrappers simulated with models of the shell).
"""
