"""Structural checks of hdl/ read with pyverilog (the design, not its behaviour).

* ``vta_top``'s ports and parameters are exactly those of the contract in
  docs/rtl-interface.md (and ``vta.hdltools.hdlgen.top_parameters`` gives exactly those
  parameters); a failure names the port or parameter.
* Every instance in the design is connected by name (ports and parameters).
* No parameter of an instance is left at its default when the instantiating
  module has a parameter or localparam of the same name (a default that could
  disagree with the top, as BEATS_WIDTH once did).
* No instruction field is selected by a literal bit position: a select on an
  instruction-carrying signal (``insn*``, ``cmd_data``, ``uop*``) must use the
  positions of the generated ``vta_isa.vh``.  pyverilog sees the design after
  the preprocessor has replaced those macros by numbers, so this one check
  reads the source text.
* The layout of docs/shared style.md: one module per file, named after it; every
  file opens with the same three directives and a block comment; ``vta_top`` is a
  netlist (declarations, instances and its parameter checks: no logic of its
  own); every FSM is in the two-process style (``state_reg`` is only ever copied
  from ``state_next`` or reset) with a one-line comment opening each
  ``STATE_*`` case arm.  These read the source text too.
"""

from __future__ import annotations

import re
from pathlib import Path

import needs
import pytest

import vta
from vta.hdltools import hdlgen

pyverilog = pytest.importorskip("pyverilog")

DOC = Path(__file__).resolve().parents[3] / "docs" / "rtl-interface.md"


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    """{module name: ModuleDef} of hdl/*.v, preprocessed with the default preset's headers."""

    from pyverilog.vparser.parser import parse

    needs.tool("iverilog", "pyverilog preprocesses with it")
    out = tmp_path_factory.mktemp("pyverilog")
    hdr = hdlgen.header_dir(vta.Config.load("default"))
    ast, _ = parse([str(f) for f in hdlgen.hdl_sources()], preprocess_include=[str(hdr)],
                   outputdir=str(out), debug=False)
    return {d.name: d for d in ast.description.definitions}


def _ports(mod) -> list[str]:
    from pyverilog.vparser.ast import Ioport

    return [p.first.name if isinstance(p, Ioport) else p.name for p in mod.portlist.ports]


def _params(mod, local: bool = False) -> set[str]:
    from pyverilog.vparser.ast import Decl, Localparam, Parameter

    kinds = (Parameter, Localparam) if local else (Parameter,)
    names = set()
    for item in list(mod.paramlist.params) + list(mod.items):
        if isinstance(item, Decl):
            names |= {p.name for p in item.list if isinstance(p, kinds)
                      and (local or not isinstance(p, Localparam))}
    return names


def _instances(mod):
    from pyverilog.vparser.ast import InstanceList

    for item in mod.items:
        if isinstance(item, InstanceList):
            yield from item.instances
        # instances inside generate blocks
        for child in getattr(item, "children", lambda: [])():
            if isinstance(child, InstanceList):
                yield from child.instances


def _doc_contract() -> tuple[set[str], set[str]]:
    """(parameter names, port names) of vta_top as docs/rtl-interface.md lists them."""
    text = DOC.read_text()
    params_sec = text.split("## Parameters", 1)[1].split("## ", 1)[0]
    ports_sec = text.split("## Ports", 1)[1].split("## ", 1)[0]
    params = set()
    for line in params_sec.splitlines():
        if line.startswith("| `"):
            params |= set(re.findall(r"`([A-Z_0-9]+)`", line.split("|")[1]))
    ports = set()
    for line in ports_sec.splitlines():
        cells = line.split("|")
        if len(cells) < 4 or "`" not in cells[2]:
            continue
        col = cells[2]
        each = re.search(r"for (\w) in ([\w, ]+):", col)
        for tok in re.findall(r"`([^`]+)`", col):
            tok = re.sub(r"\[[^\]]*\]", "", tok)
            names = [tok]
            if each and f"<{each.group(1)}>" in tok:
                names = [tok.replace(f"<{each.group(1)}>", m.strip())
                         for m in each.group(2).split(",")]
            for name in names:
                brace = re.fullmatch(r"(\w*)\{([\w,]+)\}(\w*)", name)
                if brace:
                    ports |= {brace.group(1) + s + brace.group(3)
                              for s in brace.group(2).split(",")}
                else:
                    ports.add(name)
    return params, ports


def test_top_matches_the_contract(modules):
    doc_params, doc_ports = _doc_contract()
    top = modules["vta_top"]
    ports, params = set(_ports(top)), _params(top)
    assert not doc_ports - ports, (
        f"documented but not ports of vta_top: {sorted(doc_ports - ports)}")
    assert not ports - doc_ports, (
        f"ports of vta_top missing from docs/rtl-interface.md: {sorted(ports - doc_ports)}")
    assert params == doc_params, (
        f"vta_top parameters {sorted(params ^ doc_params)} differ from docs/rtl-interface.md")
    gen = set(hdlgen.top_parameters(vta.Config.load("default")))
    assert gen == params, f"hdlgen.top_parameters differs from vta_top: {sorted(gen ^ params)}"


def test_named_connections_and_no_stray_defaults(modules):
    problems = []
    for name, mod in modules.items():
        mine = _params(mod, local=True)
        for inst in _instances(mod):
            where = f"{name}.{inst.name} ({inst.module})"
            for arg in inst.portlist:
                if arg.portname is None:
                    problems.append(f"{where}: a port connected by position")
            for arg in inst.parameterlist:
                if arg.paramname is None:
                    problems.append(f"{where}: a parameter given by position")
            child = modules.get(inst.module)
            if child is None:
                problems.append(f"{where}: no module {inst.module} in hdl/")
                continue
            given = {a.paramname for a in inst.parameterlist}
            child_ports = set(_ports(child))
            conn = {a.portname for a in inst.portlist}
            if conn != child_ports:
                problems.append(f"{where}: ports not connected {sorted(child_ports - conn)}")
            for p in sorted((_params(child) & mine) - given):
                problems.append(f"{where}: parameter {p} left at its default")
    assert not problems, "\n".join(problems)


def _const(node) -> int | None:
    """The value of an integer literal (``48``, ``64'h10000000``, ``32'd0``), else None."""
    from pyverilog.vparser.ast import IntConst

    if not isinstance(node, IntConst):
        return None
    text = node.value.replace("_", "").lower()
    m = re.fullmatch(r"(?:\d*)'s?([bodh])([0-9a-f]+)", text)
    if m:
        return int(m.group(2), {"b": 2, "o": 8, "d": 10, "h": 16}[m.group(1)])
    return int(text) if text.isdigit() else None


def _param_values(mod, local: bool = True) -> dict[str, int]:
    """Parameters (and localparams) of ``mod`` whose value is a plain integer literal."""
    from pyverilog.vparser.ast import Decl, Localparam, Parameter

    kinds = (Parameter, Localparam) if local else (Parameter,)
    out = {}
    for item in list(mod.paramlist.params) + list(mod.items):
        if isinstance(item, Decl):
            for p in item.list:
                if isinstance(p, kinds):
                    v = _const(p.value.var)
                    if v is not None:
                        out[p.name] = v
    return out


def test_parameter_defaults_agree_with_the_top(modules):
    """A module parameter named like one of vta_top's has the top's value as its default.

    Every instance passes such parameters down (checked above), so a stale
    default is harmless in the design, but it is what a test bench or a reader
    gets when instantiating the module alone (BEATS_WIDTH was 40 in the
    modules and 48 in the top).
    """
    top = _param_values(modules["vta_top"])
    problems = []
    for name, mod in sorted(modules.items()):
        if name == "vta_top":
            continue
        for p, v in sorted(_param_values(mod, local=False).items()):
            if p in top and top[p] != v:
                problems.append(f"{name}: parameter {p} defaults to {v}, vta_top has {top[p]}")
    assert not problems, "\n".join(problems)


def test_design_tree_is_complete(modules):
    """Every module of hdl/ is part of vta_top's tree (nothing dead, nothing unchecked)."""
    seen, todo = set(), ["vta_top"]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo += [i.module for i in _instances(modules[name])]
    assert seen == set(modules), f"not instantiated under vta_top: {sorted(set(modules) - seen)}"


# a select on an instruction-carrying signal, or a declaration range before one
_SIG = r"(?:insn(?!_addr|_count)\w*|cmd_data|uop(?:_rdata|_elem)?)"
INSN_SELECT = re.compile(r"\b" + _SIG + r"\s*\[([^\]]*)\]")
INSN_DECL = re.compile(r"\[([^\]]*)\]\s*" + _SIG + r"\b")


def test_no_literal_field_positions():
    problems = []
    for path in hdlgen.hdl_sources():
        text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"),
                      path.read_text(), flags=re.S)
        for lineno, line in enumerate(text.splitlines(), 1):
            line = line.split("//", 1)[0]
            for m in [*INSN_SELECT.finditer(line), *INSN_DECL.finditer(line)]:
                # every number must come from a generated macro (`VTA_...); "W-1:0" is a width
                rest = re.sub(r"-\s*1\s*:\s*0\s*$", "", re.sub(r"`\w+", "", m.group(1)))
                if re.search(r"\d", rest):
                    problems.append(f"{path.name}:{lineno}: {m.group(0)}")
    assert not problems, "literal instruction-field positions:\n" + "\n".join(problems)


def _text(path: Path) -> str:
    """The source with its comments blanked (line numbers kept)."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), path.read_text(),
                  flags=re.S)
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def test_one_module_per_file_named_after_it():
    problems = []
    for path in hdlgen.hdl_sources():
        names = re.findall(r"^\s*module\s+(\w+)", _text(path), flags=re.M)
        if names != [path.stem]:
            problems.append(f"{path.name}: modules {names}, expected [{path.stem!r}]")
    assert not problems, "\n".join(problems)


PREAMBLE = ["`resetall", "`timescale 1ns / 1ps", "`default_nettype none"]


def test_files_open_the_same_way():
    """The three directives, then the block comment saying what the module does."""
    problems = []
    for path in hdlgen.hdl_sources():
        lines = [line.strip() for line in path.read_text().splitlines() if line.strip()]
        if lines[:3] != PREAMBLE or not lines[3].startswith("/*"):
            problems.append(f"{path.name}: opens with {lines[:4]}")
        if lines[-1] != "`resetall":
            problems.append(f"{path.name}: does not end with `resetall")
    assert not problems, "\n".join(problems)


def test_top_is_a_netlist(modules):
    """vta_top holds declarations, instances and its parameter checks, no logic of its own."""
    from pyverilog.vparser.ast import Decl, Initial, InstanceList

    kinds = {type(item).__name__ for item in modules["vta_top"].items
             if not isinstance(item, (Decl, InstanceList, Initial))}
    assert not kinds, f"vta_top has logic of its own: {sorted(kinds)}"
    assert not re.search(r"\bassign\b|\balways\b|\bfunction\b",
                         _text(next(p for p in hdlgen.hdl_sources() if p.stem == "vta_top")))


def test_state_machines_are_two_process():
    """state_reg is copied from state_next or reset; each STATE_* arm opens with a comment."""
    problems = []
    for path in hdlgen.hdl_sources():
        raw = path.read_text().splitlines()
        code = _text(path).splitlines()
        for n, line in enumerate(code):
            if re.search(r"\bstate_reg\s*<=", line) and not re.search(
                    r"\bstate_reg\s*<=\s*(state_next|STATE_IDLE)\s*;", line):
                problems.append(f"{path.name}:{n + 1}: {line.strip()}")
            if re.match(r"\s*STATE_\w+\s*:\s*begin\s*$", line):
                after = raw[n + 1].strip() if n + 1 < len(raw) else ""
                if not after.startswith("//"):
                    problems.append(f"{path.name}:{n + 1}: case arm {line.strip()} without a "
                                    "comment saying what it waits for")
        if "state_reg" in "\n".join(code) and not re.search(r"localparam\s+STATE_\w+",
                                                            "\n".join(code)):
            problems.append(f"{path.name}: states not named by localparam STATE_*")
    assert not problems, "FSM style:\n" + "\n".join(problems)

