"""Check a model folder's safetensors files before loading: a damaged one is one clear error, not a
SafetensorError traceback from deep inside transformers.

Truncated (an interrupted copy or download), empty, or not safetensors at all (another format under the
name, a header overwritten): `safetensors.safe_open` reads only the header and checks that the tensors it
lists fit in the file, so this costs a few milliseconds, not a load.
"""

from __future__ import annotations

import json
from pathlib import Path

from lwap.errors import LwapError, ModelLoadError

# safetensors' own wording → what it means for the file
_REASONS = {
    "incomplete metadata": "truncated: shorter than its header says",
    "header too small": "too short to be a safetensors file",
    "invalid header length": "not a safetensors file (its header is not a valid length)",
    "header too large": "not a safetensors file (its header is not a valid length)",
}


def weights_files(folder: Path) -> list[Path]:
    """The safetensors files a model folder loads: those of each module named in modules.json (the
    folder itself for a plain Hugging Face model folder)."""
    modules = [""]
    try:
        entries = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
        modules += [str(entry.get("path", "")) for entry in entries if isinstance(entry, dict)]
    except (OSError, ValueError, AttributeError):
        pass  # no (or a malformed) modules.json: the folder's own files; the folder check says the rest
    found: list[Path] = []
    for module in dict.fromkeys(modules):
        found += sorted(p for p in (folder / module).glob("*.safetensors") if p.is_file())
    return found


def check_weights_file(path: Path, error: type[LwapError] = ModelLoadError) -> None:
    """`error` naming `path` unless it is a complete safetensors file."""
    from safetensors import SafetensorError, safe_open

    if path.stat().st_size == 0:
        raise error(f"{path}: damaged weights file (empty, 0 bytes); save or copy the model again")
    try:
        with safe_open(str(path), framework="pt"):
            pass
    except (SafetensorError, OSError) as problem:
        text = str(problem)
        reason = next((why for mark, why in _REASONS.items() if mark in text), text.splitlines()[0])
        raise error(f"{path}: damaged weights file ({reason}); save or copy the model again") from None


def check_weights_files(folder: Path, error: type[LwapError] = ModelLoadError) -> None:
    """`check_weights_file` for every weights file the model folder `folder` loads."""
    for path in weights_files(folder):
        check_weights_file(path, error)
