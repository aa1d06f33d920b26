"""benchmarks/elastic/frontier*.py: the budgets, one encoding shared by every depth and dimension, the
AdaptiveLayerLoss anchor, the report's paired statistics, and (slow) the pipeline end to end on the tiny
BERT with a hand-made data mirror."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import REPO

from benchmarks.elastic.frontier_cells import SharedForward, evaluate_depth
from benchmarks.elastic.frontier_grid import GRIDS, Grid
from benchmarks.elastic.frontier_report import holm, paired, verdict_table
from lwap import build_model


def test_budgets_are_the_comparison_grids_plus_the_row() -> None:
    minilm = next(g for g in GRIDS if g.name == "all-MiniLM-L6-v2" and g.regime == "unsup")
    assert minilm.config == "configs/compare/unsup-minilm.yaml"
    assert minilm.overrides("lwap", "elastic", 1) == [
        "model.pooling=lwap",
        "training.seed=1",
        "model.lwap_start=native",
        "objective.depths=[1, 2, 3, 4, 5, 6]",
    ]
    assert minilm.overrides("mean", "ordinary", 0) == ["model.pooling=mean", "training.seed=0"]
    prenorm = next(g for g in GRIDS if g.name == "bert-prenorm-4l256-sentences")
    assert (prenorm.regime, prenorm.layers, prenorm.dims[0]) == ("sup", 4, 256)
    sets = prenorm.overrides("first_last_avg", "adaptive", 2)
    assert sets[2:5] == [
        "model.backbone=benchmarks/backbones/bert-prenorm-4l256-sentences",
        "training.learning_rate=3e-4",
        "training.epochs=3",
    ]
    # the committed comparison cells of that grid ran with the same budget
    from lwap.compare.cells import read

    committed = read(
        REPO / "benchmarks/results/compare/backbones/bert-prenorm-4l256-sentences/sup/mean-seed0.json"
    )
    assert committed["overrides"][2:] == sets[2:6]
    assert {g.name for g in GRIDS} == {"all-MiniLM-L6-v2", "minilm-l6-mlm", "bert-prenorm-4l256-sentences"}


@pytest.mark.parametrize(("backbone", "pooling"), [("bert", "lwap"), ("bert", "mean"), ("prenorm", "lwap")])
def test_depths_and_dimensions_share_one_encoding_and_score_as_fresh_models(
    tiny_bert: Path, data_mirror: Path, tmp_path: Path, backbone: str, pooling: str
) -> None:
    """One full-depth forward per batch serves every depth (SharedForward): each depth's scores, at each
    dimension, and its attention profile are those of a freshly truncated model evaluated alone (bf16, as
    the frontier evaluates; a pre-LayerNorm backbone's final LayerNorm on layer k included)."""
    from conftest import make_tiny_prenorm

    from lwap.compare.cells import layer_attention, scores
    from lwap.eval.api import evaluate_model
    from lwap.truncate import truncate_model

    folder = tiny_bert if backbone == "bert" else make_tiny_prenorm(tmp_path / "prenorm")
    model = build_model(str(folder), pooling).eval()
    shared = SharedForward(model, [1, 2, 3, 4] if backbone == "prenorm" else [1, 2, 3, 4, 5])
    got = {depth: evaluate_depth(model, depth, (32, 12), ("stsb", "scifact"), 32, shared) for depth in (2, 3)}
    assert got[3]["reused_batches"] > got[2]["reused_batches"] > 0  # depth 3 encodes nothing anew
    for depth, found in got.items():
        small = truncate_model(model, depth).eval()
        for dim in (32, 12):
            small.truncate_dim = None if dim == 32 else dim
            fresh = evaluate_model(small, ("stsb", "scifact"), precision="bf16", max_seq_length=32)
            assert found["scores"][str(dim)] == pytest.approx(scores(fresh), abs=1e-9), (depth, dim)
            if dim == 32 and pooling == "lwap":
                assert {"layer_attention": found["layer_attention"]} == layer_attention(fresh)
                assert len(found["layer_attention"]["mean_attention"]) == depth + 1
    assert got[2]["scores"]["12"]["stsb"] != got[2]["scores"]["32"]["stsb"]
    assert got[2]["scores"]["32"] != got[3]["scores"]["32"]


def test_shared_forward_refuses_training_mode(tiny_bert: Path) -> None:
    model = build_model(str(tiny_bert), "mean").train()
    with pytest.raises(ValueError, match="eval-mode"):
        SharedForward(model, [1])


def test_anchor_trains_with_adaptive_layer_loss_on_two_columns(tmp_path: Path, tiny_bert: Path) -> None:
    from sentence_transformers.sentence_transformer.losses import AdaptiveLayerLoss
    from test_train_run import tiny_config

    from benchmarks.elastic.anchor_train import TwoColumns, anchored
    from lwap.train import load_config
    from lwap.train.trainer import build_trainer, training_inputs

    config = load_config(tiny_config(tmp_path, tiny_bert, training={"max_steps": 2}), ["model.pooling=mean"])
    out = tmp_path / "out"
    built = anchored(build_trainer)(config, out, inputs=training_inputs(config, out, checkpoints=False))
    assert isinstance(built.trainer.loss, TwoColumns) and isinstance(
        built.trainer.loss.loss, AdaptiveLayerLoss
    )
    seen: list[int] = []
    built.trainer.loss.loss.loss.register_forward_pre_hook(lambda _, args: seen.append(len(args[0])))
    before = [p.detach().clone() for p in built.model.parameters() if p.requires_grad]
    built.trainer.train()
    assert seen and set(seen) == {2}  # every term sees two columns (their own feature dicts)
    after = [p.detach() for p in built.model.parameters() if p.requires_grad]
    assert any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))


def fake_cell(value_by_depth: dict[int, float]) -> dict:
    return {
        "dims": [32],
        "depths": {
            str(d): {"scores": {"32": {"avg_all": v, "scifact_ndcg@10": v / 2}}}
            for d, v in value_by_depth.items()
        },
    }


def test_report_reads_paired_differences_with_holm() -> None:
    """The statistics of the pre-registered reading, on cells made up for the test (not results)."""
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    grid = Grid("tiny", "b", "unsup", 2, (32,))
    cells = {
        "lwap-elastic": {s: fake_cell({1: 50.0 + s + 3.0 + 0.1 * s * s, 2: 60.0 + s}) for s in (0, 1, 2)},
        "mean-elastic": {s: fake_cell({1: 50.0 + s, 2: 60.0 + s + 0.5}) for s in (0, 1, 2)},
    }
    diffs, p = paired(cells, ("lwap-elastic", "mean-elastic"), 1, "avg_all")
    assert diffs == pytest.approx([3.0, 3.1, 3.4]) and 0 < p < 0.01
    table = verdict_table(cells, grid, ("lwap-elastic", "mean-elastic"))
    assert len(table) == 4  # header, rule, depth 1 × two metrics (depth 2 = L is no question)
    assert table[2].startswith("| 1 | Avg. (all) | +3.00, +3.10, +3.40 | +3.17 ± 0.21 | 3/3 |")
    assert table[2].endswith("**above** |")


def test_cells_of_another_setup_or_resumed_are_named_and_their_readings_marked() -> None:
    """Issue 66: the cells that ran on another CPU or resumed are named in their grid's section, and a
    reading whose two cells differ at some seed carries † with the footnote saying how; two cells on one
    other setup at the same seed are one setup (no mark)."""
    from benchmarks.elastic.frontier_setups import crossed, setups_lines

    grid = Grid("tiny", "b", "unsup", 2, (32,))
    intel = {"cpu": "Intel", "torch_threads": 2, "transformers": "5.25.0"}
    cells = {
        row: {s: {**fake_cell({1: 50.0 + s + 3.0 * (row == "lwap-elastic"), 2: 60.0}), "settings": intel}
              for s in (0, 1, 2)}
        for row in ("lwap-elastic", "mean-elastic")
    }  # fmt: skip
    assert setups_lines(cells) == [] and crossed(cells, ("lwap-elastic", "mean-elastic")) == []
    cells["lwap-elastic"][0]["settings"] = {**intel, "cpu": "AMD EPYC"}
    cells["mean-elastic"][2]["train"] = {"resumed_from": "checkpoint-10"}
    said = setups_lines(cells)[0]
    assert "1 of 6 cells ran on another setup than the other 5 (those: cpu Intel, 2 threads" in said
    assert (
        "`lwap-elastic` seed 0 (cpu AMD EPYC); 1 resumed from a checkpoint after a stop: `mean-elastic` "
        "seed 2" in said
    )
    table = verdict_table(cells, grid, ("lwap-elastic", "mean-elastic"))
    assert table[2].endswith("**above**† |")
    assert table[-1] == (
        "† Cells of the two rows made on different setups at the same seed: `lwap-elastic` − `mean-elastic`: "
        "cpu AMD EPYC against Intel (seed 0), a resumed cell (seed 2). The difference may hold some of the "
        "setups' own."
    )
    cells["mean-elastic"][0]["settings"] = {**intel, "cpu": "AMD EPYC"}  # both on the other CPU at seed 0
    assert crossed(cells, ("lwap-elastic", "mean-elastic")) == ["a resumed cell (seed 2)"]


def test_results_section_reads_the_primary_question_per_grid(tmp_path: Path) -> None:
    """docs/RESULTS.md's row per grid: the cells' count, the mean d at each k < L, the verdicts."""
    import json

    from benchmarks.elastic.frontier_report import results_section

    grid = Grid("tiny", "b", "unsup", 3, (32,))
    folder = tmp_path / "tiny" / "unsup"
    folder.mkdir(parents=True)
    for seed in (0, 1, 2):
        lwap = fake_cell({1: 50.0 + seed + 3.0 + 0.1 * seed * seed, 2: 60.0 + seed * 2, 3: 70.0})
        mean = fake_cell({1: 50.0 + seed, 2: 60.0 + seed, 3: 70.0})
        for row, cell in (("lwap-elastic", lwap), ("mean-elastic", mean)):
            (folder / f"{row}-seed{seed}.json").write_text(json.dumps({**cell, "row": row, "seed": seed}))
    lines = results_section(tmp_path, "report.md", None, (grid,))
    row = next(line for line in lines if line.startswith("| tiny, unsup |"))
    # depth 1: +3.17 in all three seeds (above after Holm); depth 2: 0, +1, +2 (level)
    assert row.startswith("| tiny, unsup | 6 of 27 | 3 | +3.17, +1.00 | above at 1; level at 2 |")
    # k ≤ L/2 = 1.5: depth 1 is above on both metrics, so the pre-registered answer is yes at 1
    assert row.endswith("| yes, at k = 1 |")
    assert "[the frontier's report](report.md)" in "\n".join(lines)
    (folder / "mean-elastic-seed2.json").unlink()
    row = next(line for line in results_section(tmp_path, "r.md", None, (grid,)) if "| tiny, unsup |" in line)
    assert row.endswith("| pending (2 of 3 seeds) |")


def test_secondary_readings_and_the_frontier_points() -> None:
    """COMPARE.md's secondary readings 2-4 at every depth 1..L, each pair its own Holm family, and
    reading 5's frontier: a row at a depth is on it unless another is both faster and better."""
    from benchmarks.elastic.frontier_report import frontier_points, secondary_table

    grid = Grid("tiny", "b", "unsup", 2, (32,), rows=(("lwap", "elastic"), ("lwap", "ordinary")))
    cells = {
        "lwap-elastic": {s: fake_cell({1: 55.0 + s + 0.1 * s * s, 2: 60.0 + s}) for s in (0, 1, 2)},
        "lwap-ordinary": {s: fake_cell({1: 50.0 + s, 2: 60.0 + s}) for s in (0, 1, 2)},
    }
    table = secondary_table(cells, grid, {"avg_all": "Avg. (all)"})
    row = next(line for line in table if line.startswith("| `lwap-elastic` − `lwap-ordinary` |"))
    # depth 1: +5.00, +5.10, +5.40 (above); depth 2 = L is read too: 0 in every seed (level)
    assert row.startswith("| `lwap-elastic` − `lwap-ordinary` | Avg. (all) | +5.17, +0.00 |")
    assert row.endswith("| above at 1; level at 2 |")
    speed = {
        "poolers": {"lwap": {"1": {"sentences_per_second": 200.0}, "2": {"sentences_per_second": 100.0}}}
    }
    # means: elastic 56.2 at depth 1, 61 at 2; ordinary 51 at 1, 61 at 2. Depth 1 is the fastest, so
    # nothing beats it on speed; depth 2 is the best, so nothing beats it on quality: all on the frontier
    assert frontier_points(cells, grid, speed, "avg_all") == {"lwap-elastic": [1, 2], "lwap-ordinary": [1, 2]}
    speed["poolers"]["lwap"]["1"]["sentences_per_second"] = 50.0  # depth 1 now slower: 2 beats it
    assert frontier_points(cells, grid, speed, "avg_all") == {"lwap-elastic": [2], "lwap-ordinary": [2]}


def test_shallow_answer_needs_avg_above_and_scifact_not_below() -> None:
    """COMPARE.md's answer: above on Avg. (all) at some k ≤ L/2 and not below on SciFact at that k."""
    from benchmarks.elastic.frontier_report import Reading, shallow_answer

    grid = Grid("tiny", "b", "unsup", 4, (32,))  # k < L: 1, 2, 3; k ≤ L/2: 1, 2
    level = {
        (d, m): Reading(d, m, [1.0] * 3, 0.5, 0.5) for d in (1, 2, 3) for m in ("avg_all", "scifact_ndcg@10")
    }

    def found(**significant: float) -> list[Reading]:
        """`level` with the named readings (e.g. avg_all_2=+1) significant in the given direction."""
        changed = dict(level)
        for name, sign in significant.items():
            metric, depth = name.rsplit("_", 1)
            key = (int(depth), "scifact_ndcg@10" if metric == "scifact" else metric)
            changed[key] = Reading(*key, [sign] * 3, 0.001, 0.001)
        return list(changed.values())

    assert shallow_answer(found(), grid) == "no (k ≤ 2)"
    assert shallow_answer(found(avg_all_3=1), grid) == "no (k ≤ 2)"  # depth 3 > L/2 does not count
    assert shallow_answer(found(avg_all_2=1, scifact_2=-1), grid) == "no (k ≤ 2)"
    assert shallow_answer(found(avg_all_2=1), grid) == "yes, at k = 2"
    assert shallow_answer(found(avg_all_1=1, avg_all_2=1, scifact_1=1), grid) == "yes, at k = 1, 2"
    assert shallow_answer(found()[1:], grid) == "pending (not read: Avg. (all) at 1)"


def test_estimate_reads_a_grids_own_cells_once_it_has_some(tmp_path: Path) -> None:
    """The hours left: a grid's own cells' median (a resumed cell's time left out), else the comparison
    grid's cells."""
    import json

    from benchmarks.elastic.frontier import comparison_seconds, estimate

    folder = tmp_path / "all-MiniLM-L6-v2" / "unsup"
    folder.mkdir(parents=True)
    for name, train, resumed in (("a", 500.0, None), ("b", 700.0, None), ("c", 10.0, "checkpoint-50")):
        cell = {"train_wall_seconds": train, "eval_wall_seconds": 100.0, "train": {"resumed_from": resumed}}
        (folder / f"{name}.json").write_text(json.dumps(cell))
    lines = estimate(tmp_path)
    minilm = next(line for line in lines if line.startswith("| all-MiniLM-L6-v2/unsup "))
    assert (
        minilm == "| all-MiniLM-L6-v2/unsup | 3 | 700 | 2 frontier cells (median) | 24 | 4.7 |"
    )  # 700 s × 24
    # the other grids: their comparison cells, times the ratio the measured grid shows
    ratio = 700 / comparison_seconds(GRIDS[0])[0]
    other = next(line for line in lines if line.startswith("| minilm-l6-mlm/sup "))
    assert f"comparison cells (median) × {ratio:.2f} | 27 |" in other


def test_step_cost_times_the_trainers_loss(tmp_path: Path, tiny_bert: Path) -> None:
    """benchmarks/elastic/step_cost.py's timed step is `lwap train`'s: its trainer, batch and loss."""
    import yaml

    from benchmarks.elastic.step_cost import time_steps

    config = tmp_path / "tiny.yaml"
    raw = {
        "output": {"dir": str(tmp_path / "run")},
        "model": {"backbone": str(tiny_bert), "pooling": "lwap", "max_seq_length": 24},
        "data": {"train": "$LWAP_DATA_DIR/wiki/wiki_sentences_1m.txt.gz", "max_examples": 32},
        "objective": {"name": "unsup_simcse"},
        "training": {"per_device_batch_size": 8, "progress_bar": False},
    }
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    seconds = time_steps(str(config), ["objective.depths=[2, 5]"], tmp_path / "run", steps=2)
    assert len(seconds) == 2 and all(s > 0 for s in seconds)


@pytest.mark.slow
def test_pipeline_end_to_end_on_a_tiny_grid(tmp_path: Path, tiny_bert: Path, data_mirror: Path) -> None:
    """Train (lwap train, the anchor) and evaluate three rows at every depth and dimension, resume, time
    the encoding, report: what `frontier.py run --smoke` does with the real backbones."""
    from benchmarks.elastic.frontier_cells import run_grid
    from benchmarks.elastic.frontier_report import draw_figure, report_text
    from benchmarks.elastic.frontier_speed import measure
    from lwap.checks.files import read_json_object as read

    grid = Grid(
        "tiny",
        str(tiny_bert),
        "unsup",
        5,
        (32, 16),
        sets=("model.max_seq_length=24",),
        rows=(("lwap", "elastic"), ("mean", "ordinary"), ("mean", "adaptive")),
    )
    results, work = tmp_path / "results", tmp_path / "work"
    assert run_grid(grid, [0], results, work, smoke=True, rows=None) == 3
    for pooler, mode in grid.rows:
        cell = read(grid.cell_file(results, pooler, mode, 0))
        assert sorted(cell["depths"], key=int) == ["1", "2", "3", "4", "5"]
        assert (
            set(cell["depths"]["1"]["scores"]) == {"32", "16"}
            and "stsb" in cell["depths"]["1"]["scores"]["32"]
        )
    assert (work / "tiny/unsup/mean-adaptive-seed0.log").read_text().count(
        "benchmarks.elastic.anchor_train"
    ) == 1
    assert not (work / "tiny/unsup/mean-adaptive-seed0/checkpoints").exists()  # done: only the model kept
    assert (work / "tiny/unsup/mean-adaptive-seed0/model/modules.json").is_file()
    assert run_grid(grid, [0], results, work, smoke=True, rows=None) == 0  # done cells are not run again
    speed = measure(grid, results / "speed" / "tiny.json", count=40, repeats=1, max_length=24)
    assert read(speed)["poolers"]["mean"]["5"]["sentences_per_second"] > 0
    assert draw_figure(results, results / "speed", tmp_path / "figure.png", grids=(grid,))
    text = report_text(results, results / "speed", "figure.png", grids=(grid,))
    assert "## tiny, unsupervised" in text and "`lwap-elastic`" in text
