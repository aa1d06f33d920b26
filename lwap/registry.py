"""The poolers lwap builds and their options: one table, read by config checking and `lwap.build_model`.

Imports no torch, so a typo in a config is reported before torch loads; each builder imports its modules
when called. Adding a pooler or an option is one entry here, plus its tests (and the option's key in each
file of configs/, which shows every key; a test keeps it so). An option is a `model.<name>` key of a
training config and a keyword of `build_model`; names are unique across poolers, so each means one thing.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lwap.errors import ConfigError, unknown_value
from lwap.lwap_choices import (
    LWAP_OUTPUTS,
    LWAP_QUERIES,
    LWAP_STARTS,
    NATIVE_POOLINGS,
    SCORE_SCALES,
)

# What `lwap_level_norm` takes: not in lwap_choices (copied into model folders), since the LWAP module never
# sees it: the norm is a module of its own placed before the head.
LWAP_LEVEL_NORMS = ("auto", "all")


@dataclass(frozen=True)
class Backbone:
    """What a builder knows of the backbone the pooler sits on."""

    hidden_size: int
    num_layers: int  # transformer layers L; with output_hidden_states it returns L+1 hidden states
    source: str = ""  # its folder (a sentence-transformers model's root) or hub id: its saved settings


@dataclass(frozen=True)
class Option:
    """One pooler setting. Types are checked by the config loader; `check` tests the value."""

    name: str
    type: Any  # the type hint configs are checked against: int, str, list[int] | None, ...
    default: Any
    help: str
    choices: tuple[str, ...] = ()  # the values a string option allows
    minimum: int | None = None  # the least value of an int, or of each item of an int list

    def check(self, value: Any, key: str) -> None:
        """ConfigError naming `key` when `value` is not allowed (null passes where the type allows it)."""
        if value is None:
            return
        if self.choices and value not in self.choices:
            raise unknown_value(key, value, self.choices)
        if self.minimum is not None:
            items = value if isinstance(value, list) else [value]
            if any(item < self.minimum for item in items):
                what = "hold values of" if isinstance(value, list) else "be"
                raise ConfigError(f"{key} must {what} at least {self.minimum}, got {value!r}")


@dataclass(frozen=True)
class Pooler:
    """A pooling head: `build(backbone, **options)` gives the modules placed after the Transformer."""

    name: str
    description: str
    hidden_states: bool  # needs every layer's hidden states (the backbone is loaded to return them)
    build: Callable[..., list[Any]]
    options: tuple[Option, ...] = ()

    def head(self, backbone: Backbone, options: Mapping[str, Any]) -> list[Any]:
        """The modules with this pooler's `options` (others ignored, missing ones at their defaults)."""
        own = {o.name: copy.deepcopy(options.get(o.name, o.default)) for o in self.options}
        return self.build(backbone, **own)


def _lwap(
    backbone: Backbone,
    lwap_layers: list[int] | None,
    score_scale: str,
    lwap_start: str,
    native_pooling: str,
    lwap_queries: str,
    lwap_latent_queries: int,
    lwap_output: str,
    lwap_level_norm: str,
) -> list[Any]:
    from lwap.hidden_state_norm import NormalizeHiddenStates
    from lwap.layerwise_attention import LayerwiseAttentionPooling

    states = backbone.num_layers + 1
    try:
        head = LayerwiseAttentionPooling(
            backbone.hidden_size,
            states,
            lwap_layers,
            score_scale,
            lwap_start,
            queries=lwap_queries,
            latent_queries=lwap_latent_queries,
            output_from=lwap_output,
        )
    except ValueError as error:  # a layer index past this backbone's hidden states
        raise ConfigError(f"lwap_layers: {error}") from None
    # `all`: every level LWAP reads gets a parameter-free LayerNorm per token, so no level's scale (an
    # embedding output twice the others' norm, say) weighs in its keys and values (issue 50)
    read = list(range(states)) if lwap_layers is None else lwap_layers
    levels = [NormalizeHiddenStates(read)] if lwap_level_norm == "all" else []
    if lwap_start == "random":
        return [*levels, head]
    from lwap.native_pooling import native_pooling_modules, normalize_after_correction

    native = native_pooling_modules(backbone.source, backbone.hidden_size, native_pooling)
    return [*levels, *native, head, *normalize_after_correction(native)]


def _weighted(backbone: Backbone, weighted_layer_start: int) -> list[Any]:
    from sentence_transformers.sentence_transformer.modules import Pooling, WeightedLayerPooling

    hidden, layers = backbone.hidden_size, backbone.num_layers
    if not 0 <= weighted_layer_start <= layers:
        raise ConfigError(
            f"weighted_layer_start must be in 0..{layers} for this backbone, got {weighted_layer_start}"
        )
    return [WeightedLayerPooling(hidden, layers, weighted_layer_start), Pooling(hidden, "cls")]


def _cls(backbone: Backbone, mlp_at_inference: bool) -> list[Any]:
    from sentence_transformers.sentence_transformer.modules import Pooling

    from lwap.training_only_mlp import TrainingOnlyMLP

    mlp = TrainingOnlyMLP(backbone.hidden_size, at_inference=mlp_at_inference)
    return [Pooling(backbone.hidden_size, "cls"), mlp]


def _mean(backbone: Backbone) -> list[Any]:
    from sentence_transformers.sentence_transformer.modules import Pooling

    return [Pooling(backbone.hidden_size, "mean")]


def _mean_of_layers(backbone: Backbone, layers: list[int]) -> list[Any]:
    from sentence_transformers.sentence_transformer.modules import Pooling

    from lwap.layer_mean import LayerMean

    return [LayerMean(layers), Pooling(backbone.hidden_size, "mean")]


def _first_last_avg(backbone: Backbone) -> list[Any]:
    return _mean_of_layers(backbone, [1, backbone.num_layers])  # layer 1, not the embedding output


def _last2_avg(backbone: Backbone) -> list[Any]:
    return _mean_of_layers(backbone, [backbone.num_layers - 1, backbone.num_layers])


def _all_levels_avg(backbone: Backbone) -> list[Any]:
    return _mean_of_layers(backbone, list(range(backbone.num_layers + 1)))  # the embedding output too


POOLERS: dict[str, Pooler] = {
    pooler.name: pooler
    for pooler in (
        Pooler(
            "lwap",
            "attention over every layer's [CLS] and masked mean, with the last [CLS] (the LWAP paper)",
            True,
            _lwap,
            (
                Option(
                    "lwap_layers",
                    list[int] | None,
                    None,
                    "hidden states taking part (0 = embedding output); null = all (the paper)",
                    minimum=0,
                ),
                Option(
                    "score_scale",
                    str,
                    "num_layers",
                    "attention scores / number of layers (the paper) or / √hidden (sqrt_hidden)",
                    choices=SCORE_SCALES,
                ),
                Option(
                    "lwap_start",
                    str,
                    "random",
                    "random (the paper's head) | native (the backbone's own sentence vector plus a "
                    "correction that starts at zero: for already-trained encoders)",
                    choices=LWAP_STARTS,
                ),
                Option(
                    "native_pooling",
                    str,
                    "auto",
                    "lwap_start native: auto (the backbone's saved sentence-transformers pooling), mean, cls",
                    choices=NATIVE_POOLINGS,
                ),
                Option(
                    "lwap_queries",
                    str,
                    "cls",
                    "what queries the layers: cls (each layer's [CLS], the paper) | mean (each layer's "
                    "masked mean) | latent (lwap_latent_queries learned vectors, starting near uniform)",
                    choices=LWAP_QUERIES,
                ),
                Option(
                    "lwap_latent_queries",
                    int,
                    4,
                    "lwap_queries latent: the number of learned queries",
                    minimum=1,
                ),
                Option(
                    "lwap_output",
                    str,
                    "cls_concat",
                    "what the output layer reads: cls_concat (the last [CLS] and the attention, the paper) "
                    "| attention (the attention alone)",
                    choices=LWAP_OUTPUTS,
                ),
                Option(
                    "lwap_level_norm",
                    str,
                    "auto",
                    "auto (the levels as the backbone gives them; a pre-LayerNorm backbone's raw layers "
                    "normalised) | all (every level LWAP reads layer-normed, no parameters: alike scales)",
                    choices=LWAP_LEVEL_NORMS,
                ),
            ),
        ),
        Pooler(
            "weighted",
            "learned scalar weight per layer from weighted_layer_start, weighted mean, then [CLS]",
            True,
            _weighted,
            (Option("weighted_layer_start", int, 4, "first layer of the weighted pooler", minimum=0),),
        ),
        Pooler(
            "cls",
            "SimCSE: MLP on [CLS] in training; plain [CLS] at inference unless mlp_at_inference",
            False,
            _cls,
            (
                Option(
                    "mlp_at_inference",
                    bool,
                    False,
                    "cls: keep the MLP at inference too (SimCSE's supervised models); false = unsupervised "
                    "SimCSE's --mlp_only_train",
                ),
            ),
        ),
        Pooler("mean", "masked mean of the last layer", False, _mean),
        Pooler(
            "first_last_avg",
            "masked mean of (first transformer layer + last layer) / 2",
            True,
            _first_last_avg,
        ),
        Pooler("last2_avg", "masked mean of the last two layers", True, _last2_avg),
        Pooler(
            "all_levels_avg",
            "masked mean of every hidden state, embedding output included, equal weights (LWAP's levels)",
            True,
            _all_levels_avg,
        ),
    )
}
POOLINGS = tuple(POOLERS)
OPTIONS: dict[str, Option] = {o.name: o for pooler in POOLERS.values() for o in pooler.options}


def check(pooling: str, options: Mapping[str, Any], key_prefix: str = "") -> Pooler:
    """The pooler named `pooling`, after checking it and `options` (of any pooler); errors name the key."""
    if pooling not in POOLERS:
        raise unknown_value(f"{key_prefix}pooling", pooling, POOLINGS)
    for name, value in options.items():
        if name not in OPTIONS:
            raise ConfigError(f"unknown pooler option {name!r}; valid: {', '.join(OPTIONS)}")
        OPTIONS[name].check(value, f"{key_prefix}{name}")
    return POOLERS[pooling]


def build_head(pooling: str, backbone: Backbone, **options: Any) -> list[Any]:
    """The checked pooler's modules for `backbone` (what follows the Transformer in build_model)."""
    return check(pooling, options).head(backbone, options)
