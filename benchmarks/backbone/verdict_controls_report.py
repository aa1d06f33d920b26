"""CONTROLS.md of verdict_controls.py: issue 66's control and seen-ness, read as docs/COMPARE.md
pre-registered them, from the tracked files alone (cells, `lwap eval` outputs, plain_simcse.json records,
the arms' record). A run not made yet is a row that says so; a reading waits for all its runs.

- The control: Avg. (all) of T, P, P+clip per seed; Welch's 95 % intervals (the loops share no data
  order); **real** if P − T > 2 points and its interval excludes 0; if real, **clipping explains it** if
  P+clip − T lies within ±2 points and P − P+clip > 2 (both on the means).
- Seen-ness: per pooler, U − W (seen-ness) and S − U (domain) paired by seed, the 4 tests one family:
  t-intervals at 1 − 0.05/4, margin 0.5, the four words (lwap.compare.intervals), Holm's p beside;
  the subsets where (b)'s S gained or lost (MSRvid, images, answers-forums), descriptive.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from benchmarks.backbone.verdict_controls_arms import ARM_WORDS, ARMS
from benchmarks.backbone.verdict_controls_layout import SEEDS, SEEN_POOLERS, Layout
from lwap.checks.files import read_json_object
from lwap.compare.cells import read, scores
from lwap.compare.intervals import (
    Interval,
    family_level,
    interval_text,
    level_text,
    paired_interval,
    paired_p,
    phrase,
    welch_interval,
)
from lwap.compare.paired import holm, p_text

RUNS = ("T", "P", "P+clip")
RUN_WORDS = {
    "T": "T: lwap's trainer (compare cells)",
    "P": "P: the plain loop as committed",
    "P+clip": "P+clip: the plain loop, gradient norm clipped at 1.0",
}
REAL_GAP = 2.0  # points of Avg. (all): DIAGNOSIS.md's rule
SEEN_TESTS = 4  # 2 poolers × (U − W, S − U): one family
SEEN_MARGIN = 0.5
CONTRASTS = (("U", "W", "seen-ness"), ("S", "U", "domain"))
SUBSETS = (("sts12", "MSRvid"), ("sts14", "images"), ("sts15", "images"), ("sts15", "answers-forums"))
SEEN_WORDS = {  # (contrast, word) → what it says
    ("seen-ness", "above"): "U above W: seen sentences hurt",
    ("seen-ness", "below"): "U below W: seen sentences help",
    ("seen-ness", "equivalent"): "U equivalent to W: seen-ness changes nothing that matters (±0.5)",
    ("seen-ness", "undecided"): "undecided: 3 seeds cannot tell seen-ness from no effect",
    ("domain", "above"): "S above U: the domain helps",
    ("domain", "below"): "S below U: the domain hurts",
    ("domain", "equivalent"): "S equivalent to U: the domain changes nothing that matters (±0.5)",
    ("domain", "undecided"): "undecided: 3 seeds cannot tell the domain's effect from none",
}


def cell_row(path: Path) -> dict[str, Any] | None:
    """A compare cell: its Avg. (all), kept step and steps (None until it exists)."""
    if not path.is_file():
        return None
    cell = read(path)
    train = cell.get("train") or {}
    return {"avg_all": cell["scores"]["avg_all"], "kept": train.get("best_step"), "steps": train.get("steps")}


def plain_row(folder: Path) -> dict[str, Any] | None:
    """A plain run scored by `lwap eval` (results.json) with its record beside (None until both exist)."""
    results, record_file = folder / "results.json", folder / "plain_simcse.json"
    if not results.is_file() or not record_file.is_file():
        return None
    record = read_json_object(record_file)
    return {
        "avg_all": scores(read(results))["avg_all"],
        "kept": record.get("best_step"),
        "steps": record.get("steps"),
        "clipped": record.get("steps_clipped"),
    }


def control_rows(layout: Layout, backbone: str) -> dict[str, dict[int, dict[str, Any] | None]]:
    trainer = layout.trainer_grid()
    return {
        "T": {s: cell_row(trainer.cell_file(backbone, "unsup", "cls", s)) for s in SEEDS},
        **{run: {s: plain_row(layout.plain_scores(run, s)) for s in SEEDS} for run in ("P", "P+clip")},
    }


def run_cells(rows: dict[int, dict[str, Any] | None]) -> list[str]:
    """Per seed `avg (kept/steps)`, then the mean over the seeds there are."""
    shown = [
        f"{row['avg_all']:.2f} ({row['kept']}/{row['steps']})" if row else "not run yet"
        for row in (rows[s] for s in SEEDS)
    ]
    values = [row["avg_all"] for row in rows.values() if row]
    mean = f"{statistics.fmean(values):.2f}" if values else "—"
    return [*shown, mean if len(values) == len(SEEDS) else f"{mean} ({len(values)} seeds)"]


def control_reading(avg: dict[str, list[float]]) -> tuple[list[str], str]:
    """The contrasts' lines and the pre-registered reading, from each run's Avg. (all) over the seeds."""
    if any(len(avg[run]) < len(SEEDS) for run in RUNS):
        return [], "Not read yet: the reading waits for all 9 runs."
    gap = welch_interval(avg["P"], avg["T"], 0.95)
    with_clip = welch_interval(avg["P+clip"], avg["T"], 0.95)
    clip_effect = welch_interval(avg["P"], avg["P+clip"], 0.95)
    lines = [
        f"| {name} | {i.mean:+.2f} | {interval_text(i)} |"
        for name, i in (("P − T", gap), ("P+clip − T", with_clip), ("P − P+clip", clip_effect))
    ]
    excludes_zero = gap.low > 0 or gap.high < 0
    if not (gap.mean > REAL_GAP and excludes_zero):
        why = "not more than 2 points" if gap.mean <= REAL_GAP else "its interval includes 0"
        return lines, (
            f"**Not real**: P − T is {gap.mean:+.2f} points ({why}). The committed gap (plain 44.55 against "
            "lwap's trainer 40.32, one seed each, the plain folder scored at its own 128 tokens) was a "
            "single-seed or scoring artefact; the reading goes into DIAGNOSIS.md next to its rule."
        )
    found = f"P − T {gap.mean:+.2f}, {interval_text(gap)}; P+clip − T {with_clip.mean:+.2f}; "
    found += f"P − P+clip {clip_effect.mean:+.2f}"
    if abs(with_clip.mean) <= REAL_GAP and clip_effect.mean > REAL_GAP:
        return lines, (
            f"**Real, and clipping explains it** ({found}): lwap's default (Hugging Face's `max_grad_norm` "
            "1.0) matches Hugging Face's and SimCSE's, the plain loop (no clipping) is the outlier. As "
            "pre-registered, lwap makes the clipping a config key (`training.max_grad_norm`, default 1.0 as "
            "today) so that the control can be matched; the reading goes into DIAGNOSIS.md next to its rule."
        )
    return lines, (
        f"**Real, and clipping does not explain it** ({found}): as pre-registered, the other differences "
        "between the loops are listed and tested one at a time, each added to docs/COMPARE.md, dated, "
        "before it runs; the reading goes into DIAGNOSIS.md next to its rule."
    )


def control_section(layout: Layout, backbone: str) -> list[str]:
    rows = control_rows(layout, backbone)
    lines = [
        "## The control: lwap's trainer against the plain loop (unsupervised `cls`)",
        "",
        "The gate's `long` budget (lr 3e-4, the mirror's first 64,000 Wikipedia sentences, batch 64, length "
        "32, 1,000 steps, bf16, STS-B dev every 50 steps, the best trained step kept). Avg. (all) per seed "
        "(kept step/steps).",
        "",
        "| run | seed 0 | seed 1 | seed 2 | mean |",
        "| --- | --- | --- | --- | --- |",
    ]
    lines += [f"| {RUN_WORDS[run]} | {' | '.join(run_cells(rows[run]))} |" for run in RUNS]
    clipped = [row["clipped"] for row in rows["P+clip"].values() if row and row.get("clipped") is not None]
    if clipped:
        lines += ["", f"P+clip: steps whose gradient norm was over 1.0 and clipped, per seed: {clipped}."]
    avg = {run: [row["avg_all"] for row in rows[run].values() if row] for run in RUNS}
    contrasts, reading = control_reading(avg)
    if contrasts:
        lines += ["", "| contrast | mean difference | Welch's 95 % interval |", "| --- | --- | --- |"]
        lines += contrasts
    return [*lines, "", f"Reading, as pre-registered: {reading}", ""]


def seen_cells(layout: Layout, backbone: str) -> dict[tuple[str, str], dict[int, dict[str, Any] | None]]:
    """(arm, pooler) → seed → its cell's row."""
    return {
        (arm, pooler): {
            seed: cell_row(layout.seen_grid(arm).cell_file(backbone, "unsup", pooler, seed)) for seed in SEEDS
        }
        for arm in ARMS
        for pooler in SEEN_POOLERS
    }


def seen_tests(cells: dict[tuple[str, str], dict[int, dict[str, Any] | None]]) -> list[dict[str, Any]]:
    """The family's 4 tests (those whose 3 seeds are all in), each with its interval, word and Holm p."""
    level, tests = family_level(SEEN_TESTS), []
    for pooler in SEEN_POOLERS:
        for first, second, name in CONTRASTS:
            a, b = cells[first, pooler], cells[second, pooler]
            test = {"pooler": pooler, "name": name, "pair": f"{first} − {second}", "interval": None}
            if not all(a.values()) or not all(b.values()):
                tests.append(test)
                continue
            x = [a[s]["avg_all"] for s in SEEDS]  # type: ignore[index]
            y = [b[s]["avg_all"] for s in SEEDS]  # type: ignore[index]
            interval = paired_interval(x, y, level)
            d = [u - v for u, v in zip(x, y, strict=True)]
            test |= {"interval": interval, "sd": statistics.stdev(d), "positive": sum(v > 0 for v in d)}
            tests.append(test | {"p": paired_p(x, y), "word": phrase(interval, SEEN_MARGIN)})
    adjusted = holm([t.get("p") for t in tests])
    return [{**t, "holm": h} for t, h in zip(tests, adjusted, strict=True)]


def seen_reading(test: dict[str, Any]) -> str:
    interval: Interval | None = test["interval"]
    if interval is None:
        return f"`{test['pooler']}` {test['name']} ({test['pair']}): not read yet (runs missing)."
    word = "below" if test["word"].startswith("below") else test["word"]
    return f"`{test['pooler']}` {test['name']} ({test['pair']}): {SEEN_WORDS[test['name'], word]}."


def subset_means(layout: Layout, arm: str, pooler: str) -> tuple[list[str], int]:
    """Each descriptive subset's Spearman × 100, the mean over the seeds whose eval output is kept."""
    found = []
    for seed in SEEDS:
        path = layout.seen_eval(arm, pooler, seed)
        if path.is_file():
            found.append(read_json_object(path)["sts"])
    means = [
        f"{statistics.fmean(sts[task]['subsets'][name]['spearman'] for sts in found):.2f}" if found else "—"
        for task, name in SUBSETS
    ]
    return means, len(found)


def seen_section(layout: Layout, backbone: str) -> list[str]:
    lines = ["## Seen-ness apart from domain (unsupervised, `mean` and `cls`)", ""]
    record_file = layout.arm_record()
    if record_file.is_file():
        arms = read_json_object(record_file)["arms"]
        each = [f"**{a}** {ARM_WORDS[a]}, {arms[a]['sentences']:,} sentences" for a in ARMS]
        lines += [
            "Three arms of the same size, each `compare/unsup-minilm` with the arm's file (all of it), 6 "
            f"epochs, lr 3e-4: {'; '.join(each)} (their counts and sha256: {record_file.name}).",
            "",
        ]
    cells = seen_cells(layout, backbone)
    lines += ["Avg. (all) per seed (kept step/steps):", ""]
    lines += ["| pooler | arm | seed 0 | seed 1 | seed 2 | mean |", "| --- | --- | --- | --- | --- | --- |"]
    for pooler in SEEN_POOLERS:
        lines += [f"| `{pooler}` | {arm} | {' | '.join(run_cells(cells[arm, pooler]))} |" for arm in ARMS]
    level = family_level(SEEN_TESTS)
    lines += [
        "",
        f"Paired by seed; the family is these {SEEN_TESTS} tests: t-intervals at 1 − 0.05/{SEEN_TESTS} = "
        f"{level_text(level)}, margin {SEEN_MARGIN}, the four words (equivalent, above, below, undecided, "
        "checked in that order); Holm's p over the 4 beside.",
        "",
        f"| pooler | contrast | mean d | sd(d) | seeds d > 0 | {level_text(level)} interval | Holm p "
        "| word |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    tests = seen_tests(cells)
    for t in tests:
        head = f"| `{t['pooler']}` | {t['name']}: {t['pair']} |"
        if t["interval"] is None:
            lines.append(f"{head} not run yet | | | | | |")
            continue
        i: Interval = t["interval"]
        lines.append(
            f"{head} {i.mean:+.2f} | {t['sd']:.2f} | {t['positive']} of {i.n} | {interval_text(i)} | "
            f"{p_text(t['holm'])} | {t['word']} |"
        )
    lines += [
        "",
        'Readings, as pre-registered ("seen sentences hurt" needs U above W; "the domain helps" needs S '
        'above U; with 3 seeds "undecided" is the likely word, reported as such):',
        "",
    ]
    lines += [f"- {seen_reading(t)}" for t in tests]
    lines += [
        "",
        "Where (b)'s S gained or lost against W (issue 50, one seed, `mean`), per arm, mean over the seeds "
        "(Spearman × 100; descriptive only, no test):",
        "",
        "| pooler | arm | " + " | ".join(f"{task.upper()} {name}" for task, name in SUBSETS) + " | seeds |",
        "|" + " --- |" * (len(SUBSETS) + 3),
    ]
    for pooler in SEEN_POOLERS:
        for arm in ARMS:
            means, n = subset_means(layout, arm, pooler)
            lines.append(f"| `{pooler}` | {arm} | {' | '.join(means)} | {n} |")
    return [*lines, ""]


def report(layout: Layout, backbone: str) -> str:
    lines = [
        "# Issue 66: the control and seen-ness",
        "",
        "Made by `python benchmarks/backbone/verdict_controls.py report` from the files beside it (control/, "
        'seen/); the plan and how it is read: docs/COMPARE.md, "Pre-registered: verdicts with power (issue '
        f'66)", paragraphs "The control" and "Seen-ness apart from domain". Backbone `{backbone}`. Avg. '
        "(all): the seven STS tasks, Spearman × 100, every model scored as the bar is (`lwap eval --tasks "
        "sts`, bf16, 256 tokens).",
        "",
    ]
    return "\n".join([*lines, *control_section(layout, backbone), *seen_section(layout, backbone)])
