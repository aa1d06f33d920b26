"""Whether a checkpoint can be resumed from: every file `--resume` reads, checked before the run resumes.

transformers writes a checkpoint's files (weights, optimizer.pt, scheduler.pt, rng_state.pth, and
trainer_state.json last) and reads them back only once the resumed run has started, so a damaged one (half
an optimizer.pt from a full disk or an interrupted copy, a foreign file under a checkpoint's name) ends
the resumed run in a traceback. Here:

- `ChecksumCheckpoints` (a trainer callback) writes `lwap-manifest.json` into each checkpoint right after
  transformers has written it: every file's size and sha256. Written last, atomically: a checkpoint
  whose manifest is there was complete when saved.
- `checkpoint_damage` compares a checkpoint with its manifest (a changed size or hash names the file).
  A checkpoint without one (saved by an older lwap, or stopped between trainer_state.json and the
  manifest) is checked by loading what resume loads instead: the JSON state, the safetensors headers,
  and the torch files through `torch.load(weights_only=True)`, which refuses a pickle that would run code.

`lwap.train.outputs.check_output_dir` uses it to fall back from a damaged newest checkpoint to the newest
intact one, saying which file was damaged.

Which run a checkpoint belongs to: `ChecksumCheckpoints` also writes `lwap_run.json` ({"run_id": ...}, the
run id of OUT's output marker, before the manifest, which lists it), and `lwap.train.resume` refuses to
resume a checkpoint carrying another run's id.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments
from transformers.trainer_pt_utils import safe_globals

from lwap.checks.files import open_regular, read_json_object
from lwap.checks.output_claim import MARKER as OUTPUT_MARKER
from lwap.checks.weights_files import check_weights_files
from lwap.errors import LwapError

MANIFEST = "lwap-manifest.json"
RUN_FILE = "lwap_run.json"
# what transformers' resume loads with torch.load (weights_only=True); rng_state_N.pth under DDP
TORCH_FILES = ("optimizer.pt", "scheduler.pt", "scaler.pt")
_CHUNK = 2**22


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open_regular(path) as handle:  # a FIFO put in a checkpoint is refused, never waited on
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def write_manifest(checkpoint: Path) -> None:
    """`checkpoint`/lwap-manifest.json: size and sha256 of every file in it (the manifest aside)."""
    files = sorted(p for p in checkpoint.rglob("*") if p.is_file() and p.name != MANIFEST)
    entries = {
        p.relative_to(checkpoint).as_posix(): {"bytes": p.stat().st_size, "sha256": sha256(p)} for p in files
    }
    # a plain OSError if the disk is full (not lwap.checks.files' OutputWriteError), so the run's handler of a
    # refused checkpoint write (lwap.train.outputs.checkpoint_write_error) reports it as for any other file
    partial = checkpoint / f".{MANIFEST}.partial"
    partial.write_text(json.dumps({"format": 1, "files": entries}, indent=2) + "\n", encoding="utf-8")
    os.replace(partial, checkpoint / MANIFEST)


def output_run_id(out: Path) -> str | None:
    """The run id in OUT's output marker, or None (no marker: a folder made before markers, or none)."""
    return _run_id(out / OUTPUT_MARKER)


def checkpoint_run_id(checkpoint: Path) -> str | None:
    """The run id a checkpoint was saved with, or None (saved before checkpoints carried one)."""
    return _run_id(checkpoint / RUN_FILE)


def _run_id(path: Path) -> str | None:
    if not path.is_file():
        return None
    run_id = read_json_object(path).get("run_id")  # a damaged file is one line naming it
    return run_id if isinstance(run_id, str) and run_id else None


def write_run_id(checkpoint: Path) -> None:
    """`checkpoint`/lwap_run.json with the run id of the output folder it is saved in (OUT/checkpoints/..),
    if that folder has one. A plain OSError on a full disk, as `write_manifest`."""
    run_id = output_run_id(checkpoint.parent.parent)
    if run_id is None:
        return
    partial = checkpoint / f".{RUN_FILE}.partial"
    partial.write_text(json.dumps({"run_id": run_id}) + "\n", encoding="utf-8")
    os.replace(partial, checkpoint / RUN_FILE)


def checkpoint_damage(checkpoint: Path) -> str | None:
    """What is wrong with `checkpoint` (one line naming the file), or None if resume can read all of it."""
    if (checkpoint / MANIFEST).is_file():
        return _against_manifest(checkpoint)
    return _by_loading(checkpoint)


def _against_manifest(checkpoint: Path) -> str | None:
    manifest = checkpoint / MANIFEST
    try:
        files = read_json_object(manifest).get("files")
    except LwapError as error:
        return str(error)
    if not isinstance(files, dict) or not files:
        return f"{manifest}: damaged (no 'files')"
    for name, entry in files.items():
        path = checkpoint / name
        if (
            Path(name).is_absolute()
            or ".." in Path(name).parts
            or not isinstance(entry, dict)
            or not (isinstance(entry.get("bytes"), int) and isinstance(entry.get("sha256"), str))
        ):
            return f"{manifest}: damaged (entry {name!r})"
        if not path.is_file():
            return f"{path}: missing (listed in {MANIFEST} when the checkpoint was saved)"
        size = path.stat().st_size
        if size != entry.get("bytes"):
            saved = entry.get("bytes")
            return f"{path}: damaged, {size:,} bytes where {saved:,} were saved (truncated or replaced)"
        if sha256(path) != entry.get("sha256"):
            return f"{path}: damaged, its content differs from what was saved (sha256)"
    return None


def _by_loading(checkpoint: Path) -> str | None:
    try:
        read_json_object(checkpoint / "trainer_state.json", finite=False)
        check_weights_files(checkpoint)
    except LwapError as error:
        return str(error)
    torch_files = [checkpoint / name for name in TORCH_FILES if (checkpoint / name).is_file()]
    torch_files += sorted(checkpoint.glob("rng_state*.pth"))
    for path in torch_files:
        try:
            with safe_globals():  # exactly as transformers' resume loads them (the numpy types it allows)
                torch.load(path, map_location="cpu", weights_only=True)
        except Exception as error:  # any failure to load is damage (torch raises many kinds)
            first = next(iter(str(error).strip().splitlines()), type(error).__name__)
            return f"{path}: damaged, torch cannot load it ({first[:200]})"
    return None


class ChecksumCheckpoints(TrainerCallback):
    """Write each checkpoint's manifest once transformers has saved it (main process, after every process
    has written its own RNG file)."""

    def on_save(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any):
        if dist.is_available() and dist.is_initialized():
            dist.barrier()  # rng_state_N.pth of every process is written before the manifest lists them
        if state.is_world_process_zero:
            checkpoint = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if checkpoint.is_dir():
                write_run_id(checkpoint)
                write_manifest(checkpoint)
