"""What a run measured on: the one capture of machine, versions and commit every benchmark records, and
how busy other processes kept the machine.

The commit is $LWAP_COMMIT where set (a GPU machine's checkout may have no git: gpu_check.sh passes it),
else git's, "+uncommitted" when the working tree differs, else "unknown (...)": never an error, since a
run must not die on the machine it describes.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import platform
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from benchmarks import REPO


def cpu_name() -> str:
    """The CPU's model name (/proc/cpuinfo), else what `platform` knows."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def git_commit(checkout: Path) -> str | None:
    """`checkout`'s short commit, "+uncommitted" if its working tree differs; None where git cannot say."""

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["git", "-C", str(checkout), *args], capture_output=True, text=True, check=False, timeout=20
        )

    try:
        head = git("rev-parse", "--short", "HEAD")
        if head.returncode != 0 or not head.stdout.strip():
            return None
        dirty = git("status", "--porcelain").stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("+uncommitted" if dirty else "")


def commit() -> str:
    """This checkout's commit: $LWAP_COMMIT, else git's, else "unknown (...)" (never an error)."""
    if os.environ.get("LWAP_COMMIT"):
        return os.environ["LWAP_COMMIT"]
    if shutil.which("git") is None:
        return "unknown (no git)"
    return git_commit(REPO) or "unknown (not a git checkout)"


def machine_info(threads: int | None = None, device: str = "cpu") -> dict[str, Any]:
    """Machine, versions, commit and date, as every benchmark records them. `threads`: torch's thread
    count for the run (default: this process's); `device`: "cuda" names the GPU."""
    import sentence_transformers
    import torch
    import transformers

    cpu = cpu_name()
    return {
        "device": torch.cuda.get_device_name() if device.startswith("cuda") else cpu,
        "cpu": cpu,
        "cores": os.cpu_count(),
        "torch_threads": threads or torch.get_num_threads(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "transformers": transformers.__version__,
        "sentence_transformers": sentence_transformers.__version__,
        "python": platform.python_version(),
        "tokenizers_parallelism": os.environ.get("TOKENIZERS_PARALLELISM", "unset (parallel)"),
        "commit": commit(),
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
    }


def busy_cores(seconds: float = 3.0) -> float | None:
    """Cores kept busy by other processes right now (from /proc/stat), before this run starts any work."""

    def sample() -> tuple[int, int]:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        return sum(fields), fields[3] + fields[4]  # total, idle + iowait

    try:
        total0, idle0 = sample()
        time.sleep(seconds)
        total1, idle1 = sample()
    except (OSError, ValueError, IndexError):
        return None
    cores = os.cpu_count() or 1
    return cores * (1 - (idle1 - idle0) / max(total1 - total0, 1))
