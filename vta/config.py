"""VTA configuration: one object from which every width and depth is derived.

The keys are those of upstream ``vta_config.json`` (``LOG_INP_WIDTH`` ...
``LOG_ACC_BUFF_SIZE``) plus ``LOG_BUS_WIDTH``, the log2 of the DRAM data-bus
width in bits (upstream keeps it in ``pkg_config.py``; 6, a 64-bit bus, when a
file omits it).  Everything else -- element sizes, buffer depths, instruction
field widths -- is computed here and nowhere else.
"""

from __future__ import annotations

import difflib
import json
import zlib
from dataclasses import dataclass, field, fields
from importlib import resources
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .isa import check_layouts

#: Keys every configuration must give, in upstream's order.
REQUIRED_KEYS = (
    "LOG_INP_WIDTH",
    "LOG_WGT_WIDTH",
    "LOG_ACC_WIDTH",
    "LOG_BATCH",
    "LOG_BLOCK",
    "LOG_UOP_BUFF_SIZE",
    "LOG_INP_BUFF_SIZE",
    "LOG_WGT_BUFF_SIZE",
    "LOG_ACC_BUFF_SIZE",
)

#: Inclusive ranges accepted for each key.  Data widths are fixed at the widths
#: the golden model, the runtime and the RTL implement (int8 in, int32 acc).
KEY_RANGES: dict[str, tuple[int, int]] = {
    "LOG_INP_WIDTH": (3, 3),
    "LOG_WGT_WIDTH": (3, 3),
    "LOG_ACC_WIDTH": (5, 5),
    "LOG_BATCH": (0, 4),
    "LOG_BLOCK": (1, 6),
    "LOG_UOP_BUFF_SIZE": (2, 24),
    "LOG_INP_BUFF_SIZE": (0, 30),
    "LOG_WGT_BUFF_SIZE": (0, 30),
    "LOG_ACC_BUFF_SIZE": (0, 30),
    "LOG_BUS_WIDTH": (6, 9),
}

SUPPORTED_HW_VER = "0.0.2"

# Fixed ISA constants (hw_spec_const.h).
INS_WIDTH = 128
UOP_WIDTH = 32
LOG_UOP_WIDTH = 5
SRAM_ADDR_BITS = 16
LOOP_ITER_BITS = 14

#: Capacity of each dependency-token queue (l2g, g2l, g2s, s2g); a push onto a
#: full queue is an error (decision 7), in the golden model and the RTL alike.
TOKEN_QUEUE_DEPTH = 512

PRESETS = ("default", "tiny", "aws", "aws32")


@dataclass(frozen=True)
class Config:
    """One VTA configuration.

    Construct with :meth:`load`, :meth:`from_dict` or keyword arguments (the
    upstream key names); construction validates, so a ``Config`` object is
    always usable.
    """

    LOG_INP_WIDTH: int = 3
    LOG_WGT_WIDTH: int = 3
    LOG_ACC_WIDTH: int = 5
    LOG_BATCH: int = 0
    LOG_BLOCK: int = 4
    LOG_UOP_BUFF_SIZE: int = 15
    LOG_INP_BUFF_SIZE: int = 15
    LOG_WGT_BUFF_SIZE: int = 18
    LOG_ACC_BUFF_SIZE: int = 17
    LOG_BUS_WIDTH: int = 6
    TARGET: str = "sim"
    HW_VER: str = SUPPORTED_HW_VER
    name: str = field(default="custom", compare=False)

    # ------------------------------------------------------------------ loading
    @classmethod
    def load(cls, name_or_path: str | Path = "default") -> Config:
        """Load a shipped preset by name, or a ``vta_config.json`` by path."""
        text = str(name_or_path)
        if text in PRESETS:
            raw = resources.files("vta.presets").joinpath(f"{text}.json").read_text()
            source = f"preset {text!r}"
            name = text
        else:
            path = Path(text)
            try:
                raw = path.read_text() if path.is_file() else None
            except (OSError, UnicodeDecodeError):  # a name too long, unreadable, binary
                raw = None
            if raw is None:
                raise ConfigError(
                    f"configuration must be a preset name ({', '.join(PRESETS)}) or the path "
                    f"of a vta_config.json file, not {text!r}"
                )
            source = str(path)
            name = path.stem
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{source}: not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: must hold a JSON object, not {type(data).__name__}")
        return cls.from_dict(data, name=name, source=source)

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, name: str = "custom",
                  source: str = "configuration") -> Config:
        """Build from a mapping with upstream key names.

        Base keys (:data:`BASE_KEYS`) make the configuration.  Derived keys
        (:data:`DERIVED_KEYS`, e.g. ``BUS_WIDTH`` or ``INP_BUFF_DEPTH``, as
        ``vta config --json`` writes them) are checked against the value the
        base keys give: one that contradicts them is an error, since it would
        otherwise be silently ignored.  Any other key is an error naming the
        closest valid key (``LOG_BUS_WIDHT`` -> ``LOG_BUS_WIDTH``), except the
        keys of :data:`IGNORED_KEYS`.
        """
        unknown = [k for k in data if k not in BASE_KEYS and k not in DERIVED_KEYS
                   and k not in IGNORED_KEYS]
        if unknown:
            key = unknown[0]
            close = difflib.get_close_matches(str(key), [*BASE_KEYS, *DERIVED_KEYS], n=1)
            hint = (f"did you mean {close[0]!r}?" if close
                    else "valid keys are " + ", ".join(BASE_KEYS))
            raise ConfigError(f"{source}: unknown key {key!r}; {hint}")
        missing = [k for k in REQUIRED_KEYS if k not in data]
        if missing:
            raise ConfigError(f"{source}: missing key {missing[0]!r}")
        for side in ("LOG_BLOCK_IN", "LOG_BLOCK_OUT"):
            if side in data and data[side] != data["LOG_BLOCK"]:
                raise ConfigError(
                    f"{source}: {side} must equal LOG_BLOCK ({data['LOG_BLOCK']!r}), "
                    f"not {data[side]!r}"
                )
        kwargs = {k: data[k] for k in BASE_KEYS if k in data and k != "name"}
        try:
            cfg = cls(**kwargs, name=name)
        except ConfigError as exc:
            raise ConfigError(f"{source}: {exc}") from None
        for key in DERIVED_KEYS:
            if key in data:
                want = cfg.derived(key)
                if data[key] != want or isinstance(data[key], bool):
                    raise ConfigError(
                        f"{source}: {key} is {data[key]!r}, but the base keys give {want!r}; "
                        f"derived keys are computed, not read: change the LOG_* keys instead")
        return cfg

    def __post_init__(self) -> None:
        for key, (lo, hi) in KEY_RANGES.items():
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"{key} must be an integer, not {value!r}")
            if not lo <= value <= hi:
                raise ConfigError(f"{key} must be in {lo}..{hi}, not {value!r}")
        if self.HW_VER != SUPPORTED_HW_VER:
            raise ConfigError(f"HW_VER must be {SUPPORTED_HW_VER!r}, not {self.HW_VER!r}")
        if not isinstance(self.TARGET, str):
            raise ConfigError(f"TARGET must be a string, not {self.TARGET!r}")
        for mem in ("UOP", "INP", "WGT", "ACC"):
            depth_log = getattr(self, f"LOG_{mem}_BUFF_DEPTH")
            key = f"LOG_{mem}_BUFF_SIZE"
            if depth_log < 1:
                raise ConfigError(
                    f"{key} = {getattr(self, key)} gives a {mem} buffer of fewer than two "
                    f"{self.elem_bytes_of(mem)}-byte elements; it must be at least "
                    f"{getattr(self, key) - depth_log + 1}"
                )
            if depth_log > SRAM_ADDR_BITS:
                raise ConfigError(
                    f"{key} = {getattr(self, key)} gives the {mem} buffer a depth of "
                    f"2**{depth_log}, beyond "
                    f"the 16-bit sram_base field; it must be at most "
                    f"{getattr(self, key) - depth_log + SRAM_ADDR_BITS}"
                )
        if self.LOG_OUT_BUFF_DEPTH > SRAM_ADDR_BITS:
            raise ConfigError("the OUT buffer depth exceeds the 16-bit sram_base field")
        # Instruction and micro-op layouts must fit; isa computes and checks them.
        check_layouts(self)

    # ---------------------------------------------------------------- widths
    @property
    def LOG_OUT_WIDTH(self) -> int:  # noqa: N802 (upstream names)
        return self.LOG_INP_WIDTH

    @property
    def LOG_BLOCK_IN(self) -> int:  # noqa: N802
        return self.LOG_BLOCK

    @property
    def LOG_BLOCK_OUT(self) -> int:  # noqa: N802
        return self.LOG_BLOCK

    @property
    def LOG_OUT_BUFF_SIZE(self) -> int:  # noqa: N802
        return self.LOG_ACC_BUFF_SIZE + self.LOG_OUT_WIDTH - self.LOG_ACC_WIDTH

    INP_WIDTH = property(lambda self: 1 << self.LOG_INP_WIDTH)
    WGT_WIDTH = property(lambda self: 1 << self.LOG_WGT_WIDTH)
    ACC_WIDTH = property(lambda self: 1 << self.LOG_ACC_WIDTH)
    OUT_WIDTH = property(lambda self: 1 << self.LOG_OUT_WIDTH)
    BATCH = property(lambda self: 1 << self.LOG_BATCH)
    BLOCK = property(lambda self: 1 << self.LOG_BLOCK)
    BLOCK_IN = property(lambda self: 1 << self.LOG_BLOCK)
    BLOCK_OUT = property(lambda self: 1 << self.LOG_BLOCK)
    BUS_WIDTH = property(lambda self: 1 << self.LOG_BUS_WIDTH)
    BUS_BYTES = property(lambda self: (1 << self.LOG_BUS_WIDTH) // 8)

    # buffer sizes in bytes
    UOP_BUFF_SIZE = property(lambda self: 1 << self.LOG_UOP_BUFF_SIZE)
    INP_BUFF_SIZE = property(lambda self: 1 << self.LOG_INP_BUFF_SIZE)
    WGT_BUFF_SIZE = property(lambda self: 1 << self.LOG_WGT_BUFF_SIZE)
    ACC_BUFF_SIZE = property(lambda self: 1 << self.LOG_ACC_BUFF_SIZE)
    OUT_BUFF_SIZE = property(lambda self: 1 << self.LOG_OUT_BUFF_SIZE)

    # matrix (element) widths in bits
    INP_MATRIX_WIDTH = property(lambda self: self.INP_WIDTH * self.BATCH * self.BLOCK_IN)
    WGT_MATRIX_WIDTH = property(lambda self: self.WGT_WIDTH * self.BLOCK_OUT * self.BLOCK_IN)
    ACC_MATRIX_WIDTH = property(lambda self: self.ACC_WIDTH * self.BATCH * self.BLOCK_OUT)
    OUT_MATRIX_WIDTH = property(lambda self: self.OUT_WIDTH * self.BATCH * self.BLOCK_OUT)

    # element sizes in bytes
    INS_ELEM_BYTES = property(lambda self: INS_WIDTH // 8)
    UOP_ELEM_BYTES = property(lambda self: UOP_WIDTH // 8)
    INP_ELEM_BYTES = property(lambda self: self.INP_MATRIX_WIDTH // 8)
    WGT_ELEM_BYTES = property(lambda self: self.WGT_MATRIX_WIDTH // 8)
    ACC_ELEM_BYTES = property(lambda self: self.ACC_MATRIX_WIDTH // 8)
    OUT_ELEM_BYTES = property(lambda self: self.OUT_MATRIX_WIDTH // 8)

    # buffer depths (log2 and entries)
    LOG_UOP_BUFF_DEPTH = property(lambda self: self.LOG_UOP_BUFF_SIZE - LOG_UOP_WIDTH + 3)
    LOG_INP_BUFF_DEPTH = property(lambda self: self.LOG_INP_BUFF_SIZE + 3 - (
        self.LOG_BATCH + self.LOG_BLOCK + self.LOG_INP_WIDTH))
    LOG_WGT_BUFF_DEPTH = property(lambda self: self.LOG_WGT_BUFF_SIZE + 3 - (
        2 * self.LOG_BLOCK + self.LOG_WGT_WIDTH))
    LOG_ACC_BUFF_DEPTH = property(lambda self: self.LOG_ACC_BUFF_SIZE + 3 - (
        self.LOG_BATCH + self.LOG_BLOCK + self.LOG_ACC_WIDTH))
    LOG_OUT_BUFF_DEPTH = property(lambda self: self.LOG_OUT_BUFF_SIZE + 3 - (
        self.LOG_BATCH + self.LOG_BLOCK + self.LOG_OUT_WIDTH))
    UOP_BUFF_DEPTH = property(lambda self: 1 << self.LOG_UOP_BUFF_DEPTH)
    INP_BUFF_DEPTH = property(lambda self: 1 << self.LOG_INP_BUFF_DEPTH)
    WGT_BUFF_DEPTH = property(lambda self: 1 << self.LOG_WGT_BUFF_DEPTH)
    ACC_BUFF_DEPTH = property(lambda self: 1 << self.LOG_ACC_BUFF_DEPTH)
    OUT_BUFF_DEPTH = property(lambda self: 1 << self.LOG_OUT_BUFF_DEPTH)

    # matrix-to-AXI-bus ratios (may be fractional when the bus is wider)
    INP_MAT_AXI_RATIO = property(lambda self: self.INP_MATRIX_WIDTH / self.BUS_WIDTH)
    WGT_MAT_AXI_RATIO = property(lambda self: self.WGT_MATRIX_WIDTH / self.BUS_WIDTH)
    ACC_MAT_AXI_RATIO = property(lambda self: self.ACC_MATRIX_WIDTH / self.BUS_WIDTH)
    OUT_MAT_AXI_RATIO = property(lambda self: self.OUT_MATRIX_WIDTH / self.BUS_WIDTH)

    # ------------------------------------------------------------- helpers
    def elem_bytes_of(self, mem: str) -> int:
        """Bytes of one element of buffer ``mem`` ("UOP", "INP", "WGT", "ACC", "OUT")."""
        return getattr(self, f"{mem}_ELEM_BYTES")

    def depth_of(self, mem: str) -> int:
        """Entries in buffer ``mem`` ("UOP", "INP", "WGT", "ACC", "OUT")."""
        return getattr(self, f"{mem}_BUFF_DEPTH")

    @property
    def bitstream(self) -> str:
        """Upstream's bitstream string, e.g. ``1x16_i8w8a32_15_15_18_17``."""
        return (
            f"{self.BATCH}x{self.BLOCK}_i{self.INP_WIDTH}w{self.WGT_WIDTH}a{self.ACC_WIDTH}"
            f"_{self.LOG_UOP_BUFF_SIZE}_{self.LOG_INP_BUFF_SIZE}_{self.LOG_WGT_BUFF_SIZE}"
            f"_{self.LOG_ACC_BUFF_SIZE}"
        )

    @property
    def model(self) -> str:
        """Upstream's MODEL string: ``TARGET_bitstream``."""
        return f"{self.TARGET}_{self.bitstream}"

    @property
    def signature(self) -> int:
        """32-bit signature of every parameter the hardware depends on.

        The identification register carries it, so a driver can tell whether a
        device was built for this configuration.
        """
        return zlib.crc32(f"{self.bitstream}_b{self.BUS_WIDTH}".encode())

    def derived(self, key: str) -> Any:
        """The value of derived key ``key`` (:data:`DERIVED_KEYS`) as ``describe`` gives it."""
        if key == "signature":
            return f"0x{self.signature:08x}"
        return getattr(self, key)

    def to_dict(self) -> dict[str, Any]:
        """The configuration as upstream-style JSON keys."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "name"}

    def describe(self) -> dict[str, Any]:
        """Keys plus the main derived constants, for display."""
        out = self.to_dict()
        for key in ("BATCH", "BLOCK_IN", "BLOCK_OUT", "BUS_WIDTH", "UOP_BUFF_DEPTH",
                    "INP_BUFF_DEPTH", "WGT_BUFF_DEPTH", "ACC_BUFF_DEPTH", "OUT_BUFF_DEPTH",
                    "INP_ELEM_BYTES", "WGT_ELEM_BYTES", "ACC_ELEM_BYTES", "OUT_ELEM_BYTES"):
            out[key] = getattr(self, key)
        out["bitstream"] = self.bitstream
        out["signature"] = f"0x{self.signature:08x}"
        return out

    def diff(self, other: Config) -> list[str]:
        """Human-readable differences ``"KEY: self -> other"`` against ``other``."""
        return [
            f"{f.name}: {getattr(self, f.name)!r} vs {getattr(other, f.name)!r}"
            for f in fields(self)
            if f.compare and getattr(self, f.name) != getattr(other, f.name)
        ]


#: Keys a configuration file may set (``name`` is a label written by program files).
BASE_KEYS = (*REQUIRED_KEYS, "LOG_BUS_WIDTH", "TARGET", "HW_VER", "name")
#: Keys computed from the base keys; a file may carry them (``vta config --json``
#: writes some), and they must then agree with the base keys.
DERIVED_KEYS = tuple(sorted(
    [n for n, v in vars(Config).items() if isinstance(v, property) and n.isupper()]
    + ["bitstream", "model", "signature"]))
#: Keys of older upstream ``vta_config.json`` files that no longer mean anything
#: (the clock settings moved to ``pkg_config.py``); accepted and ignored.
IGNORED_KEYS = ("HW_FREQ", "HW_CLK_TARGET")
