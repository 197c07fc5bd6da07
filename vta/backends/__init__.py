"""The backends' transports: what :class:`vta.driver.host.Driver` speaks through.

Each module offers ``open_transport(backend, cfg, **options)`` and is imported
lazily by name (:data:`vta.device.BACKENDS`), so the golden backend works
without cocotb or a simulator installed:

``golden``   the register model over the NumPy golden model
``rtl``      the RTL simulated under Verilator or Icarus (a cocotb process)
``aws``      an AWS F1/F2 instance (PCIe BAR MMIO and card memory)
``aws_sim``  the f1/f2 transport against the simulated AWS wrapper
"""
