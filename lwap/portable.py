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
import errno
import inspect
import json
import os
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath
from typing import Any

from sentence_transformers import SentenceTransformer as BaseSentenceTransformer
from transformers.dynamic_module_utils import get_relative_import_files

from lwap import registry
from lwap.checks.files import read_json, read_limited, write_text_atomically
from lwap.checks.limits import JSON_FILE
from lwap.errors import DataError, ModelLoadError
from lwap.layer_mean import LayerMean
from lwap.layerwise_attention import LayerwiseAttentionPooling
from lwap.training_only_mlp import TrainingOnlyMLP

# lwap's own module classes, as the poolers in lwap.registry name them
MODULE_CLASSES: tuple[type, ...] = tuple(registry.module_class(path) for path in registry.LWAP_MODULES)
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


def shipped_class_of(cls: type) -> type | None:
    """The lwap class of which `cls` is a saved folder's copy, or None: plain `SentenceTransformer(folder,
    trust_remote_code=True)` imports the folder's own `<file>.py` as a class of its own
    (`transformers_modules.<folder>.<file>.<Class>`), which lwap's isinstance checks do not recognise."""
    if not cls.__module__.startswith("transformers_modules."):
        return None
    return FOLDER_TYPES.get(f"{cls.__module__.rpartition('.')[2]}.{cls.__name__}")


def make_self_contained(folder: Path) -> None:
    """Name the lwap modules in `folder`'s modules.json by their file in the folder (`<file>.<Class>`).

    The files are there already: each lwap module copies its code into the root when it is saved
    (lwap.module_io). sentence-transformers names classes by import path, which only lwap can import.
    """
    listing = folder / "modules.json"
    entries = read_json(listing)
    for entry in entries:
        cls = IMPORT_PATH_TYPES.get(entry["type"])
        if cls is not None:
            entry["type"] = folder_type(cls)
    write_text_atomically(listing, json.dumps(entries, indent=2))


def is_router(name: str) -> bool:
    """Whether `name` is sentence-transformers' container module (Router; Asym is its old alias): its
    router_config.json names more module classes, each in a subfolder of its own, which lwap reads as it
    reads modules.json's."""
    return name.startswith("sentence_transformers.") and name.rsplit(".", 1)[-1] in ("Router", "Asym")


@dataclass(frozen=True)
class FolderModule:
    """One module a model folder loads: its class name, its folder, and the file that names it."""

    type: str
    folder: Path
    listed_in: Path


def inside(folder: Path, relative: object, listed_in: Path) -> Path:
    """`folder / relative`, or ModelLoadError naming `listed_in` if the path leaves the folder: absolute,
    with `..`, or a symbolic link out of it (sentence-transformers refuses the first two with a bare
    ValueError; a link it would follow)."""
    if not isinstance(relative, str):
        raise ModelLoadError(f"{listed_in}: module path {relative!r} is not a string")
    pure = PureWindowsPath(relative)
    if pure.anchor or Path(relative).is_absolute() or ".." in pure.parts or "\0" in relative:
        raise ModelLoadError(
            f"{listed_in}: module path {relative!r} leaves the model folder (absolute or with '..'); "
            "refusing to read it"
        )
    path = folder / relative
    root = folder.resolve()
    try:
        os.stat(path)
    except OSError as error:  # a loop, or a link to nothing: one line, not a TypeError at load
        if error.errno == errno.ELOOP or path.is_symlink():
            raise ModelLoadError(
                f"{listed_in}: module path {relative!r} is a symbolic link loop or a link that leads to "
                "nothing; refusing it"
            ) from None
    if path.exists() and not path.resolve().is_relative_to(root):
        raise ModelLoadError(
            f"{listed_in}: module path {relative!r} is a link out of the model folder "
            f"(to {path.resolve()}); refusing to read it"
        )
    return path


def _entries(listing: Path, data: Any, key: str) -> list[tuple[str, str]]:
    """(type, path) pairs of a modules.json (a list of {type, path}) or a router config's `types`."""
    try:
        if key == "modules":
            return [(str(entry["type"]), entry.get("path", "")) for entry in data]
        return [(str(kind), path) for path, kind in data["types"].items()]
    except (KeyError, TypeError, AttributeError) as error:
        what = "a list of {type, path}" if key == "modules" else "an object with 'types'"
        raise ModelLoadError(
            f"{listing}: malformed, expected {what} ({type(error).__name__}: {error})"
        ) from None


def folder_modules(folder: Path) -> list[FolderModule]:
    """Every module `folder`'s modules.json names, and recursively every module a Router there routes to
    (read from its router_config.json, or the legacy config.json). Paths are checked to stay inside the
    folder before anything under them is read. ModelLoadError (one line, naming the file) otherwise."""
    found: list[FolderModule] = []
    pending = [(folder, folder / "modules.json", "modules")]
    routers: set[Path] = set()
    while pending:
        base, listing, key = pending.pop(0)
        try:
            data = read_json(listing)
        except DataError as error:
            raise ModelLoadError(str(error)) from None
        for kind, relative in _entries(listing, data, key):
            module = FolderModule(kind, inside(base, relative, listing), listing)
            found.append(module)
            if is_router(kind):
                if module.folder.resolve() in routers:  # sentence-transformers would recurse forever
                    raise ModelLoadError(
                        f"{listing}: module path {relative!r} leads back to a Router already read (a cycle); "
                        "refusing it"
                    )
                routers.add(module.folder.resolve())
                config = module.folder / "router_config.json"
                pending.append(
                    (module.folder, config if config.is_file() else module.folder / "config.json", "router")
                )
    return found


def trusted_classes(folder: Path, *, allow_foreign: bool = False) -> dict[str, type]:
    """lwap's classes for the lwap types `folder`'s modules (Routers' routes included) name;
    ModelLoadError for anything else.

    sentence-transformers' own types pass (it imports those itself); a `<file>.<Class>` type passes only if
    that file and the files it imports hold the same code as the ones this lwap ships (`same_code`).
    `allow_foreign` (`trust_remote_code=True`): anything else is left to sentence-transformers to import.
    """
    classes: dict[str, type] = {}
    untrusted: dict[str, Path] = {}
    for module in folder_modules(folder):
        name = module.type
        if name.startswith("sentence_transformers."):
            continue
        if name in IMPORT_PATH_TYPES:
            classes[name] = IMPORT_PATH_TYPES[name]
        elif name in FOLDER_TYPES:
            try:
                _check_code(folder, FOLDER_TYPES[name])
            except ModelLoadError:
                if not allow_foreign:
                    raise
                continue  # trusted: the folder's own copy is imported
            classes[name] = FOLDER_TYPES[name]
        else:
            untrusted.setdefault(name, module.listed_in)
    if untrusted and not allow_foreign:
        name, listing = next(iter(untrusted.items()))
        raise ModelLoadError(
            f"{listing} names module classes outside lwap and sentence-transformers: {list(untrusted)}; "
            "refusing to import them (pass --trust-remote-code, or load it with "
            "SentenceTransformer(..., trust_remote_code=True) yourself, if you trust this folder)"
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
        try:  # no module file of lwap's is near the JSON limit; a FIFO or /dev/zero is refused
            code = read_limited(copy, JSON_FILE)
        except DataError as error:
            raise ModelLoadError(str(error)) from None
        if not any(same_code(code, shipped) for shipped in shipped_versions(source)):
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
        trust = bool(kwargs.pop("trust_remote_code", False))
        found = trusted_classes(folder, allow_foreign=trust) if os.path.isdir(folder) else {}
        classes = {**found, **module_classes}
        return super()._load_with_module_classes(
            model_name_or_path, classes, trust_remote_code=trust, **kwargs
        )
