"""Making a backbone from scratch and gating it before a grid runs on it (README.md here)."""
