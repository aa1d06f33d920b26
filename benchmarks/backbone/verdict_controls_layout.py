"""Where verdict_controls.py's runs go and what they are called, shared by its steps and its report
(verdict_controls_report.py), which reads the same files back."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lwap.compare.grid import Grid

BACKBONE = "benchmarks/backbones/bert-prenorm-4l256-sentences"
SEEDS = (0, 1, 2)
PLAIN_FOLDERS = {"P": "plain", "P+clip": "plain-clip"}  # the plain loop as committed; with --clip 1.0
SEEN_POOLERS = ("mean", "cls")


@dataclass(frozen=True)
class Layout:
    """`results` is tracked (cells, scores, records, CONTROLS.md), `work` is not (models, checkpoints,
    logs, the arm files)."""

    results: Path
    work: Path

    def trainer_grid(self) -> Grid:
        return Grid(self.results / "control" / "trainer", self.work / "control" / "trainer")

    def plain_model(self, run: str, seed: int) -> Path:
        return self.work / "control" / PLAIN_FOLDERS[run] / f"cls-seed{seed}"

    def plain_scores(self, run: str, seed: int) -> Path:
        return self.results / "control" / PLAIN_FOLDERS[run] / f"cls-seed{seed}"

    def arm_file(self, arm: str) -> Path:
        return self.work / "seen" / f"{arm}.txt"

    def arm_record(self) -> Path:
        return self.results / "seen" / "sentences.json"

    def seen_grid(self, arm: str) -> Grid:
        return Grid(self.results / "seen" / arm, self.work / "seen" / arm)

    def seen_eval(self, arm: str, pooler: str, seed: int) -> Path:
        """The cell's whole `lwap eval` output (its per-subset scores), kept beside the arm's cells."""
        return self.results / "seen" / arm / "eval" / f"{pooler}-seed{seed}" / "results.json"

    def report(self) -> Path:
        return self.results / "CONTROLS.md"
