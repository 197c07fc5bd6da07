#!/usr/bin/env python3
"""Planted bugs: does ``vta regress`` find each golden-model mutation, and how small does it
shrink?

For every mutation of the golden model (``vta/golden/``) in ``scripts/mutate.py``, the
mutated model
becomes the *reference* of a regression whose device is the unmutated golden backend
(so every difference is the planted bug), over ``--programs`` seeds of each
configuration in seed order on one in-process worker.  Printed per mutation: programs
run until the first failure, failing programs (a run stops at ``--max-failures``), their
signatures (vta.regress.triage)
with counts, and each signature's smallest failing program shrunk (instructions before
-> after).  A Markdown table goes to stdout.

    python scripts/bench/planted_bugs.py [--programs 123] [--configs tiny] [--generator 2]
                                         [--only golden_shr_clip,...] [--budget 120]
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import sys
import tempfile
import time
from pathlib import Path

import _blas  # noqa: F401  (first: pins BLAS threads before NumPy loads)

import vta
from vta.regress.configs import parse_configs
from vta.regress.generator import VERSION, VERSIONS
from vta.regress.run import Plan, regress

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import mutate  # noqa: E402


def mutant_model(m: mutate.Mutation, scratch: Path) -> type:
    """The model of the golden package with mutation ``m`` applied (``SpecModel`` for a
    mutation of the specification, else ``GoldenModel``): a copy of
    ``vta/golden/`` imported as ``vta_planted_NAME.golden``; every other module it imports is
    the real one (shared exception and instruction classes)."""
    import types

    import vta.golden  # noqa: F401  (its dependencies loaded first)

    text = (ROOT / m.file).read_text()
    if text.count(m.find) != 1:
        raise SystemExit(f"{m.name}: stale mutation (pattern found {text.count(m.find)} times)")
    pkg = f"vta_planted_{m.name}"
    root = scratch / pkg
    shutil.copytree(ROOT / "vta" / "golden", root / "golden",
                    ignore=shutil.ignore_patterns("__pycache__"))
    target = root / Path(m.file).relative_to("vta")
    target.write_text(text.replace(m.find, m.replace))
    package = types.ModuleType(pkg)
    package.__path__ = [str(root)]
    sys.modules[pkg] = package
    for name, module in list(sys.modules.items()):
        if name.startswith("vta.") and not name.startswith("vta.golden"):
            sys.modules[f"{pkg}.{name[4:]}"] = module
    golden = importlib.import_module(f"{pkg}.golden")
    # a bug planted in the specification shows in the specification model
    return golden.SpecModel if m.file.endswith("/spec.py") else golden.GoldenModel


def run(m: mutate.Mutation, configs, programs: int, budget: float, shrink: int,
        scratch: Path, max_failures: int, keep: Path | None = None, generator: int = VERSION
        ) -> dict:
    model = mutant_model(m, scratch)
    plan = Plan.of("golden", configs, programs, generator=generator)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        out = tmp if keep is None else keep / m.name
        s = regress(plan, out, workers=1, processes=False, reference=model, shrink=shrink,
                    shrink_budget=budget, max_failures=max_failures)
    bad = [r for r in s.failures]
    first = min((r["seed"] for r in bad), default=None)
    until = None if first is None else (first - plan.seed) * len(configs) + 1 + \
        min(i for i, c in enumerate(plan.config_names)
            if any(r["seed"] == first and r["config"] == c for r in bad))
    shrunk = {e["signature"]: e for e in s.shrunk}
    return {"name": m.name, "models": m.models, "programs": s.total, "failing": len(bad),
            "until": until, "groups": [(g.signature, g.count) for g in s.groups],
            "shrunk": shrunk, "seconds": time.perf_counter() - start}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=123, help="seeds per configuration")
    ap.add_argument("--configs", default="tiny")
    ap.add_argument("--generator", type=int, choices=sorted(VERSIONS), default=VERSION,
                    help="generator version (its schedule of kinds)")
    ap.add_argument("--only", default="")
    ap.add_argument("--budget", type=float, default=120.0, help="seconds per shrink")
    ap.add_argument("--shrink", type=int, default=5, help="signatures shrunk per mutation")
    ap.add_argument("--max-failures", type=int, default=10,
                    help="stop a mutation's run after this many failing programs")
    ap.add_argument("--keep", type=Path, default=None,
                    help="keep each mutation's run (results, shrunk programs) in KEEP/NAME")
    args = ap.parse_args()
    wanted = set(filter(None, args.only.split(",")))
    muts = [m for m in mutate.MUTATIONS if m.file.startswith("vta/golden/")
            and (not wanted or m.name in wanted)]
    configs = parse_configs(args.configs, 0)
    print(f"vta {vta.__version__}; generator version {args.generator}; {args.programs} seeds "
          f"x {args.configs}; golden backend against the mutated reference\n")
    print("| mutation | bug | programs until found | failing / run | signature (programs) "
          "| shrunk: instructions |")
    print("|---|---|---:|---:|---|---|")
    scratch = Path(tempfile.mkdtemp(prefix="vta-planted-"))
    for m in muts:
        r = run(m, configs, args.programs, args.budget, args.shrink, scratch,
                args.max_failures, args.keep, args.generator)
        sigs = "; ".join(f"`{sig}` ({n})" for sig, n in r["groups"]) or "not found"
        sizes = []
        for sig, _ in r["groups"]:
            e = r["shrunk"].get(sig)
            if e is None:
                continue
            if e.get("stats"):
                st = e["stats"]
                sizes.append(f"{st['insns'][0]} -> {st['insns'][1]}"
                             + ("" if st.get("complete") else " (budget spent)"))
            else:
                sizes.append(e.get("status", "?"))
        print(f"| {r['name']} | {r['models']} | {r['until'] if r['until'] else '-'} | "
              f"{r['failing']} / {r['programs']} | {sigs} | {'; '.join(sizes) or '-'} |",
              flush=True)


if __name__ == "__main__":
    main()
