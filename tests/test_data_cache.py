"""Issue 65: the `datasets` cache lwap's data loading writes. A damaged entry an earlier run left is rebuilt
once with a note (it was a pyarrow or JSON traceback in every later `lwap train` / `lwap mine`); a full or
read-only cache folder is one line naming it (HF_DATASETS_CACHE), and leaves nothing that breaks the next run.

The full disk and the read-only folder are real: a small tmpfs mounted as the cache (root only; skipped
where mounting is not permitted)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from lwap.cli import main
from lwap.errors import DataError, OutputWriteError
from lwap.train.config import DataConfig
from lwap.train.data import load_train_dataset

PAIRS = "sent0,sent1\nA man sleeps.,A person rests.\nA dog barks.,A hound bays.\nRain falls.,\n"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of this test's own (datasets reads HF_DATASETS_CACHE from its config at each call)."""
    import datasets

    folder = tmp_path / "hf-cache"
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", folder)
    return folder


def sup(path: Path) -> object:
    return load_train_dataset(DataConfig(train=str(path), hard_negative_column=None), "sup_simcse")


def damage(file: Path, how: str) -> None:
    data = file.read_bytes()
    if how == "truncated":
        file.write_bytes(data[: len(data) // 3])
    elif how == "empty":
        file.write_bytes(b"")
    else:  # garbled
        file.write_bytes(b"\x00garbage\xff" * 8)


def only(folder: Path, pattern: str) -> Path:
    found = sorted(folder.rglob(pattern))
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize(
    ("target", "how"),
    [
        ("generator-train.arrow", "truncated"),
        ("generator-train.arrow", "empty"),
        ("generator-train.arrow", "garbled"),
        ("dataset_info.json", "garbled"),
        ("dataset_info.json", "truncated"),
    ],
)
def test_a_damaged_cache_entry_is_rebuilt_once_with_a_note(
    target: str, how: str, cache: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    pairs = tmp_path / "pairs.csv"
    pairs.write_text(PAIRS, encoding="utf-8")
    first = sup(pairs)[:]
    damage(only(cache, target), how)
    capfd.readouterr()
    assert sup(pairs)[:] == first
    notes = [line for line in capfd.readouterr().err.splitlines() if "damaged" in line]
    entry = only(cache, "generator-train.arrow").parent
    assert notes == [notes[0]] and notes[0].startswith(f"lwap: the datasets cache entry {entry} for {pairs}")
    assert notes[0].endswith("removed it, building it again")
    assert sup(pairs)[:] == first and "damaged" not in capfd.readouterr().err  # rebuilt whole: no note


def test_a_damaged_empty_texts_cache_file_and_parquet_entry_are_rebuilt(
    cache: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The `lwap-empty-texts` map cache (a table with an empty text) and the parquet builder's entry."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "pairs.parquet"
    pq.write_table(pa.table({"sent0": ["a", "b"], "sent1": ["c", ""]}), path)
    first = sup(path)[:]
    assert first["positive"] == ["c", " "]
    for damaged in (only(cache / "lwap-empty-texts", "*.arrow"), only(cache / "parquet", "*.arrow")):
        damage(damaged, "truncated")
        capfd.readouterr()
        assert sup(path)[:] == first
        entry = damaged.parent if "parquet" in damaged.parts else damaged  # a builder's folder; map's file
        assert f"lwap: the datasets cache entry {entry}" in capfd.readouterr().err


def test_an_entry_still_damaged_after_the_rebuild_names_the_cache_folder(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where removing the entry does not help (here: the removal is made to do nothing), one line saying
    how to clear the cache, not a traceback."""
    from lwap.train import data_cache

    pairs = tmp_path / "pairs.csv"
    pairs.write_text(PAIRS, encoding="utf-8")
    sup(pairs)
    damage(only(cache, "generator-train.arrow"), "truncated")
    monkeypatch.setattr(data_cache, "_remove", lambda entry: None)
    with pytest.raises(DataError) as refused:
        sup(pairs)
    assert str(refused.value).startswith(f"{pairs}: the datasets cache entry for it is still unreadable")
    assert f"clear the datasets cache folder {cache} (HF_DATASETS_CACHE)" in str(refused.value)


def test_lwap_mine_rebuilds_a_damaged_cache_entry(
    cache: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The command the issue names: `lwap mine` on pairs whose cache entry an earlier run left damaged."""
    from eval_mirror import fruit_model

    model = tmp_path / "model"
    fruit_model().save(str(model))
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("sent0,sent1\napple,apple banana\nbanana,banana cherry\ncherry,cherry apple\n")
    argv = ["mine", str(pairs), "--model", str(model), "--relative-margin", "-1", "--output"]
    assert main([*argv, str(tmp_path / "one.csv")]) == 0
    damage(only(cache, "generator-train.arrow"), "truncated")
    capfd.readouterr()
    assert main([*argv, str(tmp_path / "two.csv")]) == 0
    assert "is damaged" in capfd.readouterr().err
    assert (tmp_path / "one.csv").read_text() == (tmp_path / "two.csv").read_text()


@pytest.fixture
def small_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A 64 KiB tmpfs as the datasets cache: a full disk that is a real one."""
    import datasets

    mount = tmp_path / "small"
    mount.mkdir()
    command = ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)]
    done = subprocess.run(command, capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.decode().strip()})")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", mount)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_cache_folder_is_one_line_and_leaves_nothing_half_built(
    small_cache: Path, tmp_path: Path
) -> None:
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("sent0,sent1\n" + "".join(f"sentence {i} {'x' * 80},other {i}\n" for i in range(4000)))
    with pytest.raises(OutputWriteError) as refused:
        sup(pairs)
    assert str(refused.value).startswith(
        f"the datasets cache folder {small_cache} (HF_DATASETS_CACHE) cannot be written "
        "(No space left on device)"
    )
    assert not list(small_cache.rglob("*.incomplete")) and not list(small_cache.rglob("*.arrow"))
    subprocess.run(["mount", "-o", "remount,size=16m", str(small_cache)], check=True)  # room again
    assert len(sup(pairs)) == 4000


def test_a_read_only_cache_folder_is_one_line(small_cache: Path, tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.csv"
    pairs.write_text(PAIRS, encoding="utf-8")
    subprocess.run(["mount", "-o", "remount,ro", str(small_cache)], check=True)
    says = r"\(HF_DATASETS_CACHE\) cannot be written \(Read-only file system"
    with pytest.raises(OutputWriteError, match=says):
        sup(pairs)
