"""Do the levels' scales matter? Issue 50's reading of `lwap-levelnorm` (every level LayerNorm-ed per token,
without parameters, before LWAP's head) against `lwap`, as docs/COMPARE.md pre-registers it: within the
seed spread and not significant (paired by seed, Holm over the grids × Avg. (all) and SciFact nDCG@10)
everywhere → the scales do not matter for the verdicts, said so; otherwise the overview's verdicts are
read a second time with `lwap-levelnorm` as LWAP, both readings reported."""

from __future__ import annotations

from benchmarks.grid.report_overview import TABLES, Grids, rows_against, table, verdict_cell
from benchmarks.grid.study import PLANNED_SEEDS, SCALE_ROW
from lwap.compare.grid import REGIME_WORDS, backbone_name
from lwap.compare.paired import holm, paired

KEYS = (("avg_all", "Avg. (all)"), ("scifact_ndcg@10", "SciFact nDCG@10"))  # the pre-registered two


def scales_section(every_grid: Grids) -> list[str]:
    """The table of `lwap-levelnorm` − `lwap`, the reading in words, and the second reading if needed."""
    grids: Grids = [(b, r, c) for b, r, c in every_grid if "lwap" in c and SCALE_ROW in c]
    if not grids:
        return []
    found_pairs = [paired(c[SCALE_ROW], c["lwap"], key) for _, _, c in grids for key, _ in KEYS]
    adjusted = iter(holm([d.p if d else None for d in found_pairs]))
    rows, moved, unread, seeds = [], [], [], []
    for backbone, regime, cells in grids:
        readings = [
            (label, verdict_cell(cells, key, "lwap", next(adjusted), SCALE_ROW)) for key, label in KEYS
        ]
        n = min(len(cells[SCALE_ROW]), len(cells["lwap"]))
        seeds.append(n)
        where = f"{backbone_name(backbone)} {REGIME_WORDS[regime]}"
        moved += [f"{where} {label}" for label, r in readings if {r.spread, r.paired} - {None, "level"}]
        unread += [f"{where} {label}" for label, r in readings if r.spread is None]
        texts = " | ".join(r.text for _, r in readings)
        rows.append(f"| {backbone_name(backbone)} | {REGIME_WORDS[regime]} | {n} | {texts} |")
    provisional = min(seeds) < len(PLANNED_SEEDS)
    lines = [
        "## Do the levels' scales matter? `lwap-levelnorm` against `lwap`",
        "",
        "`lwap-levelnorm` − `lwap` (× 100): the same head with every level it reads LayerNorm-ed per token",
        "(no parameters) first, so that no level's scale (the embedding output's, on a pre-LayerNorm",
        "backbone) dominates the attention. Read as pre-registered in [COMPARE.md](COMPARE.md) (issue 50):",
        "the seed-spread rule, then paired by seed with Holm over this table (grids × the two metrics).",
        'Their attention profiles are side by side in "What LWAP attends to" below.',
        "",
        "| backbone | regime | seeds | " + " | ".join(label for _, label in KEYS) + " |",
        "|" + " --- |" * (3 + len(KEYS)),
        *rows,
        "",
    ]
    status = f" _Provisional: {min(seeds)} of {len(PLANNED_SEEDS)} seeds in a grid._" if provisional else ""
    if unread and not moved:
        lines += [f"One seed on {', '.join(unread)}: nothing to read yet.", ""]
        return lines
    if not moved:
        lines += [
            "Within the seed spread and not significant on every grid and metric: the levels' scales do not",
            f"matter for the verdicts above.{status}",
            "",
        ]
        return lines
    lines += [
        f"Not level on {', '.join(moved)}: the scales matter there, so the verdicts are read a second",
        f"time with `{SCALE_ROW}` as LWAP (below); the readings above stay beside them.{status}",
        "",
    ]
    for title, _, pick in TABLES:
        second, _ = rows_against(grids, pick, base=SCALE_ROW)
        heading = f"### Read again with `{SCALE_ROW}` as LWAP: {title.removeprefix('## ')}"
        lines += table(heading, [f"As the table of that name above, `{SCALE_ROW}` in place of `lwap`."],
                       second, base=SCALE_ROW)  # fmt: skip
    return lines
