"""Save a model cut to its backbone's first K layers (and optionally D dimensions): a smaller, faster
folder that plain sentence-transformers loads, the pooler re-configured to read levels 0..K."""

from __future__ import annotations

import argparse

from lwap.cli_options import add_trust_remote_code

HELP = "save a model with fewer backbone layers (and shorter vectors): faster encoding"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="saved model folder (or a backbone id)")
    parser.add_argument(
        "output", help="the new folder (or an empty one, or one lwap truncate wrote, with --overwrite)"
    )
    parser.add_argument("--layers", type=int, required=True, help="K: keep the backbone's first K layers")
    parser.add_argument(
        "--dims", type=int, default=None, help="D: the saved model's vectors keep their first D dimensions"
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the model lwap truncate saved in OUTPUT; adopt a folder lwap did not make, keeping "
        "what it holds",
    )
    add_trust_remote_code(parser)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from lwap.checks.output_claim import locked_folder
    from lwap.errors import InputError
    from lwap.model import load_model
    from lwap.truncate import check_output_folder, save_truncated

    for flag, value in (("--layers", args.layers), ("--dims", args.dims)):
        if value is not None and value < 1:
            raise InputError(f"{flag} must be at least 1, got {value}")
    output = Path(args.output)
    check_output_folder(output, overwrite=args.overwrite)  # before the model loads
    with locked_folder(output, "truncate"):
        model = load_model(args.model, device="cpu", trust_remote_code=args.trust_remote_code)
        save_truncated(
            model, args.layers, output, source=f"`{args.model}`", dims=args.dims, overwrite=args.overwrite
        )
    layers = model[0].auto_model.config.num_hidden_layers
    print(f"saved {args.model} cut to {args.layers} of {layers} layers to {args.output}")
    return 0
