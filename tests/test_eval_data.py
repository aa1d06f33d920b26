"""Evaluation data readers: published pair counts on the real mirror, and one test per bad-input case."""

from __future__ import annotations

import gzip
import json

import pytest
from eval_mirror import write_beir, write_sts_pairs

from lwap.errors import DataError
from lwap.eval.beir_data import load_beir
from lwap.eval.sts_data import (
    PUBLISHED_PAIRS,
    STS_TASKS,
    load_sts_task,
    read_sick_file,
    read_sts_pair_files,
    read_stsb_file,
)

STSB_ROW = (
    "main-captions\tMSRvid\t2012test\t0001\t{score}\tA man is playing a guitar .\tA man plays guitar .\n"
)


# --- the real data mirror -------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["senteval", "raw"])
def test_published_pair_counts(variant: str) -> None:
    """3,108 / 1,500 / 3,750 / 3,000 / 1,186 / 1,379 / 4,927 scored pairs, as SentEval/SimCSE."""
    counts = {name: load_sts_task(name, variant).pairs for name in STS_TASKS}
    assert (
        counts
        == PUBLISHED_PAIRS
        == {
            "sts12": 3108,
            "sts13": 1500,
            "sts14": 3750,
            "sts15": 3000,
            "sts16": 1186,
            "stsb": 1379,
            "sickr": 4927,
        }
    )


def test_real_mirror_unscored_pairs_are_skipped_and_subsets_kept() -> None:
    sts15, sts16 = load_sts_task("sts15"), load_sts_task("sts16")
    assert sts15.unscored == 8500 - 3000 and sts16.unscored == 9183 - 1186  # empty gold lines
    assert {name: len(p) for name, p in sts16.subsets.items()} == {
        "answer-answer": 254,
        "headlines": 249,
        "plagiarism": 230,
        "postediting": 244,
        "question-question": 209,
    }
    assert "smt" not in {s.lower() for s in load_sts_task("sts13").subsets}  # STS13 without SMT
    tokenized, raw = load_sts_task("stsb").subsets["test"], load_sts_task("stsb", "raw").subsets["test"]
    assert tokenized.scores == raw.scores
    assert tokenized.sentences1[0] == tokenized.sentences1[0].lower() != raw.sentences1[0]


def test_hub_variant_offline_gives_one_clear_error(monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(DataError, match=r"mteb/sts12-sts .*offline.*variant 'senteval' or 'raw'"):
        load_sts_task("sts12", "hub")


# --- SemEval pair files ---------------------------------------------------------------------------


def test_unscored_pairs_are_skipped(tmp_path) -> None:
    write_sts_pairs(tmp_path, "x", [("a  b", "c", "4.5"), ("d", "e", ""), ("f", "g", "0"), ("h", "i", " ")])
    pairs = read_sts_pair_files(tmp_path / "STS.input.x.txt", tmp_path / "STS.gs.x.txt")
    assert pairs.sentences1 == ["a b", "f"] and pairs.sentences2 == ["c", "g"]
    assert pairs.scores == [4.5, 0.0] and pairs.unscored == 2


def test_input_and_gold_files_must_be_aligned(tmp_path) -> None:
    write_sts_pairs(tmp_path, "x", [("a", "b", "1"), ("c", "d", "2")])
    (tmp_path / "STS.gs.x.txt").write_text("1\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"has 2 lines but .*STS\.gs\.x\.txt has 1"):
        read_sts_pair_files(tmp_path / "STS.input.x.txt", tmp_path / "STS.gs.x.txt")


def test_pair_file_with_one_column_names_file_and_line(tmp_path) -> None:
    write_sts_pairs(tmp_path, "x", [("a", "b", "1"), ("c", "d", "2")])
    (tmp_path / "STS.input.x.txt").write_text("a\tb\nonly one sentence\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"STS\.input\.x\.txt:2: expected 2 tab-separated fields .* found 1"):
        read_sts_pair_files(tmp_path / "STS.input.x.txt", tmp_path / "STS.gs.x.txt")


def test_gold_score_not_a_number_or_out_of_range(tmp_path) -> None:
    write_sts_pairs(tmp_path, "x", [("a", "b", "1"), ("c", "d", "high")])
    with pytest.raises(DataError, match=r"STS\.gs\.x\.txt:2: score 'high' is not a number"):
        read_sts_pair_files(tmp_path / "STS.input.x.txt", tmp_path / "STS.gs.x.txt")
    write_sts_pairs(tmp_path, "x", [("a", "b", "5.5"), ("c", "d", "1")])
    with pytest.raises(DataError, match=r"STS\.gs\.x\.txt:1: score 5\.5 is outside 0–5"):
        read_sts_pair_files(tmp_path / "STS.input.x.txt", tmp_path / "STS.gs.x.txt")
    write_sts_pairs(tmp_path, "x", [("a", "b", "-0.5")])
    with pytest.raises(DataError, match="outside 0–5"):
        read_sts_pair_files(tmp_path / "STS.input.x.txt", tmp_path / "STS.gs.x.txt")


# --- generic file problems (STS-B reader; all readers share lwap.checks.files.text_lines) -----------------


def test_missing_file(tmp_path) -> None:
    with pytest.raises(DataError, match=r"sts-test\.csv: no such file"):
        read_stsb_file(tmp_path / "sts-test.csv")


def test_directory_instead_of_file(tmp_path) -> None:
    with pytest.raises(DataError, match="is a directory, expected a file"):
        read_stsb_file(tmp_path)


def test_empty_file(tmp_path) -> None:
    (tmp_path / "empty.csv").write_bytes(b"")
    with pytest.raises(DataError, match=r"empty\.csv: file is empty"):
        read_stsb_file(tmp_path / "empty.csv")


def test_not_utf8_names_the_line(tmp_path) -> None:
    path = tmp_path / "latin1.csv"
    path.write_bytes(STSB_ROW.format(score="1.0").encode() + "café\tx\n".encode("latin-1"))
    with pytest.raises(DataError, match=r"latin1\.csv:2: not valid UTF-8"):
        read_stsb_file(path)


def test_wrong_delimiter(tmp_path) -> None:
    path = tmp_path / "commas.csv"
    path.write_text("main-captions,MSRvid,2012test,0001,5.0,A man.,A man.\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"commas\.csv:1: expected 7 tab-separated fields .*no tab found"):
        read_stsb_file(path)


def test_too_few_columns_names_file_and_line(tmp_path) -> None:
    path = tmp_path / "short.csv"
    path.write_text(STSB_ROW.format(score="2.0") + "main-captions\tMSRvid\t2012test\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"short\.csv:2: expected 7 tab-separated fields \(genre, .*found 3"):
        read_stsb_file(path)


def test_stsb_score_not_a_number_and_out_of_range(tmp_path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(STSB_ROW.format(score="1.0") + STSB_ROW.format(score="n/a"), encoding="utf-8")
    with pytest.raises(DataError, match=r"bad\.csv:2: score 'n/a' is not a number"):
        read_stsb_file(path)
    path.write_text(STSB_ROW.format(score="7"), encoding="utf-8")
    with pytest.raises(DataError, match=r"bad\.csv:1: score 7\.0 is outside 0–5"):
        read_stsb_file(path)


def test_stsb_header_present_or_absent_gives_the_same_pairs(tmp_path) -> None:
    rows = STSB_ROW.format(score="4.0") + STSB_ROW.format(score="1.5")
    (tmp_path / "plain.csv").write_text(rows, encoding="utf-8")
    header = "genre\tfilename\tyear\tid\tscore\tsentence1\tsentence2\n"
    (tmp_path / "header.csv").write_text(header + rows, encoding="utf-8")
    plain, with_header = read_stsb_file(tmp_path / "plain.csv"), read_stsb_file(tmp_path / "header.csv")
    assert plain == with_header and plain.scores == [4.0, 1.5]
    (tmp_path / "late.csv").write_text(rows + header, encoding="utf-8")  # a header line later is an error
    with pytest.raises(DataError, match=r"late\.csv:3: score 'score' is not a number"):
        read_stsb_file(tmp_path / "late.csv")


def test_sick_crlf_and_header_present_or_absent(tmp_path) -> None:
    header = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment"
    rows = ["1\tA dog runs\tA dog is running\t4.6\tENTAILMENT", "2\tA cat\tNobody\t1.2\tNEUTRAL"]
    (tmp_path / "with.txt").write_bytes(("\r\n".join([header, *rows]) + "\r\n").encode())
    (tmp_path / "without.txt").write_bytes(("\r\n".join(rows) + "\r\n").encode())
    with_header, without = read_sick_file(tmp_path / "with.txt"), read_sick_file(tmp_path / "without.txt")
    assert with_header == without  # the first pair is not lost when the header is missing
    assert without.sentences2 == ["A dog is running", "Nobody"] and without.scores == [4.6, 1.2]  # no \r


def test_unknown_task_and_variant() -> None:
    with pytest.raises(DataError, match="unknown STS task 'sts17'"):
        load_sts_task("sts17")
    with pytest.raises(DataError, match="data variant must be one of"):
        load_sts_task("sts12", "moses")


def test_missing_data_dir(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("LWAP_DATA_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(DataError, match="LWAP_DATA_DIR"):
        load_sts_task("stsb")


# --- BEIR folders --------------------------------------------------------------------------------

DOCS = [{"_id": "d1", "title": "Apples", "text": "apple"}, {"_id": "d2", "title": "", "text": "banana"}]
QUERIES = [
    {"_id": "q1", "text": "apple"},
    {"_id": "q2", "text": "banana"},
    {"_id": "q3", "text": "train only"},
]


def test_beir_reader_keeps_judged_test_queries(tmp_path) -> None:
    folder = write_beir(tmp_path / "b", DOCS, QUERIES, [("q1", "d1", 1), ("q2", "d2", 2), ("q2", "d1", 0)])
    data = load_beir(folder)
    assert data.name == "b" and set(data.corpus) == {"d1", "d2"}
    assert data.queries == {"q1": "apple", "q2": "banana"}  # q3 has no test judgement
    assert data.qrels == {"q1": {"d1": 1}, "q2": {"d2": 2, "d1": 0}}
    assert data.document_text("d1") == "Apples apple" and data.document_text("d2") == "banana"


def test_beir_qrels_header_present_or_absent(tmp_path) -> None:
    qrels = [("q1", "d1", 1), ("q2", "d2", 1)]
    with_header = load_beir(write_beir(tmp_path / "a", DOCS, QUERIES, qrels, header=True))
    without = load_beir(write_beir(tmp_path / "b", DOCS, QUERIES, qrels, header=False, gzip_corpus=False))
    assert with_header.qrels == without.qrels == {"q1": {"d1": 1}, "q2": {"d2": 1}}


def test_truncated_gzip_corpus(tmp_path) -> None:
    folder = write_beir(tmp_path / "b", DOCS * 1, QUERIES, [("q1", "d1", 1)])
    big = [{"_id": f"d{i}", "title": "", "text": "word " * 50} for i in range(400)]
    data = gzip.compress("".join(json.dumps(d) + "\n" for d in big).encode())
    (folder / "corpus.jsonl.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(DataError, match=r"corpus\.jsonl\.gz: truncated or corrupt gzip file"):
        load_beir(folder)


def test_corpus_bad_json_and_missing_keys_name_the_line(tmp_path) -> None:
    folder = write_beir(tmp_path / "b", DOCS, QUERIES, [("q1", "d1", 1)], gzip_corpus=False)
    (folder / "corpus.jsonl").write_text(json.dumps(DOCS[0]) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"corpus\.jsonl:2: not valid JSON"):
        load_beir(folder)
    (folder / "corpus.jsonl").write_text(json.dumps({"id": "d1", "text": "x"}) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"corpus\.jsonl:1: missing key\(s\) \['_id'\]"):
        load_beir(folder)


def test_qrels_problems(tmp_path) -> None:
    folder = write_beir(tmp_path / "b", DOCS, QUERIES, [("q9", "d1", 1)])
    with pytest.raises(DataError, match=r"test\.tsv: 1 query ids are not in queries\.jsonl"):
        load_beir(folder)
    (folder / "qrels" / "test.tsv").write_text("q1 d1 1\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"test\.tsv:1: expected 3 tab-separated fields"):
        load_beir(folder)
    (folder / "qrels" / "test.tsv").write_text("q1\td1\t1\nq2\td2\tyes\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"test\.tsv:2: relevance score 'yes' is not an integer"):
        load_beir(folder)


def test_judgements_that_point_nowhere_are_counted_or_refused(tmp_path) -> None:
    """Issue 65: some judged documents missing from the corpus are a note with counts (misses); none of
    the positive ones present would score 0.00 everywhere, so the folder is refused naming the file."""
    some = write_beir(tmp_path / "some", DOCS, QUERIES, [("q1", "d1", 1), ("q2", "d9", 1), ("q2", "d8", 0)])
    assert load_beir(some).notes == [
        "2 of 3 judgements name documents missing from the corpus "
        "(1 of 2 positive ones; they count as misses)"
    ]
    none = write_beir(tmp_path / "none", DOCS, QUERIES, [("q1", "x1", 1), ("q2", "x2", 2), ("q2", "d1", 0)])
    with pytest.raises(DataError, match=r"test\.tsv: none of its 2 positive judgements names a document of "
                       r"corpus\.jsonl\.gz \(first: 'x1'\)"):
        load_beir(none)


def test_beir_folder_missing_parts(tmp_path) -> None:
    with pytest.raises(DataError, match="no such folder"):
        load_beir(tmp_path / "nope")
    folder = write_beir(tmp_path / "b", DOCS, QUERIES, [("q1", "d1", 1)])
    (folder / "corpus.jsonl.gz").unlink()
    with pytest.raises(DataError, match=r"no corpus\.jsonl or corpus\.jsonl\.gz"):
        load_beir(folder)
