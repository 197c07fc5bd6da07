"""Host driver: the register protocol and device memory management.

One driver (:class:`vta.driver.host.Driver`) talks to every backend through a
small :class:`~vta.driver.transport.Transport` (the contract the transports of
:mod:`vta.backends` implement); the register map it speaks is defined once, in
:mod:`vta.regs`.
"""
