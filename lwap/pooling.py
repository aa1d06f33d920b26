"""Old home of LayerwiseAttentionPooling, kept so that saved models naming `lwap.pooling.*` load."""

from lwap.layerwise_attention import LayerwiseAttentionPooling

__all__ = ["LayerwiseAttentionPooling"]
