"""The persistent cocotb harness for an AWS wrapper testbench (sim/aws/vta_aws_tb.v).

Extends sim/vta_harness.py (same wire format, same register, backdoor, run and
trace requests; ``mem_write`` / ``mem_read`` stay the card-memory backdoor) with
requests that act as the AWS shell does:

===========  ===================================  ========================================
op           request fields (payload)             reply fields (payload)
===========  ===================================  ========================================
pcis_write   addr, id, beats (payload: the bytes)  pcis counters (below)
pcis_read    addr, nbytes, id, beats               pcis counters (payload: the bytes)
pcis_post    as pcis_write (one buffer-full), but   --
             returns once its first request is
             on the bus: later requests run while
             it is in flight
pcis_wait    --                                   pcis counters, once it is complete
hold         on: hold the custom logic in reset    -- (released: 64 cycles later)
flr          pulse the function-level reset        flr_done (cycles until cl_sh_flr_done),
                                                   flr_done_again (further acks while held)
info         --                                   the base fields, pcis counters,
                                                  ocl_timeouts, irq_seen, cl_id0, cl_id1
===========  ===================================  ========================================

PCIS transfers go through the testbench's HDL PCIS master (sim/aws/vta_pcis_master.v):
the harness stages the bytes in a file, posts one command per buffer-full and wakes
once per command.  The pcis counters (``pc_late``, ``pc_max_wait``, ``pc_id_errors``,
``pc_resp_errors``) are cumulative since reset; the host compares them.
"""

from __future__ import annotations

import os
from pathlib import Path

import cocotb
import numpy as np
import vta_harness as base
from cocotb.triggers import First, ReadOnly, RisingEdge, Timer

#: Bytes the PCIS master's staging buffer holds (2**LOG_BUF_WORDS 64-byte words).
PCIS_BUFFER = 1 << 20
WORD = 64


class AwsHarness(base.Harness):
    """Register, memory, PCIS and run access to ``vta_aws_tb``."""

    def __init__(self, dut):
        super().__init__(dut)
        self.pcis_file = Path(os.environ["VTA_PCIS_FILE"])
        self.pc_seq = 0
        self.pc_posted = (0, 0, 0)

    async def start(self) -> None:
        for name in ("pc_req", "pc_op", "pc_addr", "pc_bytes", "pc_id", "pc_beats", "cl_hold",
                     "flr"):
            getattr(self.dut, name).value = 0
        await super().start()

    # ------------------------------------------------------------ PCIS
    def _pcis_post(self, op: int, addr: int, nbytes: int, ident: int, beats: int) -> None:
        """Hand the PCIS master one command (it starts at the next clock edge)."""
        dut = self.dut
        dut.pc_op.value = op
        dut.pc_addr.value = addr
        dut.pc_bytes.value = nbytes
        dut.pc_id.value = ident & 0xFFFF
        dut.pc_beats.value = beats
        self.pc_seq = (self.pc_seq + 1) & 0xFF
        dut.pc_req.value = self.pc_seq
        self.pc_posted = (op, addr, nbytes)

    async def _pcis_wait(self) -> None:
        """Wait until the posted PCIS command is complete."""
        dut = self.dut
        op, addr, nbytes = self.pc_posted
        words = (addr % WORD + nbytes + WORD - 1) // WORD
        limit_cycles = 20_000 + 200 * words
        limit = Timer(limit_cycles * base.CLOCK_NS, unit="ns")
        while int(dut.pc_ack.value) != self.pc_seq:
            fired = await First(dut.pc_ack.value_change, limit)
            await ReadOnly()
            if int(dut.pc_ack.value) == self.pc_seq:
                break
            if fired is limit:
                kind = "write to" if op == 1 else "read of"
                raise TimeoutError(f"PCIS {kind} {nbytes} bytes at 0x{addr:x} did not complete "
                                   f"within {limit_cycles} cycles")
            await RisingEdge(self.clk)
        await RisingEdge(self.clk)

    async def _pcis_command(self, op: int, addr: int, nbytes: int, ident: int,
                            beats: int) -> None:
        self._pcis_post(op, addr, nbytes, ident, beats)
        await self._pcis_wait()

    def _chunks(self, addr: int, nbytes: int):
        """(address, bytes) pieces of at most a buffer-full, split on 64-byte words."""
        done = 0
        while done < nbytes:
            a = addr + done
            n = min(nbytes - done, PCIS_BUFFER - a % WORD)
            yield a, done, n
            done += n

    async def pcis_write(self, addr: int, payload: bytes, ident: int, beats: int) -> None:
        data = np.frombuffer(payload, dtype=np.uint8)
        for a, done, n in self._chunks(addr, len(payload)):
            off = a % WORD
            words = (off + n + WORD - 1) // WORD
            buf = np.zeros(words * WORD, dtype=np.uint8)
            buf[off:off + n] = data[done:done + n]
            # raw words, most significant byte first ($fread)
            self.pcis_file.write_bytes(buf.reshape(words, WORD)[:, ::-1].tobytes())
            await self._pcis_command(1, a, n, ident, beats)

    async def pcis_read(self, addr: int, nbytes: int, ident: int, beats: int) -> bytes:
        out = bytearray()
        for a, _, n in self._chunks(addr, nbytes):
            off = a % WORD
            words = (off + n + WORD - 1) // WORD
            await self._pcis_command(2, a, n, ident, beats)
            raw = base._decode_words(self.pcis_file.read_bytes(), words, WORD)
            out += raw[off:off + n].tobytes()
        return bytes(out)

    def pcis_counters(self) -> dict:
        dut = self.dut
        return {name: int(getattr(dut, name).value)
                for name in ("pc_late", "pc_max_wait", "pc_id_errors", "pc_resp_errors")}

    # ------------------------------------------------------------ requests
    async def handle(self, op: str, req: dict, payload: bytes) -> tuple[dict, bytes]:
        dut = self.dut
        if op == "pcis_write":
            await self.pcis_write(req["addr"], payload, req.get("id", 0), req.get("beats", 1))
            return self.pcis_counters(), b""
        if op == "pcis_read":
            data = await self.pcis_read(req["addr"], req["nbytes"], req.get("id", 0),
                                        req.get("beats", 1))
            return self.pcis_counters(), data
        if op == "pcis_post":  # one write of at most a buffer-full, not waited for
            data = np.frombuffer(payload, dtype=np.uint8)
            addr, off = req["addr"], req["addr"] % WORD
            words = (off + len(data) + WORD - 1) // WORD
            if words * WORD > PCIS_BUFFER:
                raise ValueError(f"pcis_post takes at most {PCIS_BUFFER} bytes")
            buf = np.zeros(words * WORD, dtype=np.uint8)
            buf[off:off + len(data)] = data
            self.pcis_file.write_bytes(buf.reshape(words, WORD)[:, ::-1].tobytes())
            self._pcis_post(1, addr, len(data), req.get("id", 0), req.get("beats", 1))
            for _ in range(4):  # its first request is on the bus, as PCIe ordering would have it
                await RisingEdge(self.clk)
            return {}, b""
        if op == "pcis_wait":
            await self._pcis_wait()
            return self.pcis_counters(), b""
        if op == "hold":
            # on release, time for an access the shell model had given up on to drain
            dut.cl_hold.value = 1 if req.get("on") else 0
            for _ in range(4 if req.get("on") else 64):
                await RisingEdge(self.clk)
            return {}, b""
        if op == "flr":
            dut.flr.value = 1
            for cycles in range(1, 64):
                await RisingEdge(self.clk)
                await ReadOnly()
                if int(dut.flr_done.value):
                    break
            else:
                cycles = None
            # the shell may keep sh_cl_flr_assert up a while after the acknowledgement:
            # it must not be acknowledged again
            again = 0
            for _ in range(8):
                await RisingEdge(self.clk)
                await ReadOnly()
                again += int(dut.flr_done.value)
            await RisingEdge(self.clk)
            dut.flr.value = 0
            for _ in range(4):
                await RisingEdge(self.clk)
            return {"flr_done": cycles, "flr_done_again": again}, b""
        return await super().handle(op, req, payload)

    def info(self) -> dict:
        dut = self.dut
        return {**super().info(), **self.pcis_counters(),
                "ocl_timeouts": int(dut.cmd_timeouts.value),
                "irq_seen": int(dut.irq_seen.value),
                "cl_id0": int(dut.cl_id0.value), "cl_id1": int(dut.cl_id1.value)}


@cocotb.test()
async def serve(dut):
    """Serve the host's requests until it says quit or closes the socket."""
    await base.run_server(AwsHarness(dut))
