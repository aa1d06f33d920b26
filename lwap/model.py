"""Build a SentenceTransformer with any of the compared poolers, and load saved models safely.

A model is the backbone's Transformer followed by the pooler's modules (sentence-transformers modules;
lwap only adds what is missing). The poolers, their options and what each builds: `lwap.registry`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Transformer

from lwap import portable, registry
from lwap.backbones import DEFAULT_BACKBONE, DROPOUT_KEYS, check_dropout, resolve_backbone, transformer_kwargs
from lwap.checks import model_folder
from lwap.checks.backbone_fit import usable_positions
from lwap.checks.files import file_status, read_json
from lwap.errors import BackboneNotFoundError, ConfigError, DataError, ModelLoadError
from lwap.hidden_state_norm import NormalizeHiddenStates
from lwap.layerwise_attention import LayerwiseAttentionPooling
from lwap.worker_pickling import keep_hidden_states_in_workers

# Backbones whose intermediate hidden states are the raw residual stream (pre-LayerNorm), known to
# transformers by these model types: a pooler reading several layers gets them layer-normed first.
PRE_LAYER_NORM_TYPES = frozenset({"roberta-prelayernorm"})


def build_model(
    backbone: str = DEFAULT_BACKBONE,
    pooling: str = "lwap",
    *,
    max_seq_length: int | None = None,
    device: str | None = None,
    trust_remote_code: bool = False,
    dropout: float | None = None,
    **options: Any,
) -> SentenceTransformer:
    """A fresh SentenceTransformer: `backbone` (hub id or folder) followed by the `pooling` head.

    `options` are pooler options from `lwap.registry` (lwap_layers, score_scale, lwap_start, ...);
    a missing one takes its default. ConfigError for an unknown pooling or option or a bad value.
    A backbone folder passes `lwap.checks.model_folder.check_model_folder` first (BackboneNotFoundError, one
    line); `trust_remote_code` lets it name code of its own (auto_map), as transformers' flag does.
    `dropout`: the backbone's hidden and attention dropout (SimCSE's noise in training; the saved config
    keeps it), None = its config's; ConfigError for a backbone whose config has no such rates.
    """
    pooler = registry.check(pooling, options)
    check_dropout(dropout)
    source = resolve_backbone(backbone)
    given = Path(backbone).expanduser()  # a sentence-transformers root, whose Transformer may sit below
    for folder in dict.fromkeys(p for p in (given, Path(source)) if p.is_dir()):
        model_folder.check_model_folder(
            folder, trust_remote_code=trust_remote_code, error=BackboneNotFoundError
        )
    config_kwargs: dict[str, Any] = {"output_hidden_states": True} if pooler.hidden_states else {}
    if dropout is not None:
        config_kwargs.update(dict.fromkeys(DROPOUT_KEYS, dropout))
    try:  # trust_remote_code explicit in every load: transformers would ask on a prompt
        transformer = Transformer(
            source,
            max_seq_length=max_seq_length,
            **transformer_kwargs(trust_remote_code=trust_remote_code, **config_kwargs),
        )
    except (OSError, ValueError) as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise BackboneNotFoundError(f"could not load backbone {backbone!r}: {first_line}") from error
    if dropout is not None and not all(hasattr(type(transformer.model.config)(), k) for k in DROPOUT_KEYS):
        raise ConfigError(
            f"model.dropout: backbone {backbone!r} ({transformer.model.config.model_type}) names its dropout "
            f"otherwise than {' and '.join(DROPOUT_KEYS)}; leave model.dropout null"
        )
    freeze_unused_pooler(transformer.model)
    limit = _length_limit(transformer)
    transformer.max_seq_length = limit if max_seq_length is None else min(max_seq_length, limit)
    shape = registry.Backbone(
        transformer.get_embedding_dimension(),
        transformer.model.config.num_hidden_layers,
        str(given) if given.is_dir() else source,
    )
    heads = [*hidden_state_norm(transformer.model.config, pooler.hidden_states), *pooler.head(shape, options)]
    # saves self-contained; the trainer reloads its best checkpoint with the model's trust_remote_code
    model = portable.SentenceTransformer(
        modules=[transformer, *heads], device=device, trust_remote_code=trust_remote_code
    )
    keep_hidden_states_in_workers(model)  # the weighted pooler has no lwap module to do it
    return model


def hidden_state_norm(config: Any, reads_layers: bool) -> list[NormalizeHiddenStates]:
    """The module that layer-norms a pre-LayerNorm backbone's raw intermediate hidden states (1 .. L-1;
    the embedding output and the last layer are normalised already) when the pooler reads several layers;
    none otherwise. lwap.hidden_state_norm says why."""
    if not reads_layers or getattr(config, "model_type", None) not in PRE_LAYER_NORM_TYPES:
        return []
    return [NormalizeHiddenStates(list(range(1, config.num_hidden_layers)), config.layer_norm_eps)]


def freeze_unused_pooler(backbone: Any) -> bool:
    """Freeze BERT's pooler layer (dense + tanh over [CLS]), which no lwap pooler reads.

    Trainable and unused, its parameters get no gradient, and DDP would need `find_unused_parameters`
    (an extra graph walk every step); DDP leaves frozen parameters out. Frozen rather than removed
    (`add_pooling_layer=False`): a saved model without the pooler's weights makes transformers report
    them missing on every load, by lwap or anyone, while frozen they are saved as loaded and old and new
    models load alike. Its forward (one H×H matmul on [CLS]) costs next to nothing, with no backward.
    """
    pooler = getattr(backbone, "pooler", None)
    if pooler is None or not hasattr(pooler, "parameters"):
        return False
    pooler.requires_grad_(False)
    return True


def inference_max_seq_length(model: SentenceTransformer) -> int:
    """The length the model's backbone is meant to read at inference.

    Training truncates much shorter (SimCSE: 32 tokens) for speed; `lwap train` saves its model with
    this length back, so a long document is not cut to 32 tokens at inference (SimCSE does not truncate
    at evaluation either).
    """
    return _length_limit(model[0])


def position_limit(model: SentenceTransformer) -> int | None:
    """The backbone's position table: longer inputs crash in its embedding layer (None if undeclared).

    Not the live tokenizer's model_max_length: sentence-transformers sets that to the current
    max_seq_length, so capping by it would forbid ever raising the length (e.g. MiniLM 256 -> 512).
    """
    return usable_positions(getattr(model[0], "model", None))


def set_max_seq_length(model: SentenceTransformer, length: int, say: Callable[[str], None]) -> int:
    """Set the truncation length, capped at what the backbone can encode (saying so); return it."""
    limit = position_limit(model)
    if limit is not None and length > limit:
        say(f"max sequence length {length} is past what the model can encode; using {limit}")
        length = limit
    model.max_seq_length = length
    return length


def _length_limit(transformer: Transformer) -> int:
    """What the backbone declares: its saved sentence-transformers max_seq_length (256 for
    all-MiniLM-L6-v2), else its tokenizer's model_max_length, never past the position table.

    Read from the backbone's files, not from the live tokenizer: sentence-transformers stores the
    *current* max_seq_length there, which training has set to its truncation. Both are read as JSON
    (`lwap.checks.files.read_json`), not by loading a tokenizer again (AutoTokenizer, which a hub id
    needs, would be one more load that could reach a folder's code).
    """
    source = transformer.model.name_or_path
    limit = _json_setting(Path(source) / "sentence_bert_config.json", "max_seq_length")
    if not limit:
        limit = _json_setting(Path(source) / "tokenizer_config.json", "model_max_length")
    if not limit:
        limit = getattr(transformer.tokenizer, "init_kwargs", {}).get("model_max_length") or 100_000
    positions = usable_positions(transformer.model)
    return int(min(limit, positions)) if positions else int(min(limit, 100_000))


def _json_setting(path: Path, key: str) -> Any:
    """`key` of the JSON object in `path` (None if the file or the key is missing)."""
    if not path.is_file():
        return None
    try:
        data = read_json(path)
    except DataError as error:
        raise ModelLoadError(str(error)) from None
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def load_model(
    name_or_path: str | os.PathLike[str], device: str | None = None, *, trust_remote_code: bool = False
) -> SentenceTransformer:
    """Load a saved lwap (or any sentence-transformers) model after checking what the folder holds.

    `lwap.checks.model_folder.check_model_folder` first: every class named in modules.json (and in its
    Routers) must be sentence-transformers' or lwap's, every path inside the folder, every weights file
    safetensors and whole, no auto_map. lwap's modules come from this lwap, never from the folder's copies
    of their code (which must equal it: lwap.portable), so no code from the folder runs and
    `trust_remote_code` stays off unless the caller passes `trust_remote_code=True` (`--trust-remote-code`).
    """
    name = str(name_or_path)
    path = Path(name).expanduser()
    if not path.exists():
        try:
            path = Path(resolve_backbone(name, what="model"))
        except BackboneNotFoundError as error:
            raise ModelLoadError(str(error)) from None
        if not path.exists():  # a hub id for online users: sentence-transformers checks what it downloads
            return SentenceTransformer(name, device=device, trust_remote_code=trust_remote_code)
    classes = check_model_folder(path, trust_remote_code=trust_remote_code)
    try:
        model = portable.SentenceTransformer._load_with_module_classes(
            str(path),
            classes,
            device=device,
            local_files_only=True,
            trust_remote_code=trust_remote_code,
            model_kwargs={"use_safetensors": True},  # never unpickle backbone weights (pytorch_model.bin)
        )
    except (OSError, ValueError) as error:  # unreadable files; what sentence-transformers refuses
        first_line = next(iter(str(error).strip().splitlines()), type(error).__name__)
        raise ModelLoadError(f"cannot load model {str(path)!r}: {first_line}") from error
    keep_hidden_states_in_workers(model)
    limit = position_limit(model)
    if limit is not None and (model.max_seq_length or 0) > limit:
        model.max_seq_length = limit  # a saved length past the position table would crash on a long input
    return model


def check_model_folder(path: Path, *, trust_remote_code: bool = False) -> dict[str, type]:
    """lwap's classes for the folder's lwap modules; ModelLoadError unless `path` is a sentence-transformers
    model folder that `lwap.checks.model_folder.check_model_folder` allows."""
    if not path.is_dir():
        raise ModelLoadError(f"model path {str(path)!r} is not a folder")
    modules_json = path / "modules.json"
    if modules_json.exists() or modules_json.is_symlink():
        try:
            file_status(modules_json)  # a FIFO or a device: refused by name, not "no modules.json"
        except DataError as error:
            raise ModelLoadError(str(error)) from None
    if not modules_json.is_file():
        raise ModelLoadError(f"{path} is not a sentence-transformers model folder (no modules.json)")
    return model_folder.check_model_folder(path, trust_remote_code=trust_remote_code)


def find_lwap(model: SentenceTransformer) -> LayerwiseAttentionPooling | None:
    """The model's LWAP module, if it has one (for reading its layer-attention weights): lwap's class, or the
    copy of its code a saved folder carries, which plain `SentenceTransformer(folder, trust_remote_code=True)`
    loads (lwap.portable.shipped_class_of)."""
    return next(
        (
            m
            for m in model
            if isinstance(m, LayerwiseAttentionPooling)
            or portable.shipped_class_of(type(m)) is LayerwiseAttentionPooling
        ),
        None,
    )
