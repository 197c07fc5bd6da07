"""Replay: a program file run on a freshly opened device, and its outputs compared."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import Config
from ..driver.host import RunStats
from ..errors import DeviceError
from .program import PAGE, Program, Region


@dataclass
class Replay:
    """The result of :func:`replay`.

    Attributes
    ----------
    stats : RunStats
        The run's counters.
    outputs : dict[str, bytes]
        Contents of every output region after the run.
    """

    stats: RunStats
    outputs: dict[str, bytes]


def place(prog: Program, device: Any) -> list:
    """Allocate the program's regions on ``device`` at their addresses and write them.

    Each region gets its own buffer, named after it (regions sharing a page
    share one); the device must have nothing allocated below the program's end
    (a freshly opened device).  Returns the buffers.
    """
    if device.cfg != prog.cfg:
        raise DeviceError("the program was written for another configuration than the device's: "
                          + "; ".join(prog.cfg.diff(device.cfg)))
    prog.validate()
    mem = device.driver.transport.mem_size
    if prog.end > mem:
        raise DeviceError(f"the program's regions end at 0x{prog.end:x}, beyond the "
                          f"{device.backend} device's {mem}-byte memory (give a larger mem_size)")
    groups: list[list[Region]] = []  # regions sharing a page share a buffer
    for r in sorted(prog.regions, key=lambda r: r.addr):
        if groups and r.addr // PAGE * PAGE < _page_end(groups[-1][-1].end):
            groups[-1].append(r)
        else:
            groups.append([r])
    buffers, fillers = [], []
    try:
        cursor = PAGE
        for group in groups:
            lo = group[0].addr // PAGE * PAGE
            if lo > cursor:  # a gap: hold it while the next buffer is placed
                fillers.append(device.alloc(lo - cursor))
            buf = device.alloc(group[-1].end - lo, name=group[0].name)
            buffers.append(buf)
            if buf.addr != lo:
                raise DeviceError(
                    f"the program needs device memory 0x{PAGE:x}..0x{prog.end:x} free, but "
                    "buffers are already allocated there; replay it on a freshly opened device")
            for r in group:
                device.write(buf, r.contents(), offset=r.addr - lo)
            cursor = _page_end(group[-1].end)
    except BaseException:
        for buf in buffers:
            device.free(buf)
        raise
    finally:
        for buf in fillers:
            device.free(buf)
    return buffers


def _page_end(addr: int) -> int:
    return -(-addr // PAGE) * PAGE


def replay(prog: Program, device: Any, *, timeout: float | None = None) -> Replay:
    """Run ``prog`` on a freshly opened ``device``; returns the counters and output regions."""
    buffers = place(prog, device)
    try:
        stats = device.run(prog.insn_addr, prog.insn_count, timeout=timeout)
        outputs = {}
        for r in prog.outputs:
            buf = next(b for b in buffers if b.addr <= r.addr < b.addr + b.nbytes)
            outputs[r.name] = bytes(device.read(buf, r.size, offset=r.addr - buf.addr))
    finally:
        if not device.closed:
            for buf in buffers:
                device.free(buf)
    return Replay(stats, outputs)


@dataclass(frozen=True)
class Mismatch:
    """The first difference in one output region.

    Attributes
    ----------
    region : str
        Region name.
    offset : int
        Byte offset of the first differing byte.
    expected, actual : int
        The two byte values there.
    count : int
        Number of differing bytes in the region.
    """

    region: str
    offset: int
    expected: int
    actual: int
    count: int

    def describe(self, cfg: Config | None = None) -> str:
        where = f"byte {self.offset}"
        if cfg is not None:
            elem = cfg.OUT_ELEM_BYTES
            where += f" (OUT element {self.offset // elem}, lane {self.offset % elem})"
        return (f"region {self.region}: {self.count} byte(s) differ; first at {where}: expected "
                f"0x{self.expected:02x} ({_s8(self.expected)}), got 0x{self.actual:02x} "
                f"({_s8(self.actual)})")


def _s8(value: int) -> int:
    return value - 256 if value >= 128 else value


def compare(expected: dict[str, bytes], actual: dict[str, bytes]) -> list[Mismatch]:
    """Mismatches between two sets of region contents (regions present in both)."""
    out = []
    for name, want in expected.items():
        got = actual.get(name)
        if got is None:
            continue
        a = np.frombuffer(want, dtype=np.uint8)
        b = np.frombuffer(got, dtype=np.uint8)
        n = min(a.size, b.size)
        diff = np.flatnonzero(a[:n] != b[:n])
        if diff.size:
            i = int(diff[0])
            out.append(Mismatch(name, i, int(a[i]), int(b[i]), int(diff.size)))
    return out


def expectations(prog: Program) -> dict[str, bytes]:
    """Recorded contents of the output regions that have them."""
    return {r.name: r.expected() for r in prog.outputs if r.expect is not None}
