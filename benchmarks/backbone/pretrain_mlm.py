"""Pretrain a small BERT from scratch with masked-language modelling only, and ship it as a backbone.

Why: the LWAP paper's regime is a backbone whose last layer was trained only for token prediction; none
installs here, so this makes one: transformers' `BertForMaskedLM` (random weights from a `BertConfig`), MLM
collator and `Trainer`, all-MiniLM-L6-v2's bert-base-uncased WordPiece vocabulary; MLM only (like RoBERTa).

Data: the mirror's Wikipedia sentences minus every sentence of the evaluation sets (STS12-16, STS-B, SICK,
SciFact corpus and queries; matched with case, punctuation and whitespace folded, so tokenized copies
match); the first `--held-out` of the rest are held out. Sentences are packed into rows of `--seq-len`
tokens, `[CLS] s1 [SEP] s2 ...` (256: every position the grid's evaluation reads gets trained). The loss is
taken only at the masked positions (`SparseMLM`): the same loss, without the 30522-way output layer at
the other 85% of positions, which costs more than a small encoder.

Size and budget (4 layers, H=256, 64 rows x 256 tokens a step): docs/PRETRAIN.md, with the commands.
Runs are resumable: a checkpoint is written every `--save-minutes`, on SIGTERM/Ctrl-C and when
`--max-minutes` (one slice) is up; rerunning the same command resumes from the newest complete one. At
the last step (or `--export`) the encoder goes to benchmarks/backbones/NAME, with a generated SOURCE.md.

This file is the command line and the run; beside it, one concern each: mlm_data.py (the sentences, rows
and masking), mlm_model.py (the encoder and its sparse MLM loss), mlm_checkpoints.py (slices, snapshots,
resuming), mlm_export.py (the exported folder and its SOURCE.md).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a file: the repository root on sys.path, as `python -m` would
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch
from transformers import TrainingArguments

from benchmarks import REPO
from benchmarks.backbone.mlm_checkpoints import (
    ReWarmedTrainer,
    Slice,
    finished_checkpoints,
    machine,
    read_state,
    resume_from_snapshot,
)
from benchmarks.backbone.mlm_data import collator, load_tokenizer, prepared_data, unigram_loss
from benchmarks.backbone.mlm_export import export
from benchmarks.backbone.mlm_model import ARCHS, MLM_CLASSES, SIZES, mlm_config, start_from
from lwap.checks import files
from lwap.errors import ConfigError, DataError, LwapError

RECIPE = ("size", "wiki", "sentences", "held_out", "seq_len", "batch", "max_steps", "lr", "warmup", "seed",
          "arch", "dropout", "clip", "max_tokens", "warmup_frac", "eval_seq_len", "rows",
          "group_by_length", "init_from")  # fmt: skip
# recipe options added after runs were started with the first ten: a run.json without them used these
LATER_DEFAULTS = {"arch": "bert", "dropout": 0.1, "clip": 1.0, "max_tokens": None, "warmup_frac": None,
                  "eval_seq_len": None, "rows": "packed", "group_by_length": False,
                  "init_from": None}  # fmt: skip


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--name", required=True, help="runs/pretrain/NAME, benchmarks/backbones/NAME")
    p.add_argument("--size", choices=SIZES, default="4l256", help="layers l hidden (FFN 4 x H)")
    p.add_argument("--wiki", type=Path, help="sentence file (default: the mirror's wiki_sentences_1m.txt.gz)")
    p.add_argument("--sentences", type=int, help="use only the first N lines of --wiki")
    p.add_argument("--held-out", type=int, default=4000, help="sentences held out for the MLM loss")
    p.add_argument("--seq-len", type=int, default=256)
    p.add_argument("--batch", type=int, default=64, help="rows per step")
    p.add_argument("--max-steps", type=int, default=800, help="steps of the whole run (sets the schedule)")
    p.add_argument("--max-tokens", type=int, help="instead of --max-steps: steps for this many tokens")
    for flag, default in (("--lr", 5e-4), ("--warmup", 80), ("--eval-steps", 200), ("--seed", 0)):
        p.add_argument(flag, type=type(default), default=default)
    p.add_argument("--warmup-frac", type=float, help="instead of --warmup: this fraction of the steps")
    p.add_argument("--evals", type=int, help="instead of --eval-steps: this many held-out evaluations")
    p.add_argument("--arch", choices=ARCHS, default="bert", help="post-LayerNorm BERT or a pre-LayerNorm "
                   "encoder (transformers' RobertaPreLayerNorm, loaded as a plain model)")  # fmt: skip
    p.add_argument("--dropout", type=float, default=0.1, help="in pretraining (exported as 0.1 for SimCSE)")
    p.add_argument("--clip", type=float, default=1.0, help="gradient-norm clipping (0: none)")
    p.add_argument("--eval-seq-len", type=int, help="held-out rows of this length (default --seq-len)")
    p.add_argument("--group-by-length", action="store_true", help="batches of sentences of like length "
                   "(transformers' LengthGroupedSampler): less padding with --rows sentence")  # fmt: skip
    p.add_argument("--rows", choices=("packed", "sentence"), default="packed", help="sentences packed into "
                   "rows of --seq-len, or one sentence a row (training and held-out rows alike)")  # fmt: skip
    p.add_argument("--no-export", action="store_true", help="an ablation: keep the run, export nothing")
    p.add_argument("--init-from", type=Path, help="continue MLM from a folder this script exported (its "
                   "encoder; the MLM head's transform, not exported, starts fresh)")  # fmt: skip
    p.add_argument(
        "--snapshot-dir",
        type=Path,
        help="at each save, the weights (bf16) and the run's state in "
        "this folder: commit it, and a fresh machine resumes from it (optimizer re-warmed)",
    )
    p.add_argument("--rewarm", type=int, default=100, help="steps of re-warm-up after resuming a snapshot")
    p.add_argument("--max-minutes", type=float, help="stop (with a checkpoint) after this slice")
    p.add_argument("--save-minutes", type=float, default=10.0)
    p.add_argument("--no-bf16", action="store_true", help="fp32 instead of bf16 autocast")
    p.add_argument("--run-dir", type=Path, help="checkpoints and logs (default runs/pretrain/NAME)")
    p.add_argument("--cache-dir", type=Path, help="the packed data (default --run-dir; runs can share one)")
    p.add_argument("--out", type=Path, help="export folder (default benchmarks/backbones/NAME)")
    p.add_argument("--export", action="store_true", help="export the newest checkpoint now, then exit")
    p.add_argument("--shard-mb", type=int, help="split the exported weights into files of this size")
    p.add_argument("--measure", action="store_true", help="time steps only: no checkpoints, no export")
    a = p.parse_args(argv)
    a.run_dir = a.run_dir or REPO / "runs" / "pretrain" / a.name
    a.out = a.out or REPO / "benchmarks" / "backbones" / a.name
    a.eval_seq_len = a.eval_seq_len or a.seq_len
    a.cache_dir = a.cache_dir or a.run_dir
    if a.eval_seq_len > a.seq_len:
        raise ConfigError(f"--eval-seq-len {a.eval_seq_len} > --seq-len {a.seq_len}: positions never trained")
    return a


def schedule(a: argparse.Namespace, data: dict) -> None:
    """--max-tokens and --warmup-frac into steps: runs with other row lengths or batch sizes then see the same
    number of tokens (an ablation's budget) with their warm-up the same share of the run."""
    if a.max_tokens:
        a.max_steps = math.ceil(a.max_tokens / (a.batch * data["train_tokens"] / data["train_rows"]))
    if a.warmup_frac is not None:
        a.warmup = round(a.warmup_frac * a.max_steps)
    if a.evals:
        a.eval_steps = math.ceil(a.max_steps / a.evals)


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    a.argv = sys.argv[1:] if argv is None else argv
    torch.manual_seed(a.seed)
    tokenizer = load_tokenizer(a.seq_len)
    a.run_dir.mkdir(parents=True, exist_ok=True)
    for unfinished in set(a.run_dir.glob("checkpoint-*")) - set(finished_checkpoints(a.run_dir)):
        shutil.rmtree(unfinished)  # a save cut short by a kill: resume from the one before
    resume_from_snapshot(a)
    checkpoint = None if a.measure else (finished_checkpoints(a.run_dir) or [None])[-1]
    recipe = {k: str(v) if isinstance(v, Path) else v for k, v in vars(a).items() if k in RECIPE}
    log = a.run_dir / "run.json"
    run = json.loads(log.read_text()) if log.is_file() and checkpoint else {"recipe": recipe, "slices": []}
    changed = [
        f"--{k.replace('_', '-')} {v} (was {run['recipe'][k]})"
        for k, v in recipe.items()
        if run["recipe"].get(k, LATER_DEFAULTS.get(k)) != v
    ]
    if changed:
        raise ConfigError(
            f"{a.run_dir} was started with another recipe: {', '.join(changed)}; "
            "use the original options, or another --name to start over"
        )
    train, held_out, run["data"] = prepared_data(a, tokenizer)
    schedule(a, run["data"])
    if a.export or (checkpoint and read_state(checkpoint)["global_step"] >= a.max_steps):
        if checkpoint is None:
            raise DataError(f"{a.run_dir}: no finished checkpoint to export")
        if a.no_export:
            return 0
        run["unigram_loss"] = unigram_loss(train, held_out, tokenizer)
        export(a, tokenizer, checkpoint, run)
        return 0
    args = TrainingArguments(
        output_dir=str(a.run_dir),
        max_steps=a.max_steps,
        per_device_train_batch_size=a.batch,
        per_device_eval_batch_size=64,
        learning_rate=a.lr,
        weight_decay=0.01,
        adam_beta2=0.98,
        warmup_steps=a.warmup,
        lr_scheduler_type="linear",
        bf16=not a.no_bf16,
        seed=a.seed,
        logging_steps=10 if a.measure else 25,
        eval_strategy="no" if a.measure else "steps",
        eval_steps=a.eval_steps,
        save_strategy="no",
        save_total_limit=2,
        report_to="none",
        include_num_input_tokens_seen="non_padding",
        disable_tqdm=True,
        dataloader_num_workers=0,
        use_cpu=not torch.cuda.is_available(),
        prediction_loss_only=True,
        max_grad_norm=a.clip,
        train_sampling_strategy="group_by_length" if a.group_by_length else "random",
    )
    model = MLM_CLASSES[a.arch](mlm_config(a, tokenizer, a.dropout))  # random weights; the Trainer loads a
    # checkpoint's into it when resuming
    if a.init_from and checkpoint is None:
        start_from(model, a.init_from)
    trainer = ReWarmedTrainer(
        rewarmed_at=run.get("rewarmed_at", 0),
        rewarm=a.rewarm,
        model=model,
        args=args,
        train_dataset=train,
        eval_dataset=held_out,
        data_collator=collator(tokenizer),
        callbacks=[Slice(a, run)],
    )
    data, where = run["data"], f"resuming from {checkpoint.name}" if checkpoint else "starting fresh"
    print(
        f"{a.name}: {sum(p.numel() for p in model.base_model.parameters()) / 1e6:.1f} M encoder parameters; "
        f"{data['train']:,} training sentences in {data['train_rows']:,} rows; {where}",
        flush=True,
    )
    before = read_state(checkpoint)["num_input_tokens_seen"] if checkpoint else 0
    started, cpu = time.monotonic(), time.process_time()  # CPU time too: the machine may be shared
    trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    seconds, cpu = time.monotonic() - started, time.process_time() - cpu
    tokens = trainer.state.num_input_tokens_seen - before
    print(
        f"slice: {seconds:.0f} s ({cpu:.0f} CPU-s) to step {trainer.state.global_step}, {tokens:,} tokens: "
        f"{tokens / seconds:,.0f} tokens/s, {tokens / cpu:,.0f} per CPU-s ({machine()})",
        flush=True,
    )
    if not a.measure and trainer.state.global_step >= a.max_steps:  # its last step was evaluated and saved
        run["unigram_loss"] = unigram_loss(train, held_out, tokenizer)
        files.write_json_atomically(run, a.run_dir / "run.json")
        if not a.no_export:
            export(a, tokenizer, finished_checkpoints(a.run_dir)[-1], run)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except LwapError as error:
        print(f"pretrain_mlm: {error}", file=sys.stderr)
        sys.exit(2)
