"""Shared fixtures: the program suite runs unchanged on every backend.

The tests are laid out by what they need: ``unit/`` (the golden model only, apart
from the tests marked ``sim``), ``suite/`` (the program suite, run on every
backend), ``sim/`` (the RTL under a simulator: module testbenches in ``sim/rtl/``),
``aws/`` and ``cli/``.  Every test that needs a simulator carries the ``sim``
marker: those in ``sim/``, those run on a simulated backend, and those marked by
hand; so ``pytest -m "not sim"`` is a quick run that needs no simulator.  A
missing simulator skips a test, or fails it where ``$VTA_REQUIRE_TOOLS`` is set
(``.ci/run`` sets it): see ``needs.py``.

``pytest --backend golden --backend verilator`` runs every test that uses the
``backend`` / ``device`` / ``open_dev`` fixtures once per backend (default: the
comma-separated list in ``$VTA_TEST_BACKENDS``, else golden, verilator and icarus;
``--backend golden`` for a quick run without simulators).  Devices are opened once
per (backend, preset) for the session and reused, as a simulator would be.

Simulated backends run only some presets by default (Icarus: tiny; Verilator:
tiny and default); a test asking for another preset is skipped with the reason.
``--rtl-presets tiny,default`` (or ``all``) widens that for every simulator.

The AWS wrappers run the suite as backends ``f1-sim`` and ``f2-sim`` (Verilator), or
``f1-sim:icarus`` / ``f2-sim:icarus``; with no --backend given, those four are added
as ``slow`` parameters (``pytest -m slow tests/suite/test_runtime.py tests/suite/test_ops.py``).
"""

from __future__ import annotations

import os
from pathlib import Path

# Before NumPy loads OpenBLAS: on small shared machines (CI, 2 cores) its worker
# threads spin against other work and make every BLAS call in the golden model
# and the NumPy references up to 20x slower.  An explicit setting wins.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
# The planner reads no tuning log unless a test gives it one: a developer's ~/.cache/vta log
# would otherwise change the plans (not the results) under the tests.
os.environ.setdefault("VTA_TUNING_LOG", "")

import pytest  # noqa: E402

import vta  # noqa: E402

#: Backends the program suite runs on when neither --backend nor $VTA_TEST_BACKENDS says.
DEFAULT_BACKENDS = ("golden", "verilator", "icarus")
#: The AWS wrappers simulated ("backend:simulator"); slow parameters in the default list.
AWS_SIM_BACKENDS = ("f1-sim", "f2-sim", "f1-sim:icarus", "f2-sim:icarus")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--backend", action="append", default=None,
                     help="device backend for the program suite (repeatable; "
                          "default golden, verilator, icarus)")
    parser.addoption("--rtl-presets", default=None,
                     help="presets run on simulated backends (comma-separated, or 'all'; "
                          "default: icarus tiny, verilator tiny,default)")


#: Presets each simulator runs unless --rtl-presets says otherwise.
RTL_PRESETS = {"icarus": ("tiny",), "verilator": ("tiny", "default")}


def split_backend(spec: str) -> tuple[str, dict]:
    """``"f1-sim:icarus"`` -> (``"f1-sim"``, ``{"simulator": "icarus"}``)."""
    name, _, simulator = spec.partition(":")
    return name, ({"simulator": simulator} if simulator else {})


def _simulator(spec: str) -> str | None:
    name, options = split_backend(spec)
    if name in RTL_PRESETS:
        return name
    if name.endswith("-sim"):
        return options.get("simulator", "verilator")
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The ``sim`` marker on every test that needs a simulator (see the module's text)."""
    sim_dir = Path(__file__).resolve().parent / "sim"
    for item in items:
        backend = getattr(getattr(item, "callspec", None), "params", {}).get("backend")
        if (sim_dir in Path(item.fspath).resolve().parents
                or (isinstance(backend, str) and _simulator(backend) is not None)):
            item.add_marker(pytest.mark.sim)
    # Slow tests run only when the -m expression names them (pytest -m slow), so
    # -m "not sim" stays a quick run.
    if "slow" not in (config.option.markexpr or ""):
        slow = [item for item in items if item.get_closest_marker("slow")]
        if slow:
            config.hook.pytest_deselected(items=slow)
            items[:] = [item for item in items if not item.get_closest_marker("slow")]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames:
        env = [b for b in os.environ.get("VTA_TEST_BACKENDS", "").split(",") if b]
        backends = metafunc.config.getoption("--backend") or env or [
            *DEFAULT_BACKENDS, *(pytest.param(b, marks=pytest.mark.slow) for b in AWS_SIM_BACKENDS)]
        metafunc.parametrize("backend", backends, scope="session")


@pytest.fixture(scope="session")
def _device_cache():
    cache: dict[tuple[str, str], vta.device.Device] = {}
    yield cache
    for dev in cache.values():
        dev.close()


@pytest.fixture
def open_dev(backend, _device_cache, request):
    """``open_dev(preset="default")`` -> a shared open device of ``backend``."""
    wanted = request.config.getoption("--rtl-presets")

    def opener(preset: str = "default") -> vta.device.Device:
        simulator = _simulator(backend)
        if simulator is not None:
            allowed = RTL_PRESETS[simulator] if wanted is None else tuple(wanted.split(","))
            if "all" not in allowed and preset not in allowed:
                pytest.skip(f"preset {preset!r} is not run on {backend} by default "
                            f"(runs: {', '.join(allowed)}; widen with --rtl-presets)")
        key = (backend, preset)
        dev = _device_cache.get(key)
        if dev is None or dev.closed:
            name, options = split_backend(backend)
            dev = vta.open_device(name, preset, **options)
            _device_cache[key] = dev
        return dev

    return opener


@pytest.fixture
def device(open_dev):
    """A shared device of the default configuration on the selected backend."""
    return open_dev("default")
