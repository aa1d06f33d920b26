"""benchmarks/fill_mask_probe.py: a table of top-5 answers from a checkpoint with its MLM head, the step it
is from; a folder without the head (an exported encoder) is refused in one line, exit 2."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest
from transformers import RobertaPreLayerNormConfig, RobertaPreLayerNormForMaskedLM, RobertaPreLayerNormModel

REPO = Path(__file__).resolve().parents[1]
TINY = dict(vocab_size=30522, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16)


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("probe", REPO / "benchmarks" / "fill_mask_probe.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_checkpoint_gives_one_row_per_sentence_and_its_step(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    script = load_script()
    RobertaPreLayerNormForMaskedLM(RobertaPreLayerNormConfig(**TINY, pad_token_id=0)).save_pretrained(
        tmp_path
    )
    state = {"global_step": 4351, "num_input_tokens_seen": 20_810_323}
    (tmp_path / "trainer_state.json").write_text(json.dumps(state), encoding="utf-8")
    assert script.main([str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("step 4351, 20.8 M tokens")
    rows = [line for line in lines if line.startswith("| ") and "___" in line]
    assert len(rows) == len(script.SENTENCES) == 8
    assert all(row.count("(") == 5 for row in rows)  # five answers, each with its probability


def test_an_encoder_without_its_mlm_head_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    RobertaPreLayerNormModel(RobertaPreLayerNormConfig(**TINY, pad_token_id=0)).save_pretrained(tmp_path)
    capsys.readouterr()  # the save's own progress bar
    assert load_script().main([str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert error.startswith("fill_mask_probe.py: error:") and "no MLM head" in error
    assert len(error.strip().splitlines()) == 1
