"""`lwap eval` end to end on a hand-made data mirror and the tiny random BERT; the layer profile."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from conftest import SENTENCES
from eval_mirror import make_mirror

from lwap import build_model, find_lwap
from lwap.cli import main
from lwap.eval import evaluate_model
from lwap.eval.layer_profile import LayerAttentionRecorder, plot_layer_attention
from lwap.eval.report import format_table


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    root = tmp_path_factory.mktemp("mirror")
    return root, make_mirror(root)


@pytest.fixture(scope="module")
def lwap_folder(tiny_bert, tmp_path_factory):
    folder = tmp_path_factory.mktemp("models") / "tiny-lwap"
    build_model(str(tiny_bert), "lwap").save(str(folder))
    return folder


def test_lwap_eval_writes_table_json_markdown_and_png(
    lwap_folder, mirror, tmp_path, monkeypatch, capsys
) -> None:
    root, counts = mirror
    monkeypatch.setenv("LWAP_DATA_DIR", str(root))
    out = tmp_path / "results"
    argv = ["eval", str(lwap_folder), "--output", str(out), "--bootstrap", "100", "--no-progress"]
    assert main([*argv, "--aggregation", "wmean"]) == 0
    printed = capsys.readouterr().out.splitlines()
    header = printed[0].split()
    assert header[:9] == ["model", "STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R", "Avg."]
    assert header[9:15] == ["scifact", "nDCG@10", "scifact", "MRR@10", "scifact", "R@100"]
    assert header[15:] == ["Align.", "Unif.", "Aniso."]  # STS-B test geometry (test_eval_geometry)
    assert printed[1].split()[0] == "tiny-lwap" and len(printed[1].split()) == 1 + 8 + 3 + 3
    assert printed[2].startswith("95% CI")

    results = json.loads((out / "results.json").read_text())
    assert {name: entry["pairs"] for name, entry in results["sts"].items()} == counts
    assert results["sts"]["sts15"]["unscored_skipped"] == 5 * 2  # pairs 5 and 10 of each of 5 subsets
    for entry in results["sts"].values():
        assert entry["score"] == entry["wmean"] and entry["ci95"][0] <= entry["score"] <= entry["ci95"][1]
    assert results["sts_average"] == pytest.approx(np.mean([e["wmean"] for e in results["sts"].values()]))
    assert set(results["search"]["scifact"]) >= {"ndcg@10", "mrr@10", "recall@100", "queries", "documents"}
    protocol = results["protocol"]
    assert protocol["sts"]["data_variant"] == "senteval" and protocol["sts"]["aggregation"] == "wmean"
    assert protocol["sts"]["similarity"] == "cosine" and results["versions"]["lwap"] == "0.1.0"
    assert results["model"]["name"] == str(lwap_folder) and results["model"]["lwap_pooling"]
    profile = results["layer_attention"]
    assert profile["layers"] == [0, 1, 2, 3, 4, 5] and profile["sentences"] > 0
    assert sum(profile["mean_attention"]) == pytest.approx(1.0, abs=1e-5)
    assert (out / "layer_attention.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    markdown = (out / "results.md").read_text()
    assert "| tiny-lwap |" in markdown and "layer_attention.png" in markdown

    # the same run with `all`: identical wmean figures, different headline for the SemEval sets
    assert main(["eval", str(lwap_folder), "--output", str(tmp_path / "all"), "--no-progress"]) == 0
    again = json.loads((tmp_path / "all" / "results.json").read_text())
    for name, entry in again["sts"].items():
        assert entry["wmean"] == pytest.approx(results["sts"][name]["wmean"], abs=1e-9)
        assert entry["score"] == entry["all"] and "ci95" not in entry


@pytest.mark.slow
def test_library_call_with_mteb_agrees_with_own_path(lwap_folder, mirror, monkeypatch) -> None:
    root, _ = mirror
    monkeypatch.setenv("LWAP_DATA_DIR", str(root))
    tasks = ["stsb", "sickr", "sts13", "scifact"]
    own = evaluate_model(lwap_folder, tasks, batch_size=8)
    via_mteb = evaluate_model(lwap_folder, tasks, batch_size=8, use_mteb=True)
    assert list(own["sts"]) == list(via_mteb["sts"]) == ["sts13", "stsb", "sickr"]
    for name, entry in own["sts"].items():
        assert via_mteb["sts"][name]["score"] == pytest.approx(entry["score"], abs=1e-3)
    assert via_mteb["search"]["scifact"]["ndcg@10"] == pytest.approx(
        own["search"]["scifact"]["ndcg@10"], abs=1e-3
    )
    assert via_mteb["protocol"]["engine"].startswith("mteb") and "mteb" in via_mteb["versions"]
    assert via_mteb["layer_attention"]["mean_attention"] == pytest.approx(
        own["layer_attention"]["mean_attention"], abs=1e-4
    )
    for measure in ("alignment", "uniformity", "anisotropy"):  # mteb keeps its embeddings: encoded again
        assert via_mteb["geometry"][measure] == pytest.approx(own["geometry"][measure], abs=1e-5)
    assert "STS-B" in format_table(own) and "Avg." in format_table(own)


@pytest.mark.parametrize("options", [{}, {"lwap_queries": "latent", "lwap_latent_queries": 3}])
def test_recorder_averages_attention_over_all_batches(tiny_bert, tmp_path, options: dict) -> None:
    model = build_model(str(tiny_bert), "lwap", **options).eval()
    sentences = [*SENTENCES, "another one", "and a last, longer sentence to pad the batch"]
    recorder = LayerAttentionRecorder.for_model(model)
    with recorder.attached():
        model.encode(sentences, batch_size=2)
    profile = recorder.profile()
    model.encode(sentences, batch_size=len(sentences))
    expected = find_lwap(model).last_attention.mean(dim=1).mean(dim=0)
    assert profile["sentences"] == len(sentences)
    torch.testing.assert_close(torch.tensor(profile["mean_attention"]), expected, atol=1e-5, rtol=1e-4)
    queries = 3 if options else 6  # the learned queries, or a query per hidden state
    assert len(profile["query_by_key"]) == queries and len(profile["query_by_key"][0]) == 6
    assert plot_layer_attention(profile, tmp_path / "a.png", "title").stat().st_size > 1000
    assert LayerAttentionRecorder.for_model(build_model(str(tiny_bert), "mean")) is None


def test_no_png_for_models_without_lwap(tiny_bert, mirror, tmp_path, monkeypatch) -> None:
    root, _ = mirror
    monkeypatch.setenv("LWAP_DATA_DIR", str(root))
    results = evaluate_model(build_model(str(tiny_bert), "cls"), ["stsb"], output_dir=tmp_path / "o")
    assert results["layer_attention"] is None and not (tmp_path / "o" / "layer_attention.png").exists()
    assert results["model"]["name"] == "in-memory model" and (tmp_path / "o" / "results.json").is_file()


def test_pair_scores_reproduce_each_task_score(tiny_bert, mirror, tmp_path, monkeypatch) -> None:
    """pair_scores.npz holds each STS pair's cosine in the data's order: Spearman of them against the
    gold scores is the task's reported score, so a bootstrap over pairs can start from the file."""
    from scipy.stats import spearmanr

    from lwap.errors import ConfigError
    from lwap.eval.sts_data import load_sts_task

    root, _ = mirror
    monkeypatch.setenv("LWAP_DATA_DIR", str(root))
    model = build_model(str(tiny_bert), "mean")
    results = evaluate_model(model, ["stsb", "sts12"], output_dir=tmp_path / "o", pair_scores=True)
    saved = np.load(tmp_path / "o" / "pair_scores.npz")
    assert str(tmp_path / "o" / "pair_scores.npz") in results["files"]
    for name in ("stsb", "sts12"):
        task = load_sts_task(name, "senteval")
        cosines = np.concatenate([saved[f"{name}/{subset}"] for subset in task.subsets])
        gold = np.concatenate([pairs.scores for pairs in task.subsets.values()])
        assert saved[f"{name}/{next(iter(task.subsets))}"].dtype == np.float32
        reported = results["sts"][name]["all"]
        assert spearmanr(cosines, gold).statistic * 100 == pytest.approx(reported, abs=1e-3)
    with pytest.raises(ConfigError, match="output folder"):
        evaluate_model(model, ["stsb"], pair_scores=True)
    assert main(["eval", str(tiny_bert), "--tasks", "stsb", "--pair-scores", "--no-progress"]) == 2


def test_judgements_naming_missing_documents_are_warned_on_the_terminal(lwap_folder, tmp_path) -> None:
    """The count reaches stderr even with --no-progress (it changes what the score means); a folder whose
    judgements all point nowhere is one line, exit 2, before any model loads."""
    from eval_mirror import write_beir

    docs = [{"_id": "d1", "title": "", "text": "apple"}, {"_id": "d2", "title": "", "text": "banana"}]
    queries = [{"_id": "q1", "text": "apple"}, {"_id": "q2", "text": "banana"}]
    some = write_beir(tmp_path / "some", docs, queries, [("q1", "d1", 1), ("q2", "d7", 1)])
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    command = [sys.executable, "-m", "lwap", "eval", str(lwap_folder), "--no-progress", "--tasks"]
    result = subprocess.run([*command, str(some)], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    warning = "lwap eval: warning: some: 1 of 2 judgements name documents missing from the corpus"
    assert warning in result.stderr
    none = write_beir(tmp_path / "none", docs, queries, [("q1", "d8", 1), ("q2", "d9", 1)])
    result = subprocess.run([*command, str(none)], capture_output=True, text=True, env=env)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "none of its 2 positive judgements names a document of corpus.jsonl.gz" in result.stderr


def test_unknown_task_lists_valid_names(lwap_folder, capsys) -> None:
    assert main(["eval", str(lwap_folder), "--tasks", "sts-b", "--no-progress"]) == 2
    error = capsys.readouterr().err
    assert "unknown task 'sts-b' (did you mean stsb" in error and "BEIR-layout folder" in error


def test_bad_data_file_exits_2_with_one_line_naming_file_and_line(lwap_folder, mirror, tmp_path) -> None:
    root, _ = mirror
    broken = tmp_path / "broken"
    (broken / "stsb" / "senteval-tokenized").mkdir(parents=True)
    good = (root / "stsb" / "senteval-tokenized" / "sts-test.csv").read_text()
    bad = good + "main-captions\tMSRvid\t2012test\t9999\tfive\ta\tb\n"
    (broken / "stsb" / "senteval-tokenized" / "sts-test.csv").write_text(bad)
    env = {**os.environ, "LWAP_DATA_DIR": str(broken), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "lwap", "eval", str(lwap_folder), "--tasks", "stsb", "--no-progress"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0
    assert f"sts-test.csv:{good.count(chr(10)) + 1}: score 'five' is not a number" in result.stderr


def test_option_errors(lwap_folder, tmp_path) -> None:
    from lwap.errors import ConfigError

    with pytest.raises(ConfigError, match="batch size must be at least 1"):
        evaluate_model(lwap_folder, ["stsb"], batch_size=0)
    with pytest.raises(ConfigError, match="aggregation must be one of"):
        evaluate_model(lwap_folder, ["stsb"], aggregation="mean")
    (tmp_path / "file").write_text("x")
    assert main(["eval", str(lwap_folder), "--tasks", "stsb", "--output", str(tmp_path / "file")]) == 2


def test_any_beir_folder_is_a_task(tmp_path) -> None:
    """A folder path in `tasks` is evaluated as a BEIR dataset named after the folder (known answer)."""
    from eval_mirror import fruit_model, write_beir

    docs = [{"_id": f"d{i}", "title": "", "text": t} for i, t in enumerate(["apple", "banana", "cherry"])]
    queries = [{"_id": "q1", "text": "banana banana cherry"}]
    folder = write_beir(tmp_path / "fruit-search", docs, queries, [("q1", "d2", 1)])
    results = evaluate_model(fruit_model(), [str(folder)], model_name="fruit")
    assert list(results["search"]) == ["fruit-search"] and results["sts"] == {}
    assert results["search"]["fruit-search"]["mrr@10"] == pytest.approx(50.0)  # cherry ranks 2nd
    assert "fruit-search nDCG@10" in format_table(results)


def test_a_scored_pairs_file_is_a_task(tmp_path, capsys) -> None:
    """A pairs file in `tasks` is scored by cosine Spearman against its own scores (known answer: the fruit
    model's cosines to "apple" rank 1, 0.894, 0.707, 0 against gold ranks 4, 3, 1, 2: rho = 0.8)."""
    from eval_mirror import fruit_model

    path = tmp_path / "my-pairs.tsv"
    rows = [("apple", "apple", 3), ("apple", "apple apple banana", 2), ("apple", "apple banana", 0)]
    rows.append(("apple", "banana", 1))
    path.write_text(
        "left\tright\tjudged\n" + "".join(f"{a}\t{b}\t{s}\n" for a, b, s in rows), encoding="utf-8"
    )
    columns = ("left", "right", "judged")
    results = evaluate_model(fruit_model(), [str(path)], pairs_columns=columns, model_name="fruit")
    assert list(results["pairs"]) == ["my-pairs"] and results["sts"] == {} and results["search"] == {}
    assert results["pairs"]["my-pairs"]["score"] == pytest.approx(80.0)
    assert "my-pairs (pairs)" in format_table(results)
    fruit = tmp_path / "fruit"
    fruit_model().save(str(fruit))
    argv = ["eval", str(fruit), "--tasks", str(path), "--no-progress", "--pairs-columns", *columns]
    assert main(argv) == 0 and "my-pairs (pairs)" in capsys.readouterr().out
    assert main(argv[:-4]) == 2  # the default columns (sentence1, sentence2, score) are not in this file
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "missing column(s) 'sentence1', 'sentence2', 'score'" in err[0], err
    assert "(name yours with --pairs-columns; " in err[0], err  # the flag, not training's eval.dev_columns
    assert err[0].endswith("name its columns with --pairs-column-names)"), err
