"""The repository's benchmark scripts, one folder per reason to rerun them (README.md here says which).

A package so that scripts import each other one way: absolute imports from the repository root
(`from benchmarks.speed.speedbench import timing`). `python -m benchmarks.grid.compare_poolers` runs a
script as a module; run as a file (`python benchmarks/grid/compare_poolers.py`), each script first puts
the repository root on sys.path, as `-m` would. Not installed with lwap (pyproject's packages).
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
