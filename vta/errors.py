"""The exception hierarchy of the toolkit.

Every error the toolkit raises on purpose derives from :class:`VTAError`.  The
subclasses that describe a wrong *value* also derive from :class:`ValueError`,
so code that only knows the standard library can still catch them.  Messages say
what must hold and what was given; the CLI is the only layer that turns them
into ``click.ClickException``.
"""

from __future__ import annotations


class VTAError(Exception):
    """Base class of every error raised by the vta toolkit."""


class ConfigError(VTAError, ValueError):
    """An invalid configuration: names the key and the offending value."""


class EncodingError(VTAError, ValueError):
    """An instruction or micro-op field value that does not fit its field."""


class AssemblyError(VTAError, ValueError):
    """Text that the assembler cannot parse: names the line and the token."""


class ExecutionError(VTAError):
    """A program fault found while executing a stream.

    Attributes
    ----------
    module : str
        ``"fetch"``, ``"load"``, ``"compute"`` or ``"store"``.
    index : int or None
        Index of the faulting instruction in the stream.
    field : str or None
        The instruction field (or resource) that is wrong.
    """

    def __init__(self, message: str, *, module: str, index: int | None = None,
                 field: str | None = None):
        super().__init__(message)
        self.module = module
        self.index = index
        self.field = field


class DeadlockError(VTAError):
    """A stream whose dependency tokens can never be satisfied.

    ``stuck`` maps each blocked module name to ``(instruction index, queue name)``.
    """

    def __init__(self, message: str, *, stuck: dict[str, tuple[int, str]]):
        super().__init__(message)
        self.stuck = stuck


class DeviceError(VTAError):
    """A device-level failure: bad buffer access, exhaustion, error status."""


class DeviceTimeoutError(DeviceError, TimeoutError):
    """The device did not report done within the allowed time."""
