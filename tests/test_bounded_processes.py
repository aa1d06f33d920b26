"""Issue 49's cases end to end: each hostile file through the `lwap` command that reads it, in a process of
its own under an address-space limit (3 GiB: a runaway allocation fails there, not on the machine) and a
timeout, stdin closed. Each must end in one line on stderr and exit 2, within seconds, with a peak RSS
(the child's own, from wait4) well under 1 GiB. The cases that fail before torch is imported are in the
fast tier; those that load a model or data (about 10 s each here) are slow.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from conftest import REPO, SENTENCES, write_gzipped_long_line
from test_bounded_reading import BOMB

ADDRESS_SPACE = 3 * 2**30
PEAK_RSS = 2**30  # "well under 1 GiB": the measured peaks are 0.02 GiB without torch, about 0.55 with
TIMEOUT = 120


@dataclass
class Ended:
    code: int
    stderr: str
    seconds: float
    peak_rss: int  # bytes


def run_lwap(argv: list[str], cwd: Path) -> Ended:
    """`python -m lwap ARGV` under ADDRESS_SPACE and TIMEOUT; its exit code, stderr, time and peak RSS."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    err = cwd / "stderr.txt"
    started = time.perf_counter()
    with err.open("wb") as handle:
        process = subprocess.Popen(
            [sys.executable, "-m", "lwap", *argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=handle,
            cwd=cwd,
            env=env,
            preexec_fn=limit,
        )
        timer = threading.Timer(TIMEOUT, process.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        finally:
            timer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    assert seconds < TIMEOUT, f"killed after {TIMEOUT} s: {argv}"
    return Ended(process.returncode, err.read_text(encoding="utf-8"), seconds, usage.ru_maxrss * 1024)


def check_one_line(ended: Ended, command: str, says: str) -> None:
    lines = ended.stderr.splitlines()  # a library's progress bar before the refusal is a line too (issue 67)
    assert ended.code == 2 and len(lines) == 1, f"exit {ended.code}:\n{ended.stderr}"
    assert lines[0].startswith(f"lwap {command}: error: ") and re.search(says, lines[0]), lines[0]
    assert ended.peak_rss < PEAK_RSS, f"peak RSS {ended.peak_rss / 2**30:.2f} GiB"
    print(f"{lines[0][:100]}…: {ended.seconds:.1f} s, peak RSS {ended.peak_rss / 2**20:.0f} MiB")  # -s shows


def config(tmp_path: Path, backbone: Path, **keys: str) -> dict:
    raw = {
        "output": {"dir": str(tmp_path / "run")},
        "model": {"backbone": str(backbone), "pooling": "mean", "max_seq_length": 16},
        "data": {"train": str(tmp_path / "train.txt")},
        "objective": {"name": "unsup_simcse"},
        "training": {"max_steps": 1, "per_device_batch_size": 2, "progress_bar": False},
        "eval": {"dev": None, "keep_best": False, "before_training": False},
    }
    for key, value in keys.items():
        section, name = key.split(".")
        raw[section][name] = value
    (tmp_path / "train.txt").write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    return raw


def test_config_faults_end_in_one_line_before_any_import(tmp_path: Path) -> None:
    """A FIFO as the config (was: not opened, but said 'no such config file'; a reader that opened it
    would wait for ever), an alias bomb in the config and in a --set value (was: hung while memory
    climbed past 4 GiB), a dangling link as output.dir (was FileExistsError)."""
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    check_one_line(run_lwap(["train", str(fifo)], tmp_path), "train", r"fifo\.yaml: is a named pipe \(FIFO\)")

    base = tmp_path / "base.yaml"
    base.write_text(yaml.safe_dump(config(tmp_path, tmp_path / "backbone")), encoding="utf-8")
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(base.read_text(encoding="utf-8").replace("pooling: mean", f"pooling: {BOMB}"))
    check_one_line(run_lwap(["train", str(bomb)], tmp_path), "train", r"bomb\.yaml: line \d+: YAML aliases")
    ended = run_lwap(["train", str(base), "--set", f"model.pooling={BOMB}"], tmp_path)
    check_one_line(ended, "train", r"--set model\.pooling: line 1: YAML aliases expand to more than 100,000")

    (tmp_path / "run").symlink_to(tmp_path / "gone")
    check_one_line(run_lwap(["train", str(base)], tmp_path), "train", r"output\.dir .* which does not exist")
    assert ended.seconds < 30


def test_dev_zero_as_a_compare_cell(tmp_path: Path) -> None:
    results = tmp_path / "grid"
    shutil.copytree(REPO / "benchmarks" / "results" / "compare" / "unsup", results / "unsup")
    (results / "unsup" / "zero.json").symlink_to("/dev/zero")
    ended = run_lwap(["compare", "report", "--results", str(results)], tmp_path)
    check_one_line(ended, "compare", r"zero\.json: is a character device, expected a regular file")


@pytest.mark.slow
def test_model_and_data_faults_end_in_one_line_within_seconds(tiny_bert: Path, tmp_path: Path) -> None:
    """A config.json describing 10⁹ tokens or 10⁵ layers (was: built for minutes past 2 GiB), one
    gzipped line of 1 GiB in the training data (was read whole, past 4 GiB), a JSON line nested 100,000
    deep in a BEIR corpus (was a RecursionError)."""
    for name, key, value in (("vocab", "vocab_size", 10**9), ("layers", "num_hidden_layers", 100_000)):
        folder = tmp_path / name
        shutil.copytree(tiny_bert, folder)
        data = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        (folder / "config.json").write_text(json.dumps({**data, key: value}), encoding="utf-8")
        (tmp_path / "in.txt").write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
        raw = config(tmp_path, folder)
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
        ended = run_lwap(["train", str(tmp_path / f"{name}.yaml")], tmp_path)
        check_one_line(ended, "train", r"more than the model limit|does not fit its weights")

    long_line = write_gzipped_long_line(tmp_path / "long.txt.gz", mebibytes=1024)
    raw = config(tmp_path, tiny_bert, **{"data.train": str(long_line)})
    (tmp_path / "long.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    ended = run_lwap(["train", str(tmp_path / "long.yaml")], tmp_path)
    check_one_line(
        ended, "train", r"long\.txt\.gz:2: the line is longer than the line limit of 1,048,576 bytes"
    )

    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    nested = "[" * 100_000 + "]" * 100_000
    (beir / "corpus.jsonl").write_text('{"_id": "d0", "text": "x"}\n' + nested + "\n", encoding="utf-8")
    (beir / "queries.jsonl").write_text('{"_id": "q0", "text": "x"}\n', encoding="utf-8")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq0\td0\t1\n", encoding="utf-8")
    ended = run_lwap(["eval", str(tiny_bert), "--tasks", str(beir), "--no-progress"], tmp_path)
    check_one_line(ended, "eval", r"corpus\.jsonl:2: not valid JSON \(nested too deeply\)")
