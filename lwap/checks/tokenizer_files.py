"""A model folder's tokenizer checked before it loads: its own files only, whole, and every id it can give
inside the backbone's embedding table.

Without these checks a damaged tokenizer.json ends in transformers' "Unrecognized processing class"
(naming no file), a token id past the embedding table (a larger vocabulary, an added token) in an
IndexError the first time that token is encoded, and `tokenizer_name_or_path` in sentence_bert_config.json
(or a `*_file` key in tokenizer_config.json) loads a tokenizer from anywhere on the machine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lwap.checks.files import check_file, decoded_lines, read_json_object, read_limited
from lwap.checks.limits import TOKENIZER_FILE
from lwap.errors import DataError, ModelLoadError

# sentence_bert_config.json keys whose mappings transformers receives as keyword arguments
KWARG_KEYS = (
    "tokenizer_args",
    "processor_kwargs",
    "model_args",
    "model_kwargs",
    "config_args",
    "config_kwargs",
)


def _json(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        return read_json_object(path)
    except DataError as error:
        raise ModelLoadError(str(error)) from None


def _outside(value: str, folder: Path) -> bool:
    """Whether the path `value` (as transformers would open it: from the working directory) leads out of
    `folder`."""
    target = Path(value).expanduser().resolve()
    return not target.is_relative_to(folder.resolve())


def check_tokenizer_sources(folder: Path) -> None:
    """ModelLoadError if the folder's configs point the tokenizer (or any file transformers reads) at
    something outside it: sentence_bert_config.json's `tokenizer_name_or_path` (a path, or a hub id,
    which would be fetched), a path-like value of its keyword mappings, a `*_file` of
    tokenizer_config.json."""
    sbert_file = folder / "sentence_bert_config.json"
    sbert = _json(sbert_file) or {}
    named = sbert.get("tokenizer_name_or_path")
    if named is not None and (not isinstance(named, str) or _outside(named, folder)):
        raise ModelLoadError(
            f"{sbert_file}: tokenizer_name_or_path {named!r} names a tokenizer outside the model folder; "
            "lwap reads only the folder's own files (remove the key to use the tokenizer saved with it)"
        )
    found = [
        (f"{key}.{name}", value)
        for key in KWARG_KEYS
        if isinstance(sbert.get(key), dict)
        for name, value in sbert[key].items()
        if isinstance(value, str) and ("/" in value or "\\" in value)
    ]
    tokenizer_config = folder / "tokenizer_config.json"
    found_in = {name: sbert_file for name, _ in found}
    for name, value in (_json(tokenizer_config) or {}).items():
        if name.endswith("_file") and isinstance(value, str):
            found.append((name, value))
            found_in[name] = tokenizer_config
    for name, value in found:
        if Path(value).expanduser().exists() and _outside(value, folder):
            raise ModelLoadError(
                f"{found_in[name]}: {name} {value!r} is a file outside the model folder; lwap reads only "
                "the folder's own files"
            )


def check_tokenizer_ids(folder: Path, embedding_rows: int | None, config_file: Path) -> None:
    """ModelLoadError naming the file if the folder's tokenizer.json is damaged, or if a token id it (or
    vocab.txt, tokenizer_config.json's added tokens, added_tokens.json) can give is past the embedding
    table's `embedding_rows`."""
    ids: dict[int, tuple[str, Path]] = {}
    tokenizer_json = folder / "tokenizer.json"
    if tokenizer_json.exists():
        for token, index in _tokenizer_json_vocabulary(tokenizer_json).items():
            ids.setdefault(index, (token, tokenizer_json))
    elif (folder / "vocab.txt").exists():
        vocab = folder / "vocab.txt"
        check_file(vocab)
        count = sum(1 for _ in decoded_lines(vocab))
        ids.setdefault(count - 1, (f"line {count}", vocab))
    decoder = (_json(folder / "tokenizer_config.json") or {}).get("added_tokens_decoder")
    for key, entry in (decoder or {}).items() if isinstance(decoder, dict) else ():
        if not str(key).isdigit():
            raise ModelLoadError(
                f"{folder / 'tokenizer_config.json'}: added_tokens_decoder key {key!r} is no id"
            )
        content = entry.get("content") if isinstance(entry, dict) else None
        ids.setdefault(int(key), (str(content), folder / "tokenizer_config.json"))
    for token, index in (_json(folder / "added_tokens.json") or {}).items():
        if isinstance(index, bool) or not isinstance(index, int):
            raise ModelLoadError(
                f"{folder / 'added_tokens.json'}: {token!r} has id {index!r}, expected a number"
            )
        ids.setdefault(index, (token, folder / "added_tokens.json"))
    if embedding_rows is None or not ids:
        return
    largest = max(ids)
    if largest >= embedding_rows or min(ids) < 0:
        index = largest if largest >= embedding_rows else min(ids)
        token, source = ids[index]
        raise ModelLoadError(
            f"{source}: token {token!r} has id {index:,}, outside the embedding table of {embedding_rows:,} "
            f"rows ({config_file}): the tokenizer does not fit the model"
        )


def _tokenizer_json_vocabulary(path: Path) -> dict[str, int]:
    """Token -> id of a tokenizer.json, added tokens included, parsed by the tokenizers library (what
    transformers loads it with); ModelLoadError naming the file if it is damaged."""
    from tokenizers import Tokenizer

    try:
        data = read_limited(path, TOKENIZER_FILE)
    except DataError as error:
        raise ModelLoadError(str(error)) from None
    try:
        tokenizer = Tokenizer.from_str(data.decode("utf-8"))
    except Exception as error:  # tokenizers raises its own Exception subclass; a bad byte a UnicodeError
        first = next(iter(str(error).strip().splitlines()), type(error).__name__)
        raise ModelLoadError(
            f"{path}: damaged tokenizer file ({first[:200]}); save or copy the model again"
        ) from None
    return tokenizer.get_vocab(with_added_tokens=True)
