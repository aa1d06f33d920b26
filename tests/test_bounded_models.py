"""Model folders checked before anything is built (issue 49): a config.json sized against its weights and
lwap.checks.limits.MODEL, weights' shapes against the config, lwap's modules against their weights and the
backbone, the tokenizer against the embedding table and the folder, special files and links in a folder,
and a saved max_seq_length past the position table. The crafts every loader refuses (tests/hostile.py)
run in tests/test_hostile_folders.py and the path matrix; these are the remaining cases."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from test_bounded_reading import within

from lwap.errors import ModelLoadError


@pytest.fixture(scope="module")
def tiny_lwap(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from lwap import build_model

    folder = tmp_path_factory.mktemp("bounded") / "tiny-lwap"
    build_model(str(tiny_bert), "lwap").save(str(folder))
    return folder


def copy(source: Path, tmp_path: Path) -> Path:
    folder = tmp_path / source.name
    shutil.copytree(source, folder)
    return folder


def rewrite(path: Path, **changes: object) -> None:
    data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    data.update(changes)
    path.unlink(missing_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def refusal(folder: Path) -> str:
    from lwap.checks.model_folder import check_model_folder

    with within(60), pytest.raises(ModelLoadError) as refused:
        check_model_folder(folder)
    text = str(refused.value)
    assert "\n" not in text and str(folder) in text, text
    return text


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        (
            {"intermediate_size": 10**9},
            r"feed-forward 1,000,000,000.*\) in float32: [\d,]+ bytes, more than the model",
        ),
        (
            {"max_position_embeddings": 10**7},
            r"positions 10,000,000.*its position table alone is larger; the weights",
        ),
        ({"vocab_size": "30522"}, r"config\.json: vocab_size is '30522', expected a whole number >= 0"),
        ({"num_hidden_layers": -1}, r"config\.json: num_hidden_layers is -1, expected a whole number"),
        (
            {"vocab_size": 30_000},
            r"model\.safetensors: embeddings\.word_embeddings\.weight is 30,522 x 32, but",
        ),
        ({"num_attention_heads": 5}, r"config\.json: transformers cannot build the model it describes"),
    ],
)
def test_backbone_configs_that_do_not_fit(changes: dict, says: str, tiny_bert: Path, tmp_path: Path) -> None:
    folder = copy(tiny_bert, tmp_path)
    rewrite(folder / "config.json", **changes)
    assert __import__("re").search(says, refusal(folder))


def test_the_model_limit_names_its_variable_and_is_raisable(
    tiny_bert: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lwap.checks.model_folder import check_model_folder

    monkeypatch.setenv("LWAP_MAX_MODEL_BYTES", "1000000")
    text = refusal(tiny_bert)
    assert "more than the model limit of 1,000,000 bytes (set LWAP_MAX_MODEL_BYTES to raise it" in text
    monkeypatch.setenv("LWAP_MAX_MODEL_BYTES", str(64 * 2**20))
    check_model_folder(tiny_bert)


def test_other_families_and_shared_layers_pass(tmp_path: Path) -> None:
    """The checks know no family by name: ALBERT (24 layers sharing one layer's weights, a factorised
    embedding), DistilBERT (its own key names), RoBERTa (positions offset by the padding index) load."""
    from transformers import (
        AlbertConfig,
        AlbertModel,
        DistilBertConfig,
        DistilBertModel,
        RobertaConfig,
        RobertaModel,
    )

    from lwap.checks.model_folder import check_model_folder

    small = {"hidden_size": 32, "num_attention_heads": 2, "intermediate_size": 64, "vocab_size": 1000}
    models = {
        "albert": AlbertModel(AlbertConfig(embedding_size=16, num_hidden_layers=24, **small)),
        "distilbert": DistilBertModel(DistilBertConfig(dim=32, n_layers=3, n_heads=2, hidden_dim=64)),
        "roberta": RobertaModel(RobertaConfig(num_hidden_layers=3, max_position_embeddings=66, **small)),
    }
    for name, model in models.items():
        model.save_pretrained(tmp_path / name)
        check_model_folder(tmp_path / name)


def test_lwap_heads_are_checked_against_their_weights_and_the_backbone(
    tiny_lwap: Path, tmp_path: Path
) -> None:
    """A head config that would allocate a 10⁶ × 10⁶ matrix (4 TB), one for another backbone: refused
    from the config and the header alone."""
    head = "1_LayerwiseAttentionPooling/config.json"
    for changes, says in (
        ({"hidden_size": 10**6}, r"query\.weight is \[32, 32\], but .* describes \[1000000, 1000000\]"),
        ({"num_hidden_states": 9}, r"num_hidden_states 9, but the backbone gives 6 \(5 layers"),
        ({"layers": [0, 7]}, r"cannot build LayerwiseAttentionPooling from it"),
        ({"unexpected": 1}, r"cannot build LayerwiseAttentionPooling from it \(.*unexpected"),
    ):
        folder = copy(tiny_lwap, tmp_path / str(len(os.listdir(tmp_path))))
        rewrite(folder / head, **changes)
        assert __import__("re").search(says, refusal(folder))


def test_tokenizer_files_outside_the_folder_or_past_the_table(tiny_bert: Path, tmp_path: Path) -> None:
    folder = copy(tiny_bert, tmp_path / "outside")
    outside = tmp_path / "vocab.txt"
    outside.write_text("[PAD]\n", encoding="utf-8")
    rewrite(folder / "tokenizer_config.json", vocab_file=str(outside))
    assert "vocab_file" in refusal(folder) and "is a file outside the model folder" in refusal(folder)

    folder = copy(tiny_bert, tmp_path / "vocab")  # a slow tokenizer's vocab.txt, no tokenizer.json
    (folder / "tokenizer.json").unlink()
    (folder / "vocab.txt").write_text("".join(f"t{i}\n" for i in range(30_600)), encoding="utf-8")
    assert "vocab.txt: token 'line 30600' has id 30,599, outside the embedding table of 30,522" in refusal(
        folder
    )

    folder = copy(tiny_bert, tmp_path / "added")
    rewrite(folder / "tokenizer_config.json", added_tokens_decoder={"40000": {"content": "[X]"}})
    assert "tokenizer_config.json: token '[X]' has id 40,000, outside the embedding table" in refusal(folder)


def test_special_files_and_links_in_a_model_folder(tiny_lwap: Path, tmp_path: Path) -> None:
    """A FIFO where transformers would read a file (refused without opening it), /dev/zero linked as a
    module's config (the issue's case: was read without bound), a module path that is a link loop (was a
    TypeError)."""
    folder = copy(tiny_lwap, tmp_path / "fifo")
    os.mkfifo(folder / "special_tokens_map.json")
    assert "special_tokens_map.json: is a named pipe (FIFO), expected a regular file" in refusal(folder)

    folder = copy(tiny_lwap, tmp_path / "zero")
    config = folder / "1_LayerwiseAttentionPooling" / "config.json"
    config.unlink()
    config.symlink_to("/dev/zero")
    assert "config.json: is a link out of the model folder (to /dev/zero)" in refusal(folder)

    folder = copy(tiny_lwap, tmp_path / "loop")
    modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
    shutil.rmtree(folder / modules[1]["path"])
    (folder / modules[1]["path"]).symlink_to(modules[1]["path"])
    assert "1_LayerwiseAttentionPooling: is a symbolic link loop" in refusal(folder)


def test_a_saved_length_past_the_position_table_is_capped(tiny_lwap: Path, tmp_path: Path) -> None:
    """sentence_bert_config.json's max_seq_length 100,000 over a table of 128 positions: capped at load
    (was a RuntimeError on the first long input)."""
    from lwap import load_model
    from lwap.encoding import encode

    folder = copy(tiny_lwap, tmp_path)
    rewrite(folder / "sentence_bert_config.json", max_seq_length=100_000)
    model = load_model(folder)
    assert model.max_seq_length == 128
    vectors = encode(model, [" ".join(["word"] * 3000), "short"])
    assert vectors.shape == (2, 32) and np.isfinite(vectors).all()
