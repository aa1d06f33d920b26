"""`lwap compare report` from cell files: mean ± std per pooler, paired verdicts in four words, every run,
settings that differ within a grid, rows of a user's own rows file, and a user's own backbone reported
with nothing of this repository's in it (the repository's own report, docs/RESULTS.md, with its study's
rows and verdicts: tests/test_repository_report.py)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

import pytest

from lwap.checks.locking import claim, read_owner
from lwap.compare.grid import BACKBONE, Grid
from lwap.compare.report import Report, write_report
from lwap.compare.rows import load_rows
from lwap.compare.runner import Cell, restart_flags, run_reference, untouched_name
from lwap.registry import POOLINGS

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


def test_report_states_paired_verdicts_in_four_words_and_lists_every_run(tmp_path: Path) -> None:
    for seed, (lwap, cls, mean) in enumerate([(80.0, 75.0, 79.9), (80.2, 75.2, 80.3), (80.1, 75.1, 79.8)]):
        write_cell(tmp_path / "cells/unsup", "lwap", seed, lwap, 60.0 + seed)
        write_cell(tmp_path / "cells/unsup", "cls", seed, cls, 60.0 + seed)
        if seed < 2:  # an unfinished pooler: two of three seeds
            write_cell(tmp_path / "cells/unsup", "mean", seed, mean, 60.0 + seed)
    out = tmp_path / "RESULTS.md"
    write_report(Report(tmp_path / "cells"), out)
    text = out.read_text(encoding="utf-8")

    assert f"Grid: 8 of {3 * len(POOLINGS)} planned cells ({len(POOLINGS)} poolers" in text  # the registry's
    assert "| `lwap` | 3 | 80.10 ± 0.10 |" in text
    assert "| `cls` | 3 | 75.10 ± 0.10 |" in text
    # paired by seed, the 95 % t-interval of mean d and its word (margin 0.5 for STS, 1.0 for SciFact);
    # Holm over the table's 9 comparisons beside. d = 5.00 at every seed: no spread, the interval is 5.00
    assert (
        "| Avg. (all) | `cls` | +5.00 ± 0.00 | 3/3 | [+5.00, +5.00] | **above** | < 0.001 | < 0.001 |" in text
    )
    # d = 0 at every seed: inside ±1.0, so equivalent (where the old rule said only "level")
    assert (
        "| SciFact nDCG@10 | `cls` | +0.00 ± 0.00 | 0/3 | [+0.00, +0.00] | **equivalent** | 1.000 | 1.000 |"
        in text
    )
    # two seeds in common, d = +0.1, −0.1: sd 0.14, half-width t(0.975, 1) 12.71 × 0.14/√2 = 1.27, wider
    # than the margin on both sides: undecided, not "no difference"
    assert "| Avg. (all) | `mean` | +0.00 ± 0.14 | 0/2 | [-1.27, +1.27] | undecided | 1.000 | 1.000 |" in text
    # unpaired, `lwap`'s third seed would move the mean; paired, the two seeds both rows have are equal
    assert "| SciFact nDCG@10 | `mean` | +0.00 ± 0.00 | 0/2 | [+0.00, +0.00] | **equivalent** |" in text
    assert "Avg. (all): `lwap` − `cls` = +5.00 [+5.00, +5.00]: **above** (decided in the differences" in text
    assert (
        "SciFact nDCG@10: `lwap` − `cls` = +0.00 [+0.00, +0.00]: **equivalent** (decided in the differences"
        in text
    )
    assert "_No cells of the `sup` regime yet._" in text
    write_cell(tmp_path / "cells/unsup", "weighted", 0, 70.0, 50.0)  # one seed: no spread to judge by
    write_report(Report(tmp_path / "cells"), out)
    text = out.read_text(encoding="utf-8")
    assert "| `weighted` | 1 | 70.00 |" in text
    assert "| Avg. (all) | `weighted` | +10.00 ± 0.00 | 1/1 | – | one seed | – | – |" in text
    assert text.count("| unsup | `") == 9  # every run appears in the last table


def report_text(tmp_path: Path, make_report: type[Report] = Report) -> str:
    """Run `report` (the generic one, or `make_report`) into tmp_path and return what it wrote."""
    out = tmp_path / "RESULTS.md"
    write_report(make_report(tmp_path / "cells"), out)
    return out.read_text(encoding="utf-8")


def write_rows(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


MY_ROWS = """\
planned: [lwap, mean]
regime_values: {warmup: {unsup: 50, sup: 33}}
rows:
  lwap-latent-attn: {pooling: lwap, set: [model.lwap_queries=latent, model.lwap_output=attention]}
  lwap-meanq: {pooling: lwap, set: [model.lwap_queries=mean, "training.head_warmup_steps={warmup}"]}
groups:
  - {name: mine, title: My LWAP variants, rows: [lwap-meanq, lwap-latent-attn]}
"""


def test_a_users_rows_file_gives_rows_a_legend_and_its_planned_grid(tmp_path: Path) -> None:
    """Rows of a user's own file (`--rows`): a table row each, the legend of what each adds (the regime's
    value filled in), the planned grid counted from the file; `lwap` with settings is not one of the rows
    `lwap` is compared against."""
    for seed in range(3):
        write_cell(tmp_path / "cells/unsup", "mean", seed, 79.5 + 0.1 * seed, 65.0)
        write_cell(tmp_path / "cells/unsup", "lwap", seed, 76.0, 57.0)
        write_cell(tmp_path / "cells/unsup", "lwap-latent-attn", seed, 81.0 + 0.1 * seed, 66.0)
    write_cell(tmp_path / "cells/unsup", "lwap-meanq", 0, 77.0, 58.0)
    rows = load_rows(write_rows(tmp_path / "rows.yaml", MY_ROWS))
    text = Report(tmp_path / "cells", rows=rows).text()
    assert "Grid: 6 of 6 planned cells (2 poolers × seeds 0, 1, 2)" in text  # added rows are not the grid
    assert "| `lwap-latent-attn` | 3 | 81.10 ± 0.10 |" in text and "| `lwap-meanq` | 1 | 77.00 |" in text
    assert text.index("| `lwap-latent-attn` | 3 |") < text.index("| `lwap-meanq` | 1 |")  # the file's order
    legend = "My LWAP variants (seeds run: `lwap-latent-attn` 3/3, `lwap-meanq` 1/3), `lwap` plus:"
    assert legend in text
    assert "- `lwap-latent-attn`: `model.lwap_queries=latent`, `model.lwap_output=attention`" in text
    assert "- `lwap-meanq`: `model.lwap_queries=mean`, `training.head_warmup_steps=50`" in text
    assert "`lwap` − `lwap-meanq`" not in text and "| Avg. (all) | `mean` |" in text
    # without the file the same cells are rows of their own, named by their files, after the registry's
    plain = Report(tmp_path / "cells").text()
    assert "My LWAP variants" not in plain and "| `lwap-meanq` | 1 | 77.00 |" in plain


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
    assert "baseline), Avg. (wmean): `lwap` − `cls` = +1.00 [+1.00, +1.00]: **above** (decided in" in section
    assert "(the paper's baseline), Avg. (all): `lwap` − `cls` = +1.00 [+1.00, +1.00]: **above**" in section
    # SciFact 45 against 40 at every seed
    assert "SciFact nDCG@10: `lwap` − `cls` = +5.00 [+5.00, +5.00]: **above**" in section
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
    untouched = tuple(load_rows().untouched)  # the shipped default's: mean, SimCSE's [CLS] and first-last
    assert len(untouched) == 3
    with contextlib.ExitStack() as held:
        for pooling in untouched:
            assert held.enter_context(claim(work / f"{untouched_name(pooling)}.lock"))
        run_reference(grid, str(plain))  # would fail building a model from the empty config if it ran
    out = capsys.readouterr().out
    for pooling in untouched:
        assert f"[busy] untouched {pooling}: another grid process runs it" in out
    assert not any(grid.reference_file(str(plain), p).exists() for p in untouched)


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


def test_settings_that_differ_within_a_grid_are_flagged_and_unrecorded_cells_are_not(tmp_path: Path) -> None:
    recorded = {"torch_threads": 1, "train_precision": "bf16", "torch": "2.13.0", "device": "cpu"}
    write_cell(tmp_path / "cells/unsup", "lwap", 0, 80.0, 60.0)  # an old cell: no settings recorded
    write_cell(tmp_path / "cells/unsup", "lwap", 1, 80.2, 60.0, {"settings": recorded})
    write_cell(tmp_path / "cells/unsup", "cls", 0, 75.0, 60.0, {"settings": recorded})
    assert "Settings differ" not in report_text(tmp_path)
    write_cell(tmp_path / "cells/unsup", "cls", 1, 75.2, 60.0, {"settings": {**recorded, "torch_threads": 2}})
    text = report_text(tmp_path)
    assert "**Settings differ within this grid** (3 cells recorded theirs): torch_threads: 1, 2." in text
    # the comparison whose paired cells cross setups is marked where it is read, and the footnote says how
    assert "| Avg. (all) | `cls` | +5.00 ± 0.00 | 2/2 | [+5.00, +5.00] | **above**† |" in text
    assert "`lwap` − `cls` = +5.00 [+5.00, +5.00]: **above**† (decided in" in text
    assert (
        "† Cells of the two rows made on different setups at the same seed (their recorded `settings`): "
        "`lwap` − `cls`: torch_threads 1 against 2 (seed 1), settings recorded on one side only (seed 0)."
        in text
    )
    summary = {"steps": 200, "dev_spearman_before": 0.8, "best_dev_spearman": 0.84, "best_step": 150}
    resumed = {"settings": recorded, "train": {**summary, "resumed_from": "work/mean-seed1/checkpoint-100"}}
    write_cell(tmp_path / "cells/unsup", "mean", 1, 80.0, 60.0, resumed)
    text = report_text(tmp_path)
    assert "| Avg. (all) | `mean` | +0.20 ± 0.00 | 1/1 | – | one seed | – | – |" in text  # one seed: no word
    assert "; `lwap` − `mean`: a resumed cell (seed 1)." in text


def committed_grid_copy(tmp_path: Path, grid: str) -> Path:
    """A copy of one committed grid folder, for changing a cell without touching the committed ones."""
    import shutil

    return Path(shutil.copytree(REPO / "benchmarks/results/compare" / grid, tmp_path / "grid"))


def shift_cell(path: Path, section: str, key: str, by: float) -> None:
    cell = json.loads(path.read_text(encoding="utf-8"))
    cell[section][key] += by
    path.write_text(json.dumps(cell), encoding="utf-8")


def test_dev_moves_of_the_rows_starting_where_mean_starts_are_read_off_the_cells(tmp_path: Path) -> None:
    from lwap.compare.cells import load_cells
    from lwap.compare.summaries import dev_from_the_backbone

    folder = committed_grid_copy(tmp_path, "sup")
    order = load_rows("study").order  # the repository's rows, in its report's order
    line = dev_from_the_backbone(load_cells(folder, order))[0]
    assert ": `mean` 86.73 → 86.74 (+0.01), `lwap-native` 86.73 → 86.71 (-0.01), `lwap-all` 86.73" in line
    assert "→ 86.69 (-0.04); the largest move is `lwap-all`'s, -0.04 points." in line
    # a row whose step-0 model is not `mean`'s drops out; a larger move is the one named
    shift_cell(folder / "lwap-native-seed0.json", "train", "dev_spearman_before", -0.1)
    shift_cell(folder / "mean-seed0.json", "train", "best_dev_spearman", 0.03)  # `mean`'s average +1.00
    line = dev_from_the_backbone(load_cells(folder, order))[0]
    assert "`lwap-native`" not in line
    assert "`mean` 86.73 → 87.74 (+1.01)" in line
    assert "the largest move is `mean`'s, +1.01 points." in line
    shift_cell(folder / "lwap-all-seed0.json", "train", "dev_spearman_before", -0.1)
    assert dev_from_the_backbone(load_cells(folder, order)) == []  # `mean` alone: its table row says it


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
    rows = write_rows(
        tmp_path / "my-rows.yaml", "rows: {lwap-attn: {pooling: lwap, set: [model.lwap_output=attention]}}"
    )
    out = tmp_path / "report.md"
    assert (
        main(["compare", "report", "--results", str(results), "--output", str(out), "--rows", str(rows)]) == 0
    )
    assert capsys.readouterr().out == f"wrote {out}\n"
    text = out.read_text(encoding="utf-8")
    assert f"Generated by `lwap compare report` from the cell files in\n`{results}/`" in text
    assert "Other backbones in this report (own sections below, own budgets): `../models/my-encoder`." in text
    assert "## my-encoder: Unsupervised SimCSE" in text and "| `lwap-attn` | 3 | 71.10 ± 0.10 |" in text
    assert "Rows with settings of their own (seeds run: `lwap-attn` 3/3), `lwap` plus:" in text
    assert "`lwap` − `cls` = +5.00 [+5.00, +5.00]: **above**" in text
    assert "| my-encoder | unsup | `mean` | 2 |" in text  # every run listed
    assert "_No trained cells of this regime yet: the rows above are the untouched backbone._" in text
    repository = ("benchmarks", "RESULTS.md", "../shared", "bert-mlm-4l256", "minilm-l6-mlm", "the gate",
                  "Decomposition", "Does `lwap` beat", "What a re-run reproduces", "ATTENTION_AT_INIT",
                  "issue", "compare_poolers")  # fmt: skip
    assert [phrase for phrase in repository if phrase in text] == []
    figure = tmp_path / "figures" / "attention.png"  # and `figure` draws from the same cells
    assert main(["compare", "figure", "--results", str(results), "--output", str(figure)]) == 0
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
