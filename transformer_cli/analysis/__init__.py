"""Figures from a spec alone: parameter counts, FLOPs, memory and the machine's limits, spec comparison, the
check of a folder of specs, and the benchmark."""
