"""Python tools over the HDL: simulator builds, generated headers, synthesis, waveforms.

``build``   compiles a design under Verilator or Icarus for cocotb, cached by content
``hdlgen``  the Verilog headers and top parameters generated from the configuration,
            the ISA tables and the register map
``synth``   yosys synthesis figures (resources, block RAMs, LUT levels)
``waves``   waveform windows cut from a simulation's FST

Not to be confused with the repository's ``sim/`` folder (the HDL testbench and the
cocotb harness, carried in the wheel as ``vta/sim_assets``).
"""
