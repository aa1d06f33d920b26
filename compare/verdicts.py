"""The report's judgements, read off a grid's cells: rankings, each comparison of `lwap` with another row in
the four words (paired by seed: `lwap.compare.paired`), what training did against the untouched backbone,
what each added row adds."""

from __future__ import annotations

import statistics
import textwrap
from collections.abc import Sequence
from typing import Any

from lwap.compare.intervals import interval_text
from lwap.compare.paired import holm, p_text, paired, shown, verdict, word_text
from lwap.compare.rows import Rows
from lwap.compare.settings import crossing

# The three figures each verdict reads: SimCSE's STS aggregation, the LWAP paper's, and retrieval.
HEADLINE = (("avg_all", "Avg. (all)"), ("avg_wmean", "Avg. (wmean)"), ("scifact_ndcg@10", "SciFact nDCG@10"))
CROSSED = "†"  # marks a comparison whose paired cells were made on different setups (settings.crossing)
WORDS_RULE = (
    "**equivalent** where the interval lies inside ±margin (0.5 point for the STS averages, 1.0 for "
    "SciFact nDCG@10), else **above** / **below** where it excludes 0 (**below by more than the margin** "
    "where it lies under −margin), else undecided: at this n the data cannot tell a difference from none"
)


def mean_std(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def standing(cells: dict[str, list[dict[str, Any]]], rows: Rows, baseline: str = "cls") -> list[str]:
    """The regime in short: where the paper's `lwap` ranks among the planned rows (by mean over seeds) on
    Avg. (all), Avg. (wmean) and SciFact, and its difference from `baseline` (the paper's: `cls`) on each
    of the three (STS under both aggregations, and retrieval) in the word the grid's table decides."""
    poolers = [p for p in cells if p in rows.planned]
    if "lwap" not in poolers or len(poolers) < 2:
        return []
    out = []
    for key, label in HEADLINE:
        means = {p: statistics.fmean(c["scores"][key] for c in cells[p]) for p in poolers}
        order = sorted(poolers, key=lambda p: -means[p])
        ranked = " > ".join(f"`{p}` {means[p]:.2f}" for p in order)
        out.append(f"- {label}: `lwap` ranks {order.index('lwap') + 1} of {len(order)} ({ranked}).")
    if baseline in cells:
        mark = CROSSED if crossing(cells["lwap"], cells[baseline]) else ""
        for key, label in HEADLINE:
            found = shown(paired(cells["lwap"], cells[baseline], key), key, mark)
            out.append(
                f"- Against `{baseline}` (the paper's baseline), {label}: `lwap` − `{baseline}` = {found} "
                "(decided in the differences against `lwap` below)."
            )
    seeds = sorted({len(cells[p]) for p in poolers})
    caveat = "" if seeds == [len(rows.seeds)] else " (not every pooler has all its seeds yet: provisional)"
    return [f"In short{caveat}:", "", *out, ""]


def budget_check(
    cells: dict[str, list[dict[str, Any]]],
    reference: dict[str, Any] | None,
    others: Sequence[dict[str, Any]],
    rows: Rows,
) -> list[str]:
    """Like for like against the untouched rows of a plain (e.g. MLM-only) backbone: each trained pooling
    against the same pooling with no training. A budget under which plain SimCSE clearly gains, as it does
    on MLM backbones, is read off here."""
    untouched = {o["pooling"]: o for o in others}
    if not untouched:
        return []
    if reference:
        untouched["mean"] = reference
    out = []
    for pooling in rows.untouched:
        if pooling not in cells or pooling not in untouched:
            continue
        values = [c["scores"]["avg_all"] for c in cells[pooling]]
        before = untouched[pooling]["scores"]["avg_all"]
        mean, std = mean_std(values)
        if len(values) < 2:
            verdict = "one seed: spread unknown"
        else:
            larger = mean - before > std
            verdict = f"{'**larger than**' if larger else 'not larger than'} its seed spread, {std:.2f}"
        out.append(
            f"- `{pooling}`: {before:.2f} untouched → {mean:.2f} trained ({mean - before:+.2f}; {verdict})."
        )
    if not out:
        return []
    return [
        "Budget check, Avg. (all): each pooling trained against the same pooling untouched:",
        "",
        *out,
        *plain_simcse_bar(cells, untouched),
        "",
    ]


def plain_simcse_bar(
    cells: dict[str, list[dict[str, Any]]], untouched: dict[str, dict[str, Any]]
) -> list[str]:
    """SimCSE's own bar: plain SimCSE, trained `cls`, above every untouched row, the best of
    them included, as unsup-SimCSE-BERT is above "BERT (first-last avg.)". Stated whichever way it falls,
    so a budget that misses it says so beside the cells that ran under it."""
    if "cls" not in cells:
        return []
    best = max(untouched, key=lambda p: untouched[p]["scores"]["avg_all"])
    before = untouched[best]["scores"]["avg_all"]
    mean, std = mean_std([c["scores"]["avg_all"] for c in cells["cls"]])
    if mean - before > std:
        verdict = "above it by more than its seed spread: the bar is met"
    else:
        verdict = "**not above it by more than its seed spread: SimCSE's bar is not met at this budget**"
    return [
        f"- Plain SimCSE (`cls`) against the best untouched row (`{best}`, {before:.2f}): "
        f"{mean:.2f} trained ({mean - before:+.2f}; {verdict})."
    ]


def variant_legend(cells: dict[str, list[dict[str, Any]]], regime: str, rows: Rows) -> list[str]:
    """What each added row adds to the grid's budget, in the rows file's groups (`Rows.legend_groups`)."""
    lines = []
    for group in rows.legend_groups():
        present = [row for row in cells if row in group.rows]
        if not present:
            continue
        seeds = ", ".join(f"`{row}` {len(cells[row])}/{len(rows.seeds)}" for row in present)
        lines += [f"{group.title} (seeds run: {seeds}), `{rows.pooling_of(present[0])}` plus:", ""]
        for row in present:
            lines.append(f"- `{row}`: " + ", ".join(f"`{o}`" for o in rows.overrides(row, regime)))
        lines += [""]
    return lines


def below_step_zero(cells: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Runs whose kept checkpoint scores below the untrained model on STS-B dev: say so, don't hide it.

    SimCSE's model selection (and ours) keeps the best *trained* checkpoint; the step-0 model is
    evaluated as a reference but never kept, so a run that training only hurt keeps its least bad step.
    """
    worse = [
        f"`{c['pooler']}` seed {c['seed']} ({c['train']['dev_spearman_before'] * 100:.2f} → "
        f"{c['train']['best_dev_spearman'] * 100:.2f})"
        for runs in cells.values()
        for c in runs
        if c["train"]["best_dev_spearman"] < c["train"]["dev_spearman_before"]
    ]
    if not worse:
        return []
    return [
        "Runs where every trained checkpoint scored below the untrained model on STS-B dev (step 0 is",
        "evaluated but, as in SimCSE, never kept, so these keep their least bad trained step): "
        + ", ".join(worse)
        + ".",
        "",
    ]


def against_untouched(cells: dict[str, list[dict[str, Any]]], reference: dict[str, Any] | None) -> list[str]:
    """What training did to the already sentence-trained backbone: each pooler's mean against it."""
    if not reference:
        return []
    out = []
    for key, label in (("avg_all", "Avg. (all)"), ("scifact_ndcg@10", "SciFact nDCG@10")):
        base = reference["scores"][key]
        gaps = {p: statistics.fmean(c["scores"][key] for c in runs) - base for p, runs in cells.items()}
        listed = ", ".join(f"`{p}` {gap:+.2f}" for p, gap in sorted(gaps.items(), key=lambda kv: -kv[1]))
        out.append(f"- {label} against the untouched backbone ({base:.2f}): {listed}.")
    return [
        "What training did, pooler mean minus the untouched backbone (no training, its own mean pooling):",
        "",
        *out,
        "",
    ]


def crossed_note(crossed: dict[str, list[str]]) -> list[str]:
    """The footnote under a table of comparisons: each pair of rows whose cells at one seed were made on
    different setups, and how; their words carry CROSSED."""
    if not crossed:
        return []
    listed = "; ".join(f"{pair}: {', '.join(reasons)}" for pair, reasons in crossed.items())
    return [
        f"{CROSSED} Cells of the two rows made on different setups at the same seed (their recorded "
        f"`settings`): {listed}. The difference may hold some of the setups' own."
    ]


def verdicts(cells: dict[str, list[dict[str, Any]]], rows: Rows) -> list[str]:
    """`lwap` against every row that is not `lwap` with settings of its own, paired by seed, in the four
    words; the table that decides these comparisons, with Holm's p over its list beside the words."""
    if "lwap" not in cells:
        return ["_No `lwap` cells: no comparison._"]
    out = [
        "Differences against `lwap`, paired by seed: d = `lwap` − row at each seed (every row has each",
        "seed's data order), mean ± sd, the seeds agreeing with its sign, the 95 % t-interval of mean d and",
        "its word, as docs/COMPARE.md pre-registers. This table decides these comparisons: every",
        "other place in this report that shows one gives its word and points here. p: the paired t-test;",
        "Holm p: Holm's adjustment over this table.",
        "",
        *textwrap.wrap(f"The words: {WORDS_RULE}.", 104),
    ]
    if min((len(runs) for pooler, runs in cells.items() if pooler in rows.planned), default=0) < 3:
        out += ["", "(Fewer than three seeds per pooler so far: the intervals are wide and these words"]
        out.append("provisional.)")
    out += [
        "",
        "| metric | `lwap` − | d ± sd | seeds | 95 % interval | word | p | Holm p |",
        "|" + " --- |" * 8,
    ]
    others = [r for r in cells if rows.pooling_of(r) != "lwap"]
    crossed = {f"`lwap` − `{row}`": crossing(cells["lwap"], cells[row]) for row in others}
    found = [
        (key, label, row, paired(cells["lwap"], cells[row], key)) for key, label in HEADLINE for row in others
    ]
    adjusted = holm([d.p if d else None for *_, d in found])
    for (key, label, row, d), q in zip(found, adjusted, strict=True):
        if d is None:
            out.append(f"| {label} | `{row}` | – | 0 | – | no seed in common | – | – |")
            continue
        difference = f"| {label} | `{row}` | {d.delta:+.2f} ± {d.sd:.2f} | {d.agree}/{d.n}"
        if d.interval is None:
            out.append(f"{difference} | – | one seed | – | – |")
            continue
        said = word_text(verdict(d, key), CROSSED if crossed[f"`lwap` − `{row}`"] else "")
        out.append(f"{difference} | {interval_text(d.interval)} | {said} | {p_text(d.p)} | {p_text(q)} |")
    note = crossed_note({pair: reasons for pair, reasons in crossed.items() if reasons})
    return [*out, *(["", *note] if note else [])]
