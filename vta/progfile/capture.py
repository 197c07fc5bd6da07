"""Capture: a device run recorded as a program file (``open_device(..., capture=DIR)``,
``$VTA_CAPTURE``, ``CommandQueue.synchronize(capture=PATH)``).

The device is taken as it comes (a :class:`vta.device.Device`: its configuration,
live buffers and transport); this module sits below the device API and imports
none of it, so the device can record its own runs."""

from __future__ import annotations

import datetime
import re
from pathlib import Path
from typing import Any

from .. import isa
from .._version import __version__
from ..errors import DeviceError
from ..isa import INSN_BYTES
from .analysis import accesses, region_role
from .program import PAGE, SUFFIX, Program, Region, _trim


def capture(device: Any, insn_addr: int, insn_count: int) -> Program:
    """Record what a run of ``insn_count`` instructions at ``insn_addr`` will need.

    Called just before the run: the regions are the device's live buffers the
    stream touches (instructions, LOAD sources, STORE destinations), named as
    given to :meth:`vta.device.Device.alloc`; memory the stream touches outside
    every buffer becomes page-aligned regions ``mem0``, ``mem1`` ...  A region
    only read keeps the bytes up to the last one read; trailing zeros are
    dropped (they are implied).
    """
    cfg = device.cfg
    transport = device.driver.transport
    try:
        stream = transport.mem_read(insn_addr, insn_count * INSN_BYTES)
    except DeviceError:
        stream = b""  # the fetch will fault; record what there is
    insns = isa.decode_stream(stream[:len(stream) // INSN_BYTES * INSN_BYTES], cfg)
    spans: list[tuple[str, int, int]] = [(a.kind, a.start, a.end) for a in accesses(insns, cfg)]
    if stream:
        spans.append(("insn", insn_addr, insn_addr + len(stream)))
    spans = [(k, lo, min(hi, transport.mem_size)) for k, lo, hi in spans
             if lo < transport.mem_size]
    names = getattr(device, "buffer_names", {})
    found: list[tuple[int, int, str | None, set[str], int]] = []  # addr size name kinds read_end
    covered = []
    for buf in device.driver.live_buffers:
        kinds, read_end = set(), buf.addr
        for kind, lo, hi in spans:
            if lo < buf.addr + buf.nbytes and buf.addr < hi:
                kinds.add(kind)
                if kind != "out":
                    read_end = max(read_end, min(hi, buf.addr + buf.nbytes))
                covered.append((max(lo, buf.addr), min(hi, buf.addr + buf.nbytes)))
        if kinds:
            found.append((buf.addr, buf.nbytes, names.get(buf.addr), kinds, read_end))
    buffers = [(addr, addr + size) for addr, size, *_ in found]
    for lo, hi, kinds in _uncovered(spans, covered):
        # whole pages, without reaching into a buffer's region
        lo = max([lo // PAGE * PAGE, PAGE] + [e for b, e in buffers if e <= lo])
        hi = min([-(-hi // PAGE) * PAGE] + [b for b, e in buffers if b >= hi])
        if lo < hi:
            found.append((lo, hi - lo, None, kinds, hi))
    regions = []
    used: set[str] = set()
    for addr, size, name, kinds, read_end in sorted(found):
        role = region_role(kinds)
        data = transport.mem_read(addr, size if "out" in kinds else read_end - addr)
        regions.append(Region(_unique(name or _default_name(role), used), addr, size, role,
                              _trim(data)))
    return Program(cfg, insn_addr, insn_count, regions)


def _uncovered(spans, covered):
    """Parts of ``spans`` outside ``covered``: merged (lo, hi, kinds)."""
    pieces = []
    for kind, lo, hi in spans:
        parts = [(lo, hi)]
        for c_lo, c_hi in covered:
            parts = [p for a, b in parts for p in ((a, min(b, c_lo)), (max(a, c_hi), b))
                     if p[0] < p[1]]
        pieces += [(a, b, {kind}) for a, b in parts]
    pieces.sort(key=lambda p: p[0])
    merged: list[tuple[int, int, set[str]]] = []
    for a, b, kinds in pieces:
        if merged and a < -(-merged[-1][1] // PAGE) * PAGE:  # they share a page
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]), merged[-1][2] | kinds)
        else:
            merged.append((a, b, kinds))
    return merged


def _default_name(role: str) -> str:
    return {"insn": "insn", "uop": "uop"}.get(role, "mem")


def _unique(name: str, used: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_.]", "_", name) or "mem"
    if not re.match(r"[A-Za-z_]", base):
        base = "_" + base
    candidate, n = base, 1
    while candidate in used:
        candidate = f"{base}{n}"
        n += 1
    used.add(candidate)
    return candidate


def record_outputs(prog: Program, device: Any) -> None:
    """Set ``expect`` of every output region from the device's memory (after the run)."""
    transport = device.driver.transport
    for r in prog.outputs:
        r.expect = _trim(transport.mem_read(r.addr, r.size))


def capture_path(target: str | Path) -> Path:
    """Where a capture goes: ``target`` itself, or the next free ``run-NNNN.vtaprog`` in it.

    ``target`` is a directory unless it ends in :data:`SUFFIX`; directories are created.
    """
    target = Path(target)
    if target.suffix == SUFFIX:
        target.parent.mkdir(parents=True, exist_ok=True)
        return target
    target.mkdir(parents=True, exist_ok=True)
    n = 1 + max((int(m.group(1)) for p in target.glob(f"run-*{SUFFIX}")
                 if (m := re.fullmatch(rf"run-(\d+){re.escape(SUFFIX)}", p.name))), default=0)
    while True:
        path = target / f"run-{n:04d}{SUFFIX}"
        try:
            path.open("x").close()  # claim the name (another process may be capturing)
            return path
        except FileExistsError:
            n += 1


def provenance(device: Any) -> str:
    """A note naming the toolkit version, backend, configuration and time."""
    when = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    return (f"captured by vta {__version__} on the {device.backend} backend, configuration "
            f"{device.cfg.name} ({device.cfg.bitstream}), {when}")
