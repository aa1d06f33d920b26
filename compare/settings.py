"""What a cell's numbers depend on besides its config: thread count, precision, library versions, device,
CPU and code. Re-running a cell reproduces its numbers exactly only where all of these match (floating
point sums change with the thread count and the CPU's kernels), so each new cell records them, the
report flags a grid whose cells differ in them, and marks each comparison whose paired cells do
(`crossing`)."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import Any

# The settings that change a cell's numbers; a grid whose cells differ in one of these is flagged.
# `commit` and `platform` are recorded too but not compared: most commits change no number.
COMPARED = (
    "torch_threads",
    "train_precision",
    "eval_precision",
    "torch",
    "transformers",
    "sentence_transformers",
    "device",
    "cpu",
)


def code_version() -> str:
    """The git commit of the lwap source in use (with -dirty for uncommitted changes), or the installed
    version when lwap does not run from a checkout (a wheel)."""
    import lwap

    source = Path(lwap.__file__).resolve().parent
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=source, capture_output=True, text=True)
    if head.returncode != 0:
        return f"lwap {lwap.__version__}"
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=source, capture_output=True
    )
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def cpu_model() -> str:
    """The CPU's model name (Linux /proc/cpuinfo), else what the platform module knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device() -> str:
    """The device sentence-transformers picks for training and evaluation (the same rule in both)."""
    import torch

    if torch.cuda.is_available():
        return f"cuda ({torch.cuda.get_device_name(0)})"
    if torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def current(train_precision: str | None, eval_precision: str) -> dict[str, Any]:
    """This process's settings. The `lwap train` and `lwap eval` subprocesses inherit its environment
    (OMP_NUM_THREADS and the like) and machine, so torch picks the same thread count in them."""
    import sentence_transformers
    import torch
    import transformers

    return {
        "torch_threads": torch.get_num_threads(),
        "thread_environment": {
            key: os.environ[key] for key in ("OMP_NUM_THREADS", "MKL_NUM_THREADS") if key in os.environ
        },
        "train_precision": train_precision,
        "eval_precision": eval_precision,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "sentence_transformers": sentence_transformers.__version__,
        "device": device(),
        "cpu": cpu_model(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "commit": code_version(),
    }


def differences(records: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """The compared settings that take more than one value among `records`, with their values."""
    out = {}
    for key in COMPARED:
        values = sorted({str(r.get(key)) for r in records})
        if len(values) > 1:
            out[key] = values
    return out


def grid_flag(cells: list[dict[str, Any]]) -> list[str]:
    """A report line when a grid's recorded cells differ in a setting that changes numbers; cells made
    before cells recorded their settings are not counted as differing (the report says once that they
    are unrecorded)."""
    recorded = [c for c in cells if c.get("settings")]
    differing = differences([c["settings"] for c in recorded])
    if not differing:
        return []
    listed = "; ".join(f"{key}: {', '.join(values)}" for key, values in differing.items())
    return [
        f"**Settings differ within this grid** ({len(recorded)} cells recorded theirs): {listed}. "
        'Its cells are not all exact re-runs of one setup; see "What a re-run reproduces".',
        "",
    ]


def crossing(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[str]:
    """How two rows' cells made at the same seed differ in setup, the compared settings first (a's values
    against b's, with the seeds where they differ), then seeds where one cell recorded its settings and
    the other did not (made before cells recorded them: another day, perhaps another machine), then
    resumed cells. Empty where each shared seed's two cells match (or neither recorded): a paired
    difference is then read within one setup at every seed."""
    first, second = ({c["seed"]: c for c in cells} for cells in (a, b))
    seeds = sorted(first.keys() & second.keys())
    found: dict[str, tuple[set[str], set[str], list[int]]] = {}
    one_side, resumed = [], []
    for seed in seeds:
        mine, theirs = first[seed].get("settings"), second[seed].get("settings")
        if any((c.get("train") or {}).get("resumed_from") for c in (first[seed], second[seed])):
            resumed.append(seed)
        if bool(mine) != bool(theirs):
            one_side.append(seed)
            continue
        for key in COMPARED if mine and theirs else ():
            if str(mine.get(key)) != str(theirs.get(key)):
                values = found.setdefault(key, (set(), set(), []))
                values[0].add(str(mine.get(key)))
                values[1].add(str(theirs.get(key)))
                values[2].append(seed)
    reasons = [
        f"{key} {', '.join(sorted(ours))} against {', '.join(sorted(other))} ({seed_list(at)})"
        for key, (ours, other, at) in found.items()
    ]
    if one_side:
        reasons.append(f"settings recorded on one side only ({seed_list(one_side)})")
    if resumed:
        reasons.append(f"a resumed cell ({seed_list(resumed)})")
    return reasons


def seed_list(seeds: list[int]) -> str:
    return ("seed " if len(seeds) == 1 else "seeds ") + ", ".join(map(str, seeds))
