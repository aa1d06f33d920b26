"""The parts of benchmarks/speed.py, one concern each (the script itself parses flags and runs them).

settings   the setup every part shares (model, batch 64, length 32, data, levers)
flops      the FLOP model of a step, throughput and MFU of a variant
timing     the clock (step ends) and its optional torch.profiler window
variants   the training setups: `lwap train`'s trainer, stock sentence-transformers, a minimal loop
workers    the worker processes the variants run in, and the parent's side
measure    the matmul bound and encoding speed
profiling  where a step goes (torch.profiler by op and category)
machine    CPU, versions, commit, other load
report     docs/BENCHMARKS.md (tables and prose)
"""
