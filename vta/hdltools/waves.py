"""Waveforms of a run: the whole session as FST, or a window of cycles as VCD.

The simulators dump FST (Verilator needs the liblz4 and zlib headers to build
its FST writer: ``apt-get install liblz4-dev zlib1g-dev``).  :func:`window`
cuts a window out of such a dump: it reads the FST with ``pywellen`` (the
``waves`` extra) and writes a VCD holding every signal's value at the window's
first cycle and every change up to its last.  Cycles are the testbench's
``vta_tb.cycle`` counter, the numbers :mod:`vta.trace` reports.
"""

from __future__ import annotations

import string
from pathlib import Path

_CYCLE = "vta_tb.cycle"


def _ident(n: int) -> str:
    chars = string.ascii_letters + string.digits + "!%&()*+,-./:;<=>?@[]^_{|}~"  # no # or $
    out = ""
    n += 1
    while n:
        n, r = divmod(n - 1, len(chars))
        out = chars[r] + out
    return out


def _value(value, width: int, ident: str, real: bool) -> str:
    if real:
        return f"r{value} {ident}"
    if width == 1:
        return f"{value}{ident}"
    text = format(value, "b") if isinstance(value, int) else str(value)
    return f"b{text} {ident}"


def window(fst: str | Path, vcd: str | Path, first_cycle: int, last_cycle: int, *,
           source: str | None = None) -> dict:
    """Write the cycles ``first_cycle..last_cycle`` of waveform ``fst`` to ``vcd``.

    The VCD's header comment says what the cycles are of: ``source`` (for instance
    ``"a run of prog.vtaprog on icarus"``), by default the FST file's name.  Returns
    ``{"signals": n, "start_time": t0, "end_time": t1}`` (times in the dump's timescale).
    Raises ``ValueError`` when the window lies outside the dump and ``ImportError``
    without pywellen.
    """
    try:
        import pywellen
    except ImportError:
        raise ImportError("a waveform window needs pywellen: pip install 'vta[waves]'") from None
    wave = pywellen.Waveform(str(fst))
    variables = list(wave.all_vars())
    counter = next((v for v in variables if v.full_name == _CYCLE), None)
    if counter is None:
        raise ValueError(f"{fst} has no {_CYCLE} signal to find cycles by")
    times: dict[int, int] = {}

    def on_cycle(time, _signal, value):
        if isinstance(value, int) and value not in times:
            times[value] = time

    wave.stream_changes(on_cycle, [counter])
    if not times or first_cycle > max(times) or last_cycle < min(times):
        span = f"{min(times)}..{max(times)}" if times else "none"
        raise ValueError(f"cycles {first_cycle}..{last_cycle} are outside the dump (cycles "
                         f"{span})")
    t0 = times.get(first_cycle, min(times[c] for c in times if c >= first_cycle))
    later = [times[c] for c in times if c > last_cycle]
    t1 = min(later) - 1 if later else None
    ids: dict[str, str] = {}
    meta: dict[str, tuple[int, bool]] = {}
    by_signal: dict[object, list[str]] = {}
    for v in variables:  # variables sharing a signal share its identifier
        ident = ids.setdefault(str(v.signal_id), _ident(len(ids)))
        meta[ident] = (v.bitwidth or 1, v.is_real)
        by_signal.setdefault(str(v.signal_id), [ident])
    current: dict[str, str] = {}
    changes: list[tuple[int, str]] = []

    def on_change(time, signal, value):
        if t1 is not None and time > t1:
            return
        for ident in by_signal[str(signal)]:
            width, real = meta[ident]
            text = _value(value, width, ident, real)
            if time <= t0:
                current[ident] = text
            else:
                changes.append((time, text))

    wave = pywellen.Waveform(str(fst))  # a Waveform streams each signal once: open it again
    variables = list(wave.all_vars())
    wave.stream_changes(on_change, variables)
    scale = wave.timescale
    lines = [f"$comment cycles {first_cycle}..{last_cycle} of {source or Path(fst).name}, cut "
             "by vta $end", f"$timescale {scale.factor}{scale.unit} $end"]
    lines += _scopes(variables, ids)
    lines.append("$enddefinitions $end")
    lines.append(f"#{t0}")
    lines.append("$dumpvars")
    lines += [current[i] for i in sorted(current)]
    lines.append("$end")
    last_time = t0
    for time, text in sorted(changes, key=lambda c: c[0]):
        if time != last_time:
            lines.append(f"#{time}")
            last_time = time
        lines.append(text)
    Path(vcd).write_text("\n".join(lines) + "\n")
    return {"signals": len(ids), "start_time": t0, "end_time": t1 if t1 is not None else
            last_time}


def _scopes(variables, ids: dict[str, str]) -> list[str]:
    """$scope / $var declarations from the variables' dotted names."""
    lines: list[str] = []
    stack: list[str] = []
    for v in sorted(variables, key=lambda v: v.full_name.split(".")[:-1]):
        *path, name = v.full_name.split(".")
        while stack and stack != path[:len(stack)]:
            lines.append("$upscope $end")
            stack.pop()
        for part in path[len(stack):]:
            lines.append(f"$scope module {part} $end")
            stack.append(part)
        kind = "real" if v.is_real else "wire"
        lines.append(f"$var {kind} {v.bitwidth or 1} {ids[str(v.signal_id)]} {name} $end")
    lines += ["$upscope $end"] * len(stack)
    return lines
