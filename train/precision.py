"""Numerics that belong to training only: TF32 while the trainer runs, and no training autocast outside it.

- `Tf32ForTraining`: `training.tf32` on CUDA lets fp32 matmuls (fp32 runs, and what bf16 autocast leaves
  in fp32) use TF32 tensor cores. Those are process-wide torch settings; they are set when training
  begins and put back as they were when it ends (or fails: `lwap.train.run` calls `restore`), so
  encoding or evaluation later in the same process runs as it would have without training.
- `OutsideTrainingAutocastEvaluation` and `remove_training_autocast`: with bf16 or fp16, accelerate
  (which transformers relies on for autocast) replaces the model's `forward` by one that autocasts, and
  keeps it after training. STS-B dev selection during training and any encoding after
  `trainer.train()` would then run in fp16/bf16; SimCSE selects its checkpoints in full precision.
  Evaluation runs on the model's own `forward` (the model's dtype: fp32), and the wrapper is removed
  once training is over (accelerate's own `extract_model_from_parallel(keep_fp32_wrapper=False)`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from accelerate.utils import extract_model_from_parallel
from sentence_transformers.sentence_transformer.trainer import SentenceTransformerTrainer
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments


class Tf32ForTraining(TrainerCallback):
    """TF32 as `tf32` says (True/False) from `on_train_begin` until `restore`; None: left alone (CPU)."""

    def __init__(self, tf32: bool | None) -> None:
        self.tf32 = tf32
        self._saved: tuple[str, bool] | None = None

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
    ):
        if self.tf32 is None or self._saved is not None:
            return
        self._saved = (torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32)
        torch.set_float32_matmul_precision("high" if self.tf32 else "highest")
        torch.backends.cudnn.allow_tf32 = self.tf32

    def on_train_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any):
        self.restore()

    def restore(self) -> None:
        """Put the settings back as they were before training (idempotent)."""
        if self._saved is None:
            return
        precision, cudnn = self._saved
        torch.set_float32_matmul_precision(precision)
        torch.backends.cudnn.allow_tf32 = cudnn
        self._saved = None


@contextlib.contextmanager
def training_autocast_suspended(model: torch.nn.Module) -> Iterator[None]:
    """The model's own `forward` inside the block, accelerate's autocasting one (if any) after it."""
    patched = model.__dict__.get("forward")
    original = model.__dict__.get("_original_forward")
    if patched is None or original is None:
        yield
        return
    model.forward = original
    try:
        yield
    finally:
        model.forward = patched


def remove_training_autocast(model: torch.nn.Module) -> None:
    """Drop accelerate's autocasting `forward` for good (after training)."""
    extract_model_from_parallel(model, keep_fp32_wrapper=False)


class OutsideTrainingAutocastEvaluation(SentenceTransformerTrainer):
    """sentence-transformers' trainer whose evaluations (STS-B dev selection) run in the model's dtype."""

    def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        with training_autocast_suspended(self.model):
            return super().evaluate(*args, **kwargs)
