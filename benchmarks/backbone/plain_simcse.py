"""Unsupervised SimCSE in plain PyTorch, written without lwap's trainer: the control of issue 36's gate.

When `python benchmarks/backbone/budget_probe.py --backbone B --rule gate` fails (trained `cls` and `mean`
do not clear the untouched rows), is the backbone unable to learn SimCSE, or is lwap's trainer at fault? This
script trains the same recipe (in-batch InfoNCE over two dropout views, AdamW, linear decay, STS-B dev
selection of the best trained step) with nothing from lwap, and saves a sentence-transformers folder that
`lwap eval` scores like any other model. Run it beside the gate at the gate's `long` budget:

    python benchmarks/backbone/budget_probe.py --backbone B --rule gate
    python benchmarks/backbone/plain_simcse.py --backbone B --pooling cls --out runs/plain-simcse/cls
    python -m lwap eval runs/plain-simcse/cls --tasks sts

The STS-B dev split is the one lwap's trainer selects on, SentEval's tokenized copy
`$LWAP_DATA_DIR/stsb/senteval-tokenized/sts-dev.csv` (tab-separated, no header: genre, file, year, id,
score, sentence1, sentence2[, license fields]); `--stsb-dev` reads another file of that layout (e.g.
`stsb/stsbenchmark-original/sts-dev.csv`).

`--clip NORM` clips the gradients' total norm as Hugging Face's trainer (and so lwap's) does by default
(issue 66's control, docs/COMPARE.md: P+clip); without it nothing is clipped, the loop as first committed.
Either way plain_simcse.json records each step's norm before clipping.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: the repository root on sys.path, as `python -m` would
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch
import torch.nn.functional as F
import transformers
from scipy.stats import spearmanr
from torch import nn

from benchmarks.speed.speedbench.machine import machine_info

PROG = "plain_simcse.py"
EVAL_BATCH = 128


class UsageError(Exception):
    """A mistake of the caller (a missing folder or file, impossible numbers): one line, exit 2."""


@dataclass
class DevSet:
    first: list[str]
    second: list[str]
    gold: list[float]


@dataclass
class Encoder:
    model: Any
    tokenizer: Any
    mlp: nn.Module | None  # cls pooling: SimCSE's training-only MLP
    pooling: str
    device: torch.device
    precision: str


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("--backbone", required=True, help="a plain transformers encoder folder")
    p.add_argument(
        "--pooling", choices=["mean", "cls"], required=True, help="cls: SimCSE (MLP in training only)"
    )
    p.add_argument("--train", default=None, help="one sentence a line, gzip or plain "
                   "(default $LWAP_DATA_DIR/wiki/wiki_sentences_1m.txt.gz)")  # fmt: skip
    p.add_argument("--stsb-dev", default=None, help="STS-B dev in the original tab-separated layout "
                   "(default $LWAP_DATA_DIR/stsb/senteval-tokenized/sts-dev.csv)")  # fmt: skip
    p.add_argument("--max-examples", type=int, default=64000, help="the first N non-empty lines")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--max-length", type=int, default=32, help="training truncation (tokens)")
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--temperature", type=float, default=0.05)
    p.add_argument("--dropout", type=float, default=None, help="the backbone's hidden and attention dropout "
                   "in training, SimCSE's noise (default: its config's)")  # fmt: skip
    p.add_argument("--precision", choices=["bf16", "fp32"], default="bf16")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    p.add_argument("--eval-steps", type=int, default=50, help="STS-B dev every N steps; 0: keep the last")
    p.add_argument("--clip", type=float, default=None, metavar="NORM", help="clip the gradient's total norm "
                   "to NORM, as Hugging Face's trainer does (max_grad_norm, 1.0 there); default: no "
                   "clipping, the loop as the gate's control ran")  # fmt: skip
    p.add_argument("--out", required=True, help="the sentence-transformers folder to write")
    p.add_argument("--overwrite", action="store_true", help="write into a non-empty --out")
    return p.parse_args(argv)


def data_path(value: str | None, relative: str, flag: str) -> Path:
    """`value`, or `relative` under $LWAP_DATA_DIR; a missing file is the caller's mistake."""
    if value is None:
        root = os.environ.get("LWAP_DATA_DIR")
        if not root:
            raise UsageError(f"{flag} not given and LWAP_DATA_DIR is not set")
        value = str(Path(root) / relative)
    path = Path(value)
    if not path.is_file():
        raise UsageError(f"{flag}: no such file: {path}")
    return path


def check_args(a: argparse.Namespace) -> None:
    if not (Path(a.backbone) / "config.json").is_file():
        raise UsageError(f"--backbone: not a transformers model folder (no config.json): {a.backbone}")
    for flag, value in [("--batch", a.batch), ("--epochs", a.epochs), ("--max-length", a.max_length)]:
        if value < 1:
            raise UsageError(f"{flag} must be at least 1, not {value}")
    if a.batch < 2:
        raise UsageError("--batch must be at least 2 (in-batch negatives)")
    if a.max_examples < a.batch:
        raise UsageError(f"--max-examples ({a.max_examples}) is smaller than --batch ({a.batch}): no step")
    if a.eval_steps < 0 or a.temperature <= 0 or a.lr <= 0:
        raise UsageError("--eval-steps must be >= 0, --temperature and --lr > 0")
    if a.clip is not None and not a.clip > 0:
        raise UsageError(f"--clip must be > 0, not {a.clip}")
    if a.dropout is not None and not 0 <= a.dropout < 1:
        raise UsageError(f"--dropout must be in [0, 1), not {a.dropout}")
    out = Path(a.out)
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not a.overwrite)):
        raise UsageError(f"--out: {out} exists and is not an empty folder (--overwrite to write into it)")


def text_lines(path: Path) -> Iterator[str]:
    """Lines of a gzip or plain UTF-8 file, endings and a leading byte-order mark dropped."""
    with path.open("rb") as raw:
        gzipped = raw.read(2) == b"\x1f\x8b"
    opener = gzip.open if gzipped else open
    with opener(path, "rt", encoding="utf-8", newline="") as handle:
        for number, line in enumerate(handle):
            yield line.removeprefix("\ufeff") if number == 0 else line


def read_sentences(path: Path, limit: int) -> list[str]:
    """The first `limit` non-empty lines (as lwap's `data.max_examples` reads a text file)."""
    sentences: list[str] = []
    try:
        for line in text_lines(path):
            text = line.rstrip("\r\n")
            if text.strip():
                sentences.append(text)
                if len(sentences) >= limit:
                    break
    except (OSError, UnicodeDecodeError, EOFError) as error:
        raise UsageError(f"--train: cannot read {path}: {error}") from error
    return sentences


def read_stsb(path: Path) -> DevSet:
    """STS-B in the original layout; the text holds bare quotes, so split on tabs, no CSV quoting."""
    dev = DevSet([], [], [])
    try:
        for number, line in enumerate(text_lines(path), 1):
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) < 7:
                raise UsageError(
                    f"--stsb-dev: {path} line {number}: {len(fields)} tab-separated fields, need 7"
                )
            dev.gold.append(float(fields[4]))
            dev.first.append(fields[5].strip())
            dev.second.append(fields[6].strip())
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise UsageError(f"--stsb-dev: cannot read {path}: {error}") from error
    if len(dev.gold) < 2:
        raise UsageError(f"--stsb-dev: {path} has fewer than 2 pairs")
    return dev


def pick_device(choice: str) -> torch.device:
    if choice == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: no CUDA device is available")
    if choice == "auto":
        choice = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(choice)


def load_backbone(path: str, dropout: float | None = None) -> tuple[Any, Any]:
    """`dropout`: both of the config's dropout rates set to it (BERT's and RoBERTa's names), else kept."""
    rates = (
        {} if dropout is None else {"hidden_dropout_prob": dropout, "attention_probs_dropout_prob": dropout}
    )
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(
            path, local_files_only=True, trust_remote_code=False
        )
        model = transformers.AutoModel.from_pretrained(
            path, local_files_only=True, trust_remote_code=False, **rates
        )
    except (OSError, ValueError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise UsageError(f"--backbone: cannot load {path}: {first}") from error
    return model, tokenizer


def inference_length(model: Any, tokenizer: Any) -> int:
    """What the backbone reads at inference: the tokenizer's limit, capped by the position table (SimCSE
    truncates to 32 tokens in training only)."""
    limit = int(min(getattr(tokenizer, "model_max_length", 512) or 512, 100_000))
    positions = getattr(model.config, "max_position_embeddings", None)
    if positions:
        padding_idx = getattr(getattr(model, "embeddings", None), "padding_idx", None)
        usable = positions - (padding_idx + 1 if isinstance(padding_idx, int) else 0)  # RoBERTa numbering
        limit = min(limit, usable)
    return limit


def autocast(enc: Encoder) -> Any:
    return torch.autocast(enc.device.type, dtype=torch.bfloat16, enabled=enc.precision == "bf16")


def embed(enc: Encoder, sentences: list[str], max_length: int, with_mlp: bool) -> torch.Tensor:
    """Pooled sentence vectors (float32): masked mean of the last layer, or its [CLS] (+ MLP in training)."""
    batch = enc.tokenizer(
        sentences, padding=True, truncation=True, max_length=max_length, return_tensors="pt"
    )
    batch = {k: v.to(enc.device) for k, v in batch.items()}
    with autocast(enc):
        hidden = enc.model(**batch).last_hidden_state
        if enc.pooling == "cls":
            pooled = hidden[:, 0]
            if with_mlp and enc.mlp is not None:
                pooled = enc.mlp(pooled)
        else:
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return pooled.float()


def info_nce(first: torch.Tensor, second: torch.Tensor, temperature: float) -> torch.Tensor:
    """In-batch InfoNCE: row i of `first` should match row i of `second` among all rows of `second`."""
    logits = F.cosine_similarity(first.unsqueeze(1), second.unsqueeze(0), dim=-1) / temperature
    return F.cross_entropy(logits, torch.arange(len(first), device=first.device))


@torch.no_grad()
def dev_spearman(enc: Encoder, dev: DevSet, max_length: int) -> float:
    """STS-B dev: both sides in eval mode (no MLP), cosine, Spearman against the gold scores."""
    was_training = enc.model.training
    enc.model.eval()
    scores = []
    for start in range(0, len(dev.gold), EVAL_BATCH):
        a = embed(enc, dev.first[start : start + EVAL_BATCH], max_length, with_mlp=False)
        b = embed(enc, dev.second[start : start + EVAL_BATCH], max_length, with_mlp=False)
        scores.append(F.cosine_similarity(a, b, dim=-1).cpu())
    enc.model.train(was_training)
    value = spearmanr(torch.cat(scores).numpy(), dev.gold).statistic
    return float(value)


def cpu_state(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


def batches(count: int, batch: int, epochs: int, seed: int) -> Iterator[list[int]]:
    """Shuffled indices, a new order each epoch from one seeded generator; the partial batch dropped."""
    generator = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        order = torch.randperm(count, generator=generator).tolist()
        for start in range(0, count - batch + 1, batch):
            yield order[start : start + batch]


def clip_gradients(params: list[nn.Parameter], clip: float | None) -> float:
    """The gradients' total L2 norm before clipping, recorded every step (what Hugging Face logs as
    grad_norm); with `clip`, gradients over it scaled down to it by `clip_grad_norm_`, as that trainer
    calls it (on every parameter it optimises, the MLP included). Without `clip` nothing changes."""
    if clip is None:
        return float(torch.nn.utils.get_total_norm([p.grad for p in params if p.grad is not None]))
    return float(torch.nn.utils.clip_grad_norm_(params, clip))


def train(a: argparse.Namespace, enc: Encoder, sentences: list[str], dev: DevSet) -> dict[str, Any]:
    steps = a.epochs * (len(sentences) // a.batch)
    params = list(enc.model.parameters()) + (list(enc.mlp.parameters()) if enc.mlp is not None else [])
    optimizer = torch.optim.AdamW(params, lr=a.lr, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: max(0.0, 1 - step / steps))
    length = inference_length(enc.model, enc.tokenizer)
    curve: list[list[float]] = []
    best: dict[str, Any] = {"step": None, "spearman": -math.inf, "state": None}

    def evaluate(step: int) -> None:
        value = dev_spearman(enc, dev, length)
        curve.append([step, None if math.isnan(value) else value])  # strict JSON
        print(f"step {step}: stsb dev spearman {value:.4f}", flush=True)
        if step > 0 and value > best["spearman"]:  # the first strictly better trained step (SimCSE)
            best.update(step=step, spearman=value, state=cpu_state(enc.model))

    evaluate(0)
    enc.model.train()
    losses, norms = [], []
    for step, indices in enumerate(batches(len(sentences), a.batch, a.epochs, a.seed), 1):
        texts = [sentences[i] for i in indices]
        pooled = embed(enc, texts + texts, a.max_length, with_mlp=True)  # two dropout views in one pass
        loss = info_nce(pooled[: len(texts)], pooled[len(texts) :], a.temperature)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        norms.append(clip_gradients(params, a.clip))
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        if step % 10 == 0 or step == steps:
            print(f"step {step}/{steps}: loss {sum(losses[-10:]) / len(losses[-10:]):.4f}", flush=True)
        if a.eval_steps and (step % a.eval_steps == 0 or step == steps):
            evaluate(step)
    if not a.eval_steps:
        evaluate(steps)  # recorded only: with no selection the last step is kept
        best.update(step=steps, spearman=curve[-1][1], state=cpu_state(enc.model))
    elif best["state"] is None:  # every trained step scored NaN: keep the last
        best.update(step=steps, spearman=curve[-1][1], state=cpu_state(enc.model))
    return {"steps": steps, "curve": curve, "best": best, "losses": losses, "length": length, "norms": norms}


def save(a: argparse.Namespace, state: dict[str, torch.Tensor], length: int) -> None:
    """The selected weights as Transformer + Pooling (no MLP), the backbone's tokenizer beside them."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    transformer = Transformer(  # each of its three loads says it: never a folder's code, never a prompt
        a.backbone,
        max_seq_length=length,
        model_kwargs={"trust_remote_code": False},
        processor_kwargs={"trust_remote_code": False},
        config_kwargs={"trust_remote_code": False},
    )
    transformer.model.load_state_dict(state)
    hidden = transformer.model.config.hidden_size
    model = SentenceTransformer(modules=[transformer, Pooling(hidden, pooling_mode=a.pooling)], device="cpu")
    model.save(a.out)


def run(a: argparse.Namespace) -> dict[str, Any]:
    check_args(a)
    train_file = data_path(a.train, "wiki/wiki_sentences_1m.txt.gz", "--train")
    dev_file = data_path(a.stsb_dev, "stsb/senteval-tokenized/sts-dev.csv", "--stsb-dev")
    device = pick_device(a.device)
    sentences = read_sentences(train_file, a.max_examples)
    if len(sentences) < a.batch:
        raise UsageError(
            f"--train: {train_file} has {len(sentences)} sentences, fewer than --batch {a.batch}"
        )
    dev = read_stsb(dev_file)
    torch.manual_seed(a.seed)
    model, tokenizer = load_backbone(a.backbone, a.dropout)
    hidden = model.config.hidden_size
    mlp = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh()) if a.pooling == "cls" else None
    model.to(device)
    if mlp is not None:
        mlp.to(device)
    enc = Encoder(model, tokenizer, mlp, a.pooling, device, a.precision)
    started = time.monotonic()
    result = train(a, enc, sentences, dev)
    wall = time.monotonic() - started
    save(a, result["best"]["state"], result["length"])
    record = {
        "args": vars(a),
        "train_file": str(train_file),
        "stsb_dev_file": str(dev_file),
        "sentences": len(sentences),
        "steps": result["steps"],
        "dev_curve": result["curve"],
        "best_step": result["best"]["step"],
        "best_spearman": result["best"]["spearman"],
        "final_loss": result["losses"][-1],
        "clip": a.clip,
        "grad_norm_by_step": [round(n, 5) if math.isfinite(n) else None for n in result["norms"]],
        "steps_clipped": sum(norm > a.clip for norm in result["norms"]) if a.clip is not None else 0,
        "inference_max_seq_length": result["length"],
        "training_dropout": [model.config.hidden_dropout_prob, model.config.attention_probs_dropout_prob],
        "device": str(device),
        "wall_seconds": round(wall, 2),
        "machine": machine_info(device=str(device)),
    }
    (Path(a.out) / "plain_simcse.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return record


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        record = run(args)
    except UsageError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    score = record["best_spearman"]
    shown = "nan" if score is None else f"{score:.4f}"
    print(f"best step {record['best_step']}: stsb dev spearman {shown}; saved {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
