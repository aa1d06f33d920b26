"""benchmarks/grid/level_means.py: the per-level vectors of one forward pass, scored as poolers, give what the
evaluation gives a model built with that pooler (the last level = `mean`, all levels = `all_levels_avg`),
on a post- and a pre-LayerNorm backbone (whose raw layers `all_levels_avg` reads layer-normed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import make_tiny_prenorm

from benchmarks.grid import level_means as probe
from lwap.eval.beir_data import load_scifact
from lwap.eval.search import score_search
from lwap.eval.sts_data import STS_TASKS, load_sts_task
from lwap.eval.sts_scoring import score_sts_tasks
from lwap.model import build_model


@pytest.mark.parametrize("kind", ["bert", "prenorm"])
def test_each_row_scores_as_the_pooler_it_stands_for(
    tiny_bert: Path, data_mirror: Path, tmp_path: Path, kind: str
) -> None:
    folder = str(tiny_bert if kind == "bert" else make_tiny_prenorm(tmp_path / "prenorm"))
    dataset, tasks = load_scifact("test"), [load_sts_task(name) for name in STS_TASKS]
    result = probe.measure(folder, dataset, tasks)
    rows = result["rows"]
    last = max(len(r["levels"]) for r in rows.values()) - 1
    for name, pooling in ((f"layer {last}", "mean"), (probe.ALL_LEVELS, "all_levels_avg")):
        model = build_model(folder, pooling, max_seq_length=probe.MAX_LENGTH).eval()
        search = score_search(model, dataset, precision=probe.PRECISION)
        sts = score_sts_tasks(model, tasks, precision=probe.PRECISION)
        assert rows[name]["scifact_ndcg@10"] == pytest.approx(search["ndcg@10"], abs=0.05)
        assert rows[name]["avg_all"] == pytest.approx(np.mean([t["score"] for t in sts.values()]), abs=0.05)
    assert rows["embedding output"]["levels"] == [0] and len(rows) == last + 3
    assert all(r["norm_documents"] > 0 and -1 <= r["anisotropy_sentences"] <= 1 for r in rows.values())


def test_the_report_gives_each_level_its_weight_in_the_average() -> None:
    rows = {
        "embedding output": {"levels": [0], "norm_documents": 3.0},
        "layer 1": {"levels": [1], "norm_documents": 1.0},
        "all levels, equal weights (`all_levels_avg`)": {"levels": [0, 1], "norm_documents": 1.5},
    }
    for r in rows.values():
        r.update({"scifact_ndcg@10": 1.0, "avg_all": 2.0, "anisotropy_documents": 0.5, "norm_sentences": 1.0,
                  "anisotropy_sentences": 0.4})  # fmt: skip
    result = {"backbone": "x/tiny", "documents": 2, "queries": 1, "sts_sentences": 4, "rows": rows}
    text = probe.report([result])
    assert "| embedding output | 1.00 | 2.00 | 3.00 | 0.75 |" in text
    assert "| layer 1 | 1.00 | 2.00 | 1.00 | 0.25 |" in text
    assert "| all levels, equal weights (`all_levels_avg`) | 1.00 | 2.00 | 1.50 | – |" in text


def test_main_measures_into_a_new_folder_then_reports_from_it_alone(
    tiny_bert: Path, data_mirror: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(probe, "backbones", lambda _grid: [str(tiny_bert)])
    monkeypatch.setattr(probe, "RESULTS", tmp_path / "results" / "level-means")  # not made yet
    doc = tmp_path / "LEVEL_MEANS.md"
    assert probe.main(["--output", str(doc)]) == 0
    stored = probe.result_file(str(tiny_bert))
    assert stored.is_file() and "| layer 5 |" in doc.read_text(encoding="utf-8")
    first = doc.read_text(encoding="utf-8")
    monkeypatch.setattr(probe, "measure", lambda *_: pytest.fail("--report measured again"))
    assert probe.main(["--report", "--output", str(doc)]) == 0
    assert doc.read_text(encoding="utf-8") == first


def test_the_committed_doc_is_what_the_stored_files_make() -> None:
    """docs/LEVEL_MEANS.md is generated: remade from results/compare/level-means/ alone, byte for byte."""
    found = [probe.read_json_object(probe.result_file(b)) for b in probe.backbones(probe.GRID)]
    assert len(found) == 4  # every grid backbone measured
    assert probe.report(found) == probe.OUTPUT.read_text(encoding="utf-8")
