"""Layer-wise attention pooling (LWAP): the sentence vector is learned from every layer.

Per sentence, with hidden states h_0 (embedding output) … h_L:
  s_l = [CLS] of layer l (queries), t_l = masked mean of layer l (keys and values);
  Q = RReLU(W_q s), K = RReLU(W_k t), V = RReLU(W_v t)   (bias-free H×H)
  a_i = softmax_l(Q_i·K_l / scale); o = mean_i Σ_l a_il V_l
  out = Tanh(W_o [s_L ; o] + b)                          start="random" (the paper)
  out = native + Tanh(W_o [s_L ; o] + b), W_o, b = 0 at init   start="native" (trained encoders)
"native" is the backbone's own sentence vector, computed by the modules before this one (e.g. Pooling(mean)
+ Normalize for all-MiniLM-L6-v2; lwap.native_pooling): the head starts as an exact identity and learns a
correction, instead of replacing a good sentence vector with a random projection.
Cost: the [CLS] rows are gathered and each layer's masked mean is one (B,1,T)@(B,T,H) matmul, so no
(B, L+1, T, H) copy of all hidden states is made; stacking them and reducing with an einsum made LWAP's
forward + backward ~3x slower (a stack copy, its cast to bf16, and a full-size gradient in backward).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor, nn

from .lwap_choices import LWAP_STARTS, SCORE_SCALES  # relative: this file also runs from model folders
from .module_io import SafetensorsModule


class LayerwiseAttentionPooling(SafetensorsModule):
    """Attention over the [CLS]/mean vectors of all layers; writes `sentence_embedding`.

    Args:
        hidden_size: H of the backbone.
        num_hidden_states: L+1, the number of hidden states the backbone returns (embeddings included).
        layers: indices (into 0..L) of the layers that take part; None = all (the paper).
        score_scale: "num_layers" divides scores by the number of taking-part layers (the paper),
            "sqrt_hidden" by √H (transformer convention).
        start: "random" (the paper's head) or "native" (add a zero-initialised correction to the
            `sentence_embedding` that the modules before this one computed).
    """

    config_keys = ["hidden_size", "num_hidden_states", "layers", "score_scale", "start"]

    def __init__(
        self,
        hidden_size: int,
        num_hidden_states: int,
        layers: list[int] | None = None,
        score_scale: str = "num_layers",
        start: str = "random",
    ) -> None:
        super().__init__()
        if score_scale not in SCORE_SCALES:
            raise ValueError(f"score_scale must be one of {SCORE_SCALES}, got {score_scale!r}")
        if start not in LWAP_STARTS:
            raise ValueError(f"start must be one of {LWAP_STARTS}, got {start!r}")
        if layers is not None:
            layers = [int(i) for i in layers]
            bad = [i for i in layers if not 0 <= i < num_hidden_states]
            if not layers or bad:
                raise ValueError(
                    f"layers must be non-empty indices in 0..{num_hidden_states - 1}, got {layers}"
                )
        self.hidden_size, self.num_hidden_states = hidden_size, num_hidden_states
        self.layers, self.score_scale, self.start = layers, score_scale, start
        self.query = nn.Linear(hidden_size, hidden_size, bias=False)
        self.key = nn.Linear(hidden_size, hidden_size, bias=False)
        self.value = nn.Linear(hidden_size, hidden_size, bias=False)
        self.activation = nn.RReLU()  # random slopes in training, their mean in eval (as the paper)
        self.output = nn.Linear(2 * hidden_size, hidden_size)
        if start == "native":  # the correction starts at exactly zero: step 0 embeds as the backbone
            nn.init.zeros_(self.output.weight)
            nn.init.zeros_(self.output.bias)
        self.last_attention: Tensor | None = None  # (batch, query layer, key layer) of the last forward

    def forward(self, features: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        if "all_layer_embeddings" not in features:
            raise KeyError(
                "LayerwiseAttentionPooling needs 'all_layer_embeddings': load the backbone with "
                "config output_hidden_states=True (lwap.build_model does this)."
            )
        all_layers = features["all_layer_embeddings"]
        chosen = all_layers if self.layers is None else [all_layers[i] for i in self.layers]
        mask = features["attention_mask"].to(chosen[0].dtype)  # (B, T)
        mean_weights = (mask / mask.sum(1, keepdim=True).clamp(min=1)).unsqueeze(1)  # (B, 1, T)
        dtype = self.query.weight.dtype  # a backbone cast on its own returns another dtype
        source = torch.stack([h[:, 0] for h in chosen], dim=1).to(dtype)  # [CLS] of every layer: (B, N, H)
        target = torch.cat([mean_weights @ h for h in chosen], dim=1).to(dtype)  # masked means: (B, N, H)
        q = self.activation(self.query(source))
        k = self.activation(self.key(target))
        v = self.activation(self.value(target))
        scale = len(chosen) if self.score_scale == "num_layers" else math.sqrt(self.hidden_size)
        attention = torch.softmax(q @ k.transpose(1, 2) / scale, dim=-1)  # (B, N, N), rows sum to 1
        pooled = (attention @ v).mean(dim=1)  # average over query layers: (B, H)
        last_cls = all_layers[-1][:, 0].to(dtype)
        head = torch.tanh(self.output(torch.cat([last_cls, pooled], dim=-1)))
        if self.start == "native":
            if "sentence_embedding" not in features:
                raise KeyError("start='native' needs the backbone's own pooling modules before LWAP")
            head = features["sentence_embedding"] + head
        features["sentence_embedding"] = head
        self.last_attention = attention.detach()
        return features

    def get_embedding_dimension(self) -> int:
        return self.hidden_size
