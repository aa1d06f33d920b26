"""Issue 37's decomposition of `lwap`'s gap to the best mean-based pooler, and its verdict, as
docs/COMPARE.md pre-registered them ("Pre-registered: why LWAP trails mean pooling"): each component
is a signed sum of variant rows, on Avg. (all), Avg. (wmean) and SciFact nDCG@10, means over seeds. Read
in the four words of issue 66: each term is a contrast of rows that share each seed's data order, so it
is taken seed by seed and read from its 95 % t-interval (`lwap.compare.paired`), where the
pre-registration read it against the rows' standard deviations summed."""

from __future__ import annotations

import statistics
from typing import Any

from benchmarks.grid.study import MEAN_BASED, PLANNED_SEEDS
from lwap.compare.paired import Paired, holm, p_text, paired_values, shown, verdict
from lwap.compare.verdicts import HEADLINE

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


FOUND_BELOW = ("below", "below by more than the margin")


def scores(cells: Cells, row: str, key: str) -> list[float]:
    return [c["scores"][key] for c in cells[row]]


def best_mean_based(cells: Cells) -> str | None:
    """The best of `mean`, `first_last_avg`, `last2_avg` on Avg. (all), means over seeds."""
    present = [p for p in MEAN_BASED if p in cells]
    return max(present, key=lambda p: statistics.fmean(scores(cells, p, "avg_all")), default=None)


def complete(cells: Cells, row: str) -> bool:
    return row in cells and len(cells[row]) >= len(PLANNED_SEEDS)


def term(cells: Cells, parts: tuple[tuple[int, str], ...], key: str) -> Paired | None:
    """A signed sum of rows taken seed by seed (the seeds every row has) and read as a paired difference:
    its mean is the signed sum of the rows' means over those seeds."""
    by_row = [(sign, {c["seed"]: c["scores"][key] for c in cells[row]}) for sign, row in parts]
    seeds = sorted(set.intersection(*(set(values) for _, values in by_row)))
    plus = [sum(sign * values[s] for sign, values in by_row if sign > 0) for s in seeds]
    minus = [sum(-sign * values[s] for sign, values in by_row if sign < 0) for s in seeds]
    return paired_values(plus, minus)


def said(d: Paired | None, key: str, adjusted: float | None = None) -> str:
    """A term as the table shows it: its mean, interval and word, and Holm's p where the table decides it."""
    return shown(d, key) + ("" if adjusted is None else f" (Holm p {p_text(adjusted)})")


def share(value: Paired | None, gap: Paired | None, key: str) -> str:
    """A component's share of a gap G whose word is below (its interval under 0): the pre-registration said
    "where G < 0", narrowed after the first cell to a gap beyond its own seed spread (a share of a gap
    within the spread, e.g. -2534% of -0.38 ± 0.39 on the proxy, means nothing), read now in the four
    words."""
    if value is None or gap is None or verdict(gap, key) not in FOUND_BELOW:
        return ""
    return f"; {value.delta / -gap.delta:+.0%} of the gap"


def decomposition(cells: Cells) -> list[str]:
    """The table: the gap G = `lwap` − best mean-based pooler (decided in the grid's differences against
    `lwap`), then each component that has its rows (decided here: Holm over them)."""
    best = best_mean_based(cells)
    if best is None or "lwap" not in cells or not any(row in cells for row in LETTERS.values()):
        return []
    gaps = {key: term(cells, ((1, "lwap"), (-1, best)), key) for key, _ in HEADLINE}
    present = [(name, parts) for name, parts in COMPONENTS if all(row in cells for _, row in parts)]
    found = {(name, key): term(cells, parts, key) for name, parts in present for key, _ in HEADLINE}
    adjusted = dict(zip(found, holm([d.p if d else None for d in found.values()]), strict=True))
    head = "| term | " + " | ".join(label for _, label in HEADLINE) + " |"
    lines = [
        f"Decomposition of `lwap`'s gap to the best mean-based pooler (`{best}` on Avg. (all)), as "
        "pre-registered in docs/COMPARE.md (A = `lwap-attn`, Q = `lwap-meanq`, AQ = `lwap-meanq-attn`, "
        "AL = `lwap-latent-attn`), in the four words (issue 66): each term taken seed by seed, its mean, "
        "95 % interval and word; the gap's words are its grid's table's (the differences against `lwap` "
        "above), the components' are decided here (Holm's p over them beside); a share is the component "
        'over −G, given only where G is below (the pre-registered "where G < 0" narrowed after the first '
        "cell, since a share of a gap that may be none means nothing):",
        "",
        head,
        "|" + " --- |" * (len(HEADLINE) + 1),
        f"| gap G = `lwap` − `{best}` | " + " | ".join(said(gaps[k], k) for k, _ in HEADLINE) + " |",
    ]
    for name, parts in COMPONENTS:
        if (name, parts) not in present:
            lines.append(f"| {name} | " + " | ".join("not run yet" for _ in HEADLINE) + " |")
            continue
        values = [
            said(found[name, key], key, adjusted[name, key]) + share(found[name, key], gaps[key], key)
            for key, _ in HEADLINE
        ]
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


def wins(sts: Paired | None, sci: Paired | None) -> bool:
    """The pre-registered rule in the four words: Avg. (all) above, SciFact nDCG@10 not below."""
    return verdict(sts, "avg_all") == "above" and verdict(sci, "scifact_ndcg@10") not in FOUND_BELOW


def component_verdict(cells: Cells, best: str) -> list[str]:
    """The pre-registered verdict, read in the four words: a variant wins if its Avg. (all) is above the
    best mean-based pooler's and its SciFact nDCG@10 not below it (pre-registered against the seed
    spread). Undecided while a variant (or the pooler) lacks seeds; when none wins, the largest component
    instead. This list decides its comparisons (Holm's p over it beside)."""
    ready, pending = [], []
    for row in [r for r in LETTERS.values() if r in cells]:
        if not complete(cells, row) or not complete(cells, best):
            pending.append(f"`{row}` ({len(cells[row])} of {len(PLANNED_SEEDS)} seeds)")
            continue
        ready.append(row)
    found = {
        (row, key): term(cells, ((1, row), (-1, best)), key)
        for row in ready
        for key in ("avg_all", "scifact_ndcg@10")
    }
    adjusted = dict(zip(found, holm([d.p if d else None for d in found.values()]), strict=True))
    out, winners = [], []
    for row in ready:
        sts, sci = found[row, "avg_all"], found[row, "scifact_ndcg@10"]
        won = wins(sts, sci)
        winners += [row] if won else []
        out.append(
            f"- `{row}` − `{best}`: Avg. (all) {said(sts, 'avg_all', adjusted[row, 'avg_all'])}, SciFact "
            f"{said(sci, 'scifact_ndcg@10', adjusted[row, 'scifact_ndcg@10'])}: "
            f"{'**wins**' if won else 'does not win'}."
        )
    lines = ["Verdict (pre-registered: Avg. (all) above the best mean-based pooler by more than the seed "
             "spread, SciFact not below it by more than the spread; read in the four words: Avg. (all) "
             "above, SciFact not below; Holm's p over this list beside):", "", *out]  # fmt: skip
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
    found = [(name, d) for name, d in found if d is not None]
    if not found:
        return ""
    name, d = max(found, key=lambda f: abs(f[1].delta))
    return f"The largest component on Avg. (all) is the {name.split(' = ')[0]} ({shown(d, 'avg_all')})."


def against_the_paper(cells: Cells, best: str, winners: list[str]) -> list[str]:
    """Context for a win, added after the first results (the rule is unchanged): whether the paper's `lwap`
    passes the same rule (its words are its grid's table's), and how each winner stands against `lwap`; a
    win that `lwap` shares is not the variant's doing."""
    if not complete(cells, "lwap"):
        return []
    sts, sci = (term(cells, ((1, "lwap"), (-1, best)), key) for key in ("avg_all", "scifact_ndcg@10"))
    passes = "passes the same rule" if wins(sts, sci) else "does not pass the rule"
    lines = [
        "",
        "Context, added after the results (not part of the rule): the paper's `lwap` − "
        f"`{best}`: Avg. (all) {shown(sts, 'avg_all')}, SciFact {shown(sci, 'scifact_ndcg@10')} (decided in "
        f"the differences against `lwap` above): it {passes}.",
        "",
    ]
    for row in winners:
        value, sci_value = (
            term(cells, ((1, row), (-1, "lwap")), key) for key in ("avg_all", "scifact_ndcg@10")
        )
        scifact = shown(sci_value, "scifact_ndcg@10")
        lines.append(f"- `{row}` − `lwap`: Avg. (all) {shown(value, 'avg_all')}, SciFact {scifact}.")
    return lines
