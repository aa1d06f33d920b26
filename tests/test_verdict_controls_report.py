"""CONTROLS.md (benchmarks/backbone/verdict_controls_report.py) read from hand-made result files laid out as
verdict_controls.py's runs leave them: the control's three pre-registered readings (not real, real and
explained by clipping, real and not), and seen-ness' four words per contrast with their intervals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.backbone import verdict_controls as controls
from benchmarks.backbone.verdict_controls_report import control_reading, report
from lwap.compare.cells import write
from lwap.compare.grid import STS_COLUMNS

BACKBONE = controls.BACKBONE


def write_cell(grid, pooler: str, seed: int, avg: float, kept: int = 50, steps: int = 1000) -> None:
    """A compare cell as the runner writes it, every STS task at `avg` (so Avg. (all) is `avg`)."""
    scores = {task: avg for task in STS_COLUMNS} | {"avg_all": avg}
    cell = {"regime": "unsup", "pooler": pooler, "seed": seed, "backbone": BACKBONE, "overrides": [],
            "train": {"best_step": kept, "steps": steps}, "scores": scores}  # fmt: skip
    write(grid.cell_file(BACKBONE, "unsup", pooler, seed), cell)


def write_plain(folder: Path, avg: float, clipped: int | None = None) -> None:
    """`lwap eval`'s results.json of a plain model and its plain_simcse.json beside it."""
    folder.mkdir(parents=True)
    sts = {task: {"score": avg, "wmean": avg} for task in STS_COLUMNS}
    (folder / "results.json").write_text(json.dumps({"sts": sts}), encoding="utf-8")
    record = {"best_step": 100, "steps": 1000, "steps_clipped": clipped or 0}
    (folder / "plain_simcse.json").write_text(json.dumps(record), encoding="utf-8")


def write_control(layout: controls.Layout, t: list[float], p: list[float], clip: list[float]) -> None:
    for seed, (a, b, c) in enumerate(zip(t, p, clip, strict=True)):
        write_cell(layout.trainer_grid(), "cls", seed, a)
        write_plain(layout.plain_scores("P", seed), b)
        write_plain(layout.plain_scores("P+clip", seed), c, clipped=900 + seed)


@pytest.mark.parametrize(
    ("p", "clip", "reading"),
    [
        (
            [41.0, 42.0, 40.0],
            [40.0, 41.0, 39.0],
            "**Not real**: P − T is +1.00 points (not more than 2 points)",
        ),
        ([44.5, 45.0, 44.0], [40.5, 41.0, 40.0], "**Real, and clipping explains it** (P − T +4.50"),
        ([44.5, 45.0, 44.0], [44.0, 44.5, 43.5], "**Real, and clipping does not explain it** (P − T +4.50"),
        (
            [44.5, 45.0, 44.0],
            [43.0, 43.5, 42.5],
            "**Real, and clipping does not explain it**",
        ),  # P − P+clip 1.5
    ],
)
def test_the_control_is_read_as_pre_registered(
    tmp_path: Path, p: list[float], clip: list[float], reading: str
) -> None:
    layout = controls.Layout(tmp_path / "results", tmp_path / "work")
    write_control(layout, [40.0, 40.5, 39.5], p, clip)
    text = report(layout, BACKBONE)
    assert f"Reading, as pre-registered: {reading}" in text
    assert (
        "| T: lwap's trainer (compare cells) | 40.00 (50/1000) | 40.50 (50/1000) | 39.50 (50/1000) | 40.00 |"
        in text
    )
    assert "steps whose gradient norm was over 1.0 and clipped, per seed: [900, 901, 902]" in text


def test_a_large_gap_with_an_interval_across_zero_is_not_real() -> None:
    """P − T = +4 but P's seeds spread widely: Welch's 95 % interval includes 0 (se = sqrt(1/3 + 36/3),
    df = (37/3)² / ((1/3)²/2 + 12²/2) = 2.11)."""
    from scipy.stats import t

    runs = {"T": [39.0, 40.0, 41.0], "P": [38.0, 44.0, 50.0], "P+clip": [1.0, 2.0, 3.0]}
    contrasts, reading = control_reading(runs)
    assert reading.startswith("**Not real**: P − T is +4.00 points (its interval includes 0)")
    half = t.ppf(0.975, (37 / 3) ** 2 / ((1 / 3) ** 2 / 2 + 12**2 / 2)) * (37 / 3) ** 0.5
    assert contrasts[0] == f"| P − T | +4.00 | [{4 - half:+.2f}, {4 + half:+.2f}] |"
    assert half == pytest.approx(14.37, abs=0.01)


def test_the_control_waits_for_all_nine_runs(tmp_path: Path) -> None:
    layout = controls.Layout(tmp_path / "results", tmp_path / "work")
    write_control(layout, [40.0, 40.5, 39.5], [44.5, 45.0, 44.0], [40.5, 41.0, 40.0])
    (layout.plain_scores("P+clip", 2) / "plain_simcse.json").unlink()  # scored, its record not copied yet
    text = report(layout, BACKBONE)
    assert "Not read yet: the reading waits for all 9 runs." in text
    assert "| 40.50 (100/1000) | 41.00 (100/1000) | not run yet | 40.75 (2 seeds) |" in text


def write_seen(layout: controls.Layout, arms: dict[tuple[str, str], list[float]]) -> None:
    for (arm, pooler), values in arms.items():
        for seed, avg in enumerate(values):
            write_cell(layout.seen_grid(arm), pooler, seed, avg, kept=300, steps=372)
            subsets = {"sts12": {"MSRvid": avg + 10}, "sts14": {"images": avg + 1},
                       "sts15": {"images": avg + 2, "answers-forums": avg - 5}}  # fmt: skip
            sts = {
                task: {"subsets": {n: {"spearman": v} for n, v in s.items()}} for task, s in subsets.items()
            }
            path = layout.seen_eval(arm, pooler, seed)
            path.parent.mkdir(parents=True)
            path.write_text(json.dumps({"sts": sts}), encoding="utf-8")


SEEN = {  # d = U − W and S − U per seed: above / undecided for `mean`, equivalent / below for `cls`
    ("W", "mean"): [50.0, 51.0, 52.0],
    ("U", "mean"): [53.0, 54.1, 54.9],  # U − W: 3.0, 3.1, 2.9
    ("S", "mean"): [54.0, 53.1, 56.9],  # S − U: 1, −1, 2
    ("W", "cls"): [40.0, 41.0, 42.0],
    ("U", "cls"): [40.01, 41.02, 42.0],  # U − W: 0.01, 0.02, 0
    ("S", "cls"): [37.01, 37.92, 39.1],  # S − U: −3, −3.1, −2.9
}


def test_seen_ness_reads_each_contrast_with_its_word(tmp_path: Path) -> None:
    layout = controls.Layout(tmp_path / "results", tmp_path / "work")
    write_seen(layout, SEEN)
    text = report(layout, BACKBONE)
    assert "t-intervals at 1 − 0.05/4 = 98.75 %, margin 0.5" in text
    mean_seen = "| `mean` | seen-ness: U − W | +3.00 | 0.10 | 3 of 3 | [+2.49, +3.51] | 0.001 | above |"
    assert mean_seen in text  # p 0.00037 (t = 51.96, 2 df), tied with `cls` S − U: Holm × 4, × 3, max 0.0015
    assert "| `mean` | domain: S − U | +0.67 | 1.53 | 2 of 3 | [-7.15, +8.48] |" in text
    assert "| `cls` | seen-ness: U − W | +0.01 | 0.01 | 2 of 3 |" in text
    assert (
        "| below by more than the margin |" in text and "| equivalent |" in text and "| undecided |" in text
    )
    readings = [line for line in text.splitlines() if line.startswith("- `")]
    assert readings == [
        "- `mean` seen-ness (U − W): U above W: seen sentences hurt.",
        "- `mean` domain (S − U): undecided: 3 seeds cannot tell the domain's effect from none.",
        "- `cls` seen-ness (U − W): U equivalent to W: seen-ness changes nothing that matters (±0.5).",
        "- `cls` domain (S − U): S below U: the domain hurts.",
    ]
    assert "| `mean` | U | 53.00 (300/372) | 54.10 (300/372) | 54.90 (300/372) | 54.00 |" in text
    assert "| `mean` | U | 64.00 | 55.00 | 56.00 | 49.00 | 3 |" in text  # the subsets, mean over seeds


def test_seen_ness_holm_adjusts_over_the_four_tests_and_waits_for_missing_seeds(tmp_path: Path) -> None:
    layout = controls.Layout(tmp_path / "results", tmp_path / "work")
    write_seen(layout, {key: values for key, values in SEEN.items() if key != ("S", "cls")})
    write_seen(layout, {("S", "cls"): SEEN["S", "cls"][:2]})
    text = report(layout, BACKBONE)
    assert "- `cls` domain (S − U): not read yet (runs missing)." in text
    assert "| `cls` | domain: S − U | not run yet |" in text
    # three tests in the family: `mean` U − W has p = 0.00037 (t = 51.96, 2 df), × 3 by Holm = 0.0011
    assert "| `mean` | seen-ness: U − W | +3.00 | 0.10 | 3 of 3 | [+2.49, +3.51] | 0.001 | above |" in text
