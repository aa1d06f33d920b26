"""`lwap compare report` from cell files: mean ± std per pooler, seed-spread verdicts, every run listed,
settings that differ within a grid, and a user's own backbone reported with nothing of this repository's
in it (the repository's own report, docs/RESULTS.md: tests/test_repository_report.py)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

import pytest

from lwap.checks.locking import claim, read_owner
from lwap.compare.grid import BACKBONE, UNTOUCHED_POOLINGS, Grid
from lwap.compare.maintenance import attach_profiles
from lwap.compare.report import Report, write_report
from lwap.compare.runner import Cell, restart_flags, run_reference, untouched_name

REPO = Path(__file__).resolve().parents[1]


def write_cell(
    folder: Path, pooler: str, seed: int, avg: float, scifact: float, extra: dict | None = None
) -> None:
    scores = {task: avg for task in ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr")}
    scores |= {f"{task}_wmean": avg - 1 for task in list(scores)}
    scores |= {"avg_all": avg, "avg_wmean": avg - 1, "scifact_ndcg@10": scifact}
    cell = {
        "regime": "unsup",
        "pooler": pooler,
        "seed": seed,
        "commit": "0123456789abcdef",
        "train_wall_seconds": 100.0,
        "eval_wall_seconds": 50.0,
        "train": {"steps": 200, "dev_spearman_before": 0.80, "best_dev_spearman": 0.84, "best_step": 150},
        "scores": scores,
        **(extra or {}),
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{pooler}-seed{seed}.json").write_text(json.dumps(cell), encoding="utf-8")


def test_report_states_spread_verdicts_and_lists_every_run(tmp_path: Path) -> None:
    for seed, (lwap, cls, mean) in enumerate([(80.0, 75.0, 79.9), (80.2, 75.2, 80.3), (80.1, 75.1, 79.8)]):
        write_cell(tmp_path / "cells/unsup", "lwap", seed, lwap, 60.0 + seed)
        write_cell(tmp_path / "cells/unsup", "cls", seed, cls, 60.0 + seed)
        if seed < 2:  # an unfinished pooler: two of three seeds
            write_cell(tmp_path / "cells/unsup", "mean", seed, mean, 60.0 + seed)
    out = tmp_path / "RESULTS.md"
    write_report(Report(tmp_path / "cells"), out)
    text = out.read_text(encoding="utf-8")

    assert "Grid: 8 of 18 planned cells" in text
    assert "| `lwap` | 3 | 80.10 ± 0.10 |" in text
    assert "| `cls` | 3 | 75.10 ± 0.10 |" in text
    # read two ways: the seed-spread rule, then paired by seed with Holm over the list (4 comparisons)
    assert (
        "| Avg. (all) | `cls` | +5.00 | above (< 0.001) | +5.00 ± 0.00 | 3/3 | < 0.001 | < 0.001 | above |  |"
        in text
    )
    assert (
        "| SciFact nDCG@10 | `cls` | +0.00 | level (1.000) | +0.00 ± 0.00 | 0/3 | 1.000 | 1.000 | level |  |"
        in text
    )
    assert "| Avg. (all) | `mean` | +0.00 | level (1.000) | +0.00 ± 0.14 |" in text  # paired over 2 seeds
    # unpaired, `lwap`'s third seed moves the mean; paired, the two seeds both rows have are equal
    assert "| SciFact nDCG@10 | `mean` | +0.50 | level (0.561) | +0.00 ± 0.00 | 0/2 | 1.000 | 1.000 |" in text
    assert "_No cells of the `sup` regime yet._" in text
    write_cell(tmp_path / "cells/unsup", "weighted", 0, 70.0, 50.0)  # one seed: no spread to judge by
    write_report(Report(tmp_path / "cells"), out)
    text = out.read_text(encoding="utf-8")
    assert "| `weighted` | 1 | 70.00 |" in text
    assert "| Avg. (all) | `weighted` | +10.10 | one seed | +10.00 ± 0.00 | 1/1 | – | – | level |  |" in text
    assert text.count("| unsup | `") == 9  # every run appears in the last table


def report_text(tmp_path: Path, make_report: type[Report] = Report) -> str:
    """Run `report` (the generic one, or `make_report`) into tmp_path and return what it wrote."""
    out = tmp_path / "RESULTS.md"
    write_report(make_report(tmp_path / "cells"), out)
    return out.read_text(encoding="utf-8")


def test_lwap_variants_get_rows_a_legend_and_the_target_verdict(tmp_path: Path) -> None:
    for seed in range(3):
        write_cell(tmp_path / "cells/unsup", "mean", seed, 79.5 + 0.1 * seed, 65.0)
        write_cell(tmp_path / "cells/unsup", "lwap", seed, 76.0, 57.0)
        write_cell(tmp_path / "cells/unsup", "lwap-native", seed, 80.5 + 0.1 * seed, 65.5)
    write_cell(tmp_path / "cells/unsup", "lwap-all", 0, 79.0, 64.0)
    text = report_text(tmp_path)
    assert "Grid: 6 of 18 planned cells" in text  # variants are extra rows, not grid cells
    assert "| `lwap-native` | 3 | 80.60 ± 0.10 |" in text
    assert "- `lwap-native`: `model.lwap_start=native`" in text
    assert "- `lwap-all`: `model.lwap_start=native`, `training.head_learning_rate_multiplier=10`, " in text
    assert "`training.head_warmup_steps=50`" in text  # the unsupervised regime's warm-up
    assert "`lwap-native` − `mean` = +1.00 (**larger than the seed spread**" in text
    assert "**Target met.**" in text  # all cells share one dev score: the first variant is the best


def test_component_variants_get_rows_and_a_legend_of_their_own(tmp_path: Path) -> None:
    """LWAP with a component replaced (issue 37): a row each and its overrides; not one of the variants
    for already-trained encoders, whose target verdict leaves them out."""
    for seed in range(3):
        write_cell(tmp_path / "cells/unsup", "mean", seed, 79.5 + 0.1 * seed, 65.0)
        write_cell(tmp_path / "cells/unsup", "lwap", seed, 76.0, 57.0)
        write_cell(tmp_path / "cells/unsup", "lwap-latent-attn", seed, 81.0 + 0.1 * seed, 66.0)
    write_cell(tmp_path / "cells/unsup", "lwap-meanq", 0, 77.0, 58.0)
    text = report_text(tmp_path)
    assert "Grid: 6 of 18 planned cells" in text  # variants are extra rows, not grid cells
    assert "| `lwap-latent-attn` | 3 | 81.10 ± 0.10 |" in text and "| `lwap-meanq` | 1 | 77.00 |" in text
    legend = "LWAP with a component replaced (its queries or what its output reads) (seeds run: "
    assert legend + "`lwap-meanq` 1/3, `lwap-latent-attn` 3/3), `lwap` plus:" in text  # in ROWS order
    assert "- `lwap-latent-attn`: `model.lwap_queries=latent`, `model.lwap_output=attention`" in text
    assert "- `lwap-meanq`: `model.lwap_queries=mean`" in text
    assert "already-trained encoders" not in text and "Best variant by STS-B dev" not in text
    assert "`lwap` − `lwap-meanq`" not in text  # the differences against `lwap` list the poolers only


def test_a_missed_variant_target_says_why_with_the_attention_profile(tmp_path: Path) -> None:
    profile = {"layers": [0, 1, 2, 3], "sentences": 5, "mean_attention": [0.2, 0.25, 0.25, 0.3]}
    for seed in range(3):
        write_cell(tmp_path / "cells/unsup", "mean", seed, 79.5 + 0.1 * seed, 65.0)
        write_cell(tmp_path / "cells/unsup", "lwap-native", seed, 79.6, 65.5, {"layer_attention": profile})
    text = report_text(tmp_path)
    assert (
        "**Target not met**: no variant beats `mean` as asked "
        "(needed: more than the summed seed spreads, 0.10" in text
    )
    assert "Training added +4.00 STS-B dev points" in text  # 0.80 -> 0.84 in every written cell
    assert "runs from 0.200 to 0.300 against a uniform 0.250: the head learned almost no preference" in text
    assert "Not counted" not in text

    write_cell(tmp_path / "cells/unsup", "lwap-headlr", 0, 85.0, 70.0)  # one seed: not yet a candidate
    text = report_text(tmp_path)
    assert "Best variant by STS-B dev: `lwap-native`" in text
    assert "Not counted until their seeds are complete: `lwap-headlr` (1 of 3 seeds)." in text


def test_attach_profiles_reads_the_cells_own_eval_output(tmp_path: Path) -> None:
    write_cell(tmp_path / "cells/unsup", "lwap", 0, 76.0, 57.0)
    profile = {"layers": [0, 1, 2], "sentences": 10, "mean_attention": [0.2, 0.3, 0.5], "query_by_key": []}
    results = tmp_path / "work/unsup/lwap-seed0/eval/results.json"
    results.parent.mkdir(parents=True)
    results.write_text(json.dumps({"layer_attention": profile}), encoding="utf-8")
    attach_profiles(Grid(tmp_path / "cells", tmp_path / "work"), BACKBONE)
    cell = json.loads((tmp_path / "cells/unsup/lwap-seed0.json").read_text(encoding="utf-8"))
    assert cell["layer_attention"] == {
        "layers": [0, 1, 2],
        "sentences": 10,
        "mean_attention": [0.2, 0.3, 0.5],
    }


def test_a_stopped_cell_resumes_only_from_a_complete_checkpoint(tmp_path: Path) -> None:
    """A cell stopped before its first checkpoint (only logs in checkpoints/) must start over, not fail
    with `--resume: no complete checkpoint` (as a grid did); one with a complete checkpoint resumes."""
    out = tmp_path / "lwap-seed0"
    assert restart_flags(out) == []
    (out / "checkpoints" / "eval").mkdir(parents=True)
    assert restart_flags(out) == ["--overwrite"]
    partial = out / "checkpoints" / "checkpoint-50"
    partial.mkdir()
    (partial / "modules.json").write_text("[]", encoding="utf-8")
    assert restart_flags(out) == ["--overwrite"]  # no trainer_state.json yet: incomplete
    (partial / "trainer_state.json").write_text(json.dumps({"global_step": 50}), encoding="utf-8")
    assert restart_flags(out) == ["--resume"]


def write_untouched(folder: Path, pooling: str, avg: float, backbone: str) -> None:
    name = "untouched-backbone.json" if pooling == "mean" else f"untouched-{pooling}.json"
    scores = {"avg_all": avg, "avg_wmean": avg, "scifact_ndcg@10": 20.0}
    scores |= {task: avg for task in ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr")}
    cell = {"backbone": backbone, "pooling": pooling, "scores": scores}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(cell), encoding="utf-8")


def test_a_plain_backbone_gets_the_budget_check_and_lwaps_standing(tmp_path: Path) -> None:
    """On an MLM-only backbone: each trained pooling against the same pooling untouched (does plain
    SimCSE gain under this budget?), and where `lwap` ranks, with its gap to `cls` (the paper's claim)."""
    grid = tmp_path / "cells/backbones/mlm"
    for pooling, avg in (("mean", 65.0), ("cls", 71.0), ("first_last_avg", 62.0)):
        write_untouched(grid, pooling, avg, "../models/mlm")
    for seed in range(3):
        write_cell(grid / "unsup", "cls", seed, 75.0 + 0.1 * seed, 40.0, {"backbone": "../models/mlm"})
        write_cell(grid / "unsup", "lwap", seed, 76.0 + 0.1 * seed, 45.0, {"backbone": "../models/mlm"})
        write_cell(grid / "unsup", "first_last_avg", seed, 62.0 + seed, 30.0, {"backbone": "../models/mlm"})
    write_cell(grid / "unsup", "mean", 0, 74.0, 50.0, {"backbone": "../models/mlm"})
    text = report_text(tmp_path)
    section = text.split("## mlm: Unsupervised")[1].split("## mlm: Supervised")[0]
    assert "In short (not every pooler has all its seeds yet: provisional):" in section
    assert "- Avg. (all): `lwap` ranks 1 of 4 (`lwap` 76.10 > `cls` 75.10 > `mean` 74.00 > " in section
    assert "- Avg. (wmean): `lwap` ranks 1 of 4 (`lwap` 75.10 > `cls` 74.10 > `mean` 73.00 > " in section
    assert "- SciFact nDCG@10: `lwap` ranks 2 of 4 (`mean` 50.00 > `lwap` 45.00 > " in section
    assert "baseline), Avg. (wmean): `lwap` − `cls` = +1.00 (**larger than the seed spread**" in section
    assert (
        "`cls` (the paper's baseline), Avg. (all): `lwap` − `cls` = +1.00 (**larger than the seed" in section
    )
    assert (
        "- `cls`: 71.00 untouched → 75.10 trained (+4.10; **larger than** its seed spread, 0.10)." in section
    )
    assert "- `mean`: 65.00 untouched → 74.00 trained (+9.00; one seed: spread unknown)." in section
    assert (
        "- Plain SimCSE (`cls`) against the best untouched row (`cls`, 71.00): 75.10 trained (+4.10; above it"
        " by more than its seed spread: the bar is met)." in section
    )
    assert (
        "- `first_last_avg`: 62.00 untouched → 63.00 trained (+1.00; not larger than its seed spread, 1.00)"
        in section
    )
    # an untouched first-last average above trained `cls`: the report says the bar is missed
    write_untouched(grid, "first_last_avg", 80.0, "../models/mlm")
    missed = report_text(tmp_path).split("## mlm: Unsupervised")[1]
    assert (
        "(`first_last_avg`, 80.00): 75.10 trained (-4.90; **not above it by more than its seed spread:"
        " SimCSE's bar is not met at this budget**)." in missed
    )
    # the default backbone (no untouched cls row) gets no budget check
    write_cell(tmp_path / "cells/unsup", "cls", 0, 75.0, 40.0)
    write_cell(tmp_path / "cells/unsup", "lwap", 0, 74.0, 40.0)
    default = report_text(tmp_path).split("## mlm: Unsupervised")[0]
    assert "Budget check" not in default and "`lwap` ranks 2 of 2" in default


def test_grid_processes_share_a_grid_through_cell_locks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two `run` processes on one grid: a cell held by a live process is skipped ([busy]), a lock left
    by a process that is gone is taken over, and the lock is removed when the cell is done."""
    import subprocess

    grid = Grid(tmp_path / "cells", tmp_path)  # no finished cells
    lock = tmp_path / "unsup" / "lwap-seed0.lock"
    with claim(lock) as mine:
        assert mine and read_owner(lock).pid == os.getpid()
        with claim(lock) as other:  # held by a live process (this one)
            assert not other
        assert lock.exists()
        # and run_cell skips the held cell without training anything
        assert not Cell(grid, BACKBONE, "unsup", "lwap", 0).run([])
        assert "[busy] unsup lwap seed 0: another grid process runs it" in capsys.readouterr().out
    assert not lock.exists()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    lock.write_text(gone.stdout.decode().strip(), encoding="utf-8")  # a killed grid's leftover
    with claim(lock) as mine:
        assert mine and read_owner(lock).pid == os.getpid()
    assert not lock.exists()


def test_untouched_rows_held_by_another_grid_process_are_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The untouched rows take a lock too: two processes started on one plain backbone do not both
    measure them into the same folder; the second moves on to the cells."""
    plain = tmp_path / "plain-bert"  # a plain encoder folder (no modules.json): three untouched rows
    plain.mkdir()
    (plain / "config.json").write_text("{}", encoding="utf-8")
    grid = Grid(tmp_path / "cells", tmp_path / "work")
    work = grid.work_dir(str(plain))
    with contextlib.ExitStack() as held:
        for pooling in UNTOUCHED_POOLINGS:
            assert held.enter_context(claim(work / f"{untouched_name(pooling)}.lock"))
        run_reference(grid, str(plain))  # would fail building a model from the empty config if it ran
    out = capsys.readouterr().out
    for pooling in UNTOUCHED_POOLINGS:
        assert f"[busy] untouched {pooling}: another grid process runs it" in out
    assert not any(grid.reference_file(str(plain), p).exists() for p in UNTOUCHED_POOLINGS)


def test_the_report_describes_each_attention_profile_and_the_shift_between_backbones(tmp_path: Path) -> None:
    minilm = {"layers": [0, 1, 2], "sentences": 5, "mean_attention": [0.2, 0.3, 0.5]}
    mlm = {"layers": [0, 1, 2], "sentences": 5, "mean_attention": [0.1, 0.6, 0.3]}
    for seed in range(2):
        write_cell(tmp_path / "cells/unsup", "lwap", seed, 76.0, 57.0, {"layer_attention": minilm})
    retrained = {
        "layer_attention": mlm,
        "layer_attention_source": {"cell_stsb": 70.0},
        "backbone": "../models/mlm",
    }
    write_cell(tmp_path / "cells/backbones/mlm/unsup", "lwap", 0, 73.0, 45.0, retrained)
    section = report_text(tmp_path).split("## What LWAP attends to")[1].split("## Every run")[0]
    assert "![mean attention per layer](layer_attention.png)" in section
    assert (
        "- all-MiniLM-L6-v2 · lwap (2 seeds): most on layer 2 (0.500), least on the embedding output "
        "(0.200); last layer 0.500 against a uniform 0.333." in section
    )
    assert "- mlm · lwap (1 seed retrained): most on layer 1 (0.600)" in section
    assert (
        "- `lwap` on mlm against all-MiniLM-L6-v2: layer 1 gains the most (+0.300), layer 2 loses" in section
    )
    assert "Supervised:" not in section  # no profiles in that regime: no empty heading

    shallow = {"layers": [0, 1], "sentences": 5, "mean_attention": [0.4, 0.6]}  # a backbone of another depth
    other = {"layer_attention": shallow, "backbone": "../models/small"}
    write_cell(tmp_path / "cells/backbones/small/unsup", "lwap", 0, 70.0, 40.0, other)
    section = report_text(tmp_path).split("## What LWAP attends to")[1].split("## Every run")[0]
    assert "- small · lwap (1 seed): most on layer 1 (0.600)" in section
    assert "`lwap` on mlm against all-MiniLM-L6-v2" in section and "`lwap` on small" not in section
    from lwap.compare.attention import draw_figure

    draw_figure(tmp_path / "cells", tmp_path / "attention.png")  # depths 3 and 2 on one axis
    assert (tmp_path / "attention.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_levelnorm_rows_attention_is_reported_beside_lwaps(tmp_path: Path) -> None:
    """Issue 50's pre-registration: `lwap-levelnorm`'s attention profile is read beside `lwap`'s (does
    making the levels' scales alike move the attention off the embedding output?)."""
    on_embeddings = {"layers": [0, 1, 2], "sentences": 5, "mean_attention": [0.9, 0.05, 0.05]}
    spread = {"layers": [0, 1, 2], "sentences": 5, "mean_attention": [0.3, 0.3, 0.4]}
    folder = tmp_path / "cells/backbones/mlm/sup"
    for row, profile in (("lwap", on_embeddings), ("lwap-levelnorm", spread)):
        extra = {"layer_attention": profile, "backbone": "../models/mlm", "regime": "sup"}
        write_cell(folder, row, 0, 60.0, 40.0, extra)
    section = report_text(tmp_path).split("## What LWAP attends to")[1].split("## Every run")[0]
    assert "- mlm · lwap (1 seed): most on the embedding output (0.900)" in section
    assert "- mlm · lwap-levelnorm (1 seed): most on layer 2 (0.400)" in section


def test_settings_that_differ_within_a_grid_are_flagged_and_unrecorded_cells_are_not(tmp_path: Path) -> None:
    recorded = {"torch_threads": 1, "train_precision": "bf16", "torch": "2.13.0", "device": "cpu"}
    write_cell(tmp_path / "cells/unsup", "lwap", 0, 80.0, 60.0)  # an old cell: no settings recorded
    write_cell(tmp_path / "cells/unsup", "lwap", 1, 80.2, 60.0, {"settings": recorded})
    write_cell(tmp_path / "cells/unsup", "cls", 0, 75.0, 60.0, {"settings": recorded})
    assert "Settings differ" not in report_text(tmp_path)
    write_cell(tmp_path / "cells/unsup", "cls", 1, 75.2, 60.0, {"settings": {**recorded, "torch_threads": 2}})
    text = report_text(tmp_path)
    assert "**Settings differ within this grid** (3 cells recorded theirs): torch_threads: 1, 2." in text


def committed_grid_copy(tmp_path: Path, grid: str) -> Path:
    """A copy of one committed grid folder, for changing a cell without touching the committed ones."""
    import shutil

    return Path(shutil.copytree(REPO / "benchmarks/results/compare" / grid, tmp_path / "grid"))


def shift_cell(path: Path, section: str, key: str, by: float) -> None:
    cell = json.loads(path.read_text(encoding="utf-8"))
    cell[section][key] += by
    path.write_text(json.dumps(cell), encoding="utf-8")


def test_scifact_lead_of_cls_and_lwap_over_mean_based_poolers_is_read_off_the_cells(tmp_path: Path) -> None:
    from lwap.compare.cells import load_cells
    from lwap.compare.summaries import scifact_cls_against_mean

    folder = committed_grid_copy(tmp_path, "backbones/minilm-l6-mlm/sup")
    line = scifact_cls_against_mean(load_cells(folder))[0]
    assert "`cls` and `lwap` lead every mean-based pooler (`mean`, `first_last_avg`, `last2_avg`)" in line
    assert "by at least 9.00 nDCG@10 points; the smallest margin is `lwap` − `mean` = +9.00" in line
    assert "(42.69 against 33.69)" in line
    shift_cell(folder / "mean-seed0.json", "scores", "scifact_ndcg@10", 3.0)  # `mean`'s average +1.00
    assert "by at least 8.00 nDCG@10 points" in scifact_cls_against_mean(load_cells(folder))[0]
    shift_cell(folder / "mean-seed0.json", "scores", "scifact_ndcg@10", 30.0)
    line = scifact_cls_against_mean(load_cells(folder))[0]
    assert "`cls` and `lwap` do not both lead every mean-based pooler" in line
    assert "the smallest margin is `lwap` − `mean` = -2.00" in line
    for seed in (0, 1, 2):
        (folder / f"last2_avg-seed{seed}.json").unlink()
    assert scifact_cls_against_mean(load_cells(folder)) == []  # a mean-based pooler missing: no sentence


def test_dev_moves_of_the_rows_starting_where_mean_starts_are_read_off_the_cells(tmp_path: Path) -> None:
    from lwap.compare.cells import load_cells
    from lwap.compare.summaries import dev_from_the_backbone

    folder = committed_grid_copy(tmp_path, "sup")
    line = dev_from_the_backbone(load_cells(folder))[0]
    assert ": `mean` 86.73 → 86.74 (+0.01), `lwap-native` 86.73 → 86.71 (-0.01), `lwap-all` 86.73" in line
    assert "→ 86.69 (-0.04); the largest move is `lwap-all`'s, -0.04 points." in line
    # a row whose step-0 model is not `mean`'s drops out; a larger move is the one named
    shift_cell(folder / "lwap-native-seed0.json", "train", "dev_spearman_before", -0.1)
    shift_cell(folder / "mean-seed0.json", "train", "best_dev_spearman", 0.03)  # `mean`'s average +1.00
    line = dev_from_the_backbone(load_cells(folder))[0]
    assert "`lwap-native`" not in line
    assert "`mean` 86.73 → 87.74 (+1.01)" in line
    assert "the largest move is `mean`'s, +1.01 points." in line
    shift_cell(folder / "lwap-all-seed0.json", "train", "dev_spearman_before", -0.1)
    assert dev_from_the_backbone(load_cells(folder)) == []  # `mean` alone: its table row says it


def test_a_users_own_backbone_is_reported_with_nothing_of_this_repositorys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`lwap compare report` on a user's own cells (another backbone, in a folder of their own): the
    grids, verdicts and every run, worded for `lwap compare`; none of the repository's notes, gates,
    overview, decomposition or re-runs, even with folders of those names beside the cells."""
    from lwap.cli import main

    results = tmp_path / "my-compare"
    grid = results / "backbones" / "my-encoder"
    write_untouched(grid, "mean", 60.0, "../models/my-encoder")
    for seed in range(3):
        for pooler, avg in (("lwap", 70.0), ("cls", 65.0), ("mean", 72.0), ("lwap-attn", 71.0)):
            write_cell(
                grid / "unsup", pooler, seed, avg + 0.1 * seed, 40.0, {"backbone": "../models/my-encoder"}
            )
    choice = {"rule": "gate", "backbone": "../models/my-encoder", "regimes": {"unsup": {"passed": False}}}
    (results / "budget" / "my-encoder").mkdir(parents=True)  # as the repository's gates lay them out
    (results / "budget" / "my-encoder" / "choice.json").write_text(json.dumps(choice), encoding="utf-8")
    write_cell(results / "reruns" / "my-encoder", "lwap", 0, 70.0, 40.0)
    out = tmp_path / "report.md"
    assert main(["compare", "report", "--results", str(results), "--output", str(out)]) == 0
    assert capsys.readouterr().out == f"wrote {out}\n"
    text = out.read_text(encoding="utf-8")
    assert f"Generated by `lwap compare report` from the cell files in\n`{results}/`" in text
    assert "Other backbones in this report (own sections below, own budgets): `../models/my-encoder`." in text
    assert "## my-encoder: Unsupervised SimCSE" in text and "| `lwap-attn` | 3 | 71.10 ± 0.10 |" in text
    assert "`lwap` − `cls` = +5.00 (**larger than the seed spread**" in text
    assert "| my-encoder | unsup | `mean` | 2 |" in text  # every run listed
    assert "_No trained cells of this regime yet: the rows above are the untouched backbone._" in text
    repository = ("benchmarks", "RESULTS.md", "../shared", "bert-mlm-4l256", "minilm-l6-mlm", "the gate",
                  "Decomposition", "Does `lwap` beat", "What a re-run reproduces", "ATTENTION_AT_INIT",
                  "issue", "compare_poolers")  # fmt: skip
    assert [phrase for phrase in repository if phrase in text] == []
    figure = tmp_path / "figures" / "attention.png"  # and `figure` draws from the same cells
    assert main(["compare", "figure", "--results", str(results), "--output", str(figure)]) == 0
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_supervised_grid_reads_lwap_against_simcse_with_its_mlp(tmp_path: Path) -> None:
    """With `cls-mlp` cells (supervised SimCSE's MLP kept at inference) the paper's baseline is that row,
    and the grid's `cls` is named for what it drops."""
    for seed in range(3):
        for row, avg in (("lwap", 80.0), ("cls", 75.0), ("cls-mlp", 79.0 + seed)):
            write_cell(tmp_path / "cells/sup", row, seed, avg, 60.0, {"regime": "sup"})
    text = report_text(tmp_path)
    assert "| `cls` ([CLS] without the MLP) | 3 | 75.00 ± 0.00 |" in text
    assert "| `cls-mlp` | 3 | 80.00 ± 1.00 |" in text
    assert "- Against `cls-mlp` (the paper's baseline), Avg. (all): `lwap` − `cls-mlp` = +0.00" in text
    assert "SimCSE's supervised baseline (the row the paper's claim is read against)" in text
    assert "`cls-mlp` 3/3), `cls` plus:" in text and "- `cls-mlp`: `model.mlp_at_inference=true`" in text
    assert "| Avg. (all) | `cls-mlp` | +0.00 |" in text and "| Avg. (all) | `cls` | +5.00 |" in text
