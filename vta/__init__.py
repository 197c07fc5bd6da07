"""vta: a toolkit for the VTA deep-learning accelerator.

Configuration (:class:`Config`), the bit-exact ISA codec (:mod:`vta.isa`), the
NumPy golden model (:mod:`vta.golden`) and the device API (:func:`open_device`).
"""

from . import isa
from ._version import __version__
from .config import Config
from .device import open_device
from .errors import (
    AssemblyError,
    ConfigError,
    DeadlockError,
    DeviceError,
    DeviceTimeoutError,
    EncodingError,
    ErrorCode,
    ExecutionError,
    VTAError,
)

__all__ = [
    "AssemblyError",
    "Config",
    "ConfigError",
    "DeadlockError",
    "DeviceError",
    "DeviceTimeoutError",
    "EncodingError",
    "ErrorCode",
    "ExecutionError",
    "VTAError",
    "__version__",
    "isa",
    "open_device",
]
