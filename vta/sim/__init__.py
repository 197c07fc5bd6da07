"""Simulation support: locating the HDL and testbench, and cached simulator builds."""
