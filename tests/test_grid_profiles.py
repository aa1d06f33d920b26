"""The back-fill of layer-attention profiles into the repository's older cells (benchmarks/grid/
profiles.py, `compare_poolers.py attach-profiles | reprofile`): from a cell's own eval output, or measured
on a retrain of the cell that reproduces its dev score."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_compare_report import write_cell
from test_compare_run import data_mirror as grid_mirror

from benchmarks.grid import profiles
from benchmarks.grid.compare_poolers import main as compare_poolers
from lwap.compare.grid import BACKBONE, Grid


def test_attach_profiles_reads_the_cells_own_eval_output(tmp_path: Path) -> None:
    write_cell(tmp_path / "cells/unsup", "lwap", 0, 76.0, 57.0)
    profile = {"layers": [0, 1, 2], "sentences": 10, "mean_attention": [0.2, 0.3, 0.5], "query_by_key": []}
    results = tmp_path / "work/unsup/lwap-seed0/eval/results.json"
    results.parent.mkdir(parents=True)
    results.write_text(json.dumps({"layer_attention": profile}), encoding="utf-8")
    profiles.attach_profiles(Grid(tmp_path / "cells", tmp_path / "work"), BACKBONE)
    cell = json.loads((tmp_path / "cells/unsup/lwap-seed0.json").read_text(encoding="utf-8"))
    assert cell["layer_attention"] == {
        "layers": [0, 1, 2],
        "sentences": 10,
        "mean_attention": [0.2, 0.3, 0.5],
    }


def test_the_back_fill_is_the_wrappers_and_not_lwap_compares(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`attach-profiles` runs through the repository's wrapper on the folders given; `lwap compare` has
    no such subcommand."""
    from lwap.cli import main

    write_cell(tmp_path / "cells/unsup", "lwap", 0, 76.0, 57.0)
    results = tmp_path / "work/unsup/lwap-seed0/eval/results.json"
    results.parent.mkdir(parents=True)
    profile = {"layers": [0, 1], "sentences": 3, "mean_attention": [0.4, 0.6]}
    results.write_text(json.dumps({"layer_attention": profile}), encoding="utf-8")
    folders = ["--results", str(tmp_path / "cells"), "--work-dir", str(tmp_path / "work")]
    assert compare_poolers(["attach-profiles", *folders]) == 0
    assert "attached the layer-attention profile" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["compare", "attach-profiles", *folders])
    assert "invalid choice: 'attach-profiles'" in capsys.readouterr().err


@pytest.mark.slow
def test_reprofile_retrains_a_cell_and_reproduces_its_dev_score(
    tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cell without its profile and without its eval output: `reprofile` retrains it (same commit here,
    so the retrain must reproduce the cell's dev score exactly) and attaches the STS-B test profile."""
    from lwap.compare import runner

    layout = Grid(tmp_path / "cells", tmp_path / "work")
    monkeypatch.setenv("LWAP_DATA_DIR", str(grid_mirror(tmp_path / "data")))
    budget = ["training.max_steps=2", "eval.eval_steps=2", "output.save_steps=2", "data.max_examples=128"]
    runner.run_grid(layout, str(tiny_bert), "unsup", ["lwap"], [0], budget, untouched=False)
    path = layout.cell_file(str(tiny_bert), "unsup", "lwap", 0)
    cell = json.loads(path.read_text(encoding="utf-8"))
    assert len(cell.pop("layer_attention")["mean_attention"]) == 6  # 5 layers + the embedding output
    path.write_text(json.dumps(cell), encoding="utf-8")
    profiles.reprofile(layout, str(tiny_bert), ["unsup"], [0])
    cell = json.loads(path.read_text(encoding="utf-8"))
    assert len(cell["layer_attention"]["mean_attention"]) == 6
    source = cell["layer_attention_source"]
    assert source["retrained_best_dev_spearman"] == source["cell_best_dev_spearman"] is not None
    assert source["retrained_stsb"] == pytest.approx(source["cell_stsb"], abs=1e-6)
