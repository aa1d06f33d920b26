"""The pooler grid: docs/RESULTS.md and its studies, rerun when cells are added (README.md here)."""
