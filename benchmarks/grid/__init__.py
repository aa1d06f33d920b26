"""The repository's pooler grids through `lwap compare`, and its own report of them (docs/RESULTS.md)."""
