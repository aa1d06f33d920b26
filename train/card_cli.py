"""Write a finished run's model card (OUT/model/README.md) again, from the run's own records.

With --eval, first score the model and its backbone with `lwap eval` (STS12-16, STS-B test, SICK-R,
SciFact by default) and put both rows in the card, so a reader sees what training changed on held-out
data; the scores are kept in OUT/card_eval.json for later rewrites.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lwap.cli_options import add_trust_remote_code

HELP = "write a run's model card; --eval adds lwap eval's held-out scores beside the backbone's"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run_dir",
        metavar="RUN",
        help="a finished run's output folder (holds model/, config.yaml, ...) or its model folder",
    )
    parser.add_argument(
        "--eval", action="store_true", help="score the model and its backbone with lwap eval first"
    )
    parser.add_argument(
        "--tasks", nargs="+", default=["all"], metavar="TASK", help="lwap eval's tasks (default: all)"
    )
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    add_trust_remote_code(parser)


def run(args: argparse.Namespace) -> int:
    from lwap.checks.locking import hold
    from lwap.train.model_card import write_card
    from lwap.train.outputs import LOCK_FILE, SUMMARY_JSON

    out = Path(args.run_dir).expanduser()
    if (out / "modules.json").is_file() and (out.parent / SUMMARY_JSON).is_file():
        out = out.parent  # the run's model folder (OUT/model) was given: its records are in OUT
    check_run_folder(out, trust_remote_code=args.trust_remote_code)
    with hold(out / LOCK_FILE, f"output folder {out}"):  # not while a run (or another card) writes there
        if args.eval:
            evaluate_for_card(
                out,
                args.tasks,
                batch_size=args.batch_size,
                precision=args.precision,
                trust_remote_code=args.trust_remote_code,
            )
        print(f"lwap card: wrote {write_card(out)}", flush=True)
    return 0


def check_run_folder(out: Path, *, trust_remote_code: bool = False) -> None:
    """DataError or ModelLoadError (one line naming the path) unless `out` is a finished run whose records
    read cleanly and whose model folder holds only what `lwap.checks.model_folder` allows (the card vouches
    for it)."""
    from lwap.checks.files import read_json_object, read_yaml
    from lwap.checks.model_folder import check_model_folder
    from lwap.errors import DataError
    from lwap.train.outputs import CONFIG_YAML, MODEL_DIR, SUMMARY_JSON

    if not out.exists():
        what = "a symbolic link that leads to no folder" if out.is_symlink() else "no such run folder"
        raise DataError(f"{out}: {what}")
    if not out.is_dir():
        raise DataError(f"{out}: is a file, expected the output folder of an lwap train run")
    missing = [  # a FIFO or device there is not missing: its reader below refuses it by name
        name for name in ("model/modules.json", CONFIG_YAML, SUMMARY_JSON) if not (out / name).exists()
    ]
    if missing:
        raise DataError(f"{out}: not a complete lwap train run (no {', '.join(missing)})")
    config = read_yaml(out / CONFIG_YAML)
    if not isinstance(config, dict):
        raise DataError(f"{out / CONFIG_YAML}: expected a mapping of sections, got {type(config).__name__}")
    read_json_object(out / SUMMARY_JSON)
    check_model_folder(out / MODEL_DIR, trust_remote_code=trust_remote_code)


def evaluate_for_card(
    out: Path, tasks: list[str], *, batch_size: int, precision: str, trust_remote_code: bool = False
) -> None:
    """Score OUT/model and the run's backbone with `lwap eval`; write OUT/card_eval.json."""
    from lwap.checks.files import read_yaml, write_json_atomically
    from lwap.errors import DataError, ModelLoadError
    from lwap.eval.api import evaluate_model
    from lwap.model import build_model, load_model
    from lwap.train.model_card import CARD_EVAL_JSON
    from lwap.train.outputs import CONFIG_YAML, MODEL_DIR

    def log(message: str) -> None:
        print(f"lwap card: {message}", file=sys.stderr, flush=True)

    model_section = read_yaml(out / CONFIG_YAML).get("model")
    backbone = model_section.get("backbone") if isinstance(model_section, dict) else None
    if not isinstance(backbone, str):
        raise DataError(f"{out / CONFIG_YAML}: no model.backbone")
    trusted = {"trust_remote_code": trust_remote_code}
    try:
        base, base_label = load_model(backbone, **trusted), f"backbone `{backbone}` (its own pooling)"
    except ModelLoadError:  # a plain encoder declares no sentence pooling: score its mean pooling
        base, base_label = build_model(backbone, "mean", **trusted), f"backbone `{backbone}` (mean pooling)"
    options = {"batch_size": batch_size, "precision": precision, "log": log, **trusted}
    rows = [["this model", evaluate_model(str(out / MODEL_DIR), tasks, **options)]]
    rows.append([base_label, evaluate_model(base, tasks, model_name=backbone, **options)])
    for _, results in rows:
        results.pop("layer_attention", None)  # per-layer profile: in lwap eval's own output, not the card
    write_json_atomically({"rows": rows}, out / CARD_EVAL_JSON)
