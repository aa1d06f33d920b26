"""The report's geometry section and figure (lwap.compare.geometry): a grid's own geometry, seeds
averaged, the LWAP gaps judged against the seed spread, and the rank correlation between uniformity and
STS average computed as scipy does; the repository's report adds retrained cells for a grid that
predates the measures (benchmarks/grid/report_geometry.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy.stats import spearmanr

from benchmarks.grid import report_geometry
from benchmarks.grid.report_prose import WORDING
from benchmarks.grid.report_repository import RepositoryReport
from benchmarks.grid.study import ROWS as STUDY
from lwap.compare import geometry
from lwap.compare.geometry_section import TITLE, draw_geometry_figure, geometry_section
from lwap.compare.prose import user_wording
from lwap.compare.report import Report
from lwap.compare.rows import load_rows

POOLERS = ("lwap", "weighted", "cls", "mean", "first_last_avg", "last2_avg")
STS = ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr")


def write(path: Path, content: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content), encoding="utf-8")


def grid_cell(results: Path, pooler: str, seed: int, avg: float, uniformity: float | None) -> None:
    """A cell as `lwap compare run` writes it; `uniformity=None`: a cell from before the measures."""
    scores = {t: avg for t in STS} | {"avg_all": avg, "avg_wmean": avg, "scifact_ndcg@10": 50.0}
    dev = []
    if uniformity is not None:
        scores |= {"uniformity": uniformity, "alignment": 0.1 - uniformity / 10, "anisotropy": 0.05}
        dev = [[0, -1.0, 0.1], [150, uniformity - 0.1, 0.3]]
    train = {"steps": 200, "dev_spearman_before": 0.8, "best_dev_spearman": 0.84, "best_step": 150}
    cell = {"regime": "unsup", "pooler": pooler, "seed": seed, "commit": "0" * 40, "scores": scores}
    cell |= {
        "train_wall_seconds": 1.0,
        "eval_wall_seconds": 1.0,
        "train": train | {"dev_geometry_by_step": dev},
    }
    write(results / "unsup" / f"{pooler}-seed{seed}.json", cell)


def test_grid_geometry_seeds_averaged_and_gaps_judged_against_the_spread(tmp_path: Path) -> None:
    uniformity = {  # per pooler, seeds 0..2; lwap clearly below cls, level with mean
        "lwap": [-3.50, -3.52, -3.48],
        "cls": [-2.60, -2.62, -2.58],
        "mean": [-3.45, -3.60, -3.40],
        "weighted": [-1.9, -1.8, -2.0],
        "first_last_avg": [-3.3, -3.3, -3.3],
        "last2_avg": [-3.2, -3.2, -3.2],
    }
    averages = {
        "lwap": 75.0,
        "cls": 76.0,
        "mean": 79.0,
        "weighted": 74.0,
        "first_last_avg": 78.0,
        "last2_avg": 77.0,
    }
    for pooler in POOLERS:
        for seed in range(3):
            grid_cell(tmp_path, pooler, seed, averages[pooler] + seed * 0.1, uniformity[pooler][seed])
    write(
        tmp_path / "untouched-backbone.json",
        {
            "scores": {
                "avg_all": 78.9,
                "scifact_ndcg@10": 50.0,
                "uniformity": -3.8,
                "alignment": 0.33,
                "anisotropy": 0.02,
            }
        },
    )

    (found,) = geometry.panels(tmp_path, load_rows())
    assert not found.retrained and [len(found.runs[p]) for p in POOLERS] == [3] * 6
    assert geometry.stats(found.runs["lwap"], "uniformity") == pytest.approx((-3.50, 0.02, 3))
    du, da, spread = geometry.against(found, "cls")
    assert du == pytest.approx(-0.90) and da == pytest.approx(0.09) and spread.startswith("**larger than**")
    du, _, spread = geometry.against(found, "mean")
    assert du == pytest.approx(-0.0167, abs=1e-4) and spread.startswith("within")  # |Δ| < sd(lwap) + sd(mean)
    means = [sum(uniformity[p]) / 3 for p in POOLERS]
    rho, pvalue, n = geometry.correlation(found)
    expected = spearmanr(means, [averages[p] + 0.1 for p in POOLERS])
    assert (rho, pvalue, n) == pytest.approx((expected.statistic, expected.pvalue, 6))

    text = "\n".join(geometry_section([found], user_wording(f"{tmp_path}/")))
    assert f"## {TITLE}" in text and "![alignment vs uniformity per pooler](alignment_uniformity.png)" in text
    assert "`lwap compare figure` draws it" in text and "retrained" not in text
    assert "| `lwap` | 3 | 0.450 ± 0.002 | -3.500 ± 0.020 | 0.050 ± 0.000 | 75.10 | 75.10 (3 seeds) |" in text
    assert "-1.00 → -3.60 |" in text  # dev uniformity: step 0 → the kept step, seeds averaged
    assert "| *untouched (mean)* | – | 0.330 | -3.800 | 0.020 | – | 78.90 (no training) | – |" in text
    panel = "all-MiniLM-L6-v2, unsupervised"
    assert (
        f"- Against `cls`: more uniform in 1 of 1 ({panel} -0.900, **larger than** the seed spread (0.040))"
        in text
    )
    assert (
        f"- Against `mean`: more uniform in 1 of 1 ({panel} -0.017, within the seed spread (0.124))" in text
    )
    assert f"Alignment worse (higher) in 1 of 1 ({panel} +0.090)." in text
    assert f"Spearman ρ(uniformity, STS avg) = {expected.statistic:+.2f}" in text
    assert TITLE in Report(tmp_path).text()  # the section is part of the report

    assert draw_geometry_figure([found], tmp_path / "figure.png", user_wording(f"{tmp_path}/"))
    assert (tmp_path / "figure.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_grid_from_before_the_measures_reads_its_retrained_cells(tmp_path: Path) -> None:
    """The repository's report only: its old grids were retrained for the geometry and kept apart."""
    for pooler in ("lwap", "cls"):
        grid_cell(tmp_path, pooler, 0, 75.0, None)
        grid_cell(tmp_path, pooler, 1, 75.2, None)
    assert report_geometry.panels(tmp_path, STUDY) == []  # nothing to show yet: no section, no figure
    assert geometry_section([], WORDING) == []
    assert not draw_geometry_figure([], tmp_path / "figure.png", WORDING)

    retrained = tmp_path / "geometry" / "all-MiniLM-L6-v2"
    for pooler, u in (("lwap", -3.5), ("cls", -2.6)):
        cell = {"pooler": pooler, "seed": 0, "scores": {"avg_all": 75.3}, "train": {"best_step": 50}}
        cell |= {"geometry": {"alignment": 0.3, "uniformity": u, "anisotropy": 0.1}}
        cell |= {"dev_geometry": [{"step": 0, "uniformity": -1.0, "alignment": 0.1}]}
        write(retrained / "unsup" / f"{pooler}-seed0.json", cell)
    write(
        retrained / "untouched-mean.json",
        {"geometry": {"alignment": 0.2, "uniformity": -2.0, "anisotropy": 0.3}},
    )

    assert geometry.panels(tmp_path, STUDY) == []  # the engine reads a grid's own cells only
    (found,) = report_geometry.panels(tmp_path, STUDY)
    assert found.retrained and found.grid_avg["lwap"] == [75.0, 75.2] and "mean" in found.untouched
    text = RepositoryReport(tmp_path).text()
    assert "Panels marked *retrained* are grids made before these measures" in text
    assert "retrained" not in Report(tmp_path).text()
    assert "all-MiniLM-L6-v2, unsupervised (retrained)" in text and "geometry_cells.py run" in text
    assert (
        "| `lwap` | 1 | 0.300 | -3.500 | 0.100 | 75.30 | 75.10 (2 seeds) | – |" in text
    )  # no kept step logged
    assert "uniformity -0.900 (more uniform; one seed: spread unknown)" in text
    assert "more uniform in 1 of 1 (all-MiniLM-L6-v2, unsupervised (retrained) -0.900, one seed" in text
    assert "seed-to-seed sd" not in text  # no pooler has several seeds: no scale to quote
    assert "fewer than 4 poolers with geometry: no rank correlation yet" in text
