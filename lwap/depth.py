"""A model at depth k: its backbone's first k layers, its pooler re-configured to read levels 0..k.

Depth k means what a k-layer backbone gives a pooler: hidden states ("levels") 0..k, the last of them the
token embeddings. `DEPTH_RULES` says, per module class, how a module reads them (every class a pooler of
lwap.registry places has a rule; a test checks):
- `Pooling`, `Normalize`, `Dense`, `TrainingOnlyMLP` (the token or sentence embeddings): as they are, so
  the last-layer poolers and the native start's own pooling read layer k;
- `LayerMean` (the fixed averages) re-draws its levels: [1, L] → [1, k], [L-1, L] → [k-1, k],
  [0..L] → [0..k] (`levels_at_depth`);
- `LayerwiseAttentionPooling`: attention over levels 0..k, its output reading layer k's [CLS]; an
  explicit `lwap_layers` only if every level it names is ≤ k. Its score scale stays the trained head's,
  1/(number of levels at full depth), at every k (`lwap_query_scale` says how and why);
- `WeightedLayerPooling`: levels `weighted_layer_start`..k with their weights, if the start is ≤ k;
- `NormalizeHiddenStates` (the pre-LayerNorm backbones' level norm) over 1..k-1: a k-layer pre-LN
  backbone puts its final LayerNorm on layer k, as it does on layer L at full depth.
A module that cannot be read at depth k is refused with one line (`check_depth`). Each rule has two forms:
a view sharing the module's parameters (training at several depths) and a cut, a module of its own that
lwap.truncate saves.

Why reading is exact: in an encoder, layers > k do not act on layers ≤ k, so one full-depth forward holds
every depth's levels; a k-layer model (lwap.truncate) computes the same states, except that a
pre-LayerNorm backbone applies its final LayerNorm to layer k, which `DepthReader` applies too
(tests/test_depth.py compares the two). Training at several depths (lwap.train.elastic) therefore costs
one backbone forward per dropout view, and each view's depth-k states are its own.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from sentence_transformers.sentence_transformer.modules import (
    Dense,
    Dropout,
    LayerNorm,
    Normalize,
    Pooling,
    Transformer,
    WeightedLayerPooling,
)
from torch import Tensor, nn
from torch.func import functional_call

from lwap.errors import ConfigError
from lwap.hidden_state_norm import NormalizeHiddenStates
from lwap.layer_mean import LayerMean
from lwap.layerwise_attention import LayerwiseAttentionPooling
from lwap.portable import shipped_class_of
from lwap.training_only_mlp import TrainingOnlyMLP

# pre-LayerNorm backbones (lwap.model.PRE_LAYER_NORM_TYPES): the model's final LayerNorm, by attribute
FINAL_NORMS = {"roberta-prelayernorm": "LayerNorm"}

Step = Callable[[dict[str, Any]], dict[str, Any]]


def backbone_of(model: Any) -> Transformer:
    """The model's first module, which must be sentence-transformers' Transformer."""
    first = model[0]
    if not isinstance(first, Transformer):
        raise ConfigError(f"depth: the model's first module is {type(first).__name__}, not a Transformer")
    return first


def num_layers(model: Any) -> int:
    """L, the transformer layers of the model's backbone (it returns L+1 levels)."""
    return int(backbone_of(model).auto_model.config.num_hidden_layers)


def levels_at_depth(levels: Sequence[int], full: int, depth: int, what: str) -> list[int]:
    """The levels a fixed level list of a full-depth (L = `full`) pooler reads at `depth`.

    The lists lwap builds are re-drawn at depth k: a contiguous run from the bottom to the top, 1 or 0
    short of it ([0..L], [1..L-1]: → [0..k], [1..k-1]), first-last [1, L] → [1, k], last two
    [L-1, L] → [k-1, k]. Any other list must already lie in 0..k; else ConfigError naming `what`.
    """
    levels = [int(i) for i in levels]
    if depth == full or not levels:
        return levels
    for start in (0, 1):
        for short in (0, 1):
            if levels == list(range(start, full + 1 - short)):
                return list(range(start, depth + 1 - short))
    if full > 2 and levels == [1, full]:
        return [1, depth]
    if full > 2 and levels == [full - 1, full]:
        return [depth - 1, depth]
    if max(levels) <= depth:
        return levels
    raise ConfigError(
        f"{what} reads levels {levels}, beyond depth {depth}: this pooler cannot be truncated to {depth} "
        "layers"
    )


def lwap_query_scale(module: LayerwiseAttentionPooling, full: int, depth: int) -> float:
    """The factor on LWAP's queries that keeps its attention temperature at depth k as it was trained.

    The paper divides the attention scores by the number of levels read (L+1). At depth k the module
    reads k+1 levels and would divide by k+1: the same scores (L+1)/(k+1) times sharper, at k = 1 on a
    6-layer backbone 3.5 times. The head was trained at one temperature, and depth-elastic training
    shares one head across depths, so lwap keeps 1/(L+1) at every depth: the attention at depth k is the
    full-depth attention over the levels that remain, renormalised. It is folded into the queries
    (q → q·(k+1)/(L+1); RReLU is positively homogeneous, so this scales the scores exactly), which
    leaves the module's code and config as they are: a truncated folder is an ordinary LWAP model.
    `sqrt_hidden` and an explicit `lwap_layers` read the same count at every depth: factor 1.
    """
    if module.score_scale != "num_layers" or module.layers is not None:
        return 1.0
    return (depth + 1) / (full + 1)


def check_depth(model: Any, depth: int) -> None:
    """ConfigError (one line) unless every module of `model` can be read at `depth` (1..L)."""
    full = num_layers(model)
    if not 1 <= depth <= full:
        raise ConfigError(f"depth {depth} is outside 1..{full}, the layers of this model's backbone")
    for module in list(model)[1:]:
        depth_view(module, full, depth)


@dataclass(frozen=True)
class DepthRule:
    """How modules of one class read a k-layer backbone; both forms raise ConfigError where they cannot.

    `view(module, full, depth)`: the module at `depth` sharing its parameters (what `DepthReader` trains);
    `cut(module, full, depth)`: a module of its own for a k-layer model (what lwap.truncate saves; it may
    change the module it is given, which is the truncated model's copy).
    """

    view: Callable[[nn.Module, int, int], Step]
    cut: Callable[[nn.Module, int, int], nn.Module]


def _as_is(module: nn.Module, full: int, depth: int) -> nn.Module:
    return module


def _levels(module: nn.Module, full: int, depth: int) -> nn.Module:
    """A module with `layers` and no parameters, reading the levels at `depth` (view and cut alike)."""
    levels = levels_at_depth(module.layers, full, depth, type(module).__name__)
    if levels == module.layers:
        return module
    view = copy.copy(module)  # no parameters: a shallow copy reading other levels
    view.layers = levels
    return view


def _mean_levels(module: nn.Module, full: int, depth: int) -> nn.Module:
    view = _levels(module, full, depth)
    if not view.layers:  # the level norm may have none left (1..k-1 at k = 1); an average may not
        raise ConfigError(f"LayerMean {module.layers} reads no level at depth {depth}")
    return view


def _lwap_factor(module: LayerwiseAttentionPooling, full: int, depth: int) -> float:
    """ConfigError unless LWAP reads at `depth`; else the factor on its queries (`lwap_query_scale`)."""
    if module.num_hidden_states != full + 1:
        raise ConfigError(
            f"the LWAP module reads {module.num_hidden_states} hidden states; the backbone gives {full + 1}"
        )
    if module.layers is not None and max(module.layers) > depth:
        raise ConfigError(
            f"lwap_layers {module.layers} names levels beyond depth {depth}: this LWAP head cannot be "
            f"truncated to {depth} layers (leave lwap_layers null to read every level)"
        )
    return lwap_query_scale(module, full, depth)


def _query(module: LayerwiseAttentionPooling) -> str:
    return "latent" if module.queries == "latent" else "query.weight"


def _lwap_view(module: LayerwiseAttentionPooling, full: int, depth: int) -> Step:
    factor = _lwap_factor(module, full, depth)
    if factor == 1.0:
        return module
    name = _query(module)
    parameter = module.get_parameter(name)
    return lambda features: functional_call(module, {name: parameter * factor}, (features,))


def _lwap_cut(module: LayerwiseAttentionPooling, full: int, depth: int) -> nn.Module:
    factor = _lwap_factor(module, full, depth)
    with torch.no_grad():
        module.get_parameter(_query(module)).mul_(factor)
    module.num_hidden_states = depth + 1
    return module


def _weighted_kept(module: WeightedLayerPooling, full: int, depth: int) -> int:
    """ConfigError unless the weighted pooler reads at `depth`; else the number of weights it keeps."""
    if module.layer_start > depth:
        raise ConfigError(
            f"weighted_layer_start {module.layer_start} is beyond depth {depth}: the weighted pooler "
            f"cannot be truncated to {depth} layers"
        )
    return depth + 1 - module.layer_start


def _weighted_view(module: WeightedLayerPooling, full: int, depth: int) -> Step:
    kept = _weighted_kept(module, full, depth)
    if kept == module.layer_weights.numel():
        return module
    return lambda features: functional_call(
        module, {"layer_weights": module.layer_weights[:kept]}, (features,)
    )


def _weighted_cut(module: WeightedLayerPooling, full: int, depth: int) -> nn.Module:
    kept = _weighted_kept(module, full, depth)
    weights = nn.Parameter(module.layer_weights.detach()[:kept].clone())
    return WeightedLayerPooling(module.embedding_dimension, depth, module.layer_start, weights)


# one rule per module class (subclasses follow their class); a pooler's new module class needs one here
AS_IS = DepthRule(_as_is, _as_is)  # reads the token or the sentence embeddings: the same at every depth
DEPTH_RULES: dict[type, DepthRule] = {
    **dict.fromkeys((Pooling, Normalize, Dense, TrainingOnlyMLP, LayerNorm, Dropout), AS_IS),
    LayerMean: DepthRule(_mean_levels, _mean_levels),
    NormalizeHiddenStates: DepthRule(_levels, _levels),
    LayerwiseAttentionPooling: DepthRule(_lwap_view, _lwap_cut),
    WeightedLayerPooling: DepthRule(_weighted_view, _weighted_cut),
}


def depth_rule(module: nn.Module) -> DepthRule:
    """The rule of `module`'s class (ConfigError for a class lwap has none for)."""
    rule = next((DEPTH_RULES[c] for c in type(module).__mro__ if c in DEPTH_RULES), None)
    if rule is not None:
        return rule
    if shipped_class_of(type(module)) is not None:
        raise ConfigError(
            f"depth: this {type(module).__name__} is a saved folder's own copy of lwap's class (a "
            "model loaded by SentenceTransformer(..., trust_remote_code=True)): load it with lwap.load_model"
        )
    raise ConfigError(f"depth: lwap does not know how {type(module).__name__} reads a shallower backbone")


def depth_view(module: nn.Module, full: int, depth: int) -> Step:
    """`module` as it reads the levels at `depth`, sharing its parameters (ConfigError if it cannot)."""
    return depth_rule(module).view(module, full, depth)


def depth_cut(module: nn.Module, full: int, depth: int) -> nn.Module:
    """`module` (a copy of the caller's) made to read the levels at `depth` (ConfigError if it cannot)."""
    return depth_rule(module).cut(module, full, depth)


def final_norm(transformer: Transformer) -> nn.Module | None:
    """A pre-LayerNorm backbone's final LayerNorm (which a k-layer copy applies to layer k), else None."""
    backbone = transformer.auto_model
    name = FINAL_NORMS.get(getattr(backbone.config, "model_type", ""))
    return getattr(backbone, name) if name else None


class DepthReader:
    """Sentence embeddings at several depths from one full-depth forward of the model's backbone.

    `embed(features, depths)` runs the Transformer once (with every hidden state) and each depth's pooler
    view on levels 0..k of that forward; it returns the features of the last depth with
    `sentence_embedding` of shape (batch, len(depths), dim). In training mode each call draws its own
    dropout masks, so two calls (two views of one sentence) differ at every depth.
    """

    def __init__(self, model: Any, depths: Sequence[int]) -> None:
        self.transformer = backbone_of(model)
        self.full = num_layers(model)
        self.norm = final_norm(self.transformer)
        self.heads: dict[int, list[Step]] = {}
        for depth in depths:
            check_depth(model, depth)
            self.heads[depth] = [depth_view(module, self.full, depth) for module in list(model)[1:]]

    def levels(self, features: dict[str, Any], depth: int) -> dict[str, Any]:
        """A copy of full-depth Transformer `features` as a `depth`-layer backbone would give them."""
        levels = features["all_layer_embeddings"]
        if depth == self.full:
            return dict(features)
        top = levels[depth] if self.norm is None else self.norm(levels[depth])
        return {**features, "all_layer_embeddings": (*levels[:depth], top), "token_embeddings": top}

    def embed(self, features: dict[str, Any], depths: Sequence[int]) -> dict[str, Any]:
        config = self.transformer.auto_model.config
        asked = config.output_hidden_states
        config.output_hidden_states = True  # mean pooling's backbone is loaded without them
        try:
            full = self.transformer(features)
        finally:
            config.output_hidden_states = asked
        embeddings: list[Tensor] = []
        out = full
        for depth in depths:
            out = self.levels(full, depth)
            for step in self.heads[depth]:
                out = step(out)
            embeddings.append(out["sentence_embedding"])
        out["sentence_embedding"] = torch.stack(embeddings, dim=1)
        return out
