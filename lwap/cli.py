"""The `lwap` command: `lwap encode`, `lwap truncate`, `lwap train`, `lwap mine`, `lwap eval`, `lwap card`,
`lwap compare`.

Each subcommand lives in its own module with `HELP`, `add_arguments(parser)` and `run(args) -> int`;
heavy imports happen inside `run`, so `lwap --help` is instant. A user error (`LwapError`) becomes one
line on stderr and exit code 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading

from lwap.errors import LwapError, Terminated

SUBCOMMANDS = {
    "encode": "lwap.encode_cli",
    "truncate": "lwap.truncate_cli",
    "train": "lwap.train.cli",
    "mine": "lwap.train.mine_cli",
    "eval": "lwap.eval.cli",
    "card": "lwap.train.card_cli",
    "compare": "lwap.compare.cli",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lwap", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {importlib.import_module('lwap').__version__}"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module_name in SUBCOMMANDS.items():
        module = importlib.import_module(module_name)
        sub = commands.add_parser(name, help=module.HELP, description=module.__doc__)
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _quiet_libraries()
    previous = _end_on_signals_as_on_ctrl_c()
    try:
        return int(args.run(args) or 0)
    except LwapError as error:
        print(f"lwap {args.command}: error: {error}", file=sys.stderr)
        return 2
    except Terminated as stop:
        print(f"lwap {args.command}: stopped by {signal.Signals(stop.signum).name}", file=sys.stderr)
        return 128 + stop.signum
    except KeyboardInterrupt:
        print(f"lwap {args.command}: interrupted", file=sys.stderr)
        return 130
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _end_on_signals_as_on_ctrl_c() -> dict[int, object]:
    """SIGTERM and SIGHUP raise `Terminated` in the main thread, so they clean up what Ctrl-C cleans up
    (Python's default for both is to die on the spot, leaving partial files and caches); the handlers
    they replace, to restore. `lwap train` installs its own while it trains (a checkpoint first)."""

    def stop(signum: int, _frame: object) -> None:
        raise Terminated(signum)

    if threading.current_thread() is not threading.main_thread():  # only the main thread may set them
        return {}
    wanted = [getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)]
    return {signum: signal.signal(signum, stop) for signum in wanted}


def _quiet_libraries() -> None:
    """Hide the per-load 'Loading weights' bars and info logs of transformers; keep warnings.

    Through the environment variables transformers reads on import, so that a command failing on its
    input (a config typo) does not first wait about a second for transformers to import.
    """
    if "transformers" not in sys.modules:
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "warning")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        return
    from transformers.utils import logging

    logging.set_verbosity_warning()
    logging.disable_progress_bar()


if __name__ == "__main__":
    sys.exit(main())
