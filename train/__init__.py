"""SimCSE training (installed as lwap.train): `lwap train CONFIG.yaml`, or `train(load_config(path))`.

Imported lazily (PEP 562) so that `lwap --help` does not import torch and sentence-transformers.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TrainConfig", "load_config", "train"]


def __getattr__(name: str) -> Any:
    if name in ("TrainConfig", "load_config"):
        from lwap.train import config

        return getattr(config, name)
    if name == "train":
        from lwap.train.run import train

        return train
    raise AttributeError(f"module 'lwap.train' has no attribute {name!r}")
