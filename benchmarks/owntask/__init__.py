"""Issue 48's case, a user whose task is scientific-claim retrieval: SciFact's own data through `lwap
mine`, `lwap train` with the user's dev folder and `lwap eval` (scifact_case.py); mining's cost
(mine_cost.py)."""
