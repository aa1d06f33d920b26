"""Encode sentences with input checks, and encode text files to `.npy` without holding them in memory.

`SentenceTransformer.encode` does the work; this module adds what a command-line user needs around it:
clear errors for non-string input, an empty result of the right width, bf16 on the model's device, and
streaming of arbitrarily large files into a memory-mapped `.npy` (one row per input line, order kept).
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from numpy.lib.format import write_array_header_1_0
from sentence_transformers import SentenceTransformer
from tqdm.auto import tqdm

from lwap.checks.files import (
    atomic_path,
    bounded_lines,
    check_file,
    check_output,
    decoded_lines,
    write_failure,
)
from lwap.checks.limits import STANDARD_INPUT
from lwap.errors import DataError, InputError, OutputWriteError

PRECISIONS = ("fp32", "bf16")


def check_sentences(sentences: Sequence[Any]) -> list[str]:
    """Return `sentences` as a list of str; raise InputError naming the first bad index and its type."""
    if isinstance(sentences, str):
        return [sentences]
    checked = list(sentences)
    for index, sentence in enumerate(checked):
        if not isinstance(sentence, str):
            raise InputError(f"sentence {index} is {type(sentence).__name__}, expected str")
    return checked


def autocast(precision: str, device: str | torch.device = "cpu") -> contextlib.AbstractContextManager[Any]:
    """bf16 autocast on `device`'s type (the model's: an autocast on another device type does nothing),
    or nothing for fp32. On the CPU bf16 means faster matmuls (docs/BENCHMARKS.md)."""
    if precision not in PRECISIONS:
        raise InputError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if precision == "bf16":
        return torch.autocast(torch.device(device).type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def encode(
    model: SentenceTransformer,
    sentences: Sequence[Any],
    *,
    batch_size: int = 64,
    normalize: bool = False,
    precision: str = "fp32",
    show_progress_bar: bool = False,
) -> np.ndarray:
    """Embeddings as float32 array (n, dim); (0, dim) for an empty list.

    Each distinct sentence is encoded once, so duplicates get bit-identical rows (batched matmuls
    would otherwise differ in the last float bits) and repeated text costs nothing.
    """
    texts = check_sentences(sentences)
    dim = model.get_embedding_dimension()
    if not texts:
        return np.zeros((0, dim), dtype=np.float32)
    first_index: dict[str, int] = {}
    rows = [first_index.setdefault(text, len(first_index)) for text in texts]
    with autocast(precision, model.device):
        embeddings = model.encode(
            list(first_index),
            batch_size=batch_size,
            normalize_embeddings=normalize,
            convert_to_numpy=True,
            show_progress_bar=show_progress_bar,
        )
    return embeddings.astype(np.float32, copy=False)[rows]


# `lwap encode` has always named a bad line this way (docs/RELIABILITY.md row 10)
_UTF8_ERROR = "{label}: line {line} is not valid UTF-8 ({reason})"


STDIN_LABEL = "standard input"
SPOOL_BLOCK = 2**20  # bytes of standard input written to the spool at once


def _spooled_stdin(stack: contextlib.ExitStack) -> Path:
    """Standard input copied to a temporary file (its lines are counted before the `.npy` header is
    written, and a pipe is read once), removed when `stack` closes, whatever ends it. Read as a file is:
    a line past the line limit is refused once the bound is read, and the whole past `STANDARD_INPUT`
    once that much is spooled, so neither is first written whole to disk."""
    # unbuffered, written in blocks here: a buffered file would flush again on close, raising the disk's
    # refusal a second time, from the stack's exit
    named = tempfile.NamedTemporaryFile("wb", buffering=0, prefix="lwap-stdin-", suffix=".txt")  # noqa: SIM115
    spool = stack.enter_context(named)
    bound, size, block = STANDARD_INPUT.value(), 0, bytearray()
    try:
        for _, raw in bounded_lines(sys.stdin.buffer, STDIN_LABEL):
            size += len(raw)
            if size > bound:
                raise DataError(STANDARD_INPUT.refusal(STDIN_LABEL, size, "bytes or more"))
            block += raw
            if len(block) >= SPOOL_BLOCK:
                _write_all(spool, block)
                block.clear()
        _write_all(spool, block)
    except OSError as error:
        reason = write_failure(error)
        if reason is None:
            raise
        raise OutputWriteError(
            f"{STDIN_LABEL}: cannot spool it to {Path(spool.name).parent} ({reason}); set TMPDIR to a "
            f"folder with room, or give --input a file"
        ) from None
    return Path(spool.name)


def _write_all(raw: Any, data: bytearray) -> None:
    """All of `data` to an unbuffered file, whose `write` may take only part (on a disk nearly full)."""
    view = memoryview(data)
    while view:
        view = view[raw.write(view) :]


def encode_file(
    model: SentenceTransformer,
    input_path: str,
    output_path: str,
    *,
    batch_size: int = 64,
    normalize: bool = False,
    precision: str = "fp32",
    chunk_lines: int = 16384,
    show_progress_bar: bool = True,
) -> int:
    """Encode one sentence per line of `input_path` ("-" = stdin) into `output_path` (.npy); return rows.

    Memory stays bounded by `chunk_lines`: the lines are counted first, the `.npy` header is written for
    that shape, and each chunk's embeddings are appended as they come. (Writing through a memory map
    would keep every written page resident: 1.5 GB of RSS for 1M × 384.) The file is written under a
    temporary name and renamed when complete, so a crash never leaves a plausible result; read it back
    with `np.load(path, mmap_mode="r")` to keep memory bounded there too.
    """
    with contextlib.ExitStack() as stack:
        if input_path == "-":
            source, label = _spooled_stdin(stack), STDIN_LABEL
        else:
            source, label = Path(input_path), input_path
            check_file(source, label, allow_empty=True)
        # counted by decoding, so a line that is not UTF-8 stops the run before anything is written
        total = sum(1 for _ in decoded_lines(source, label, utf8_error=_UTF8_ERROR))
        output = Path(output_path)
        check_output(output, folder=False)
        header = {"descr": "<f4", "fortran_order": False, "shape": (total, model.get_embedding_dimension())}
        try:
            output.parent.mkdir(parents=True, exist_ok=True)
            partial = stack.enter_context(atomic_path(output))
            handle = stack.enter_context(partial.open("wb"))
        except OSError as error:
            raise OutputWriteError(f"{output_path}: cannot write ({error.strerror or error})") from None
        write_array_header_1_0(handle, header)
        bar = stack.enter_context(
            tqdm(total=total, unit="sent", disable=not show_progress_bar, desc="encode")
        )
        done, chunk = 0, []

        def write_chunk() -> None:
            nonlocal done, chunk
            embeddings = encode(model, chunk, batch_size=batch_size, normalize=normalize, precision=precision)
            try:
                handle.write(np.ascontiguousarray(embeddings, dtype="<f4").tobytes())
                handle.flush()
            except OSError as error:  # disk full, file size limit: say so (atomic_path removes the file)
                raise OutputWriteError(
                    f"{output_path}: cannot write embeddings ({error.strerror or error})"
                ) from None
            done += len(chunk)
            bar.update(len(chunk))
            chunk = []

        try:
            for _, line in decoded_lines(source, label, utf8_error=_UTF8_ERROR):
                chunk.append(line.rstrip("\r\n"))
                if len(chunk) == chunk_lines:
                    write_chunk()
            if chunk:
                write_chunk()
            handle.close()
            if done != total:
                raise DataError(f"{input_path}: changed while being encoded ({total} lines, then {done})")
        finally:
            if done != total:
                with contextlib.suppress(OSError):  # the write error is already on its way up
                    handle.close()
    return total
