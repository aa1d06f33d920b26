"""The end of a pretrain_mlm.py run: the encoder as a plain transformers folder with its SOURCE.md."""

from __future__ import annotations

import argparse
import json
import math
import shlex
import shutil
from pathlib import Path

import torch
from transformers import AutoModel

from benchmarks.backbone.mlm_checkpoints import read_state, write_curve
from benchmarks.backbone.mlm_model import ARCH_NAMES, MLM_CLASSES, SparseMLM, mlm_config
from lwap.checks import files


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

Made by `benchmarks/backbone/pretrain_mlm.py` (the reasons for each choice: its docstring,
docs/PRETRAIN.md) with `{shlex.join(["python", "benchmarks/backbone/pretrain_mlm.py", *options])}`
(rerun after a stop and it resumes; it exports at the last step).

- Model: {ARCH_NAMES[a.arch]}, {c.num_hidden_layers} layers, H={c.hidden_size}, {c.num_attention_heads} \
heads, feed-forward {c.intermediate_size}, {params:.1f} M parameters, position table \
{c.max_position_embeddings}; {start_text(a)}, bert-base-uncased WordPiece vocabulary (from \
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


def start_text(a: argparse.Namespace) -> str:
    """Where the weights started, for SOURCE.md."""
    if not a.init_from:
        return "random initialisation"
    return f"the encoder of `{a.init_from}` (MLM continued from it; the MLM head's transform started fresh)"
