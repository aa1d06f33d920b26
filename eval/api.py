"""`evaluate_model`: the whole evaluation (STS suite, semantic search, layer profile) as one library call.

`lwap eval` and the benchmark scripts both call this; it returns the dict that becomes `results.json`.
All data is read and checked before the first sentence is encoded, so a bad file fails in a second,
not after minutes of encoding.
"""

from __future__ import annotations

import difflib
import os
import time
import warnings
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from sentence_transformers import SentenceTransformer

from lwap.checks.output_claim import FolderClaim, check_folder, entries, mark_folder
from lwap.checks.table_files import column_names_problem
from lwap.encoding import PRECISIONS
from lwap.errors import ConfigError
from lwap.eval.beir_data import BeirDataset, load_beir, load_scifact
from lwap.eval.layer_profile import LayerAttentionRecorder
from lwap.eval.pairs_data import DEFAULT_COLUMNS, is_pairs_file, load_scored_pairs, pairs_name
from lwap.eval.search import score_search
from lwap.eval.sts_data import STS_TASKS, VARIANTS, load_sts_task
from lwap.eval.sts_scoring import AGGREGATIONS, score_sts_tasks
from lwap.library_output import datasets_bars_off, library_warnings_held
from lwap.model import find_lwap, load_model, set_max_seq_length
from lwap.paths import find_data_dir

SEARCH_TASKS = {"scifact": load_scifact}  # name -> its reader (data mirror, else the hub)
DEFAULT_TASKS = (*STS_TASKS, "scifact")
TASK_GROUPS = {"sts": STS_TASKS, "search": tuple(SEARCH_TASKS), "all": DEFAULT_TASKS}
PROFILE_TASK = "stsb"  # the layer-attention profile is taken over the STS-B test sentences
GEOMETRY_TASK = "stsb"  # alignment, uniformity and anisotropy: over STS-B test, as SimCSE


def resolve_tasks(
    tasks: Sequence[str],
) -> tuple[list[str], list[tuple[str, Path | None]], list[tuple[str, Path]]]:
    """STS task names (in table order), (name, folder) of search datasets and (name, file) of scored pairs
    files; ConfigError for unknown names.

    The folder is None for a named dataset (`SEARCH_TASKS`), which its own reader finds.

    A task is an STS name, `scifact`, a group (`sts`, `search`, `all`), the path of a BEIR folder, or the
    path of a scored pairs file (`lwap.eval.pairs_data`: a user's own pairs with similarity scores).
    """
    sts: set[str] = set()
    search: dict[str, Path | None] = {}
    pairs: dict[str, Path] = {}
    valid = [*STS_TASKS, *SEARCH_TASKS, *TASK_GROUPS]
    for task in tasks:
        key = task.lower()
        for name in TASK_GROUPS.get(key, (key,)):
            if name in STS_TASKS:
                sts.add(name)
            elif name in SEARCH_TASKS:
                search.setdefault(name, None)
            elif is_pairs_file(Path(task)) and not Path(task).expanduser().is_dir():  # a pairs file
                file = Path(task).expanduser()  # load_scored_pairs says if it is missing or empty
                pairs[_unused_name(pairs_name(file), [*sts, *search, *pairs])] = file
            elif Path(task).expanduser().exists() or "/" in task or os.sep in task:  # a path: load_beir
                folder = Path(task).expanduser()  # says if it is missing or not a folder
                search[Path(os.path.abspath(folder)).name] = folder  # not resolve(): a link loop
            else:
                close = difflib.get_close_matches(key, valid, n=3)
                hint = f" (did you mean {', '.join(close)}?)" if close else ""
                raise ConfigError(
                    f"unknown task {task!r}{hint}; valid: {', '.join(valid)}, "
                    "the path of a BEIR-layout folder or of a scored pairs file (.csv/.tsv[.gz])"
                )
    if not sts and not search and not pairs:
        raise ConfigError("no tasks given")
    return [t for t in STS_TASKS if t in sts], list(search.items()), list(pairs.items())


def _unused_name(name: str, taken: Sequence[str]) -> str:
    """`name`, or `name-2`, `name-3`, ... where another task already has it."""
    candidate, number = name or "pairs", 1
    while candidate in taken or candidate in STS_TASKS:
        number += 1
        candidate = f"{name}-{number}"
    return candidate


def _check_options(
    variant: str,
    aggregation: str,
    batch_size: int,
    precision: str,
    bootstrap: int,
    max_seq_length: int | None,
) -> None:
    if variant not in VARIANTS:
        raise ConfigError(f"data variant must be one of {VARIANTS}, got {variant!r}")
    if aggregation not in AGGREGATIONS:
        raise ConfigError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
    if precision not in PRECISIONS:
        raise ConfigError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if batch_size < 1:
        raise ConfigError(f"batch size must be at least 1, got {batch_size}")
    if bootstrap < 0:
        raise ConfigError(f"bootstrap resamples must be 0 (off) or more, got {bootstrap}")
    if max_seq_length is not None and max_seq_length < 1:
        raise ConfigError(f"max sequence length must be at least 1, got {max_seq_length}")


def _versions(use_mteb: bool) -> dict[str, str]:
    import sentence_transformers
    import torch
    import transformers

    import lwap

    versions = {
        "lwap": lwap.__version__,
        "sentence_transformers": sentence_transformers.__version__,
        "transformers": transformers.__version__,
        "torch": torch.__version__,
    }
    if use_mteb:
        import mteb

        versions["mteb"] = mteb.__version__
    return versions


def check_output_folder(output_dir: Path, *, overwrite: bool = False) -> FolderClaim:
    """Whether `lwap eval` may write its files in `output_dir` (lwap.checks.output_claim): ConfigError, one
    line, for a user's non-empty folder without `overwrite`, a user's file named as one lwap writes, a
    link where lwap writes; a folder an earlier lwap eval wrote (its files alone) is lwap's. Read-only."""
    from lwap.eval.report import LAYER_PNG, PAIR_SCORES, RESULTS_JSON, RESULTS_MD

    written = (RESULTS_JSON, RESULTS_MD, LAYER_PNG, PAIR_SCORES)
    return check_folder(
        output_dir,
        "eval",
        overwrite=overwrite,
        writes=written,
        label=f"output {output_dir}",
        legacy=lambda folder: (folder / RESULTS_JSON).is_file() and set(entries(folder)) <= set(written),
    )


def evaluate_model(
    model: SentenceTransformer | str | os.PathLike[str],
    tasks: Sequence[str] = DEFAULT_TASKS,
    *,
    variant: str = "senteval",
    aggregation: str = "all",
    batch_size: int = 128,
    precision: str = "fp32",
    bootstrap: int = 0,
    seed: int = 0,
    use_mteb: bool = False,
    max_seq_length: int | None = None,
    device: str | None = None,
    trust_remote_code: bool = False,
    model_name: str | None = None,
    pairs_columns: Sequence[str] = DEFAULT_COLUMNS,
    pairs_column_names: Sequence[str] | None = None,
    output_dir: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
    pair_scores: bool = False,
    show_progress_bar: bool = False,
    log: Callable[[str], None] | None = None,
    warn: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Evaluate `model` (a SentenceTransformer, a saved folder or a backbone id) and return every figure.

    Scores are × 100. STS: cosine Spearman on the test sets; `aggregation` picks which of `all`/`wmean`
    is each SemEval set's `score` (both are always reported with lwap's own scorer). Search: nDCG@10 is
    the `score`. A scored pairs file (a path among `tasks`, its columns `pairs_columns`) is scored as an
    STS set: cosine Spearman × 100, lwap's own scorer (with `use_mteb` too); `pairs_column_names` names a
    pairs file's columns when it has no header row. With `output_dir`, also
    writes results.json, results.md and, for an LWAP model, the layer-attention PNG
    (`lwap.eval.report.write_outputs`) into a folder that is new, empty or lwap's
    (lwap.checks.output_claim; `overwrite` adopts a user's non-empty folder, keeping its entries); with
    `pair_scores` too, pair_scores.npz: each STS test pair's cosine (float32, keyed TASK/SUBSET, in the
    data's order), for a bootstrap over pairs later.
    A folder is loaded by `lwap.load_model` (what it may hold: `lwap.checks.model_folder`);
    `trust_remote_code` is its opt-in to the folder's own code. `warn` gets what the data says about the
    scores (judgements naming documents missing from a corpus), before any scoring; by default a
    UserWarning.
    """
    say = log or (lambda message: None)
    caution = warn or (lambda message: warnings.warn(message, UserWarning, stacklevel=3))
    _check_options(variant, aggregation, batch_size, precision, bootstrap, max_seq_length)
    problem = column_names_problem(pairs_column_names)
    if problem is not None:
        raise ConfigError(f"--pairs-column-names {problem}, got {list(pairs_column_names or ())!r}")
    if pair_scores and (output_dir is None or use_mteb):
        raise ConfigError("pair scores are written by lwap's own scorer into the output folder: give an "
                          "output folder (--output DIR) and leave out --mteb")
    if output_dir is not None:  # before any work: a bad output folder should not cost an evaluation
        claim = check_output_folder(Path(output_dir), overwrite=overwrite)
    started = time.perf_counter()
    sts_names, search_specs, pairs_specs = resolve_tasks(tasks)

    # the data, then the model, with no stage line, bar or warning (lwap's or a library's) until both are
    # good: a refusal of either is one line (lwap.library_output)
    with library_warnings_held(), datasets_bars_off():
        sts_tasks = [load_sts_task(name, variant) for name in sts_names]
        search_sets: list[BeirDataset] = [
            SEARCH_TASKS[name]() if folder is None else load_beir(folder, name=name)
            for name, folder in search_specs
        ]
        pairs_tasks = [
            load_scored_pairs(
                path,
                pairs_columns,
                name=name,
                columns_option="--pairs-columns",
                column_names=pairs_column_names,
                names_option="--pairs-column-names",
            )
            for name, path in pairs_specs
        ]
        if isinstance(model, SentenceTransformer):
            label = model_name or "in-memory model"
        else:
            label = model_name or str(model)
            model = load_model(model, device=device, trust_remote_code=trust_remote_code)
    say(f"data read and {label} ready in {time.perf_counter() - started:.1f} s")
    for data in search_sets:  # judgements that point nowhere: said before any score, not only in results.json
        for note in data.notes:
            caution(f"{data.name}: {note}")
    if max_seq_length is not None:
        set_max_seq_length(model, max_seq_length, say)
    model.eval()

    profile_tasks = [t for t in sts_tasks if t.name == PROFILE_TASK]
    recorder = LayerAttentionRecorder.for_model(model) if profile_tasks else None

    timing: dict[str, float] = {"reading_data": time.perf_counter() - started}
    sts_results: dict[str, dict] = {}
    search_results: dict[str, dict] = {}
    vectors: dict[str, Any] = {}
    cosines: dict[str, Any] | None = {} if pair_scores else None
    tick = time.perf_counter()
    if use_mteb:
        from lwap.eval.mteb_tasks import evaluate_with_mteb

        options = {
            "aggregation": aggregation,
            "batch_size": batch_size,
            "precision": precision,
            "show_progress_bar": show_progress_bar,
        }
        say(f"mteb: {len(sts_tasks)} STS tasks, {len(search_sets)} search datasets")
        with recorder.attached() if recorder else nullcontext():
            first, _ = evaluate_with_mteb(model, profile_tasks, [], **options)
        rest = [t for t in sts_tasks if t.name != PROFILE_TASK]
        more, search_results = evaluate_with_mteb(model, rest, search_sets, **options)
        sts_results = {**first, **more}
        timing["sts_and_search"] = time.perf_counter() - tick
    else:
        if sts_tasks:
            ordered = profile_tasks + [t for t in sts_tasks if t.name != PROFILE_TASK]
            count = len(
                {s for t in sts_tasks for p in t.subsets.values() for s in (*p.sentences1, *p.sentences2)}
            )
            say(f"STS: encoding {count:,} distinct sentences of {len(sts_tasks)} tasks")
            sts_results = score_sts_tasks(
                model,
                ordered,
                aggregation=aggregation,
                batch_size=batch_size,
                precision=precision,
                bootstrap=bootstrap,
                seed=seed,
                show_progress_bar=show_progress_bar,
                while_encoding_first=recorder.attached if recorder else None,
                vectors_out=vectors,
                cosines_out=cosines,
            )
            timing["sts"] = time.perf_counter() - tick
        for data in search_sets:
            tick = time.perf_counter()
            say(f"search: {data.name}: {len(data.queries):,} queries, {len(data.corpus):,} documents")
            search_results[data.name] = score_search(
                model, data, batch_size=batch_size, precision=precision, show_progress_bar=show_progress_bar
            )
            timing[f"search_{data.name}"] = time.perf_counter() - tick
    pairs_results: dict[str, dict] = {}
    if pairs_tasks:
        tick = time.perf_counter()
        say(f"pairs: {', '.join(f'{t.name} ({t.pairs:,} pairs)' for t in pairs_tasks)}")
        pairs_results = score_sts_tasks(
            model,
            pairs_tasks,
            batch_size=batch_size,
            precision=precision,
            bootstrap=bootstrap,
            seed=seed,
            show_progress_bar=show_progress_bar,
        )
        timing["pairs"] = time.perf_counter() - tick
    if use_mteb and bootstrap:
        say("note: --bootstrap applies to lwap's own scorer only; ignored with mteb")

    sts_results = {name: sts_results[name] for name in sts_names}  # table order
    geometry_tasks = [t for t in sts_tasks if t.name == GEOMETRY_TASK]
    geometry = (
        _geometry(model, geometry_tasks[0], vectors, batch_size=batch_size, precision=precision)
        if geometry_tasks
        else None
    )
    timing["total"] = time.perf_counter() - started
    results: dict[str, Any] = {
        "model": {
            "name": label,
            "modules": [type(module).__name__ for module in model],
            "lwap_pooling": find_lwap(model) is not None,
            "embedding_dimension": model.get_embedding_dimension(),
            "max_seq_length": model.max_seq_length,
        },
        "versions": _versions(use_mteb),
        "protocol": _protocol(variant, aggregation, precision, batch_size, bootstrap, seed, use_mteb),
        "sts": sts_results,
        "sts_average": (sum(r["score"] for r in sts_results.values()) / len(sts_results))
        if sts_results
        else None,
        "search": search_results,
        "pairs": pairs_results,
        "geometry": geometry,
        "layer_attention": recorder.profile() if recorder is not None else None,
        "timing_seconds": timing,
    }
    if output_dir is not None:
        from lwap.eval.report import write_outputs

        mark_folder(claim)
        results["files"] = [str(p) for p in write_outputs(results, Path(output_dir), cosines)]
    return results


def _geometry(
    model: SentenceTransformer, task: Any, vectors: dict[str, Any], *, batch_size: int, precision: str
) -> dict[str, Any] | None:
    """Alignment, uniformity and anisotropy over STS-B test (`lwap.eval.geometry`), from the embeddings
    the STS scores used (encoded here only on the mteb path, which keeps its own). None for a set with
    no positive pair (a cut-down mirror): alignment would be undefined, so no geometry is reported."""
    from lwap.eval.geometry import has_positive_pair, protocol, sts_geometry
    from lwap.eval.sts_scoring import embed_unique

    first = [p.sentences1 for p in task.subsets.values()]
    second = [p.sentences2 for p in task.subsets.values()]
    sentences1 = [s for side in first for s in side]
    sentences2 = [s for side in second for s in side]
    gold = [g for p in task.subsets.values() for g in p.scores]
    if not has_positive_pair(gold):
        return None
    missing = [s for s in dict.fromkeys([*sentences1, *sentences2]) if s not in vectors]
    if missing:
        vectors = {**vectors, **embed_unique(model, missing, batch_size=batch_size, precision=precision)}
    return {**sts_geometry(sentences1, sentences2, gold, vectors), "protocol": protocol("test")}


def _protocol(
    variant: str, aggregation: str, precision: str, batch_size: int, bootstrap: int, seed: int, use_mteb: bool
) -> dict[str, Any]:
    return {
        "engine": "mteb.evaluate (custom offline tasks)"
        if use_mteb
        else "lwap (sentence-transformers encode, scipy)",
        "scores": "x 100",
        "sts": {
            "data_variant": variant,
            "split": "test",
            "similarity": "cosine",
            "correlation": "Spearman",
            "aggregation": aggregation,
            "aggregation_meaning": {
                "all": "STS12-16: all subsets concatenated, one correlation (SimCSE)",
                "wmean": "STS12-16: per-subset correlations averaged, weighted by pair count (LWAP paper)",
            },
            "unscored_pairs": "skipped",
            "sick_r": "original release text (no SentEval-tokenized copy in the mirror)"
            if variant != "hub"
            else "mteb/sickr-sts (all 9,927 SICK pairs)",
            "average": "mean of the STS columns shown",
        },
        "search": {
            "similarity": "cosine",
            "main_metric": "nDCG@10",
            "document_text": "title + ' ' + text",
            "relevance": "graded (pytrec_eval)" if use_mteb else "binary: judgement score > 0",
            "split": "test",
        },
        "precision": precision,
        "batch_size": batch_size,
        "bootstrap": {
            "resamples": bootstrap,
            "seed": seed,
            "confidence": 0.95,
            "method": "percentile, pairs resampled",
        }
        if bootstrap and not use_mteb
        else None,
        "data_dir": _mirror_label(variant),
    }


def _mirror_label(variant: str) -> str | None:
    """The data mirror read from (None with `--data hub`, or with no mirror: each task names its files)."""
    mirror = find_data_dir()
    return str(mirror) if mirror is not None and variant != "hub" else None
