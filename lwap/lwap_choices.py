"""The values LWAP's string settings take, in a module of their own that imports nothing.

Two sides need them: `lwap.layerwise_attention` checks its arguments against them (models are also built
from saved configs, past any config checking), and `lwap.registry` offers them as config choices before
torch is imported. Neither imports the other for them. The file is also copied into model folders beside
layerwise_attention.py, which imports it relatively (lwap.portable).
"""

SCORE_SCALES = ("num_layers", "sqrt_hidden")  # attention scores / number of layers (the paper) or / √H
LWAP_STARTS = ("random", "native")  # the paper's random head, or the backbone's own vector + a correction
NATIVE_POOLINGS = ("auto", "mean", "cls")  # the native start's pooling: the backbone's saved one, or named
LWAP_QUERIES = ("cls", "mean", "latent")  # the queries: each layer's [CLS] (the paper), its mean, or learned
LWAP_OUTPUTS = ("cls_concat", "attention")  # W_o reads [last [CLS] ; attention] (the paper) or attention
