"""The options several `lwap` commands share (`encode`, `eval`, `card`, `mine`, `truncate`), written once
so that their names, help and defaults cannot drift apart between the commands."""

from __future__ import annotations

import argparse


def add_device(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--device", default=None, help="cpu, cuda, ... (default: what sentence-transformers picks)"
    )


def add_no_progress(parser: argparse.ArgumentParser, hides: str = "the progress bar") -> None:
    """--no-progress; `hides` says what it hides in this command (help: "hide HIDES")."""
    parser.add_argument("--no-progress", action="store_true", help=f"hide {hides}")


def add_trust_remote_code(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--trust-remote-code",
        action="store_true",
        help="let the model folder run code of its own (module classes outside lwap and "
        "sentence-transformers, auto_map); off by default: lwap refuses such a folder with one line",
    )
