"""Where data comes from: the mirror, else the sample packaged with lwap, else the hub, else one error line.

The hub cannot be reached here, so its fallbacks are exercised with the fetch functions replaced by
ones that serve local files (recording what was asked for), and the offline error path for real.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from lwap import data_sources
from lwap.data_sources import PACKAGED_SAMPLES, sample_folder, training_file
from lwap.errors import DataError
from lwap.eval.beir_data import load_scifact
from lwap.eval.evaluators import stsb_evaluator
from lwap.eval.sts_data import load_sts_task, load_stsb
from lwap.train.config import DataConfig
from lwap.train.data import load_train_dataset

REPO = Path(__file__).resolve().parents[1]
MIRROR = REPO.parent / "shared" / "data"
WIKI = "$LWAP_DATA_DIR/wiki/wiki_sentences_1m.txt.gz"
needs_mirror = pytest.mark.skipif(not MIRROR.is_dir(), reason="needs the data mirror ../shared/data")


@pytest.fixture(autouse=True)
def fresh_notes(monkeypatch) -> None:
    monkeypatch.setattr(data_sources, "_said", set())


@pytest.fixture
def no_mirror(monkeypatch, tmp_path) -> Path:
    nowhere = tmp_path / "no-mirror"
    monkeypatch.setenv("LWAP_DATA_DIR", str(nowhere))
    return nowhere


@pytest.fixture
def online(monkeypatch) -> None:
    for variable in data_sources.OFFLINE_VARIABLES:
        monkeypatch.delenv(variable, raising=False)


class FakeHub:
    """huggingface_hub.hf_hub_download over local `files` ((repo, filename) -> path); records calls."""

    def __init__(self) -> None:
        self.files: dict[tuple[str, str], Path] = {}
        self.calls: list[tuple[str, str, str]] = []

    def hf_hub_download(
        self, repo_id: str, filename: str, *, repo_type: str | None = None, **_: object
    ) -> str:
        self.calls.append((repo_id, filename, repo_type or "model"))
        if (repo_id, filename) not in self.files:
            raise FileNotFoundError(f"404: {repo_id}/{filename}")
        return str(self.files[(repo_id, filename)])


@pytest.fixture
def fake_hub(monkeypatch) -> FakeHub:
    import huggingface_hub

    hub = FakeHub()
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", hub.hf_hub_download)
    return hub


# --- the packaged sample ---------------------------------------------------------------------------


@needs_mirror
def test_packaged_wiki_sample_is_the_first_lines_of_the_mirror_file() -> None:
    sample = PACKAGED_SAMPLES["wiki/wiki_sentences_1m.txt.gz"]
    packaged = gzip.decompress((sample_folder() / sample.file).read_bytes()).splitlines(keepends=True)
    assert len(packaged) == sample.lines == 16_000
    with gzip.open(MIRROR / "wiki" / "wiki_sentences_1m.txt.gz", "rb") as handle:
        mirror = [next(handle) for _ in range(sample.lines + 1)]
    assert packaged == mirror[: sample.lines]


@needs_mirror
def test_packaged_stsb_dev_is_the_mirror_file() -> None:
    sample = PACKAGED_SAMPLES["stsb/senteval-tokenized/sts-dev.csv"]
    packaged = gzip.decompress((sample_folder() / sample.file).read_bytes())
    assert packaged == (MIRROR / "stsb" / "senteval-tokenized" / "sts-dev.csv").read_bytes()


def test_every_sample_has_its_source_and_license_beside_it() -> None:
    for sample in PACKAGED_SAMPLES.values():
        folder = (sample_folder() / sample.file).parent
        source = next(p for p in (folder, folder.parent) if (p / "SOURCE.md").is_file()) / "SOURCE.md"
        assert "License" in source.read_text(encoding="utf-8")


@needs_mirror
def test_quickstart_training_set_is_identical_with_and_without_the_mirror(monkeypatch, tmp_path) -> None:
    data = DataConfig(train=WIKI, max_examples=16_000)
    monkeypatch.setenv("LWAP_DATA_DIR", str(MIRROR))
    from_mirror = load_train_dataset(data, "unsup_simcse")["text"]
    monkeypatch.setenv("LWAP_DATA_DIR", str(tmp_path / "none"))
    assert training_file(WIKI, 16_000).is_relative_to(sample_folder())
    from_package = load_train_dataset(data, "unsup_simcse")["text"]
    assert from_package == from_mirror and len(from_package) == 16_000


@needs_mirror
def test_stsb_dev_evaluator_reads_the_same_pairs_without_the_mirror(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("LWAP_DATA_DIR", str(MIRROR))
    mirror = stsb_evaluator("dev")
    monkeypatch.setenv("LWAP_DATA_DIR", str(tmp_path / "none"))
    packaged = stsb_evaluator("dev")
    assert (packaged.sentences1, packaged.sentences2, packaged.scores) == (
        mirror.sentences1,
        mirror.sentences2,
        mirror.scores,
    )
    assert len(packaged.scores) == 1500


# --- resolution order ------------------------------------------------------------------------------


def test_the_mirror_wins_over_the_sample(monkeypatch, tmp_path) -> None:
    mirror = tmp_path / "mirror"
    (mirror / "wiki").mkdir(parents=True)
    (mirror / "wiki" / "wiki_sentences_1m.txt.gz").write_bytes(gzip.compress(b"One sentence here.\n"))
    monkeypatch.setenv("LWAP_DATA_DIR", str(mirror))
    assert training_file(WIKI, 10) == mirror / "wiki" / "wiki_sentences_1m.txt.gz"
    (mirror / "stsb").mkdir()  # a mirror without STS-B dev: the sample fills the gap
    assert len(load_stsb("dev")) == 1500


def test_sample_serves_only_as_many_lines_as_it_holds(no_mirror, capsys) -> None:
    assert training_file(WIKI, 16_000) == sample_folder() / "wiki" / "wiki_sentences_16k.txt.gz"
    assert "using the sample packaged with lwap" in capsys.readouterr().err
    for more in (16_001, None):  # the sample cannot stand in: the hub (offline here) is next
        with pytest.raises(DataError, match="HF_HUB_OFFLINE"):
            training_file(WIKI, more)


def test_hub_fallback_for_training_data(no_mirror, online, fake_hub, tmp_path, capsys) -> None:
    wiki1m = tmp_path / "wiki1m_for_simcse.txt"
    wiki1m.write_text("First sentence.\nSecond sentence.\n", encoding="utf-8")
    fake_hub.files[("princeton-nlp/datasets-for-simcse", "wiki1m_for_simcse.txt")] = wiki1m
    assert training_file(WIKI, None) == wiki1m
    assert fake_hub.calls == [("princeton-nlp/datasets-for-simcse", "wiki1m_for_simcse.txt", "dataset")]
    err = capsys.readouterr().err
    assert "reading princeton-nlp/datasets-for-simcse/wiki1m_for_simcse.txt from the hub" in err
    assert "SimCSE's original wiki1m" in err  # said: it is other data than the mirror's


def test_hub_failure_online_names_the_file_and_both_remedies(no_mirror, online, fake_hub) -> None:
    with pytest.raises(DataError) as error:
        training_file(WIKI, None)
    message = str(error.value)
    assert "\n" not in message and "wiki/wiki_sentences_1m.txt.gz" in message and "404" in message
    assert "LWAP_DATA_DIR" in message


def test_offline_error_is_one_line_naming_what_is_missing_and_both_ways(no_mirror) -> None:
    with pytest.raises(DataError) as error:
        training_file(WIKI, None)
    message = str(error.value)
    assert "\n" not in message
    assert "wiki/wiki_sentences_1m.txt.gz" in message and str(no_mirror) in message
    assert "set LWAP_DATA_DIR to the data mirror" in message and "go online" in message


def test_file_without_hub_copy_asks_for_the_mirror(no_mirror) -> None:
    with pytest.raises(DataError, match=r"nli/snli_dev_test_triplets\.csv.*no copy on the Hugging Face hub"):
        training_file("$LWAP_DATA_DIR/nli/snli_dev_test_triplets.csv", None)


def test_paths_outside_the_mirror_are_taken_as_written(no_mirror, tmp_path) -> None:
    own = tmp_path / "mine.txt"
    assert training_file(str(own), None) == own


# --- evaluation data -------------------------------------------------------------------------------


def test_sts_hub_fallback_reads_the_mteb_dataset(no_mirror, online, monkeypatch, capsys) -> None:
    asked: list[tuple[str, str]] = []

    def load_dataset(hub_id: str, split: str) -> list[dict]:
        asked.append((hub_id, split))
        return [{"sentence1": "A  man.", "sentence2": "A person.", "score": 4.0}]

    import datasets

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    task = load_sts_task("stsb")
    assert asked == [("mteb/stsbenchmark-sts", "test")]
    assert task.variant == "hub" and task.sources == ["hf://mteb/stsbenchmark-sts"]
    assert task.concatenated().sentences1 == ["A man."]
    assert "stsb/senteval-tokenized/sts-test.csv is not in the data mirror" in capsys.readouterr().err
    load_sts_task("sickr")
    assert asked[-1] == ("mteb/sickr-sts", "test")


def test_sts_offline_without_mirror_is_one_line(no_mirror) -> None:
    with pytest.raises(DataError) as error:
        load_sts_task("sts12")
    message = str(error.value)
    assert "\n" not in message and "STS12 test" in message and "mteb/sts12-sts" in message
    assert "LWAP_DATA_DIR" in message and "go online" in message


def _write_beir_files(folder: Path) -> dict[tuple[str, str], Path]:
    folder.mkdir()
    docs = [{"_id": "d1", "title": "Apples", "text": "apple"}, {"_id": "d2", "title": "", "text": "pear"}]
    (folder / "corpus.jsonl.gz").write_bytes(
        gzip.compress("".join(json.dumps(d) + "\n" for d in docs).encode())
    )
    queries = [{"_id": "q1", "text": "apple"}, {"_id": "q2", "text": "unjudged"}]
    (folder / "queries.jsonl.gz").write_bytes(
        gzip.compress("".join(json.dumps(q) + "\n" for q in queries).encode())
    )
    (folder / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n", encoding="utf-8")
    return {
        ("BeIR/scifact", "corpus.jsonl.gz"): folder / "corpus.jsonl.gz",
        ("BeIR/scifact", "queries.jsonl.gz"): folder / "queries.jsonl.gz",
        ("BeIR/scifact-qrels", "test.tsv"): folder / "test.tsv",
    }


def test_scifact_hub_fallback_reads_beirs_own_copy(no_mirror, online, fake_hub, tmp_path) -> None:
    fake_hub.files.update(_write_beir_files(tmp_path / "hub"))
    data = load_scifact()
    assert [c[:2] for c in fake_hub.calls] == [
        ("BeIR/scifact", "corpus.jsonl.gz"),
        ("BeIR/scifact", "queries.jsonl.gz"),
        ("BeIR/scifact-qrels", "test.tsv"),
    ]
    assert {c[2] for c in fake_hub.calls} == {"dataset"}
    assert data.name == "scifact" and data.folder == "hf://BeIR/scifact"
    assert data.queries == {"q1": "apple"} and data.document_text("d1") == "Apples apple"


def test_scifact_offline_without_mirror_is_one_line(no_mirror) -> None:
    with pytest.raises(DataError) as error:
        load_scifact()
    message = str(error.value)
    assert "\n" not in message and "SciFact test" in message and "BeIR/scifact" in message
    assert "LWAP_DATA_DIR" in message and "go online" in message


def test_paper_config_hub_data_offline_is_one_line_with_both_ways() -> None:
    data = DataConfig(train="princeton-nlp/datasets-for-simcse", hub_data_files="wiki1m_for_simcse.txt")
    with pytest.raises(DataError) as error:
        load_train_dataset(data, "unsup_simcse")
    message = str(error.value)
    assert "\n" not in message and "princeton-nlp/datasets-for-simcse" in message
    assert "go online" in message and "LWAP_DATA_DIR" in message
