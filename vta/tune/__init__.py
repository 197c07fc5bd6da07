"""Tuning: measure candidate plans of each layer on the RTL and keep the best (``vta tune``).

:mod:`vta.tune.log` is the tuning log the planner reads; :mod:`vta.tune.run`
measures plans (locally or on a Dask cluster); the command is :mod:`vta.cli.tune`.
"""
