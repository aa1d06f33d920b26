"""A backbone's config.json sized and checked against its weights before anything is built.

transformers builds the model a config.json describes, then reads the weights into it: a config with a
vocabulary of a billion, 100,000 layers or a feed-forward width of a billion is allocated (or its
modules built, for minutes) before anything notices, and weights that do not fit the config (an
embedding table with fewer rows) end in a traceback. Here, before the load:

1. the config's sizes alone (vocabulary, hidden width, layers, feed-forward width, positions) give an
   estimate of the parameters, refused past lwap.checks.limits.MODEL, and refused if even one embedding table
   or one feed-forward layer, or the whole estimate by a wide margin, could not fit in the weights'
   safetensors headers (read without loading a tensor): the config does not describe these weights;
2. only then is the model built on the meta device (no memory behind a tensor), and every parameter's
   shape compared with the tensor of that name in the weights.

What comes back (embedding rows, usable positions, hidden width, layers) is what the tokenizer and the
folder's other modules are checked against (lwap.checks.model_folder).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lwap.checks.files import read_json_object
from lwap.checks.limits import MODEL
from lwap.errors import DataError, LwapError, ModelLoadError

# config keys by what they size, in the names transformers' model families use
SIZE_KEYS: dict[str, tuple[str, ...]] = {
    "vocabulary": ("vocab_size",),
    "hidden": ("hidden_size", "d_model", "n_embd", "dim"),
    "layers": ("num_hidden_layers", "n_layer", "num_layers", "n_layers"),
    "feed-forward": ("intermediate_size", "d_ff", "n_inner", "ffn_dim", "hidden_dim"),
    "positions": ("max_position_embeddings", "n_positions"),
    "token types": ("type_vocab_size",),
    "embedding": ("embedding_size",),
}
# how much larger than its weights a config's estimate may be: models that share one layer's weights
# across their layers (ALBERT: 12 or 24 layers, one set of weights) are the largest real ratio, about 25
SHARED_LAYERS_FACTOR = 64


@dataclass(frozen=True)
class BackboneShape:
    """What the checked backbone can take: token ids below `embedding_rows`, `positions` tokens."""

    embedding_rows: int | None
    positions: int | None
    hidden: int | None
    layers: int | None


@dataclass(frozen=True)
class Tensors:
    """The tensors of a folder's safetensors files, by name, read from their headers."""

    shapes: dict[str, tuple[int, ...]]
    where: dict[str, Path]
    files: list[Path]

    @property
    def elements(self) -> int:
        return sum(_product(shape) for shape in self.shapes.values())


def _product(shape: tuple[int, ...]) -> int:
    total = 1
    for size in shape:
        total *= size
    return total


def read_tensors(files: list[Path]) -> Tensors:
    """Names and shapes of every tensor in `files` (checked for damage already: lwap.checks.weights_files),
    from the headers alone."""
    from safetensors import safe_open

    shapes: dict[str, tuple[int, ...]] = {}
    where: dict[str, Path] = {}
    for path in files:
        with safe_open(str(path), framework="pt") as weights:
            for name in weights.keys():  # noqa: SIM118 (safe_open is not a mapping)
                shapes[name] = tuple(weights.get_slice(name).get_shape())
                where[name] = path
    return Tensors(shapes, where, files)


def config_sizes(config: dict[str, Any], label: str) -> dict[str, int]:
    """The sizes `config` (a config.json, or its `text_config`) declares, by SIZE_KEYS' names.

    ModelLoadError naming the key unless each is a whole number >= 0 (a string, a float, a negative
    size is no size a model can be built with)."""
    text_config = config.get("text_config")
    if not any(key in config for keys in SIZE_KEYS.values() for key in keys) and isinstance(
        text_config, dict
    ):
        config, label = text_config, f"{label} (text_config)"
    sizes: dict[str, int] = {}
    for what, keys in SIZE_KEYS.items():
        for key in keys:
            value = config.get(key)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ModelLoadError(f"{label}: {key} is {value!r}, expected a whole number >= 0")
            sizes.setdefault(what, value)
    return sizes


def estimate_parameters(sizes: dict[str, int]) -> int:
    """Parameters of a Transformer encoder with these sizes: embedding tables and, per layer, attention
    (4 H²) and feed-forward (2 H F). A lower bound for most families (biases, norms and gated
    feed-forwards left out), from the config's numbers alone."""
    hidden = sizes.get("hidden", 0)
    embedding = sizes.get("embedding", hidden)
    feed_forward = sizes.get("feed-forward") or 4 * hidden
    rows = sizes.get("vocabulary", 0) + sizes.get("positions", 0) + sizes.get("token types", 0)
    per_layer = 4 * hidden * hidden + 2 * hidden * feed_forward
    projection = embedding * hidden if embedding != hidden else 0
    return rows * embedding + projection + sizes.get("layers", 0) * per_layer


def _describe(sizes: dict[str, int]) -> str:
    return ", ".join(f"{what} {value:,}" for what, value in sizes.items())


def check_sizes(config_file: Path, sizes: dict[str, int], tensors: Tensors | None) -> None:
    """Step 1 of the module docstring: the estimate against the limit and against the weights."""
    estimate = estimate_parameters(sizes)
    limit = MODEL.value()
    if 4 * estimate > limit:
        raise ModelLoadError(
            MODEL.refusal(
                f"{config_file}: the model it describes ({_describe(sizes)}) in float32", 4 * estimate
            )
        )
    if tensors is None or not tensors.shapes:
        return
    held, count = tensors.elements, len(tensors.shapes)
    hidden = sizes.get("hidden", 0)
    embedding = sizes.get("embedding", hidden)
    files = ", ".join(p.name for p in tensors.files)
    holds = f"the weights ({files}) hold {held:,} parameters in {count:,} tensors"
    checks = (
        (sizes.get("vocabulary", 0) * embedding > held, "its token embedding table alone is larger"),
        (sizes.get("positions", 0) * embedding > held, "its position table alone is larger"),
        (2 * hidden * sizes.get("feed-forward", 0) > held, "one feed-forward layer alone is larger"),
        (
            estimate > SHARED_LAYERS_FACTOR * held,
            f"it is more than {SHARED_LAYERS_FACTOR} times larger (about {estimate:,} parameters)",
        ),
        (sizes.get("layers", 0) > count, "it has more layers than the weights have tensors"),
    )
    reason = next((reason for failed, reason in checks if failed), None)
    if reason is not None:
        raise ModelLoadError(
            f"{config_file}: does not fit its weights: it describes {_describe(sizes)}, and {reason}; "
            f"{holds}. The config was changed, or belongs to another model"
        )


def check_backbone(
    folder: Path, weights: list[Path], *, trust_remote_code: bool = False, task: str = "feature-extraction"
) -> BackboneShape:
    """Size the model `folder`/config.json describes and check it against `weights` (the folder's
    safetensors files) before anything is built; ModelLoadError of one line naming the file otherwise.

    `task` is sentence-transformers' transformer_task (which Auto class builds the model).
    """
    config_file = folder / "config.json"
    try:
        raw = read_json_object(config_file)
    except DataError as error:
        raise ModelLoadError(str(error)) from None
    sizes = config_sizes(raw, str(config_file))
    tensors = read_tensors(weights) if weights else None
    check_sizes(config_file, sizes, tensors)
    model = _meta_model(folder, trust_remote_code, task)
    if model is None:
        return BackboneShape(sizes.get("vocabulary"), sizes.get("positions"), sizes.get("hidden"), None)
    total = sum(p.numel() for p in model.parameters())
    if 4 * total > MODEL.value():
        raise ModelLoadError(MODEL.refusal(f"{config_file}: the model it describes in float32", 4 * total))
    if tensors is not None:
        _compare_shapes(model, tensors, config_file)
    embeddings = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    rows = getattr(embeddings, "num_embeddings", None)
    config = model.config
    layers = getattr(config, "num_hidden_layers", None)
    return BackboneShape(rows, usable_positions(model), getattr(config, "hidden_size", None), layers)


def usable_positions(backbone: Any) -> int | None:
    """Tokens the position table can number: RoBERTa-style embeddings (RoBERTa, its pre-LayerNorm form)
    number positions from padding_idx + 1, so their table holds padding_idx + 1 fewer tokens."""
    positions = getattr(getattr(backbone, "config", None), "max_position_embeddings", 0) or 0
    if not positions:
        return None
    offset = getattr(getattr(backbone, "embeddings", None), "padding_idx", None)
    return int(positions) - (offset + 1 if isinstance(offset, int) else 0)


def _meta_model(folder: Path, trust_remote_code: bool, task: str) -> Any:
    """The model `folder`'s config describes, built on the meta device (its tensors hold no memory);
    None for a config that sentence-transformers would not build with an Auto class."""
    import torch
    from sentence_transformers.base.modules.transformer import TRANSFORMER_TASK_TO_AUTO_MODEL
    from transformers import AutoConfig

    auto = TRANSFORMER_TASK_TO_AUTO_MODEL.get(task)
    if auto is None:
        return None
    try:
        config = AutoConfig.from_pretrained(str(folder), trust_remote_code=trust_remote_code)
        with torch.device("meta"):
            return auto.from_config(config, trust_remote_code=trust_remote_code)
    except LwapError:
        raise
    except Exception as error:  # transformers' refusal of the config (ValueError, KeyError, ...): the
        # load would fail the same way; said here in one line, naming the file
        first = next(iter(str(error).strip().splitlines()), "")
        raise ModelLoadError(
            f"{folder / 'config.json'}: transformers cannot build the model it describes "
            f"({type(error).__name__}: {first})"
        ) from None


def _compare_shapes(model: Any, tensors: Tensors, config_file: Path) -> None:
    """ModelLoadError naming the first tensor of the weights whose shape is not the config's."""
    prefix = getattr(model, "base_model_prefix", "") or ""
    for name, parameter in model.state_dict().items():
        for candidate in (name, f"{prefix}.{name}" if prefix else name, name.removeprefix(f"{prefix}.")):
            if candidate in tensors.shapes:
                found, expected = tensors.shapes[candidate], tuple(parameter.shape)
                if found != expected:
                    raise ModelLoadError(
                        f"{tensors.where[candidate]}: {candidate} is {_shape(found)}, but {config_file} "
                        f"describes {_shape(expected)}: the weights do not fit the config"
                    )
                break


def _shape(shape: tuple[int, ...]) -> str:
    return " x ".join(f"{size:,}" for size in shape) or "a scalar"
