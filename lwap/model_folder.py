"""What a model folder may contain: the one check every command applies before it loads a folder.

`lwap.load_model` (so `lwap encode`, `lwap eval`, `lwap card`, `lwap compare`'s evaluations, a finished
run's reload) and the training backbone (`lwap train`, `lwap compare`'s cells: `lwap.backbones`,
`lwap.model.build_model`) all call `check_model_folder` first. It allows, without any opt-in:

- module classes of sentence-transformers and of lwap only, read from modules.json and, recursively, from
  every Router's router_config.json (lwap's own code for lwap's modules: `lwap.portable`);
- module paths that stay inside the folder (no absolute path, no `..`, no link out of it);
- weights as safetensors only: a module whose only weights are a pickle (`pytorch_model.bin`, `*.pt`,
  ...) is refused, since loading a pickle can run code; every safetensors file is checked for damage
  (`lwap.weights_files`);
- no `auto_map` in a config.json / tokenizer_config.json (the folder's own modelling code, which
  transformers would ask about on an interactive prompt, or run).

`trust_remote_code=True` (`model.trust_remote_code: true`, `--trust-remote-code`) lifts the two code
checks (classes, auto_map) and nothing else: paths and weights are checked all the same. Each refusal is
a ModelLoadError (or the caller's LwapError subclass) of one line naming the file: exit 2 from the CLI.
"""

from __future__ import annotations

from pathlib import Path

from lwap.errors import DataError, LwapError, ModelLoadError
from lwap.files import read_json
from lwap.portable import folder_modules, trusted_classes
from lwap.weights_files import check_weights_files

# weights formats that are a pickle (torch.load), which can run code on load
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
# the files in which transformers looks for `auto_map` (a class from a .py file in the folder)
CODE_CONFIGS = ("config.json", "tokenizer_config.json", "processor_config.json", "preprocessor_config.json")


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
    if (folder / "modules.json").is_file():
        modules = folder_modules(folder)  # paths checked while walking: nothing read outside `folder`
        classes = trusted_classes(folder, allow_foreign=trust_remote_code)
        module_folders = [folder, *(m.folder for m in modules)]
    else:
        classes, module_folders = {}, [folder]
    for module_folder in dict.fromkeys(module_folders):
        if not module_folder.is_dir():
            continue  # a module without files of its own (a file path: sentence-transformers says what)
        if not trust_remote_code:
            _refuse_auto_map(module_folder)
        _refuse_pickle_only(module_folder)
    check_weights_files(folder)
    return classes


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
