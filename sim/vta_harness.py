"""The persistent cocotb harness: serves one host process over a socket.

Runs inside the simulator (Verilator or Icarus) against ``vta_tb`` as a single
cocotb test, ``serve``.  The host (:mod:`vta.backends.rtl`) starts the simulator
with one end of a socket pair inherited as file descriptor ``VTA_HARNESS_FD``
and sends requests; the simulation stands still while the harness waits for
the next one, so simulated time only passes inside a request.

Python wakes once per register access (the testbench's AXI4-Lite master
performs the transaction and raises ``cmd_ack``), once per backdoor copy and
once per run (one wait for ``irq`` or the testbench watchdog): never per clock
in the data path.  The clock is cocotb's
GPI (C++) clock.

Wire format, both directions: ``<u32 header length><u32 payload length>``,
then a JSON header, then the raw payload.  Requests are ``{"op": ...}``;
replies ``{"ok": true, ...}`` or ``{"ok": false, "error": text}``.

=========  ==================================  ==========================================
op         request fields (payload)            reply fields (payload)
=========  ==================================  ==========================================
read32     offset                              value
write32    offset, value                       --
mem_write  addr (payload: the bytes)           --
mem_read   addr, nbytes                        (payload: the bytes)
run        watchdog (cycles; 0: none),         done, cycles (tb clock), report (watchdog)
           progress (seconds; 0: none)         (before it: progress frames, see below)
trace      on                                  --
reset      cycles                              --
info       --                                  cycle, dram counters, trace file
quit       --                                  -- (the simulation ends)
=========  ==================================  ==========================================

A run with ``progress`` > 0 is reported while it runs: about every ``progress``
seconds of wall time the harness sends a frame ``{"ok": true, "progress": true,
"cycles", "seconds", "dispatched", "retired": {load, compute, store}}`` (the
retire counts read from the device's counter registers, as a host polling it
would) before the run's one reply.  The run is
cut into slices of simulated cycles (about 50 ms of wall time each, adapted to
the simulator's speed) so Python can look at the clock between them: on
Verilator, calls of the native clock loop; on Icarus, a Timer beside the waits
for ``irq`` and ``wd_fire``.  Without ``progress`` the run is one piece, as
before.
"""

from __future__ import annotations

import binascii
import json
import os
import socket
import struct
import time
import traceback
from pathlib import Path

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import First, ReadOnly, ReadWrite, RisingEdge, Timer

HEADER = struct.Struct("<II")
#: Clock cycles an AXI4-Lite handshake may take before the harness gives up.
AXIL_TIMEOUT = 10_000
CLOCK_NS = 10
#: ``vta_fast_run``'s cycle limit for "until irq or wd_fire" (and its refusal value).
FAST_RUN_FOREVER = 0xFFFFFFFFFFFFFFFF
#: Wall time a slice of a run reporting progress aims at.
SLICE_SECONDS = 0.05


class LinkClosedError(Exception):
    """The host closed its end of the socket."""


class Link:
    """Framed JSON + payload messages over the inherited socket."""

    def __init__(self, fd: int):
        self.sock = socket.socket(fileno=fd)
        self.sock.setblocking(True)

    def _recv_exact(self, n: int) -> bytes:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            k = self.sock.recv_into(view[got:], n - got)
            if k == 0:
                raise LinkClosedError
            got += k
        return bytes(buf)

    def recv(self) -> tuple[dict, bytes]:
        hlen, plen = HEADER.unpack(self._recv_exact(HEADER.size))
        header = json.loads(self._recv_exact(hlen))
        payload = self._recv_exact(plen) if plen else b""
        return header, payload

    def send(self, header: dict, payload: bytes = b"") -> None:
        raw = json.dumps(header).encode()
        self.sock.sendall(HEADER.pack(len(raw), len(payload)) + raw)
        if payload:
            self.sock.sendall(payload)


def _fast_runner():
    """``vta_fast_run`` of the Verilator build (sim/vta_fast_clock.cpp), or None."""
    if os.environ.get("VTA_FAST_CLOCK") != "1":
        return None
    import ctypes

    try:
        fn = ctypes.CDLL(None).vta_fast_run
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_ulonglong
    fn.argtypes = [ctypes.c_ulonglong]
    return fn


def _coverage_writer():
    """``vta_coverage_write`` of a Verilator build (sim/vta_fast_clock.cpp), or None."""
    import ctypes

    try:
        fn = ctypes.CDLL(None).vta_coverage_write
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_char_p, ctypes.c_int]
    return fn


#: DRAM model settings the ``timing`` request may change between runs (vta_dram.v).
TIMING_FIELDS = ("rlat", "wlat", "stall", "reorder", "outstanding")
#: Cycles a ``timing`` request waits for the DRAM's requests in flight to finish.
TIMING_WAIT = 1_000_000


class Harness:
    """Register, memory and run access to ``vta_tb``."""

    def __init__(self, dut):
        self.dut = dut
        self.clk = dut.clk
        self.word_bytes = int(os.environ.get("VTA_BUS_BYTES", "8"))
        self.mem_bytes = int(os.environ.get("VTA_MEM_BYTES", str(1 << 26)))
        self.bd_file = Path(os.environ["VTA_BD_FILE"])
        self.trace_file = os.environ.get("VTA_TRACE_FILE")
        self.fast_run = _fast_runner()
        self.link: Link | None = None  # set by run_server (progress frames of a run)

    # ------------------------------------------------------------ basics
    async def start(self) -> None:
        dut = self.dut
        Clock(self.clk, CLOCK_NS, unit="ns", impl="gpi").start()
        for name in ("cmd_req", "cmd_write", "cmd_addr", "cmd_wdata", "bd_req", "bd_op",
                     "bd_word", "bd_count", "trace_en", "wd_limit", "wd_clear"):
            getattr(dut, name).value = 0
        self.cmd_seq = 0
        await self.reset(8)

    async def reset(self, cycles: int = 8) -> None:
        self.dut.rst.value = 1
        for _ in range(max(1, cycles)):
            await RisingEdge(self.clk)
        self.dut.rst.value = 0
        await RisingEdge(self.clk)

    async def _command(self, write: bool, offset: int, value: int = 0) -> tuple[int, int]:
        """One AXI4-Lite transaction by the testbench's master; returns (data, resp)."""
        dut = self.dut
        dut.cmd_write.value = int(write)
        dut.cmd_addr.value = offset
        dut.cmd_wdata.value = value & 0xFFFFFFFF
        self.cmd_seq = (self.cmd_seq + 1) & 0xFF
        dut.cmd_req.value = self.cmd_seq
        limit = Timer(AXIL_TIMEOUT * CLOCK_NS, unit="ns")
        while True:
            fired = await First(dut.cmd_ack.value_change, limit)
            await ReadOnly()
            if int(dut.cmd_ack.value) == self.cmd_seq:
                data, resp = int(dut.cmd_rdata.value), int(dut.cmd_resp.value)
                await RisingEdge(self.clk)
                return data, resp
            if fired is limit:
                kind = "write to" if write else "read of"
                raise TimeoutError(f"AXI4-Lite {kind} 0x{offset:03x}: no response within "
                                   f"{AXIL_TIMEOUT} cycles")
            await RisingEdge(self.clk)

    async def write32(self, offset: int, value: int) -> int:
        return (await self._command(True, offset, value))[1]

    async def read32(self, offset: int) -> tuple[int, int]:
        return await self._command(False, offset)

    # ------------------------------------------------------------ backdoor
    async def _backdoor(self, op: int, word: int, count: int) -> None:
        dut = self.dut
        dut.bd_op.value = op
        dut.bd_word.value = word
        dut.bd_count.value = count
        req = (int(dut.bd_ack.value) + 1) & 0xFF
        dut.bd_req.value = req
        for _ in range(32):
            await RisingEdge(self.clk)
            await ReadOnly()
            if int(dut.bd_ack.value) == req:
                await RisingEdge(self.clk)
                return
        raise TimeoutError("DRAM backdoor did not acknowledge")

    async def _dump_words(self, word: int, count: int) -> np.ndarray:
        await self._backdoor(2, word, count)
        return _decode_words(self.bd_file.read_bytes(), count, self.word_bytes)

    def _check(self, addr: int, nbytes: int) -> None:
        if addr < 0 or nbytes < 0 or addr + nbytes > self.mem_bytes:
            raise ValueError(f"device memory access 0x{addr:x}..0x{addr + nbytes:x} lies outside "
                             f"the {self.mem_bytes}-byte device memory")

    async def mem_read(self, addr: int, nbytes: int) -> bytes:
        self._check(addr, nbytes)
        if nbytes == 0:
            return b""
        w = self.word_bytes
        first, end = addr // w, -(-(addr + nbytes) // w)
        data = await self._dump_words(first, end - first)
        off = addr - first * w
        return data[off:off + nbytes].tobytes()

    async def mem_write(self, addr: int, payload: bytes) -> None:
        nbytes = len(payload)
        self._check(addr, nbytes)
        if nbytes == 0:
            return
        w = self.word_bytes
        first, end = addr // w, -(-(addr + nbytes) // w)
        count = end - first
        buf = np.zeros(count * w, dtype=np.uint8)
        off = addr - first * w
        if off or (addr + nbytes) % w:  # keep the bytes around a partial word
            head = await self._dump_words(first, 1)
            buf[:w] = head
            if count > 1:
                tail = await self._dump_words(end - 1, 1)
                buf[-w:] = tail
        buf[off:off + nbytes] = np.frombuffer(payload, dtype=np.uint8)
        # raw big-endian words for $fread (bd_op 3)
        self.bd_file.write_bytes(buf.reshape(count, w)[:, ::-1].tobytes())
        await self._backdoor(3, first, count)

    # ------------------------------------------------------------ runs
    async def run(self, watchdog: int, progress: float = 0.0,
                  link: Link | None = None) -> dict:
        """Run until ``irq`` or ``wd_fire``; with ``progress`` > 0, send progress frames on
        ``link`` about every ``progress`` seconds meanwhile."""
        dut = self.dut
        dut.wd_limit.value = max(0, min(int(watchdog), 0xFFFFFFFF))
        dut.wd_clear.value = 1
        start_cycle = int(dut.cycle.value)
        t0 = time.perf_counter()
        await RisingEdge(self.clk)
        dut.wd_clear.value = 0
        await RisingEdge(self.clk)
        await ReadOnly()
        if not dut.irq.value:
            await RisingEdge(self.clk)
            if progress > 0 and link is not None:
                await self._run_reporting(start_cycle, t0, progress, link)
            else:
                await self._run_to_end()
            await ReadOnly()
        done = bool(dut.irq.value)
        cycles = int(dut.cycle.value) - start_cycle
        # the monitor flushes its trace file at the edge after irq / wd_fire rose
        await RisingEdge(self.clk)
        await ReadOnly()
        await RisingEdge(self.clk)
        reply = {"done": done, "cycles": cycles, "seconds": time.perf_counter() - t0,
                 "protocol_errors": int(dut.dram_protocol_errors.value),
                 "dram_busy": bool(dut.dram_busy.value)}
        if not done:
            reply["report"] = await self.report()
        return reply

    def _stopped(self) -> bool:
        return bool(self.dut.irq.value or self.dut.wd_fire.value)

    async def _run_to_end(self) -> None:
        """Run (from just after a rising edge) until ``irq`` or ``wd_fire`` is high."""
        dut = self.dut
        if self.fast_run is not None:
            # Verilator: the native clock loop runs to irq / wd_fire (see
            # sim/vta_fast_clock.cpp), from a ReadWrite callback with clk high
            await ReadWrite()
            if self.fast_run(FAST_RUN_FOREVER) == FAST_RUN_FOREVER:
                raise RuntimeError("vta_fast_run refused to run (clk low or model unset)")
            await RisingEdge(self.clk)
        if not self._stopped():
            await First(RisingEdge(dut.irq), RisingEdge(dut.wd_fire))

    async def _run_reporting(self, start_cycle: int, t0: float, interval: float,
                             link: Link) -> None:
        """:meth:`_run_to_end` in slices, with a progress frame about every ``interval`` s."""
        dut = self.dut
        chunk = 64  # cycles per slice: adapted to about SLICE_SECONDS of wall time
        due = t0 + interval
        while not self._stopped():
            if self.fast_run is not None:
                await ReadWrite()
                while True:
                    began = time.perf_counter()
                    n = self.fast_run(chunk)
                    if n == FAST_RUN_FOREVER:
                        raise RuntimeError("vta_fast_run refused to run (clk low or model unset)")
                    now = time.perf_counter()
                    if n < chunk or self._stopped() or now >= due:
                        break
                    chunk = _next_chunk(chunk, now - began)
                await RisingEdge(self.clk)
            else:
                began = time.perf_counter()
                limit = Timer(chunk * CLOCK_NS, unit="ns")
                fired = await First(RisingEdge(dut.irq), RisingEdge(dut.wd_fire), limit)
                if fired is not limit:
                    return  # where _run_to_end returns
                await ReadOnly()  # settled values for the _stopped() check
                now = time.perf_counter()
                chunk = _next_chunk(chunk, now - began)
                if now < due:
                    continue
                await RisingEdge(self.clk)  # register reads start at an edge
            if now >= due and not self._stopped():
                link.send({"ok": True, "progress": True, **await self._progress(start_cycle, t0)})
                due = time.perf_counter() + interval

    async def _progress(self, start_cycle: int, t0: float) -> dict:
        """Where the run is: cycles, instructions dispatched and retired."""
        from vta import regs

        dut = self.dut
        cycles = int(dut.cycle.value) - start_cycle
        fetched = int(dut.last_fetch.value)
        retired = {m: (await self.read32(regs.offset(f"{m.upper()}_INSNS")))[0]
                   for m in ("load", "compute", "store")}
        return {"cycles": cycles, "seconds": time.perf_counter() - t0,
                "dispatched": 0 if fetched == 0xFFFFFFFF else fetched + 1, "retired": retired}

    async def report(self) -> dict:
        """What each engine was doing when the watchdog fired."""
        from vta import regs

        dut = self.dut

        def idx(sig) -> int | None:
            v = int(sig.value)
            return None if v == 0xFFFFFFFF else v

        engines = {}
        for m in ("load", "compute", "store"):
            started, retired = idx(getattr(dut, f"{m}_started")), idx(getattr(dut, f"{m}_retired"))
            busy = started is not None and started != retired
            engines[m] = {"started": started, "retired": retired, "busy": busy}
        values = {}
        for name in ("STATUS", "FETCH_INDEX", "TOKENS"):
            values[name] = (await self.read32(regs.offset(name)))[0]
        for m in ("load", "compute", "store"):
            values[f"{m}_insns"] = (await self.read32(regs.offset(f"{m.upper()}_INSNS")))[0]
        return {"cycle": int(dut.cycle.value), "idle_cycles": int(dut.idle_cycles.value),
                "last_dispatch": idx(dut.last_fetch), "engines": engines, "registers": values}

    async def handle(self, op: str, req: dict, payload: bytes) -> tuple[dict, bytes]:
        """Perform request ``op``; returns the reply fields and payload (subclasses add ops)."""
        out: dict = {}
        data = b""
        if op == "read32":
            out["value"], out["resp"] = await self.read32(req["offset"])
        elif op == "read32_many":  # one request for many registers (the counters)
            out["values"] = [(await self.read32(offset))[0] for offset in req["offsets"]]
        elif op == "write32":
            out["resp"] = await self.write32(req["offset"], req["value"])
        elif op == "mem_write":
            await self.mem_write(req["addr"], payload)
        elif op == "mem_read":
            data = await self.mem_read(req["addr"], req["nbytes"])
        elif op == "run":
            out.update(await self.run(req.get("watchdog", 0), req.get("progress", 0.0),
                                      self.link))
        elif op == "trace":
            self.dut.trace_en.value = 1 if req.get("on") else 0
            await RisingEdge(self.clk)
        elif op == "reset":
            await self.reset(req.get("cycles", 8))
        elif op == "info":
            out.update(self.info())
        elif op == "timing":
            await self.set_timing(req)
        elif op == "coverage":
            writer = _coverage_writer()
            out["written"] = bool(writer and writer(str(req["path"]).encode(),
                                                    int(bool(req.get("zero")))))
        else:
            raise ValueError(f"unknown request {op!r}")
        return out, data

    async def set_timing(self, req: dict) -> None:
        """Set the DRAM model's latency, stall probability, response order and outstanding
        requests, and restart its stall generator from ``seed``.  Requests still in flight
        (a run that faulted leaves some) are answered first, under the old timing."""
        dram = self.dut.dram
        for _ in range(TIMING_WAIT):
            if not self.dut.dram_busy.value:
                break
            await RisingEdge(self.clk)
        else:
            raise RuntimeError(f"the DRAM stayed busy for {TIMING_WAIT} cycles: its timing "
                               "cannot change")
        for name in TIMING_FIELDS:
            if name in req:
                getattr(dram, name).value = int(req[name])
        if "seed" in req:
            dram.rnd.value = int(req["seed"]) & 0xFFFFFFFF or 1

    def info(self) -> dict:
        dut = self.dut
        return {"cycle": int(dut.cycle.value),
                "dram_busy": bool(dut.dram_busy.value),
                "dram_protocol_errors": int(dut.dram_protocol_errors.value),
                "dram_read_beats": int(dut.dram_read_beats.value),
                "dram_write_beats": int(dut.dram_write_beats.value),
                "trace_file": self.trace_file}


def _next_chunk(chunk: int, seconds: float) -> int:
    """Cycles for the next slice, from the last slice of ``chunk`` cycles taking ``seconds``."""
    scale = SLICE_SECONDS / max(seconds, 1e-6)
    return int(min(max(chunk * min(max(scale, 0.5), 4.0), 16), 1 << 26))


_XZ_TO_ZERO = bytes.maketrans(b"xXzZ", b"0000")


def _decode_words(text: bytes, count: int, w: int) -> np.ndarray:
    """Bytes of ``count`` words from ``$writememh`` text (comment / address lines skipped)."""
    start = 0
    while text.startswith((b"//", b"@"), start):  # leading comment lines (Icarus)
        start = text.index(b"\n", start) + 1
    body = text[start:]
    if len(body) == count * (2 * w + 1):  # fast path: one word per line, nothing else
        digits = np.frombuffer(body, dtype=np.uint8).reshape(count, 2 * w + 1)[:, :-1]
        hexdigits = digits.tobytes()
    else:
        lines = (ln.strip() for ln in body.splitlines())
        hexdigits = b"".join(ln for ln in lines if ln and not ln.startswith((b"//", b"@")))
    hexdigits = hexdigits.translate(_XZ_TO_ZERO)
    if len(hexdigits) != 2 * w * count:
        raise RuntimeError(f"DRAM backdoor dump of {count} words returned {len(hexdigits) // 2} "
                           "bytes")
    raw = np.frombuffer(binascii.unhexlify(hexdigits), dtype=np.uint8)
    return raw.reshape(count, w)[:, ::-1].reshape(-1)


async def run_server(h: Harness) -> None:
    """Serve the host's requests to harness ``h`` until it says quit or closes the socket."""
    link = Link(int(os.environ["VTA_HARNESS_FD"]))
    h.link = link
    await h.start()
    link.send({"ok": True, "ready": True, **h.info()})
    while True:
        try:
            req, payload = link.recv()
        except LinkClosedError:
            return
        op = req.get("op")
        if op == "quit":
            link.send({"ok": True})
            return
        try:
            out, data = await h.handle(op, req, payload)
            out = {"ok": True, **out}
        except (ValueError, TimeoutError, RuntimeError, KeyError) as exc:
            out = {"ok": False, "error": f"{type(exc).__name__}: {exc}",
                   "traceback": traceback.format_exc(limit=4)}
            data = b""
        link.send(out, data)


@cocotb.test()
async def serve(dut):
    """Serve the host's requests until it says quit or closes the socket."""
    await run_server(Harness(dut))
