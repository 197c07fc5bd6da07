"""Host driver: the register protocol, device memory management and transports.

One driver (:class:`vta.driver.host.Driver`) talks to every backend through a
small :class:`~vta.driver.transport.Transport`; the register map it speaks is
defined once, in :mod:`vta.driver.regs`.
"""
