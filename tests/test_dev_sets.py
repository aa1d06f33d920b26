"""Your own dev set picks the checkpoint (`eval.dev`): the config keys (and the retired key it replaced),
the readers' refusals (one line, exit 2, the output folder untouched), and tiny runs whose kept step is the
one the chosen dev metric picks on the logged curve, with the saved model scoring what the curve says."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import yaml
from eval_mirror import write_beir

from lwap import data_sources
from lwap.cli import main
from lwap.errors import ConfigError, DataError
from lwap.train.config import RETIRED_KEYS, config_from_dict
from lwap.train.dev_sets import load_dev_set

# the key eval.dev replaced, as the table of retired keys names it (read, with a note, in old configs)
RETIRED = next(old for old, new in RETIRED_KEYS.items() if new == "eval.dev").removeprefix("eval.")

WIKI = "$LWAP_DATA_DIR/wiki/wiki_sentences_1m.txt.gz"
TOPICS = ["guitar music", "stock markets", "river fishing", "mountain weather", "football match"]


def raw_config(tmp_path: Path, tiny_bert: Path, **eval_keys: object) -> dict:
    return {
        "output": {"dir": str(tmp_path / "run"), "save_steps": 2, "save_total_limit": None},
        "model": {"backbone": str(tiny_bert), "pooling": "mean", "max_seq_length": 24},
        "data": {"train": WIKI, "max_examples": 256},
        "objective": {"name": "unsup_simcse"},
        "training": {
            "max_steps": 10,
            "per_device_batch_size": 16,
            "learning_rate": 1e-3,
            "logging_steps": 2,
            "progress_bar": False,
        },
        "eval": {"eval_steps": 2, "keep_best": True, "before_training": True, **eval_keys},
    }


def beir_dev(folder: Path, split: str = "dev", qrels: list[tuple[str, str, int]] | None = None) -> Path:
    """30 documents on five topics, 10 queries each judged relevant to one document."""
    docs = [
        {
            "_id": f"d{i}",
            "title": TOPICS[i % 5],
            "text": f"note {i} about {TOPICS[i % 5]} and other things {i}",
        }
        for i in range(30)
    ]
    queries = [{"_id": f"q{i}", "text": f"what about {TOPICS[i % 5]} number {i}"} for i in range(10)]
    judged = qrels if qrels is not None else [(f"q{i}", f"d{(7 * i) % 30}", 1) for i in range(10)]
    return write_beir(folder, docs, queries, judged, split=split)


def pairs_dev(path: Path, header: tuple[str, str, str] = ("sentence1", "sentence2", "score")) -> Path:
    rows = [
        (f"a sentence about {t} {i}", f"words on {TOPICS[(i + j) % 5]} {j}", (i * 7 + j) % 6)
        for i, t in enumerate(TOPICS)
        for j in range(4)
    ]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, delimiter="\t" if path.suffix == ".tsv" else ",")
        writer.writerow(header)
        writer.writerows(rows)
    return path


def eval_section(**keys: object):
    raw = {
        "output": {"dir": "x"},
        "model": {"backbone": "b", "pooling": "mean"},
        "data": {"train": "x.txt"},
        "objective": {"name": "unsup_simcse"},
        "eval": keys,
    }
    return config_from_dict(raw, "c.yaml").eval


# --- the keys ------------------------------------------------------------------------------------------


def test_stsb_is_the_default_and_the_retired_key_still_loads() -> None:
    """A config written before `eval.dev` (its retired key: true = stsb, false = null) loads."""
    assert eval_section().dev == "stsb" and eval_section().dev_metric is None
    assert eval_section(**{RETIRED: True}).dev == "stsb"
    assert eval_section(**{RETIRED: False}, keep_best=False).dev is None  # runs' config.yaml before eval.dev
    assert eval_section(**{RETIRED: False}, dev="stsb", keep_best=False).dev is None  # --set it=false
    assert eval_section(**{RETIRED: True}, dev="my/dev.tsv").dev == "my/dev.tsv"


def test_a_user_config_with_the_retired_key_gets_a_note(tmp_path, monkeypatch, capsys) -> None:
    """What the user wrote (a file, --set) is noted once, one line; a run's own config.yaml read back
    (`lwap card`: config_from_dict) is not."""
    from lwap.train.config import load_config

    monkeypatch.setattr(data_sources, "_said", set())
    path = tmp_path / "old.yaml"
    raw = {"output": {"dir": "x"}, "model": {"backbone": "b", "pooling": "mean"}, "data": {"train": "x.txt"}}
    raw |= {"objective": {"name": "unsup_simcse"}, "eval": {RETIRED: False, "keep_best": False}}
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    assert load_config(path).eval.dev is None and load_config(path).eval.dev is None
    says = f"eval.{RETIRED} is retired, read as eval.dev: null (write eval.dev)"
    assert capsys.readouterr().err == f"lwap: {path}: {says}\n"
    assert config_from_dict(raw).eval.dev is None and capsys.readouterr().err == ""


def test_every_shipped_config_still_takes_the_retired_override() -> None:
    """`--set` with the retired key (older scripts) on a shipped config, which leaves `eval.dev` at stsb."""
    from lwap.config_files import resolve_config
    from lwap.train.config import load_config

    overrides = [f"eval.{RETIRED}=false", "eval.keep_best=false"]
    assert load_config(resolve_config("quickstart"), overrides).eval.dev is None
    assert load_config(resolve_config("quickstart"), ["eval.dev=my/dev.tsv"]).eval.dev == "my/dev.tsv"


@pytest.mark.parametrize(
    ("keys", "says"),
    [
        ({RETIRED: False, "dev": "my/dev.tsv"}, rf"eval.{RETIRED}: false contradicts eval.dev: my/dev.tsv"),
        ({RETIRED: True, "dev": None}, r"contradicts eval.dev: null"),
        ({RETIRED: "yes"}, rf"eval.{RETIRED} must be true or false"),
        ({"dev": None, "keep_best": True}, r"eval.keep_best needs a dev set"),
        ({"dev_metric": "ndcg@5"}, r"eval.dev_metric: unknown value 'ndcg@5'.*ndcg@10"),
        ({"dev_columns": ["a", "b"]}, r"eval.dev_columns must be three column names"),
        ({"precision": "fp16"}, r"eval.precision: unknown value 'fp16'"),
        ({"max_seq_length": 1}, r"eval.max_seq_length must be at least 2"),
    ],
)
def test_bad_eval_keys_are_refused(keys: dict, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        eval_section(**keys)


# --- reading the dev set --------------------------------------------------------------------------------


def test_a_beir_folder_and_a_pairs_file_are_read_with_their_metric(tmp_path: Path) -> None:
    beir = load_dev_set(eval_section(dev=str(beir_dev(tmp_path / "beir"))))
    assert (beir.kind, beir.metric, beir.split, beir.key) == (
        "beir",
        "ndcg@10",
        "dev",
        "eval_dev_cosine_ndcg@10",
    )
    assert len(beir.data.queries) == 10 and len(beir.data.corpus) == 30
    assert beir.name == f"{tmp_path / 'beir'} (BEIR, qrels/dev.tsv) nDCG@10"
    recall = load_dev_set(eval_section(dev=str(tmp_path / "beir"), dev_metric="recall@100"))
    assert recall.key == "eval_dev_cosine_recall@100"
    only_test = load_dev_set(eval_section(dev=str(beir_dev(tmp_path / "t", split="test"))))
    assert only_test.split == "test"  # the folder's one qrels file
    pairs = load_dev_set(eval_section(dev=str(pairs_dev(tmp_path / "p.tsv"))))
    assert (pairs.kind, pairs.metric, pairs.key) == ("pairs", "spearman", "eval_dev_spearman_cosine")
    assert pairs.data.pairs == 20
    named = pairs_dev(tmp_path / "named.csv", header=("query", "passage", "label"))
    assert (
        load_dev_set(eval_section(dev=str(named), dev_columns=["query", "passage", "label"])).data.pairs == 20
    )


def _bad_dev(tmp_path: Path, case: str) -> tuple[Path, dict, str]:
    """(path, extra eval keys, what the one line must say) for each refusal."""
    if case == "missing-columns":
        return (
            pairs_dev(tmp_path / "p.csv", header=("s1", "s2", "score")),
            {},
            r"missing column\(s\) 'sentence1'",
        )
    if case == "score-not-a-number":
        path = tmp_path / "p.tsv"
        path.write_text("sentence1\tsentence2\tscore\na\tb\t1\nc\td\thigh\n", encoding="utf-8")
        return path, {}, r"p.tsv:3: score 'high' \(score\) is not a number"
    if case == "not-a-pairs-file":
        path = tmp_path / "p.json"
        path.write_text("[]\n", encoding="utf-8")
        return path, {}, r"expected a name ending in .csv"
    if case == "empty-qrels":
        folder = beir_dev(tmp_path / "b")
        (folder / "qrels" / "dev.tsv").write_text("", encoding="utf-8")
        return folder, {}, r"dev.tsv: file is empty"
    if case == "header-only-qrels":
        return beir_dev(tmp_path / "b", qrels=[]), {}, r"dev.tsv: no relevance judgements"
    if case == "no-positive-judgement":
        folder = beir_dev(tmp_path / "b", qrels=[("q0", "d0", 0)])
        return folder, {}, r"no query has a positive judgement"
    if case == "not-beir":
        folder = tmp_path / "b"
        folder.mkdir()
        (folder / "notes.txt").write_text("hello\n", encoding="utf-8")
        return folder, {}, r"is a directory but not a BEIR folder"
    if case == "two-splits-no-dev":
        folder = beir_dev(tmp_path / "b", split="train")
        beir_dev(folder, split="test")
        return folder, {}, r"qrels/ holds test.tsv, train.tsv and no dev.tsv"
    if case == "metric-does-not-fit":
        return beir_dev(tmp_path / "b"), {"dev_metric": "spearman"}, r"'spearman' does not apply to a BEIR"
    if case == "judgements-point-nowhere":  # issue 65: no judged document in the corpus (lwap eval's check)
        folder = beir_dev(tmp_path / "b", qrels=[("q0", "x0", 1), ("q1", "x1", 2), ("q2", "d2", 0)])
        return folder, {}, r"dev.tsv: none of its 2 positive judgements names a document of .* \(eval.dev\)$"
    if case == "missing":
        return tmp_path / "nowhere.tsv", {}, r"nowhere.tsv: no such file \(eval.dev\)"
    raise AssertionError(case)


REFUSALS = [
    "missing-columns",
    "score-not-a-number",
    "not-a-pairs-file",
    "empty-qrels",
    "header-only-qrels",
    "no-positive-judgement",
    "not-beir",
    "two-splits-no-dev",
    "metric-does-not-fit",
    "judgements-point-nowhere",
    "missing",
]


@pytest.mark.parametrize("case", REFUSALS)
def test_a_bad_dev_set_is_one_line_before_the_output_folder(
    case: str, tmp_path: Path, tiny_bert: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, keys, says = _bad_dev(tmp_path, case)
    with pytest.raises((DataError, ConfigError), match=says):
        load_dev_set(eval_section(dev=str(path), **keys))
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump(raw_config(tmp_path, tiny_bert, dev=str(path), **keys)), encoding="utf-8"
    )
    assert main(["train", str(config)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("lwap train: error: "), lines
    assert not (tmp_path / "run").exists()  # read before the output folder is made


def test_judgements_missing_from_the_corpus_are_said_before_training(
    tmp_path: Path, tiny_bert: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Some judged documents missing from the corpus count as misses: said once, before any score, as
    `lwap eval` says it (issue 65)."""
    dev = beir_dev(tmp_path / "my-dev", qrels=[(f"q{i}", f"d{i}" if i else "gone", 1) for i in range(10)])
    raw = raw_config(tmp_path, tiny_bert, dev=str(dev))
    raw["training"]["max_steps"] = 2
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    assert main(["train", str(config)]) == 0
    said = [line for line in capsys.readouterr().err.splitlines() if "missing from the corpus" in line]
    assert said == [
        f"lwap train: eval.dev {dev}: 1 of 10 judgements name documents missing from the corpus "
        "(1 of 10 positive ones; they count as misses)"
    ]


# --- the kept step is the one the dev metric picks ----------------------------------------------------------


def logged_curve(out: Path, key: str) -> dict[int, float]:
    with (out / "metrics.csv").open(encoding="utf-8") as handle:
        return {int(r["step"]): float(r["value"]) for r in csv.DictReader(handle) if r["metric"] == key}


def first_best(curve: dict[int, float]) -> int:
    """transformers keeps a new best only when it is strictly better: the first step of the maximum."""
    best = max(curve.values())
    return min(step for step, value in curve.items() if value == best)


@pytest.mark.parametrize("kind", ["beir-mrr", "pairs"])
def test_the_kept_step_is_the_one_the_dev_metric_picks(kind: str, tmp_path: Path, tiny_bert: Path) -> None:
    from lwap import load_model
    from lwap.eval.evaluators import retrieval_evaluator, similarity_evaluator
    from lwap.train import load_config, train

    if kind == "beir-mrr":
        dev, keys, key = beir_dev(tmp_path / "my-dev"), {"dev_metric": "mrr@10"}, "eval_dev_cosine_mrr@10"
    else:
        dev, keys, key = pairs_dev(tmp_path / "my-dev.tsv"), {}, "eval_dev_spearman_cosine"
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(raw_config(tmp_path, tiny_bert, dev=str(dev), **keys)), encoding="utf-8")
    summary = train(load_config(config), config_path=str(config))
    out = tmp_path / "run"

    curve = logged_curve(out, key)
    assert sorted(curve) == [0, 2, 4, 6, 8, 10]
    assert len(set(curve.values())) > 1, "a flat curve would not test the selection"
    assert summary["dev_metric_key"] == key and summary["dev_metric"] == keys.get("dev_metric", "spearman")
    assert summary["final_model_step"] == summary["best_step"] == first_best(curve)
    assert summary["final_model_dev_score"] == pytest.approx(max(curve.values()))
    assert summary["dev_scores_by_step"] == [[s, pytest.approx(v)] for s, v in sorted(curve.items())]
    assert summary["dev_set"] != "STS-B dev" and "best_dev_spearman" not in summary  # the general names alone
    assert "eval_stsb-dev_spearman_cosine" not in (out / "metrics.csv").read_text()

    model = load_model(out / "model")  # the folder holds the kept step's weights: it scores what was logged
    dev_set = load_dev_set(load_config(config).eval)
    if kind == "beir-mrr":
        evaluator = retrieval_evaluator(dev_set.data, "dev", batch_size=32, max_seq_length=None)
    else:
        evaluator = similarity_evaluator(
            dev_set.data.concatenated(), "dev", batch_size=32, max_seq_length=None
        )
    assert evaluator(model)[key.removeprefix("eval_")] == pytest.approx(curve[first_best(curve)], abs=1e-6)

    card = (out / "model" / "README.md").read_text(encoding="utf-8")
    assert f"the best {dev_set.metric_label} on {dev_set.label} (the selection set)" in card
    assert f"| step | training loss | {dev_set.label} {dev_set.metric_label} (selection set) |" in card
    assert (out / "training_curves.png").stat().st_size > 0
    # the card's model-index holds the kept step's score on the user's dev set, named as the selection set
    front = yaml.safe_load(card.split("---")[1])
    (result,) = front["model-index"][0]["results"]
    metric = "mrr_at_10" if kind == "beir-mrr" else "spearman_cosine"
    assert (result["dataset"]["split"], result["metrics"][0]["type"]) == ("validation", metric)
    assert (
        result["dataset"]["name"]
        == f"{dev_set.label} (the selection set: the kept checkpoint was chosen on it)"
    )
    assert result["metrics"][0]["value"] == pytest.approx(summary["final_model_dev_score"])
