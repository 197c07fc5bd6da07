"""DRAM timing drawn per program: latency, stalls, response order and outstanding requests.

With randomised timing (the default of ``vta regress`` on the RTL backends), each
program runs under a DRAM timing drawn from its seed alone, so a seed still
names everything about a run: ``vta regress --seed S -n 1`` repeats the same
program under the same timing.  The simulator keeps running between programs;
the harness changes the DRAM model's settings (and restarts its random
generator) before each one (:meth:`vta.driver.rtl.RTLTransport.set_timing`).

Classes, for cross coverage:

* latency ``short`` (0..2 cycles), ``medium`` (3..16), ``long`` (17..64), drawn
  for reads; writes get their own value from the same class;
* stall ``none`` (0), ``low`` (1/256..8/256 per channel and cycle), ``high``
  (16/256..96/256);
* reorder: read bursts of different IDs answered out of order, or in order;
* outstanding: 1, 2, 4 or 8 requests per direction.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: Ranges drawn from, per class (inclusive; stall in 1/256 units).  Recorded in the run's plan.
LATENCY_CLASSES: dict[str, tuple[int, int]] = {"short": (0, 2), "medium": (3, 16),
                                               "long": (17, 64)}
STALL_CLASSES: dict[str, tuple[int, int]] = {"none": (0, 0), "low": (1, 8), "high": (16, 96)}
OUTSTANDING = (1, 2, 4, 8)
RANGES: dict[str, Any] = {"latency": LATENCY_CLASSES, "stall_256": STALL_CLASSES,
                          "reorder": [0, 1], "outstanding": list(OUTSTANDING)}


def timing_of(seed: int) -> dict[str, Any]:
    """The DRAM timing of the program with ``seed`` (the same for every configuration)."""
    rng = np.random.default_rng([seed, 0x7141])
    lat_class = str(rng.choice(list(LATENCY_CLASSES)))
    stall_class = str(rng.choice(list(STALL_CLASSES)))
    lo, hi = LATENCY_CLASSES[lat_class]
    rlat, wlat = (int(x) for x in rng.integers(lo, hi + 1, size=2))
    lo, hi = STALL_CLASSES[stall_class]
    stall = int(rng.integers(lo, hi + 1))
    return {"latency": [rlat, wlat], "stall": stall / 256, "reorder": bool(rng.integers(2)),
            "outstanding": int(rng.choice(OUTSTANDING)), "seed": int(rng.integers(1, 2**32)),
            "class": f"{lat_class}-latency/{stall_class}-stall"}


def device_settings(timing: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``set_timing`` for ``timing``."""
    return {k: (tuple(v) if k == "latency" else v) for k, v in timing.items() if k != "class"}


def cli_flags(timing: dict[str, Any]) -> str:
    """``vta run`` / ``vta diff`` options giving the DRAM ``timing`` (latency and stall)."""
    rlat, wlat = timing["latency"]
    return f"--latency {rlat},{wlat} --stall {timing['stall']:g}"
