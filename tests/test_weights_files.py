"""Damaged weights files (truncated, empty, not safetensors) in any model folder: one ModelLoadError line
(the CLI cells are in the path matrix, tests/test_path_matrix.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from lwap import build_model, load_model
from lwap.checks.output_claim import MARKER
from lwap.errors import BackboneNotFoundError, ModelLoadError
from lwap.train.outputs import ResumeError, check_output_dir

DAMAGE = {
    "truncated": (lambda data: data[: len(data) // 2], r"truncated \([\d,]+ bytes"),
    "cut-in-header": (lambda data: data[:100], r"truncated \(100 bytes; its header alone is [\d,]+\)"),
    "empty": (lambda data: b"", r"empty \(0 bytes\)"),
    "bad-header": (lambda data: b"PK\x03\x04" + data[4:], r"header damaged \(its length field says [\d,]+ b"),
    "foreign": (lambda data: b"\x80\x04\x95" + bytes(100), r"not safetensors \(103 bytes without"),
}


@pytest.fixture(scope="module")
def saved(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("weights") / "model"
    build_model(str(tiny_bert), "lwap").save(str(folder))
    return folder


@pytest.mark.parametrize("damage", DAMAGE)
@pytest.mark.parametrize("where", ["model.safetensors", "1_LayerwiseAttentionPooling/model.safetensors"])
def test_damaged_weights_are_one_clear_error(saved: Path, tmp_path: Path, damage: str, where: str) -> None:
    folder = tmp_path / "model"
    shutil.copytree(saved, folder)
    weights = folder / where
    change, says = DAMAGE[damage]
    weights.write_bytes(change(weights.read_bytes()))
    with pytest.raises(ModelLoadError, match=rf"^{weights}: damaged weights file, {says}") as error:
        load_model(folder)
    assert len(str(error.value).splitlines()) == 1


def test_damaged_backbone_weights(tiny_bert: Path, tmp_path: Path) -> None:
    backbone = tmp_path / "backbone"
    shutil.copytree(tiny_bert, backbone)
    (backbone / "model.safetensors").write_bytes(b"")
    with pytest.raises(BackboneNotFoundError, match=r"model\.safetensors: damaged weights file, empty"):
        build_model(str(backbone), "mean")


def test_damaged_latest_checkpoint_names_an_earlier_one(
    saved: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--resume` falls back to the newest intact checkpoint, naming the damaged file (issue 39); an
    explicit `--resume CHECKPOINT` of the damaged one names the earlier one to pass instead."""
    for step in (5, 10):
        checkpoint = tmp_path / "checkpoints" / f"checkpoint-{step}"
        shutil.copytree(saved, checkpoint)
        (checkpoint / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    mark = {"made_by": "lwap", "command": "train", "run_id": "0" * 32, "version": "0.1.0"}
    (tmp_path / MARKER).write_text(json.dumps(mark))  # the run's folder is lwap's, as a run marks it
    damaged = tmp_path / "checkpoints" / "checkpoint-10"
    (damaged / "model.safetensors").write_bytes(b"")
    assert check_output_dir(tmp_path, overwrite=False, resume=True).name == "checkpoint-5"
    said = capsys.readouterr().err
    assert "checkpoint-10/model.safetensors: damaged weights file, empty" in said
    assert "resuming from the newest intact one, checkpoint-5" in said
    with pytest.raises(
        ResumeError, match=r"damaged weights file, empty .*--resume .*checkpoint-5 to continue"
    ):
        check_output_dir(tmp_path, overwrite=False, resume=str(damaged))
