"""Old home of LayerMean and TrainingOnlyMLP, kept so that saved models naming `lwap.poolers.*` load."""

from lwap.layer_mean import LayerMean
from lwap.training_only_mlp import TrainingOnlyMLP

__all__ = ["LayerMean", "TrainingOnlyMLP"]
