"""Shipping this ``vta`` package to the workers of an existing Dask cluster (``--ship``).

The client zips its own package (HDL and testbench included, laid out as the
wheel lays them out) and registers :class:`ShipPackage` on the cluster's
nannies.  Each nanny unpacks it into a folder of its own (so several worker
processes of one machine never write the same files), puts it first on its
import path and restarts its worker, which then imports the shipped ``vta``.
At the end of the run (:func:`unship`) the plugin is removed from the
scheduler, each nanny takes the folder off its path and deletes it, and the
workers are restarted, so nothing is left behind and a later ``--no-ship``
run imports the installed package again.  A plugin left by a client that was
killed before it could clean up is removed the same way when the next run
starts; folders of nannies that died are swept by the next nanny that unpacks.

This module is pickled by value (``cloudpickle``), so the workers need no
``vta`` installed to receive it.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

from distributed.diagnostics.plugin import NannyPlugin

#: Name of the nanny plugin (one at a time per cluster).
NAME = "vta-ship"
_PREFIX = "vta-ship-"
_OWNER = "owner.pid"


class ShipPackage(NannyPlugin):
    """A nanny plugin unpacking a zipped package into its own folder (see the module
    docstring); the nanny restarts its worker after setup."""

    restart = True

    def __init__(self, data: bytes, digest: str):
        self.data = data
        self.digest = digest
        self.folder: str | None = None

    def setup(self, nanny) -> None:
        sweep()
        folder = tempfile.mkdtemp(prefix=f"{_PREFIX}{self.digest}-")
        Path(folder, _OWNER).write_text(str(os.getpid()))
        with zipfile.ZipFile(io.BytesIO(self.data)) as z:
            z.extractall(folder)
        self.folder = folder
        sys.path.insert(0, folder)  # the restarted worker process inherits it

    def teardown(self, nanny) -> None:
        if self.folder is None:
            return
        with contextlib.suppress(ValueError):
            sys.path.remove(self.folder)
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder = None


def sweep() -> None:
    """Delete shipped folders whose nanny process is gone."""
    for folder in Path(tempfile.gettempdir()).glob(f"{_PREFIX}*"):
        try:
            os.kill(int((folder / _OWNER).read_text()), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except (OSError, ValueError):
            continue  # alive, another user's, or being unpacked: leave it


def package_zip() -> tuple[bytes, str]:
    """This ``vta`` package as a zip (``vta/...``, with ``vta/hdl`` and ``vta/sim_assets``
    from the source tree when the package does not hold them) and its digest."""
    from ..hdltools.build import hdl_dir, sim_dir

    src = Path(__file__).resolve().parents[1]  # the vta package
    trees = [(src, "vta")]
    if not (src / "hdl").is_dir():
        trees.append((hdl_dir(), "vta/hdl"))
    if not (src / "sim_assets").is_dir():
        trees.append((sim_dir(), "vta/sim_assets"))
    buf = io.BytesIO()
    digest = hashlib.sha256()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for root, arc in trees:
            for path in sorted(root.rglob("*")):
                if not path.is_file() or "__pycache__" in path.parts or path.suffix == ".pyc":
                    continue
                name = f"{arc}/{path.relative_to(root).as_posix()}"
                data = path.read_bytes()
                z.writestr(name, data)
                digest.update(name.encode() + b"\0" + data)
    return buf.getvalue(), digest.hexdigest()[:12]


#: Nanny plugins of older vta versions' --ship (Dask's UploadDirectory), also removed.
_OLD_PREFIX = "upload-directory-vta-"


@contextlib.contextmanager
def _by_value() -> Iterator[None]:
    """Pickle this module's functions and classes by value (the scheduler and the workers
    may have no ``vta``, or another one)."""
    import cloudpickle

    module = sys.modules[__name__]
    cloudpickle.register_pickle_by_value(module)
    try:
        yield
    finally:
        cloudpickle.unregister_pickle_by_value(module)


def _plugins(dask_scheduler) -> list[str]:
    return [n for n in dask_scheduler.nanny_plugins
            if n == NAME or n.startswith(_OLD_PREFIX)]


def _vta_file() -> str:
    mod = sys.modules.get("vta")
    return getattr(mod, "__file__", "") or ""


def unship(client, *, restart: bool = True) -> bool:
    """Remove a shipped package from the cluster (the plugin, its folders and, by a
    restart, the workers' imports of it); True if there was one."""
    with _by_value():
        names = client.run_on_scheduler(_plugins)
    for name in names:
        client.unregister_worker_plugin(name, nanny=True)
    if names and restart:
        client.restart()
    return bool(names)


def ship(client) -> str:
    """Upload this package to every nanny of ``client``'s cluster; returns its digest."""
    unship(client, restart=False)  # a plugin a killed client left behind
    data, digest = package_zip()
    with _by_value():
        client.register_plugin(ShipPackage(data, digest), name=NAME)
    return digest


def shipped_elsewhere(client) -> bool:
    """Whether some worker still imports ``vta`` from a shipped folder."""
    with _by_value():
        files = client.run(_vta_file)
    return any(_PREFIX in path or "/dask-scratch-space/vta-" in path for path in files.values())
