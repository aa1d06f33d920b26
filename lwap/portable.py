"""Self-contained model folders: each lwap module's code travels in the folder it is saved to.

sentence-transformers loads a module class of its own by import path, and any other from a `.py` file in
the model folder's root that modules.json names as `<file>.<Class>` (transformers' dynamic modules, with
`trust_remote_code=True`; the files it imports relatively are taken along). lwap's module files are written
to be such files: they import only torch, transformers, sentence-transformers and each other (relatively).
Each lwap module copies them byte for byte into the folder's root when it is saved (lwap.module_io: one
source of truth, the files lwap ships), the `SentenceTransformer` below names them by file in modules.json,
and a venv without lwap loads the folder with `SentenceTransformer(path, trust_remote_code=True)`.

lwap itself never runs a folder's copy: `trusted_classes` compares every copy with lwap's own file (any
change to the code is refused; comments and docstrings may differ: `same_code`) and hands
sentence-transformers lwap's own classes for those names. A copy may also be a file as an earlier lwap
shipped it (lwap/earlier_module_code/<commit>/<file>.txt): a file goes there when its code changes, and
only if today's class, given the configs that version saved (its keys, the new ones at their defaults),
computes what it did (tests/test_portable_models.py loads such a folder both ways). Folders saved
before this layout name the classes by import path (`lwap.layerwise_attention.X`, and the old homes
`lwap.pooling.X`, `lwap.poolers.X`): they load as before.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
from pathlib import Path
from typing import Any

from sentence_transformers import SentenceTransformer as BaseSentenceTransformer
from transformers.dynamic_module_utils import get_relative_import_files

from lwap.errors import ModelLoadError
from lwap.files import write_text_atomically
from lwap.layer_mean import LayerMean
from lwap.layerwise_attention import LayerwiseAttentionPooling
from lwap.training_only_mlp import TrainingOnlyMLP

MODULE_CLASSES: tuple[type, ...] = (LayerwiseAttentionPooling, LayerMean, TrainingOnlyMLP)
# how folders saved before the self-contained layout name them: import path, and the old module homes
IMPORT_PATH_TYPES: dict[str, type] = {
    **{f"{cls.__module__}.{cls.__name__}": cls for cls in MODULE_CLASSES},
    "lwap.pooling.LayerwiseAttentionPooling": LayerwiseAttentionPooling,
    "lwap.poolers.LayerMean": LayerMean,
    "lwap.poolers.TrainingOnlyMLP": TrainingOnlyMLP,
}


def code_files(cls: type) -> list[Path]:
    """The file defining `cls` and every file it imports relatively (recursively): what a folder carries."""
    main = Path(inspect.getfile(cls))
    return [main, *sorted({Path(f) for f in get_relative_import_files(str(main))})]


def folder_type(cls: type) -> str:
    """The modules.json type of `cls` in a self-contained folder: `<file>.<Class>`."""
    return f"{Path(inspect.getfile(cls)).stem}.{cls.__name__}"


FOLDER_TYPES: dict[str, type] = {folder_type(cls): cls for cls in MODULE_CLASSES}


def make_self_contained(folder: Path) -> None:
    """Name the lwap modules in `folder`'s modules.json by their file in the folder (`<file>.<Class>`).

    The files are there already: each lwap module copies its code into the root when it is saved
    (lwap.module_io). sentence-transformers names classes by import path, which only lwap can import.
    """
    listing = folder / "modules.json"
    entries = json.loads(listing.read_text(encoding="utf-8"))
    for entry in entries:
        cls = IMPORT_PATH_TYPES.get(entry["type"])
        if cls is not None:
            entry["type"] = folder_type(cls)
    write_text_atomically(listing, json.dumps(entries, indent=2))


def trusted_classes(folder: Path) -> dict[str, type]:
    """lwap's classes for the lwap types `folder`'s modules.json names; ModelLoadError for anything else.

    sentence-transformers' own types pass (it imports those itself); a `<file>.<Class>` type passes only if
    that file and the files it imports hold the same code as the ones this lwap ships (`same_code`).
    """
    listing = folder / "modules.json"
    try:
        types = [entry["type"] for entry in json.loads(listing.read_text(encoding="utf-8"))]
    except (ValueError, KeyError, TypeError) as error:
        raise ModelLoadError(f"{listing}: malformed ({error})") from None
    classes: dict[str, type] = {}
    untrusted = []
    for name in types:
        if name.startswith("sentence_transformers."):
            continue
        if name in IMPORT_PATH_TYPES:
            classes[name] = IMPORT_PATH_TYPES[name]
        elif name in FOLDER_TYPES:
            _check_code(folder, FOLDER_TYPES[name])
            classes[name] = FOLDER_TYPES[name]
        else:
            untrusted.append(name)
    if untrusted:
        raise ModelLoadError(
            f"{listing} names module classes outside lwap and sentence-transformers: {untrusted}; "
            "refusing to import them (load with SentenceTransformer(..., trust_remote_code=True) yourself "
            "if you trust this folder)"
        )
    return classes


def same_code(copy: bytes, shipped: bytes) -> bool:
    """Whether two module files are the same program: equal syntax trees once docstrings are dropped.

    Comments, docstrings and layout do not change what a file does, so a folder saved before such an edit
    of lwap's module files still loads; any other difference (a changed or added statement) refuses it.
    """
    if copy == shipped:
        return True
    try:
        trees = [ast.parse(text) for text in (copy, shipped)]
    except (SyntaxError, ValueError):
        return False
    for tree in trees:
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            first = body[0] if isinstance(body, list) and body else None
            docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            if docstring and isinstance(first.value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return ast.dump(trees[0]) == ast.dump(trees[1])


EARLIER_CODE = Path(__file__).resolve().parent / "earlier_module_code"


def shipped_versions(source: Path) -> list[bytes]:
    """lwap's module file `source` as this lwap ships it, then as earlier lwaps shipped it."""
    earlier = sorted(EARLIER_CODE.glob(f"*/{source.name}.txt"))
    return [source.read_bytes(), *(path.read_bytes() for path in earlier)]


def _check_code(folder: Path, cls: type) -> None:
    for source in code_files(cls):
        copy = folder / source.name
        if not copy.is_file():
            raise ModelLoadError(
                f"{folder}: modules.json names {folder_type(cls)!r}, but {source.name} is missing"
            )
        if not any(same_code(copy.read_bytes(), shipped) for shipped in shipped_versions(source)):
            raise ModelLoadError(
                f"{copy} differs from the {source.name} this lwap ships: the folder was changed "
                "or saved by another lwap version; refusing its code (load it with SentenceTransformer(..., "
                "trust_remote_code=True) yourself if you trust it)"
            )


class SentenceTransformer(BaseSentenceTransformer):
    """A SentenceTransformer whose every save (`save`, `save_pretrained`, `push_to_hub`, trainer checkpoints)
    is a self-contained folder; loaded elsewhere it is a plain SentenceTransformer with lwap's modules.

    Named as its base: sentence-transformers writes the class name into what users see (the usage line of
    the model card, which `push_to_hub` fills with the repository id; the hub commit message; repr).
    """

    def save(self, path: str, *args: Any, **kwargs: Any) -> None:
        super().save(path, *args, **kwargs)
        make_self_contained(Path(path))

    @classmethod
    def _load_with_module_classes(
        cls, model_name_or_path: str, module_classes: Any, **kwargs: Any
    ) -> SentenceTransformer:
        """sentence-transformers' trainer reloads its checkpoints (the best one, at the end) through this,
        naming the modules' classes by import path; a checkpoint of this class names them by file."""
        folder = Path(model_name_or_path)
        found = trusted_classes(folder) if os.path.isdir(folder) else {}
        return super()._load_with_module_classes(model_name_or_path, {**found, **module_classes}, **kwargs)
