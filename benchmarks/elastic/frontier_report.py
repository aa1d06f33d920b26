"""The frontier's report: a RESULTS-style Markdown section and one figure (quality against encode time).

Read as pre-registered (docs/COMPARE.md, "the elastic frontier"): at each depth k < L of a grid, the
paired difference d_s = lwap_s − mean_s (same seed, same data order) on Avg. (all) and SciFact nDCG@10,
mean ± sd, the seeds with d of the mean's sign, the two-sided paired t-test (scipy's `ttest_rel`) and
Holm's step-down over the grid's family (every depth k < L × both metrics); above / below where the
Holm-adjusted p < 0.05, level otherwise. Primary: the depth-elastic rows; secondary 1: the ordinary rows
truncated after training; secondary 2-4 (`SECONDARY`): other pairs of rows at every depth 1..L, each pair
its own Holm family; secondary 5: the rows on the quality-speed frontier. A reading whose two rows' cells
were made on different setups at some seed, or resumed, is marked (frontier_setups).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.elastic.frontier_grid import GRIDS, POOLERS, SEEDS, SMOKE_SETS, Grid, row_name
from benchmarks.elastic.frontier_setups import CROSSED, crossed, crossed_note, setups_lines

METRICS = {"avg_all": "Avg. (all)", "scifact_ndcg@10": "SciFact nDCG@10"}
ALPHA = 0.05
Cells = dict[str, dict[int, dict[str, Any]]]  # row -> seed -> cell
PRIMARY = (row_name("lwap", "elastic"), row_name("mean", "elastic"))
ORDINARY = (row_name("lwap", "ordinary"), row_name("mean", "ordinary"))
# COMPARE.md's secondary readings 2-4, as (a, b) read a − b: learned attention against fixed averages of
# the same levels; what depth-elastic training buys and costs, per pooler; lwap's depth loss against the
# library's AdaptiveLayerLoss, for mean pooling
SECONDARY: tuple[tuple[str, str], ...] = (
    (row_name("lwap", "elastic"), row_name("all_levels_avg", "elastic")),
    (row_name("lwap", "elastic"), row_name("first_last_avg", "elastic")),
    *((row_name(pooler, "elastic"), row_name(pooler, "ordinary")) for pooler in POOLERS),
    (row_name("mean", "elastic"), row_name("mean", "adaptive")),
)


def load(results: Path, grid: Grid) -> Cells:
    from lwap.checks.files import read_json_object as read  # frontier cells, not the comparison grid's

    cells: Cells = {}
    for path in sorted((results / grid.name / grid.regime).glob("*.json")):
        cell = read(path)
        cells.setdefault(cell["row"], {})[int(cell["seed"])] = cell
    return cells


def value(cell: dict[str, Any], depth: int, metric: str, dim: int | None = None) -> float | None:
    dims = cell["depths"][str(depth)]["scores"]
    scores = dims[str(dim if dim is not None else cell["dims"][0])]
    return scores.get(metric)


def values_at(
    seeds: dict[int, dict[str, Any]], depth: int, metric: str, dim: int | None = None
) -> list[float]:
    """One row's `metric` at `depth` (and `dim`), a value per seed that has it."""
    found = [value(cell, depth, metric, dim) for cell in seeds.values()]
    return [v for v in found if v is not None]


def shown(values: list[float]) -> str:
    if not values:
        return "—"
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.fmean(values):.2f} ± {statistics.stdev(values):.2f}"


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values (scipy has none; statsmodels is not a dependency)."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [0.0] * len(p_values)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def paired(cells: Cells, rows: tuple[str, str], depth: int, metric: str) -> tuple[list[float], float | None]:
    """d_s = a − b for rows (a, b) per shared seed at `depth`, and the paired t-test's p (None under 2
    seeds)."""
    from scipy.stats import ttest_rel

    first, second = cells.get(rows[0], {}), cells.get(rows[1], {})
    seeds = sorted(set(first) & set(second))
    a = [value(first[s], depth, metric) for s in seeds]
    b = [value(second[s], depth, metric) for s in seeds]
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    diffs = [x - y for x, y in pairs]
    if len(pairs) < 2:
        return diffs, None
    if len(set(diffs)) == 1:  # no spread: the t statistic is undefined
        return diffs, 0.0 if diffs[0] != 0 else 1.0
    return diffs, float(ttest_rel([x for x, _ in pairs], [y for _, y in pairs]).pvalue)


def metrics_of(cells: Cells) -> dict[str, str]:
    """The pre-registered metrics the cells have; STS-B alone for cells scored on it alone (--smoke)."""
    found: set[str] = set()
    for seeds in cells.values():
        for cell in seeds.values():
            found |= set(cell["depths"]["1"]["scores"][str(cell["dims"][0])])
    chosen = {key: label for key, label in METRICS.items() if key in found}
    return chosen or ({"stsb": "STS-B"} if "stsb" in found else {})


@dataclass
class Reading:
    """One pre-registered comparison: a − b (`lwap` − `mean`, primary) at `depth` on `metric`, over the
    paired seeds."""

    depth: int
    metric: str
    diffs: list[float]
    p: float | None  # None under 2 seeds
    holm_p: float | None

    @property
    def mean(self) -> float:
        return statistics.fmean(self.diffs)

    @property
    def verdict(self) -> str:
        if self.holm_p is None:
            return "too few seeds"
        return ("above" if self.mean > 0 else "below") if self.holm_p < ALPHA else "level"


def readings(
    cells: Cells, grid: Grid, rows: tuple[str, str], metrics: dict[str, str], full_depth: bool = False
) -> list[Reading]:
    """Every depth k < L (k ≤ L with `full_depth`) × metric with paired seeds, Holm-adjusted over that
    family."""
    depths = grid.depths() if full_depth else grid.depths()[:-1]
    questions = [(depth, metric) for depth in depths for metric in metrics]
    found = [(depth, metric, *paired(cells, rows, depth, metric)) for depth, metric in questions]
    adjusted = iter(holm([p for *_, p in found if p is not None]))
    return [
        Reading(depth, metric, diffs, p, None if p is None else next(adjusted))
        for depth, metric, diffs, p in found
        if diffs
    ]


def verdict_table(
    cells: Cells, grid: Grid, rows: tuple[str, str], metrics: dict[str, str] | None = None
) -> list[str]:
    metrics = metrics or METRICS
    lines = [
        "| depth | metric | d per seed | mean d ± sd | seeds of its sign | p (paired t) | Holm p | verdict |",
        "| ---: | --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    reasons = crossed(cells, rows)
    mark = CROSSED if reasons else ""
    for r in readings(cells, grid, rows, metrics):
        spread = f" ± {statistics.stdev(r.diffs):.2f}" if len(r.diffs) > 1 else ""
        same = sum(1 for d in r.diffs if (d > 0) == (r.mean > 0) and d != 0)
        per_seed = ", ".join(f"{d:+.2f}" for d in r.diffs)
        start = f"| {r.depth} | {metrics[r.metric]} | {per_seed} | {r.mean:+.2f}{spread}"
        if r.p is None or r.holm_p is None:
            lines.append(f"{start} | {same}/{len(r.diffs)} | — | — | too few seeds |")
            continue
        verdict = (f"**{r.verdict}**" if r.verdict != "level" else "level") + mark
        lines.append(f"{start} | {same}/{len(r.diffs)} | {r.p:.3f} | {r.holm_p:.3f} | {verdict} |")
    note = crossed_note({f"`{rows[0]}` − `{rows[1]}`": reasons})
    return [*lines, *(["", *note[:-1]] if note else [])]


def speed_of(speed: dict[str, Any] | None, pooler: str, depth: int) -> float | None:
    """Sentences per second of `pooler` at `depth` (None where not measured)."""
    if not speed:
        return None
    entry = speed.get("poolers", {}).get(pooler, {}).get(str(depth))
    return entry["sentences_per_second"] if entry else None


def speed_spread(speed: dict[str, Any] | None, grid: Grid) -> str:
    """How far the poolers' speeds at one depth lie apart, at most: the machine's noise and the heads'
    cost, which the figure's horizontal positions carry too."""
    spreads = []
    for depth in grid.depths():
        rates = [r for r in (speed_of(speed, pooler, depth) for pooler in POOLERS) if r]
        if len(rates) > 1:
            spreads.append((max(rates) / min(rates) - 1, depth))
    if not spreads:
        return ""
    worst, depth = max(spreads)
    return (
        f" (the poolers at one depth lie up to {100 * worst:.0f} % apart, at depth {depth}: the machine's "
        "noise and the heads' own cost)"
    )


def quality_table(cells: Cells, grid: Grid, metric: str, speed: dict[str, Any] | None) -> list[str]:
    present = [row_name(p, m) for p, m in grid.rows if row_name(p, m) in cells]
    lines = [
        f"| depth | sentences/s (mean · lwap) | {' | '.join(f'`{r}`' for r in present)} |",
        "| ---: | ---: |" + " ---: |" * len(present),
    ]
    for depth in grid.depths():
        rate = [speed_of(speed, pooler, depth) for pooler in ("mean", "lwap")]
        rates = " · ".join("—" if r is None else f"{r:.0f}" for r in rate)
        values = []
        for row in present:
            values.append(shown(values_at(cells[row], depth, metric)))
        lines.append(f"| {depth} | {rates} | {' | '.join(values)} |")
    return lines


def dims_table(cells: Cells, grid: Grid, metric: str) -> list[str]:
    """`metric` of the depth-elastic lwap and mean rows at every depth and dimension."""
    rows = [r for r in (row_name("lwap", "elastic"), row_name("mean", "elastic")) if r in cells]
    header = " | ".join(f"`{r}` {d}" for r in rows for d in grid.dims)
    lines = [f"| depth | {header} |", "| ---: |" + " ---: |" * (len(rows) * len(grid.dims))]
    for depth in grid.depths():
        values = []
        for row in rows:
            for dim in grid.dims:
                values.append(shown(values_at(cells[row], depth, metric, dim)))
        lines.append(f"| {depth} | {' | '.join(values)} |")
    return lines


def grid_section(results: Path, grid: Grid, speed: dict[str, Any] | None) -> list[str]:
    cells = load(results, grid)
    count = sum(len(seeds) for seeds in cells.values())
    title = f"## {grid.name}, {'unsupervised' if grid.regime == 'unsup' else 'supervised'}"
    if not cells:
        return [title, "", "No cells yet.", ""]
    first = next(iter(next(iter(cells.values())).values()))
    smoke = SMOKE_SETS[0] in first["overrides"]
    sets = ", ".join(f"`{o}`" for o in grid.overrides("mean", "ordinary", 0, smoke)[2:])
    budget = f"`{grid.config}` with {sets}" if sets else f"`{grid.config}` as it is"
    lwap_sets = ", ".join(f"`{s}`" for s in grid.lwap_sets)
    metrics = metrics_of(cells)
    lines = [
        title,
        "",
        f"{count} cell{'s' if count != 1 else ''} of {len(grid.rows) * 3} planned (rows × seeds 0, 1, 2). "
        f"Budget: {budget}; the `-elastic` rows add `objective.depths=[1..{grid.layers}]`"
        f"{', the `lwap` rows ' + lwap_sets if lwap_sets else ''}. Evaluated at depths 1..{grid.layers} "
        f"(`lwap.truncate`): {', '.join(first['eval']['tasks'])}, {first['eval']['precision']}, max length "
        f"{first['eval']['max_seq_length']}. Encode speed: `frontier.py speed`, sentences per second"
        f"{speed_spread(speed, grid)}.",
        "",
        *setups_lines(cells),
    ]
    for metric, label in metrics.items():
        lines += [f"**{label} at each depth** (full width; mean ± sd over seeds):", ""]
        lines += [*quality_table(cells, grid, metric, speed), ""]
    for rows, what in (
        (PRIMARY, "trained depth-elastic (primary)"),
        (ORDINARY, "truncated after training"),
    ):
        lines += [f"**`lwap` − `mean` at the same depth, {what}**, paired by seed:", ""]
        lines += [*verdict_table(cells, grid, rows, metrics), ""]
        if rows == PRIMARY and set(metrics) == set(METRICS):
            answer = shallow_answer(readings(cells, grid, rows, metrics), grid)
            lines += [
                f"**The answer** (pre-registered: above on Avg. (all) at some k ≤ L/2, not below on "
                f"SciFact there): LWAP beats mean pooling at shallow depth — {answer}.",
                "",
            ]
    first_metric, label = next(iter(metrics.items()))
    lines += [
        f"**{label} at each dimension**, depth-elastic rows:",
        "",
        *dims_table(cells, grid, first_metric),
        "",
        *secondary_table(cells, grid, metrics),
        *frontier_lines(cells, grid, speed, first_metric, label),
    ]
    return lines


def secondary_table(cells: Cells, grid: Grid, metrics: dict[str, str]) -> list[str]:
    """COMPARE.md's secondary readings 2-4, a row per pair of rows and metric: mean d and Holm p at each
    depth 1..L, the verdicts (each pair its own family: depths 1..L × the metrics)."""
    pairs = [rows for rows in SECONDARY if all(row in cells for row in rows)]
    if not pairs:
        return []
    lines = [
        f"**Secondary readings 2-4**, a − b at each depth 1..{grid.layers}, paired by seed (each pair its "
        "own Holm family over the depths × the metrics):",
        "",
        "| a − b | metric | mean d at k = 1.. | Holm p at k = 1.. | verdicts |",
        "| --- | --- | --- | --- | --- |",
    ]
    reasons = {f"`{rows[0]}` − `{rows[1]}`": crossed(cells, rows) for rows in pairs}
    for rows in pairs:
        found = readings(cells, grid, rows, metrics, full_depth=True)
        mark = CROSSED if reasons[f"`{rows[0]}` − `{rows[1]}`"] else ""
        for metric, label in metrics.items():
            of_metric = [r for r in found if r.metric == metric]
            means = ", ".join(f"{r.mean:+.2f}" for r in of_metric)
            holms = ", ".join("—" if r.holm_p is None else f"{r.holm_p:.3f}" for r in of_metric)
            verdicts = verdicts_by_depth(of_metric) + mark
            lines.append(f"| `{rows[0]}` − `{rows[1]}` | {label} | {means} | {holms} | {verdicts} |")
    return [*lines, "", *crossed_note(reasons)]


def measured_points(
    cells: Cells, grid: Grid, speed: dict[str, Any] | None, metric: str
) -> dict[tuple[str, str], list[tuple[int, float, list[float]]]]:
    """Each (pooler, mode) row with cells, its (depth, sentences per second, `metric` per seed) where both
    were measured: the figure's points and the frontier's."""
    points: dict[tuple[str, str], list[tuple[int, float, list[float]]]] = {}
    for pooler, mode in grid.rows:
        row = row_name(pooler, mode)
        if row not in cells:
            continue
        points[(pooler, mode)] = []
        for depth in grid.depths():
            rate = speed_of(speed, pooler, depth)
            found = values_at(cells[row], depth, metric)
            if rate and found:
                points[(pooler, mode)].append((depth, rate, found))
    return points


def frontier_points(
    cells: Cells, grid: Grid, speed: dict[str, Any] | None, metric: str
) -> dict[str, list[int]]:
    """Secondary reading 5: the depths at which each row is on the frontier, where no other row at any
    depth is both faster (its pooler's measured speed) and better (mean over seeds)."""
    points = [
        (row_name(*row), depth, rate, statistics.fmean(values))
        for row, found in measured_points(cells, grid, speed, metric).items()
        for depth, rate, values in found
    ]
    on: dict[str, list[int]] = {}
    for row, depth, rate, quality in points:
        if not any(r > rate and q > quality for _, _, r, q in points):
            on.setdefault(row, []).append(depth)
    return on


def frontier_lines(
    cells: Cells, grid: Grid, speed: dict[str, Any] | None, metric: str, label: str
) -> list[str]:
    on = frontier_points(cells, grid, speed, metric)
    if not on:
        return []
    listed = "; ".join(f"`{row}` at {', '.join(map(str, depths))}" for row, depths in on.items())
    return [
        f"**On the frontier** ({label} against encode speed, mean over seeds; no other row at any depth both "
        f"faster and better): {listed}.",
        "",
    ]


def report_text(results: Path, speed_dir: Path, figure: str | None, grids: tuple[Grid, ...] = GRIDS) -> str:
    from lwap.checks.files import read_json_object

    lines = [
        "# The elastic frontier (issue 51)",
        "",
        "Generated by `python benchmarks/elastic/frontier.py report` from the cell files in "
        f"`{results}`; pre-registered in docs/COMPARE.md. Do not edit by hand.",
        "",
    ]
    if figure:
        lines += [f"![quality against encode time]({figure})", ""]
    for grid in grids:
        speed_file = speed_dir / f"{grid.name}.json"
        speed = read_json_object(speed_file) if speed_file.is_file() else None
        lines += grid_section(results, grid, speed)
    return "\n".join(lines).rstrip() + "\n"


def draw_figure(results: Path, speed_dir: Path, output: Path, grids: tuple[Grid, ...] = GRIDS) -> bool:
    """Avg. (all) (STS-B alone for --smoke cells) against milliseconds per 1,000 sentences, a line per row
    through its depths, a panel per grid with cells; False (nothing drawn) when none has cells and speeds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lwap.checks.files import read_json_object, save_figure_atomically

    panels = []
    for grid in grids:
        speed_file = speed_dir / f"{grid.name}.json"
        cells = load(results, grid)
        if cells and speed_file.is_file():
            panels.append((grid, cells, read_json_object(speed_file)))
    if not panels:
        return False
    figure, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4.2), squeeze=False)
    colours = dict(zip(POOLERS, ("tab:red", "tab:blue", "tab:green", "tab:purple"), strict=True))
    for axis, (grid, cells, speed) in zip(axes[0], panels, strict=True):
        metric, label = next(iter(metrics_of(cells).items()))
        for (pooler, mode), found in measured_points(cells, grid, speed, metric).items():
            row = row_name(pooler, mode)
            xs = [1e6 / rate for _, rate, _ in found]
            ys = [statistics.fmean(values) for *_, values in found]
            errs = [statistics.stdev(values) if len(values) > 1 else 0.0 for *_, values in found]
            style = {"elastic": "-", "ordinary": ":", "adaptive": "--"}[mode]
            colour = "black" if mode == "adaptive" else colours[pooler]
            axis.errorbar(
                xs, ys, yerr=errs, fmt="o" + style, color=colour, label=row, markersize=3, capsize=2
            )
        axis.set_title(f"{grid.name}, {grid.regime}")
        axis.set_xlabel("encode time, ms per 1,000 sentences")
        axis.set_ylabel("Avg. (all) of 7 STS tasks" if metric == "avg_all" else label)
        axis.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=7, loc="lower right")
    figure.tight_layout()
    save_figure_atomically(figure, output, dpi=120)
    plt.close(figure)
    return True


def verdicts_by_depth(found: list[Reading]) -> str:
    """'below at 1, 2; level at 3, 4, 5': the depths grouped by verdict, in depth order."""
    grouped: dict[str, list[str]] = {}
    for reading in found:
        grouped.setdefault(reading.verdict, []).append(str(reading.depth))
    return "; ".join(f"{verdict} at {', '.join(depths)}" for verdict, depths in grouped.items()) or "—"


def shallow_answer(found: list[Reading], grid: Grid) -> str:
    """The pre-registered answer for a grid: "LWAP beats mean pooling at shallow depth" where `lwap` is
    above on Avg. (all) at some k ≤ L/2 and not below on SciFact nDCG@10 there; given only once every
    reading pairs all the seeds (COMPARE.md: the verdicts are judged at three)."""
    questions = [(depth, metric) for depth in grid.depths()[:-1] for metric in METRICS]
    by_question = {(r.depth, r.metric): r for r in found}
    paired_seeds = min((len(r.diffs) for r in found), default=0)
    if paired_seeds < len(SEEDS):
        return f"pending ({paired_seeds} of {len(SEEDS)} seeds)"
    missing = [
        f"{METRICS[metric]} at {depth}" for depth, metric in questions if (depth, metric) not in by_question
    ]
    if missing:
        return f"pending (not read: {', '.join(missing)})"
    avg, scifact = METRICS
    wins = [
        str(depth)
        for depth in grid.depths()[:-1]
        if 2 * depth <= grid.layers
        and by_question[(depth, avg)].verdict == "above"
        and by_question[(depth, scifact)].verdict != "below"
    ]
    return f"yes, at k = {', '.join(wins)}" if wins else f"no (k ≤ {grid.layers // 2})"


def results_section(
    results: Path, report_link: str, figure_link: str | None, grids: tuple[Grid, ...] = GRIDS
) -> list[str]:
    """docs/RESULTS.md's section: the primary question, a row per grid (every table is in REPORT.md)."""
    lines = [
        "## Elastic embeddings: does `lwap` win at a shallower depth?",
        "",
        'Issue 51\'s frontier (pre-registered in COMPARE.md, "the elastic frontier"): every pooler trained '
        "depth-elastic (`objective.depths: [1..L]`) and as usual, then read at each depth k. The primary "
        "reading: `lwap-elastic` − `mean-elastic` at each k < L, paired by seed, Holm's correction over "
        "the grid's depths × both metrics. Every row, dimension and speed: "
        f"[the frontier's report]({report_link}) (`python benchmarks/elastic/frontier.py report`).",
        "",
    ]
    if figure_link:
        lines += [f"![quality against encode time, every grid]({figure_link})", ""]
    lines += [
        "| grid | cells | seeds paired | Avg. (all): mean d at k = 1.. | verdicts | SciFact nDCG@10: mean d "
        "| verdicts | LWAP beats mean at k ≤ L/2? |",
        "| --- | ---: | ---: | --- | --- | --- | --- | --- |",
    ]
    loaded = [(grid, load(results, grid)) for grid in grids]
    reasons = {}
    for grid, cells in loaded:
        count = sum(len(seeds) for seeds in cells.values())
        found = readings(cells, grid, PRIMARY, METRICS) if cells else []
        pair = f"{grid.name}, {grid.regime} `{PRIMARY[0]}` − `{PRIMARY[1]}`"
        reasons[pair] = crossed(cells, PRIMARY)
        mark = CROSSED if reasons[pair] else ""
        paired_seeds = max((len(r.diffs) for r in found), default=0)
        row = [f"{grid.name}, {grid.regime}", f"{count} of {len(grid.rows) * len(SEEDS)}", str(paired_seeds)]
        for metric in METRICS:
            of_metric = [r for r in found if r.metric == metric]
            row += [
                ", ".join(f"{r.mean:+.2f}" for r in of_metric) or "—",
                verdicts_by_depth(of_metric) + mark,
            ]
        row.append(shallow_answer(found, grid))
        lines.append(f"| {' | '.join(row)} |")
    return [*lines, "", *crossed_note(reasons), *secondary_summary(loaded)]


def secondary_summary(loaded: list[tuple[Grid, Cells]]) -> list[str]:
    """The secondary readings' verdicts on Avg. (all), a row per pair of rows and a column per grid
    (SciFact, the p-values and the frontier's points are in REPORT.md)."""
    lines = [
        "The secondary readings (COMPARE.md), their verdicts on Avg. (all): each pair of rows a − b paired "
        "by seed, Holm within the pair over its depths × both metrics (`lwap` − `mean` truncated after "
        "ordinary training at k < L, the others at k = 1..L):",
        "",
        f"| a − b | {' | '.join(f'{grid.name}, {grid.regime}' for grid, _ in loaded)} |",
        "| --- |" + " --- |" * len(loaded),
    ]
    reasons = {}
    for rows in (ORDINARY, *SECONDARY):
        verdicts = []
        for grid, cells in loaded:  # the family is REPORT.md's: the depths × both metrics
            found = readings(cells, grid, rows, METRICS, full_depth=rows != ORDINARY)
            why = reasons[f"{grid.name}, {grid.regime} `{rows[0]}` − `{rows[1]}`"] = crossed(cells, rows)
            verdicts.append(
                verdicts_by_depth([r for r in found if r.metric == "avg_all"]) + (CROSSED if why else "")
            )
        lines.append(f"| `{rows[0]}` − `{rows[1]}` | {' | '.join(verdicts)} |")
    return [*lines, "", *crossed_note(reasons)]
