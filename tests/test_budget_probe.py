"""benchmarks/backbone/budget_probe.py's rule: budgets in their fixed order, the first where trained `cls`
beats every untouched row by MARGIN wins; none passing takes the largest and says so; untouched rows once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.backbone import budget_probe as script
from lwap.compare.grid import Grid

REPO = Path(__file__).resolve().parents[1]
UNTOUCHED = {"mean": 45.0, "cls": 17.0, "first_last_avg": 44.0}


def write(path: Path, avg: float, scifact: float | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    scores = {"avg_all": avg} | ({} if scifact is None else {"scifact_ndcg@10": scifact})
    path.write_text(json.dumps({"scores": scores}), encoding="utf-8")


@pytest.mark.parametrize(
    ("trained_cls", "expected"),
    [
        (
            {"unsup": {"grid": 40.0, "lr": 48.0}, "sup": {"grid": 60.0}},
            {"unsup": ("lr", True), "sup": ("grid", True)},
        ),
        (
            {"unsup": {"grid": 30.0, "lr": 40.0, "long": 46.9}, "sup": {"grid": 47.5}},
            {"unsup": ("long", False), "sup": ("grid", True)},
        ),
    ],
)
def test_the_first_budget_that_clearly_gains_is_chosen(
    tmp_path: Path, trained_cls: dict, expected: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []

    def fake_run(
        backbone: str, regime: str, label: str, results: Path, work: Path, untouched: bool, rule
    ) -> None:
        calls.append((regime, label, untouched))
        grid = Grid(results / label, work / label)
        if untouched:  # the best untouched row is mean, 45.0: `cls` must reach 47.0
            for pooling, avg in UNTOUCHED.items():
                write(grid.reference_file(backbone, pooling), avg, scifact=avg / 5)
        write(grid.cell_file(backbone, regime, "cls", 0), trained_cls[regime][label])
        write(grid.cell_file(backbone, regime, "mean", 0), 50.0)

    monkeypatch.setattr(script, "run_budget", fake_run)
    rows, chosen = script.probe("benchmarks/backbones/mlm", tmp_path, tmp_path / "work")
    assert chosen == expected
    assert [c for c in calls if c[2]] == [("unsup", "grid", True)]  # untouched rows measured once
    tried = [label for regime, label, _ in calls if regime == "unsup"]
    assert tried == list(script.BUDGETS)[: len(trained_cls["unsup"])]  # in order, stopping at the first pass
    assert rows[0].startswith("Untouched rows, Avg. (all): `mean` 45.00, `cls` 17.00")
    # the untouched rows are evaluated on every task: their SciFact is reported beside, outside the rule
    assert rows[1].startswith(
        "Untouched rows, SciFact nDCG@10 (not part of the rule): `mean` 9.00, `cls` 3.40"
    )


@pytest.mark.parametrize(
    ("layers", "settings"),
    [(6, []), (4, ["model.weighted_layer_start=3"]), (12, ["model.weighted_layer_start=7"])],
)
def test_weighted_pools_the_top_half_of_the_layers(tmp_path: Path, layers: int, settings: list[str]) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"num_hidden_layers": layers}), encoding="utf-8")
    assert script.depth_settings(tmp_path) == settings


def test_the_gate_needs_cls_and_mean_above_every_untouched_row_by_its_margin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 36's gate: unsupervised +5, supervised +10 over the best untouched row (mean, 45.0), for both
    trained `cls` and trained `mean`; `cls` alone clearing it is not enough."""
    trained = {  # (cls, mean) per regime and budget
        "unsup": {"long": (51.0, 49.0), "lr1e-4": (52.0, 50.0)},
        "sup": {"long": (54.0, 60.0), "lr1e-4": (56.0, 54.9), "lr1e-4-long": (54.0, 54.0)},
    }

    def fake_run(
        backbone: str, regime: str, label: str, results: Path, work: Path, untouched: bool, rule
    ) -> None:
        assert rule is script.RULES["gate"]
        grid = Grid(results / label, work / label)
        if untouched:
            for pooling, avg in UNTOUCHED.items():
                write(grid.reference_file(backbone, pooling), avg, scifact=avg / 5)
        for pooling, avg in zip(("cls", "mean"), trained[regime][label], strict=True):
            write(grid.cell_file(backbone, regime, pooling, 0), avg)

    monkeypatch.setattr(script, "run_budget", fake_run)
    rows, chosen = script.probe("benchmarks/backbones/mlm", tmp_path, tmp_path / "work", script.RULES["gate"])
    assert chosen == {"unsup": ("lr1e-4", True), "sup": ("lr1e-4-long", False)}
    assert list(script.GATE_BUDGETS) == ["long", "lr1e-4", "lr1e-4-long"]
    assert any("`cls` and `mean` ≥ every untouched row + 5 (unsup) / 10 (sup)" in row for row in rows)


def test_the_choice_is_written_for_the_queue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """choice.json: each regime's budget, whether it passed and its `--set`s, depth settings included
    (what the grid runs with, or stops at)."""
    backbone = tmp_path / "bert-new"
    backbone.mkdir()
    (backbone / "config.json").write_text(json.dumps({"num_hidden_layers": 4}), encoding="utf-8")
    monkeypatch.setattr(script, "REPO", tmp_path)
    monkeypatch.setattr(
        script, "probe", lambda *args: (["table"], {"unsup": ("lr1e-4", True), "sup": ("lr1e-4-long", False)})
    )
    assert script.main(["--backbone", str(backbone), "--rule", "gate"]) == 0
    folder = tmp_path / "benchmarks/results/compare/budget/bert-new"
    choice = json.loads((folder / "choice.json").read_text(encoding="utf-8"))
    assert choice["rule"] == "gate" and choice["backbone"] == str(backbone)
    assert choice["regimes"]["unsup"] == {
        "budget": "lr1e-4",
        "passed": True,
        "set": ["training.learning_rate=1e-4", "data.max_examples=64000", "model.weighted_layer_start=3"],
    }
    assert choice["regimes"]["sup"]["passed"] is False
    assert "**the gate fails**" in (folder / "README.md").read_text(encoding="utf-8")
