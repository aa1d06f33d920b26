"""Issue 67 (2): one line means one line. Each user error of `lwap train`, `mine`, `eval` and `encode`, run as
the real command in a process of its own, exits 2 with exactly one line on stderr: no `datasets` progress bar
("Generating train split"), library warning or stage message before the refusal. And `training.progress_bar:
false` silences every bar a run starts, `datasets`' and sentence-transformers' included.

Each case costs a process (the ones that import torch about 10 s here): the fast tier runs one of each kind
(a config fault; a bad row that `datasets` reads for lwap train, after a backbone whose load report
transformers logs, and for lwap mine; lwap eval's bad model folder, after its data is read; lwap encode's
missing input), the `slow` tier the rest. The selected cases' processes run a few at a time (`outcomes`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import logging.handlers
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from conftest import REPO, SENTENCES, SIDE_BY_SIDE

from lwap.cli import main

GOOD_ROWS = 50  # read before the bad row: `datasets` had drawn "Generating train split: 50 examples"
TIMEOUT = 300
BAD_JSON = rf"row\.jsonl:{GOOD_ROWS + 1}: not valid JSON"


@dataclass(frozen=True)
class Case:
    # after `lwap`; {w} is the world folder, {o} the case's own (for what it would write)
    argv: tuple[str, ...]
    says: str  # a regex the one line must match


def case(argv: str, says: str, slow: bool = False) -> object:
    """A parameter: `argv` split on spaces."""
    return pytest.param(Case(tuple(argv.split()), says), marks=[pytest.mark.slow] if slow else [], id=argv)


TRAIN = "train {w}/train.yaml --set output.dir={o}/run"
CASES = [
    # lwap train: the config, then the inputs the run reads before its output folder
    case("train {w}/none.yaml", r"none\.yaml: no such config file"),
    case(f"{TRAIN} --set training.nope=1", r"unknown key 'training\.nope'", slow=True),
    case(f"{TRAIN} --set training.learning_rate=abc", r"learning_rate must be a number", slow=True),
    case(f"{TRAIN} --set nonsense", r"--set 'nonsense': expected KEY=VALUE", slow=True),
    case(f"{TRAIN} --set data.train={{w}}/none.csv", r"none\.csv: no such file \(data\.train\)", slow=True),
    case(f"{TRAIN} --set data.train={{w}}/columns.csv", r"columns\.csv: missing column\(s\)", slow=True),
    # a backbone whose load report transformers logs (read before the data), then a bad row
    case(f"{TRAIN} --set data.train={{w}}/row.jsonl --set model.backbone={{w}}/mlm", BAD_JSON),
    case(f"{TRAIN} --set data.train={{w}}/row.jsonl", BAD_JSON, slow=True),
    case(
        f"{TRAIN} --set data.train={{w}}/row.csv",
        rf"row\.csv:{GOOD_ROWS + 2}: expected 2 CSV fields as in the header, found 3",
        slow=True,
    ),
    case(f"{TRAIN} --set data.train={{w}}/columns.parquet", r"missing column\(s\) 'sent1'", slow=True),
    case(f"{TRAIN} --set model.backbone={{w}}/broken", r"broken/modules\.json: line 2", slow=True),
    case(f"{TRAIN} --set eval.dev={{w}}/dev.csv", r"dev\.csv:3: score 'zz' .* is not a number", slow=True),
    case("train {w}/train.yaml --set output.dir={w}/foreign", r"was not made by lwap", slow=True),
    # lwap mine: options and paths, then the model, then the pairs through lwap train's readers
    case("mine {w}/row.csv --model {w}/model --output {o}/out.csv", rf"row\.csv:{GOOD_ROWS + 2}: expected 2"),
    case("mine {w}/none.csv --model {w}/model --output {o}/out.csv", r"none\.csv: no such file", slow=True),
    case(
        "mine {w}/columns.csv --model {w}/model --output {o}/out.csv",
        r"columns\.csv: missing column\(s\) 'sent0'",
        slow=True,
    ),
    case("mine {w}/pairs.csv --model {w}/broken --output {o}/out.csv", r"modules\.json: line 2", slow=True),
    case(
        "mine {w}/pairs.csv --model {w}/model --output {o}/out.csv --num-negatives 0",
        r"--num-negatives must be at least 1",
        slow=True,
    ),
    case(
        "mine {w}/pairs.csv --model {w}/model --output {w}/pairs.csv", r"pairs\.csv already exists", slow=True
    ),
    case(
        "mine {w}/pairs.csv --model {w}/model --output {o}/out.csv --corpus {w}/row.csv "
        "--corpus-column sent0",
        rf"row\.csv:{GOOD_ROWS + 2}: expected 2",
        slow=True,
    ),
    # lwap eval: options, output folder, tasks, then the model (its stage lines come once both are read)
    case("eval {w}/broken --tasks {w}/scored.csv", r"broken/modules\.json: line 2"),
    case("eval {w}/model --tasks {w}/row.csv", r"row\.csv: missing column\(s\) 'sentence1'", slow=True),
    case("eval {w}/none --tasks {w}/scored.csv", r"model folder '.*none' does not exist", slow=True),
    case("eval {w}/model --tasks stsx", r"unknown task 'stsx'", slow=True),
    case("eval {w}/model --tasks {w}/empty", r"empty: empty folder, expected a BEIR folder", slow=True),
    case("eval {w}/model --tasks {w}/scored.csv --output {w}/foreign", r"was not made by lwap", slow=True),
    case("eval {w}/model --tasks {w}/scored.csv --batch-size 0", r"batch size must be at least 1", slow=True),
    # lwap encode: options and paths before the model
    case("encode {w}/model --input {w}/none.txt --output {o}/out.npy", r"none\.txt: no such file"),
    case("encode {w}/broken --input {w}/in.txt --output {o}/out.npy", r"modules\.json: line 2", slow=True),
    case("encode {w}/none --input {w}/in.txt --output {o}/out.npy", r"does not exist", slow=True),
    case("encode {w}/model --input {w}/empty --output {o}/out.npy", r"is a directory", slow=True),
    case("encode {w}/model --input {w}/in.txt --output {w}/in.txt", r"in\.txt already exists", slow=True),
    case(
        "encode {w}/model --input {w}/in.txt --output {o}/out.npy --batch-size 0",
        r"--batch-size must be at least 1",
        slow=True,
    ),
]


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def train_config(world: Path, backbone: Path, train: Path, **sections: dict) -> dict:
    raw = {
        "output": {"dir": str(world / "run")},
        "model": {"backbone": str(backbone), "pooling": "mean", "max_seq_length": 16},
        "data": {"train": str(train), "hard_negative_column": None},
        "objective": {"name": "sup_simcse"},
        "training": {"max_steps": 1, "per_device_batch_size": 4, "progress_bar": False},
        "eval": {"dev": None, "keep_best": False, "before_training": False},
    }
    for name, keys in sections.items():
        raw[name].update(keys)
    return raw


def save_masked_lm(folder: Path) -> Path:
    """A tiny BERT saved with its masked-LM head and no pooler, as pretrained checkpoints often are:
    loading it as a backbone, transformers logs a load report (weights unused, weights new)."""
    import torch
    from conftest import tokenizer_folder
    from transformers import AutoConfig, AutoTokenizer, BertForMaskedLM

    torch.manual_seed(0)
    shape = {"hidden_size": 32, "num_attention_heads": 2, "intermediate_size": 64, "num_hidden_layers": 2}
    config = AutoConfig.for_model("bert", vocab_size=30522, max_position_embeddings=128, **shape)
    BertForMaskedLM(config).save_pretrained(folder)
    AutoTokenizer.from_pretrained(tokenizer_folder()).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def world(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every file and folder the cases name, good and bad, in one folder; nothing a case may change."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from lwap import build_model

    w = tmp_path_factory.mktemp("refusals")
    pairs = [f"{SENTENCES[i % 4]} {i},{SENTENCES[(i + 1) % 4]} {i}" for i in range(GOOD_ROWS)]
    write_lines(w / "pairs.csv", ["sent0,sent1", *pairs])
    write_lines(w / "row.csv", ["sent0,sent1", *pairs, "one,two,three"])  # a bad row after 50 good
    write_lines(w / "columns.csv", ["anchor,other", *pairs])
    good = [json.dumps({"sent0": f"first {i}", "sent1": f"second {i}"}) for i in range(GOOD_ROWS)]
    write_lines(w / "row.jsonl", [*good, '{"sent0": "broken'])
    table = {"sent0": [f"a {i}" for i in range(GOOD_ROWS)], "other": [f"b {i}" for i in range(GOOD_ROWS)]}
    pq.write_table(pa.table(table), w / "columns.parquet")
    write_lines(w / "dev.csv", ["sentence1,sentence2,score", "a man,a woman,1", "a dog,a cat,zz"])
    scored = [f"{pair},{i % 5}" for i, pair in enumerate(pairs)]
    write_lines(w / "scored.csv", ["sentence1,sentence2,score", *scored])
    write_lines(w / "in.txt", SENTENCES)
    build_model(str(tiny_bert), "mean").save(str(w / "model"))
    save_masked_lm(w / "mlm")
    (w / "broken").mkdir()
    (w / "broken" / "modules.json").write_text("{\n", encoding="utf-8")  # cut short
    (w / "empty").mkdir()
    (w / "foreign").mkdir()
    (w / "foreign" / "notes.txt").write_text("someone's\n", encoding="utf-8")
    config = train_config(w, tiny_bert, w / "pairs.csv")
    (w / "train.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return w


def listing(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_size for p in sorted(folder.rglob("*")) if p.is_file()}


def run_refusal(refusal: Case, world: Path, own: Path) -> subprocess.CompletedProcess[str]:
    """`lwap` with the case's arguments, in a process of its own; what it would write and its `datasets` cache
    go to `own`, so that cases run side by side meet no other's output folder or lock."""
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "OMP_NUM_THREADS": "1",
        "HF_DATASETS_CACHE": str(own / "datasets"),  # read afresh: `datasets` builds the split
    }
    argv = [part.replace("{w}", str(world)).replace("{o}", str(own)) for part in refusal.argv]
    return subprocess.run(
        [sys.executable, "-m", "lwap", *argv],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT,
    )


@dataclass(frozen=True)
class Outcome:
    done: subprocess.CompletedProcess[str]
    wrote: dict[str, int]  # the files it left in its own folder (its `datasets` cache aside)


@dataclass(frozen=True)
class Outcomes:
    cases: dict[Case, Outcome]
    before: dict[str, int]  # the world's files before any case ran, and after all of them
    after: dict[str, int]


@pytest.fixture(scope="module")
def outcomes(
    request: pytest.FixtureRequest, world: Path, tmp_path_factory: pytest.TempPathFactory
) -> Outcomes:
    """Every selected case's process, run a few at a time: each is still a process of its own, but one after
    another their imports (about 6 s each) made the slow tier's cases cost 3 minutes of CI."""
    selected = [
        item.callspec.params["refusal"]
        for item in request.session.items
        if getattr(item, "originalname", None) == "test_a_refusal_is_one_line_on_stderr"
    ]
    folders = tmp_path_factory.mktemp("cases")

    def outcome(index: int, refusal: Case) -> Outcome:
        own = folders / str(index)
        own.mkdir()
        done = run_refusal(refusal, world, own)
        return Outcome(done, {k: v for k, v in listing(own).items() if not k.startswith("datasets")})

    before = listing(world)
    with ThreadPoolExecutor(max_workers=SIDE_BY_SIDE) as pool:
        ran = pool.map(outcome, range(len(selected)), selected)
        cases = dict(zip(selected, ran, strict=True))
    return Outcomes(cases, before, listing(world))


@pytest.mark.parametrize("refusal", CASES)
def test_a_refusal_is_one_line_on_stderr(refusal: Case, outcomes: Outcomes) -> None:
    done, wrote = outcomes.cases[refusal].done, outcomes.cases[refusal].wrote
    command = refusal.argv[0]
    # the whole of stderr: one line ending in a newline (a bar's carriage returns would not match)
    assert done.returncode == 2 and re.fullmatch(rf"lwap {command}: error: [^\r\n]+\n", done.stderr), (
        f"exit {done.returncode}, stderr:\n{done.stderr!r}"
    )
    assert re.search(refusal.says, done.stderr), done.stderr
    assert not wrote  # nothing written where it would write
    assert outcomes.after == outcomes.before  # and no case wrote or changed anything in the world


def test_no_progress_bar_means_none_from_any_library(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """A run with `training.progress_bar: false` on a file `datasets` reads into its cache (a split it
    generates, and a map for an empty text) draws no bar at all: not `datasets`' ("Generating train
    split", "empty texts"), not sentence-transformers' ("Computing widget examples"), not the trainer's.
    The backbone's load report, a warning, is still said: once the inputs are read."""
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "datasets"))  # read afresh
    pairs = tmp_path / "pairs.parquet"
    anchors = [f"{SENTENCES[i % 4]} {i}" for i in range(12)]
    pq.write_table(pa.table({"sent0": anchors, "sent1": ["", *anchors[1:]]}), pairs)  # one empty text
    backbone = save_masked_lm(tmp_path / "mlm")
    raw = train_config(tmp_path, backbone, pairs, training={"max_steps": 2})
    (tmp_path / "train.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    capfd.readouterr()  # the bar of this test's own save_pretrained, above
    logged = logging.handlers.BufferingHandler(capacity=10**6)  # beside transformers' own handler
    logging.getLogger("transformers").addHandler(logged)
    try:
        assert main(["train", str(tmp_path / "train.yaml")]) == 0
    finally:
        logging.getLogger("transformers").removeHandler(logged)
    captured = capfd.readouterr()
    output = captured.err + captured.out
    assert "1 empty texts in the training data" in captured.out  # the map that fills it did run
    # transformers' warning, held while the inputs were read, then said (read as logged: its own handler
    # writes to the stderr pytest had when transformers was imported, maybe not this test's)
    assert any("LOAD REPORT" in record.getMessage() for record in logged.buffer)
    assert "\r" not in output and not re.search(r"it/s\]|examples/s\]|\d+%\|", output), output
    assert datasets.is_progress_bar_enabled()  # as it was before the run


@pytest.mark.parametrize("ending", ["good", "refused", "bug"])
def test_library_warnings_are_held_until_the_inputs_are_good(
    ending: str, capfd: pytest.CaptureFixture[str]
) -> None:
    """Inside, a library's logged warning and a Python warning reach nobody; after it they are said as they
    would have been, unless a user error ended it (its one line is then all); a bug has them said."""
    import warnings

    import transformers  # noqa: F401 (its handler on the "transformers" logger writes to stderr)

    from lwap.errors import DataError
    from lwap.library_output import library_warnings_held

    logger = logging.getLogger("transformers.modeling_utils")
    ended = {"good": None, "refused": DataError("bad.csv:2: a bad row"), "bug": RuntimeError("a bug")}[ending]
    logged = logging.handlers.BufferingHandler(capacity=10**6)  # beside transformers' own handler
    logging.getLogger("transformers").addHandler(logged)
    # `shown`: what reaches whoever shows warnings outside the block (here a recorder, not stderr)
    try:
        with warnings.catch_warnings(record=True) as shown, contextlib.suppress(DataError, RuntimeError):
            warnings.simplefilter("always")
            with library_warnings_held():
                logger.warning("the load report of a backbone")
                warnings.warn("a library's warning", UserWarning, stacklevel=1)
                assert not logged.buffer and not shown and not capfd.readouterr().err  # held
                if ended is not None:
                    raise ended
    finally:
        logging.getLogger("transformers").removeHandler(logged)
    said = [record.getMessage() for record in logged.buffer] == ["the load report of a backbone"]
    warned = [str(w.message) for w in shown] == ["a library's warning"]
    assert said == warned == (ending != "refused"), (said, warned)
    assert logging.getLogger("transformers").handlers  # its own handler is back
