"""Length-grouped batches: fewer padded tokens per step, while batches stay random draws from the corpus.

A random batch of 64 Wikipedia sentences almost always contains one that reaches the maximum length, so
every batch is padded to it (docs/BENCHMARKS.md, "real tokens", has the padded share per step). Sorting
the whole corpus by length would remove that waste but make each batch a run of same-length neighbours
in a fixed order, which SimCSE's in-batch negatives should not see. The compromise (transformers'
`get_length_grouped_indices`, reused here): shuffle, cut into groups of `group_size` batches, sort each group
by token length and split it into batches; then shuffle the order of the batches, so training does not
sweep from long to short inside every group. Within a group the batch composition is by length, not random:
check dev scores when switching this on (docs/BENCHMARKS.md has the comparison).

sentence-transformers' own samplers (`BatchSamplers`) have no length grouping, and transformers'
`group_by_length` is ignored by `SentenceTransformerTrainer`, which builds its own batch sampler; hence this
`DefaultBatchSampler` subclass, passed to it as `batch_sampler`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from sentence_transformers.base.sampler import DefaultBatchSampler
from transformers.trainer_pt_utils import get_length_grouped_indices


def token_lengths(dataset: Any, tokenizer: Any, max_length: int, chunk: int = 20_000) -> np.ndarray:
    """Per example, the longest of its text columns in tokens (truncated at `max_length`), as uint16.

    Characters are not a good enough proxy: one long outlier per batch sets the padding, and sorting by
    characters leaves most of it (docs/BENCHMARKS.md, "What was tried and not kept").
    """
    lengths = np.zeros(len(dataset), dtype=np.uint16)
    texts = [c for c, f in dataset.features.items() if getattr(f, "dtype", "") in ("string", "large_string")]
    for column in texts:  # not a scored pair's score
        for start in range(0, len(dataset), chunk):
            texts = list(dataset[column][start : start + chunk])
            encoded = tokenizer(
                texts,
                truncation=True,
                max_length=max_length,
                return_length=True,
                return_attention_mask=False,
                return_token_type_ids=False,
            )
            got = np.asarray(encoded["length"], dtype=np.uint16)
            np.maximum(lengths[start : start + len(got)], got, out=lengths[start : start + len(got)])
    return lengths


class LengthGroupedBatchSampler(DefaultBatchSampler):
    """Batches of similar token length (see the module docstring); deterministic given the generator."""

    def __init__(
        self,
        dataset: Any,
        batch_size: int,
        drop_last: bool,
        valid_label_columns: list[str] | None = None,
        generator: torch.Generator | None = None,
        seed: int = 0,
        *,
        lengths: np.ndarray,
        group_size: int,
    ) -> None:
        super().__init__(dataset, batch_size, drop_last, valid_label_columns, generator, seed)
        if len(lengths) != len(dataset):
            raise ValueError(f"{len(lengths)} lengths for a dataset of {len(dataset)} examples")
        if group_size < 1:
            raise ValueError(f"group_size must be at least 1, got {group_size}")
        self.lengths = lengths.tolist()
        self.group_size = group_size

    def __iter__(self):
        indices = get_length_grouped_indices(self.lengths, self.batch_size, self.group_size, self.generator)
        batches = [indices[i : i + self.batch_size] for i in range(0, len(indices), self.batch_size)]
        if self.drop_last:
            batches = [b for b in batches if len(b) == self.batch_size]
        for position in torch.randperm(len(batches), generator=self.generator).tolist():
            yield batches[position]

    def __len__(self) -> int:
        # A partial batch can only be the last one of the last group, so the count is the usual one.
        full, rest = divmod(len(self.lengths), self.batch_size)
        return full + (1 if rest and not self.drop_last else 0)


class LengthGroupedBatches:
    """The `batch_sampler` argument for SentenceTransformerTrainingArguments: builds the sampler per epoch.

    Made with the training arguments, before the training data is read (that waits for the process
    group the arguments start), so the token lengths are measured when the trainer asks for the sampler,
    with the model's tokenizer at its training length. Pickled into every checkpoint's training_args.bin
    as a record: without the tokenizer (the model folder has it), and with a short repr for the logs.
    """

    def __init__(self, tokenizer: Any, max_length: int, group_size: int) -> None:
        self.tokenizer, self.max_length, self.group_size = tokenizer, max_length, group_size

    def __call__(self, dataset: Any, **kwargs: Any) -> LengthGroupedBatchSampler:
        lengths = token_lengths(dataset, self.tokenizer, self.max_length)
        return LengthGroupedBatchSampler(dataset, lengths=lengths, group_size=self.group_size, **kwargs)

    def __getstate__(self) -> dict[str, Any]:
        return {"tokenizer": None, "max_length": self.max_length, "group_size": self.group_size}

    def __repr__(self) -> str:
        return f"LengthGroupedBatches(group_size={self.group_size}, max_length={self.max_length})"
