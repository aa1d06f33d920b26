"""The options several commands share are written once (lwap.cli_options): every command that takes
--device, --trust-remote-code or --no-progress takes it as cli_options defines it, so their names,
help and defaults cannot drift apart between commands."""

from __future__ import annotations

import argparse

from lwap.cli import build_parser
from lwap.cli_options import add_device, add_no_progress, add_trust_remote_code

SHARED = {
    "--device": add_device,
    "--trust-remote-code": add_trust_remote_code,
    "--no-progress": add_no_progress,
}


# `lwap train --device` is another option: the config key training.device (auto, cpu, cuda), not an encoder's
OTHER = {("train", "--device")}


def _option(parser: argparse.ArgumentParser, flag: str) -> argparse.Action | None:
    return next((a for a in parser._actions if flag in a.option_strings), None)


def _commands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_every_shared_option_is_the_one_cli_options_writes() -> None:
    seen = {flag: [] for flag in SHARED}
    for name, parser in _commands().items():
        for flag, add in SHARED.items():
            action = _option(parser, flag)
            if action is None or (name, flag) in OTHER:
                continue
            seen[flag].append(name)
            reference = argparse.ArgumentParser()
            add(reference)
            expected = _option(reference, flag)
            assert (type(action), action.default, action.dest) == (
                type(expected),
                expected.default,
                expected.dest,
            )
            if flag != "--no-progress":  # its help names what it hides in each command
                assert action.help == expected.help, (name, flag)
            else:
                assert action.help.startswith("hide "), (name, flag)
    assert {"encode", "eval", "mine"} <= set(seen["--device"])
    assert {"encode", "eval", "card", "mine", "truncate"} <= set(seen["--trust-remote-code"])
    assert {"encode", "eval"} <= set(seen["--no-progress"])
