"""The machine a run measured: CPU, versions, commit, and how busy other processes kept it."""

from __future__ import annotations

import contextlib
import datetime
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

from speedbench.settings import REPO


def machine_info(threads: int) -> dict[str, Any]:
    import sentence_transformers
    import torch
    import transformers

    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=False
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True, check=False
    ).stdout.strip()
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "torch_threads": threads,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "sentence_transformers": sentence_transformers.__version__,
        "python": platform.python_version(),
        "commit": commit + ("+uncommitted" if dirty else ""),
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
