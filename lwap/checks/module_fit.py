"""lwap's modules in a model folder checked against their weights and the backbone before they are built.

A module's config.json sizes it (LWAP's `hidden_size`, the MLP's width): a hidden size of a million
would allocate terabytes in `nn.Linear` before its weights are read, and one that differs from the
backbone's ends in a shape error at the first encode. So the module is built on the meta device (no
memory behind its tensors), its parameters' shapes compared with its safetensors file's header, and its
sizes with the backbone's (`lwap.checks.backbone_fit.BackboneShape`).
"""

from __future__ import annotations

from pathlib import Path

from lwap.checks.backbone_fit import BackboneShape, read_tensors
from lwap.checks.files import read_json_object
from lwap.errors import DataError, ModelLoadError

WEIGHTS_FILE = "model.safetensors"  # lwap.module_io's name


def check_module(folder: Path, cls: type, backbone: BackboneShape | None) -> None:
    """ModelLoadError of one line naming the file if the lwap module `cls` saved in `folder` cannot be
    built from its config, does not fit its weights, or reads hidden states the backbone does not give."""
    import torch

    config_file = folder / "config.json"
    try:
        config = read_json_object(config_file) if config_file.is_file() else {}
    except DataError as error:
        raise ModelLoadError(str(error)) from None
    try:
        with torch.device("meta"):
            module = cls(**config)
    except (TypeError, ValueError) as error:  # what cls(**config) at load would raise, said in one line
        raise ModelLoadError(f"{config_file}: cannot build {cls.__name__} from it ({error})") from None
    expected = {name: tuple(tensor.shape) for name, tensor in module.state_dict().items()}
    weights = folder / WEIGHTS_FILE
    if expected and weights.is_file():
        found = read_tensors([weights]).shapes
        if set(found) != set(expected):
            extra, missing = sorted(set(found) - set(expected)), sorted(set(expected) - set(found))
            raise ModelLoadError(
                f"{weights}: holds tensors {extra or 'no others'} where {config_file} describes "
                f"{missing or 'no more'}: the weights do not fit the config"
            )
        for name, shape in expected.items():
            if found[name] != shape:
                raise ModelLoadError(
                    f"{weights}: {name} is {list(found[name])}, but {config_file} describes {list(shape)}: "
                    "the weights do not fit the config"
                )
    if backbone is not None:
        _check_against_backbone(module, config_file, backbone)


def _check_against_backbone(module: object, config_file: Path, backbone: BackboneShape) -> None:
    hidden = getattr(module, "hidden_size", None)
    reads_hidden_states = hasattr(module, "num_hidden_states")  # LWAP reads the backbone's own width
    if reads_hidden_states and backbone.hidden is not None and hidden != backbone.hidden:
        raise ModelLoadError(
            f"{config_file}: hidden_size {hidden}, but the backbone's is {backbone.hidden}: this module was "
            "saved for another backbone"
        )
    if backbone.layers is None:
        return
    states = backbone.layers + 1  # the embedding output and each layer's
    count = getattr(module, "num_hidden_states", None)
    if count is not None and count != states:
        raise ModelLoadError(
            f"{config_file}: num_hidden_states {count}, but the backbone gives {states} ({backbone.layers} "
            "layers and the embedding output): this module was saved for another backbone"
        )
    layers = getattr(module, "layers", None)
    bad = [i for i in layers or () if not -states <= i < states]
    if bad:
        raise ModelLoadError(
            f"{config_file}: layers {bad} are not among the backbone's {states} hidden states "
            f"(0..{states - 1})"
        )
