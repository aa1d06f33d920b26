"""The backbone's own sentence vector ("native" pooling), for LWAP heads that start where the backbone is.

An already-trained sentence encoder (all-MiniLM-L6-v2: mean pooling, then L2 normalisation) ships its
pooling as sentence-transformers modules after the Transformer. `lwap_start: native` rebuilds exactly
those modules in front of the LWAP head, which then adds a correction that starts at zero, so the model
at step 0 embeds exactly as the backbone does. A plain encoder (an MLM-only BERT) declares no pooling:
the config then names one (`native_pooling: mean | cls`).
"""

from __future__ import annotations

from pathlib import Path

from sentence_transformers.sentence_transformer.modules import Dense, Module, Normalize, Pooling

from lwap.checks.files import read_json
from lwap.errors import ConfigError

# The sentence-transformers modules a backbone's own pooling may consist of (by class name, since
# modules.json may name them under their old paths, sentence_transformers.models.X).
_POOLING_CLASSES: dict[str, type[Module]] = {"Pooling": Pooling, "Normalize": Normalize, "Dense": Dense}


def declared_pooling(source: str) -> list[Module] | None:
    """The modules after the Transformer of a sentence-transformers model (a folder, or a hub id for users
    online); None if it declares none (a plain Hugging Face encoder)."""
    listing = _modules_json(source)
    if listing is None:
        return None
    modules: list[Module] = []
    for entry in read_json(listing)[1:]:
        name = entry.get("type", "").rsplit(".", 1)[-1]
        if name not in _POOLING_CLASSES:
            raise ConfigError(
                f"{listing}: the backbone's own pooling uses {entry.get('type')!r}; native start "
                f"supports {', '.join(_POOLING_CLASSES)} (set model.native_pooling to mean or cls)"
            )
        modules.append(_POOLING_CLASSES[name].load(source, subfolder=entry.get("path", "")))
    return modules or None


def _modules_json(source: str) -> Path | None:
    folder = Path(source)
    if folder.is_dir():
        return folder / "modules.json" if (folder / "modules.json").is_file() else None
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    try:
        return Path(hf_hub_download(source, "modules.json"))
    except EntryNotFoundError:
        return None


def native_pooling_modules(source: str, hidden: int, choice: str) -> list[Module]:
    """What computes the backbone's own sentence vector: its saved pooling (`auto`) or `mean`/`cls`.

    `source`: the backbone's sentence-transformers folder (not its Transformer subfolder) or hub id.
    """
    if choice != "auto":  # checked against lwap.lwap_choices.NATIVE_POOLINGS before this is called
        return [Pooling(hidden, choice)]
    declared = declared_pooling(source)
    if declared is None:
        raise ConfigError(
            "native_pooling: auto needs a backbone that declares its own sentence-transformers pooling "
            f"(modules.json); {source} has none: set model.native_pooling to mean or cls"
        )
    return declared


def normalize_after_correction(native: list[Module]) -> list[Module]:
    """[Normalize()] when the backbone's own vector is unit-length (its pooling ends in Normalize), else [].

    The LWAP head adds its correction to that vector, which would leave it off unit length (norms 0.98-1.01
    measured); normalising again after the head restores it. The first Normalize stays, so the correction
    is learned against the unit vector as before; at step 0 the second one changes nothing (to 1e-7), and
    the cosine-similarity loss and evaluations do not see a vector's length, so training is unchanged.
    """
    return [Normalize()] if native and isinstance(native[-1], Normalize) else []
