"""What a re-run reproduces: placeholder until the re-run records exist."""

from __future__ import annotations

from lwap.compare.grid import Grid
from lwap.compare.prose import Wording


def rerun_section(grid: Grid, backbones: list[str], wording: Wording) -> list[str]:
    return []
