"""benchmarks/grid/lwap_attention_at_init.py: the untrained head's profile is a distribution over the hidden
states, reproducible from the seed (as a grid cell's start), and its peak is no lower than uniform."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import SENTENCES

from benchmarks.grid import lwap_attention_at_init as probe


def test_the_profile_at_init_is_a_distribution_and_follows_the_seed(tiny_bert: Path) -> None:
    first = probe.at_init(str(tiny_bert), "num_layers", 0, SENTENCES)
    again = probe.at_init(str(tiny_bert), "num_layers", 0, SENTENCES)
    other = probe.at_init(str(tiny_bert), "num_layers", 1, SENTENCES)
    layers = len(first["norms"])
    assert len(first["attention"]) == layers == 6  # the tiny BERT's 5 layers and its embedding output
    assert sum(first["attention"]) == pytest.approx(1.0, abs=1e-5)
    assert 1 / layers <= first["peak"] <= 1.0
    assert first == again and first["attention"] != other["attention"]
    assert all(n > 0 for n in first["norms"])


def test_the_table_names_every_hidden_state(tiny_bert: Path, tmp_path: Path) -> None:
    from lwap.compare.grid import Grid

    lines = probe.backbone_table(str(tiny_bert), 0, SENTENCES, Grid(tmp_path, tmp_path / "work"))
    header = next(line for line in lines if line.startswith("| | embedding output"))
    assert header.endswith("| layer 5 |")
    assert any(line.startswith("| attention at init, paper's scale 1/6") for line in lines)
    assert not any("trained" in line for line in lines)  # no cells for this backbone
