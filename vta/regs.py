"""The control register map: defined once here, used by the driver, the golden
transport, the RTL (through a generated Verilog header) and the docs.

All registers are 32 bits wide at 4-byte aligned byte offsets of one AXI4-Lite
slave.  64-bit quantities occupy two registers, low word first.  Counters are
cleared when a run starts and are meant to be read after it finishes (or to
diagnose a hang while it is stuck).
"""

from __future__ import annotations

from dataclasses import dataclass

from .config import Config
from .errors import ErrorCode

#: Value of the ID register: ASCII "VTA" and the register-map revision 1.
ID_MAGIC = 0x56544101

#: HW_VERSION register value for ISA version 0.0.2: (major << 16) | (minor << 8) | patch.
HW_VERSION = 0x000002

# CTRL bits (write)
CTRL_START = 1 << 0  #: start a run with INSN_ADDR / INSN_COUNT (ignored while busy)
CTRL_CLEAR = 1 << 1  #: clear DONE and ERROR (and the error registers)

# STATUS bits (read)
STATUS_BUSY = 1 << 0  #: a run is in progress
STATUS_DONE = 1 << 1  #: the last run retired FINISH and every engine drained
STATUS_ERROR = 1 << 2  #: the last run stopped on a fault; see ERR_* registers
STATUS_MODULE_SHIFT = 4  #: bits [7:4]: faulting module (MODULES)
STATUS_CODE_SHIFT = 8  #: bits [15:8]: ErrorCode

#: Module numbers as reported in STATUS[7:4].
MODULES = ("none", "fetch", "load", "compute", "store")


@dataclass(frozen=True)
class Register:
    """One 32-bit register, or the low word of a 64-bit one (``wide``)."""

    name: str
    offset: int
    access: str  # "rw", "ro" or "wo"
    doc: str
    wide: bool = False


def _build() -> tuple[Register, ...]:
    regs = [
        Register("CTRL", 0x000, "wo", "bit 0 START: start a run; bit 1 CLEAR: clear DONE/ERROR"),
        Register("STATUS", 0x004, "ro",
                 "bit 0 BUSY, bit 1 DONE, bit 2 ERROR; [7:4] faulting module "
                 "(1 fetch, 2 load, 3 compute, 4 store); [15:8] error code"),
        Register("ERR_INDEX", 0x008, "ro", "index in the stream of the faulting instruction"),
        Register("INSN_ADDR", 0x010, "rw", "device byte address of the instruction stream",
                 wide=True),
        Register("INSN_COUNT", 0x018, "rw", "number of 16-byte instructions to fetch"),
        Register("ID", 0x020, "ro", f"magic 0x{ID_MAGIC:08X} ('VTA', map revision 1)"),
        Register("HW_VERSION", 0x024, "ro", "ISA version: (major << 16) | (minor << 8) | patch"),
        Register("CONFIG_SIG", 0x028, "ro", "CRC-32 signature of the configuration "
                 "(vta.Config.signature)"),
        Register("CONFIG0", 0x02C, "ro",
                 "[3:0] LOG_INP_WIDTH, [7:4] LOG_WGT_WIDTH, [11:8] LOG_ACC_WIDTH, "
                 "[15:12] LOG_BATCH, [19:16] LOG_BLOCK, [23:20] LOG_BUS_WIDTH"),
        Register("CONFIG1", 0x030, "ro",
                 "[7:0] LOG_UOP_BUFF_SIZE, [15:8] LOG_INP_BUFF_SIZE, [23:16] LOG_WGT_BUFF_SIZE, "
                 "[31:24] LOG_ACC_BUFF_SIZE"),
        Register("TOKENS", 0x034, "ro",
                 "live token-queue occupancy: [7:0] l2g, [15:8] g2l, [23:16] g2s, [31:24] s2g "
                 "(saturating at 255 in this view)"),
        Register("FETCH_INDEX", 0x038, "ro", "instructions fetched and dispatched so far"),
    ]
    offset = 0x040
    for name, doc in COUNTERS:
        regs.append(Register(name.upper(), offset, "ro", doc, wide=True))
        offset += 8
    err_addr = Register("ERR_ADDR", 0x0F8, "ro",
                        "BUS_ERROR: device byte address of the DRAM burst that got the error "
                        "response", wide=True)
    if offset > err_addr.offset:
        raise AssertionError(f"counters reach 0x{offset:03x}, into ERR_ADDR at "
                             f"0x{err_addr.offset:03x}")
    regs.append(err_addr)
    return tuple(regs)


#: 64-bit counters from 0x040 on, in this order (name as in the run statistics).
COUNTERS: tuple[tuple[str, str], ...] = (
    ("cycles", "clock cycles from START to DONE/ERROR"),
    ("load_busy", "cycles the load engine executed an instruction"),
    ("load_stall", "cycles the load engine waited on a dependency token"),
    ("compute_busy", "cycles the compute engine executed an instruction"),
    ("compute_stall", "cycles the compute engine waited on a dependency token"),
    ("store_busy", "cycles the store engine executed an instruction"),
    ("store_stall", "cycles the store engine waited on a dependency token"),
    ("uop_load_bytes", "bytes loaded into the micro-op buffer"),
    ("inp_load_bytes", "bytes loaded into the INP buffer"),
    ("wgt_load_bytes", "bytes loaded into the WGT buffer"),
    ("acc_load_bytes", "bytes loaded into the ACC buffer (memory type ACC)"),
    ("acc8_load_bytes", "bytes loaded into the ACC buffer (memory type ACC_8BIT)"),
    ("out_store_bytes", "bytes stored from the OUT buffer"),
    ("gemm_uops", "GEMM micro-op executions (reset excluded)"),
    ("alu_uops", "ALU micro-op executions"),
    ("load_insns", "instructions retired by the load engine"),
    ("compute_insns", "instructions retired by the compute engine"),
    ("store_insns", "instructions retired by the store engine"),
    ("l2g_tokens", "tokens pushed onto l2g (load -> compute)"),
    ("g2l_tokens", "tokens pushed onto g2l (compute -> load)"),
    ("g2s_tokens", "tokens pushed onto g2s (compute -> store)"),
    ("s2g_tokens", "tokens pushed onto s2g (store -> compute)"),
)

#: Counters a functional model cannot know (no clock): reported as None there.
TIMING_COUNTERS = ("cycles", "load_busy", "load_stall", "compute_busy", "compute_stall",
                   "store_busy", "store_stall")

REGISTERS: tuple[Register, ...] = _build()
BY_NAME: dict[str, Register] = {r.name: r for r in REGISTERS}
#: Bytes of address space the register file decodes.
MAP_BYTES = 0x100


def offset(name: str) -> int:
    """Byte offset of register ``name`` (e.g. ``"STATUS"``, ``"CYCLES"``)."""
    return BY_NAME[name].offset


def config_words(cfg: Config) -> tuple[int, int]:
    """(CONFIG0, CONFIG1) values identifying ``cfg``."""
    w0 = (cfg.LOG_INP_WIDTH | cfg.LOG_WGT_WIDTH << 4 | cfg.LOG_ACC_WIDTH << 8
          | cfg.LOG_BATCH << 12 | cfg.LOG_BLOCK << 16 | cfg.LOG_BUS_WIDTH << 20)
    w1 = (cfg.LOG_UOP_BUFF_SIZE | cfg.LOG_INP_BUFF_SIZE << 8 | cfg.LOG_WGT_BUFF_SIZE << 16
          | cfg.LOG_ACC_BUFF_SIZE << 24)
    return w0, w1


def config_from_words(w0: int, w1: int) -> dict[str, int]:
    """Configuration keys decoded from CONFIG0 / CONFIG1."""
    return {
        "LOG_INP_WIDTH": w0 & 0xF, "LOG_WGT_WIDTH": (w0 >> 4) & 0xF,
        "LOG_ACC_WIDTH": (w0 >> 8) & 0xF, "LOG_BATCH": (w0 >> 12) & 0xF,
        "LOG_BLOCK": (w0 >> 16) & 0xF, "LOG_BUS_WIDTH": (w0 >> 20) & 0xF,
        "LOG_UOP_BUFF_SIZE": w1 & 0xFF, "LOG_INP_BUFF_SIZE": (w1 >> 8) & 0xFF,
        "LOG_WGT_BUFF_SIZE": (w1 >> 16) & 0xFF, "LOG_ACC_BUFF_SIZE": (w1 >> 24) & 0xFF,
    }


def status_word(*, busy: bool = False, done: bool = False, error: bool = False,
                module: str = "none", code: ErrorCode = ErrorCode.NONE) -> int:
    """Compose a STATUS value."""
    return (int(busy) * STATUS_BUSY | int(done) * STATUS_DONE | int(error) * STATUS_ERROR
            | MODULES.index(module) << STATUS_MODULE_SHIFT | int(code) << STATUS_CODE_SHIFT)


def render_markdown() -> str:
    """The register map as a Markdown table (docs/registers.md is generated from this)."""
    lines = [
        "# Control register map",
        "",
        "Generated by `vta regs` from `vta/regs.py`; do not edit by hand.",
        "",
        "One AXI4-Lite slave, 32-bit registers at byte offsets; 64-bit values are two "
        "registers, low word first.",
        "",
        "| offset | name | access | description |",
        "|---|---|---|---|",
    ]
    for r in REGISTERS:
        if r.wide:
            lines.append(
                f"| 0x{r.offset:03X} | {r.name}_LO | {r.access} | {_cell(r.doc)} (low word) |")
            lines.append(f"| 0x{r.offset + 4:03X} | {r.name}_HI | {r.access} | (high word) |")
        else:
            lines.append(f"| 0x{r.offset:03X} | {r.name} | {r.access} | {_cell(r.doc)} |")
    lines += ["", "Error codes (STATUS[15:8]):", "", "| code | name |", "|---|---|"]
    lines += [f"| {c.value} | {c.name} |" for c in ErrorCode]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """Escape a Markdown table cell."""
    return text.replace("|", "\\|")


def render_verilog() -> str:
    """`define lines for the RTL, generated from the same table."""
    out = ["// Generated from vta/regs.py by vta.regs.render_verilog(); do not edit.",
           f"`define VTA_ID_MAGIC 32'h{ID_MAGIC:08X}",
           f"`define VTA_HW_VERSION 32'h{HW_VERSION:08X}"]
    for r in REGISTERS:
        out.append(f"`define VTA_REG_{r.name} 12'h{r.offset:03X}")
        if r.wide:
            out.append(f"`define VTA_REG_{r.name}_HI 12'h{r.offset + 4:03X}")
    for c in ErrorCode:
        out.append(f"`define VTA_ERR_{c.name} 8'd{c.value}")
    for i, m in enumerate(MODULES):
        out.append(f"`define VTA_MOD_{m.upper()} 4'd{i}")
    return "\n".join(out) + "\n"
