"""Planner and executor: run a :class:`~vta.graph.ir.Graph` on a VTA device.

Placement
---------
``conv`` and ``dense`` go to VTA when their arithmetic is VTA's: int8 tensors
with zero points 0, one per-tensor power-of-two scale ratio ``x_scale * w_scale
/ y_scale = 2**-s`` (the requantization is an ALU shift), group 1, dilation 1,
symmetric padding smaller than the kernel, and a tiling that fits the
scratchpads.  A convolution whose input channels, padded to BLOCK_IN, would
make more than ``max_channel_waste`` (4) times the work runs on the CPU (as
upstream ran ResNet's first layer).  ``add`` goes to VTA when the scale ratios
are powers of two (shifts on the ALU).  Everything else -- pooling,
reshapes, (de)quantization, softmax, and any node that fails a rule above --
runs on the CPU through the int8 reference's own kernels; the report says why.

Fused epilogues: the bias, the rounding offset ``2**(s-1)``, the shift and the
output clamp (saturation, ReLU, Clip) run inside the VTA operator's ALU
epilogue.  Device buffers: weights are written once when the executor
prepares a plan; activations live in packed layouts (NCHW{b}n{bi}c, or
(1, K/bi, 1, M/b, b, bi) for matrices) in buffers allocated once and reused
across layers (a buffer is free after its tensor's last VTA reader).  A
tensor passes between VTA nodes without leaving the device; it is read back
only for a CPU node or a graph output.  Each VTA node is one synchronize, so
its counters (cycles, GEMM micro-ops, ...) are its own.  A node's stream is
built on the first run of a plan and replayed afterwards (the same micro-ops
and instructions written to the same staging buffers, then run).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import ops, roofline
from ..driver.host import Buffer, RunStats
from ..runtime import CommandQueue
from . import fold
from .ir import Graph, GraphError, Node, pow2_shift
from .reference import add_shifts, check_feeds, eval_node, infer_shapes

__all__ = ["Executor", "NodeReport", "Report"]

#: Input channels padded to BLOCK_IN may multiply a convolution's work at most this much on VTA.
MAX_CHANNEL_WASTE = 4


# ------------------------------------------------------------------ layouts
def packed_shape(shape: tuple[int, ...], cfg) -> tuple[int, ...]:
    """Device layout of a 4-D (NCHW) or 2-D (M, K) int8 tensor."""
    b, bi = cfg.BATCH, cfg.BLOCK_IN
    if len(shape) == 4:
        n, c, h, w = shape
        return (-(-n // b), -(-c // bi), h, w, b, bi)
    if len(shape) == 2:
        m, k = shape
        return (1, -(-k // bi), 1, -(-m // b), b, bi)
    raise GraphError(f"only 2-D and 4-D tensors can live on the device, not shape {shape}")


def pack(array: np.ndarray, cfg) -> np.ndarray:
    """A host tensor in its device layout (zero-padded to the blocks)."""
    if array.ndim == 4:
        return ops.pack_nchw(array, cfg)
    m, k = array.shape
    b, bi = cfg.BATCH, cfg.BLOCK_IN
    padded = np.zeros((-(-m // b) * b, -(-k // bi) * bi), np.int8)
    padded[:m, :k] = array
    return np.ascontiguousarray(
        padded.reshape(-1, b, padded.shape[1] // bi, bi).transpose(2, 0, 1, 3)[None, :, None])


def unpack(packed: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Inverse of :func:`pack`, cropped to ``shape``."""
    if len(shape) == 4:
        return ops.unpack_nchw(packed, shape[0], shape[1])
    _, kb, _, mb, b, bi = packed.shape
    full = packed[0, :, 0].transpose(1, 2, 0, 3).reshape(mb * b, kb * bi)
    return np.ascontiguousarray(full[:shape[0], :shape[1]])


# ---------------------------------------------------------------- reports
@dataclass
class NodeReport:
    """What one node did in the last run.

    Attributes
    ----------
    name, op : str
        The node and its operator.
    placement : str
        ``"vta"`` or ``"cpu"``.
    reason : str
        Why a node runs on the CPU (empty for VTA nodes).
    epilogue : str
        The fused epilogue of a VTA node (e.g. ``"bias, >>7, clip 0..127"``).
    seconds : float
        Host wall time of the node, transfers to and from the device included.
    stats : RunStats or None
        The device counters of a VTA node's run (cycles are None on golden).
    bound : Bound or None
        A VTA node's roofline (:mod:`vta.roofline`): its lower bound in cycles
        from the configuration alone, and the resource that binds.
    """

    name: str
    op: str
    placement: str
    reason: str = ""
    epilogue: str = ""
    seconds: float = 0.0
    stats: RunStats | None = None
    macs: int = 0
    bound: roofline.Bound | None = None

    @property
    def cycles(self) -> int | None:
        return None if self.stats is None else self.stats.cycles

    def gemm_utilisation(self, cfg) -> float | None:
        """GEMM micro-ops / cycles (one micro-op per cycle is 100%).

        None without cycles (golden) and for nodes without a GEMM (add).
        """
        if not self.stats or not self.stats.cycles or self.op not in ("conv", "dense"):
            return None
        return self.stats.gemm_uops / self.stats.cycles

    @property
    def of_bound(self) -> float | None:
        """bound / cycles: how close the run came to the roofline (None without both)."""
        return None if self.bound is None else self.bound.of(self.cycles)

    def as_dict(self, cfg) -> dict[str, Any]:
        return {"name": self.name, "op": self.op, "placement": self.placement,
                "reason": self.reason, "epilogue": self.epilogue, "seconds": self.seconds,
                "macs": self.macs, "gemm_utilisation": self.gemm_utilisation(cfg),
                "bound": None if self.bound is None else self.bound.as_dict(),
                "of_bound": self.of_bound,
                "counters": None if self.stats is None else self.stats.as_dict()}


@dataclass
class Report:
    """Per-node results of the last run plus device-memory figures."""

    cfg: Any
    backend: str
    nodes: list[NodeReport] = field(default_factory=list)
    seconds: float = 0.0
    activation_bytes: int = 0
    activation_bytes_unshared: int = 0
    weight_bytes: int = 0

    @property
    def vta_nodes(self) -> list[NodeReport]:
        return [n for n in self.nodes if n.placement == "vta"]

    @property
    def stats(self) -> RunStats | None:
        """The summed counters of every VTA node (None when nothing ran on VTA)."""
        return RunStats.total(n.stats for n in self.vta_nodes if n.stats is not None)

    @property
    def cycles(self) -> int | None:
        s = self.stats
        return None if s is None else s.cycles

    def gemm_utilisation(self) -> float | None:
        s = self.stats
        return s.gemm_uops / s.cycles if s is not None and s.cycles else None

    @property
    def bound(self) -> int | None:
        """The sum of the VTA nodes' bounds in cycles (None when nothing ran on VTA)."""
        bounds = [n.bound.cycles for n in self.vta_nodes if n.bound is not None]
        return sum(bounds) if bounds else None

    def as_dict(self) -> dict[str, Any]:
        cycles, bound = self.cycles, self.bound
        return {"backend": self.backend, "config": self.cfg.name, "seconds": self.seconds,
                "cycles": cycles, "gemm_utilisation": self.gemm_utilisation(),
                "bound": bound, "of_bound": bound / cycles if bound and cycles else None,
                "activation_bytes": self.activation_bytes,
                "activation_bytes_unshared": self.activation_bytes_unshared,
                "weight_bytes": self.weight_bytes,
                "nodes": [n.as_dict(self.cfg) for n in self.nodes]}

    def rows(self) -> list[list[str]]:
        """Table rows: node, op, placement, ms, cycles, GEMM utilisation, bound, note."""
        rows = []
        for n in self.nodes:
            util, of = n.gemm_utilisation(self.cfg), n.of_bound
            rows.append([n.name, n.op, n.placement, f"{n.seconds * 1e3:.2f}",
                         "" if n.cycles is None else f"{n.cycles:,}",
                         "" if util is None else f"{util:.1%}",
                         "" if n.bound is None else f"{n.bound.cycles:,}",
                         "" if of is None else f"{of:.1%}",
                         "" if n.bound is None else n.bound.binding,
                         n.epilogue if n.placement == "vta" else n.reason])
        return rows

    HEADER = ("node", "op", "on", "ms", "cycles", "GEMM util", "bound", "of bound", "binds",
              "epilogue / why CPU")
    #: Columns of :meth:`rows` holding numbers (right-aligned in tables).
    NUMERIC = (3, 4, 5, 6, 7)

    def summary_rows(self) -> list[tuple[str, str]]:
        """Summary rows (name, value): VTA nodes, work, cycles, roofline, device memory."""
        stats = self.stats
        rows = [("VTA nodes", f"{len(self.vta_nodes)} of {len(self.nodes)}: "
                              f"{', '.join(n.name for n in self.vta_nodes) or 'none'}")]
        if stats is not None:
            rows.append(("work", f"GEMM micro-ops {stats.gemm_uops:,}, ALU micro-ops "
                                 f"{stats.alu_uops:,}, {stats.insn_count:,} instructions in "
                                 f"{stats.runs} runs"))
        cycles = self.cycles
        rows.append(("cycles", "n/a (functional model)" if cycles is None else
                     f"{cycles:,}; GEMM utilisation {self.gemm_utilisation():.1%}"))
        bound = self.bound
        if bound is not None:
            rows.append(("roofline", f"{bound:,} cycles at least (the VTA nodes' bounds summed)"
                         + ("" if cycles is None else
                            f"; the run took {cycles / bound:.3f}x that ({bound / cycles:.1%} "
                            "of the roofline)")))
        rows.append(("device memory", f"activations {self.activation_bytes:,} bytes in reused "
                                      f"buffers ({self.activation_bytes_unshared:,} without "
                                      f"reuse), weights {self.weight_bytes:,} bytes"))
        return rows


# --------------------------------------------------------------- executor
@dataclass
class _VtaStep:
    node: Node
    kind: str
    args: dict[str, Any]
    bufs: list[Buffer]
    bound: roofline.Bound
    recorded: list[tuple] | None = None  # staging writes and runs of the first run


class _Recorder:
    """The device as the executor's command queue sees it: logs staging writes and runs.

    A node's stream depends only on the plan (shapes, buffers), so what its
    first run wrote to the queue's staging buffers and ran can be replayed on
    later runs without building the stream again.
    """

    def __init__(self, dev):
        self._dev = dev
        self.log: list[tuple] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._dev, name)

    def write(self, buf: Buffer, data: Any, offset: int = 0) -> None:
        self._dev.write(buf, data, offset)
        if self.log is not None:
            kept = np.array(data, copy=True) if isinstance(data, np.ndarray) else bytes(data)
            self.log.append(("write", buf, kept, offset))

    def run(self, insn_buf: Buffer, insn_count: int, **options: Any) -> RunStats:
        stats = self._dev.run(insn_buf, insn_count, **options)
        if self.log is not None:
            self.log.append(("run", insn_buf, insn_count, options))
        return stats


class Executor:
    """Runs a graph on an open device; the plan is made once per set of input shapes.

    Parameters
    ----------
    graph : Graph
        From :func:`vta.graph.load_onnx`.
    device : Device
        An open device (any backend).
    cpu_nodes : sequence of str
        Names of nodes to keep on the CPU whatever the rules say.
    max_channel_waste : float
        See the module docstring.
    queue_options : dict, optional
        Options for the :class:`~vta.runtime.CommandQueue` (``dump``, ...).
    replay : bool
        Build each VTA node's instruction stream once per plan and replay it
        (its micro-ops and instructions, as written to the staging buffers) on
        later runs; ``False`` builds the streams on every run.
    fold_adds : bool
        Do a residual add inside the convolution that produces one of its
        operands when it can (:mod:`vta.graph.fold`); ``False`` runs every add
        on its own.
    """

    def __init__(self, graph: Graph, device, *, cpu_nodes: Sequence[str] = (),
                 max_channel_waste: float = MAX_CHANNEL_WASTE,
                 queue_options: dict | None = None, replay: bool = True,
                 fold_adds: bool = True):
        self.graph = graph
        self.dev = device
        self.cfg = device.cfg
        known = {n.name for n in graph.nodes}
        for name in cpu_nodes:
            if name not in known:
                raise GraphError(f"cpu_nodes names {name!r}, which is not a node of graph "
                                 f"{graph.name!r}")
        self.cpu_nodes = set(cpu_nodes)
        self.max_channel_waste = max_channel_waste
        self.queue_options = dict(queue_options or {})
        self.replay = replay
        self.fold_adds = fold_adds
        self._shapes_key: tuple | None = None
        self._buffers: list[Buffer] = []
        self._queue: CommandQueue | None = None
        self.last_report: Report | None = None

    # ------------------------------------------------------------ placement
    def placement(self, node: Node, shapes: Mapping[str, tuple[int, ...]]) -> str:
        """``""`` when ``node`` runs on VTA, else the reason it runs on the CPU."""
        if node.name in self.cpu_nodes:
            return "kept on the CPU (cpu_nodes)"
        values = self.graph.values
        qs = [values[i].qtype for i in node.inputs] + [values[node.output].qtype]
        if node.op not in ("conv", "dense", "add"):
            return "CPU operator"
        if any(q is None or q.dtype != "int8" for q in qs):
            return "VTA tensors are int8"
        if any(q.zero_point for q in qs):
            return "zero points must be 0 on VTA"
        a = node.attrs
        if not (-(1 << 15) <= a["lo"] <= a["hi"] < (1 << 15)):
            return "output clamp beyond the ALU's 16-bit immediates"
        if node.op == "add":
            if shapes[node.inputs[0]] != shapes[node.inputs[1]]:
                return "operands of different shapes (no broadcasting on VTA)"
            if len(shapes[node.inputs[0]]) not in (2, 4):
                return "only 2-D and 4-D tensors live on the device"
            if add_shifts(qs[0], qs[1], qs[2]) is None:
                return "scale ratios are not powers of two within the ALU's shift range"
            return ""
        if np.any(a["w_zero"]):
            return "weight zero points must be 0 on VTA"
        s = pow2_shift(qs[0].scale * np.asarray(a["w_scale"]) / qs[-1].scale)
        if s is None:
            return "requantization scale is not one power of two 2**-s (0 <= s <= 31)"
        bias = a["bias"] if a["bias"] is not None else np.zeros(1, np.int64)
        rounded = bias.astype(np.int64) + ((1 << (s - 1)) if s else 0)
        if rounded.min() < -(1 << 31) or rounded.max() >= (1 << 31):
            return "bias plus rounding offset does not fit int32"
        try:
            if node.op == "conv":
                if a["group"] != 1:
                    return f"group={a['group']} (VTA convolutions have group 1)"
                if tuple(a["dilation"]) != (1, 1):
                    return f"dilation {tuple(a['dilation'])} (VTA convolutions have 1)"
                t, left, b, r = a["pads"]
                if (t, left) != (b, r):
                    return f"asymmetric padding {a['pads']}"
                c = a["weight"].shape[1]
                bi = self.cfg.BLOCK_IN
                if -(-c // bi) * bi > self.max_channel_waste * c:
                    return (f"{c} input channels padded to {-(-c // bi) * bi}: over "
                            f"{self.max_channel_waste:g}x the work")
            self._conv_shapes(node, shapes)
        except ValueError as exc:
            return f"does not fit VTA: {exc}"
        return ""

    def _conv_shapes(self, node: Node, shapes) -> tuple:
        """(data shape, kernel shape, stride, padding) of a VTA conv/dense; plans the tiling."""
        cfg = self.cfg
        x = shapes[node.inputs[0]]
        w = node.attrs["weight"]
        if node.op == "conv":
            data = packed_shape(x, cfg)
            kernel = (-(-w.shape[0] // cfg.BLOCK_OUT), data[1]) + w.shape[2:] + (
                cfg.BLOCK_OUT, cfg.BLOCK_IN)
            stride, pad = node.attrs["stride"], node.attrs["pads"][:2]
        else:
            data = packed_shape(x, cfg)
            kernel = (-(-w.shape[0] // cfg.BLOCK_OUT), data[1], 1, 1, cfg.BLOCK_OUT,
                      cfg.BLOCK_IN)
            stride, pad = (1, 1), (0, 0)
        ops.plan_conv2d(cfg, data, kernel, stride, pad, bias=True)
        return data, kernel, stride, pad

    def vta_layers(self, input_shapes: Mapping[str, tuple[int, ...]]) -> dict[str, tuple]:
        """Every conv and dense node VTA would run for these input shapes.

        ``{node name: (data shape, kernel shape, stride, padding, folds an add)}``,
        packed shapes as :func:`vta.ops.plan_conv2d` takes them (``vta tune``
        tunes these layers).
        """
        shapes = infer_shapes(self.graph, dict(input_shapes))
        on_vta, taken = self._placed(shapes)
        return {n.name: (*self._conv_shapes(n, shapes), n.name in taken)
                for n in self.graph.nodes if n.op in ("conv", "dense") and n.name in on_vta}

    def _placed(self, shapes) -> tuple[set[str], dict[str, fold.Fold]]:
        """(the nodes on VTA, the adds folded into convolutions by conv name)."""
        on_vta = {n.name for n in self.graph.nodes if not self.placement(n, shapes)}

        def fits(f: fold.Fold) -> bool:
            conv = self.graph.node(f.conv)
            try:
                self._residual(f).check(False, (conv.attrs["lo"], conv.attrs["hi"]))
                data, kernel, stride, pad = self._conv_shapes(conv, shapes)
                ops.plan_conv2d(self.cfg, data, kernel, stride, pad, bias=True, residual=True)
            except ValueError:
                return False
            return True

        return on_vta, (fold.folds(self.graph, on_vta, fits) if self.fold_adds else {})

    # --------------------------------------------------------------- plan
    def _prepare(self, shapes: dict[str, tuple[int, ...]]) -> None:
        key = tuple(sorted(shapes.items()))
        if key == self._shapes_key:
            return
        self.close()
        g, cfg, dev = self.graph, self.cfg, self.dev
        self.shapes = infer_shapes(g, shapes)
        self.reasons = {n.name: self.placement(n, self.shapes) for n in g.nodes}
        on_vta, self.folded = self._placed(self.shapes)
        self.on_vta = on_vta
        self.io = fold.io(g, self.folded)  # what each node reads and writes as it runs
        # device tensors: born at their producer's step (-1: graph inputs), free after
        # their last VTA reader (a VTA output read by the CPU is read back in its own step)
        producer = {self.io[n.name][1]: i for i, n in enumerate(g.nodes)
                    if self.io[n.name][1] is not None}
        born: dict[str, int] = {}
        last_use: dict[str, int] = {}
        for i, n in enumerate(g.nodes):
            if n.name in on_vta:
                ins, out = self.io[n.name]
                for v in (*ins, *([] if out is None else [out])):
                    born[v] = producer.get(v, -1)
                    last_use[v] = i
        users = g.consumers()
        outs = {self.io[n.name][1] for n in g.nodes if n.name in on_vta} - {None}
        self.read_back = {v for v in outs if v in g.outputs
                          or any(u.name not in on_vta for u in users[v])}
        self.dev_buf: dict[str, Buffer] = {}
        free: list[Buffer] = []
        unshared = 0
        for step in range(-1, len(g.nodes)):
            for v in (x for x in born if born[x] == step):
                need = int(np.prod(packed_shape(self.shapes[v], cfg)))
                unshared += need
                fit = [b for b in free if b.nbytes >= need]
                if fit:
                    buf = min(fit, key=lambda b: b.nbytes)
                    free.remove(buf)
                else:
                    buf = self._alloc(need)
                self.dev_buf[v] = buf
            free += [self.dev_buf[v] for v, last in last_use.items() if last == step]
        self.activation_bytes = sum(b.nbytes for b in self._buffers)
        self.activation_bytes_unshared = unshared
        # weights, biases and the per-node VTA steps
        self.steps: dict[str, _VtaStep] = {}
        weight_bytes = 0
        for n in g.nodes:
            if n.name in on_vta and self.io[n.name][1] is not None:
                step = self._prepare_node(n)
                weight_bytes += sum(b.nbytes for b in step.bufs)
                self.steps[n.name] = step
        self.weight_bytes = weight_bytes
        self._recorder = _Recorder(dev)
        self._queue = CommandQueue(self._recorder, **self.queue_options)
        self._shapes_key = key

    def _alloc(self, nbytes: int) -> Buffer:
        buf = self.dev.alloc(max(nbytes, 1))
        self._buffers.append(buf)
        return buf

    def _upload(self, array: np.ndarray) -> Buffer:
        array = np.ascontiguousarray(array)
        buf = self._alloc(array.nbytes)
        self.dev.write(buf, array)
        return buf

    def _prepare_node(self, n: Node) -> _VtaStep:
        cfg = self.cfg
        values = self.graph.values
        a = n.attrs
        if n.op == "add":
            aq, bq, yq = (values[v].qtype for v in (*n.inputs, n.output))
            la, lb, s = add_shifts(aq, bq, yq)
            elems = int(np.prod(packed_shape(self.shapes[n.output], cfg))) // (
                cfg.BATCH * cfg.BLOCK_OUT)
            args = {"elems": elems, "a_lshift": la, "b_lshift": lb,
                    "offset": (1 << (s - 1)) if s else 0, "shift": s,
                    "clip": (a["lo"], a["hi"])}
            return _VtaStep(n, "add", args, [], ops.add_bound(cfg, **args))
        xq, yq = values[n.inputs[0]].qtype, values[n.output].qtype
        s = pow2_shift(xq.scale * np.asarray(a["w_scale"]) / yq.scale)
        data, kernel, stride, pad = self._conv_shapes(n, self.shapes)
        w = a["weight"]
        if n.op == "conv":
            packed_w = ops.pack_oihw(w, cfg)
        else:
            packed_w = ops.pack_oihw(w[:, :, None, None], cfg)
        o_pad = kernel[0] * cfg.BLOCK_OUT
        bias = np.zeros(o_pad, np.int64)
        if a["bias"] is not None:
            bias[:w.shape[0]] = a["bias"]
        bias += (1 << (s - 1)) if s else 0
        packed_b = np.broadcast_to(bias.reshape(kernel[0], 1, cfg.BLOCK_OUT),
                                   (kernel[0], cfg.BATCH, cfg.BLOCK_OUT)).astype("<i4")
        bufs = [self._upload(packed_w), self._upload(packed_b)]
        args = {"data_shape": data, "kernel_shape": kernel, "stride": stride, "padding": pad,
                "shift": s, "clip": (a["lo"], a["hi"]), "residual": None}
        if n.name in self.folded:
            args["residual"] = self._residual(self.folded[n.name])
            bufs.append(self._upload(args["residual"].weights(cfg)))
        bound = ops.conv2d_bound(cfg, data, kernel, stride=stride, padding=pad, bias=True,
                                 shift=s, clip=args["clip"], residual=args["residual"])
        return _VtaStep(n, "conv", args, bufs, bound)

    def _residual(self, f: fold.Fold) -> ops.Residual:
        """The folded add ``f`` as the convolution's :class:`~vta.ops.Residual`."""
        add = self.graph.node(f.add)
        qs = (self.graph.values[v].qtype for v in (*add.inputs, add.output))
        shifts = add_shifts(*qs)
        s = shifts[2]
        return ops.Residual(shifts[f.operand], shifts[1 - f.operand],
                            (1 << (s - 1)) if s else 0, s, clip=(add.attrs["lo"], add.attrs["hi"]))

    def _run_step(self, step: _VtaStep, ins: list[Buffer], out: Buffer) -> RunStats | None:
        """Build and run a VTA node's stream, or replay what its first run wrote and ran."""
        if step.recorded is not None:
            stats = []
            for op, *args in step.recorded:
                if op == "write":
                    self.dev.write(*args)
                else:
                    stats.append(self.dev.run(args[0], args[1], **args[2]))
            return RunStats.total(stats)
        q = self._queue
        before = len(q.history)
        self._recorder.log = []
        if step.kind == "conv":
            a = step.args
            ops.emit_conv2d(q, a["data_shape"], a["kernel_shape"], ins[0], step.bufs[0], out,
                            stride=a["stride"], padding=a["padding"], bias=step.bufs[1],
                            shift=a["shift"], clip=a["clip"], residual=a["residual"],
                            other=ins[1] if a["residual"] is not None else None,
                            identity=step.bufs[2] if a["residual"] is not None else None)
        else:
            ops.emit_add(q, ins[0], ins[1], out, **step.args)
        q.synchronize()
        if self.replay:
            step.recorded = self._recorder.log
        self._recorder.log = None
        return RunStats.total(q.history[before:])

    @staticmethod
    def _epilogue_text(step: _VtaStep) -> str:
        a = step.args
        parts = []
        if step.kind == "conv":
            parts.append("bias")
        else:
            parts.append(f"a<<{a['a_lshift']} + b<<{a['b_lshift']}")
        if a["shift"]:
            parts.append(f"round, >>{a['shift']}")
        parts.append(f"clip {a['clip'][0]}..{a['clip'][1]}")
        r = a.get("residual")
        if r is not None:
            parts.append(f"+ the add: y<<{r.conv_lshift} + other<<{r.other_lshift}"
                         + (f", round, >>{r.shift}" if r.shift else "")
                         + f", clip {r.clip[0]}..{r.clip[1]}")
        return ", ".join(parts)

    # ---------------------------------------------------------------- run
    def run(self, feeds: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """Run the graph; returns the outputs by name.  :attr:`last_report` has the details."""
        g, cfg, dev = self.graph, self.cfg, self.dev
        feeds = check_feeds(g, feeds)
        self._prepare({k: v.shape for k, v in feeds.items()})
        start = time.perf_counter()
        host: dict[str, np.ndarray] = dict(feeds)
        on_device: set[str] = set()
        report = Report(cfg, dev.backend, activation_bytes=self.activation_bytes,
                        activation_bytes_unshared=self.activation_bytes_unshared,
                        weight_bytes=self.weight_bytes)

        def to_device(v: str) -> None:
            if v not in on_device:
                dev.write(self.dev_buf[v], pack(host[v], cfg))
                on_device.add(v)

        def to_host(v: str) -> np.ndarray:
            if v not in host:
                shape = packed_shape(self.shapes[v], cfg)
                raw = dev.read(self.dev_buf[v], int(np.prod(shape)))
                host[v] = unpack(raw.view(np.int8).reshape(shape), self.shapes[v])
            return host[v]

        folded_into = {f.add: f.conv for f in self.folded.values()}
        for n in g.nodes:
            t0 = time.perf_counter()
            ins, out = self.io[n.name]
            if n.name in folded_into:
                rec = NodeReport(n.name, n.op, "vta", epilogue=f"folded into {folded_into[n.name]}")
            elif n.name in self.on_vta:
                for v in ins:
                    to_device(v)
                step = self.steps[n.name]
                stats = self._run_step(step, [self.dev_buf[v] for v in ins], self.dev_buf[out])
                on_device.add(out)
                if out in self.read_back:
                    to_host(out)
                macs = 0
                if n.op in ("conv", "dense"):
                    w = n.attrs["weight"]
                    y = self.shapes[n.output]
                    macs = int(np.prod(w.shape)) * int(np.prod(y)) // y[1]
                rec = NodeReport(n.name, n.op, "vta", epilogue=self._epilogue_text(step),
                                 stats=stats, macs=macs, bound=step.bound)
            else:
                host[n.output] = eval_node(n, g, [to_host(v) for v in n.inputs])
                rec = NodeReport(n.name, n.op, "cpu", reason=self.reasons[n.name])
            rec.seconds = time.perf_counter() - t0
            report.nodes.append(rec)
        outputs = {v: to_host(v) for v in g.outputs}
        report.seconds = time.perf_counter() - start
        self.last_report = report
        return outputs

    def report(self) -> Report:
        """The :class:`Report` of the last run."""
        if self.last_report is None:
            raise GraphError("nothing has run yet: call run() first")
        return self.last_report

    # -------------------------------------------------------------- close
    def close(self) -> None:
        """Free the device buffers and the command queue (the executor can run again)."""
        if self._queue is not None:
            self._queue.close()
            self._queue = None
        if not self.dev.closed:
            for buf in self._buffers:
                self.dev.free(buf)
        self._buffers = []
        self._shapes_key = None

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
