"""The output folder of a run: what is in it, when it counts as finished, and how it is written safely.

    OUT/config.yaml            the complete config the run used (every key)
    OUT/checkpoints/checkpoint-N/  transformers checkpoints (weights, optimizer, scheduler, RNG, state)
    OUT/tensorboard/           TensorBoard event files
    OUT/metrics.csv            every logged value: step, epoch, metric, value
    OUT/model/                 the final model (best weights + model card); exists only once complete
    OUT/train_summary.json     numbers of the run
    OUT/training_curves.png    training loss and STS-B dev Spearman over steps

A run is *finished* when OUT/model exists: it is written under a temporary name and renamed at the end,
so a crash while saving never leaves a folder that loads as a finished model.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from lwap.errors import ConfigError, LwapError, OutputExistsError
from lwap.files import atomic_path, check_output, leftover_partials

MODEL_DIR = "model"
CHECKPOINTS_DIR = "checkpoints"
TENSORBOARD_DIR = "tensorboard"
METRICS_CSV = "metrics.csv"
SUMMARY_JSON = "train_summary.json"
CURVES_PNG = "training_curves.png"
CONFIG_YAML = "config.yaml"
_RUN_ARTIFACTS = (
    MODEL_DIR,
    CHECKPOINTS_DIR,
    TENSORBOARD_DIR,
    METRICS_CSV,
    SUMMARY_JSON,
    CURVES_PNG,
    CONFIG_YAML,
)
_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")


class ResumeError(LwapError):
    """`--resume` was asked for, but there is no complete checkpoint to resume from."""


def is_finished(out: Path) -> bool:
    return (out / MODEL_DIR / "modules.json").is_file()


def checkpoint_step(folder: Path) -> int | None:
    match = _CHECKPOINT.match(folder.name)
    return int(match.group(1)) if match else None


def is_complete_checkpoint(folder: Path) -> bool:
    """transformers writes trainer_state.json last: a checkpoint with a readable one is complete."""
    try:
        state = json.loads((folder / "trainer_state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (folder / "modules.json").is_file() and state.get("global_step") == checkpoint_step(folder)


def checkpoints(out: Path) -> list[Path]:
    """Checkpoint folders (complete or not), oldest first."""
    folder = out / CHECKPOINTS_DIR
    if not folder.is_dir():
        return []
    found = [p for p in folder.iterdir() if p.is_dir() and checkpoint_step(p) is not None]
    return sorted(found, key=lambda p: checkpoint_step(p) or 0)


def latest_complete_checkpoint(out: Path) -> Path | None:
    complete = [p for p in checkpoints(out) if is_complete_checkpoint(p)]
    return complete[-1] if complete else None


def check_output_dir(out: Path, *, overwrite: bool, resume: bool | str | None) -> Path | None:
    """Refuse what would lose or mix up work (read-only); return the checkpoint to resume from, if any."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"output.dir {str(out)!r} is a file, not a folder")
    check_output(out, folder=True, label=f"output.dir {str(out)!r}", error=ConfigError)
    if resume and overwrite:
        raise ConfigError("--resume and --overwrite (output.overwrite) contradict each other; choose one")
    if is_finished(out) and not overwrite:
        raise OutputExistsError(
            f"{out} already holds a finished model ({out / MODEL_DIR}); pass --overwrite "
            "(or set output.overwrite: true) to replace it, or choose another output.dir"
        )
    if resume:
        if isinstance(resume, str):
            checkpoint = Path(resume).expanduser()
            if not checkpoint.is_dir():
                found = "is a file" if checkpoint.exists() else "no such folder"
                raise ResumeError(f"--resume {resume}: {found}, expected a checkpoint folder (checkpoint-N)")
            if not is_complete_checkpoint(checkpoint):
                raise ResumeError(f"--resume {resume}: not a complete checkpoint folder (checkpoint-N)")
            return checkpoint
        checkpoint = latest_complete_checkpoint(out)
        if checkpoint is None:
            raise ResumeError(f"--resume: no complete checkpoint in {out / CHECKPOINTS_DIR}")
        return checkpoint
    if checkpoints(out) and not overwrite:
        latest = checkpoints(out)[-1].name
        raise OutputExistsError(
            f"{out} holds checkpoints of an unfinished run (latest {latest}); pass --resume to continue it, "
            "or --overwrite to start over"
        )
    return None


def prepare_output_dir(out: Path, *, overwrite: bool, resume_from: Path | None) -> None:
    """Main process only: clear a previous run if overwriting, drop broken checkpoints, check writability."""
    if overwrite:
        for name in _RUN_ARTIFACTS:
            path = out / name
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
    if out.is_dir():
        for stale in leftover_partials(out / MODEL_DIR):  # left by a crash while saving the final model
            shutil.rmtree(stale, ignore_errors=True)
    if resume_from is not None:
        resume_step = checkpoint_step(resume_from) or 0
        for checkpoint in checkpoints(out):
            if (checkpoint_step(checkpoint) or 0) > resume_step:  # written after it, but never completed
                shutil.rmtree(checkpoint)
    try:
        (out / CHECKPOINTS_DIR).mkdir(parents=True, exist_ok=True)
        probe = out / ".lwap-write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise ConfigError(f"output.dir {str(out)!r} is not writable ({error.strerror or error})") from None


def save_model_atomically(model: Any, out: Path) -> Path:
    """`model.save` into a temporary folder beside OUT/model, then rename it into place."""
    final = out / MODEL_DIR
    with atomic_path(final) as partial:
        model.save(str(partial))
    return final
