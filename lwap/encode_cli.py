"""Encode a text file (one sentence a line, or - for stdin) into a .npy of embeddings, row i = line i."""

from __future__ import annotations

import argparse
import sys

from lwap.cli_options import add_device, add_no_progress, add_trust_remote_code

HELP = "encode sentences (one a line) into a .npy file"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "model", help="saved model folder, or a backbone id such as sentence-transformers/all-MiniLM-L6-v2"
    )
    parser.add_argument("--input", required=True, help="text file, one sentence a line; - reads stdin")
    parser.add_argument("--output", required=True, help="where to write the float32 .npy (rows = lines)")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing --output file (else refused, as lwap train)",
    )
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--normalize", action="store_true", help="L2-normalise the embeddings")
    parser.add_argument(
        "--precision", choices=("fp32", "bf16"), default="fp32", help="bf16 autocast on the CPU"
    )
    parser.add_argument(
        "--backend",
        choices=("torch", "openvino"),
        default="torch",
        help="openvino: the backbone as an OpenVINO graph, CPU only, about 2x faster in fp32 and 1.2-1.3x in "
        "bf16 on the benchmark machine (docs/BENCHMARKS.md); needs pip install 'lwap[openvino]'",
    )
    parser.add_argument("--max-seq-length", type=int, default=None, help="truncate longer inputs (tokens)")
    parser.add_argument(
        "--dims",
        type=int,
        default=None,
        help="keep the first D dimensions of each vector (Matryoshka; with --normalize, renormalised)",
    )
    parser.add_argument(
        "--layers",
        type=int,
        default=None,
        help="encode with the backbone's first K layers, the pooler reading levels 0..K (faster; "
        "docs/ENCODING.md); lwap truncate saves such a model",
    )
    add_device(parser)
    add_no_progress(parser)
    add_trust_remote_code(parser)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from lwap.checks.files import check_file as check_input
    from lwap.checks.output_claim import check_file, claim_file
    from lwap.errors import InputError

    if args.batch_size < 1:
        raise InputError(f"--batch-size must be at least 1, got {args.batch_size}")
    if args.max_seq_length is not None and args.max_seq_length < 1:
        raise InputError(f"--max-seq-length must be at least 1, got {args.max_seq_length}")
    for flag, value in (("--dims", args.dims), ("--layers", args.layers)):
        if value is not None and value < 1:
            raise InputError(f"{flag} must be at least 1, got {value}")
    device = args.device
    if args.backend == "openvino":
        if device not in (None, "cpu"):
            raise InputError(f"--backend openvino runs on the CPU, not --device {device}")
        device = "cpu"
    if args.input != "-":  # paths first: a bad one should not wait for the model to load
        check_input(Path(args.input), args.input, allow_empty=True)
    # as `lwap train` treats a finished run; then one writer at a time (lwap.checks.output_claim)
    check_file(Path(args.output), overwrite=args.overwrite, label=args.output)
    with claim_file(Path(args.output), overwrite=args.overwrite, label=args.output):
        return _encode(args, device)


def _encode(args: argparse.Namespace, device: str | None) -> int:
    from lwap.encoding import encode_file
    from lwap.library_output import library_warnings_held
    from lwap.model import load_model, set_max_seq_length

    # what the libraries warn while the model loads (and converts) is said once it is ready: a refusal of
    # --layers, --dims or the OpenVINO backend alone
    converted = None
    with library_warnings_held():
        model = load_model(args.model, device=device, trust_remote_code=args.trust_remote_code)
        if args.layers is not None or args.dims is not None:
            from lwap.truncate import check_dims, truncate_model

            if args.layers is not None:
                model = truncate_model(model, args.layers)
            if args.dims is not None:
                check_dims(model, args.dims)
                model.truncate_dim = args.dims
        if args.max_seq_length is not None:
            set_max_seq_length(model, args.max_seq_length, lambda message: print(message, file=sys.stderr))
        if args.backend == "openvino":
            from lwap.openvino_backbone import use_openvino

            converted = use_openvino(model, args.precision)
    if converted is not None:
        print(f"backbone converted to OpenVINO ({args.precision}) in {converted:.1f} s", file=sys.stderr)
    rows = encode_file(
        model,
        args.input,
        args.output,
        batch_size=args.batch_size,
        normalize=args.normalize,
        precision=args.precision,
        show_progress_bar=not args.no_progress,
    )
    print(f"wrote {rows} x {model.get_embedding_dimension()} embeddings to {args.output}")
    return 0
