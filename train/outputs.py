"""The output folder of a run: what is in it, when it counts as finished, and how it is written safely.

    OUT/config.yaml            the complete config the run used (every key)
    OUT/checkpoints/checkpoint-N/  transformers checkpoints (weights, optimizer, scheduler, RNG, state)
    OUT/tensorboard/           TensorBoard event files
    OUT/metrics.csv            every logged value: step, epoch, metric, value
    OUT/model/                 the final model (best weights + model card); exists only once complete
    OUT/train_summary.json     numbers of the run
    OUT/training_curves.png    training loss and STS-B dev Spearman over steps
    OUT/.lwap-train.lock       while a run uses the folder: pid, host, start, command (lwap.checks.locking)
    OUT/.lwap-output.json      the mark of a folder lwap made (lwap.checks.output_claim): a non-empty folder
                               without it is refused unless --overwrite, which never touches what it held
    OUT/resumed-configs/from-step-N.yaml  a resume's config, where it changed what may change
    OUT/checkpoints-set-aside/<UTC time>/checkpoint-N/  newer checkpoints a resume moved out of the way
    (config.yaml stays as the run began; what a resume may change: lwap.train.resume)

A run is *finished* when OUT/model exists: it is written under a temporary name and renamed at the end,
so a crash while saving never leaves a folder that loads as a finished model.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lwap.checks.files import atomic_path, check_output, leftover_partials, read_json_object, write_failure
from lwap.checks.locking import hold
from lwap.checks.output_claim import FolderClaim, check_folder, mark_folder
from lwap.errors import ConfigError, LwapError, OutputExistsError, OutputWriteError

MODEL_DIR = "model"
CHECKPOINTS_DIR = "checkpoints"
TENSORBOARD_DIR = "tensorboard"
METRICS_CSV = "metrics.csv"
SUMMARY_JSON = "train_summary.json"
CURVES_PNG = "training_curves.png"
CONFIG_YAML = "config.yaml"
LOCK_FILE = ".lwap-train.lock"
SET_ASIDE_DIR = "checkpoints-set-aside"
RESUMED_CONFIGS_DIR = "resumed-configs"
_RUN_ARTIFACTS = (
    MODEL_DIR,
    CHECKPOINTS_DIR,
    TENSORBOARD_DIR,
    METRICS_CSV,
    SUMMARY_JSON,
    CURVES_PNG,
    CONFIG_YAML,
    SET_ASIDE_DIR,
    RESUMED_CONFIGS_DIR,
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
    """transformers writes trainer_state.json last: a checkpoint with a readable one was written to the end.
    Whether its files are intact too is `lwap.train.checkpoint_integrity.checkpoint_damage`'s question."""
    try:
        state = read_json_object(folder / "trainer_state.json", finite=False)  # a NaN loss is logged as NaN
    except LwapError:
        return False
    return (folder / "modules.json").is_file() and state.get("global_step") == checkpoint_step(folder)


def checkpoints(out: Path) -> list[Path]:
    """Checkpoint folders (complete or not), oldest first."""
    folder = out / CHECKPOINTS_DIR
    if not folder.is_dir():
        return []
    found = [p for p in folder.iterdir() if p.is_dir() and checkpoint_step(p) is not None]
    return sorted(found, key=lambda p: checkpoint_step(p) or 0)


def run_config_file(out: Path) -> Path:
    """The config the run's model was finished with: config.yaml (as the run began), or the newest
    resume's record of what it changed (lwap.train.resume writes one at every resume once there is one)."""
    folder = out / RESUMED_CONFIGS_DIR
    resumed = sorted(folder.glob("*.yaml"), key=lambda p: p.stat().st_mtime_ns) if folder.is_dir() else []
    return resumed[-1] if resumed else out / CONFIG_YAML


def latest_complete_checkpoint(out: Path) -> Path | None:
    complete = [p for p in checkpoints(out) if is_complete_checkpoint(p)]
    return complete[-1] if complete else None


_WRITTEN = (*_RUN_ARTIFACTS, LOCK_FILE, f"{CHECKPOINTS_DIR}/*", f"{CHECKPOINTS_DIR}/*/*")
_CONFIG_SECTION = re.compile(r"^(model|output):", re.MULTILINE)


def check_output_path(out: Path) -> None:
    """ConfigError unless OUT is (or can be created as) a folder this process can write in."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"output.dir {str(out)!r} is a file, not a folder")
    check_output(out, folder=True, label=f"output.dir {str(out)!r}", error=ConfigError, entries=_WRITTEN)


def is_earlier_run(out: Path) -> bool:
    """A run folder of an lwap from before the output marker: lwap's config.yaml (its `model:` and
    `output:` sections) beside at least one other run artifact, so `--resume` of it keeps working."""
    config = out / CONFIG_YAML
    if not config.is_file() or config.is_symlink() or config.stat().st_size > 1_000_000:
        return False
    try:
        sections = set(_CONFIG_SECTION.findall(config.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError):
        return False
    others = (name for name in _RUN_ARTIFACTS if name != CONFIG_YAML)
    return sections == {"model", "output"} and any((out / name).exists() for name in others)


def claim_output_dir(out: Path, *, overwrite: bool) -> FolderClaim:
    """Whether this run may write OUT (lwap.checks.output_claim): ConfigError, one line, for a user's
    non-empty folder without --overwrite, or a user's entry named as a run artifact; read-only."""
    label = f"output.dir {str(out)!r}"
    legacy = is_earlier_run
    return check_folder(out, "train", overwrite=overwrite, writes=_WRITTEN, label=label, legacy=legacy)


@contextlib.contextmanager
def run_lock(out: Path) -> Iterator[None]:
    """Hold OUT's lock for a run (main process only): a second run, or `--resume`, on a folder a live
    run uses refuses with one line naming it (LockedError, exit 2). Folders created only to hold the
    lock are removed again if the run leaves them empty (a run refused for a bad input leaves nothing)."""
    check_output_path(out)
    created = []
    folder = out
    while not folder.exists():
        created.append(folder)
        folder = folder.parent
    out.mkdir(parents=True, exist_ok=True)
    try:
        with hold(out / LOCK_FILE, f"output folder {out}"):
            yield
    finally:
        for folder in created:  # deepest first; stops at the first one the run left something in
            try:
                folder.rmdir()
            except OSError:
                break


def check_output_dir(out: Path, *, overwrite: bool, resume: bool | str | None) -> Path | None:
    """Refuse what would lose or mix up work (read-only); return the checkpoint to resume from, if any."""
    check_output_path(out)
    claim_output_dir(out, overwrite=bool(overwrite))
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
                fault = _state_fault(checkpoint)
                raise ResumeError(
                    f"--resume {resume}: not a complete checkpoint folder (checkpoint-N){fault}"
                )
            damage = _damage(checkpoint)
            if damage is not None:
                intact = _intact(checkpoint.parent.parent, before=checkpoint_step(checkpoint) or 0)
                hint = f"; pass --resume {intact} to continue from an earlier one" if intact else ""
                raise ResumeError(f"--resume {resume}: {damage}{hint}")
            return checkpoint
        complete = [p for p in checkpoints(out) if is_complete_checkpoint(p)]
        if not complete:
            raise ResumeError(f"--resume: no complete checkpoint in {out / CHECKPOINTS_DIR}")
        damaged: list[str] = []
        for checkpoint in reversed(complete):  # the newest intact one
            damage = _damage(checkpoint)
            if damage is None:
                if damaged:
                    _say(
                        f"lwap train: --resume: {damaged[-1]}; {len(damaged)} newer checkpoint"
                        f"{'s are' if len(damaged) > 1 else ' is'} damaged, resuming from the newest intact "
                        f"one, {checkpoint.name}"  # the run's next line says where they are set aside
                    )
                return checkpoint
            damaged.append(damage)
        folder = out / CHECKPOINTS_DIR
        raise ResumeError(f"--resume: no intact checkpoint in {folder} (the newest: {damaged[0]})")
    if checkpoints(out) and not overwrite:
        latest = checkpoints(out)[-1].name
        raise OutputExistsError(
            f"{out} holds checkpoints of an unfinished run (latest {latest}); pass --resume to continue it, "
            "or --overwrite to start over"
        )
    return None


def _damage(checkpoint: Path) -> str | None:
    """What `--resume` would fail on in `checkpoint` (lwap.train.checkpoint_integrity; its model folder as
    lwap.checks.model_folder allows one), or None."""
    # here, not at the top: `lwap card` and lwap compare's runner read this module's names without training,
    # and checkpoint_integrity imports transformers
    from lwap.checks.model_folder import check_model_folder
    from lwap.train.checkpoint_integrity import checkpoint_damage

    damage = checkpoint_damage(checkpoint)
    if damage is not None:
        return damage
    try:
        check_model_folder(checkpoint)
    except LwapError as error:
        return str(error)
    return None


def _intact(out: Path, before: int) -> Path | None:
    """The newest complete, undamaged checkpoint in `out` older than step `before`."""
    earlier = [p for p in checkpoints(out) if (checkpoint_step(p) or 0) < before]
    earlier = [p for p in earlier if is_complete_checkpoint(p)]
    return next((p for p in reversed(earlier) if _damage(p) is None), None)


def _state_fault(checkpoint: Path) -> str:
    """Why trainer_state.json makes `checkpoint` incomplete, when it is there but unreadable."""
    state = checkpoint / "trainer_state.json"
    if not state.exists():  # a FIFO or a device is there: read_json_object names it
        return ""
    try:
        read_json_object(state, finite=False)
    except LwapError as error:
        return f": {error}"
    return ""


def _say(message: str) -> None:
    """A line on stderr from the main process only (every process checks the output folder)."""
    if int(os.environ.get("RANK", "0")) == 0:
        print(message, file=sys.stderr, flush=True)


def checkpoint_write_error(error: BaseException, out: Path) -> OutputWriteError | None:
    """The one-line error for a checkpoint the file system refused to write (None if `error` is not
    that); removes the half-written checkpoint, which would never be resumed from but holds space."""
    reason = write_failure(error, out)
    if reason is None:
        return None
    broken = [p for p in checkpoints(out) if not is_complete_checkpoint(p)]
    for folder in broken:
        shutil.rmtree(folder, ignore_errors=True)
    where = broken[-1] if broken else Path(getattr(error, "filename", None) or out / CHECKPOINTS_DIR)
    latest = latest_complete_checkpoint(out)
    after = (
        f"the last complete checkpoint, {latest.name}, is intact: free some space, then continue with "
        "--resume"
        if latest
        else "no checkpoint was complete yet: free some space and start again"
    )
    return OutputWriteError(f"{where}: cannot write ({reason}); {after}")


def prepare_output_dir(out: Path, *, overwrite: bool) -> None:
    """Main process only: mark OUT as lwap's, clear a previous run if overwriting (lwap's own artifacts
    alone, never an entry the folder held before lwap adopted it), check writability. A resume deletes no
    checkpoint: the newer ones are set aside first (lwap.train.resume.set_aside_newer)."""
    claim = claim_output_dir(out, overwrite=overwrite)
    mark_folder(claim)
    if overwrite:
        for name in _RUN_ARTIFACTS:
            path = out / name
            if name in claim.foreign or path.is_symlink():  # not lwap's (check_output refuses links)
                continue
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
    if out.is_dir():
        for stale in leftover_partials(out / MODEL_DIR):  # left by a crash while saving the final model
            shutil.rmtree(stale, ignore_errors=True)
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
    try:
        with atomic_path(final) as partial:
            model.save(str(partial))
    except OutputWriteError as error:
        kept = checkpoints(out)
        hint = "; the checkpoints are intact: free some space, then --resume writes the model" if kept else ""
        raise OutputWriteError(f"{error}{hint}") from None
    return final
