"""The allowed values of LayerwiseAttentionPooling's string settings.

A file of its own that imports nothing: `lwap.registry` checks configs with it before torch loads, and it is
copied into model folders beside layerwise_attention.py, which imports it relatively (lwap.portable).
"""

SCORE_SCALES = ("num_layers", "sqrt_hidden")
LWAP_STARTS = ("random", "native")
