"""The card's YAML front matter with a `model-index`: the scores the card reports, where the hub reads them.

Built as sentence-transformers builds its cards' (`BaseModelCardData.format_eval_metrics`): one
huggingface_hub `EvalResult` per dataset and metric, turned into the `model-index` by `ModelCardData`,
which also writes the other front-matter fields. lwap writes its own card (lwap.train.model_card), so it
builds the entries from its own records rather than from sentence-transformers' evaluator objects:

- the saved model's dev score (split `validation`) on the run's dev set (`eval.dev`: STS-B dev, a scored
  pairs file's Spearman or a BEIR folder's metric), 0–1 as the card's text gives it. Where it chose the
  kept checkpoint (`eval.keep_best`) it is no held-out score, and its name says so;
- with `lwap card RUN --eval`: this model's held-out scores (split `test`), × 100 as the card's table
  gives them: cosine Spearman per STS task, nDCG@10 / MRR@10 / Recall@100 per search set.

Left out: the backbone's row of the card's table (not this model), the STS average (not a dataset) and
the embedding geometry (alignment, uniformity, anisotropy: measures of the space, not scores).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

STS_TASK = {"task_type": "semantic-similarity", "task_name": "Semantic Similarity"}
SEARCH_TASK = {"task_type": "retrieval", "task_name": "Retrieval"}
SPEARMAN = "spearman_cosine"


def eval_results(
    summary: dict[str, Any], evaluation: dict[str, Any] | None, *, selected_on_dev: bool = True
) -> list[Any]:
    """The `EvalResult`s of the scores the card reports (see the module docstring); `selected_on_dev`:
    the kept checkpoint was chosen on the dev set (`eval.keep_best`), which its dataset name then says."""
    from huggingface_hub import EvalResult

    from lwap.eval.report import SEARCH_COLUMNS
    from lwap.eval.sts_data import DISPLAY_NAMES
    from lwap.train.dev_sets import summary_dev

    results = []
    dev = summary.get("final_model_dev_score", summary.get("final_model_dev_spearman"))
    if dev is not None:
        dev_set, metric_label, _ = summary_dev(summary)
        metric = summary.get("dev_metric") or "spearman"
        task = STS_TASK if metric == "spearman" else SEARCH_TASK
        chosen = f"{dev_set} (the selection set: the kept checkpoint was chosen on it)"
        results.append(
            EvalResult(
                **task,
                dataset_type="stsb"
                if dev_set == "STS-B dev"
                else re.sub(r"[^a-z0-9]+", "-", dev_set.lower()),
                dataset_name=chosen if selected_on_dev else dev_set,
                dataset_split="validation",
                metric_type=SPEARMAN if metric == "spearman" else metric.replace("@", "_at_"),
                metric_name="Spearman correlation of cosine similarity"
                if metric == "spearman"
                else f"{metric_label} (0–1)",
                metric_value=float(dev),
            )
        )
    if not evaluation:
        return results
    label, this_model = evaluation["rows"][0]  # card_cli.evaluate_for_card: this model first
    if label != "this model":
        raise ValueError(f"card_eval.json: the first row is {label!r}, expected 'this model'")
    variant = this_model.get("protocol", {}).get("sts", {}).get("data_variant")
    for name, entry in this_model["sts"].items():
        results.append(
            EvalResult(
                **STS_TASK,
                dataset_type=name,
                dataset_name=DISPLAY_NAMES.get(name, name),
                dataset_config=variant,
                dataset_split="test",
                metric_type=SPEARMAN,
                metric_name="Spearman correlation of cosine similarity × 100",
                metric_value=float(entry["score"]),
            )
        )
    for name, entry in this_model["search"].items():
        for key, shown in SEARCH_COLUMNS:
            results.append(
                EvalResult(
                    **SEARCH_TASK,
                    dataset_type=name,
                    dataset_name=name,
                    dataset_split="test",
                    metric_type=key.replace("@", "_at_"),
                    metric_name=f"{shown} × 100",
                    metric_value=float(entry[key]),
                )
            )
    return results


def front_matter(fields: dict[str, Any], model_name: str, results: list[Any]) -> str:
    """The YAML between the card's `---` lines: `fields` plus, with results, the `model-index`."""
    from huggingface_hub import ModelCardData

    index = {"model_name": model_name, "eval_results": results} if results else {}
    data = ModelCardData(**fields, **index).to_dict()
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
