"""Baselines: the README's and docs' reference tables, rerun when a default changes (README.md here)."""
