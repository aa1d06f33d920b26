"""Reader for retrieval datasets in BEIR layout: `corpus.jsonl[.gz]`, `queries.jsonl`, `qrels/<split>.tsv`.

Not `beir.GenericDataLoader`: the `beir` package is not a dependency and its loader gives no line numbers
on bad input. Not mteb's `RetrievalDatasetLoader`: it reads hub datasets only. This reader keeps only the
queries that have judgements in the split, like both of them.

SciFact by name (`load_scifact`) comes from the data mirror's `beir-scifact/`, else, for users online, from
BEIR's own hub copy: `BeIR/scifact` (corpus.jsonl.gz, queries.jsonl.gz) and `BeIR/scifact-qrels`
(`<split>.tsv`), read with the same reader.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lwap.checks.files import parse_json, text_lines
from lwap.data_sources import HubFile, hub_file
from lwap.errors import DataError
from lwap.eval.fields import is_header, split_fields
from lwap.paths import find_data_dir

SCIFACT_FOLDER = "beir-scifact"
SCIFACT_HUB = ("BeIR/scifact", "BeIR/scifact-qrels")  # corpus + queries, relevance judgements


@dataclass(frozen=True)
class BeirDataset:
    """Corpus, queries (only those judged in `split`) and graded relevance judgements of one split."""

    name: str
    folder: str
    split: str
    corpus: dict[str, tuple[str, str]]  # doc id -> (title, text)
    queries: dict[str, str]  # query id -> text
    qrels: dict[str, dict[str, int]]  # query id -> {doc id: relevance}
    notes: list[str] = field(default_factory=list)

    def document_text(self, doc_id: str) -> str:
        """Title and text joined by a space, as BEIR's sentence-transformers models and mteb do."""
        return document_text(*self.corpus[doc_id])


def document_text(title: str, text: str) -> str:
    """A document as search encodes it: title and text joined by a space (BEIR's models, mteb)."""
    return f"{title} {text}".strip() if title else text.strip()


def _find(folder: Path, stem: str) -> Path:
    for candidate in (folder / stem, folder / f"{stem}.gz"):
        if candidate.exists():
            return candidate
    raise DataError(f"{folder}: no {stem} or {stem}.gz (expected BEIR layout)")


def _read_jsonl(path: Path, need_title: bool) -> dict[str, tuple[str, str]]:
    rows: dict[str, tuple[str, str]] = {}
    for number, line in text_lines(path):
        where = f"{path}:{number}"
        if not line.strip():
            continue
        row = parse_json(line, where, one_line=True, finite=False)  # nesting too deep: a DataError too
        if not isinstance(row, dict):
            raise DataError(f"{where}: expected a JSON object, found {type(row).__name__}")
        missing = [key for key in ("_id", "text") if key not in row]
        if missing:
            raise DataError(f"{where}: missing key(s) {missing}; expected '_id' and 'text'")
        doc_id, text, title = str(row["_id"]), row["text"], row.get("title") or ""
        if not isinstance(text, str) or not isinstance(title, str):
            raise DataError(f"{where}: 'text' and 'title' must be strings")
        if doc_id in rows:
            raise DataError(f"{where}: duplicate _id {doc_id!r}")
        rows[doc_id] = (title if need_title else "", text)
    if not rows:
        raise DataError(f"{path}: no records")
    return rows


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for number, line in text_lines(path):
        where = f"{path}:{number}"
        if not line.strip():
            continue
        fields = split_fields(line, where, 3, "query-id, corpus-id, score")
        if number == 1 and is_header(fields[2]):
            continue
        try:
            score = int(fields[2])
        except ValueError:
            raise DataError(f"{where}: relevance score {fields[2]!r} is not an integer") from None
        qrels.setdefault(fields[0].strip(), {})[fields[1].strip()] = score
    if not qrels:
        raise DataError(f"{path}: no relevance judgements")
    return qrels


def load_beir(folder: str | Path, split: str = "test", name: str | None = None) -> BeirDataset:
    """Load a BEIR-layout folder; DataError naming the file and line of anything malformed."""
    root = Path(folder)
    if not root.is_dir():
        raise DataError(
            f"{root}: {'is a file' if root.exists() else 'no such folder'}, expected a BEIR folder"
        )
    if not any(root.iterdir()):
        raise DataError(f"{root}: empty folder, expected a BEIR folder (corpus.jsonl, queries.jsonl, qrels/)")
    corpus = _find(root, "corpus.jsonl")
    queries = _find(root, "queries.jsonl")
    return load_beir_files(
        corpus, queries, root / "qrels" / f"{split}.tsv", name or root.name, str(root), split
    )


def qrels_splits(folder: Path) -> list[str]:
    """The splits a BEIR folder judges: the names of its `qrels/*.tsv` files."""
    qrels = folder / "qrels"
    return sorted(p.name[: -len(".tsv")] for p in qrels.glob("*.tsv")) if qrels.is_dir() else []


def selection_split(folder: Path) -> str:
    """The split a BEIR folder given as a dev set is read with: `dev` when it has `qrels/dev.tsv`, else its
    one qrels file; DataError when it has none, or several and no `dev` (which one would be a guess)."""
    splits = qrels_splits(folder)
    if "dev" in splits or len(splits) == 1:
        return "dev" if "dev" in splits else splits[0]
    if not splits:
        raise DataError(f"{folder}: no qrels/*.tsv (expected BEIR layout: qrels/dev.tsv for a dev set)")
    raise DataError(
        f"{folder}: qrels/ holds {', '.join(s + '.tsv' for s in splits)} and no dev.tsv: "
        "name the dev split's file qrels/dev.tsv"
    )


def is_beir_folder(folder: Path) -> bool:
    """Whether `folder` holds a BEIR corpus (`corpus.jsonl[.gz]`): what tells one from other folders."""
    return folder.is_dir() and any((folder / name).exists() for name in ("corpus.jsonl", "corpus.jsonl.gz"))


def read_corpus(folder: Path) -> dict[str, str]:
    """A BEIR folder's documents by id, each as `BeirDataset.document_text` joins title and text (what
    `lwap mine` draws negatives from: the very text the search tasks encode)."""
    rows = _read_jsonl(_find(folder, "corpus.jsonl"), need_title=True)
    return {doc_id: document_text(title, text) for doc_id, (title, text) in rows.items()}


def load_scifact(split: str = "test") -> BeirDataset:
    """SciFact from the data mirror, else from BEIR's hub copy (users online, or a cached download)."""
    mirror = find_data_dir()
    if mirror is not None and (mirror / SCIFACT_FOLDER).is_dir():
        return load_beir(mirror / SCIFACT_FOLDER, split, name="scifact")
    corpus_repo, qrels_repo = SCIFACT_HUB
    what, relative = f"SciFact {split}", f"{SCIFACT_FOLDER}/"
    files = [
        hub_file(HubFile(repo, filename), what=what, relative=relative)
        for repo, filename in (
            (corpus_repo, "corpus.jsonl.gz"),
            (corpus_repo, "queries.jsonl.gz"),
            (qrels_repo, f"{split}.tsv"),
        )
    ]
    return load_beir_files(*files, "scifact", f"hf://{corpus_repo}", split)


def load_beir_files(
    corpus_path: Path, queries_path: Path, qrels_path: Path, name: str, folder: str, split: str = "test"
) -> BeirDataset:
    """Read and cross-check a BEIR corpus, queries and one split's relevance judgements."""
    qrels = _read_qrels(qrels_path)
    corpus = _read_jsonl(corpus_path, need_title=True)
    all_queries = {qid: text for qid, (_, text) in _read_jsonl(queries_path, False).items()}
    notes = []
    unknown_queries = sorted(q for q in qrels if q not in all_queries)
    if unknown_queries:
        raise DataError(
            f"{qrels_path}: {len(unknown_queries)} query ids are not in {queries_path.name} "
            f"(first: {unknown_queries[0]!r})"
        )
    judged = {qid: docs for qid, docs in qrels.items() if any(score > 0 for score in docs.values())}
    if not judged:
        raise DataError(f"{qrels_path}: no query has a positive judgement (every relevance score is <= 0)")
    positive = [d for docs in judged.values() for d, score in docs.items() if score > 0]
    missing = [d for d in positive if d not in corpus]
    if len(missing) == len(positive):  # every score would be 0.00: the files do not belong together
        raise DataError(
            f"{qrels_path}: none of its {len(positive):,} positive judgements names a document of "
            f"{corpus_path.name} (first: {missing[0]!r}); are the qrels and the corpus from the same dataset?"
        )
    unknown_docs = sum(1 for docs in qrels.values() for d in docs if d not in corpus)
    if unknown_docs:
        notes.append(
            f"{unknown_docs:,} of {sum(len(d) for d in qrels.values()):,} judgements name documents missing "
            f"from the corpus ({len(missing):,} of {len(positive):,} positive ones; they count as misses)"
        )
    if len(judged) < len(qrels):
        notes.append(f"{len(qrels) - len(judged)} queries have no positive judgement and are left out")
    queries = {qid: all_queries[qid] for qid in all_queries if qid in judged}
    return BeirDataset(name, folder, split, corpus, queries, judged, notes)
