"""Checks of the elastic-embedding keys of `objective` (Matryoshka dimensions, depths), without torch.

`lwap.train.config` calls `check_objective` with the rest of its checks, so a bad value stops `lwap train`
before torch loads; `check_against_backbone` runs once the backbone is known (before the output folder
is touched); lwap.train.elastic builds the losses.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lwap import registry
from lwap.errors import ConfigError


def _weights(
    values: Sequence[float] | None, of: Sequence[int] | None, key: str, of_key: str, source: str
) -> None:
    if values is None:
        return
    if of is None:
        raise ConfigError(f"{source}: {key} needs {of_key} (one weight per entry)")
    if len(values) != len(of):
        raise ConfigError(
            f"{source}: {key} must have one weight per {of_key} entry ({len(of)}), got {len(values)}"
        )
    if any(not value > 0 for value in values):
        raise ConfigError(f"{source}: {key} must all be > 0, got {list(values)}")


def _sizes(values: Sequence[int] | None, key: str, source: str) -> None:
    if values is None:
        return
    if not values:
        raise ConfigError(f"{source}: {key} must list at least one value, or be null")
    if any(value < 1 for value in values):
        raise ConfigError(f"{source}: {key} must hold values of at least 1, got {list(values)}")
    if len(set(values)) != len(values):
        raise ConfigError(f"{source}: {key} lists a value twice: {list(values)}")


def check_objective(objective: Any, model: Any, source: str) -> None:
    """The elastic keys of a config's `objective` section, and the pooler's ability to be truncated."""
    _sizes(objective.matryoshka_dims, "objective.matryoshka_dims", source)
    _weights(
        objective.matryoshka_weights,
        objective.matryoshka_dims,
        "objective.matryoshka_weights",
        "objective.matryoshka_dims",
        source,
    )
    if objective.matryoshka_dims is not None and model.pooling == "cls" and not model.mlp_at_inference:
        raise ConfigError(
            f"{source}: objective.matryoshka_dims with pooling cls trains the prefixes of the MLP's output, "
            "which cls drops at inference (mlp_at_inference: false): set model.mlp_at_inference: true"
        )
    depths = objective.depths
    _sizes(depths, "objective.depths", source)
    _weights(objective.depth_weights, depths, "objective.depth_weights", "objective.depths", source)
    sample = objective.depth_sample
    if sample is not None:
        if depths is None:
            raise ConfigError(f"{source}: objective.depth_sample needs objective.depths")
        if not 1 <= sample <= len(depths) - 1:
            raise ConfigError(
                f"{source}: objective.depth_sample must be in 1..{len(depths) - 1} (the shallower depths "
                f"drawn each step; the deepest is always trained) or null (all), got {sample}"
            )
    if depths is None:
        return
    shallowest = min(depths)
    fixed = registry.POOLERS[model.pooling].deepest_fixed_level(model.pooler_options())
    if fixed is not None and fixed[1] > shallowest:
        key, level = fixed
        raise ConfigError(
            f"{source}: model.{key} {getattr(model, key)} reads level {level}, beyond depth {shallowest} "
            f"(objective.depths): the {model.pooling} pooler cannot be truncated there; change model.{key} "
            "or the depths"
        )


def check_against_backbone(objective: Any, num_layers: int, hidden_size: int | None, source: str) -> None:
    """Depths within the backbone's L layers, the deepest being L; dimensions within its width."""
    if objective.depths is not None:
        if max(objective.depths) > num_layers:
            raise ConfigError(
                f"{source}: objective.depths {objective.depths} goes past the backbone's {num_layers} layers"
            )
        if max(objective.depths) != num_layers:
            raise ConfigError(
                f"{source}: objective.depths must include the backbone's full depth {num_layers} (the saved "
                f"model is the full one, and its depth is trained every step), got {objective.depths}"
            )
    dims = objective.matryoshka_dims
    if dims is not None and hidden_size is not None and max(dims) > hidden_size:
        raise ConfigError(
            f"{source}: objective.matryoshka_dims {dims} goes past the model's embedding dimension "
            f"{hidden_size}"
        )


def check_backbone_depths(config: Any, source: str) -> None:
    """`check_against_backbone` with the backbone's config file (no weights loaded): what `lwap train`
    checks before it touches the output folder. The model's embedding dimension is its hidden size but
    with a native start, whose own pooling may project (checked again once the model is built)."""
    o = config.objective
    if o.depths is None and o.matryoshka_dims is None:
        return
    from transformers import AutoConfig

    from lwap.backbones import resolve_backbone

    m = config.model
    backbone = AutoConfig.from_pretrained(resolve_backbone(m.backbone), trust_remote_code=m.trust_remote_code)
    native = m.pooling == "lwap" and m.lwap_start == "native"
    width = None if native else int(backbone.hidden_size)
    check_against_backbone(o, int(backbone.num_hidden_layers), width, source)
