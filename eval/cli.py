"""Evaluate a model: STS12–16, STS-B, SICK-R (cosine Spearman x100) and semantic search (SciFact nDCG@10).

Prints one table row; with --output DIR also writes results.json (every figure and the protocol),
results.md and, for an LWAP model, layer_attention.png (mean attention per layer over STS-B test).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from lwap.cli_options import add_device, add_no_progress, add_trust_remote_code

HELP = "evaluate a model on STS12-16, STS-B, SICK-R and semantic search (SciFact)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "model", help="saved model folder, or a backbone id such as sentence-transformers/all-MiniLM-L6-v2"
    )
    parser.add_argument(
        "--tasks",
        nargs="+",
        default=["all"],
        metavar="TASK",
        help="sts12 sts13 sts14 sts15 sts16 stsb sickr scifact, groups sts / search / all (default), "
        "the path of any BEIR-layout folder (corpus.jsonl[.gz], queries.jsonl, qrels/test.tsv), or of a "
        "scored pairs file (.csv/.tsv[.gz] with a header: two texts and a score a row; cosine Spearman)",
    )
    parser.add_argument(
        "--pairs-columns",
        nargs=3,
        default=["sentence1", "sentence2", "score"],
        metavar=("TEXT1", "TEXT2", "SCORE"),
        help="the columns of a scored pairs file given in --tasks (default: sentence1 sentence2 score)",
    )
    parser.add_argument(
        "--pairs-column-names",
        nargs="+",
        default=None,
        metavar="NAME",
        help="scored pairs files in --tasks without a header row: their columns' names, in order (the first "
        "line is then data); --pairs-columns picks three of them",
    )
    parser.add_argument(
        "--aggregation",
        choices=("all", "wmean"),
        default="all",
        help="STS12-16: 'all' = subsets concatenated, one correlation (SimCSE, default); "
        "'wmean' = per-subset correlations weighted by size (LWAP paper). results.json holds both",
    )
    parser.add_argument(
        "--data",
        dest="variant",
        choices=("senteval", "raw", "hub"),
        default="senteval",
        help="STS text: SentEval-tokenized copies (published protocol, default), the raw release files, "
        "or the mteb/*-sts hub datasets (online only)",
    )
    parser.add_argument(
        "--output", default=None, metavar="DIR", help="write results.json, results.md (and the PNG) here"
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="write into an --output folder lwap did not make (it keeps what the folder holds; else refused)",
    )
    parser.add_argument(
        "--pair-scores",
        action="store_true",
        help="also write pair_scores.npz in --output: each STS test pair's cosine (a bootstrap over pairs)",
    )
    parser.add_argument(
        "--bootstrap",
        type=int,
        default=0,
        metavar="N",
        help="95%% confidence intervals from N resamples of the pairs",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap resampling")
    parser.add_argument("--mteb", action="store_true", help="compute the scores with mteb.evaluate instead")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument(
        "--precision", choices=("fp32", "bf16"), default="fp32", help="bf16 autocast on the CPU"
    )
    parser.add_argument(
        "--max-seq-length", type=int, default=None, help="override the model's truncation (tokens)"
    )
    add_device(parser)
    add_no_progress(parser, hides="progress bars and stage messages")
    add_trust_remote_code(parser)


def run(args: argparse.Namespace) -> int:
    from lwap.eval.report import format_table

    def log(message: str) -> None:
        if not args.no_progress:
            print(f"lwap eval: {message}", file=sys.stderr, flush=True)

    def warn(message: str) -> None:  # not silenced by --no-progress: it is about the scores
        print(f"lwap eval: warning: {message}", file=sys.stderr, flush=True)

    import contextlib
    from pathlib import Path

    from lwap.checks.output_claim import locked_folder
    from lwap.eval.api import check_output_folder

    if args.output is not None:  # before the lock, which creates the folder
        check_output_folder(Path(args.output), overwrite=args.overwrite)
    with contextlib.nullcontext() if args.output is None else locked_folder(Path(args.output), "eval"):
        results = _evaluate(args, log, warn)
    print(format_table(results))
    for path in results.get("files", []):
        print(f"wrote {path}")
    if args.output is None:
        log("pass --output DIR to keep results.json, results.md (and the layer-attention PNG)")
    return 0


def _evaluate(args: argparse.Namespace, log: Callable[[str], None], warn: Callable[[str], None]) -> dict:
    from lwap.eval.api import evaluate_model

    return evaluate_model(
        args.model,
        args.tasks,
        variant=args.variant,
        aggregation=args.aggregation,
        batch_size=args.batch_size,
        precision=args.precision,
        bootstrap=args.bootstrap,
        seed=args.seed,
        use_mteb=args.mteb,
        max_seq_length=args.max_seq_length,
        device=args.device,
        trust_remote_code=args.trust_remote_code,
        pairs_columns=args.pairs_columns,
        pairs_column_names=args.pairs_column_names,
        output_dir=args.output,
        overwrite=args.overwrite,
        pair_scores=args.pair_scores,
        show_progress_bar=not args.no_progress,
        log=log,
        warn=warn,
    )
