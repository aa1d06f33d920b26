"""benchmarks/elastic/adaptive_layer_probe.py on the tiny BERT: the two behaviours of sentence-transformers'
AdaptiveLayerLoss it reports hold against the installed library, and lwap's depth reading avoids both."""

from __future__ import annotations

from pathlib import Path

from benchmarks.elastic.adaptive_layer_probe import (
    POOLERS,
    markdown,
    multi_layer_differences,
    unsupervised_differences,
)


def test_multi_layer_poolers_see_every_layer_in_the_library_but_not_in_lwap(tiny_bert: Path) -> None:
    rows = multi_layer_differences(str(tiny_bert), pairs=8)
    assert sorted(rows) == [0, 1, 2, 3, 4]  # the library's shallower terms: layers 0 .. L-1 (L = 5)
    for layer, row in rows.items():
        assert row["mean: library"] > 1e-3  # mean pooling reads layer k's token embeddings
        for pooling in ("lwap", "first_last_avg", "weighted"):
            assert row[f"{pooling}: library"] == 0.0, (layer, pooling)  # the full-depth vector again
            if layer >= 1:
                assert row[f"{pooling}: lwap"] > 1e-3, (layer, pooling)
    assert markdown(rows)[0].startswith("| layer k | mean: library | mean: lwap |")


def test_unsupervised_positive_is_the_anchor_below_the_last_layer(tiny_bert: Path) -> None:
    rows = unsupervised_differences(str(tiny_bert), pairs=8)
    for layer, row in rows.items():
        for pooling in POOLERS:
            one_column = row[f"{pooling}, one column: states"]
            assert (one_column > 1e-3) if layer == 5 else (one_column == 0.0), (layer, pooling)
        assert row["mean, two columns: vectors"] > 1e-4  # separate feature dicts keep their own states
        if layer >= 1:
            assert row["mean, lwap's depth loss: vectors"] > 1e-4
