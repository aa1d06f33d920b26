"""The report's judgements, read off a grid's cells: rankings, gaps against the seed spread (with Welch's
t-test), what training did against the untouched backbone, what each added row adds."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any, NamedTuple

from lwap.compare.paired import holm, p_text, paired, word
from lwap.compare.rows import Rows

# The three figures each verdict reads: SimCSE's STS aggregation, the LWAP paper's, and retrieval.
HEADLINE = (("avg_all", "Avg. (all)"), ("avg_wmean", "Avg. (wmean)"), ("scifact_ndcg@10", "SciFact nDCG@10"))


def mean_std(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def standing(cells: dict[str, list[dict[str, Any]]], rows: Rows, baseline: str = "cls") -> list[str]:
    """The regime in short: where the paper's `lwap` ranks among the planned rows (by mean over seeds) on
    Avg. (all), Avg. (wmean) and SciFact, and its gap to `baseline` (the paper's: `cls`) on each of the
    three (STS under both aggregations, and retrieval), judged against the seed spread."""
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
        for key, label in HEADLINE:
            base, other = ([c["scores"][key] for c in cells[p]] for p in ("lwap", baseline))
            gap = difference("lwap", baseline, base, other)
            out.append(f"- Against `{baseline}` (the paper's baseline), {label}: {gap}.")
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


class Gap(NamedTuple):
    """`a` − `b` over seeds: the difference of means, whether it exceeds the two seed sds summed (None with
    one seed: no spread to compare with), and Welch's p (None likewise)."""

    delta: float
    larger: bool | None
    p: float | None


def gap(base: list[float], other: list[float]) -> Gap:
    from scipy.stats import ttest_ind

    (m1, s1), (m2, s2) = mean_std(base), mean_std(other)
    if min(len(base), len(other)) < 2:
        return Gap(m1 - m2, None, None)
    return Gap(m1 - m2, abs(m1 - m2) > s1 + s2, float(ttest_ind(base, other, equal_var=False).pvalue))


def difference(a: str, b: str, base: list[float], other: list[float]) -> str:
    """`a` − `b` with its verdict against the seed spread (and Welch's p) when both have ≥ 2 seeds."""
    g = gap(base, other)
    if g.larger is None:
        return f"`{a}` − `{b}` = {g.delta:+.2f} (one seed: spread unknown)"
    verdict = "**larger than the seed spread**" if g.larger else "within the seed spread"
    return f"`{a}` − `{b}` = {g.delta:+.2f} ({verdict}; p = {g.p:.3f})"


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


def spread_word(g: Gap) -> str:
    """The seed-spread rule's verdict: above or below where |Δ| exceeds the two sds summed."""
    if not g.larger:
        return "level"
    return "above" if g.delta > 0 else "below"


def comparisons(cells: dict[str, list[dict[str, Any]]], rows: list[str], keys: Sequence[tuple[str, str]]):
    """(label, row, the seed-spread gap, the paired difference, its Holm-adjusted p) of `lwap` against each
    of `rows` on each of `keys`: one family, so Holm runs over all of them together."""
    found = []
    for key, label in keys:
        base = [c["scores"][key] for c in cells["lwap"]]
        for row in rows:
            g = gap(base, [c["scores"][key] for c in cells[row]])
            found.append((label, row, g, paired(cells["lwap"], cells[row], key)))
    adjusted = holm([d.p if d else None for _, _, _, d in found])
    return [(*item, q) for item, q in zip(found, adjusted, strict=True)]


def verdicts(cells: dict[str, list[dict[str, Any]]], rows: Rows) -> list[str]:
    """`lwap` against every other row that is not `lwap` with settings of its own, read two ways: the
    seed-spread rule (|Δ mean| > std(a) + std(b), with Welch's p) and paired by seed with Holm's correction
    over the whole list."""
    if "lwap" not in cells:
        return ["_No `lwap` cells: no comparison._"]
    out = [
        "Differences against `lwap` (Avg. (all), SciFact nDCG@10), read two ways. *Seed spread*:",
        "above / below where the gap between the means exceeds the two standard deviations summed",
        "(Welch's p). *Paired* (as docs/COMPARE.md pre-registers): d = `lwap` − row per seed, mean ± sd, the",
        "seeds agreeing with its sign, the paired t-test's p and Holm's adjustment over this list;",
        "above / below where the adjusted p < 0.05. *Changes*: where the two readings differ.",
    ]
    if min((len(runs) for pooler, runs in cells.items() if pooler in rows.planned), default=0) < 3:
        out.append("(Fewer than three seeds per pooler so far: the spreads are rough estimates and")
        out.append("these verdicts provisional.)")
    columns = (
        "| metric | `lwap` − | Δ | seed spread (p) | paired d ± sd | seeds | p | Holm p | paired | changes |"
    )
    out += ["", columns, "|" + " --- |" * 10]
    others = [r for r in cells if rows.pooling_of(r) != "lwap"]
    keys = (("avg_all", "Avg. (all)"), ("scifact_ndcg@10", "SciFact nDCG@10"))
    for label, row, g, d, q in comparisons(cells, others, keys):
        spread = "one seed" if g.larger is None else f"{spread_word(g)} ({p_text(g.p)})"
        if d is None:
            out.append(f"| {label} | `{row}` | {g.delta:+.2f} | {spread} | – | – | – | – | – | – |")
            continue
        pair = word(d.delta, q)
        changed = "yes" if g.larger is not None and pair != spread_word(g) else ""
        difference = f"{d.delta:+.2f} ± {d.sd:.2f} | {d.agree}/{d.n} | {p_text(d.p)} | {p_text(q)}"
        out.append(f"| {label} | `{row}` | {g.delta:+.2f} | {spread} | {difference} | {pair} | {changed} |")
    return out
