"""The saved model's card (README.md): what a user publishes with sentence-transformers' `push_to_hub`.

sentence-transformers fills its `SentenceTransformerModelCardData` during training, but for an lwap run
it gets three things wrong: the title is the bare class name (the backbone is a local folder, so it finds
no hub id), nothing says which pooling and objective were trained, and the evaluation section holds the
*last* evaluation, not the kept (best) checkpoint's. `describe_run` sets them from the config and the
trainer's log history before the model is saved.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lwap import registry
from lwap.train.config import TrainConfig

OBJECTIVE_NAMES = {
    "unsup_simcse": "unsupervised SimCSE",
    "sup_simcse": "supervised SimCSE",
    "scored_pairs": "scored pairs",
}


def kept_step(trainer: Any, config: TrainConfig) -> int:
    """The step whose weights are saved: the best checkpoint with `eval.keep_best`, else the last step."""
    state = trainer.state
    if config.eval.keep_best and state.best_global_step is not None:  # 0: the rebuilt step-0 weights
        return int(state.best_global_step)
    return int(state.global_step)


def metrics_at_step(log_history: list[dict[str, Any]], evaluator_name: str, step: int) -> dict[str, float]:
    """The evaluator's metrics logged at `step`, keyed as the evaluator returns them (without `eval_`)."""
    prefix = f"eval_{evaluator_name}_"
    metrics: dict[str, float] = {}
    for entry in log_history:
        if int(entry.get("step", -1)) == step:
            metrics.update({k[len("eval_") :]: float(v) for k, v in entry.items() if k.startswith(prefix)})
    return metrics


def _hub_id(backbone: str) -> str | None:
    """The backbone's hub id, or None for a local folder (a path is no `base_model` on the hub)."""
    looks_like_path = backbone.startswith((".", "/", "~")) or backbone.count("/") > 1
    return None if looks_like_path or Path(backbone).expanduser().exists() else backbone


def describe_run(trainer: Any, config: TrainConfig) -> None:
    """Name the base model, pooling and objective in the card, and report the kept checkpoint's STS-B dev."""
    model = trainer.model
    card = model.model_card_data
    pooling = registry.POOLERS[config.model.pooling].card_name
    objective = OBJECTIVE_NAMES.get(config.objective.name, config.objective.name)
    card.model_name = f"{config.model.backbone} + {pooling}, {objective}"
    card.base_model = _hub_id(config.model.backbone)
    card.base_model_revision = None
    card.add_tags(["lwap", f"{config.model.pooling}-pooling", config.objective.name.replace("_", "-")])
    evaluator = getattr(trainer, "evaluator", None)
    if evaluator is None or config.eval.dev is None:
        return
    step = kept_step(trainer, config)
    metrics = metrics_at_step(trainer.state.log_history, evaluator.name, step)
    if metrics:  # replace the last evaluation's figures with those of the weights being saved
        card.eval_results_dict[evaluator] = metrics
    if config.eval.keep_best:
        card.set_best_model_step(step)  # the row shown in bold in the card's training log


# ---- the card lwap writes into OUT/model/README.md (replacing sentence-transformers' generic one) ----

CARD_EVAL_JSON = "card_eval.json"  # OUT/card_eval.json: `lwap card OUT --eval`'s scores, kept for rewrites
LWAP_CITATION = "\n".join(
    [
        "@inproceedings{oh-etal-2022-dont,",
        "    title = \"Don{'}t Judge a Language Model by Its Last Layer: "
        'Contrastive Learning with Layer-Wise Attention Pooling",',
        '    author = "Oh, Dongsuk and Kim, Yejin and Lee, Hodong and Huang, H. Howie and Lim, Heuiseok",',
        '    booktitle = "Proceedings of the 29th International Conference on Computational Linguistics",',
        '    year = "2022",',
        '    eprint = "2209.05972",',
        '    archivePrefix = "arXiv"',
        "}",
    ]
)
SIMCSE_CITATION = """@inproceedings{gao-etal-2021-simcse,
    title = "{S}im{CSE}: Simple Contrastive Learning of Sentence Embeddings",
    author = "Gao, Tianyu and Yao, Xingcheng and Chen, Danqi",
    booktitle = "Proceedings of the 2021 Conference on Empirical Methods in Natural Language Processing",
    year = "2021",
    eprint = "2104.08821",
    archivePrefix = "arXiv"
}"""
PLACEHOLDER = "sentence_transformers_model_id"  # sentence-transformers' push_to_hub puts the repo id here


def write_card(out: Path) -> Path:
    """Write OUT/model/README.md from the run's own records (config.yaml, train_summary.json, metrics.csv,
    card_eval.json if `lwap card --eval` made one); `lwap train` calls it last, `lwap card` again later."""
    from lwap.checks.files import read_json_object, read_yaml, write_text_atomically
    from lwap.train.config import config_from_dict
    from lwap.train.outputs import METRICS_CSV, MODEL_DIR, SUMMARY_JSON, run_config_file

    config = config_from_dict(read_yaml(run_config_file(out)), str(out))  # a resume's changes included
    summary = read_json_object(out / SUMMARY_JSON)
    evaluation_file = out / CARD_EVAL_JSON
    evaluation = read_json_object(evaluation_file) if evaluation_file.is_file() else None
    model_dir = out / MODEL_DIR
    card = card_text(config, summary, _logged(out / METRICS_CSV), evaluation, model_dir)
    write_text_atomically(model_dir / "README.md", card)
    return model_dir / "README.md"


def _logged(metrics_csv: Path) -> dict[int, dict[str, float]]:
    """step -> {metric: value} from metrics.csv (every value the trainer logged, at full precision)."""
    from lwap.checks.files import read_csv_rows
    from lwap.errors import DataError

    by_step: dict[int, dict[str, float]] = {}
    if metrics_csv.is_file():
        for line, row in read_csv_rows(metrics_csv):
            try:
                if row["step"]:
                    by_step.setdefault(int(float(row["step"])), {})[row["metric"]] = float(row["value"])
            except (KeyError, ValueError) as error:
                raise DataError(f"{metrics_csv}:{line}: expected step, metric, value ({error})") from None
    return by_step


def card_text(
    config: TrainConfig,
    summary: dict[str, Any],
    logged: dict[int, dict[str, float]],
    evaluation: dict[str, Any] | None,
    model_dir: Path,
) -> str:
    """The card as Markdown with YAML front matter (what the Hugging Face hub reads, with the
    `model-index` of its scores: lwap.train.model_index)."""
    m = config.model
    pooling = registry.POOLERS[m.pooling].card_name
    objective = OBJECTIVE_NAMES.get(config.objective.name, config.objective.name)
    license_name, language = _backbone_card_fields(m.backbone)
    front: dict[str, Any] = {
        "language": language,
        "license": license_name,
        "library_name": "sentence-transformers",
        "pipeline_tag": "sentence-similarity",
        "tags": [
            "sentence-transformers",
            "sentence-similarity",
            "feature-extraction",
            "lwap",
            f"{m.pooling}-pooling",
            config.objective.name.replace("_", "-"),
        ],
    }
    if _hub_id(m.backbone):
        front["base_model"] = m.backbone
    code = sorted(p.name for p in model_dir.glob("*.py"))
    title = f"{m.backbone} + {pooling}, {objective}"
    from lwap.train.model_index import eval_results, front_matter

    results = eval_results(summary, evaluation, selected_on_dev=config.eval.keep_best)
    parts = [
        f"---\n{front_matter(front, title, results)}---",
        f"# {title}",
        f"A sentence encoder trained with lwap: the backbone `{m.backbone}` with {pooling}, trained with "
        f"{objective}. It maps text to vectors for semantic similarity and search (cosine similarity).",
        "## Usage",
        _usage(code),
    ]
    from lwap.train.elastic_card import elastic_section

    parts += elastic_section(config.objective, bool(code))  # Matryoshka dims, depths: truncate_dim, --layers
    if m.pooling == "lwap":
        parts += ["## Layer-wise attention pooling", _about_lwap(m)]
    parts += ["## Training", _training(config, summary, logged)]
    parts += ["## Evaluation", _evaluation(evaluation, summary)]
    versions = summary.get("versions", {})
    parts += [
        "## Framework versions",
        "\n".join(f"- {name}: {version}" for name, version in versions.items()),
        "## Citation",
        "```bibtex\n" + (LWAP_CITATION + "\n\n" if m.pooling == "lwap" else "") + SIMCSE_CITATION + "\n```",
    ]
    return "\n\n".join(parts) + "\n"


def _usage(code: list[str]) -> str:
    snippet = (
        "```python\nfrom sentence_transformers import SentenceTransformer\n\n"
        f'model = SentenceTransformer("{PLACEHOLDER}", trust_remote_code=True)\n'
        'embeddings = model.encode(["A man is playing a guitar.", "Someone plays an instrument."])\n'
        "print(model.similarity(embeddings, embeddings))\n```"
    )
    if not code:
        return (
            snippet.replace(", trust_remote_code=True", "") + "\n\nOnly sentence-transformers' own modules."
        )
    files = ", ".join(f"`{name}`" for name in code)
    return (
        f"{snippet}\n\n`trust_remote_code=True` lets sentence-transformers import the pooling code that "
        f"ships in this folder ({files}); it needs only torch, transformers and sentence-transformers. "
        "With lwap installed, `lwap.load_model(path)` loads the folder without that flag: it checks that "
        "those files hold lwap's own code and runs lwap's."
    )


def _about_lwap(m: Any) -> str:
    text = (
        "Layer-wise attention pooling (LWAP; Oh et al., 2022, arXiv:2209.05972) builds the sentence vector "
        "from every layer of the backbone instead of the last one alone: each layer's [CLS] vector queries "
        "the masked means of all layers through attention, and the result, joined with the last layer's "
        "[CLS], is projected to the sentence vector. The pooling head and the backbone are trained together "
        "with SimCSE's contrastive objective (Gao et al., 2021)."
    )
    queries = {
        "mean": "each layer's masked mean (not its [CLS]) queries the layers",
        "latent": f"{m.lwap_latent_queries} learned query vectors (not the layers' [CLS]) attend over the "
        "layers' means, starting from about uniform weights",
    }.get(m.lwap_queries)
    output = "the output layer reads the attention alone, without the last [CLS]"
    changes = [c for c in (queries, output if m.lwap_output == "attention" else None) if c]
    if changes:
        text += f"\n\nThis model varies the paper's head: {'; '.join(changes)}."
    if m.lwap_start == "native":
        own = "its saved pooling" if m.native_pooling == "auto" else f"{m.native_pooling} pooling"
        text += (
            "\n\nThis model uses lwap's *native start*: the head adds a learned correction to the backbone's "
            f"own sentence vector ({own}), and that "
            "correction is exactly zero before training, so at step 0 the model embeds as the backbone does. "
            "Where the backbone normalises its vectors, the sum is normalised again."
        )
    return text


def _objective_text(config: TrainConfig) -> str:
    """What the loss was, in one table cell."""
    o = config.objective
    if o.name == "scored_pairs":
        from lwap.train.scored_losses import SCORED_LOSS_CLASSES

        scale = "" if o.scored_loss == "cosine" else f", scale {1 / o.temperature:g}"
        bounds = config.data.score_range
        source = f"[{bounds[0]:g}, {bounds[1]:g}]" if bounds else "the data's min and max"
        return (
            f"scored pairs: sentence-transformers' {SCORED_LOSS_CLASSES[o.scored_loss].__name__}{scale}, "
            f"scores mapped to [0, 1] from {source}"
        )
    return (
        f"{OBJECTIVE_NAMES.get(o.name, o.name)}: InfoNCE over in-batch negatives, cosine "
        f"similarity / temperature {o.temperature:g} (lwap's SimCSELoss)"
    )


def _training(config: TrainConfig, summary: dict[str, Any], logged: dict[int, dict[str, float]]) -> str:
    t, o = config.training, config.objective
    examples = summary.get("train_examples")
    negatives = len(config.data.negative_columns())
    unit = {0: "pairs", 1: "triplets"}.get(
        negatives, f"(anchor, positive, {negatives} hard negatives) tuples"
    )
    unit = {"unsup_simcse": "sentences", "scored_pairs": "scored pairs"}.get(o.name, unit)
    rows = [("objective", _objective_text(config))]
    rows += [
        (
            "training data",
            f"{examples:,} {unit} from {_data_name(config)}" if examples else _data_name(config),
        ),
        (
            "steps",
            f"{summary.get('steps')} (global batch {summary.get('global_batch_size')}, learning rate "
            f"{t.learning_rate:g}, {t.lr_scheduler} schedule, {t.precision}, "
            f"max length {config.model.max_seq_length} tokens in training)",
        ),
    ]
    from lwap.train.dev_sets import summary_dev

    dev_set, metric, key = summary_dev(summary)
    kept = summary.get("final_model_step")
    if config.eval.keep_best and kept is not None:
        rows.append(("kept checkpoint", f"step {kept}, the best {metric} on {dev_set} (the selection set)"))
    table = "| | |\n| --- | --- |\n" + "\n".join(f"| {k} | {v} |" for k, v in rows)
    log = [f"| step | training loss | {dev_set} {metric} (selection set) |", "| ---: | ---: | ---: |"]
    for step in sorted(logged):
        loss, dev = logged[step].get("loss"), logged[step].get(key)
        if loss is None and dev is None:
            continue
        cells = [str(step), "" if loss is None else f"{loss:.4g}", "" if dev is None else f"{dev:.4f}"]
        if step == kept and config.eval.keep_best:
            cells = [f"**{c}**" if c else c for c in cells]
        log.append("| " + " | ".join(cells) + " |")
    return table + "\n\n### Training log\n\n" + "\n".join(log)


def _data_name(config: TrainConfig) -> str:
    """The training data by name: a hub dataset's id, or the file's name and the title of the SOURCE.md
    that the data mirror and lwap's packaged sample keep beside each file."""
    from lwap.checks.files import read_limited
    from lwap.checks.limits import JSON_FILE
    from lwap.data_sources import training_file
    from lwap.errors import LwapError
    from lwap.train.data import _is_local

    d = config.data
    first = f", its first {d.max_examples:,} rows" if d.max_examples else ""
    if not _is_local(d.train):
        extra = f", file {d.hub_data_files}" if d.hub_data_files else ""
        return f"the Hugging Face dataset `{d.train}` (split {d.hub_split}{extra}){first}"
    name = f"`{Path(d.train).name}`{first}"
    try:
        source = training_file(d.train, d.max_examples).parent / "SOURCE.md"
    except LwapError:
        return name
    try:
        lines = (
            read_limited(source, JSON_FILE).decode("utf-8", "replace").splitlines()
            if source.is_file()
            else []
        )
    except LwapError:
        return name
    title = next((line[2:].strip() for line in lines if line.startswith("# ")), None)
    return f"{name}: {title}" if title else name


def _evaluation(evaluation: dict[str, Any] | None, summary: dict[str, Any]) -> str:
    from lwap.train.dev_sets import summary_dev

    dev_set, metric, _ = summary_dev(summary)
    dev = summary.get("final_model_dev_score", summary.get("final_model_dev_spearman"))
    before = summary.get("dev_score_before", summary.get("dev_spearman_before"))
    lines = []
    if dev is not None:
        lines.append(
            f"{dev_set} {metric}: {dev:.4f} (before training: {before:.4f}). {dev_set} is the selection "
            "set, on which the kept checkpoint was chosen, so this is no held-out score."
            if before is not None
            else f"{dev_set} {metric}: {dev:.4f} (the selection set: no held-out score)."
        )
    from lwap.train.general_sts import card_section

    cost = card_section(summary, dev_set, metric)  # kept by the user's dev set: STS-B dev before and after
    if cost:
        lines.append(cost)
    if not evaluation:
        lines.append(
            "Not evaluated on held-out sets yet: `lwap card RUN_DIR --eval` adds `lwap eval`'s STS12–16, "
            "STS-B test, SICK-R and SciFact scores here, beside the backbone's."
        )
        return "\n\n".join(lines)
    from lwap.eval.report import table_columns

    rows = [(label, table_columns(results)) for label, results in evaluation["rows"]]
    headers = [header for header, _, _ in rows[0][1]]
    table = ["| model | " + " | ".join(headers) + " |", "| --- |" + " ---: |" * len(headers)]
    for label, columns in rows:
        table.append(f"| {label} | " + " | ".join(f"{value:.2f}" for _, value, _ in columns) + " |")
    protocol = evaluation["rows"][0][1]["protocol"]
    lines.append(
        "Held-out test sets, scored by `lwap eval` (`lwap card RUN_DIR --eval`): STS cosine Spearman × 100 "
        f"({protocol['sts']['data_variant']} data, STS12–16 aggregation '{protocol['sts']['aggregation']}'), "
        "search nDCG@10 / MRR@10 / Recall@100 × 100, "
        f"{protocol['precision']}.\n\n" + "\n".join(table)
    )
    return "\n\n".join(lines)


def _backbone_card_fields(backbone: str) -> tuple[str, Any]:
    """(license, language) from the backbone's own card; "unknown" license and English otherwise (lwap's
    training and evaluation data are English)."""
    from lwap.backbones import resolve_backbone
    from lwap.checks.files import read_limited
    from lwap.checks.limits import JSON_FILE
    from lwap.checks.safe_yaml import parse_yaml
    from lwap.errors import LwapError

    try:
        folder = Path(resolve_backbone(backbone))
    except LwapError:
        return "unknown", "en"
    for readme in (folder / "README.md", folder.parent / "README.md"):
        try:  # within a limit, and its front matter's aliases bounded: str() of an alias bomb never ends
            text = read_limited(readme, JSON_FILE).decode("utf-8", "replace") if readme.is_file() else ""
            if not text.startswith("---"):
                continue
            front = parse_yaml(text.split("---", 2)[1], str(readme)) or {}
        except LwapError:
            continue
        if isinstance(front, dict):
            return str(front.get("license") or "unknown"), front.get("language") or "en"
    return "unknown", "en"
