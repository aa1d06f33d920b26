"""`lwap mine`: hard negatives guarded against false negatives, checked against the rule worked out by hand
on a model whose embeddings are known exactly; the file it writes trains as it is; refusals are one line."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
import yaml

from lwap.cli import main

# (anchor, positive) pairs and extra candidates over the fruit model's three words (apple, banana, cherry):
# a text's embedding is the mean of its words' one-hot vectors, so every cosine is known
PAIRS = [
    ("apple", "apple apple banana"),  # cosine 2/sqrt(5) = 0.894
    ("banana", "banana banana cherry"),
    ("banana", "banana apple"),  # banana's second positive: never its negative
    ("cherry", "cherry cherry cherry apple"),
]
CORPUS = [
    "apple apple apple banana",  # 0.949 to apple: above its positive, a likely unlabelled positive
    "apple apple cherry",  # 0.894 to apple: within the margin of its positive
    "apple banana cherry",  # 0.577 (no two candidates tie for an anchor: the order is the rule's alone)
    "banana banana banana cherry",
    "cherry cherry apple",
    "banana cherry cherry cherry",
]
VECTORS = {"apple": np.array([1.0, 0, 0]), "banana": np.array([0, 1.0, 0]), "cherry": np.array([0, 0, 1.0])}


def embed(text: str) -> np.ndarray:
    vector = np.mean([VECTORS[word] for word in text.split()], axis=0)
    return vector / np.linalg.norm(vector)


def by_hand(
    k: int,
    range_min: int,
    relative_margin: float | None,
    pairs: list[tuple[str, str]] = PAIRS,
    corpus: list[str] = CORPUS,
) -> dict[str, list[str]]:
    """The rule of `lwap mine`, computed here: per anchor, the candidates (corpus and every positive, minus
    the anchor's own positives and the anchor's text) by cosine, less those above
    min(positive score) - |that| x margin, less the `range_min` best, the top k."""
    candidates = list(dict.fromkeys(corpus + [p for _, p in pairs]))
    negatives = {}
    for anchor in dict.fromkeys(a for a, _ in pairs):
        positives = [p for a, p in pairs if a == anchor]
        floor = min(float(embed(anchor) @ embed(p)) for p in positives)
        scored = [
            (float(embed(anchor) @ embed(c)), c) for c in candidates if c not in positives and c != anchor
        ]
        if relative_margin is not None:
            scored = [(s, c) for s, c in scored if s <= floor - abs(floor) * relative_margin]
        ranked = [c for _, c in sorted(scored, key=lambda item: -item[0])]
        negatives[anchor] = ranked[range_min : range_min + k]
    return negatives


def write_pairs(path: Path, header: tuple[str, str] = ("query", "doc")) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(PAIRS)
    return path


def read_rows(path: Path) -> tuple[list[str], list[list[str]]]:
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    return rows[0], rows[1:]


@pytest.mark.parametrize(
    ("options", "k", "range_min", "margin"),
    [
        ([], 1, 0, 0.05),  # the defaults: one negative, NV-Retriever's 5% relative margin
        (["--range-min", "1"], 1, 1, 0.05),
        (["--num-negatives", "2"], 2, 0, 0.05),
        (["--relative-margin", "-1"], 1, 0, None),  # no margin: the near-duplicates come back
    ],
)
def test_negatives_follow_the_guards_worked_out_by_hand(
    options: list[str],
    k: int,
    range_min: int,
    margin: float | None,
    fruit_folder: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pairs, corpus, out = write_pairs(tmp_path / "pairs.csv"), tmp_path / "corpus.txt", tmp_path / "mined.csv"
    corpus.write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    argv = ["mine", str(pairs), "--model", str(fruit_folder), "--output", str(out), "--corpus", str(corpus)]
    argv += ["--anchor-column", "query", "--positive-column", "doc", *options]
    assert main(argv) == 0
    header, rows = read_rows(out)
    negatives = ["hard_neg"] if k == 1 else [f"hard_neg_{i}" for i in range(1, k + 1)]
    assert header == ["sent0", "sent1", *negatives]
    expected = by_hand(k, range_min, margin)
    assert sorted(tuple(r) for r in rows) == sorted((a, p, *expected[a]) for a, p in PAIRS)
    for anchor, _, *mined in rows:  # the guards, spelled out
        assert not set(mined) & {p for a, p in PAIRS if a == anchor}
    if margin is not None:
        assert (
            "apple apple apple banana" not in expected["apple"]
            and "apple apple cherry" not in expected["apple"]
        )
    else:
        assert expected["apple"] == ["apple apple apple banana"]
    printed = capsys.readouterr().out
    assert f"wrote {len(PAIRS)} rows with {k} hard negative(s)" in printed
    if k > 1:
        assert f"--set 'data.hard_negative_columns=[{','.join(negatives)}]'" in printed


def test_pairs_with_nothing_in_the_window_are_mined_again_over_every_candidate(
    fruit_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A first window of one candidate (sentence-transformers looks at 2 more, for the positives): apple's 3
    most similar texts are all within the margin; the second pass over all candidates finds what the
    rule by hand finds, from cached embeddings."""
    from lwap.train import mining

    monkeypatch.setattr(mining, "default_window", lambda options: options.range_min + 1)
    pair = [("apple", "apple apple banana")]  # 0.894
    near = ["apple apple apple apple banana", "apple apple apple banana", "apple apple cherry"]  # .97 .95 .89
    candidates = [*near, "apple banana", "banana cherry"]  # 0.707 (the one past the margin), 0
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("sent0,sent1\n" + "".join(f"{a},{p}\n" for a, p in pair), encoding="utf-8")
    corpus, out = tmp_path / "corpus.txt", tmp_path / "mined.csv"
    corpus.write_text("\n".join(candidates) + "\n", encoding="utf-8")
    argv = ["mine", str(pairs), "--model", str(fruit_folder), "--output", str(out), "--corpus", str(corpus)]
    assert main(argv) == 0
    expected = by_hand(1, 0, 0.05, pair, candidates)
    assert expected == {"apple": ["apple banana"]}
    assert read_rows(out)[1] == [["apple", "apple apple banana", "apple banana"]]
    printed = capsys.readouterr().out
    assert "1 pairs got no negative in the 1 most similar candidates; looking again over all 6" in printed
    assert "[Cache] Loaded corpus embeddings" in printed  # the corpus was not encoded twice
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".lwap-mine-")]  # the cache is gone


def test_a_mined_file_trains_as_it_is(
    tiny_bert: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Mined with a trained-style lwap model folder from the pairs' own positives, then trained on by a
    supervised config with its default columns: no --set but data.train."""
    from lwap import build_model

    model = tmp_path / "tiny-model"
    build_model(str(tiny_bert), "mean").save(str(model))
    words = ["river", "mountain", "guitar", "market", "storm", "garden", "doctor", "engine", "poem", "planet"]
    pairs = [
        (f"a question about the {w}", f"a long passage on the {w} and its {v}")
        for w in words
        for v in words[:3]
    ]
    path = tmp_path / "pairs.tsv"
    path.write_text("anchor\tpositive\n" + "".join(f"{a}\t{p}\n" for a, p in pairs), encoding="utf-8")
    out = tmp_path / "mined.csv.gz"
    argv = ["mine", str(path), "--model", str(model), "--output", str(out), "--anchor-column", "anchor"]
    argv += ["--positive-column", "positive", "--relative-margin", "-1", "--precision", "bf16"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert f"lwap train CONFIG --set 'data.train={out}'" in printed
    config = {
        "output": {"dir": str(tmp_path / "run"), "save_steps": 2},
        "model": {"backbone": str(tiny_bert), "pooling": "mean", "max_seq_length": 16},
        "data": {"train": str(out)},  # sent0, sent1, hard_neg: the defaults
        "objective": {"name": "sup_simcse"},
        "training": {"max_steps": 2, "per_device_batch_size": 8, "progress_bar": False},
        "eval": {"dev": None, "keep_best": False, "before_training": False},
    }
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    assert main(["train", str(tmp_path / "c.yaml")]) == 0
    assert "30 training examples" in capsys.readouterr().out


def test_several_mined_negatives_train_with_the_printed_keys(tiny_bert: Path, tmp_path: Path) -> None:
    from lwap.train.mining import training_keys

    pairs = tmp_path / "pairs.csv"
    words = ["river", "mountain", "guitar", "market", "storm", "garden", "doctor", "engine"]
    pairs.write_text(
        "sent0,sent1\n" + "".join(f"about {w},on the {w} today\n" for w in words), encoding="utf-8"
    )
    out = tmp_path / "mined.csv"
    from lwap import build_model

    build_model(str(tiny_bert), "mean").save(str(tmp_path / "m"))
    argv = ["mine", str(pairs), "--model", str(tmp_path / "m"), "--output", str(out), "--num-negatives", "3"]
    assert main([*argv, "--relative-margin", "-1"]) == 0
    config = {
        "output": {"dir": str(tmp_path / "run"), "save_steps": 2},
        "model": {"backbone": str(tiny_bert), "pooling": "mean", "max_seq_length": 16},
        "data": {"train": "placeholder"},
        "objective": {"name": "sup_simcse"},
        "training": {"max_steps": 2, "per_device_batch_size": 4, "progress_bar": False},
        "eval": {"dev": None, "keep_best": False, "before_training": False},
    }
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    sets = [item for key in training_keys(str(out), 3) for item in ("--set", key)]
    assert main(["train", str(tmp_path / "c.yaml"), *sets]) == 0


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--output", "{tmp}/mined.txt"], r"expected a name ending in .csv, .csv.gz"),
        (["--output", "{tmp}/exists.csv"], r"exists.csv already exists; pass --overwrite"),
        (["--num-negatives", "0"], r"--num-negatives must be at least 1"),
        (["--range-min", "3", "--range-max", "4", "--num-negatives", "2"], r"fewer than --num-negatives 2"),
        (["--anchor-column", "question"], r"missing column\(s\) 'question'"),
        (["--corpus", "{tmp}/folder"], r"is a directory but not a BEIR folder"),
        (["--corpus", "{tmp}/none.txt"], r"none.txt: no such file \(--corpus\)"),
    ],
)
def test_refusals_are_one_line(
    extra: list[str], says: str, fruit_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import re

    pairs = write_pairs(tmp_path / "pairs.csv", header=("sent0", "sent1"))
    (tmp_path / "exists.csv").write_text("keep me\n", encoding="utf-8")
    (tmp_path / "folder").mkdir()
    argv = ["mine", str(pairs), "--model", str(fruit_folder), "--output", str(tmp_path / "out.csv")]
    argv += [value.replace("{tmp}", str(tmp_path)) for value in extra]
    assert main(argv) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("lwap mine: error: ") and re.search(says, lines[0]), lines
    assert not (tmp_path / "out.csv").exists() and (tmp_path / "exists.csv").read_text() == "keep me\n"


def test_bf16_encodes_in_bf16_and_leaves_the_model_as_it_was(fruit_folder: Path) -> None:
    import torch

    from lwap import load_model
    from lwap.train.mining import forward_in

    model = load_model(fruit_folder)
    seen = []
    hook = model[0].register_forward_hook(lambda m, i, o: seen.append(torch.is_autocast_enabled("cpu")))
    with forward_in(model, "bf16"):
        model.encode(["apple banana"])
    model.encode(["apple banana"])
    hook.remove()
    assert seen == [True, False] and "forward" not in model.__dict__
