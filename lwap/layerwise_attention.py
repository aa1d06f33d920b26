"""Layer-wise attention pooling (LWAP): the sentence vector is learned from every layer.

Per sentence, with hidden states h_0 (embedding output) … h_L:
  s_l = [CLS] of layer l, t_l = masked mean of layer l (keys and values);
  Q = RReLU(W_q s) (queries="cls", the paper) | RReLU(W_q t) ("mean") | Z, k learned rows ("latent")
  K = RReLU(W_k t), V = RReLU(W_v t)   (bias-free H×H)
  a_i = softmax_l(Q_i·K_l / scale); o = mean_i Σ_l a_il V_l
  out = Tanh(W_o [s_L ; o] + b)  output="cls_concat" (the paper) | Tanh(W_o o + b)  output="attention"
  start="native": out = native + that, W_o, b = 0 at init (trained encoders)
"native" is the backbone's own sentence vector, computed by the modules before this one (e.g. Pooling(mean)
+ Normalize for all-MiniLM-L6-v2; lwap.native_pooling): the head starts as an exact identity and learns a
correction, instead of replacing a good sentence vector with a random projection.
The latent queries Z (Set Transformer's pooling by attention, NV-Embed's latent array) are used as Q as
they are: a learned vector needs no projection of its own. They start at N(0, 0.02²), the usual start of
learned tokens: scores near 0, so step 0 weighs the layers about uniformly, and the k rows differ (rows
that started equal would get equal gradients and stay one query).
Cost: the [CLS] rows are gathered and each layer's masked mean is one (B,1,T)@(B,T,H) matmul, so no
(B, L+1, T, H) copy of all hidden states is made; stacking them and reducing with an einsum made LWAP's
forward + backward ~3x slower (a stack copy, its cast to bf16, and a full-size gradient in backward).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor, nn

from .lwap_choices import LWAP_OUTPUTS, LWAP_QUERIES, LWAP_STARTS, SCORE_SCALES  # relative: see lwap.portable
from .module_io import SafetensorsModule

LATENT_INIT_STD = 0.02


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
        queries: "cls" (each layer's [CLS], the paper), "mean" (each layer's masked mean) or "latent".
        latent_queries: k, the number of learned queries (queries="latent" only).
        output_from: "cls_concat" (W_o reads the last [CLS] and the attention, the paper) or "attention".
    Configs saved before the last three existed load with their defaults: the paper's head.
    """

    config_keys = [
        "hidden_size",
        "num_hidden_states",
        "layers",
        "score_scale",
        "start",
        "queries",
        "latent_queries",
        "output_from",
    ]

    def __init__(
        self,
        hidden_size: int,
        num_hidden_states: int,
        layers: list[int] | None = None,
        score_scale: str = "num_layers",
        start: str = "random",
        queries: str = "cls",
        latent_queries: int = 4,
        output_from: str = "cls_concat",
    ) -> None:
        super().__init__()
        for name, value, allowed in (
            ("score_scale", score_scale, SCORE_SCALES),
            ("start", start, LWAP_STARTS),
            ("queries", queries, LWAP_QUERIES),
            ("output_from", output_from, LWAP_OUTPUTS),
        ):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
        if int(latent_queries) < 1:
            raise ValueError(f"latent_queries must be at least 1, got {latent_queries!r}")
        if layers is not None:
            layers = [int(i) for i in layers]
            bad = [i for i in layers if not 0 <= i < num_hidden_states]
            if not layers or bad:
                raise ValueError(
                    f"layers must be non-empty indices in 0..{num_hidden_states - 1}, got {layers}"
                )
        self.hidden_size, self.num_hidden_states = hidden_size, num_hidden_states
        self.layers, self.score_scale, self.start = layers, score_scale, start
        self.queries, self.latent_queries, self.output_from = queries, int(latent_queries), output_from
        if queries == "latent":  # Z, used as Q directly (module docstring)
            self.latent = nn.Parameter(torch.randn(self.latent_queries, hidden_size) * LATENT_INIT_STD)
        else:
            self.query = nn.Linear(hidden_size, hidden_size, bias=False)
        self.key = nn.Linear(hidden_size, hidden_size, bias=False)
        self.value = nn.Linear(hidden_size, hidden_size, bias=False)
        self.activation = nn.RReLU()  # random slopes in training, their mean in eval (as the paper)
        width = 2 * hidden_size if output_from == "cls_concat" else hidden_size
        self.output = nn.Linear(width, hidden_size)
        if start == "native":  # the correction starts at exactly zero: step 0 embeds as the backbone
            nn.init.zeros_(self.output.weight)
            nn.init.zeros_(self.output.bias)
        self.last_attention: Tensor | None = None  # (batch, query, key layer) of the last forward

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
        dtype = self.key.weight.dtype  # a backbone cast on its own returns another dtype
        target = torch.cat([mean_weights @ h for h in chosen], dim=1).to(dtype)  # masked means: (B, N, H)
        if self.queries == "latent":
            q = self.latent.to(dtype).expand(target.shape[0], -1, -1)  # (B, k, H)
        else:  # RReLU draws its slopes for Q, K, V in this order (the RNG stream of the paper's head)
            cls = self.queries == "cls"
            source = torch.stack([h[:, 0] for h in chosen], dim=1).to(dtype) if cls else target
            q = self.activation(self.query(source))  # from each layer's [CLS] or mean: (B, N, H)
        k = self.activation(self.key(target))
        v = self.activation(self.value(target))
        scale = len(chosen) if self.score_scale == "num_layers" else math.sqrt(self.hidden_size)
        attention = torch.softmax(q @ k.transpose(1, 2) / scale, dim=-1)  # (B, queries, N), rows sum to 1
        pooled = (attention @ v).mean(dim=1)  # average over the queries: (B, H)
        if self.output_from == "cls_concat":
            pooled = torch.cat([all_layers[-1][:, 0].to(dtype), pooled], dim=-1)  # [s_L ; o]
        head = torch.tanh(self.output(pooled))
        if self.start == "native":
            if "sentence_embedding" not in features:
                raise KeyError("start='native' needs the backbone's own pooling modules before LWAP")
            head = features["sentence_embedding"] + head
        features["sentence_embedding"] = head
        self.last_attention = attention.detach()
        return features

    def get_embedding_dimension(self) -> int:
        return self.hidden_size
