"""What a model folder may contain: the one check every command applies before it loads a folder.

`lwap.load_model` (so `lwap encode`, `lwap eval`, `lwap card`, `lwap compare`'s evaluations, a finished
run's reload) and the training backbone (`lwap train`, `lwap compare`'s cells: `lwap.backbones`,
`lwap.model.build_model`) all call `check_model_folder` first. It allows, without any opt-in:

- module classes of sentence-transformers and of lwap only, read from modules.json and, recursively, from
  every Router's router_config.json (lwap's own code for lwap's modules: `lwap.portable`);
- module paths that stay inside the folder (no absolute path, no `..`, no link out of it);
- weights as safetensors only: a module whose only weights are a pickle (`pytorch_model.bin`, `*.pt`,
  ...) is refused, since loading a pickle can run code; every safetensors file is checked for damage
  (`lwap.checks.weights_files`);
- no `auto_map` in a config.json / tokenizer_config.json (the folder's own modelling code, which
  transformers would ask about on an interactive prompt, or run).

- every entry of a module's folder a regular file or a folder (no FIFO, device or socket, no link loop,
  no link out of the model folder), each file within its kind's limit (lwap.checks.limits: JSON files,
  tokenizer files, weights);
- a backbone whose config.json fits its weights, sized before it is built (`lwap.checks.backbone_fit`),
  a tokenizer of the folder's own files, whole, whose ids fit the embedding table
  (`lwap.checks.tokenizer_files`), and lwap modules whose configs fit their weights and the backbone.

`trust_remote_code=True` (`model.trust_remote_code: true`, `--trust-remote-code`) lifts the two code
checks (classes, auto_map) and nothing else: paths and weights are checked all the same. Each refusal is
a ModelLoadError (or the caller's LwapError subclass) of one line naming the file: exit 2 from the CLI.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lwap.checks.backbone_fit import check_backbone
from lwap.checks.files import file_status, read_json
from lwap.checks.limits import JSON_FILE, MODEL, TOKENIZER_FILE, Limit
from lwap.checks.module_fit import check_module
from lwap.checks.tokenizer_files import check_tokenizer_ids, check_tokenizer_sources
from lwap.checks.weights_files import check_weights_files
from lwap.errors import DataError, LwapError, ModelLoadError
from lwap.portable import FolderModule, folder_modules, trusted_classes

# weights formats that are a pickle (torch.load), which can run code on load
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
# the files in which transformers looks for `auto_map` (a class from a .py file in the folder)
CODE_CONFIGS = ("config.json", "tokenizer_config.json", "processor_config.json", "preprocessor_config.json")
# the tokenizer files transformers reads (within lwap.checks.limits.TOKENIZER_FILE; *.model: sentencepiece)
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "merges.txt", "spiece.model")


def check_model_folder(
    folder: Path, *, trust_remote_code: bool = False, error: type[LwapError] = ModelLoadError
) -> dict[str, type]:
    """Refuse (`error`, one line) a folder holding anything the module docstring rules out; return lwap's
    classes for the lwap modules it names (for sentence-transformers' `module_classes`).

    `folder` is a sentence-transformers folder (modules.json) or a plain Hugging Face model folder.
    """
    try:
        return _check(Path(folder), trust_remote_code)
    except (ModelLoadError, DataError) as problem:
        if isinstance(problem, error):
            raise
        raise error(str(problem)) from None


def _check(folder: Path, trust_remote_code: bool) -> dict[str, type]:
    if not folder.is_dir():
        raise ModelLoadError(f"model path {str(folder)!r} is not a folder")
    modules: list[FolderModule] = []
    weights_bytes = _check_entries(folder, folder)  # the root's first: a FIFO as modules.json is not opened
    if (folder / "modules.json").is_file():
        modules = folder_modules(folder)  # paths checked while walking: nothing read outside `folder`
        classes = trusted_classes(folder, allow_foreign=trust_remote_code)
        module_folders = [folder, *(m.folder for m in modules)]
        backbones = [m.folder for m in modules if m.type.rsplit(".", 1)[-1] == "Transformer"]
    else:
        classes, module_folders, backbones = {}, [folder], [folder]
    for module_folder in dict.fromkeys(module_folders):
        if not module_folder.is_dir():
            continue  # a module without files of its own (a file path: sentence-transformers says what)
        if module_folder != folder:
            weights_bytes += _check_entries(module_folder, folder)
        if not trust_remote_code:
            _refuse_auto_map(module_folder)
        _refuse_pickle_only(module_folder)
    if weights_bytes > MODEL.value():
        raise ModelLoadError(MODEL.refusal(f"{folder}: its weights", weights_bytes))
    check_weights_files(folder)
    shape = None
    for backbone in dict.fromkeys(b for b in backbones if (b / "config.json").is_file()):
        check_tokenizer_sources(backbone)
        task = _json_object(backbone / "sentence_bert_config.json").get("transformer_task")
        weights = sorted(p for p in backbone.glob("*.safetensors") if p.is_file())
        shape = check_backbone(
            backbone,
            weights,
            trust_remote_code=trust_remote_code,
            task=task if isinstance(task, str) else "feature-extraction",
        )
        check_tokenizer_ids(backbone, shape.embedding_rows, backbone / "config.json")
    for module in modules:
        if module.type in classes and module.folder.is_dir():
            check_module(module.folder, classes[module.type], shape)
    return classes


def _json_object(path: Path) -> dict[str, Any]:
    """The JSON object in `path`, {} if there is none (read_json's DataError if it is damaged)."""
    if not path.is_file():
        return {}
    value = read_json(path)
    return value if isinstance(value, dict) else {}


def _limit_of(name: str) -> Limit | None:
    """The limit a file of a model folder is read within, by its name (None: not read by lwap or
    transformers, or checked otherwise)."""
    if name in TOKENIZER_FILES or name.endswith(".model"):
        return TOKENIZER_FILE
    if name.endswith(".json"):
        return JSON_FILE
    if name.endswith(".safetensors"):
        return MODEL
    return None


def _in_hub_cache(target: Path, root: Path) -> bool:
    """Whether `target` is a blob of the Hugging Face cache repository whose snapshot `root` is: the
    cache's snapshot folders are links into the repository's blobs/ (what `snapshot_download` gives)."""
    return root.parent.name == "snapshots" and target.parent == root.parent.parent / "blobs"


def _check_entries(module_folder: Path, root: Path) -> int:
    """ModelLoadError for an entry of `module_folder` that is not a regular file or a folder (a FIFO,
    device or socket; a link loop, a link to nothing), a link out of the model folder `root`, or a file
    past its kind's limit; return the bytes of its safetensors files."""
    resolved_root = root.resolve()
    weights = 0
    for entry in sorted(module_folder.iterdir()):
        if entry.is_symlink():
            try:
                target = entry.resolve(strict=True)
            except (OSError, RuntimeError):  # a loop (RuntimeError before Python 3.13) or nothing there
                raise ModelLoadError(
                    f"{entry}: is a symbolic link loop or a link that leads to no file; a model folder "
                    "holds files and folders"
                ) from None
            if not target.is_relative_to(resolved_root) and not _in_hub_cache(target, resolved_root):
                raise ModelLoadError(
                    f"{entry}: is a link out of the model folder (to {target}); lwap reads only the "
                    "folder's own files: copy the file into it"
                )
        if entry.is_dir():
            continue
        try:
            status = file_status(entry)
        except DataError as error:
            raise ModelLoadError(str(error)) from None
        limit = _limit_of(entry.name)
        if limit is not None and status.st_size > limit.value():
            raise ModelLoadError(limit.refusal(str(entry), status.st_size))
        if entry.name.endswith(".safetensors"):
            weights += status.st_size
    return weights


def _refuse_auto_map(folder: Path) -> None:
    for name in CODE_CONFIGS:
        path = folder / name
        if not path.is_file():
            continue
        config = read_json(path)
        auto_map = config.get("auto_map") if isinstance(config, dict) else None
        if auto_map:
            classes = (
                sorted({str(value) for value in auto_map.values()}) if isinstance(auto_map, dict) else []
            )
            named = ", ".join(classes) or repr(auto_map)
            raise ModelLoadError(
                f"{path}: auto_map names code from the folder ({named}); lwap runs no code from a "
                "folder: pass --trust-remote-code (model.trust_remote_code: true in a training config) "
                "if you trust it"
            )


def _refuse_pickle_only(folder: Path) -> None:
    """ModelLoadError naming the pickle if `folder`'s only weights are pickles (no safetensors file)."""
    files = [p for p in folder.iterdir() if p.is_file()]
    if any(p.suffix == ".safetensors" for p in files):
        return  # transformers and lwap's modules load the safetensors file and ignore the rest
    pickles = sorted(
        p for p in files if p.suffix.lower() in PICKLE_SUFFIXES and p.name != "training_args.bin"
    )
    if pickles:
        raise ModelLoadError(
            f"{pickles[0]}: weights stored as a pickle, which can run code when loaded; lwap reads "
            "safetensors only (convert it, e.g. with transformers' save_pretrained(safe_serialization=True))"
        )
