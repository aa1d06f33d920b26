"""A model cut to its backbone's first k layers: the layers past k dropped, the pooler re-configured.

`truncate_model(model, k)` returns a new SentenceTransformer whose backbone really has k layers (config
`num_hidden_layers = k`, the weights of layers k+1..L gone: encoding costs about k/L of the full model's
backbone) and whose pooling modules read levels 0..k, each cut by its class's rule in lwap.depth; it
computes what `lwap.depth.DepthReader` reads from a full-depth forward (tests/test_depth.py).
`save_truncated` writes it as an ordinary model folder: plain sentence-transformers loads it
(`trust_remote_code=True` for lwap's modules, as any lwap folder), and so does a later lwap, with no
record of the cut needed.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torch import nn

from lwap.depth import backbone_of, check_depth, depth_cut, num_layers
from lwap.errors import ConfigError, OutputExistsError

if TYPE_CHECKING:
    from lwap.checks.output_claim import FolderClaim


def layer_list(backbone: nn.Module) -> tuple[nn.Module, str, nn.ModuleList]:
    """(parent, attribute, list) of the backbone's transformer layers: its one ModuleList of L layers
    (BERT's `encoder.layer`, and alike in the encoders transformers ships)."""
    full = int(backbone.config.num_hidden_layers)
    found = [
        (name, module)
        for name, module in backbone.named_modules()
        if isinstance(module, nn.ModuleList) and len(module) == full
    ]
    if len(found) != 1:
        raise ConfigError(
            f"cannot find the {full} transformer layers of this {backbone.config.model_type} backbone "
            f"(found {len(found)} lists of {full} modules); lwap truncates BERT-like encoders"
        )
    name, layers = found[0]
    parent_name, _, attribute = name.rpartition(".")
    return backbone.get_submodule(parent_name) if parent_name else backbone, attribute, layers


def truncate_model(model: Any, depth: int) -> Any:
    """A copy of `model` with its backbone's first `depth` layers and its pooler re-configured for them
    (ConfigError, one line, for a depth outside 1..L or a pooler that cannot be read there)."""
    check_depth(model, depth)
    full = num_layers(model)
    truncated = copy.deepcopy(model)
    if depth == full:
        return truncated
    backbone = backbone_of(truncated).auto_model
    parent, attribute, layers = layer_list(backbone)
    setattr(parent, attribute, nn.ModuleList(list(layers)[:depth]))
    backbone.config.num_hidden_layers = depth
    for name, module in list(truncated.named_children())[1:]:  # the copy's own modules: cut in place
        truncated._modules[name] = depth_cut(module, full, depth)
    return truncated


TRUNCATED_NOTE = "TRUNCATED.md"
# what every saved model folder holds, checked against a folder's foreign entries before the model loads
# (the rest of what the save writes is checked when it is written: lwap.checks.output_claim.new_contents)
SAVED_NAMES = (
    TRUNCATED_NOTE,
    "README.md",
    "modules.json",
    "config_sentence_transformers.json",
    "config.json",
)


def check_output_folder(output: Path, *, overwrite: bool = False) -> FolderClaim:
    """Whether `lwap truncate` may write `output` (lwap.checks.output_claim): a new or empty folder, or
    one it wrote before with `overwrite`; a user's non-empty folder only with `overwrite`, which keeps
    its entries. OutputExistsError (one line) otherwise; read-only."""
    from lwap.checks.output_claim import check_folder, entries

    claim = check_folder(
        output,
        "truncate",
        overwrite=overwrite,
        writes=SAVED_NAMES,
        label=str(output),
        error=OutputExistsError,
        legacy=lambda folder: (folder / TRUNCATED_NOTE).is_file() and (folder / "modules.json").is_file(),
    )
    if claim.state in ("lwap", "legacy") and set(entries(output)) - claim.foreign and not overwrite:
        raise OutputExistsError(
            f"{output} already exists (a model lwap truncate saved); pass --overwrite to replace it, or "
            "choose a new folder for the truncated model"
        )
    return claim


def save_truncated(
    model: Any,
    depth: int,
    output: Path,
    *,
    source: str = "",
    dims: int | None = None,
    overwrite: bool = False,
) -> Path:
    """`truncate_model(model, depth)` saved to `output` (a new, empty or lwap-made folder: a model written
    whole or not at all, replacing lwap's earlier one with `overwrite`), with `truncate_dim` set when
    `dims` is given, and a note saying what it was cut from."""
    from lwap.checks.files import write_text_atomically
    from lwap.checks.output_claim import new_contents

    claim = check_output_folder(output, overwrite=overwrite)
    full = num_layers(model)
    truncated = truncate_model(model, depth)
    if dims is not None:
        check_dims(truncated, dims)
        truncated.truncate_dim = dims
    with new_contents(claim) as partial:
        truncated.save(str(partial))
        cut = f"its first {depth} of {full} backbone layers" if depth < full else f"all {full} layers"
        shorter = f", vectors cut to their first {dims} dimensions (truncate_dim)" if dims else ""
        write_text_atomically(
            partial / TRUNCATED_NOTE,
            f"# Truncated model\n\n{source or 'The model'} with {cut}{shorter}, by `lwap truncate`. The "
            "layers past the cut are not in this folder; the pooling modules read the levels that remain "
            "(docs/TRAINING.md, 'Elastic embeddings').\n",
        )
    return output


def check_dims(model: Any, dims: int) -> None:
    """ConfigError unless `dims` is a prefix length of the model's sentence vectors (1..dim)."""
    full = model._get_untruncated_embedding_dimension()
    if full is not None and not 1 <= dims <= full:
        raise ConfigError(f"dims must be in 1..{full} (the model's embedding dimension), got {dims}")
    if dims < 1:
        raise ConfigError(f"dims must be at least 1, got {dims}")
