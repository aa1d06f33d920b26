"""The repository's benchmark scripts, one folder per reason to rerun them (README.md here says which).

A package so that scripts import each other one way: absolute imports from the repository root
(`from benchmarks.speed.speedbench import timing`). `python -m benchmarks.grid.compare_poolers` runs a
script as a module; run as a file (`python benchmarks/grid/compare_poolers.py`), each script first puts
the repository root on sys.path, as `-m` would. Not installed with lwap (pyproject's packages).

MOVED is the one table from the flat layout's script paths (commit RETIRED_AT was the last with it) to
today's: committed results and model folders keep the command they were made with, verbatim, and code
that shows or runs such a recorded command maps it through `current`. RETIRED are the finished studies
removed with the move: commit RETIRED_AT still has them; their results stay in results/ and docs/.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RETIRED_AT = "06d4c1a"
MOVED = {
    f"benchmarks/{name}": f"benchmarks/{folder}/{name}"
    for folder, names in {
        "speed": (
            "speed.py",
            "speedbench",
            "speed_levers.py",
            "speed_before_after.py",
            "speed_notes.md",
            "encode_memory.py",
            "gpu_speed.py",
            "gpu_check.sh",
            "gpu_report.py",
            "gpu_section.py",
            "gpu_wheels.sh",
        ),
        "baselines": ("quickstart_table.py", "eval_minilm.sh"),
        "grid": ("compare_poolers.py", "rerun_cells.sh", "lwap_attention_at_init.py"),
        "backbone": ("pretrain_mlm.py", "budget_probe.py", "gate_diagnosis.py", "plain_simcse.py"),
    }.items()
    for name in names
}
RETIRED = tuple(
    f"benchmarks/{name}"
    for name in (
        "train_compile.py",
        "encode_levers.py",
        "quickstart_precision.py",
        "pretrain_ablations.py",
        "pretrain_long_run.sh",
        "fill_mask_probe.py",
        "new_backbone_queue.py",
        "dropout_noise_probe.py",
        "geometry_cells.py",
    )
)
# an old path as a whole word: not inside a longer path (benchmarks/speed/speed.py), not a prefix of one
_OLD = re.compile(
    r"(?<![\w/.-])(" + "|".join(map(re.escape, sorted(MOVED, key=len, reverse=True))) + r")(?![\w-])"
)


def current(text: str) -> str:
    """`text` (a recorded command, a path) with every moved script's old path replaced by today's."""
    return _OLD.sub(lambda match: MOVED[match.group(1)], text)


def retired_note(text: str) -> str:
    """What to say after a recorded command that runs a retired script: which commit still has it."""
    return f"; a retired study, its script in commit {RETIRED_AT}" if any(p in text for p in RETIRED) else ""
