"""benchmarks/gpu_speed.py's smoke mode on the CPU, and the GPU section of docs/BENCHMARKS.md it feeds.

The GPU figures come from one run of benchmarks/gpu_check.sh on a GPU machine; this keeps the code of
that run working here, so the run is not the first time it executes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import gpu_report  # noqa: E402
import gpu_section  # noqa: E402


def test_gpu_section_is_replaced_in_place(tmp_path: Path) -> None:
    md = tmp_path / "B.md"
    md.write_text("# Speed\n\nCPU tables\n", encoding="utf-8")
    gpu_section.replace(md, ["## GPU training (pending)", "first"])
    gpu_section.replace(md, ["## GPU training (H200)", "second"])
    text = md.read_text(encoding="utf-8")
    assert text.startswith("# Speed\n\nCPU tables\n") and text.count(gpu_section.START) == 1
    assert "second" in text and "first" not in text
    assert gpu_section.current(md).endswith(gpu_section.END)


def test_shipped_benchmarks_md_has_the_gpu_section() -> None:
    section = gpu_section.current(REPO / "docs" / "BENCHMARKS.md")
    assert section is not None and "## GPU training" in section
    assert "benchmarks/gpu_check.sh OUTDIR" in section


@pytest.mark.slow
def test_smoke_run_and_report(tmp_path: Path) -> None:
    """Every variant and setting runs (tiny shapes, CPU) and the report renders every row from the JSON."""
    out = tmp_path / "gpu"
    script = REPO / "benchmarks" / "gpu_speed.py"
    run = subprocess.run(
        [sys.executable, str(script), "--smoke", "--out", str(out / "gpu_speed.json")],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads((out / "gpu_speed.json").read_text(encoding="utf-8"))
    assert result["smoke"] and len(result["settings"]) == 3
    for rows in result["settings"].values():
        kinds = {"lwap", "cls", "stock"} | (set() if rows["mini_batch"] else {"plain"})
        assert kinds <= rows.keys()
        for kind in kinds:
            r = rows[kind]
            assert r["sentences_per_second"] > 0 and r["mfu"] > 0
            split = r["split_seconds"]
            assert split["forward"] > 0 and split["backward"] > 0 and split["step"] >= split["forward"]
    assert all("skipped" in r for r in result["levers"].values())  # compile/CUDA graphs need CUDA
    (out / "gpu_tests.xml").write_text(
        '<testsuites><testsuite tests="8" failures="1" errors="0" skipped="0">'
        '<testcase name="test_a"><failure/></testcase></testsuite></testsuites>',
        encoding="utf-8",
    )
    md = tmp_path / "BENCHMARKS.md"
    md.write_text("# Speed\n", encoding="utf-8")
    assert gpu_report.main([str(out), "--md", str(md)]) == 0
    text = md.read_text(encoding="utf-8")
    assert "SMOKE RUN" in text and "**FAIL**: 7 passed, 1 failed" in text and "`test_a`" in text
    rows = [line for line in text.splitlines() if line.startswith("| sup 16×32, mini-batches of 8 |")]
    assert len(rows) == 3  # lwap, cls, stock
