"""The pooler comparison (`lwap compare`): every pooler trained with one budget, data order and seeds.

A *cell* is one (regime, row, seed) of one backbone: `lwap train compare/<regime>-minilm` with only the
pooling (and the row's own settings), the seed and the output folder changed, then `lwap eval` of the
kept model. Finished cells are small JSON files in the results folder; the report and the figure are made
from them alone.

Modules, one job each: `grid` (what a grid is: regimes, where cells live), `rows` (its rows: the
registry's poolers and those a rows file adds), `settings` (what a cell's numbers depend on), `cells`
(reading and writing cell files), `runner` (training and evaluating the missing cells; one process per
cell through `lwap.checks.locking`), `report` (the generic report, and the hooks a report of one's own
overrides), `verdicts` and `summaries` (what the report reads off a grid), `paired` (differences paired
by seed, Holm's correction), `prose` (the report's fixed text and wording), `attention` (the
layer-attention section and figure), `geometry` and `geometry_section` (alignment and uniformity), `cli`
(the `lwap compare` subcommands). The repository's own study (docs/RESULTS.md) is not here: its rows are
configs/compare/rows/study.yaml, its report benchmarks/grid/report_*.py through `report.Report`'s hooks.
"""
