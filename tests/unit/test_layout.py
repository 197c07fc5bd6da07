"""The package's layout: imports flow one way, down the layers, with no circles.

docs/design.md ("Layout") draws the layers; :data:`LAYERS` is that table.  Every
import in ``vta/`` counts, also one inside a function or under ``TYPE_CHECKING``:
an import that points up a layer, or a circle of modules, fails here with the
modules and the line that imports.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "vta"

#: Layers from the bottom up: a module may import its own layer and the ones below.
#: A module belongs to the longest prefix listed.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("vta._version", "vta.errors"),
    ("vta.isa",),                             # field tables, engines and token queues
    ("vta.config",),                          # checks its layouts against the ISA
    ("vta.regs", "vta.aws.regs", "vta.roofline"),  # register maps, bounds: specifications too
    ("vta.golden", "vta.trace"),              # the model; the trace format
    ("vta.driver",),                          # the register protocol over a Transport
    ("vta.progfile",),                        # program files: devices taken as they come
    ("vta.hdltools",),                        # builds, headers, synthesis, waves
    ("vta.backends",),                        # the transports
    ("vta.device",),                          # open_device: driver + a backend by name
    ("vta.runtime", "vta.tune.log"),          # the runtime; the tuning log the planner reads
    ("vta.ops",),
    ("vta.graph", "vta.regress", "vta.aws", "vta.workloads", "vta.tune"),
    ("vta.cli",),
    ("vta",),                                 # the root re-exports; nothing imports it
)


def layer_of(module: str) -> int:
    best, found = -1, None
    for number, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, found = len(prefix), number
    if found is None:
        raise AssertionError(f"{module} is in no layer of LAYERS: add it to the table "
                             "(and to docs/design.md)")
    return found


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(path: Path, modules: dict[str, Path]) -> list[tuple[str, int]]:
    """(module imported, line) for every import of a ``vta`` module in ``path``."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names if a.name.split(".")[0] == "vta"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "vta":
                continue
            for alias in node.names:  # `from pkg import submodule` imports the submodule
                sub = f"{target}.{alias.name}"
                out.append((sub if sub in modules else target, node.lineno))
    return out


def _graph() -> dict[str, list[tuple[str, int]]]:
    modules = _modules()
    return {name: [(t, line) for t, line in imports(path, modules) if t != name]
            for name, path in modules.items()}


def test_every_module_has_a_layer():
    for name in _modules():
        layer_of(name)


def test_no_import_points_up_a_layer():
    graph = _graph()
    upward = [f"{src} (layer {layer_of(src)}) line {line} imports {dst} (layer {layer_of(dst)})"
              for src, targets in graph.items() for dst, line in targets
              if layer_of(dst) > layer_of(src)]
    assert not upward, "imports pointing up a layer:\n" + "\n".join(upward)


def test_no_import_circles():
    graph = {src: sorted({dst for dst, _ in targets}) for src, targets in _graph().items()}
    circles = _circles(graph)
    assert not circles, "import circles:\n" + "\n".join(" -> ".join(c) for c in circles)


def _circles(graph: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


@pytest.mark.parametrize("graph, expected", [
    ({"a": ["b"], "b": ["c"], "c": []}, []),
    ({"a": ["b"], "b": ["a"], "c": ["a"]}, [["a", "b"]]),
    ({"a": ["b"], "b": ["c"], "c": ["a"]}, [["a", "b", "c"]]),
])
def test_circle_finder(graph, expected):
    assert _circles(graph) == expected


def test_the_checks_see_a_planted_upward_import_and_circle(tmp_path, monkeypatch):
    """The scan itself: relative imports resolved, submodules told from names."""
    pkg = tmp_path / "vta"
    (pkg / "driver").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "isa.py").write_text("from .config import Config\n")
    (pkg / "config.py").write_text("from . import isa\n")
    (pkg / "driver" / "__init__.py").write_text("")
    (pkg / "driver" / "host.py").write_text("def f():\n    from .. import golden\n")
    (pkg / "golden.py").write_text("from .isa import x\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", pkg)
    graph = _graph()
    assert ("vta.golden", 2) in graph["vta.driver.host"]
    assert graph["vta.config"] == [("vta.isa", 1)]
    assert _circles({s: [d for d, _ in t] for s, t in graph.items()}) == [
        ["vta.config", "vta.isa"]]
    assert layer_of("vta.isa") < layer_of("vta.config")
