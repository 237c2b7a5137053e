"""Backends the exporter can hand subgraphs to (see tern.backend).

    from tern.backends.cpu import CpuPartitioner     # the optimized CPU backend
"""
