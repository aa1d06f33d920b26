"""Issue 37's decomposition of `lwap`'s gap to the best mean-based pooler, and its verdict, exactly as
docs/COMPARE.md pre-registered them ("Pre-registered: why LWAP trails mean pooling"): each component
is one variant row minus another, on Avg. (all), Avg. (wmean) and SciFact nDCG@10, means over seeds."""

from __future__ import annotations

import statistics
from typing import Any

from benchmarks.grid.study import MEAN_BASED, PLANNED_SEEDS
from lwap.compare.verdicts import HEADLINE, gap, mean_std

Cells = dict[str, list[dict[str, Any]]]
# The pre-registered letters: A = output without the last [CLS], Q = mean queries, AQ = both, AL = latent
# queries with the attention-only output.
LETTERS = {"A": "lwap-attn", "Q": "lwap-meanq", "AQ": "lwap-meanq-attn", "AL": "lwap-latent-attn"}
# component name, then the rows added and subtracted (a signed sum of row means)
COMPONENTS: tuple[tuple[str, tuple[tuple[int, str], ...]], ...] = (
    ("output component = A − `lwap`", ((1, "lwap-attn"), (-1, "lwap"))),
    ("query component = Q − `lwap`", ((1, "lwap-meanq"), (-1, "lwap"))),
    ("interaction = AQ − A − Q + `lwap`",
     ((1, "lwap-meanq-attn"), (-1, "lwap-attn"), (-1, "lwap-meanq"), (1, "lwap"))),
    ("learned against mean queries = AL − AQ", ((1, "lwap-latent-attn"), (-1, "lwap-meanq-attn"))),
)  # fmt: skip


def scores(cells: Cells, row: str, key: str) -> list[float]:
    return [c["scores"][key] for c in cells[row]]


def best_mean_based(cells: Cells) -> str | None:
    """The best of `mean`, `first_last_avg`, `last2_avg` on Avg. (all), means over seeds."""
    present = [p for p in MEAN_BASED if p in cells]
    return max(present, key=lambda p: statistics.fmean(scores(cells, p, "avg_all")), default=None)


def complete(cells: Cells, row: str) -> bool:
    return row in cells and len(cells[row]) >= len(PLANNED_SEEDS)


def term(cells: Cells, parts: tuple[tuple[int, str], ...], key: str) -> tuple[float, float, float | None]:
    """A signed sum of row means, its seed spread (the rows' standard deviations summed, as everywhere in
    RESULTS.md) and Welch's p where it is a difference of two rows (None otherwise)."""
    stats = [(sign, *mean_std(scores(cells, row, key))) for sign, row in parts]
    value = sum(sign * m for sign, m, _ in stats)
    spread = sum(s for _, _, s in stats)
    p = None
    if len(parts) == 2:
        p = gap(scores(cells, parts[0][1], key), scores(cells, parts[1][1], key)).p
    return value, spread, p


def shown(value: float, spread: float, p: float | None, gap_term: tuple[float, float, float | None]) -> str:
    """A term with its spread and p, and its share of a gap G < 0 where G is beyond its own seed spread:
    the pre-registration said "where G < 0"; a share of a gap within the spread (e.g. -2534% of -0.38 ±
    0.39 on the proxy) means nothing, so those are left out (added after the first cell, said in the page)."""
    text = f"{value:+.2f} ± {spread:.2f}" + (f" (p = {p:.3f})" if p is not None else "")
    whole, whole_spread, _ = gap_term
    return text + (f"; {value / -whole:+.0%} of the gap" if whole < -whole_spread else "")


def decomposition(cells: Cells) -> list[str]:
    """The table: the gap G = `lwap` − best mean-based pooler, then each component that has its rows."""
    best = best_mean_based(cells)
    if best is None or "lwap" not in cells or not any(row in cells for row in LETTERS.values()):
        return []
    gaps = {key: term(cells, ((1, "lwap"), (-1, best)), key) for key, _ in HEADLINE}
    head = "| term | " + " | ".join(label for _, label in HEADLINE) + " |"
    lines = [
        f"Decomposition of `lwap`'s gap to the best mean-based pooler (`{best}` on Avg. (all)), as "
        "pre-registered in docs/COMPARE.md (A = `lwap-attn`, Q = `lwap-meanq`, AQ = `lwap-meanq-attn`, "
        "AL = `lwap-latent-attn`; means over seeds ± the rows' standard deviations summed; Welch's p for "
        "the differences of two rows; a share is the component over −G, given only where G < 0 by more than "
        'its seed spread: the pre-registered "where G < 0" narrowed after the first cell, since a share of '
        "a gap within the spread means nothing):",
        "",
        head,
        "|" + " --- |" * (len(HEADLINE) + 1),
        f"| gap G = `lwap` − `{best}` | "
        + " | ".join(shown(*gaps[k], (0.0, 0.0, None)) for k, _ in HEADLINE)
        + " |",
    ]
    for name, parts in COMPONENTS:
        if not all(row in cells for _, row in parts):
            lines.append(f"| {name} | " + " | ".join("not run yet" for _ in HEADLINE) + " |")
            continue
        values = [shown(*term(cells, parts, key), gaps[key]) for key, _ in HEADLINE]
        lines.append(f"| {name} | " + " | ".join(values) + " |")
    return [*lines, "", *attention_profiles(cells), *component_verdict(cells, best)]


def attention_profiles(cells: Cells) -> list[str]:
    """Each variant's attention profile: mean attention per layer (embeddings first), mean over seeds."""
    rows = [row for row in ("lwap", *LETTERS.values()) if row in cells]
    lines = []
    for row in rows:
        profiles = [c["layer_attention"]["mean_attention"] for c in cells[row] if c.get("layer_attention")]
        if profiles:
            layers = [statistics.fmean(column) for column in zip(*profiles, strict=True)]
            lines.append(f"- `{row}`: " + " ".join(f"{a:.3f}" for a in layers))
    if not lines:
        return []
    return ["Attention profiles (mean attention per layer, the embeddings first; mean over seeds):", "",
            *lines, ""]  # fmt: skip


def component_verdict(cells: Cells, best: str) -> list[str]:
    """The pre-registered verdict: a variant wins if its Avg. (all) is above the best mean-based pooler's by
    more than the seed spread and its SciFact nDCG@10 is not below that pooler's by more than the spread.
    Undecided while a variant (or the pooler) lacks seeds; when none wins, the largest component instead."""
    out, winners, pending = [], [], []
    for row in [r for r in LETTERS.values() if r in cells]:
        if not complete(cells, row) or not complete(cells, best):
            pending.append(f"`{row}` ({len(cells[row])} of {len(PLANNED_SEEDS)} seeds)")
            continue
        sts, sts_spread, _ = term(cells, ((1, row), (-1, best)), "avg_all")
        sci, sci_spread, _ = term(cells, ((1, row), (-1, best)), "scifact_ndcg@10")
        wins = sts > sts_spread and sci >= -sci_spread
        winners += [row] if wins else []
        out.append(
            f"- `{row}` − `{best}`: Avg. (all) {sts:+.2f} (spread {sts_spread:.2f}), SciFact {sci:+.2f} "
            f"(spread {sci_spread:.2f}): {'**wins**' if wins else 'does not win'}."
        )
    lines = ["Verdict (pre-registered: Avg. (all) above the best mean-based pooler by more than the seed "
             "spread, SciFact not below it by more than the spread):", "", *out]  # fmt: skip
    if pending:
        lines.append(f"- Not decided yet (seeds missing): {', '.join(pending)}.")
    if winners:
        lines += ["", "**A variant wins here**: " + ", ".join(f"`{w}`" for w in winners) + ".",
                  *against_the_paper(cells, best, winners)]  # fmt: skip
    elif out and not pending:
        lines += ["", f"**No variant wins here.** {largest_component(cells)}".rstrip()]
    return [*lines, ""]


def largest_component(cells: Cells) -> str:
    """What the decomposition shows instead of a winner: the component that moves Avg. (all) the most."""
    found = [(name, term(cells, parts, "avg_all")) for name, parts in COMPONENTS
             if all(row in cells for _, row in parts)]  # fmt: skip
    if not found:
        return ""
    name, (value, spread, _) = max(found, key=lambda f: abs(f[1][0]))
    size = "larger" if abs(value) > spread else "not larger"
    return (
        f"The largest component on Avg. (all) is the {name.split(' = ')[0]} ({value:+.2f}, {size} than "
        f"its seed spread {spread:.2f})."
    )


def against_the_paper(cells: Cells, best: str, winners: list[str]) -> list[str]:
    """Context for a win, added after the first results (the rule is unchanged): whether the paper's `lwap`
    passes the same rule, and whether each winner differs from `lwap` beyond the seed spread; a win that
    `lwap` shares is not the variant's doing."""
    if not complete(cells, "lwap"):
        return []
    sts, sts_spread, _ = term(cells, ((1, "lwap"), (-1, best)), "avg_all")
    sci, sci_spread, _ = term(cells, ((1, "lwap"), (-1, best)), "scifact_ndcg@10")
    passes = sts > sts_spread and sci >= -sci_spread
    lines = [
        "",
        "Context, added after the results (not part of the rule): the paper's `lwap` − "
        f"`{best}`: Avg. (all) {sts:+.2f} (spread {sts_spread:.2f}), SciFact {sci:+.2f} (spread "
        f"{sci_spread:.2f}): it {'passes the same rule' if passes else 'does not pass the rule'}.",
        "",
    ]
    for row in winners:
        value, spread, p = term(cells, ((1, row), (-1, "lwap")), "avg_all")
        sci_value, sci_spread_w, sci_p = term(cells, ((1, row), (-1, "lwap")), "scifact_ndcg@10")
        judged = "beyond" if abs(value) > spread else "within"
        lines.append(
            f"- `{row}` − `lwap`: Avg. (all) {value:+.2f} ({judged} the spread {spread:.2f}; p = {p:.3f}), "
            f"SciFact {sci_value:+.2f} (spread {sci_spread_w:.2f}; p = {sci_p:.3f})."
        )
    return lines
