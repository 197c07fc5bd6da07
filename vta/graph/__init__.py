"""A small graph runtime: quantized ONNX models on VTA, the rest on the CPU.

::

    from vta import graph
    g = graph.load_onnx("model.onnx")                 # QDQ or QOperator int8 ONNX
    ref = graph.run_reference(g, {"input": x})        # the int8 reference (NumPy)
    with vta.open_device("golden") as dev:
        ex = graph.Executor(g, dev)                   # placement, fused epilogues, buffers
        out = ex.run({"input": x})                    # bit-exact with ``ref``
        print(ex.report().table())

See :mod:`vta.graph.ir` for the operators and their arithmetic.
"""

from .ir import Graph, GraphError, Node, QType, Value
from .onnx_import import load_onnx
from .reference import run_reference

__all__ = ["Graph", "GraphError", "Node", "QType", "Value", "load_onnx", "run_reference"]
