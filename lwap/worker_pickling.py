"""Every layer's hidden states in sentence-transformers' worker processes (`encode(device=[...])`, `pool=`).

Poolers over several layers read `all_layer_embeddings`, which transformers 5 collects with forward hooks
that it installs on the first forward and enables per model class through a table filled when a model is
constructed. A worker started by spawn receives the model by pickle: the installed hooks are closures that
cannot be pickled, and an unpickled model was never constructed in the worker, so its class is missing from
the worker's table and the backbone returns no hidden states there. `keep_hidden_states_in_workers`
registers, for the backbone's class and with multiprocessing's pickler only, a reduction that drops those
hooks (transformers installs them again on the next forward) and enters the class in the worker's table.
Imports only torch and transformers: this file is copied into model folders (lwap.portable).
"""

from __future__ import annotations

from multiprocessing.reduction import ForkingPickler
from typing import Any

from torch import nn
from transformers import PreTrainedModel
from transformers.utils import output_capturing


def keep_hidden_states_in_workers(model: Any) -> None:
    """Let `model`'s backbone (its first module's `auto_model`) return hidden states in worker processes."""
    backbone = getattr(model[0], "auto_model", None) if len(model) else None
    if isinstance(backbone, PreTrainedModel):
        ForkingPickler.register(type(backbone), _reduce_backbone)


def _reduce_backbone(backbone: PreTrainedModel) -> tuple[Any, tuple[Any, ...]]:
    for module in backbone.modules():
        capturing = [key for key, hook in module._forward_hooks.items() if _is_capturing_hook(hook)]
        hook_tables = (
            module._forward_hooks,
            module._forward_hooks_with_kwargs,
            module._forward_hooks_always_called,
        )
        for hooks in hook_tables:
            for key in capturing:
                hooks.pop(key, None)
        module.__dict__.pop("_output_capturing_hooks_installed", None)
    return _rebuild_backbone, (type(backbone), dict(backbone.__dict__))


def _is_capturing_hook(hook: Any) -> bool:
    return getattr(hook, "__module__", None) == output_capturing.__name__


def _rebuild_backbone(cls: type[nn.Module], state: dict[str, Any]) -> nn.Module:
    backbone = cls.__new__(cls)
    backbone.__setstate__(state)
    output_capturing._CAN_RECORD_REGISTRY[backbone] = backbone._can_record_outputs  # as its __init__ does
    return backbone
