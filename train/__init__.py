"""SimCSE training (installed as lwap.train): `lwap train CONFIG.yaml`, or `train(load_config(path))`.

`build_trainer(config, out, inputs=training_inputs(config, out))` gives the same trainer without running it
(e.g. to time its steps).

Imported lazily (PEP 562) so that `lwap --help` does not import torch and sentence-transformers.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BuiltTrainer",
    "TrainConfig",
    "TrainingInputs",
    "build_trainer",
    "load_config",
    "train",
    "training_inputs",
]


def __getattr__(name: str) -> Any:
    if name in ("TrainConfig", "load_config"):
        from lwap.train import config

        return getattr(config, name)
    if name == "train":
        from lwap.train.run import train

        return train
    if name in ("BuiltTrainer", "TrainingInputs", "build_trainer", "training_inputs"):
        from lwap.train import trainer

        return getattr(trainer, name)
    raise AttributeError(f"module 'lwap.train' has no attribute {name!r}")
