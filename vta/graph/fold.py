"""Residual adds folded into the convolution that produces one of their operands.

An ``add`` on VTA whose operand comes from a ``conv`` (or ``dense``) on VTA,
read by nothing else, is done inside that convolution's tiles
(:class:`vta.ops.Residual`): the convolution's int8 result stays in the
accumulator, the other operand's tile is loaded beside it, and the add's ALU
steps run there.  The convolution's output is never stored and the add is
not a run of its own.  The other operand must exist when the convolution
runs, so the fold goes into whichever producer runs last; with the same ALU
steps on the same int8 values (the convolution's clamp keeps them within
int8; the other operand is added by a GEMM with an exact int8 weight), the
result is the separate add's bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .ir import Graph

__all__ = ["Fold", "folds"]


@dataclass(frozen=True)
class Fold:
    """The add ``add`` done inside ``conv``: ``operand`` is the conv's (0 or 1), ``other``
    the other operand's value."""

    add: str
    conv: str
    operand: int
    other: str


def folds(graph: Graph, on_vta: set[str], fits: Callable[[Fold], bool]) -> dict[str, Fold]:
    """The adds of ``graph`` to fold, by the name of the convolution that takes each.

    ``on_vta``: the nodes placed on VTA; ``fits(fold)``: whether that
    convolution can take that add (a tiling with room for the other
    operand, shifts the fold can do).
    """
    order = {n.name: i for i, n in enumerate(graph.nodes)}
    producer = {n.output: n for n in graph.nodes}
    users = graph.consumers()
    taken: dict[str, Fold] = {}
    for n in graph.nodes:
        if n.op != "add" or n.name not in on_vta or len(set(n.inputs)) != 2:
            continue
        best = None
        for i, v in enumerate(n.inputs):
            p = producer.get(v)
            other = producer.get(n.inputs[1 - i])
            if (p is None or p.op not in ("conv", "dense") or p.name not in on_vta
                    or p.name in taken or v in graph.outputs
                    or [u.name for u in users[v]] != [n.name]
                    or not (-128 <= p.attrs["lo"] and p.attrs["hi"] <= 127)
                    or (other is not None and order[other.name] > order[p.name])):
                continue
            candidate = Fold(n.name, p.name, i, n.inputs[1 - i])
            if (best is None or order[p.name] > order[best.conv]) and fits(candidate):
                best = candidate
        if best is not None:
            taken[best.conv] = best
    return taken


def io(graph: Graph, taken: Mapping[str, Fold]) -> dict[str, tuple[tuple[str, ...], str | None]]:
    """Every node's (inputs, output) as it runs: a folding conv also reads the other operand
    and writes the add's output; a folded add runs nothing (None)."""
    by_add = {f.add: f for f in taken.values()}
    out: dict[str, tuple[tuple[str, ...], str | None]] = {}
    for n in graph.nodes:
        if n.name in taken:
            f = taken[n.name]
            add = graph.node(f.add)
            out[n.name] = ((*n.inputs, f.other), add.output)
        elif n.name in by_add:
            out[n.name] = ((), None)
        else:
            out[n.name] = (tuple(n.inputs), n.output)
    return out
