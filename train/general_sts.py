"""The cost of specialising: general STS before and after training, for a run kept by the user's dev set.

A run whose checkpoint is picked by the user's own dev set (`eval.dev`: a scored pairs file or a BEIR
folder) says how far it moved on that set; what it gave up elsewhere belongs to the result too. So lwap
scores STS-B dev (cosine Spearman; the set that picks by default, shipped with lwap: data mirror, else the
packaged copy) on the step-0 weights and on the saved model, and the printed result, train_summary.json
(`general_sts`) and the model card show both beside the dev set's own before and after.

Both evaluations run once training is over and the model is saved: the saved model as it is, and the
step-0 weights rebuilt (`initial_model` is seeded; `lwap.train.run` rebuilds them the same way for a run
whose best is step 0). That is two evaluations of STS-B dev per run (1,500 pairs each) instead of one at
every `eval.eval_steps`, which sentence-transformers' `SequentialEvaluator` beside the selecting evaluator
would cost, for a curve the cost of specialising does not need. Nothing measured here reaches the trainer,
so the kept checkpoint is the user's dev set's choice alone. Without STS-B dev (no mirror copy, no packaged
copy, the hub offline) the run ends as it would, with one note line and `unavailable` saying why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lwap.errors import LwapError
from lwap.train.dev_sets import STSB_DEV_KEY, DevSet, dev_evaluator

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from lwap.train.config import TrainConfig

GENERAL_SET = "STS-B dev"
GENERAL_METRIC = "spearman"
GENERAL_NAME = f"{GENERAL_SET} Spearman"


def measure_general_sts(
    config: TrainConfig, model: SentenceTransformer, dev: DevSet | None
) -> dict[str, Any] | None:
    """train_summary.json's `general_sts`: STS-B dev before training and for `model` (the saved one), when
    `dev` is the user's own set; None when STS-B dev picks the checkpoint (its scores are the dev scores)
    or nothing does. `unavailable` says why the scores are None when STS-B dev cannot be read."""
    if dev is None or dev.kind == "stsb":
        return None
    from lwap.model import inference_max_seq_length
    from lwap.train.trainer import initial_model  # trainer (torch, the trainer) only where it runs

    record: dict[str, Any] = {
        "set": GENERAL_SET,
        "metric": GENERAL_METRIC,
        "before": None,
        "after": None,
        "unavailable": None,
    }
    general = DevSet("stsb", "stsb", GENERAL_METRIC)
    try:  # as STS-B dev is scored when it selects: eval.max_seq_length, eval.precision, eval.batch_size
        evaluator = dev_evaluator(general, config.eval, inference_max_seq_length(model))
    except LwapError as error:  # not in the mirror, not packaged, the hub offline: said, not fatal
        record["unavailable"] = str(error)
        return record
    key = STSB_DEV_KEY.removeprefix("eval_")
    record["after"] = float(evaluator(model)[key])
    start = initial_model(config).to(model.device)  # the step-0 weights, as the dev set's `before` scored
    record["before"] = float(evaluator(start)[key])
    del start
    return record


def _change(before: float | None, after: float | None) -> float | None:
    return None if before is None or after is None else after - before


def _fmt(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def gave_up(change: float) -> bool:
    """Whether the general score fell, at the precision it is shown."""
    return round(change, 4) < 0


def result_line(general: dict[str, Any], dev_set: str) -> str:
    """The printed result's line, below the dev set's own."""
    change = _change(general["before"], general["after"])
    verdict = ""
    if change is not None:
        verdict = (
            f" ({_fmt(change, True)}: what specialising on {dev_set} gave up)"
            if gave_up(change)
            else f" ({_fmt(change, True)}: no general STS given up)"
        )
    return (
        f"general STS, {GENERAL_NAME} (not the selection set): before training {_fmt(general['before'])}, "
        f"after training {_fmt(general['after'])}{verdict}"
    )


def unavailable_note(general: dict[str, Any]) -> str:
    """One stderr line when STS-B dev could not be read."""
    return (
        f"lwap train: note: general STS ({GENERAL_SET}) not measured, so the cost of specialising is not "
        f"shown: {general['unavailable']}"
    )


def card_section(summary: dict[str, Any], dev_set: str, metric: str) -> str | None:
    """The card's cost of specialising: the user's dev set and STS-B dev, before and after training, and a
    sentence on what was given up; None for a run kept by STS-B dev (or from before lwap measured it)."""
    general = summary.get("general_sts")
    if not general:
        return None
    if general.get("unavailable"):  # the reason is for this machine (its mirror, the hub): the terminal's
        return (
            f"General STS ({GENERAL_SET}) was not measured: it could not be read when the run ended, so what "
            f"specialising on {dev_set} cost in general sentence similarity is not shown."
        )
    dev_before, dev_after = summary.get("dev_score_before"), summary.get("final_model_dev_score")
    general_before, general_after = general.get("before"), general.get("after")
    rows = [
        (f"your dev set: {dev_set} {metric} (the selection set)", dev_before, dev_after),
        (f"general STS: {GENERAL_NAME} (not used for selection)", general_before, general_after),
    ]
    table = ["| | before training | after training | change |", "| --- | ---: | ---: | ---: |"]
    for label, before, after in rows:
        change = _fmt(_change(before, after), signed=True)
        table.append(f"| {label} | {_fmt(before)} | {_fmt(after)} | {change} |")
    change = _change(general_before, general_after)
    if change is None:
        verdict = ""
    elif gave_up(change):
        verdict = f" {GENERAL_SET} fell by {-change:.4f}: what the specialist gave up in general similarity."
    else:
        verdict = f" {GENERAL_SET} did not fall ({change:+.4f}): no general similarity given up here."
    return (
        f"The cost of specialising: {GENERAL_SET}, general English sentence similarity that took no part in "
        f"training or in keeping the checkpoint, shows what training for your own task cost.{verdict}\n\n"
        + "\n".join(table)
    )
