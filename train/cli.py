"""Train a sentence encoder with SimCSE (unsupervised or supervised) and any pooler, as a YAML config says.

Writes OUTPUT/model (load it with SentenceTransformer(path, trust_remote_code=True)), train_summary.json,
training_curves.png, metrics.csv, TensorBoard logs and checkpoints. Ctrl-C saves a checkpoint; --resume
continues from the last one. For several processes: torchrun --nproc_per_node=N -m lwap.train CONFIG.
CONFIG is a YAML file or the name of a config shipped with lwap (`lwap train --list`); it lists only the keys
it changes (`lwap train --show-config` prints every key with its default).
"""

from __future__ import annotations

import argparse

HELP = "train a sentence encoder (SimCSE) from a YAML config"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "config",
        nargs="?",
        help="a shipped config's name (e.g. quickstart; see --list) or a YAML file",
    )
    parser.add_argument(
        "--list", action="store_true", help="list the configs shipped with lwap, with their descriptions"
    )
    parser.add_argument(
        "--show-config",
        action="store_true",
        help="print every config key with its default and what it does (YAML; a config lists only changes)",
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key, e.g. --set training.learning_rate=1e-4 (repeatable)",
    )
    parser.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda"),
        default=None,
        help="where to train (training.device): auto = CUDA if available; under torchrun one GPU per process",
    )
    parser.add_argument(
        "--resume",
        nargs="?",
        const=True,
        default=None,
        metavar="CHECKPOINT",
        help="continue from the last complete checkpoint in the output folder (or from CHECKPOINT)",
    )
    parser.add_argument(
        "--overwrite", action="store_true", default=None, help="replace a finished run in the output folder"
    )


def run(args: argparse.Namespace) -> int:
    # imported here, not at the top: `lwap --help` imports this module and should stay instant
    from lwap.config_files import format_list, resolve_config
    from lwap.errors import ConfigError
    from lwap.train.config import load_config

    if args.list:
        print(format_list())
        return 0
    if args.show_config:
        from lwap.train.config_reference import reference

        print(reference(), end="")
        return 0
    if args.config is None:
        raise ConfigError("give a config: a shipped config's name ('lwap train --list') or a YAML file")

    overrides = list(args.overrides) + ([f"training.device={args.device}"] if args.device else [])
    config = load_config(resolve_config(args.config), overrides)
    # the training code (torch, transformers) once the config is read: a typo in it is reported at once
    from lwap.train.run import train

    train(config, config_path=args.config, resume=args.resume, overwrite=args.overwrite)
    return 0
