"""The encoder pretrain_mlm.py trains: BERT or a pre-LayerNorm encoder of a named size, with the MLM loss
taken only at the masked positions."""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from transformers import (
    BertConfig,
    BertForMaskedLM,
    RobertaPreLayerNormConfig,
    RobertaPreLayerNormForMaskedLM,
)
from transformers.modeling_outputs import MaskedLMOutput

from lwap.errors import DataError

SIZES = {"4l256": (4, 256, 4), "6l384": (6, 384, 12), "4l512": (4, 512, 8), "tiny": (2, 32, 2)}
ARCHS = ("bert", "prenorm")
ARCH_NAMES = {"bert": "BERT (post-LayerNorm)", "prenorm": "pre-LayerNorm encoder (RobertaPreLayerNorm)"}


class SparseLoss:
    """The MLM loss computed only at the masked positions (same loss, same weights as the library class)."""

    def forward(self, input_ids, attention_mask=None, labels=None, token_type_ids=None) -> MaskedLMOutput:
        # (no **kwargs: the Trainer would then pass num_items_in_batch and expect a summed loss)
        hidden = self.base_model(input_ids, attention_mask, token_type_ids).last_hidden_state
        logits = self.get_output_embeddings_head()(hidden[labels != -100])
        return MaskedLMOutput(loss=torch.nn.functional.cross_entropy(logits.float(), labels[labels != -100]))


class SparseMLM(SparseLoss, BertForMaskedLM):
    """Post-LayerNorm BERT (bert-base's layout)."""

    def get_output_embeddings_head(self) -> torch.nn.Module:
        return self.cls


class SparsePreNormMLM(SparseLoss, RobertaPreLayerNormForMaskedLM):
    """Pre-LayerNorm encoder (LayerNorm before attention and feed-forward, one after the last layer; as in
    Cramming and most LMs since GPT-2): gradients reach the lower layers unscaled from the first step."""

    def get_output_embeddings_head(self) -> torch.nn.Module:
        return self.lm_head


MLM_CLASSES = {"bert": SparseMLM, "prenorm": SparsePreNormMLM}


def mlm_config(a: argparse.Namespace, tokenizer, dropout: float):
    """The encoder's config: BERT's, or RobertaPreLayerNorm's laid out like it (BERT's WordPiece, two token
    types; RoBERTa numbers positions from pad id + 1, so its table is two longer for the same rows)."""
    layers, hidden, heads = SIZES[a.size]
    shape = dict(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=4 * hidden,
        pad_token_id=tokenizer.pad_token_id,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
        type_vocab_size=2,
    )
    if a.arch == "bert":
        return BertConfig(max_position_embeddings=a.seq_len, **shape)
    return RobertaPreLayerNormConfig(
        max_position_embeddings=a.seq_len + 2,
        bos_token_id=tokenizer.cls_token_id,
        eos_token_id=tokenizer.sep_token_id,
        **shape,
    )


def start_from(model: torch.nn.Module, folder: Path) -> None:
    """Copy the encoder of a folder this script exported into `model`'s encoder (issue 50: more MLM from a
    shipped backbone). The exported folder holds the encoder only; the MLM head's transform and output bias
    keep their fresh initialisation, and its decoder is tied to the copied word embeddings. DataError when
    the shapes or names do not match the run's architecture and size."""
    from transformers import AutoModel

    encoder = AutoModel.from_pretrained(folder, dtype=torch.float32, trust_remote_code=False)
    try:
        result = model.base_model.load_state_dict(encoder.state_dict(), strict=False)
    except RuntimeError as error:  # a size mismatch
        raise DataError(f"--init-from {folder}: does not fit this run's --arch/--size ({error})") from None
    unexpected = [key for key in result.unexpected_keys if not key.startswith("pooler.")]  # never trained
    if result.missing_keys or unexpected:
        raise DataError(f"--init-from {folder}: missing {result.missing_keys}, unexpected {unexpected}")
