"""`lwap train` with sentence-transformers' AdaptiveLayerLoss: the elastic frontier's anchor.

    python -m benchmarks.elastic.anchor_train CONFIG [--set KEY=VALUE ...] [--resume | --overwrite]

Everything is `lwap train` (the same trainer, data order, checkpoints, model selection, resume, output
folder) except the loss: `AdaptiveLayerLoss(model, lwap's SimCSELoss)` with the library's defaults (one
sampled shallower layer per step, KL distillation from the last layer at temperature 0.3, uniform layer
weights). The pooler should be `mean`, the one the library truncates correctly
(benchmarks/elastic/adaptive_layer_probe.py). An unsupervised batch (one column) is handed to it as two
columns of the same text, the library's documented recipe, so that its cached second view keeps its own
dropout states; fed one column, as lwap's loss takes it, the positive would be the anchor below the last
layer. Not a feature of lwap: the script swaps the loss of the trainer `lwap.train.run` builds.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: the repository root on sys.path, as `python -m` would
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from torch import Tensor, nn


class TwoColumns(nn.Module):
    """Hands a one-column (unsupervised) batch to `loss` as two columns: two feature dicts, made before
    the loss sees them, so each keeps its own states (sentence-transformers' unsupervised SimCSE input)."""

    def __init__(self, loss: nn.Module) -> None:
        super().__init__()
        self.model = loss.model
        self.loss = loss

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor) -> Tensor:
        features = list(sentence_features)
        if len(features) == 1:
            features = [features[0], dict(features[0])]
        return self.loss(features, labels)

    def get_config_dict(self) -> dict[str, Any]:
        return {"loss": "AdaptiveLayerLoss", **self.loss.get_config_dict()}


def anchored(build: Any) -> Any:
    """`build_trainer` whose trainer trains with AdaptiveLayerLoss around the SimCSE loss it built."""
    from sentence_transformers.sentence_transformer.losses import AdaptiveLayerLoss

    from lwap.errors import ConfigError
    from lwap.train.cached_loss import CachedSimCSELoss

    def build_trainer(config: Any, out: Any, **kwargs: Any) -> Any:
        built = build(config, out, **kwargs)
        if isinstance(built.loss, CachedSimCSELoss) or type(built.loss).__name__ != "SimCSELoss":
            raise ConfigError(
                "the AdaptiveLayerLoss anchor takes plain SimCSE: no mini_batch_size, depths or dims"
            )
        loss = TwoColumns(AdaptiveLayerLoss(built.model, built.loss))
        built.trainer.loss = loss
        built.loss = loss
        return built

    return build_trainer


def main(argv: list[str] | None = None) -> int:
    import lwap.train.run as run
    from lwap.cli import main as lwap_main

    run.build_trainer = anchored(run.build_trainer)
    return lwap_main(["train", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
