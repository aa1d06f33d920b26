"""lwap: contrastive sentence-embedding training (SimCSE) with layer-wise attention pooling.

The public names are imported on first use (PEP 562), so `import lwap.errors` or `lwap --help` does not
pay for importing torch and sentence-transformers.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from lwap.registry import LWAP_MODULES  # imports no torch

__version__ = "0.1.0"

_EXPORTS = {
    "DEFAULT_BACKBONE": "lwap.backbones",
    "resolve_backbone": "lwap.backbones",
    "LwapError": "lwap.errors",
    "POOLINGS": "lwap.registry",
    "build_model": "lwap.model",
    "find_lwap": "lwap.model",
    "load_model": "lwap.model",
    # lwap's pooling modules, as the poolers in lwap.registry name them: {"LayerMean": "lwap.layer_mean", ...}
    **{path.rpartition(".")[2]: path.rpartition(".")[0] for path in LWAP_MODULES},
}
__all__ = sorted(_EXPORTS)

# for type checkers and IDEs (a test keeps this list equal to __all__); at run time __getattr__ imports on
# first use
if TYPE_CHECKING:
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
