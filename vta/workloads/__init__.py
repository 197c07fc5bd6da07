"""Workloads that make their own data, run it on a device and check the result.

``demo``   the workloads of ``vta demo``: the digits CNN, one dense layer
``bench``  the headline figures of BENCHMARKS.md that ``vta bench`` measures
"""
