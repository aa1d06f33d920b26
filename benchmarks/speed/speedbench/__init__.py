"""The parts of the speed benchmarks, one concern each (speed.py and gpu_speed.py parse flags and run them).

settings      the CPU benchmark's setup (model, batch 64, length 32, data, levers)
flops         the FLOP model of a training step: the one count behind every MFU
timing        the clock (step ends, phase marks, device synchronise, optional torch.profiler window)
variants      the CPU training setups: `lwap train`'s trainer, stock sentence-transformers, a minimal loop
gpu_variants  the GPU benchmark's setups (the same three, bert-base shaped, supervised too, compile levers)
workers       the worker processes the CPU variants run in, and the parent's side
measure       the matmul bound (CPU) and GEMM rate (GPU), encoding speed
profiling     where a step goes (torch.profiler by op and category)
machine       machine, versions, commit: what every benchmark records about its run; other load
report        docs/BENCHMARKS.md (tables and prose)
"""
