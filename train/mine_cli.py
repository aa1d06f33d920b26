"""Mine hard negatives for a file of (anchor, positive) pairs with a sentence encoder, guarded against false
negatives, and write the CSV `lwap train` reads as it is (sent0, sent1, hard_neg[_1..k]).

PAIRS is any file `lwap train` reads for supervised training (CSV/TSV with a header, ...), its columns named
by --anchor-column/--positive-column. Candidates are the pairs' own positives, or --corpus (a BEIR folder, or
a file of texts). The model is a hub id or folder of a sentence-transformers model (e.g. the backbone) or a
trained lwap model (a run's OUT/model, or OUT itself), loaded as `lwap eval` loads models. Mining is
sentence-transformers' `mine_hard_negatives`: each anchor's positives are never its negatives, and the guards
skip the top --range-min candidates and any candidate within a margin of the positive's score.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from lwap.cli_options import add_device, add_trust_remote_code

HELP = "mine hard negatives for (anchor, positive) pairs; writes a file lwap train reads"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "pairs", help="the pairs: a file lwap train reads for sup_simcse (CSV/TSV with a header)"
    )
    parser.add_argument(
        "--model",
        required=True,
        help="the encoder that ranks candidates: a sentence-transformers hub id or folder (e.g. "
        "sentence-transformers/all-MiniLM-L6-v2), or a trained lwap model (OUT/model, or the run folder OUT)",
    )
    parser.add_argument("--output", required=True, help="the CSV to write (.csv or .csv.gz)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --output")
    parser.add_argument("--anchor-column", default="sent0", help="the anchor (query) column of PAIRS")
    parser.add_argument("--positive-column", default="sent1", help="the positive column of PAIRS")
    parser.add_argument(
        "--corpus",
        default=None,
        help="candidate negatives: a BEIR folder (its documents, title + text) or a file of texts (.txt: one "
        "a line; .csv/.tsv: --corpus-column); default: the positives of PAIRS",
    )
    parser.add_argument("--corpus-column", default="text", help="the text column of a CSV/TSV --corpus")
    parser.add_argument("--num-negatives", type=int, default=1, help="hard negatives per pair (default 1)")
    parser.add_argument(
        "--range-min",
        type=int,
        default=0,
        help="skip the N most similar candidates (likely unlabelled positives)",
    )
    parser.add_argument(
        "--range-max",
        type=int,
        default=None,
        help="consider only the N most similar candidates (default: every candidate: the 100 most similar "
        "past --range-min, then all for a pair that found no negative there)",
    )
    parser.add_argument(
        "--relative-margin",
        type=float,
        default=0.05,
        help="no negative scores above positive - |positive| x this (default 0.05, NV-Retriever's "
        "TopK-PercPos); a negative value turns it off",
    )
    parser.add_argument(
        "--absolute-margin", type=float, default=None, help="no negative scores above positive - this"
    )
    parser.add_argument("--max-score", type=float, default=None, help="no negative scores above this cosine")
    parser.add_argument(
        "--sampling",
        choices=("top", "random"),
        default="top",
        help="the top candidates that pass the guards (default), or a random draw among them",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of --sampling random")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32", help="encoding precision")
    parser.add_argument(
        "--max-seq-length",
        type=int,
        default=None,
        help="tokens each text is encoded at (default: the model's)",
    )
    add_device(parser)
    add_trust_remote_code(parser)


def _looks_local(value: str) -> bool:
    """A path the user gave (checked here, naming its option), not a hub id or a `$LWAP_DATA_DIR` path
    (which lwap train's readers resolve through the mirror, the packaged sample and the hub)."""
    from lwap.train.data import _is_local

    return "$" not in value and _is_local(value)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from lwap.checks.files import check_file
    from lwap.checks.output_claim import check_file as check_output_file
    from lwap.checks.output_claim import claim_file
    from lwap.errors import ConfigError
    from lwap.paths import expand_path
    from lwap.train.mining import MiningOptions, check_output_name

    options = MiningOptions(
        num_negatives=args.num_negatives,
        range_min=args.range_min,
        range_max=args.range_max,
        absolute_margin=args.absolute_margin,
        relative_margin=args.relative_margin if args.relative_margin >= 0 else None,
        max_score=args.max_score,
        sampling=args.sampling,
        seed=args.seed,
        batch_size=args.batch_size,
        precision=args.precision,
    )
    options.check()
    if args.max_seq_length is not None and args.max_seq_length < 2:
        raise ConfigError(f"--max-seq-length must be at least 2, got {args.max_seq_length}")
    # paths first: a bad one should not wait for the model to load
    if _looks_local(args.pairs) and not expand_path(args.pairs).is_dir():  # a folder: the readers judge it
        check_file(expand_path(args.pairs), args.pairs, key="PAIRS")
    if args.corpus is not None and _looks_local(args.corpus) and not expand_path(args.corpus).is_dir():
        check_file(expand_path(args.corpus), args.corpus, key="--corpus")
    output = Path(args.output)
    check_output_name(output)
    check_output_file(output, overwrite=args.overwrite, label=f"--output {args.output}")
    with claim_file(output, overwrite=args.overwrite, label=f"--output {args.output}"):  # one writer at once
        return _mine(args, options, output)


def _mine(args: argparse.Namespace, options: Any, output: Any) -> int:
    """Read the pairs, load the model, mine, write the CSV and say how to train on it."""
    from lwap.library_output import library_warnings_held
    from lwap.train.mining import mine_file, read_inputs, training_keys

    with library_warnings_held():  # what the libraries warn while the inputs are read: said once all are good
        inputs = read_inputs(
            args.pairs,
            anchor_column=args.anchor_column,
            positive_column=args.positive_column,
            corpus_path=args.corpus,
            corpus_column=args.corpus_column,
        )
        model = _load(args)
    result = mine_file(args.pairs, inputs, model, output, options)
    dropped = result.pairs - result.rows
    print(
        f"lwap mine: {result.pairs:,} pairs, {result.candidates:,} candidate texts; wrote {result.rows:,} "
        f"rows with {options.num_negatives} hard negative(s) each to {args.output} in {result.seconds:.0f} s"
        + (
            f" ({dropped:,} fewer rows than pairs: repeated pairs are merged, and a pair with fewer than "
            f"{options.num_negatives} negative(s) past the guards is left out)"
            if dropped > 0
            else ""
        ),
        flush=True,
    )
    keys = " ".join(f"--set '{key}'" for key in training_keys(args.output, options.num_negatives))
    print(
        f"lwap mine: columns {', '.join(result.columns)}; train on it with a sup_simcse config: "
        f"lwap train CONFIG {keys}",
        flush=True,
    )
    return 0


def _load(args: argparse.Namespace) -> Any:
    """The model: a folder (a run folder's `model/` too) or a hub id, loaded as lwap eval loads models."""
    from pathlib import Path

    from lwap.model import load_model, set_max_seq_length

    name = args.model
    folder = Path(name).expanduser()
    if (
        folder.is_dir()
        and not (folder / "modules.json").exists()
        and (folder / "model" / "modules.json").is_file()
    ):
        name = str(folder / "model")  # a run folder: its model
    model = load_model(name, device=args.device, trust_remote_code=args.trust_remote_code)
    if args.max_seq_length is not None:
        set_max_seq_length(model, args.max_seq_length, lambda message: print(message, file=sys.stderr))
    model.eval()
    return model
