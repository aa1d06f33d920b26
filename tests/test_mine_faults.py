"""Issue 65: `lwap mine` on a full disk and stopped by a signal ends in one line and leaves nothing behind: no
partial output, no temporary embeddings folder (`.lwap-mine-*`), no half-built `datasets` cache entry.

The full disk is a real one: a small tmpfs holding --output (root only; skipped where mounting is not
permitted)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lwap.cli import main


@pytest.fixture(scope="module")
def saved_lwap(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An lwap model over the tiny random BERT: slow enough at batch size 1 to be stopped mid-encoding."""
    from lwap import build_model

    folder = tmp_path_factory.mktemp("mine") / "lwap-tiny"
    build_model(str(tiny_bert), "lwap").save(str(folder))
    return folder


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs: a disk that really fills."""
    mount = tmp_path / "disk"
    mount.mkdir()
    command = ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)]
    done = subprocess.run(command, capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.decode().strip()})")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def write_pairs(path: Path, count: int, padding: str = "") -> Path:
    words = ("apple", "banana", "cherry")
    lines = ["sent0,sent1"]
    for i in range(count):
        first, second = words[i % 3], words[(i + 1) % 3]
        lines.append(f"{first} {i}{padding},{first} {second} {i}{padding}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def mine_argv(pairs: Path, model: Path, output: Path) -> list[str]:
    return ["mine", str(pairs), "--model", str(model), "--output", str(output), "--relative-margin", "-1"]


def error_lines(text: str) -> list[str]:
    """stderr less the progress bars `mine_hard_negatives` draws."""
    return [
        line for line in text.splitlines() if line.strip() and "it/s]" not in line and "s/it]" not in line
    ]


def test_a_full_disk_under_the_temporary_embeddings_is_one_line(
    fruit_folder: Path, small_disk: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """6,000 distinct candidates: their embeddings (72 KB) do not fit beside the output."""
    pairs = write_pairs(tmp_path / "pairs.csv", 6000)
    output = small_disk / "mined.csv"
    assert main(mine_argv(pairs, fruit_folder, output)) == 2
    lines = [line for line in error_lines(capfd.readouterr().err) if line.startswith("lwap mine")]
    says = (
        f"lwap mine: error: {output}: cannot write the temporary embeddings of the candidates under "
        f"{small_disk} ("
    )
    # numpy's np.save tells a full disk without its errno: "N requested and M written"
    assert len(lines) == 1 and lines[0].startswith(says), lines
    assert "No space left on device" in lines[0] or "a short write" in lines[0]
    assert lines[0].endswith("free space there, or choose an --output on a disk with room")
    assert not any(small_disk.iterdir())


def test_a_full_disk_while_writing_the_output_is_one_line(
    fruit_folder: Path, small_disk: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Few candidates, long texts: the embeddings fit, the CSV (about 200 KB) does not."""
    pairs = write_pairs(tmp_path / "pairs.csv", 60, padding=" apple" * 200)
    output = small_disk / "mined.csv"
    assert main(mine_argv(pairs, fruit_folder, output)) == 2
    lines = [line for line in error_lines(capfd.readouterr().err) if line.startswith("lwap mine")]
    assert lines == [f"lwap mine: error: {output}: cannot write (No space left on device)"]
    assert not any(small_disk.iterdir())


@pytest.mark.slow
@pytest.mark.parametrize(("signame", "code"), [("SIGTERM", 143), ("SIGHUP", 129)])
def test_a_signal_mid_mine_leaves_nothing_behind(
    saved_lwap: Path, tmp_path: Path, signame: str, code: int
) -> None:
    """What a scheduler (SIGTERM) or a closed terminal (SIGHUP) sends while `lwap mine` encodes: exit
    128 + the signal, one line, and neither the output, its temporary embeddings folder, a temporary file
    nor a half-built datasets cache entry is left; the next run then mines as if nothing had happened."""
    out, cache, tmp = tmp_path / "out", tmp_path / "hf-cache", tmp_path / "tmp"
    for folder in (out, tmp):
        folder.mkdir()
    pairs = write_pairs(tmp_path / "pairs.csv", 3000)
    env = {**os.environ, "HF_DATASETS_CACHE": str(cache), "TMPDIR": str(tmp), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "lwap", *mine_argv(pairs, saved_lwap, out / "mined.csv")]
    process = subprocess.Popen(
        [*command, "--batch-size", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True
    )
    deadline = time.monotonic() + 240
    while not list(out.glob(".lwap-mine-*")) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(out.glob(".lwap-mine-*")), f"lwap mine never started encoding: {process.poll()}, " + (
        "" if process.poll() is None else process.communicate()[1][-2000:]
    )
    time.sleep(0.5)
    process.send_signal(getattr(signal, signame))
    _, stderr = process.communicate(timeout=240)
    assert process.returncode == code, stderr
    lines = error_lines(stderr)
    assert lines[-1] == f"lwap mine: stopped by {signame}" and "Traceback" not in stderr, lines
    assert not any(out.iterdir()) and not any(tmp.iterdir())
    assert not list(cache.rglob("*.incomplete")) and not list(cache.rglob("tmp*"))
    finished = subprocess.run(
        [*command, "--batch-size", "256"], capture_output=True, text=True, env=env, timeout=600
    )
    assert finished.returncode == 0, finished.stderr
    assert sorted(p.name for p in out.iterdir()) == ["mined.csv"] and not any(tmp.iterdir())
