"""Speed: rerun when training, encoding or the GPU path changes (README.md here)."""
