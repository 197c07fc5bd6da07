"""The transport contract: the only way the host driver reaches a device.

A backend is a Transport: 32-bit control-register access and device-memory
access.  Everything else -- allocation, the run protocol, identification,
counters, error decoding -- lives once in :class:`vta.driver.host.Driver`.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence


class Transport(abc.ABC):
    """Minimal device access.

    Attributes
    ----------
    name : str
        Backend name ("golden", "verilator", "icarus", "f1", "f2").
    mem_size : int
        Bytes of device memory addressable from 0.
    """

    name: str = "transport"
    mem_size: int = 0

    @abc.abstractmethod
    def read32(self, offset: int) -> int:
        """Read the 32-bit control register at byte ``offset``."""

    def read32_many(self, offsets: Sequence[int]) -> list[int]:
        """Read the 32-bit registers at ``offsets``, in order.

        One :meth:`read32` each by default; a transport for which a request costs
        more than the read itself (a simulator behind a socket) reads them in one.
        """
        return [self.read32(offset) for offset in offsets]

    @abc.abstractmethod
    def write32(self, offset: int, value: int) -> None:
        """Write the 32-bit control register at byte ``offset``."""

    @abc.abstractmethod
    def mem_write(self, addr: int, data: bytes | bytearray | memoryview) -> None:
        """Copy ``data`` into device memory at byte address ``addr``."""

    @abc.abstractmethod
    def mem_read(self, addr: int, nbytes: int) -> bytes:
        """Copy ``nbytes`` of device memory from byte address ``addr``."""

    def wait_idle(self, timeout: float) -> None:  # noqa: B027 (optional hook)
        """Optionally block until the device is no longer busy (or ``timeout`` s pass).

        The driver still reads STATUS afterwards; a transport that can wait more
        cheaply than register polling (a simulator running to completion)
        overrides this.  The default does nothing and the driver polls.
        """

    def close(self) -> None:  # noqa: B027
        """Release the device (end a simulator process, unmap BARs)."""
