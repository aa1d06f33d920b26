"""A backbone's gate in the report: issue 36 runs no grid on a backbone until SimCSE is shown to raise it
(benchmarks/backbone/budget_probe.py --rule gate), so a backbone whose gate failed has no grid section,
and its numbers would otherwise live only beside the gate's cells. This section carries them into
RESULTS.md from the files the gate and its diagnosis wrote (budget/NAME/README.md, DIAGNOSIS.md), never
retyped."""

from __future__ import annotations

from pathlib import Path

from benchmarks.grid.report_prose import BACKBONE_NOTES
from lwap.checks.files import read_json_object
from lwap.compare.grid import REGIME_WORDS, backbone_name

GATE_DOCS = "docs/COMPARE.md"  # where the gate's rule and the diagnosis plan were pre-registered


def table_lines(path: Path, first: str) -> list[str]:
    """From the line starting with `first` to the end of the table that follows it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(first)), None)
    if start is None:
        return []
    kept: list[str] = []
    for line in lines[start:]:
        if not line.startswith("|") and any(k.startswith("|") for k in kept):
            break
        kept.append(line)
    return kept


def read_gates(budget_root: Path) -> dict[str, dict]:
    """Each gated backbone's choice by budget folder name (rule `gate`; a probe's choice is not a gate),
    read once for the whole report."""
    gates: dict[str, dict] = {}
    for folder in sorted(p for p in budget_root.glob("*") if (p / "choice.json").is_file()):
        choice = read_json_object(folder / "choice.json")  # a damaged file: DataError naming it
        if choice.get("rule") == "gate":
            gates[folder.name] = choice
    return gates


def gate_failed(gates: dict[str, dict], backbone: str, regime: str) -> bool:
    """Whether issue 36's gate (budget_probe.py --rule gate; `read_gates`) failed for this backbone in
    this regime; a regime the gate did not try has not failed."""
    choice = gates.get(backbone_name(backbone))
    return choice is not None and not choice["regimes"].get(regime, {}).get("passed", True)


def gate_notes(found: list[str]) -> dict[str, str]:
    """The backbone notes for gate sections: only for backbones without a grid (a grid section has it)."""
    gridded = {backbone_name(b) for b in found}
    return {name: note for name, note in BACKBONE_NOTES.items() if name not in gridded}


def gate_sections(budget_root: Path, gates: dict[str, dict], notes: dict[str, str]) -> list[str]:
    """One section per gated backbone (`read_gates`), from the files in its budget folder."""
    lines: list[str] = []
    for name, choice in gates.items():
        folder = budget_root / name
        where = f"benchmarks/results/compare/budget/{folder.name}"
        outcome = [
            f"{REGIME_WORDS[regime]}: `{c['budget']}` " + ("**passed**" if c["passed"] else "**failed**")
            for regime, c in choice["regimes"].items()
        ]
        failed = [REGIME_WORDS[r] for r, c in choice["regimes"].items() if not c["passed"]]
        passed = [
            f"{REGIME_WORDS[r]} grid runs under `{c['budget']}`"
            for r, c in choice["regimes"].items()
            if c["passed"]
        ]
        if failed and passed:  # the gate is read per regime (docs/COMPARE.md)
            stop = (
                f" **No {' or '.join(failed)} grid** until its cause is found; the {'; the '.join(passed)}."
            )
        else:
            stop = "" if not failed else " **No grid is run on this backbone** until the cause is found."
        lines += [f"## {folder.name}: the gate", ""]
        lines += [notes[folder.name], ""] if folder.name in notes else []
        lines += [
            "Made by `python benchmarks/backbone/budget_probe.py "
            f"--backbone {choice['backbone']} --rule gate` "
            f"({where}/README.md; the rule: {GATE_DOCS}). Seed 0, STS tasks; Avg. (all), Spearman × 100.",
            "",
            *table_lines(folder / "README.md", "Untouched rows, Avg. (all)"),
            "",
            "Outcome: " + "; ".join(outcome) + "." + stop,
            "",
        ]
        if (folder / "DIAGNOSIS.md").is_file():
            lines += [
                f'The diagnosis pre-registered for a failed gate ({GATE_DOCS}, "Diagnosis if the gate '
                f'fails"; `python benchmarks/backbone/gate_diagnosis.py --backbone {choice["backbone"]}`, '
                f"{where}/DIAGNOSIS.md):",
                "",
                *table_lines(folder / "DIAGNOSIS.md", "| run |"),
                "",
            ]
            tested = [
                line
                for line in (folder / "DIAGNOSIS.md").read_text(encoding="utf-8").splitlines()
                if line.startswith(("- (a)", "- (b)"))
            ]
            if tested:  # issue 50's two causes, tested by experiment; DIAGNOSIS.md states the readings
                lines += [
                    "The two causes the diagnosis left untested, tested (issue 50; S: SNLI sentences the "
                    "backbone never saw, W: as many of its Wikipedia ones; "
                    f"{where}/experiments/EXPERIMENTS.md):",
                    "",
                    *tested,
                    "",
                ]
    return lines
