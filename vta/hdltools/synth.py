"""Synthesis figures of ``vta_top`` with yosys ``synth_xilinx`` (UltraScale+).

:func:`synthesize` runs yosys on the design for one configuration and returns a
:class:`SynthReport`: LUT, FF, DSP, BRAM and URAM counts per instance of the
top level and in total, whether every scratchpad became block RAM, whether
every block-RAM and DSP output is registered, and the deepest
register-to-register logic path of the mapped netlist.

Path depth.  yosys's own ``ltp -noff`` treats block RAMs and DSPs as logic,
so the depth is computed here from the mapped netlist (``write_json``,
flattened here): flip-flops, SRLs and block RAMs end and start paths; a
DSP48E2 does where its input (AREG/BREG/MREG) or output (PREG) registers are
on, and otherwise counts as :data:`DSP_LEVELS` levels.  Each LUT is one
level; a MUXF7/F8/F9 is part of the LUT level before it (it sits in the same
slice) and counts 0; carry cells count so that 32 bits of carry chain are one
level (:data:`CARRY_LEVELS`: a CARRY4 1/8, a CARRY8 1/4).  The top's ports
are not registered here (``-noiopad``): paths from them start at 0.
A LUT RAM (distributed RAM) is one LUT level from its read address to its
data; its write port (data, write enable, and the write address of the
RAM32M/RAM64M kinds' last port) ends paths, as a flip-flop's input does,
since a write is clocked.
The unit is "LUT levels" as the timing targets state them; Vivado's timing
report is the real judge and cannot run here (no Vivado).

yosys 0.23 from Debian works (``apt-get install yosys``); the PyPI builds
exit silently at the ABC step on this project's machines.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from ..config import Config
from ..errors import VTAError
from . import hdlgen

#: Levels an unregistered DSP48E2 stage counts for (a multiply-add, about 3 LUT levels).
DSP_LEVELS = 3.0
#: Levels of a carry-chain cell: 32 bits of carry chain count as one LUT level
#: (yosys 0.23 maps UltraScale+ carry logic to CARRY4 cells, newer ones to CARRY8).
CARRY_LEVELS = {"CARRY4": 0.125, "CARRY8": 0.25}

#: Resource columns, in report order, and the cell types that count for each.
RESOURCES = ("LUT", "FF", "CARRY", "DSP", "BRAM36", "BRAM18", "URAM", "LUTRAM", "SRL")
_LUTRAM = {"RAM32X1D", "RAM64X1D", "RAM128X1D", "RAM256X1D", "RAM32M", "RAM64M", "RAM32M16",
           "RAM64M8", "RAM32X1S", "RAM64X1S", "RAM128X1S", "RAM256X1S", "RAM512X1S"}
_FF = {"FDRE", "FDSE", "FDCE", "FDPE", "FDRE_1", "LDCE", "LDPE"}
_SRL = {"SRL16E", "SRLC32E", "SRLC16E"}
_BRAM = {"RAMB36E2", "RAMB18E2"}
_SEQ_START = _FF | _SRL | _BRAM | {"URAM288"}
#: LUT RAM inputs through which a read is combinational (read addresses); the
#: others (write data, write enable, clock) are clocked.  The last port of a
#: RAM32M/RAM64M kind (ADDRD, ADDRH) is also its write address: counted as a read.
_LUTRAM_READ = re.compile(r"^(ADDR[A-H]|DPRA\d*|A\d*)$")


class SynthError(VTAError):
    """yosys is missing, or synthesis failed."""


@dataclass
class LogicPath:
    """The deepest register-to-register path: its levels and the cells on it."""

    levels: float
    luts: int
    carry: int
    muxf: int
    dsps: int
    cells: list[tuple[str, str]] = field(default_factory=list)  # (type, name), start first
    #: the registers (or memories) the path starts and ends in, named by the signal each
    #: drives in the netlist ("" when only generated names exist)
    start: str = ""
    end: str = ""


@dataclass
class SynthReport:
    """What :func:`synthesize` measured for one configuration."""

    config: str
    #: per top-level instance (``compute``, ``inp_mem``, ...): resource -> count
    instances: dict[str, dict[str, int]]
    #: per module of the instance tree (``compute.gemm``, ...): resource -> count
    modules: dict[str, dict[str, int]]
    total: dict[str, int]
    #: scratchpad instance -> the memory cells it became ({"RAMB36E2": 8, ...})
    scratchpads: dict[str, dict[str, int]]
    #: block RAMs / URAMs / DSPs whose outputs reach logic before a register
    unregistered_brams: list[str]
    unregistered_dsps: list[str]
    deepest: LogicPath
    #: the deepest path ending in each top-level instance
    deepest_by_instance: dict[str, float]
    #: the deepest path ending in each top-level instance, with its cells
    paths_by_instance: dict[str, LogicPath]
    seconds: float
    log: Path | None = None

    @property
    def scratchpads_in_bram(self) -> bool:
        """Every scratchpad's storage became block RAM or UltraRAM (none LUT RAM).

        Flip-flops beside them are output registers (a memory kept in
        flip-flops would have no block RAM at all).
        """
        return all(set(v) & (_BRAM | {"URAM288"}) and not set(v) & _LUTRAM
                   for v in self.scratchpads.values())


def yosys_path() -> str:
    exe = shutil.which("yosys")
    if exe is None:
        raise SynthError("yosys is not installed (Debian: apt-get install yosys)")
    return exe


def _resource(cell_type: str) -> str | None:
    if cell_type.startswith("LUT") and cell_type[3:].isdigit():
        return "LUT"
    if cell_type in _FF:
        return "FF"
    if cell_type in CARRY_LEVELS:
        return "CARRY"
    if cell_type.startswith("DSP48"):
        return "DSP"
    if cell_type == "RAMB36E2":
        return "BRAM36"
    if cell_type == "RAMB18E2":
        return "BRAM18"
    if cell_type == "URAM288":
        return "URAM"
    if cell_type in _LUTRAM:
        return "LUTRAM"
    if cell_type in _SRL:
        return "SRL"
    return None


#: The scratchpads and where they are instantiated.
SCRATCHPADS = ("inp_mem", "wgt_mem", "out_mem", "compute.uop_mem", "compute.acc_mem_dst",
               "compute.acc_mem_src")


def run_yosys(top: str, sources: list[Path], work: Path, *, includes: tuple[Path, ...] = (),
              parameters: dict[str, int] | None = None, uram: bool = False) -> dict:
    """Map ``top`` with ``synth_xilinx -family xcup``; the hierarchical netlist (write_json).

    The script, the log (``yosys.log``) and the netlist stay in ``work``.
    """
    exe = yosys_path()
    work.mkdir(parents=True, exist_ok=True)
    netlist = work / f"{top}.json"
    chparams = " ".join(f"-chparam {k} {v}" for k, v in (parameters or {}).items())
    incs = " ".join(f"-I{i}" for i in includes)
    script = work / "synth.ys"
    script.write_text("\n".join([
        f"read_verilog -defer -DSYNTHESIS {incs} {' '.join(str(s) for s in sources)}",
        f"hierarchy -check -top {top} {chparams}",
        f"synth_xilinx -family xcup -noiopad -top {top}{' -uram' if uram else ''}",
        "stat",
        f"write_json {netlist}",
        "",
    ]))
    log = work / "yosys.log"
    with open(log, "w") as fh:
        proc = subprocess.run([exe, "-q", "-l", str(log), "-s", str(script)],
                              stdout=fh, stderr=subprocess.STDOUT, check=False)
    if proc.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
        raise SynthError(f"yosys failed (exit {proc.returncode}); log {log}:\n{tail}")
    return json.loads(netlist.read_text())


def synthesize(cfg: Config | str, *, uram: bool = False, workdir: Path | str | None = None,
               mem_size: int = hdlgen.DEFAULT_MEM_SIZE,
               hdl: Path | str | None = None) -> SynthReport:
    """Synthesise ``vta_top`` for ``cfg`` and measure it (several CPU minutes).

    Parameters
    ----------
    cfg
        Configuration or preset name.
    uram
        Let yosys map large memories to URAM288 (``synth_xilinx -uram``).
    workdir
        Where the yosys script, log and netlist go (default: a temporary folder,
        removed afterwards; the report's ``log`` is then ``None``).
    mem_size
        ``MEM_SIZE`` of the top (device-memory bytes).
    hdl
        Folder of the Verilog design to synthesise (default: this package's ``hdl/``);
        for comparing another version of the design.
    """
    if isinstance(cfg, str):
        cfg = Config.load(cfg)
    tmp = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="vta-synth-")
        work = Path(tmp.name)
    else:
        work = Path(workdir)
    try:
        hdr = work / "include"
        hdlgen.write_headers(cfg, hdr)
        sources = sorted(Path(hdl).glob("*.v")) if hdl else hdlgen.hdl_sources()
        if not sources:
            raise SynthError(f"no Verilog files (*.v) in {hdl}")
        start = time.perf_counter()
        netlist = run_yosys("vta_top", sources, work, includes=(hdr,), uram=uram,
                            parameters=hdlgen.top_parameters(cfg, mem_size=mem_size))
        report = analyse(netlist, cfg.name)
        report.seconds = time.perf_counter() - start
        report.log = None if tmp else work / "yosys.log"
        return report
    finally:
        if tmp is not None:
            tmp.cleanup()


# ------------------------------------------------------------------ netlist analysis
def _clean(name: str) -> str:
    return name.lstrip("\\")


def _find_top(modules: dict) -> str:
    for name, mod in modules.items():
        if str(mod.get("attributes", {}).get("top", "0")).strip("0") != "":
            return name
    raise SynthError("no top module in the netlist")


def analyse(netlist: dict, config: str = "", level: int = 1) -> SynthReport:
    """Measure a hierarchical mapped netlist (yosys ``write_json`` after synth_xilinx).

    ``level``: how deep into the instance tree the per-instance depth figures go (1:
    the top's instances; 2: theirs, for a top that wraps the design in one instance).
    Cells of an instance above that depth count as its ``glue``.
    """
    modules = {k: v for k, v in netlist["modules"].items() if "cells" in v}
    design = {k for k in modules if not modules[k].get("attributes", {}).get("blackbox")
              and modules[k]["cells"] is not None}
    top = _find_top(modules)

    own: dict[str, dict[str, int]] = {}
    own_types: dict[str, dict[str, int]] = {}
    for name in design:
        counts: dict[str, int] = defaultdict(int)
        types: dict[str, int] = defaultdict(int)
        for cell in modules[name]["cells"].values():
            res = _resource(cell["type"])
            if res:
                counts[res] += 1
            types[cell["type"]] += 1
        own[name] = counts
        own_types[name] = types

    tree = [(p, m) for p, m in _instance_tree_design(modules, design, top)]
    per_path = {p: own[m] for p, m in tree}
    instances: dict[str, dict[str, int]] = {}
    mods: dict[str, dict[str, int]] = {}
    total: dict[str, int] = defaultdict(int)
    for path, counts in per_path.items():
        head = path.split(".")[0] if path else "(top glue)"
        inst = instances.setdefault(head, defaultdict(int))
        mods.setdefault(path or "(top glue)", dict(counts))
        for r, n in counts.items():
            inst[r] += n
            total[r] += n
    scratch = {}
    types_by_path = {p: own_types[m] for p, m in tree}
    for sp in SCRATCHPADS:
        # a scratchpad's memory cells: every cell type of its subtree that stores bits
        cells: dict[str, int] = defaultdict(int)
        for p, t in types_by_path.items():
            if p == sp or p.startswith(sp + "."):
                for ct, n in t.items():
                    if ct in _BRAM or ct == "URAM288" or ct in _LUTRAM or ct in _FF:
                        cells[ct] += n
        if any(p == sp for p in types_by_path):
            scratch[sp] = dict(cells)

    flat, names = _flatten(modules, design, top)
    deepest, paths, unreg_bram, unreg_dsp = _depth(flat, names, level)
    return SynthReport(config=config, instances={k: dict(v) for k, v in instances.items()},
                       modules=mods, total=dict(total), scratchpads=scratch,
                       unregistered_brams=unreg_bram, unregistered_dsps=unreg_dsp,
                       deepest=deepest,
                       deepest_by_instance={k: v.levels for k, v in paths.items()},
                       paths_by_instance=paths, seconds=0.0)


def _instance_tree_design(modules, design, top):
    stack = [("", top)]
    while stack:
        path, name = stack.pop()
        yield path, name
        for cname, cell in modules[name]["cells"].items():
            if cell["type"] in design:
                sub = _clean(cname)
                stack.append((f"{path}.{sub}" if path else sub, cell["type"]))


def _flatten(modules, design, top):
    """Leaf cells of the whole design, and a name for each net that has one.

    Returns ``(cells, names)``: cells a list of (path.name, type, params, {port: [net
    ids]}, {port: direction}, instance path); net ids are global ints; names maps a net
    id to the shortest user-given ``instance.signal[bit]`` among the names it carries.
    """
    parent: list[int] = []
    named: list[tuple[int, str]] = []

    def fresh():
        parent.append(len(parent))
        return len(parent) - 1

    def find(n):
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    cells_out = []

    def walk(path, name, port_map):
        mod = modules[name]
        local: dict[int, int] = {}

        def glob(bit):
            if isinstance(bit, str):  # "0", "1", "x", "z"
                return -1
            if bit not in local:
                local[bit] = fresh()
            return local[bit]

        for pname, port in mod["ports"].items():
            if pname in port_map:
                for b, g in zip(port["bits"], port_map[pname], strict=False):
                    if isinstance(b, int) and g >= 0:
                        if b in local:
                            # two ports on one internal net: the outside nets are one
                            parent[find(g)] = find(local[b])
                        else:
                            local[b] = g
        for cname, cell in mod["cells"].items():
            cpath = f"{path}.{_clean(cname)}" if path else _clean(cname)
            conns = {p: [glob(b) for b in bits] for p, bits in cell["connections"].items()}
            if cell["type"] in design:
                walk(cpath, cell["type"], conns)
            else:
                cells_out.append((cpath, cell["type"], cell.get("parameters", {}), conns,
                                  cell.get("port_directions", {}), path))
        for nname, net in mod.get("netnames", {}).items():
            if net.get("hide_name") or nname.startswith("$"):
                continue
            bits = net["bits"]
            for k, b in enumerate(bits):
                if isinstance(b, int):
                    full = f"{path}.{_clean(nname)}" if path else _clean(nname)
                    named.append((glob(b), f"{full}[{k}]" if len(bits) > 1 else full))

    walk("", top, {})
    names: dict[int, str] = {}
    for n, text in named:
        root = find(n)
        if root not in names or len(text) < len(names[root]):
            names[root] = text
    return ([(p, t, prm, {k: [find(n) if n >= 0 else n for n in v] for k, v in c.items()}, d,
              inst) for p, t, prm, c, d, inst in cells_out], names)


def _param(params: dict, key: str) -> int:
    v = params.get(key, "0")
    if isinstance(v, int):
        return v
    v = str(v).strip()
    if v and set(v) <= {"0", "1"}:
        return int(v, 2)
    try:
        return int(v)
    except ValueError:
        return 0


_RAM_OUT = re.compile(r"^(DOUT|DO|CAS_DOUT)")


def _group(inst: str, level: int) -> str:
    """The instance a cell's depth figure is reported under (see :func:`analyse`)."""
    parts = inst.split(".") if inst else []
    if len(parts) >= level:
        return ".".join(parts[:level])
    return f"{inst} glue" if inst else "(top glue)"


def _depth(cells, names=None, level=1):
    """Longest path in levels; per instance (:func:`_group`); unregistered BRAM / DSP
    outputs."""
    names = names or {}
    driver: dict[int, int] = {}   # net -> index of the cell driving it
    readers: dict[int, list[tuple[int, str]]] = defaultdict(list)
    dsp_info = {}
    for i, (_path, typ, params, conns, dirs, _inst) in enumerate(cells):
        for port, nets in conns.items():
            d = dirs.get(port, "input")
            for n in nets:
                if n < 0:
                    continue
                if d == "output":
                    driver[n] = i
                else:
                    readers[n].append((i, port))
        if typ.startswith("DSP48"):
            dsp_info[i] = (_param(params, "AREG") > 0 and _param(params, "BREG") > 0,
                           _param(params, "MREG") > 0, _param(params, "PREG") > 0)

    def is_seq_out(i):
        typ = cells[i][1]
        if typ in _SEQ_START:
            return True
        if i in dsp_info:
            return dsp_info[i][2]
        return False

    def weight(typ):
        if typ.startswith("LUT"):
            return 1.0
        if typ in CARRY_LEVELS:
            return CARRY_LEVELS[typ]
        if typ.startswith("MUXF"):
            return 0.0
        if typ.startswith("DSP48"):
            return DSP_LEVELS
        if typ in _LUTRAM:
            return 1.0
        return 0.0

    arrival: dict[int, float] = {}   # cell index -> arrival at its outputs
    # cell index -> (predecessor cell on its longest path, the net between them)
    best_in: dict[int, tuple[int, int]] = {}

    def cell_inputs(i, endpoint=False):
        _p, typ, _params, conns, dirs, _inst = cells[i]
        lutram = typ in _LUTRAM and not endpoint
        for port, nets in conns.items():
            if dirs.get(port, "input") != "output":
                if lutram and not _LUTRAM_READ.match(port):
                    continue
                for n in nets:
                    if n >= 0:
                        yield n

    def compute(i0):
        # iterative DFS: arrival of combinational cell i = weight + max over drivers
        stack = [(i0, False)]
        while stack:
            i, done = stack.pop()
            if i in arrival:
                continue
            if is_seq_out(i):
                arrival[i] = 0.0
                continue
            typ = cells[i][1]
            if i in dsp_info and (dsp_info[i][0] or dsp_info[i][1]):
                arrival[i] = weight(typ)  # registered inputs: the path starts inside
                continue
            preds = [(driver[n], n) for n in cell_inputs(i) if n in driver]
            if not done:
                stack.append((i, True))
                for p, _n in preds:
                    if p not in arrival:
                        stack.append((p, False))
                continue
            best, arg, via = 0.0, -1, -1
            for p, n in preds:
                a = arrival[p]
                if a > best or arg < 0:
                    best, arg, via = a, p, n
            arrival[i] = weight(typ) + (best if arg >= 0 else 0.0)
            if arg >= 0:
                best_in[i] = (arg, via)

    # endpoints: inputs of sequential cells (and of registered-input DSPs)
    worst, worst_end = -1.0, (-1, -1, -1)
    by_inst: dict[str, tuple[float, tuple[int, int, int]]] = {}
    for i, (_path, typ, _params, _conns, _dirs, inst) in enumerate(cells):
        endpoint = typ in _SEQ_START or typ in _LUTRAM or \
            (i in dsp_info and (dsp_info[i][0] or dsp_info[i][1]))
        if not endpoint:
            continue
        for n in cell_inputs(i, endpoint=True):
            if n in driver:
                d = driver[n]
                compute(d)
                a = arrival[d]
                head = _group(inst, level)
                if head not in by_inst or a > by_inst[head][0]:
                    by_inst[head] = (a, (d, n, i))
                if a > worst:
                    worst, worst_end = a, (d, n, i)

    def output_name(i, prefer=-1):
        """A name for what cell ``i`` drives (``prefer``: the net the path takes)."""
        if prefer in names:
            return names[prefer]
        _p, _t, _params, conns, dirs, _inst = cells[i]
        for port, nets in conns.items():
            if dirs.get(port) == "output":
                for n in nets:
                    if n in names:
                        return names[n]
        return ""

    def path_to(end, levels):
        last, net, endpoint = end
        chain = []  # (cell, the net it drives along the path), start first
        j, via = last, net
        while j >= 0:
            chain.append((j, via))
            j, via = best_in.get(j, (-1, -1))
        chain.reverse()
        types = [cells[k][1] for k, _ in chain]
        return LogicPath(levels=max(levels, 0.0),
                         luts=sum(t.startswith("LUT") for t in types),
                         carry=sum(t in CARRY_LEVELS for t in types),
                         muxf=sum(t.startswith("MUXF") for t in types),
                         dsps=sum(t.startswith("DSP48") for t in types),
                         cells=[(cells[k][1], cells[k][0]) for k, _ in chain],
                         start=output_name(*chain[0]), end=output_name(endpoint))

    deepest = path_to(worst_end, worst) if worst_end[0] >= 0 else LogicPath(0.0, 0, 0, 0, 0)
    paths = {k: path_to(end, a) for k, (a, end) in by_inst.items()}

    # registered outputs: every bit a BRAM/URAM/DSP drives reaches only flip-flop D pins
    def only_ffs(i, out_re=None):
        _p, typ, params, conns, dirs, _inst = cells[i]
        for port, nets in conns.items():
            if dirs.get(port) != "output" or (out_re and not out_re.match(port)):
                continue
            for n in nets:
                for r, rport in readers.get(n, ()):
                    rtyp = cells[r][1]
                    if not (rtyp in _FF and rport == "D"):
                        return False
        return True

    unreg_bram = []
    unreg_dsp = []
    for i, (path, typ, params, _conns, _dirs, _inst) in enumerate(cells):
        if typ in _BRAM:
            if not (_param(params, "DOA_REG") or _param(params, "DOB_REG")) and \
                    not only_ffs(i, _RAM_OUT):
                unreg_bram.append(path)
        elif typ == "URAM288":
            if not (_param(params, "OREG_A") or _param(params, "OREG_B")) and \
                    not only_ffs(i, _RAM_OUT):
                unreg_bram.append(path)
        elif i in dsp_info and not dsp_info[i][2] and not only_ffs(i):
            unreg_dsp.append(path)
    return deepest, paths, unreg_bram, unreg_dsp


# ------------------------------------------------------------------ report
def format_report(report: SynthReport, detail: bool = True) -> str:
    """Markdown tables of a report."""
    cols = [r for r in RESOURCES if report.total.get(r)]
    lines = [f"### {report.config}: yosys synth_xilinx -family xcup ({report.seconds:.0f} s)", "",
             "| instance | " + " | ".join(cols) + " | deepest path ending here (levels) |",
             "|---|" + "---:|" * (len(cols) + 1)]
    for name in sorted(report.instances, key=lambda n: -report.instances[n].get("LUT", 0)):
        row = report.instances[name]
        lines.append(f"| {name} | " + " | ".join(f"{row.get(c, 0):,}" for c in cols)
                     + f" | {report.deepest_by_instance.get(name, 0):.2f} |")
    lines.append("| **total** | " + " | ".join(f"**{report.total.get(c, 0):,}**" for c in cols)
                 + f" | **{report.deepest.levels:.2f}** |")
    lines.append("")
    d = report.deepest
    lines.append(f"Deepest path: {d.levels:.2f} levels ({d.luts} LUTs, {d.carry} carry cells, "
                 f"{d.muxf} MUXF, {d.dsps} DSP)")
    if d.cells:
        lines.append(f"  from {d.cells[0][1]} to {d.cells[-1][1]}")
        lines.append(f"  signals: {d.start or '?'} -> {d.end or '?'}")
    sp = ", ".join(f"{k}: " + "+".join(f"{n} {t}" for t, n in sorted(v.items()))
                   for k, v in report.scratchpads.items())
    lines.append(f"Scratchpads: {sp} -- all in block RAM: "
                 f"{'yes' if report.scratchpads_in_bram else 'NO'}")
    lines.append(f"Block RAMs with logic after the output before a register: "
                 f"{len(report.unregistered_brams)}; DSPs likewise: "
                 f"{len(report.unregistered_dsps)}")
    if detail:
        lines.append("")
        lines.append("Deepest path ending in each instance (levels: first cell -> last cell):")
        for name, path in sorted(report.paths_by_instance.items(), key=lambda kv: -kv[1].levels):
            if path.cells:
                lines.append(f"* {name}: {path.levels:.2f} ({path.luts} LUTs, {path.carry} carry, "
                             f"{path.dsps} DSP): {path.start or path.cells[0][1]} -> "
                             f"{path.end or path.cells[-1][1]}")
        lines += ["", "| module | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
        for name in sorted(report.modules):
            row = report.modules[name]
            if any(row.get(c) for c in cols):
                lines.append(f"| {name} | " + " | ".join(f"{row.get(c, 0):,}" for c in cols)
                             + " |")
    return "\n".join(lines)
