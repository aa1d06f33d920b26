"""Issue 66's budget test, read as pre-registered (docs/COMPARE.md, "Pre-registered: verdicts with power").

    python benchmarks/grid/verdict_report.py          # writes benchmarks/results/verdicts/BUDGET.md

Reads only the cell files of benchmarks/grid/verdict_cells.sh (results/verdicts/budget-3ep/ and
budget-10ep/) and their `.pairs.npz`: the primary family (`lwap` − `first_last_avg`, `lwap` − `cls-mlp`,
on Avg. (all) and SciFact nDCG@10, at both budgets: 8 tests; paired t-intervals at 1 − 0.05/8, Holm's p
beside them, the four words with margins 0.5 and 1.0), each row's kept step and whether its dev curve
was still rising, the secondary contrasts at 95 %, and the bootstrap over STS test pairs. A contrast is
read only once both rows have all 10 seeds at that budget; until then it says how many are in.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: the repository root on sys.path, as `python -m` would
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np

from benchmarks import REPO
from lwap.compare.intervals import (
    family_level,
    interval_text,
    level_text,
    paired_interval,
    paired_p,
    phrase,
)

RESULTS = REPO / "benchmarks/results/verdicts"
BACKBONE = "bert-prenorm-4l256-sentences"
BUDGETS = {
    "budget-3ep": "today's budget (3 epochs, 297 steps)",
    "budget-10ep": "long budget (10 epochs, 990 steps)",
}
ROWS = ("lwap", "lwap-attn", "first_last_avg", "mean", "cls-mlp")
SEEDS = tuple(range(10))
METRICS = {"avg_all": ("Avg. (all)", 0.5), "scifact_ndcg@10": ("SciFact nDCG@10", 1.0)}
PRIMARY = (
    ("lwap", "first_last_avg", "Q1: the best fixed layer average"),
    ("lwap", "cls-mlp", "Q2: SimCSE's baseline"),
)
SECONDARY = (("lwap", "mean"), ("lwap-attn", "first_last_avg"), ("lwap", "lwap-attn"))
RISING = 0.002  # dev Spearman gain over the last epoch (0.2 points) that marks a row as still rising
EPOCH_STEPS = 99
STS_TASKS = ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr")
BOOTSTRAP = 2000


def cells_of(budget: str, results: Path = RESULTS) -> dict[str, dict[int, dict[str, Any]]]:
    """Each row's cells at `budget`, by seed (the cells the queue has finished so far)."""
    from lwap.compare.cells import read

    folder = results / budget / "backbones" / BACKBONE / "sup"
    found: dict[str, dict[int, dict[str, Any]]] = {row: {} for row in ROWS}
    for path in sorted(folder.glob("*.json")):
        cell = read(path)
        if cell.get("pooler") in found:
            found[cell["pooler"]][cell["seed"]] = {**cell, "path": path}
    return found


def complete(cells: dict[int, dict[str, Any]]) -> bool:
    return all(seed in cells for seed in SEEDS)


def values(cells: dict[int, dict[str, Any]], key: str) -> list[float]:
    return [cells[seed]["scores"][key] for seed in SEEDS]


def primary_tests(all_cells: dict[str, dict[str, dict[int, dict[str, Any]]]]) -> list[dict[str, Any]]:
    """The 8 pre-registered tests, in the report's order; `None` fields where a row lacks seeds."""
    from lwap.compare.paired import holm

    level = family_level(len(BUDGETS) * len(PRIMARY) * len(METRICS))
    tests = []
    for budget in BUDGETS:
        cells = all_cells[budget]
        for a, b, question in PRIMARY:
            for key, (label, margin) in METRICS.items():
                test = {
                    "budget": budget,
                    "a": a,
                    "b": b,
                    "question": question,
                    "metric": label,
                    "margin": margin,
                    "done": min(len(cells[a]), len(cells[b])),
                }
                if complete(cells[a]) and complete(cells[b]):
                    first, second = values(cells[a], key), values(cells[b], key)
                    interval = paired_interval(first, second, level)
                    d = [x - y for x, y in zip(first, second, strict=True)]
                    test.update(
                        interval=interval,
                        sd=statistics.stdev(d),
                        positive=sum(x > 0 for x in d),
                        p=paired_p(first, second),
                        word=phrase(interval, margin),
                    )
                tests.append(test)
    adjusted = holm([t.get("p") for t in tests])
    for test, p in zip(tests, adjusted, strict=True):
        test["holm"] = p
    return tests


def p_text(p: float | None) -> str:
    return "–" if p is None else "< 0.001" if p < 0.001 else f"{p:.3f}"


def primary_table(tests: list[dict[str, Any]]) -> list[str]:
    level = level_text(family_level(len(tests)))
    lines = [
        f"| budget | contrast | metric | mean d | sd | seeds d > 0 | {level} interval | Holm p | word |",
        "| --- | --- | --- | ---: | ---: | ---: | --- | ---: | --- |",
    ]
    for t in tests:
        head = f"| {t['budget']} | `{t['a']}` − `{t['b']}` | {t['metric']} (margin {t['margin']:g})"
        if "interval" not in t:
            lines.append(f"{head} | | | | pending: {t['done']} of 10 seeds | | |")
            continue
        i = t["interval"]
        lines.append(
            f"{head} | {i.mean:+.2f} | {t['sd']:.2f} | {t['positive']}/10 | {interval_text(i)} | "
            f"{p_text(t['holm'])} | **{t['word']}** |"
        )
    return lines


def dev_reading(cells: dict[int, dict[str, Any]]) -> tuple[float, float, bool] | None:
    """(median kept step, mean dev gain over the last epoch, still rising) of one row at one budget."""
    if not cells:
        return None
    curves = [dict(map(tuple, c["train"]["dev_spearman_by_step"])) for c in cells.values()]
    gains = []
    for curve in curves:
        last = max(curve)
        before = max((step for step in curve if step <= last - EPOCH_STEPS), default=None)
        if before is not None:
            gains.append(curve[last] - curve[before])
    gain = statistics.fmean(gains) if gains else float("nan")
    kept = statistics.median(c["train"]["best_step"] for c in cells.values())
    return kept, gain, gain > RISING


def rows_table(all_cells: dict[str, dict[str, dict[int, dict[str, Any]]]]) -> list[str]:
    lines = [
        "| budget | row | seeds | Avg. (all) | SciFact nDCG@10 | best STS-B dev | median kept step | "
        "dev gain, last epoch | still rising |",
        "| --- | --- | ---: | --- | --- | --- | ---: | ---: | --- |",
    ]
    for budget in BUDGETS:
        for row in ROWS:
            cells = all_cells[budget][row]
            if not cells:
                lines.append(f"| {budget} | `{row}` | 0 | | | | | | |")
                continue

            def spread(key: str, scale: float = 1.0, cells=cells) -> str:
                got = [c["scores"][key] * scale if key in c["scores"] else None for c in cells.values()]
                got = [g for g in got if g is not None]
                sd = statistics.stdev(got) if len(got) > 1 else 0.0
                return f"{statistics.fmean(got):.2f} ± {sd:.2f}"

            dev = [c["train"]["best_dev_spearman"] * 100 for c in cells.values()]
            dev_text = f"{statistics.fmean(dev):.2f} ± {statistics.stdev(dev) if len(dev) > 1 else 0.0:.2f}"
            kept, gain, rising = dev_reading(cells)
            lines.append(
                f"| {budget} | `{row}` | {len(cells)} | {spread('avg_all')} | {spread('scifact_ndcg@10')} | "
                f"{dev_text} | {kept:g} | {gain * 100:+.2f} | {'**yes**' if rising else 'no'} |"
            )
    return lines


def secondary_table(all_cells: dict[str, dict[str, dict[int, dict[str, Any]]]]) -> list[str]:
    """Secondary contrasts (95 %, no family): within each budget, and each row's long − today's."""
    pairs = [(budget, a, budget, b) for budget in BUDGETS for a, b in SECONDARY]
    pairs += [("budget-10ep", row, "budget-3ep", row) for row in ROWS]
    lines = [
        "| contrast | metric | mean d | 95 % interval | word |",
        "| --- | --- | ---: | --- | --- |",
    ]
    for budget_a, a, budget_b, b in pairs:
        first, second = all_cells[budget_a][a], all_cells[budget_b][b]
        name = f"`{a}` − `{b}` ({budget_a})" if budget_a == budget_b else f"`{a}`: {budget_a} − {budget_b}"
        for key, (label, margin) in METRICS.items():
            if not (complete(first) and complete(second)):
                seeds = min(len(first), len(second))
                lines.append(f"| {name} | {label} | | pending: {seeds} of 10 seeds | |")
                continue
            interval = paired_interval(values(first, key), values(second, key), 0.95)
            lines.append(
                f"| {name} | {label} | {interval.mean:+.2f} | {interval_text(interval)} | "
                f"{phrase(interval, margin)} |"
            )
    return lines


def gold_scores() -> dict[str, tuple[list[str], np.ndarray]]:
    """Each STS task's subset keys (as pair_scores.npz names them) and its gold scores, concatenated."""
    from lwap.eval.sts_data import load_sts_task

    gold = {}
    for name in STS_TASKS:
        task = load_sts_task(name, "senteval")
        keys = [f"{name}/{subset}" for subset in task.subsets]
        gold[name] = (
            keys,
            np.concatenate([np.asarray(p.scores, dtype=np.float64) for p in task.subsets.values()]),
        )
    return gold


def bootstrap_rows(
    a: dict[int, dict[str, Any]],
    b: dict[int, dict[str, Any]],
    gold: dict[str, tuple[list[str], np.ndarray]],
    resamples: int = BOOTSTRAP,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Mean over seeds of Avg. (all) a_s − b_s, and its 95 % percentile interval when the STS test pairs
    are resampled (the same resample for every cell: the test set's own noise, seeds held fixed)."""
    from lwap.eval.sts_scoring import _row_spearman

    rng = np.random.default_rng(seed)
    loaded = {
        (side, s): np.load(cells[s]["path"].with_name(cells[s]["pair_scores"]))
        for side, cells in (("a", a), ("b", b))
        for s in SEEDS
    }
    totals = np.zeros(resamples)
    observed = 0.0
    for keys, scores in gold.values():
        index = rng.integers(0, len(scores), size=(resamples, len(scores)))
        for s in SEEDS:
            for side, sign in (("a", 1.0), ("b", -1.0)):
                cosine = np.concatenate([loaded[side, s][k] for k in keys]).astype(np.float64)
                totals += sign * _row_spearman(cosine[index], scores[index])
                observed += sign * _row_spearman(cosine[None, :], scores[None, :])[0]
    scale = len(gold) * len(SEEDS)
    low, high = np.percentile(totals / scale, [2.5, 97.5])
    return observed / scale, float(low), float(high)


def bootstrap_table(all_cells: dict[str, dict[str, dict[int, dict[str, Any]]]]) -> list[str]:
    lines = [
        "| budget | contrast | Avg. (all) mean d | 95 % interval over test pairs |",
        "| --- | --- | ---: | --- |",
    ]
    gold = None
    for budget in BUDGETS:
        for a, b, _ in PRIMARY:
            first, second = all_cells[budget][a], all_cells[budget][b]
            if not (complete(first) and complete(second)):
                lines.append(f"| {budget} | `{a}` − `{b}` | | pending |")
                continue
            gold = gold or gold_scores()
            mean, low, high = bootstrap_rows(first, second, gold, BOOTSTRAP)
            lines.append(f"| {budget} | `{a}` − `{b}` | {mean:+.2f} | [{low:+.2f}, {high:+.2f}] |")
    return lines


def reading(tests: list[dict[str, Any]]) -> list[str]:
    """The pre-registered reading: what the long budget says of each question."""
    long = [t for t in tests if t["budget"] == "budget-10ep"]
    if any("interval" not in t for t in long):
        return ["The long budget's cells are not all in: no reading yet."]
    out = []
    for _, b, question in PRIMARY:
        words = {t["metric"]: t["word"] for t in long if t["b"] == b}
        said = "; ".join(f"{metric}: **{w}**" for metric, w in words.items())
        settled = any(w == "below by more than the margin" for w in words.values())
        caught = all(w in ("equivalent", "above") for w in words.values())
        verdict = (
            "this regime settles it against LWAP"
            if settled
            else "LWAP catches up with the longer budget"
            if caught
            else "not settled at n = 10"
        )
        out.append(f"- {question} (`lwap` − `{b}`), long budget: {said}. {verdict}.")
    return out


def results_section(
    results: Path = RESULTS, link: str = "../benchmarks/results/verdicts/BUDGET.md"
) -> list[str]:
    """docs/RESULTS.md's section: the primary family and its reading (pending until the cells are in),
    with BUDGET.md (at `link`) for the rest."""
    all_cells = {budget: cells_of(budget, results) for budget in BUDGETS}
    tests = primary_tests(all_cells)
    done = sum(len(c) for cells in all_cells.values() for c in cells.values())
    return [
        "## The primary questions: the budget test (issue 66)",
        "",
        "Pre-registered in [COMPARE.md](COMPARE.md#pre-registered-verdicts-with-power-issue-66) before its",
        "cells ran: does LWAP beat the best fixed layer average (`lwap` − `first_last_avg`), and SimCSE's",
        "supervised baseline (`lwap` − `cls-mlp`)? On Avg. (all) and SciFact nDCG@10, at today's budget (3",
        "epochs) and a long one (10), on bert-prenorm-4l256-sentences, supervised, seeds 0–9 paired by seed:",
        f"8 tests, one family (intervals at {level_text(family_level(len(tests)))}, Holm's p beside). "
        f"{done} of 100 cells in. Each row's",
        f"scores, kept steps and dev curves, the secondary contrasts and the bootstrap: [BUDGET.md]({link})",
        "(`python benchmarks/grid/verdict_report.py`).",
        "",
        *primary_table(tests),
        "",
        "Words from the interval, in this order: equivalent (inside ±margin), above (low end > 0), below",
        "(high end < 0), else undecided.",
        "",
        *reading(tests),
        "",
        "Every other comparison in this page is secondary (COMPARE.md): the 3-seed grids below are read in",
        "the same four words at 95 % (each comparison decided in one table, which names it; Holm's p over",
        "that table beside), on their own budgets.",
        "",
    ]


def report(results: Path = RESULTS) -> str:
    all_cells = {budget: cells_of(budget, results) for budget in BUDGETS}
    tests = primary_tests(all_cells)
    done = sum(len(c) for cells in all_cells.values() for c in cells.values())
    commits = sorted(
        {c["commit"] for cells in all_cells.values() for row in cells.values() for c in row.values()}
    )
    lines = [
        "# Issue 66: the budget test",
        "",
        "Made by `python benchmarks/grid/verdict_report.py` from the cells of",
        "`benchmarks/grid/verdict_cells.sh` (pre-registered in docs/COMPARE.md, `Pre-registered: verdicts",
        "with power`): bert-prenorm-4l256-sentences, supervised SimCSE on the mirror's 6,337 SNLI",
        f"triplets, lr 3e-4, seeds 0–9 at both budgets; scores × 100; {done} of 100 cells in, made by",
        f"{'commits' if len(commits) > 1 else 'commit'} {', '.join(c[:10] for c in commits) or '–'}.",
        "",
        "## The primary family (8 tests)",
        "",
        *primary_table(tests),
        "",
        "Words from the interval, in this order: equivalent (inside ±margin), above (low end > 0), below",
        "(high end < 0), else undecided; Holm's p (paired t-test against 0, over the 8 tests) beside it.",
        "",
        *reading(tests),
        "",
        "## Each row at each budget (mean ± sd over seeds)",
        "",
        *rows_table(all_cells),
        "",
        f"Still rising: the dev Spearman, averaged over seeds, gains more than {RISING * 100:g} points over",
        f"the last epoch ({EPOCH_STEPS} steps before the last evaluation).",
        "",
        "## Secondary (95 % intervals, no family)",
        "",
        *secondary_table(all_cells),
        "",
        "## The test sets' own noise: bootstrap over STS test pairs",
        "",
        f"{BOOTSTRAP:,} resamples of each STS task's test pairs, the same resample for every cell; the",
        "interval holds the seeds fixed, so it reads how much of a difference the test sets alone could",
        "make.",
        "",
        *bootstrap_table(all_cells),
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=str(RESULTS / "BUDGET.md"))
    args = parser.parse_args(argv)
    from lwap.checks.files import write_text_atomically

    write_text_atomically(Path(args.output), report())
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
