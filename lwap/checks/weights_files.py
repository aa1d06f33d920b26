"""Check a model folder's safetensors files before loading: a damaged one is one clear error, not a
SafetensorError traceback from deep inside transformers.

Truncated (an interrupted copy or download), empty, or not safetensors at all (another format under the
name, a header overwritten): `safetensors.safe_open` reads only the header and checks that the tensors it
lists fit in the file, so this costs a few milliseconds, not a load.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from lwap.checks.files import open_regular, read_json
from lwap.errors import DataError, LwapError, ModelLoadError

_MAX_HEADER = 100_000_000  # safetensors' own limit on the JSON header's length


def weights_files(folder: Path) -> list[Path]:
    """The safetensors files a model folder loads: those of each module named in modules.json (the
    folder itself for a plain Hugging Face model folder)."""
    modules = [""]
    try:
        entries = read_json(folder / "modules.json") if (folder / "modules.json").is_file() else []
        modules += [str(entry.get("path", "")) for entry in entries if isinstance(entry, dict)]
    except (LwapError, TypeError):
        pass  # a malformed modules.json: the folder's own files; the folder check says the rest
    found: list[Path] = []
    for module in dict.fromkeys(modules):
        if Path(module).is_absolute() or ".." in Path(module).parts:
            continue  # a path out of the folder: lwap.checks.model_folder refuses it, nothing is read there
        found += sorted(p for p in (folder / module).glob("*.safetensors") if p.is_file())
    return found


def check_weights_file(path: Path, error: type[LwapError] = ModelLoadError) -> None:
    """`error` naming `path` unless it is a complete safetensors file."""
    try:
        reason = _damage(path)
    except DataError as problem:
        raise error(str(problem)) from None
    if reason is not None:
        raise error(f"{path}: damaged weights file, {reason}; save or copy the model again")


def _damage(path: Path) -> str | None:
    """What is wrong with the safetensors file `path`, or None. The length prefix is read here first, so
    a truncated file is told apart from one that is not safetensors at all (safetensors calls both an
    invalid header length); then safetensors checks the header and that the tensors fit in the file."""
    from safetensors import SafetensorError, safe_open

    with open_regular(path) as handle:  # a FIFO or a device in its place: a DataError naming it
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            return "empty (0 bytes)"
        prefix = handle.read(8 + 2**20)
    header = int.from_bytes(prefix[:8], "little") if len(prefix) >= 8 else 0
    if len(prefix) < 9 or header > _MAX_HEADER or prefix[8:9] != b"{":
        return f"not safetensors ({size:,} bytes without a safetensors header)"
    if size < 8 + header:  # cut off, or a length field that lies: does the JSON header end early?
        try:
            _, end = json.JSONDecoder().raw_decode(prefix[8:].decode("utf-8", "replace"))
        except ValueError:
            return f"truncated ({size:,} bytes; its header alone is {header:,})"
        return f"header damaged (its length field says {header:,} bytes, the header is {end:,})"
    try:
        with safe_open(str(path), framework="pt"):
            pass
    except (SafetensorError, OSError) as problem:
        text = str(problem)
        if "incomplete metadata" in text:
            return f"truncated ({size:,} bytes, fewer than its header lists)"
        return text.strip().splitlines()[0] if text.strip() else type(problem).__name__
    return None


def check_weights_files(folder: Path, error: type[LwapError] = ModelLoadError) -> None:
    """`check_weights_file` for every weights file the model folder `folder` loads."""
    for path in weights_files(folder):
        check_weights_file(path, error)
