"""The README's quick start end to end: packaged all-MiniLM-L6-v2, real Wikipedia slice, STS-B dev."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

pytestmark = pytest.mark.slow  # a 4-minute training run; the fast tier (-m 'not slow') leaves it out


def test_quickstart_config_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "quickstart"
    result = subprocess.run(
        [sys.executable, "-m", "lwap", "train", "configs/quickstart.yaml", "--set", f"output.dir={out}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    printed = re.search(
        r"STS-B dev Spearman: before training (\d\.\d+), after training (\d\.\d+)", result.stdout
    )
    assert printed, result.stdout[-2000:]
    before, after = float(printed.group(1)), float(printed.group(2))

    summary = json.loads((out / "train_summary.json").read_text())
    assert summary["steps"] == summary["max_steps"] == 250
    assert summary["dev_score_before"] == pytest.approx(before, abs=1e-4)
    assert summary["final_model_dev_score"] == pytest.approx(after, abs=1e-4)
    # native start: step 0 is the backbone's own sentence vector (all-MiniLM-L6-v2 scores 0.867 on STS-B
    # dev with its mean pooling), and the kept model ends above it
    assert before == pytest.approx(0.8673, abs=0.002)
    assert after > before
    assert (out / "training_curves.png").is_file()

    from sentence_transformers import SentenceTransformer

    from lwap.eval.evaluators import stsb_evaluator

    model = SentenceTransformer(str(out / "model"), trust_remote_code=True)  # as a user loads it, fp32
    score = stsb_evaluator("dev")(model)["stsb-dev_spearman_cosine"]
    assert score == pytest.approx(
        after, abs=0.005
    )  # the folder holds the selected weights (bf16 vs fp32 eval)
