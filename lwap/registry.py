"""The poolers lwap builds: one entry each, read by config checking, `lwap.build_model` and the rest of lwap.

An entry says what the pooler builds (its builder, the module classes it places), its options, its name
on the model card, whether it reads every layer or has parameters, and which option fixes a level it reads
at every depth (what limits how far it can be cut). What other parts of lwap need is derived from it:
lwap.portable's module classes and the package's exports (`LWAP_MODULES`), the card's names, the depth
checks of `objective.depths`; lwap.depth holds one rule per module class for reading a k-layer backbone.
Adding a pooler is one entry here plus its tests (docs/DEVELOPING.md, "Adding a pooler").

Imports no torch, so a typo in a config is reported before torch loads; each builder imports its modules
when called, and the module classes are named by import path. An option is a `model.<name>` key of a
training config and a keyword of `build_model` (and its key in each file of configs/, which shows every
key; a test keeps it so); names are unique across poolers, so each means one thing.
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
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


def _no_fixed_level(options: Mapping[str, Any]) -> tuple[str, int] | None:
    return None


@dataclass(frozen=True)
class Pooler:
    """A pooling head: `build(backbone, **options)` gives the modules placed after the Transformer."""

    name: str
    description: str
    hidden_states: bool  # needs every layer's hidden states (the backbone is loaded to return them)
    build: Callable[..., list[Any]]
    options: tuple[Option, ...] = ()
    # every module class `build` may place, by import path (`LEVEL_NORM` comes with `hidden_states`): lwap's
    # own are copied into saved folders and exported by the package; each has a rule in lwap.depth
    modules: tuple[str, ...] = field(kw_only=True)
    card_name: str = field(kw_only=True)  # the model card's title: "<backbone> + <card_name>, <objective>"
    parameters: bool = field(kw_only=True)  # its modules learn (the head's learning rate and warm-up apply)
    # the option fixing a level read at every depth, and the deepest such level (None: any depth reads):
    # the pooler cannot be cut to fewer layers; lwap.depth refuses the built modules alike
    fixed_level: Callable[[Mapping[str, Any]], tuple[str, int] | None] = _no_fixed_level

    def own(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """This pooler's `options` (others ignored, missing ones at their defaults)."""
        return {o.name: copy.deepcopy(options.get(o.name, o.default)) for o in self.options}

    def head(self, backbone: Backbone, options: Mapping[str, Any]) -> list[Any]:
        """The modules with this pooler's `options` (others ignored, missing ones at their defaults)."""
        return self.build(backbone, **self.own(options))

    def placed(self) -> tuple[str, ...]:
        """Every module class a model with this pooler may hold after its Transformer (import paths)."""
        return (LEVEL_NORM, *self.modules) if self.hidden_states else self.modules

    def deepest_fixed_level(self, options: Mapping[str, Any]) -> tuple[str, int] | None:
        """(option, level): the deepest level `options` make this pooler read at every depth, or None."""
        return self.fixed_level(self.own(options))


ST_MODULES = "sentence_transformers.sentence_transformer.modules"
POOLING = f"{ST_MODULES}.Pooling"
# placed by lwap.model before every pooler with `hidden_states`, on a pre-LayerNorm backbone
LEVEL_NORM = "lwap.hidden_state_norm.NormalizeHiddenStates"
LAYER_MEAN = "lwap.layer_mean.LayerMean"


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


def _max(backbone: Backbone) -> list[Any]:
    from sentence_transformers.sentence_transformer.modules import Pooling

    return [Pooling(backbone.hidden_size, "max")]


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


def _lwap_fixed_level(options: Mapping[str, Any]) -> tuple[str, int] | None:
    layers = options["lwap_layers"]
    return ("lwap_layers", max(layers)) if layers else None  # null: levels 0..k at every depth


def _weighted_fixed_level(options: Mapping[str, Any]) -> tuple[str, int]:
    return "weighted_layer_start", options["weighted_layer_start"]


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
            # the native start places the backbone's own pooling (lwap.native_pooling) before the head
            modules=(
                "lwap.layerwise_attention.LayerwiseAttentionPooling",
                POOLING,
                f"{ST_MODULES}.Normalize",
                f"{ST_MODULES}.Dense",
            ),
            card_name="layer-wise attention pooling (LWAP)",
            parameters=True,
            fixed_level=_lwap_fixed_level,
        ),
        Pooler(
            "weighted",
            "learned scalar weight per layer from weighted_layer_start, weighted mean, then [CLS]",
            True,
            _weighted,
            (Option("weighted_layer_start", int, 4, "first layer of the weighted pooler", minimum=0),),
            modules=(f"{ST_MODULES}.WeightedLayerPooling", POOLING),
            card_name="weighted layer pooling",
            parameters=True,
            fixed_level=_weighted_fixed_level,
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
            modules=(POOLING, "lwap.training_only_mlp.TrainingOnlyMLP"),
            card_name="[CLS] pooling (SimCSE's MLP in training only)",
            parameters=True,
        ),
        Pooler(
            "mean",
            "masked mean of the last layer",
            False,
            _mean,
            modules=(POOLING,),
            card_name="mean pooling",
            parameters=False,
        ),
        Pooler(
            "max",
            "per dimension, the largest value over the last layer's tokens (sentence-transformers' max)",
            False,
            _max,
            modules=(POOLING,),
            card_name="max pooling",
            parameters=False,
        ),
        Pooler(
            "first_last_avg",
            "masked mean of (first transformer layer + last layer) / 2",
            True,
            _first_last_avg,
            modules=(LAYER_MEAN, POOLING),
            card_name="first-last layer average pooling",
            parameters=False,
        ),
        Pooler(
            "last2_avg",
            "masked mean of the last two layers",
            True,
            _last2_avg,
            modules=(LAYER_MEAN, POOLING),
            card_name="last-two-layers average pooling",
            parameters=False,
        ),
        Pooler(
            "all_levels_avg",
            "masked mean of every hidden state, embedding output included, equal weights (LWAP's levels)",
            True,
            _all_levels_avg,
            modules=(LAYER_MEAN, POOLING),
            card_name="all-levels average pooling (embedding output and every layer)",
            parameters=False,
        ),
    )
}
POOLINGS = tuple(POOLERS)
OPTIONS: dict[str, Option] = {o.name: o for pooler in POOLERS.values() for o in pooler.options}
# every module class a pooler may place, and lwap's own among them: the classes whose code travels in saved
# folders (lwap.portable) and that the package exports
MODULES = tuple(dict.fromkeys(path for pooler in POOLERS.values() for path in pooler.placed()))
LWAP_MODULES = tuple(path for path in MODULES if path.startswith("lwap."))


def module_class(path: str) -> type:
    """The class an import path of `MODULES` names (importing its module: torch, for most)."""
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


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
