"""Token order between the engines, without executing: who may run before whom.

The three engines run concurrently and meet only through the four
dependency-token queues.  :func:`play` plays the token protocol of a stream
(each engine takes its instructions in program order; an instruction starts
once every queue it pops holds a token) and records which push each pop
took.  From that it derives *happens-before* with vector clocks: program
order within an engine, and the k-th push onto a queue before the k-th pop
from it.  Two instructions of different engines neither of which happens
before the other may run in either order on some device timing.

:mod:`vta.progfile.lint` (deadlocks, token overflow, races in a program file) and
:mod:`vta.regress.races` (races in a generated case) both use it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..config import TOKEN_QUEUE_DEPTH
from ..isa import DEFINED_OPCODES, ENGINES, POP_QUEUE, PUSH_QUEUE, Insn

_ENGINE_INDEX = {e: k for k, e in enumerate(ENGINES)}


def pops(engine: str, insn: Insn) -> list[str]:
    """The queues ``insn`` pops a token from (previous stage first)."""
    return [POP_QUEUE[(engine, f)] for f in ("pop_prev_dep", "pop_next_dep")
            if getattr(insn, f, 0) and (engine, f) in POP_QUEUE]


def pushes(engine: str, insn: Insn) -> list[tuple[str, str]]:
    """The (flag, queue) pairs ``insn`` pushes a token onto (previous stage first)."""
    return [(f, PUSH_QUEUE[(engine, f)]) for f in ("push_prev_dep", "push_next_dep")
            if getattr(insn, f, 0) and (engine, f) in PUSH_QUEUE]


@dataclass
class TokenPlay:
    """The token protocol of a stream played out (see :func:`play`).

    Attributes
    ----------
    engines : list[str]
        Each instruction's engine.
    queues : dict[str, list[int]]
        Each engine's instructions in program order (undefined opcodes left out).
    order : list[int]
        The instructions that can run, in an order the tokens allow.
    sources : dict[int, list[tuple[str, int]]]
        For each instruction that ran: (queue, the instruction whose push it popped).
    heads : dict[str, int]
        How many of its instructions each engine ran.
    stuck : dict[str, int]
        Engine -> the instruction it waits at forever (empty when the stream finishes).
    left : dict[str, list[int]]
        Queue -> the pushers of the tokens never popped, oldest first.
    pushed : dict[str, int]
        Tokens pushed onto each queue.
    overflow : dict[str, tuple[int, str]]
        Queue -> (instruction, flag) of the first push beyond ``TOKEN_QUEUE_DEPTH`` tokens.
    clocks : dict[int, tuple[int, ...]]
        Vector clock (one count per engine of :data:`vta.isa.ENGINES`) of each
        instruction that ran: how many instructions of each engine happen before it,
        itself included.
    """

    engines: list[str]
    queues: dict[str, list[int]]
    order: list[int] = field(default_factory=list)
    sources: dict[int, list[tuple[str, int]]] = field(default_factory=dict)
    heads: dict[str, int] = field(default_factory=dict)
    stuck: dict[str, int] = field(default_factory=dict)
    left: dict[str, list[int]] = field(default_factory=dict)
    pushed: dict[str, int] = field(default_factory=dict)
    overflow: dict[str, tuple[int, str]] = field(default_factory=dict)
    clocks: dict[int, tuple[int, ...]] = field(default_factory=dict)

    def rank(self, index: int) -> int:
        """Position (from 1) of instruction ``index`` among its engine's instructions."""
        return self.clocks[index][_ENGINE_INDEX[self.engines[index]]]

    def before(self, a: int, b: int) -> bool:
        """Instruction ``a`` happens before instruction ``b`` (both ran; ``a != b``)."""
        return a != b and self.clocks[b][_ENGINE_INDEX[self.engines[a]]] >= self.rank(a)

    def known(self, index: int, engine: str) -> int:
        """How many of ``engine``'s instructions happen before ``index`` (or are it)."""
        return self.clocks[index][_ENGINE_INDEX[engine]]

    def needs(self, index: int) -> int:
        """The greatest instruction index that happens before ``index`` (or is it): a prefix
        of the stream ending there runs ``index`` to its end."""
        return max(self.queues[e][k - 1] for e in ENGINES if (k := self.known(index, e)))


def play(insns: list[Insn], engines: list[str]) -> TokenPlay:
    """Play the token protocol of ``insns`` (``engines``: each one's engine).

    Engines take turns in the order of :data:`vta.isa.ENGINES`; each runs
    its next instruction when every queue it pops holds a token.  Instructions
    with an undefined opcode are left out (the device faults at them).
    """
    result = TokenPlay(engines, {e: [i for i, eng in enumerate(engines) if eng == e and
                                     insns[i].opcode in DEFINED_OPCODES] for e in ENGINES})
    queues = result.queues
    heads = result.heads = dict.fromkeys(ENGINES, 0)
    fifo: dict[str, list[int]] = {q: [] for q in PUSH_QUEUE.values()}
    result.pushed = dict.fromkeys(fifo, 0)
    last = {e: (0,) * len(ENGINES) for e in ENGINES}
    progress = True
    while progress:
        progress = False
        for k, engine in enumerate(ENGINES):
            if heads[engine] >= len(queues[engine]):
                continue
            index = queues[engine][heads[engine]]
            insn = insns[index]
            need = pops(engine, insn)
            if any(not fifo[q] for q in need):
                continue
            taken = result.sources[index] = [(q, fifo[q].pop(0)) for q in need]
            clock = list(last[engine])
            for _, src in taken:
                clock = [max(a, b) for a, b in zip(clock, result.clocks[src], strict=True)]
            clock[k] += 1
            result.clocks[index] = last[engine] = tuple(clock)
            for flag, q in pushes(engine, insn):
                fifo[q].append(index)
                result.pushed[q] += 1
                if len(fifo[q]) > TOKEN_QUEUE_DEPTH:
                    result.overflow.setdefault(q, (index, flag))
            result.order.append(index)
            heads[engine] += 1
            progress = True
    result.stuck = {e: queues[e][heads[e]] for e in ENGINES if heads[e] < len(queues[e])}
    result.left = {q: left for q, left in fifo.items() if left}
    return result
