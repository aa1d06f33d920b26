"""Configs by name: `lwap train quickstart` from any folder, `lwap train --list`, and the errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from lwap.cli import main
from lwap.config_files import description, resolve_config, shipped_configs, shipped_folder
from lwap.errors import ConfigError
from lwap.train.config import load_config

REPO = Path(__file__).resolve().parents[1]


def test_every_config_of_the_repository_is_shipped_by_name() -> None:
    in_repo = {
        p.relative_to(REPO / "configs").with_suffix("").as_posix() for p in REPO.glob("configs/**/*.yaml")
    }
    rows = {name for name in in_repo if name.startswith("compare/rows/")}  # lwap compare's, not training's
    assert set(shipped_configs()) == in_repo - rows
    assert {"quickstart", "compare/unsup-minilm"} <= in_repo and "compare/rows/study" in rows


def test_every_shipped_config_has_a_one_line_description_and_loads() -> None:
    for name, path in shipped_configs().items():
        text = description(path)
        assert 20 <= len(text) <= 110, (name, text)
        load_config(path)


def test_names_work_from_any_folder(monkeypatch, tmp_path) -> None:
    monkeypatch.chdir(tmp_path)
    quickstart = shipped_folder() / "quickstart.yaml"
    for value in ("quickstart", "quickstart.yaml", "configs/quickstart.yaml"):
        assert resolve_config(value) == quickstart
    assert resolve_config("compare/unsup-minilm") == shipped_folder() / "compare" / "unsup-minilm.yaml"


def test_an_existing_path_wins_over_a_name(monkeypatch, tmp_path) -> None:
    monkeypatch.chdir(tmp_path)
    own = tmp_path / "quickstart.yaml"
    own.write_text("output: {dir: x}\n", encoding="utf-8")
    assert resolve_config("quickstart.yaml") == Path("quickstart.yaml")
    assert resolve_config(str(own)) == own


def test_unknown_name_suggests_close_matches_and_the_list(tmp_path) -> None:
    with pytest.raises(ConfigError) as error:
        resolve_config("quikstart")
    message = str(error.value)
    assert "no such config file" in message and "did you mean quickstart" in message and "--list" in message
    with pytest.raises(ConfigError, match="no such config file"):
        resolve_config(str(tmp_path / "mine.yaml"))


def test_cli_list_and_errors(capsys) -> None:
    assert main(["train", "--list"]) == 0
    listed = capsys.readouterr().out
    for name, path in shipped_configs().items():
        assert f"{name}  " in listed and description(path) in listed
    assert main(["train", "unsup-simcse-bert-base-lwa"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "did you mean unsup-simcse-bert-base-lwap" in err
    assert main(["train"]) == 2
    assert "--list" in capsys.readouterr().err
