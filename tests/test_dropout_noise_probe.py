"""benchmarks/dropout_noise_probe.py: dropout 0 leaves a sentence's vector equal to itself; noise moves it."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType, SimpleNamespace

from conftest import load_benchmark, make_tiny_bert


def load_script() -> ModuleType:
    return load_benchmark("dropout_noise_probe")


def test_noise_moves_a_sentence_away_from_itself_only_when_dropout_is_on(tmp_path: Path) -> None:
    backbone = make_tiny_bert(tmp_path / "tiny", num_layers=2)
    words = ["a cat sat", "the dog ran far", "rain fell today", "we ate bread", "ships sail", "stars shine"]
    pairs = SimpleNamespace(sentences1=words, sentences2=words[::-1], scores=[0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    script = load_script()
    rows = script.probe(str(backbone), rates=(0.0, 0.3), pairs=pairs)
    by = {(r["rate"], r["pooling"]): r for r in rows}
    assert set(by) == {(0.0, "cls"), (0.0, "mean"), (0.3, "cls"), (0.3, "mean")}
    for pooling in ("cls", "mean"):
        assert abs(by[0.0, pooling]["same_sentence"] - 1.0) < 1e-5  # no noise: the same vector
        assert by[0.3, pooling]["same_sentence"] < 0.999  # noise moved it
    assert script.table(rows).count("\n") == len(rows) + 1


def test_a_missing_folder_is_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    assert load_script().main([str(tmp_path / "none")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "cannot load" in lines[0]
