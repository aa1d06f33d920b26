"""Do the levels' scales matter? Issue 50's reading of `lwap-levelnorm` (every level LayerNorm-ed per token,
without parameters, before LWAP's head) against `lwap`, as docs/COMPARE.md pre-registers it, in the four
words of issue 66 (paired by seed, 95 % intervals, Holm over this table beside): equivalent on every grid
and metric → the scales do not matter for the verdicts, said so; otherwise (a difference, or undecided at
this n) the overview's verdicts are read a second time with `lwap-levelnorm` as LWAP, both readings
reported. The pre-registered "within the seed spread and not significant everywhere" said no difference
by the absence of one; "equivalent" is what says it now."""

from __future__ import annotations

from benchmarks.grid.report_overview import TABLES, Grids, rows_against, table
from benchmarks.grid.study import PLANNED_SEEDS, SCALE_ROW
from lwap.compare.grid import REGIME_WORDS, backbone_name
from lwap.compare.paired import holm, p_text, paired, shown, verdict
from lwap.compare.settings import crossing
from lwap.compare.verdicts import CROSSED, crossed_note

KEYS = (("avg_all", "Avg. (all)"), ("scifact_ndcg@10", "SciFact nDCG@10"))  # the pre-registered two


def scales_section(every_grid: Grids) -> list[str]:
    """The table of `lwap-levelnorm` − `lwap` (it decides these comparisons), the reading in words, and
    the second reading if needed."""
    grids: Grids = [(b, r, c) for b, r, c in every_grid if "lwap" in c and SCALE_ROW in c]
    if not grids:
        return []
    found = [paired(c[SCALE_ROW], c["lwap"], key) for _, _, c in grids for key, _ in KEYS]
    adjusted = iter(holm([d.p if d else None for d in found]))
    found_pairs = iter(found)
    rows, words, seeds, crossed = [], {}, [], {}
    for backbone, regime, cells in grids:
        where = f"{backbone_name(backbone)} {REGIME_WORDS[regime]}"
        reasons = crossing(cells[SCALE_ROW], cells["lwap"])
        if reasons:
            crossed[f"{where} `{SCALE_ROW}` − `lwap`"] = reasons
        texts = []
        for key, label in KEYS:
            d, q = next(found_pairs), next(adjusted)
            words[f"{where} {label}"] = verdict(d, key)
            texts.append(f"{shown(d, key, CROSSED if reasons else '')} (Holm p {p_text(q)})")
        seeds.append(min(len(cells[SCALE_ROW]), len(cells["lwap"])))
        rows.append(
            f"| {backbone_name(backbone)} | {REGIME_WORDS[regime]} | {seeds[-1]} | {' | '.join(texts)} |"
        )
    note = crossed_note(crossed)
    lines = [
        "## Do the levels' scales matter? `lwap-levelnorm` against `lwap`",
        "",
        "`lwap-levelnorm` − `lwap` (× 100): the same head with every level it reads LayerNorm-ed per token",
        "(no parameters) first, so that no level's scale (the embedding output's, on a pre-LayerNorm",
        "backbone) dominates the attention. Read as pre-registered in [COMPARE.md](COMPARE.md) (issue 50),",
        "in the four words (issue 66): paired by seed, the 95 % interval and its word; this table decides",
        "these comparisons (Holm's p over it beside). Equivalent everywhere: the scales do not matter;",
        "otherwise the verdicts are read a second time with `lwap-levelnorm` as LWAP. Their attention",
        'profiles are side by side in "What LWAP attends to" below.',
        "",
        "| backbone | regime | seeds | " + " | ".join(label for _, label in KEYS) + " |",
        "|" + " --- |" * (3 + len(KEYS)),
        *rows,
        "",
        *([*note, ""] if note else []),
    ]
    status = (
        f" _Provisional: {min(seeds)} of {len(PLANNED_SEEDS)} seeds in a grid._"
        if min(seeds) < len(PLANNED_SEEDS)
        else ""
    )
    unread = [where for where, word in words.items() if word is None]
    if unread and all(word is None for word in words.values()):
        return [*lines, f"One seed on {', '.join(unread)}: nothing to read yet.", ""]
    if all(word == "equivalent" for word in words.values()):
        return [
            *lines,
            "Equivalent on every grid and metric: the levels' scales do not matter for the verdicts",
            f"above.{status}",
            "",
        ]
    differ = [where for where, word in words.items() if word not in (None, "equivalent", "undecided")]
    open_ = [where for where, word in words.items() if word == "undecided"]
    said = [f"a difference on {', '.join(differ)}: the scales matter there"] if differ else []
    said += [f"undecided on {', '.join(open_)}: not settled at this n"] if open_ else []
    lines += [
        f"{sentence('; '.join(said))}. So the verdicts are read a second time with `{SCALE_ROW}` as LWAP",
        f"(below; each table decides its own comparisons, Holm's p beside); the readings above stay.{status}",
        "",
    ]
    for title, _, _, pick in TABLES:
        heading = f"### Read again with `{SCALE_ROW}` as LWAP: {title.removeprefix('## ')}"
        words_under = [
            f"As the table of that name above, `{SCALE_ROW}` in place of `lwap`; Holm over this table."
        ]
        lines += table(
            heading, words_under, rows_against(grids, pick, None, base=SCALE_ROW), SCALE_ROW, False
        )
    return lines


def sentence(text: str) -> str:
    """`text` with its first letter capital (str.capitalize would lower the rest: `Avg.`, `SciFact`)."""
    return text[:1].upper() + text[1:]
