"""lwap: contrastive sentence-embedding training (SimCSE) with layer-wise attention pooling."""

from lwap.backbones import DEFAULT_BACKBONE, resolve_backbone
from lwap.errors import LwapError
from lwap.model import POOLINGS, build_model, find_lwap, load_model
from lwap.poolers import LayerMean, TrainingOnlyMLP
from lwap.pooling import LayerwiseAttentionPooling

__version__ = "0.1.0"
__all__ = [
    "DEFAULT_BACKBONE",
    "POOLINGS",
    "LayerMean",
    "LayerwiseAttentionPooling",
    "LwapError",
    "TrainingOnlyMLP",
    "build_model",
    "find_lwap",
    "load_model",
    "resolve_backbone",
]
