"""The three sentence files of issue 66's seen-ness test (docs/COMPARE.md, "Seen-ness apart from domain"),
for verdict_controls.py: as many sentences each as the backbone held out of its pretraining (4,000).

- U: the held-out Wikipedia lines (`mlm_data.read_splits` with the backbone's own arguments, read from
  the command in its SOURCE.md by pretrain_mlm.py's own parser): unseen, the pretraining domain;
- W: the next as many of its training lines, in the mirror's order: seen ~4.7 times in pretraining;
- S: the first as many of issue 50's (b) SNLI list (`unsup_experiments.unseen_snli`): unseen, another
  domain.

What the mirror gives is checked before anything is written: the splits against the data record the
backbone's SOURCE.md keeps, the whole SNLI list against the hash issue 50 committed, and a rebuild
against the record a first `prepare` committed (counts and sha256 of each file), so every machine trains
on the same three files or refuses with one line.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from pathlib import Path
from typing import Any

from benchmarks.backbone.mlm_data import evaluation_sentences, normalise, read_splits
from lwap.checks.files import read_json_object, write_text_atomically
from lwap.paths import data_dir

ARMS = ("U", "W", "S")
ARM_WORDS = {
    "U": "unseen Wikipedia (the backbone's held-out lines)",
    "W": "seen Wikipedia (the next of its training lines)",
    "S": "unseen SNLI (issue 50's (b) list)",
}
COMMAND = re.compile(r"`python (\S*pretrain_mlm\.py)( [^`]*)`")
DATA_RECORD = re.compile(r"^- Data \([^)]*\): `(\{.*\})`$", re.MULTILINE)


class ArmError(Exception):
    """The mirror or the backbone's record does not give the files the pre-registration names."""


def sentences_text(sentences: list[str]) -> str:
    """One sentence a line, as issue 50's files were written (their hashes compare)."""
    return "\n".join(sentences) + "\n"


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def pretraining(backbone: Path) -> tuple[str, Any, dict[str, Any]]:
    """The command the backbone was made with, parsed by pretrain_mlm.py's parser, and the data record
    (what `read_splits` reported then) its SOURCE.md keeps."""
    from benchmarks.backbone.pretrain_mlm import parse_args

    source = backbone / "SOURCE.md"
    text = source.read_text(encoding="utf-8") if source.is_file() else ""
    command, data = COMMAND.search(text), DATA_RECORD.search(text)
    if command is None or data is None:
        raise ArmError(f"{source}: no `python ...pretrain_mlm.py ...` command or `- Data (...)` record")
    return command.group(0).strip("`"), parse_args(shlex.split(command.group(2))), json.loads(data.group(1))


def build(backbone: Path, snli_record: Path | None) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """The three arms' sentences and the record of them; ArmError when the mirror gives other splits than
    the backbone's SOURCE.md records, or another SNLI list than issue 50's (`snli_record`, if it exists)."""
    from benchmarks.backbone.unsup_experiments import unseen_snli

    command, arguments, recorded = pretraining(backbone)
    train, held, splits = read_splits(arguments)
    for key, value in splits.items():
        if recorded.get(key) != value:
            raise ArmError(
                f"{backbone / 'SOURCE.md'}: its data record has {key} = {recorded.get(key)!r}, this mirror "
                f"gives {value!r}: not the splits the backbone was pretrained on"
            )
    mirror = data_dir()
    evaluation, _ = evaluation_sentences(mirror)
    snli, distinct = unseen_snli(mirror, evaluation)
    snli_hash = sha256(sentences_text(snli))
    if snli_record is not None and snli_record.is_file():
        issue50 = read_json_object(snli_record)["snli"]
        if issue50["sha256"] != snli_hash:
            raise ArmError(
                f"{snli_record}: issue 50's SNLI list has sha256 {issue50['sha256'][:12]}..., this mirror "
                f"gives {snli_hash[:12]}... ({len(snli):,} sentences): not (b)'s list"
            )
    count = len(held)
    arms = {"U": held, "W": train[:count], "S": snli[:count]}
    short = [arm for arm, sentences in arms.items() if len(sentences) < count]
    if short:
        raise ArmError(f"arm {short[0]} has {len(arms[short[0]])} sentences, the held-out lines {count}")
    keys = {arm: {normalise(s) for s in sentences} for arm, sentences in arms.items()}
    record = {
        "backbone": backbone.name,
        "pretraining_command": command,
        "splits": splits,
        "snli_list": {
            "distinct": distinct,
            "removed_as_evaluation": distinct - len(snli),
            "sentences": len(snli),
            "sha256": snli_hash,
        },
        "arms": {
            arm: {
                "what": ARM_WORDS[arm],
                "file": f"{arm}.txt",
                "sentences": len(sentences),
                "distinct": len(set(sentences)),
                "sha256": sha256(sentences_text(sentences)),
            }
            for arm, sentences in arms.items()
        },
        # sentences two arms share, compared as the evaluation sets are excluded (case, punctuation folded)
        "shared": {f"{a}-{b}": len(keys[a] & keys[b]) for a, b in (("U", "W"), ("U", "S"), ("W", "S"))},
    }
    return arms, record


def first_difference(found: Any, expected: Any, where: str = "") -> str | None:
    """The first key path at which two JSON values differ, with both values; None when equal."""
    if isinstance(found, dict) and isinstance(expected, dict):
        for key in sorted(found.keys() | expected.keys()):
            inner = first_difference(found.get(key), expected.get(key), f"{where}.{key}".lstrip("."))
            if inner:
                return inner
        return None
    return None if found == expected else f"{where or 'the record'}: {expected!r} recorded, {found!r} now"


def prepare(backbone: Path, folder: Path, record_file: Path, snli_record: Path | None) -> dict[str, Any]:
    """Build the arms; refuse (ArmError) if a committed record says other files; write the three files into
    `folder` (U, W, then S, each whole) and the record, if there was none."""
    arms, record = build(backbone, snli_record)
    if record_file.is_file():
        difference = first_difference(record, read_json_object(record_file))
        if difference:
            raise ArmError(f"{record_file}: the rebuilt arms differ from the committed ones ({difference})")
    folder.mkdir(parents=True, exist_ok=True)
    for arm in ARMS:
        write_text_atomically(folder / f"{arm}.txt", sentences_text(arms[arm]))
    if not record_file.is_file():
        record_file.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomically(record_file, json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    return record


def check_files(folder: Path, record_file: Path) -> None:
    """The arm files in `folder` are the ones `record_file` records (a file edited or rebuilt elsewhere
    would train another experiment): ArmError naming the first that is not."""
    arms = read_json_object(record_file)["arms"]
    for arm in ARMS:
        path, expected = folder / arms[arm]["file"], arms[arm]["sha256"]
        if not path.is_file():
            raise ArmError(f"{path}: no such file (verdict_controls.py prepare writes it)")
        found = hashlib.sha256(path.read_bytes()).hexdigest()
        if found != expected:
            raise ArmError(f"{path}: sha256 {found[:12]}..., {record_file} records {expected[:12]}...")
