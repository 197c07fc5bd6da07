#!/usr/bin/env python3
"""A/B of the golden model: another revision's fast golden model against this tree's, cold.

Captures the runs of ``vta.ops.conv2d`` on the given ResNet-18 layers (as
``golden_fsim.py`` does; with ``--matmul N`` also its chunked N^3 matmul stream),
then, for every round, runs each capture on a fresh ``GoldenModel`` of both
versions -- in alternating order, each run preceded by a copy of ``--evict-mib``
MiB that empties the caches, as the benchmark's memory traffic between two cold
runs does -- and times ``GoldenModel.run`` alone.  The device memory of both is
checked equal after every run.

Reported per layer: the median over rounds of the per-round ratio new / old
(below 1: this tree is faster), which a host whose speed drifts from minute to
minute leaves alone, with the best and median times of each.  ``--clock cpu`` times
the thread's CPU time instead of the wall clock, leaving out the time other
processes take the core (caches they evict still count).

    python scripts/bench/golden_ab.py --base main [--layers C4,C7,C10] [--rounds 60]
                                      [--matmul 256] [--clock cpu]
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _blas  # noqa: F401  (first: pins BLAS threads before NumPy loads)
import numpy as np
from golden_fsim import _mem_size, conv_workload, matmul_workload  # same folder

import vta
from vta import golden as new_golden
from vta import ops

REPO = Path(__file__).resolve().parents[2]


def load_base(rev: str):
    """The golden model at git revision ``rev``, imported as ``vta._golden_base``: the module
    ``vta/golden.py`` of revisions before the split, the package ``vta/golden/`` after."""
    try:
        names = subprocess.run(["git", "-C", str(REPO), "ls-tree", "-r", "--name-only", rev,
                                "vta/golden.py", "vta/golden/"], check=True,
                               capture_output=True, text=True).stdout.split()
        sources = {name: subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:{name}"],
                                        check=True, capture_output=True, text=True).stdout
                   for name in names if name.endswith(".py")}
    except subprocess.CalledProcessError as exc:
        raise SystemExit(f"--base {rev}: {exc.stderr.strip()}") from None
    folder = Path(tempfile.mkdtemp()) / "golden_base"
    folder.mkdir()
    for name, source in sources.items():  # vta/golden.py, or the files below vta/golden/
        path = folder / (Path(name).name if name == "vta/golden.py" else
                         Path(name).relative_to("vta/golden"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    if "vta/golden.py" in sources:
        spec = importlib.util.spec_from_file_location("vta._golden_base", folder / "golden.py")
    elif sources:
        spec = importlib.util.spec_from_file_location(
            "vta._golden_base", folder / "__init__.py", submodule_search_locations=[str(folder)])
    else:
        raise SystemExit(f"--base {rev}: no vta/golden.py or vta/golden/ there")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="git revision of the old golden model")
    parser.add_argument("--layers", default="C4,C7,C10", help="comma-separated ResNet-18 layers")
    parser.add_argument("--rounds", type=int, default=60, help="rounds (default 60)")
    parser.add_argument("--matmul", type=int, default=0, metavar="N",
                        help="also the chunked N^3 matmul stream of golden_fsim.py (e.g. 256)")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="time each run by the wall clock (default) or by this thread's "
                        "CPU time (time.thread_time: preemption by other processes left out)")
    parser.add_argument("--evict-mib", type=int, default=64,
                        help="MiB copied before each run to empty the caches (default 64; 0: none)")
    parser.add_argument("--config", default="default", help="preset or vta_config.json")
    parser.add_argument("--blas-threads", default="1", help="BLAS threads (default 1)")
    args = parser.parse_args()

    old_golden = load_base(args.base)
    cfg = vta.Config.load(args.config)
    rng = np.random.default_rng(0)
    layers = args.layers.split(",")
    captures = {}
    for name in ops.RESNET18_LAYERS:  # every layer drawn, so each one's data is fixed
        workload = conv_workload(cfg, name, rng)
        if name in layers:
            captures[name] = workload.runs
    unknown = set(layers) - set(captures)
    if unknown:
        raise SystemExit(f"--layers: no ResNet-18 layer {', '.join(sorted(unknown))}")
    if args.matmul:
        layers.append("matmul")
        captures["matmul"] = matmul_workload(cfg, args.matmul).runs
    evict = np.ones(args.evict_mib << 20, np.uint8)
    scratch = np.empty_like(evict)

    clock = time.perf_counter if args.clock == "wall" else time.thread_time

    def cold(module, cap) -> tuple[float, np.ndarray]:
        model = module.GoldenModel(cfg, _mem_size(cap.image.size))
        model.mem[:cap.image.size] = cap.image
        if evict.size:
            np.copyto(scratch, evict)
        start = clock()
        model.run(cap.insn_addr, cap.insn_count, deadline=time.monotonic() + 60)
        return clock() - start, model.mem

    print(f"old: the golden model at {args.base}; new: this tree; {args.rounds} rounds, "
          f"{args.evict_mib} MiB evicted before each run, BLAS threads {args.blas_threads}, "
          f"{args.clock} clock")
    print()
    print("| layer | new / old (median of rounds) | old best ms | new best ms "
          "| old median ms | new median ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in layers:
        old_t, new_t = [], []
        for r in range(args.rounds):
            order = ((old_golden, old_t), (new_golden, new_t))
            sums = {}
            for module, times in order if r % 2 else order[::-1]:
                total = 0.0
                for k, cap in enumerate(captures[name]):
                    seconds, mem = cold(module, cap)
                    total += seconds
                    sums.setdefault(k, []).append(mem)
                times.append(total)
            for k, (a, b) in sums.items():
                if not np.array_equal(a, b):
                    raise SystemExit(f"{name}, run {k}: old and new leave different memory")
        old_t, new_t = np.array(old_t) * 1e3, np.array(new_t) * 1e3
        print(f"| {name} | {np.median(new_t / old_t):.3f} | {old_t.min():.3f} | "
              f"{new_t.min():.3f} | {np.median(old_t):.3f} | {np.median(new_t):.3f} |")


if __name__ == "__main__":
    main()
