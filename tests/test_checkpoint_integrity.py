"""Resume that survives a damaged checkpoint (issue 39): each checkpoint's manifest (sizes and sha256,
written after its files), checked before resuming; `--resume` names the damaged file and falls back to the
newest intact checkpoint; none intact is one line, exit 2. On a real 4-step run of the tiny BERT."""

from __future__ import annotations

import json
import pathlib
import shutil
from pathlib import Path

import pytest
import torch
from test_train_run import tiny_config

from lwap.cli import main
from lwap.train.checkpoint_integrity import MANIFEST, checkpoint_damage, sha256
from lwap.train.outputs import ResumeError, check_output_dir

MARKER = "PAYLOAD_RAN"


class Payload:
    """Unpickled, writes a marker file: what a pickle in place of rng_state.pth could do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (pathlib.Path.write_text, (self.marker, "the pickle ran"))


@pytest.fixture(scope="module")
def killed_run(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(config, output folder) of a run with checkpoints at steps 2 and 4 and no final model, as a run
    killed after its last checkpoint leaves it."""
    from lwap.train import load_config, train

    root = tmp_path_factory.mktemp("integrity")
    config = tiny_config(root, tiny_bert, training={"max_steps": 4}, output={"save_steps": 2})
    train(load_config(config))
    out = root / "run"
    shutil.rmtree(out / "model")
    (out / "train_summary.json").unlink()
    return config, out


def copy_of(killed_run: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    """The run copied to `tmp_path` (same relative layout), its config pointing at the copy."""
    config, out = killed_run
    copy = tmp_path / "run"
    shutil.copytree(out, copy)
    raw = config.read_text(encoding="utf-8").replace(str(out), str(copy))
    new_config = tmp_path / "run.yaml"
    new_config.write_text(raw, encoding="utf-8")
    return new_config, copy


def halve(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def damage(checkpoint: Path, how: str) -> str:
    """Damage one file of `checkpoint` the way `how` says; return that file's name."""
    if how == "half-optimizer":
        halve(checkpoint / "optimizer.pt")
        return "optimizer.pt"
    if how == "half-scheduler":
        halve(checkpoint / "scheduler.pt")
        return "scheduler.pt"
    if how == "pickle-rng":
        torch.save({"python": Payload(checkpoint.parent.parent / MARKER)}, checkpoint / "rng_state.pth")
        return "rng_state.pth"
    raise AssertionError(how)


def test_every_checkpoint_has_a_manifest_of_its_files(killed_run: tuple[Path, Path]) -> None:
    _, out = killed_run
    for step in (2, 4):
        checkpoint = out / "checkpoints" / f"checkpoint-{step}"
        files = json.loads((checkpoint / MANIFEST).read_text(encoding="utf-8"))["files"]
        for name in (
            "optimizer.pt",
            "scheduler.pt",
            "rng_state.pth",
            "model.safetensors",
            "trainer_state.json",
        ):
            assert files[name]["bytes"] == (checkpoint / name).stat().st_size
            assert files[name]["sha256"] == sha256(checkpoint / name)
        assert checkpoint_damage(checkpoint) is None


@pytest.mark.parametrize("manifest", [True, False], ids=["manifest", "no-manifest"])
@pytest.mark.parametrize("how", ["half-optimizer", "half-scheduler", "pickle-rng"])
def test_resume_names_the_damaged_file_and_falls_back(
    how: str,
    manifest: bool,
    killed_run: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With its manifest the damage is a size or hash that differs; without one (an older lwap's
    checkpoint) each file resume reads is loaded as resume loads it, torch.load(weights_only=True)."""
    _, out = copy_of(killed_run, tmp_path)
    newest = out / "checkpoints" / "checkpoint-4"
    if not manifest:
        for found in out.rglob(MANIFEST):
            found.unlink()
    name = damage(newest, how)
    assert check_output_dir(out, overwrite=False, resume=True).name == "checkpoint-2"
    said = capsys.readouterr().err.strip()
    assert said.count("\n") == 0 and str(newest / name) in said, said
    assert "resuming from the newest intact one, checkpoint-2" in said, said
    assert not (out / MARKER).exists(), "the pickle ran"


def test_no_intact_checkpoint_is_one_line_and_exit_2(
    killed_run: tuple[Path, Path], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    config, out = copy_of(killed_run, tmp_path)
    damage(out / "checkpoints" / "checkpoint-4", "half-optimizer")
    damage(out / "checkpoints" / "checkpoint-2", "pickle-rng")
    with pytest.raises(ResumeError, match=r"no intact checkpoint .*checkpoint-4/optimizer\.pt: damaged"):
        check_output_dir(out, overwrite=False, resume=True)
    capfd.readouterr()
    assert main(["train", str(config), "--resume"]) == 2
    err = capfd.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("lwap train: error: --resume: no intact checkpoint"), err
    assert not (out / MARKER).exists()


def test_explicit_resume_of_a_damaged_checkpoint_names_the_earlier_one(
    killed_run: tuple[Path, Path], tmp_path: Path
) -> None:
    _, out = copy_of(killed_run, tmp_path)
    newest = out / "checkpoints" / "checkpoint-4"
    damage(newest, "half-scheduler")
    with pytest.raises(ResumeError, match=r"scheduler\.pt: damaged.*--resume .*checkpoint-2 to continue"):
        check_output_dir(out, overwrite=False, resume=str(newest))


def test_half_a_trainer_state_names_file_and_line(killed_run: tuple[Path, Path], tmp_path: Path) -> None:
    _, out = copy_of(killed_run, tmp_path)
    newest = out / "checkpoints" / "checkpoint-4"
    halve(newest / "trainer_state.json")
    with pytest.raises(ResumeError, match=r"trainer_state\.json: line \d+, column \d+: not valid JSON"):
        check_output_dir(out, overwrite=False, resume=str(newest))


@pytest.mark.slow
def test_resume_after_the_fallback_finishes_the_run(
    killed_run: tuple[Path, Path], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """`lwap train --resume` over a damaged newest checkpoint: continues from checkpoint-2 (two steps),
    saying so, and writes the model."""
    config, out = copy_of(killed_run, tmp_path)
    damage(out / "checkpoints" / "checkpoint-4", "half-optimizer")
    assert main(["train", str(config), "--resume"]) == 0
    err = capfd.readouterr().err
    assert "checkpoint-4/optimizer.pt: damaged" in err and "resuming from the newest intact one" in err
    summary = json.loads((out / "train_summary.json").read_text(encoding="utf-8"))
    assert summary["resumed_from"].endswith("checkpoint-2") and summary["steps"] == 4
    assert summary["steps_this_run"] == 2
    assert checkpoint_damage(out / "checkpoints" / "checkpoint-4") is None  # written again, intact
