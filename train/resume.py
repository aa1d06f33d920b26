"""What `--resume` may change, and what it never loses (issue 65: a resume cannot destroy).

- The run's record, OUT/config.yaml, stays as the run began. Before anything in OUT is written, the
  resumed config is compared with it: a key in `changes_refused_on_resume()` is refused in one line naming
  the key, both values and the `--set` that restores it. Those are whole sections `model` (the network the
  checkpoint's weights belong to), `data` and `objective` (what it learns from, and how), and in
  `training` what the checkpoint's optimiser, scheduler and data position were made with (`FIXED_TRAINING`:
  the seed that orders the data, the batches, the optimiser's settings). Everything else may change: how
  long the run is (`training.epochs`, `max_steps`), where and how fast it runs (device, precision, attention,
  mini-batches: the same loss and gradients), `eval.*`, `output.*` and logging. Those changes are written to
  OUT/resumed-configs/from-step-N.yaml (the whole resumed config; once there is one, every later resume
  writes its own, so the newest is the config in effect: the model card reads it) and said in one stderr
  line; the summary lists them (`resume_changes`).
- A checkpoint is resumed only from this run: one that is not in OUT/checkpoints, or whose `lwap_run.json`
  names another run id than OUT's output marker, is refused (`check_checkpoint_origin`). Checkpoints
  saved before the run id was recorded carry none and are accepted from OUT/checkpoints.
- No checkpoint is deleted: those newer than the one resumed from (damaged, incomplete, or complete when an
  older one was named) are moved, whole, to OUT/checkpoints-set-aside/<UTC time>/, outside transformers'
  rotation of OUT/checkpoints, and one stderr line says where (`set_aside_newer`).
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from lwap.checks.files import read_yaml, write_text_atomically
from lwap.errors import LwapError
from lwap.train.checkpoint_integrity import checkpoint_run_id, output_run_id
from lwap.train.config import SECTIONS, TrainConfig, config_from_dict, dump_config
from lwap.train.outputs import (
    CHECKPOINTS_DIR,
    CONFIG_YAML,
    RESUMED_CONFIGS_DIR,
    SET_ASIDE_DIR,
    ResumeError,
    checkpoint_step,
    checkpoints,
)

FIXED_SECTIONS = {"model": "the model", "data": "the training data", "objective": "the objective"}
# what the checkpoint's optimiser, scheduler and position in the data were made with: changed, the
# resumed run would silently keep the old value (the optimiser's state) or continue on other batches
FIXED_TRAINING = (
    "seed",
    "per_device_batch_size",
    "drop_last",
    "batch_sampler",
    "length_group_size",
    "learning_rate",
    "head_learning_rate_multiplier",
    "head_warmup_steps",
    "weight_decay",
    "warmup_ratio",
    "lr_scheduler",
)


def changes_refused_on_resume() -> list[str]:
    """Every key `--resume` refuses to change (section.key)."""
    keys = [
        f"{section}.{field.name}"
        for section in FIXED_SECTIONS
        for field in dataclasses.fields(SECTIONS[section])
    ]
    return keys + [f"training.{name}" for name in FIXED_TRAINING]


def check_checkpoint_origin(out: Path, checkpoint: Path) -> None:
    """ResumeError unless `checkpoint` is one of this run's: in OUT/checkpoints, and with OUT's run id (or
    none, saved before checkpoints carried one)."""
    own = (out / CHECKPOINTS_DIR).resolve()
    if checkpoint.resolve().parent != own:
        raise ResumeError(
            f"--resume {checkpoint}: not one of this run's checkpoints (they are in "
            f"{out / CHECKPOINTS_DIR}); a resume continues the run in output.dir from its own checkpoint: "
            "name one of those, or set output.dir to the folder this checkpoint belongs to"
        )
    theirs, ours = checkpoint_run_id(checkpoint), output_run_id(out)
    if theirs is not None and ours is not None and theirs != ours:
        raise ResumeError(
            f"--resume: {checkpoint} was saved by another run (run id {theirs}; this folder's run: {ours}); "
            "move it back to its own output folder, or name one of this run's checkpoints"
        )


def check_resumed_config(out: Path, config: TrainConfig) -> dict[str, list[Any]]:
    """The keys the resumed `config` changes from the run's record (key: [recorded, now]); ResumeError for
    one `changes_refused_on_resume` lists. Reads only; {} when the run has no config.yaml yet."""
    recorded_file = out / CONFIG_YAML
    if not recorded_file.exists():
        return {}
    try:
        recorded = config_from_dict(read_yaml(recorded_file), str(recorded_file)).to_dict()
    except LwapError as error:
        raise ResumeError(
            f"--resume: the run's record cannot be read ({error}); it is what the resumed config is checked "
            "against"
        ) from None
    now = config.to_dict()
    changes = {
        f"{section}.{key}": [recorded[section].get(key), value]
        for section, values in now.items()
        for key, value in values.items()
        if recorded.get(section, {}).get(key) != value
    }
    fixed = set(changes_refused_on_resume())
    refused = [key for key in changes if key in fixed]
    if refused:
        key = refused[0]
        before, after = changes[key]
        section = key.split(".")[0]
        what = FIXED_SECTIONS.get(section, "the batches and the optimiser the checkpoints hold")
        more = f" (also changed: {', '.join(refused[1:])})" if refused[1:] else ""
        restore = "--set " + shlex.quote(f"{key}={_yaml_value(before)}")
        raise ResumeError(
            f"--resume: {key} is {after!r} here, but the run in {out} began with {before!r} "
            f"({recorded_file}); a resumed run keeps {what}: add {restore} to resume it, or start a new run "
            f"in another output.dir{more}"
        )
    return changes


def record_resumed_config(out: Path, config: TrainConfig, changes: dict[str, list[Any]], step: int) -> None:
    """Main process: the record of a resume. config.yaml as the run began (written here only if the run
    has none); the changed config beside it, in OUT/resumed-configs/, said in one stderr line."""
    if not (out / CONFIG_YAML).exists():
        write_text_atomically(out / CONFIG_YAML, dump_config(config))
        return
    folder = out / RESUMED_CONFIGS_DIR
    if not changes and not any(folder.glob("*.yaml")):
        return  # else recorded too: the newest record is the config in effect (outputs.run_config_file)
    folder.mkdir(exist_ok=True)
    path = folder / f"from-step-{step}.yaml"
    again = 2
    while path.exists():  # an earlier resume from the same step keeps its record
        path, again = folder / f"from-step-{step}.{again}.yaml", again + 1
    write_text_atomically(path, dump_config(config))
    said = ", ".join(f"{key} {_yaml_value(old)} → {_yaml_value(new)}" for key, (old, new) in changes.items())
    said = said or "no change from the run's config"
    _say(f"lwap train: resumed with {said}; recorded in {path} ({out / CONFIG_YAML} stays as the run began)")


def set_aside_newer(out: Path, resume_from: Path) -> Path | None:
    """Main process: move every checkpoint newer than `resume_from` out of transformers' way, whole, into
    OUT/checkpoints-set-aside/<UTC time>/; the folder they went to, or None."""
    step = checkpoint_step(resume_from) or 0
    newer = [p for p in checkpoints(out) if (checkpoint_step(p) or 0) > step]
    if not newer:
        return None
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    folder = out / SET_ASIDE_DIR / stamp
    again = 2
    while folder.exists():
        folder, again = out / SET_ASIDE_DIR / f"{stamp}.{again}", again + 1
    folder.mkdir(parents=True)
    for checkpoint in newer:
        os.replace(checkpoint, folder / checkpoint.name)  # same file system: a rename, nothing copied
    names = ", ".join(p.name for p in newer)
    _say(
        f"lwap train: --resume from {resume_from.name}: set aside the newer {names} in {folder} "
        "(nothing deleted; transformers would have overwritten or rotated them)"
    )
    return folder


def _yaml_value(value: Any) -> str:
    """`value` as `--set` reads it back (YAML, one line)."""
    text = yaml.safe_dump(value, default_flow_style=True, width=2**31).strip()
    return text.removesuffix("...").strip()


def _say(message: str) -> None:
    if int(os.environ.get("RANK", "0")) == 0:
        print(message, file=sys.stderr, flush=True)
