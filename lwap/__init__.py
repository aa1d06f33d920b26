"""lwap: contrastive sentence-embedding training (SimCSE) with layer-wise attention pooling.

The public names are imported on first use (PEP 562), so `import lwap.errors` or `lwap --help` does not
pay for importing torch and sentence-transformers.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "DEFAULT_BACKBONE": "lwap.backbones",
    "resolve_backbone": "lwap.backbones",
    "LwapError": "lwap.errors",
    "POOLINGS": "lwap.registry",
    "build_model": "lwap.model",
    "find_lwap": "lwap.model",
    "load_model": "lwap.model",
    "LayerMean": "lwap.layer_mean",
    "NormalizeHiddenStates": "lwap.hidden_state_norm",
    "TrainingOnlyMLP": "lwap.training_only_mlp",
    "LayerwiseAttentionPooling": "lwap.layerwise_attention",
}
__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # for type checkers and IDEs; at run time __getattr__ imports on first use
    from lwap.backbones import DEFAULT_BACKBONE, resolve_backbone  # noqa: F401
    from lwap.errors import LwapError  # noqa: F401
    from lwap.hidden_state_norm import NormalizeHiddenStates  # noqa: F401
    from lwap.layer_mean import LayerMean  # noqa: F401
    from lwap.layerwise_attention import LayerwiseAttentionPooling  # noqa: F401
    from lwap.model import build_model, find_lwap, load_model  # noqa: F401
    from lwap.registry import POOLINGS  # noqa: F401
    from lwap.training_only_mlp import TrainingOnlyMLP  # noqa: F401


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'lwap' has no attribute {name!r}")
