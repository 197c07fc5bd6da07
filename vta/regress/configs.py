"""The configurations a regression runs on: presets, files and random valid ones.

A configuration spec (``vta regress --configs``) is a comma-separated list of

* a preset name (``default``, ``tiny``, ``aws``),
* the path of a ``vta_config.json``,
* ``random`` or ``random:N``: N configurations drawn from the run's seed by
  :func:`random_config` (batch 1, 2 or 4; block 2..16; buffer depths
  8..256 entries; bus 64..512 bits).  Each is named ``rand<SEED>`` and
  written to the output folder as ``rand<SEED>.json``, so that a failure on
  it replays with ``--configs rand<SEED>.json``.

Random configurations stay small (a few hundred entries per buffer) so that
simulation, the generator's whole-buffer prologue and the build stay cheap;
each one is a separate simulator build (about a minute, then cached).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..config import PRESETS, Config
from ..errors import ConfigError

#: log2 ranges random configurations draw from (inclusive).
RANDOM_RANGES: dict[str, tuple[int, int]] = {
    "LOG_BATCH": (0, 2),
    "LOG_BLOCK": (1, 4),
    "LOG_BUS_WIDTH": (6, 9),
    "inp_depth": (4, 8),
    "wgt_depth": (3, 7),
    "acc_depth": (4, 8),
    "uop_depth": (5, 10),
}


def random_config(seed: int) -> Config:
    """A random valid configuration, the same for the same ``seed``."""
    rng = np.random.default_rng([seed, 0x5EED])

    def draw(key: str) -> int:
        lo, hi = RANDOM_RANGES[key]
        return int(rng.integers(lo, hi + 1))

    for _ in range(100):
        batch, block, bus = draw("LOG_BATCH"), draw("LOG_BLOCK"), draw("LOG_BUS_WIDTH")
        # buffer sizes in bytes from depths: log2(depth) + log2(element bytes)
        keys = {
            "LOG_INP_WIDTH": 3, "LOG_WGT_WIDTH": 3, "LOG_ACC_WIDTH": 5,
            "LOG_BATCH": batch, "LOG_BLOCK": block, "LOG_BUS_WIDTH": bus,
            "LOG_INP_BUFF_SIZE": draw("inp_depth") + batch + block,
            "LOG_WGT_BUFF_SIZE": draw("wgt_depth") + 2 * block,
            "LOG_ACC_BUFF_SIZE": draw("acc_depth") + batch + block + 2,
            "LOG_UOP_BUFF_SIZE": draw("uop_depth") + 2,
        }
        try:
            return Config.from_dict(keys, name=f"rand{seed}", source=f"random configuration {seed}")
        except ConfigError:
            continue  # a layout that does not fit the instruction; draw again
    raise ConfigError(f"no valid random configuration found for seed {seed}")


def parse_configs(spec: str, seed: int) -> list[Config]:
    """The configurations of a ``--configs`` spec (see the module docstring)."""
    out: list[Config] = []
    drawn = 0
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        if item == "random" or item.startswith("random:"):
            count_text = item.partition(":")[2] or "1"
            if not count_text.isdigit() or int(count_text) < 1:
                raise ConfigError(f"random configurations must be asked for as random or "
                                  f"random:N with N >= 1, not {item!r}")
            for _ in range(int(count_text)):
                out.append(random_config(seed * 1000 + drawn))
                drawn += 1
        elif item in PRESETS or Path(item).is_file():
            out.append(Config.load(item))
        else:
            raise ConfigError(f"a configuration must be a preset ({', '.join(PRESETS)}), a "
                              f"vta_config.json path or random[:N], not {item!r}")
    if not out:
        raise ConfigError(f"no configuration in {spec!r}")
    names = [c.name for c in out]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise ConfigError(f"configuration {dup!r} is named twice in {spec!r}")
    return out
