"""The pooler comparison (`lwap compare`): every pooler trained with one budget, data order and seeds.

A *cell* is one (regime, pooler, seed) of one backbone: `lwap train compare/<regime>-minilm` with only the
pooling, the seed and the output folder changed, then `lwap eval` of the kept model. Finished cells are
small JSON files in the results folder; the report and the figure are made from them alone.

Modules, one job each: `grid` (what a grid is: regimes, poolers, where cells live), `locks` (one process
per cell), `settings` (what a cell's numbers depend on), `cells` (reading and writing cell files),
`runner` (training and evaluating the missing cells), `maintenance` (profiles for older cells), `report`,
`overview` (`lwap` against `cls` on every backbone, one table), `verdicts`, `prose` (the report's fixed
text), `attention` (the layer-attention section and figure), `geometry` and `geometry_section`
(alignment and uniformity), `reruns` (what a re-run reproduces), `cli` (the `lwap compare` subcommands).
"""
