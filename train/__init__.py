"""SimCSE training (installed as lwap.train): `lwap train CONFIG.yaml`, or `train(load_config(path))`."""

from lwap.train.config import TrainConfig, load_config
from lwap.train.run import train

__all__ = ["TrainConfig", "load_config", "train"]
