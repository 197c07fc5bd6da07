"""Planner and executor: run a :class:`~vta.graph.ir.Graph` on a VTA device.

Placement
---------
``conv`` and ``dense`` go to VTA when their weights are symmetric (zero point
0), their requantization has fixed-point parameters (:mod:`vta.graph.fixed`),
group 1, dilation 1, symmetric padding smaller than the kernel, and a tiling
fits the scratchpads (``max_channel_waste`` optionally keeps convolutions
whose input channels, padded to BLOCK_IN, multiply the work too much on the
CPU).  ``add`` goes to VTA with equal operand shapes (or a constant operand
that broadcasts), ``maxpool`` and ``avgpool`` (without padding) when a tile
fits.  Tensors are int8 or uint8 with any zero points.  Everything else --
reshapes, (de)quantization, softmax, and any node that fails a rule above --
runs on the CPU through the int8 reference's own kernels; the report says
why, and what to change.

Fused epilogues (:mod:`vta.graph.lowering`): the bias with the input zero
point folded in, zero-point corrections where windows overlap the padding,
the fixed-point requantization, the output zero point and the output clamp
(saturation, ReLU, Clip) run inside the VTA operator's ALU epilogue.  Device
buffers: weights and per-channel rows are written once when the executor
prepares a plan; activations live in packed layouts (NCHW{b}n{bi}c, or
(1, K/bi, 1, M/b, b, bi) for matrices; uint8 tensors as ``x - 128``) in buffers
allocated once and reused across layers (a buffer is free after its tensor's
last VTA reader).  A tensor passes between VTA nodes without leaving the
device; it is read back only for a CPU node or a graph output.  Each VTA node
is one synchronize, so its counters (cycles, GEMM micro-ops, ...) are its
own.  A node's stream is built on the first run of a plan and replayed
afterwards (the same micro-ops and instructions written to the same staging
buffers, then run).
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
from . import fold, lowering
from .ir import Graph, GraphError, Node
from .reference import check_feeds, eval_node, infer_shapes

__all__ = ["Executor", "NodeReport", "Report", "node_macs"]

_VTA_OPS = ("conv", "dense", "add", "maxpool", "avgpool")
#: Why the other operators stay on the CPU, and what to change.
_CPU_OPS = {
    "quantize": "float -> int conversion at the graph's edge (CPU by design)",
    "dequantize": "int -> float conversion at the graph's edge (CPU by design)",
    "softmax": "float softmax (no exponential on VTA); leave it on the CPU, or drop it",
    "relu": "a Relu that is not the only reader of a conv, dense or add output; fuse it",
    "reshape": "data movement only, no arithmetic (CPU by design)",
    "flatten": "data movement only, no arithmetic (CPU by design)",
}


def node_macs(node: Node, shapes: Mapping[str, tuple[int, ...]]) -> int:
    """Multiply-accumulates of a conv or dense node (0 for other operators)."""
    if node.op not in ("conv", "dense"):
        return 0
    w = node.attrs["weight"]
    y = shapes[node.output]
    return int(np.prod(w.shape)) * int(np.prod(y)) // y[1]


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

    def mac_share(self) -> float:
        """Share of the conv and dense multiply-accumulates that ran on VTA."""
        total = sum(n.macs for n in self.nodes)
        return sum(n.macs for n in self.vta_nodes) / total if total else 0.0

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
                "mac_share": self.mac_share(),
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
        """Summary rows (name, value): VTA nodes, MACs on VTA, work, cycles, roofline, device
        memory."""
        stats = self.stats
        rows = [("VTA nodes", f"{len(self.vta_nodes)} of {len(self.nodes)}: "
                              f"{', '.join(n.name for n in self.vta_nodes) or 'none'}")]
        macs = sum(n.macs for n in self.nodes)
        if macs:
            rows.append(("MACs on VTA", f"{self.mac_share():.2%} of {macs:,}"))
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
    max_channel_waste : float, optional
        Keep a convolution on the CPU when its input channels padded to
        BLOCK_IN multiply its work more than this (default: never).
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
                 max_channel_waste: float | None = None,
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
        """``""`` when ``node`` runs on VTA, else why it stays on the CPU and what to change."""
        if node.name in self.cpu_nodes:
            return "kept on the CPU (cpu_nodes)"
        values = self.graph.values
        qs = [values[i].qtype for i in node.inputs] + [values[node.output].qtype]
        if node.op not in _VTA_OPS:
            return _CPU_OPS.get(node.op, "CPU operator")
        if any(q is None for q in qs):
            return ("float tensors; quantize it (QuantizeLinear/DequantizeLinear around it, or "
                    "vta graph quantize)")
        try:
            if node.op in ("conv", "dense"):
                return self._linear_placement(node, shapes)
            if node.op == "add":
                return self._add_placement(node, shapes)
            return self._pool_placement(node, shapes)
        except ValueError as exc:
            return f"does not fit VTA: {exc}"

    def _linear_placement(self, node: Node, shapes) -> str:
        a = node.attrs
        wz = np.asarray(a["w_zero"])
        if np.any(wz):
            return (f"weight zero point {int(wz[np.nonzero(wz)[0][0]])}; re-quantize with "
                    "symmetric weights (quantize_static's default, or vta graph quantize)")
        if a.get("fixed") is None:
            return f"{a.get('fixed_why', 'no fixed-point requantization')}; re-quantize"
        if node.op == "conv":
            if a["group"] != 1:
                return (f"group={a['group']} (VTA convolutions have group 1); use a dense "
                        "convolution")
            if tuple(a["dilation"]) != (1, 1):
                return f"dilation {tuple(a['dilation'])} (VTA convolutions have 1)"
            t, left, b, r = a["pads"]
            if (t, left) != (b, r):
                return f"asymmetric padding {a['pads']}; pad symmetrically"
            c = a["weight"].shape[1]
            bi = self.cfg.BLOCK_IN
            if self.max_channel_waste is not None \
                    and -(-c // bi) * bi > self.max_channel_waste * c:
                return (f"{c} input channels padded to {-(-c // bi) * bi}: over "
                        f"{self.max_channel_waste:g}x the work")
        self._conv_shapes(node, shapes)
        return ""

    def _add_placement(self, node: Node, shapes) -> str:
        a = node.attrs
        if len(node.inputs) == 2 and shapes[node.inputs[0]] != shapes[node.inputs[1]]:
            return "operands of different shapes (no broadcasting on VTA)"
        if len(node.inputs) == 1:
            out = shapes[node.output]
            if np.broadcast_shapes(np.shape(a["const"]), out) != out:
                return f"constant of shape {np.shape(a['const'])} does not broadcast to {out}"
        if len(shapes[node.inputs[0]]) not in (2, 4):
            return "only 2-D and 4-D tensors live on the device"
        if a.get("fixed") is None:
            return f"{a.get('fixed_why', 'no fixed-point form')}; re-quantize"
        return ""

    def _pool_placement(self, node: Node, shapes) -> str:
        a = node.attrs
        x = shapes[node.inputs[0]]
        if len(x) != 4:
            return "pooling runs on VTA on 4-D tensors only"
        if node.op == "avgpool" and not a.get("global") and any(a["pads"]):
            return ("average pooling with padding (window sizes differ at the borders); "
                    "pool without padding")
        self._pool_args(node, shapes)
        return ""

    def _pool_args(self, node: Node, shapes) -> dict[str, Any]:
        """emit_pool2d's keyword arguments (ValueError when VTA cannot run it)."""
        values = self.graph.values
        a = node.attrs
        x = shapes[node.inputs[0]]
        if a.get("global"):
            kernel, stride, pads = tuple(x[2:]), (1, 1), (0, 0, 0, 0)
        else:
            kernel, stride, pads = a["kernel"], a["stride"], a["pads"]
        count = 0 if node.op == "maxpool" else int(np.prod(kernel))
        steps = lowering.pool_steps(node, values[node.inputs[0]].qtype,
                                    values[node.output].qtype, count)
        data = packed_shape(x, self.cfg)
        ops.plan_pool2d(self.cfg, data, kernel, stride, pads)
        return {"data_shape": data, "kind": "max" if node.op == "maxpool" else "sum",
                "kernel": kernel, "stride": stride, "pads": pads, "steps": steps}

    def _conv_shapes(self, node: Node, shapes) -> tuple:
        """(data shape, kernel shape, stride, padding, epilogue, rows) of a VTA conv/dense;
        plans the tiling."""
        cfg = self.cfg
        values = self.graph.values
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
        epi, rows = lowering.conv_epilogue(node, values[node.inputs[0]].qtype,
                                           values[node.output].qtype, x, cfg)
        epi.check()
        ops.plan_conv2d(cfg, data, kernel, stride, pad, bias=epi.rows)
        return data, kernel, stride, pad, epi, rows

    def vta_layers(self, input_shapes: Mapping[str, tuple[int, ...]]) -> dict[str, tuple]:
        """Every conv and dense node VTA would run for these input shapes.

        ``{node name: (data shape, kernel shape, stride, padding, epilogue rows, folds an
        add)}``, as :func:`vta.ops.plan_conv2d` takes them (``vta tune`` tunes these
        layers).
        """
        shapes = infer_shapes(self.graph, dict(input_shapes))
        on_vta, taken = self._placed(shapes)
        out = {}
        for n in self.graph.nodes:
            if n.op in ("conv", "dense") and n.name in on_vta:
                data, kernel, stride, pad, epi, _ = self._conv_shapes(n, shapes)
                out[n.name] = (data, kernel, stride, pad, epi.rows, n.name in taken)
        return out

    def _placed(self, shapes) -> tuple[set[str], dict[str, fold.Fold]]:
        """(the nodes on VTA, the adds folded into convolutions by conv name)."""
        on_vta = {n.name for n in self.graph.nodes if not self.placement(n, shapes)}

        def fits(f: fold.Fold) -> bool:
            residual = self._residual(f)
            if residual is None:
                return False
            try:
                data, kernel, stride, pad, epi, _ = self._conv_shapes(self.graph.node(f.conv),
                                                                      shapes)
                residual.check(epi)
                ops.plan_conv2d(self.cfg, data, kernel, stride, pad, bias=epi.rows,
                                residual=True)
            except ValueError:
                return False
            return True

        return on_vta, (fold.folds(self.graph, on_vta, fits) if self.fold_adds else {})

    def _residual(self, f: fold.Fold) -> ops.Residual | None:
        """The folded add ``f`` as the convolution's :class:`~vta.ops.Residual` (None when
        its other operand's steps are not one int8 multiplication)."""
        add = self.graph.node(f.add)
        values = self.graph.values
        aq, bq, yq = (values[v].qtype for v in (*add.inputs, add.output))
        steps = lowering.add_steps(add.attrs["fixed"], aq, bq, yq, add.attrs["lo"],
                                   add.attrs["hi"])
        mine, other = (("a_steps", "b_steps") if f.operand == 0 else ("b_steps", "a_steps"))
        return ops.Residual.of_steps(steps[mine], steps[other], steps["steps"])

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
            aq, yq = values[n.inputs[0]].qtype, values[n.output].qtype
            bq = values[n.inputs[1]].qtype if len(n.inputs) > 1 else a["const_qtype"]
            shape = self.shapes[n.output]
            elems = int(np.prod(packed_shape(shape, cfg))) // (cfg.BATCH * cfg.BLOCK_OUT)
            args = {"elems": elems, **lowering.add_steps(a["fixed"], aq, bq, yq, a["lo"],
                                                         a["hi"])}
            bufs = []
            if len(n.inputs) == 1:  # a constant operand, broadcast to the output's shape
                const = np.broadcast_to(a["const"], shape)
                bufs.append(self._upload(pack(lowering.to_device(const, bq), cfg)))
            bound = ops.add_bound(cfg, elems, a_steps=args["a_steps"], b_steps=args["b_steps"],
                                  steps=args["steps"])
            return _VtaStep(n, "add", args, bufs, bound)
        if n.op in ("maxpool", "avgpool"):
            args = self._pool_args(n, self.shapes)
            bound = ops.pool2d_bound(cfg, args["data_shape"], kind=args["kind"],
                                     kernel=args["kernel"], stride=args["stride"],
                                     pads=args["pads"], steps=args["steps"])
            return _VtaStep(n, "pool", args, [], bound)
        data, kernel, stride, pad, epi, rows = self._conv_shapes(n, self.shapes)
        w = a["weight"]
        if n.op == "conv":
            packed_w = ops.pack_oihw(w, cfg)
        else:
            packed_w = ops.pack_oihw(w[:, :, None, None], cfg)
        bufs = [self._upload(packed_w), self._upload(rows)]
        args = {"data_shape": data, "kernel_shape": kernel, "stride": stride, "padding": pad,
                "epilogue": epi, "residual": None}
        if n.name in self.folded:
            args["residual"] = self._residual(self.folded[n.name])
            bufs.append(self._upload(args["residual"].weights(cfg)))
        bound = ops.conv2d_bound(cfg, data, kernel, stride=stride, padding=pad, epilogue=epi,
                                 residual=args["residual"])
        return _VtaStep(n, "conv", args, bufs, bound)

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
        a = step.args
        if step.kind == "conv":
            folded = a["residual"] is not None
            ops.emit_conv2d(q, a["data_shape"], a["kernel_shape"], ins[0], step.bufs[0], out,
                            stride=a["stride"], padding=a["padding"], bias=step.bufs[1],
                            epilogue=a["epilogue"], residual=a["residual"],
                            other=ins[1] if folded else None,
                            identity=step.bufs[2] if folded else None)
        elif step.kind == "pool":
            ops.emit_pool2d(q, a["data_shape"], ins[0], out, kind=a["kind"], kernel=a["kernel"],
                            stride=a["stride"], pads=a["pads"], steps=a["steps"])
        else:
            ops.emit_add(q, ins[0], ins[1] if len(ins) > 1 else step.bufs[0], out,
                         a["elems"], a_steps=a["a_steps"], b_steps=a["b_steps"],
                         steps=a["steps"])
        q.synchronize()
        if self.replay:
            step.recorded = self._recorder.log
        self._recorder.log = None
        return RunStats.total(q.history[before:])

    @staticmethod
    def _epilogue_text(step: _VtaStep) -> str:
        n = step.node
        fp = n.attrs.get("fixed")
        if step.kind == "pool":
            what = "max" if step.args["kind"] == "max" else "sum"
            kh, kw = step.args["kernel"]
            parts = [f"{what} over {kh}x{kw}"]
            if step.args["steps"]:
                parts.append(f"{len(step.args['steps'])} ALU steps")
            return ", ".join(parts)
        if step.kind == "add":
            text = f"a*{fp.mult_a} + b*{fp.mult_b}"
            if fp.shift:
                text += f", round >>{fp.shift}"
            return text + f", clip {n.attrs['lo']}..{n.attrs['hi']}"
        epi = step.args["epilogue"]
        parts = ["bias"]
        if epi.regions:
            parts.append(f"zero-point border x{len(epi.regions)}")
        parts.append(fp.describe())
        parts.append(f"clip {n.attrs['lo']}..{n.attrs['hi']}")
        if fp.error:
            parts.append(f"err<={fp.error:.3f}")
        r = step.args.get("residual")
        if r is not None:
            parts.append(f"+ the add: {len(r.conv_steps)} steps on y, other x{r.other_mult}, "
                         f"{len(r.steps)} steps")
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
                q = g.values[v].qtype
                dev.write(self.dev_buf[v], pack(lowering.to_device(host[v], q), cfg))
                on_device.add(v)

        def to_host(v: str) -> np.ndarray:
            if v not in host:
                shape = packed_shape(self.shapes[v], cfg)
                raw = dev.read(self.dev_buf[v], int(np.prod(shape)))
                host[v] = lowering.from_device(
                    unpack(raw.view(np.int8).reshape(shape), self.shapes[v]), g.values[v].qtype)
            return host[v]

        folded_into = {f.add: f.conv for f in self.folded.values()}
        for n in g.nodes:
            t0 = time.perf_counter()
            ins, out = self.io[n.name]
            if n.name in folded_into:
                rec = NodeReport(n.name, n.op, "vta",
                                 epilogue=f"folded into {folded_into[n.name]}")
            elif n.name in self.on_vta:
                for v in ins:
                    to_device(v)
                step = self.steps[n.name]
                stats = self._run_step(step, [self.dev_buf[v] for v in ins], self.dev_buf[out])
                on_device.add(out)
                if out in self.read_back:
                    to_host(out)
                rec = NodeReport(n.name, n.op, "vta", epilogue=self._epilogue_text(step),
                                 stats=stats, macs=node_macs(n, self.shapes), bound=step.bound)
            else:
                host[n.output] = eval_node(n, g, [to_host(v) for v in n.inputs])
                rec = NodeReport(n.name, n.op, "cpu", reason=self.reasons[n.name],
                                 macs=node_macs(n, self.shapes))
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
