"""The path error matrix: every CLI argument, config key and variable that names a file or folder, crossed
with every way a path goes wrong. `tests/test_path_matrix.py` runs each cell; this module declares them and
writes their list into docs/RELIABILITY.md (`python tests/path_matrix.py` rewrites that section; a test
fails while it is out of date).

A new argparse option or config key fails `test_every_option_and_key_is_classified` until it is added
here: to TARGETS if it names a path (one row; its cells follow from its role), else to NOT_PATHS with the
reason.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "RELIABILITY.md"
BEGIN, END = "<!-- path-matrix:begin -->", "<!-- path-matrix:end -->"

INPUT_FILE, INPUT_FOLDER = "input file", "input folder"
OUTPUT_FILE, OUTPUT_FOLDER = "output file", "output folder"


@dataclass(frozen=True)
class Target:
    """One path-taking argument, config key or environment variable."""

    name: str  # how the row is shown, e.g. "encode --input"
    command: str  # the `lwap` subcommand that reads it
    where: str  # "argument" (argparse dest), "config key" (dotted), "environment"
    dest: str  # the argparse dest, the dotted config key, or the variable
    role: str  # INPUT_FILE, INPUT_FOLDER, OUTPUT_FILE or OUTPUT_FOLDER
    filename: str  # the last path component used in the cells
    holds: str  # what a valid one is
    inner: str = ""  # input folders: the file inside that the content faults (empty, not UTF-8) break
    gzip: bool = False  # reads .gz (input files) / a .gz inside (input folders)
    empty_ok: bool = False  # an empty input is valid (encode: an empty file is zero sentences)
    weights: str = ""  # model folders: the safetensors file inside that the weights faults damage
    model: str | None = None  # the model folder inside ("." itself) that the hostile-folder faults craft


TARGETS = (
    Target(
        "encode MODEL",
        "encode",
        "argument",
        "model",
        INPUT_FOLDER,
        "model",
        "a saved model folder",
        inner="modules.json",
        weights="model.safetensors",
        model=".",
    ),
    Target(
        "encode --input",
        "encode",
        "argument",
        "input",
        INPUT_FILE,
        "in.txt",
        "a text file, one sentence a line (.gz too)",
        gzip=True,
        empty_ok=True,
    ),
    Target("encode --output", "encode", "argument", "output", OUTPUT_FILE, "out.npy", "a .npy file to write"),
    Target(
        "truncate MODEL",
        "truncate",
        "argument",
        "model",
        INPUT_FOLDER,
        "model",
        "a saved model folder",
        inner="modules.json",
        weights="model.safetensors",
        model=".",
    ),
    Target(
        "truncate OUTPUT", "truncate", "argument", "output", OUTPUT_FOLDER, "small", "a new or empty folder"
    ),
    Target(
        "eval MODEL", "eval", "argument", "model", INPUT_FOLDER, "model", "a saved model folder",
        inner="modules.json",
        weights="1_LayerwiseAttentionPooling/model.safetensors",  # the pooling head's, this time
        model=".",
    ),
    Target(
        "eval --tasks PATH",
        "eval",
        "argument",
        "tasks",
        INPUT_FOLDER,
        "beir",
        "a BEIR-layout folder",
        inner="corpus.jsonl",
        gzip=True,
    ),
    Target("eval --output", "eval", "argument", "output", OUTPUT_FOLDER, "results", "a folder to write"),
    Target(
        "$LWAP_DATA_DIR (eval --tasks stsb)",
        "eval",
        "environment",
        "LWAP_DATA_DIR",
        INPUT_FOLDER,
        "data",
        "the data mirror folder",
        inner="stsb/senteval-tokenized/sts-test.csv",
    ),
    Target(
        "card RUN",
        "card",
        "argument",
        "run_dir",
        INPUT_FOLDER,
        "run",
        "a finished lwap train run's folder",
        inner="train_summary.json",
        model="model",
    ),
    Target("train CONFIG", "train", "argument", "config", INPUT_FILE, "config.yaml", "a YAML config file"),
    Target(
        "train --resume CHECKPOINT",
        "train",
        "argument",
        "resume",
        INPUT_FOLDER,
        "checkpoint-1",
        "a complete checkpoint folder",
        inner="trainer_state.json",
        weights="model.safetensors",
        model=".",
    ),
    Target("output.dir", "train", "config key", "output.dir", OUTPUT_FOLDER, "run", "a folder to write"),
    Target(
        "model.backbone",
        "train",
        "config key",
        "model.backbone",
        INPUT_FOLDER,
        "backbone",
        "a Hugging Face model folder",
        inner="config.json",
        weights="model.safetensors",
        model=".",
    ),
    Target(
        "data.train",
        "train",
        "config key",
        "data.train",
        INPUT_FILE,
        "train.txt",
        "a text file, one sentence a line (.gz too)",
        gzip=True,
    ),
    Target(
        "eval.dev",
        "train",
        "config key",
        "eval.dev",
        INPUT_FILE,
        "dev.tsv",
        "a scored pairs file (.csv/.tsv, .gz too) or a BEIR folder",
        gzip=True,
    ),
    Target(
        "mine PAIRS",
        "mine",
        "argument",
        "pairs",
        INPUT_FILE,
        "pairs.csv",
        "a pairs file lwap train reads (CSV/TSV with a header, .gz too)",
        gzip=True,
    ),
    Target(
        "mine --model",
        "mine",
        "argument",
        "model",
        INPUT_FOLDER,
        "model",
        "a saved model folder",
        inner="modules.json",
        weights="model.safetensors",
        model=".",
    ),
    Target(
        "mine --corpus",
        "mine",
        "argument",
        "corpus",
        INPUT_FILE,
        "corpus.txt",
        "a file of texts, one a line (.gz too), or a BEIR folder",
        gzip=True,
    ),
    Target("mine --output", "mine", "argument", "output", OUTPUT_FILE, "mined.csv", "a .csv file to write"),
)

# every argparse dest and config key that names no local path, with why
NOT_PATHS: dict[str, str] = {
    "help": "prints help",
    "version": "prints the version",
    "command": "the subcommand",
    "encode batch_size": "a number",
    "encode normalize": "a flag",
    "encode precision": "a choice",
    "encode backend": "a choice",
    "encode max_seq_length": "a number",
    "encode device": "a device name",
    "encode no_progress": "a flag",
    "encode overwrite": "a flag (replace an existing --output)",
    "encode dims": "a number",
    "encode layers": "a number",
    "truncate dims": "a number",
    "truncate overwrite": "a flag (replace lwap's model in OUTPUT; adopt a folder lwap did not make)",
    "eval overwrite": "a flag (adopt an --output folder lwap did not make, keeping its entries)",
    "truncate layers": "a number",
    "truncate trust_remote_code": "a flag (the model folder's own code: the hostile-folder columns below)",
    "encode trust_remote_code": "a flag (the model folder's own code: the hostile-folder columns below)",
    "eval trust_remote_code": "a flag (the model folder's own code: the hostile-folder columns below)",
    "card trust_remote_code": "a flag (the model folder's own code: the hostile-folder columns below)",
    "eval aggregation": "a choice",
    "eval variant": "a choice (--data senteval|raw|hub); the files come from $LWAP_DATA_DIR",
    "eval bootstrap": "a number",
    "eval pair_scores": "a flag (pair_scores.npz goes in --output, a row of its own)",
    "eval seed": "a number",
    "eval mteb": "a flag",
    "eval batch_size": "a number",
    "eval precision": "a choice",
    "eval max_seq_length": "a number",
    "eval device": "a device name",
    "eval no_progress": "a flag",
    "eval pairs_columns": "column names (of a pairs file given in --tasks)",
    "eval pairs_column_names": "column names (of a headerless pairs file given in --tasks)",
    "mine overwrite": "a flag (replace an existing --output)",
    "mine trust_remote_code": "a flag (the model folder's own code: the hostile-folder columns below)",
    "mine anchor_column": "a column name",
    "mine positive_column": "a column name",
    "mine corpus_column": "a column name",
    "mine num_negatives": "a number",
    "mine range_min": "a number",
    "mine range_max": "a number",
    "mine relative_margin": "a number",
    "mine absolute_margin": "a number",
    "mine max_score": "a number",
    "mine sampling": "a choice",
    "mine seed": "a number",
    "mine batch_size": "a number",
    "mine precision": "a choice",
    "mine max_seq_length": "a number",
    "mine device": "a device name",
    "compare compare_command": "the subcommand (run/report/figure; their folder options and --rows, a "
    "rows file or a shipped one's name, are checked in "
    "tests/test_compare_run.py::test_user_errors_exit_2_with_one_line_before_any_cell)",
    "card eval": "a flag",
    "card tasks": "task names, or a BEIR folder read as `eval --tasks PATH` reads it",
    "card batch_size": "a number",
    "card precision": "a choice",
    "train overrides": "--set KEY=VALUE sets config keys; the path-taking keys have their own rows",
    "train overwrite": "a flag",
    "train list": "a flag (lists the configs shipped with lwap)",
    "train show_config": "a flag (prints every config key with its default)",
    "train device": "a device name",
    "output.overwrite": "a flag",
    "output.save_steps": "a number",
    "output.save_total_limit": "a number",
    "model.pooling": "a choice",
    "model.max_seq_length": "a number",
    "model.dropout": "a number (a rate)",
    "model.trust_remote_code": "a flag (model.backbone's own code: the hostile-folder columns below)",
    "model.lwap_layers": "numbers",
    "model.score_scale": "a choice",
    "model.weighted_layer_start": "a number",
    "model.lwap_start": "a choice",
    "model.native_pooling": "a choice (the backbone's own pooling is read from model.backbone)",
    "model.lwap_queries": "a choice",
    "model.lwap_latent_queries": "a number",
    "model.lwap_output": "a choice",
    "model.lwap_level_norm": "a choice",
    "model.mlp_at_inference": "a flag",
    "data.max_examples": "a number",
    "data.text_column": "a column name",
    "data.anchor_column": "a column name",
    "data.positive_column": "a column name",
    "data.hard_negative_column": "a column name",
    "data.hard_negative_columns": "column names",
    "data.hub_config": "a hub dataset configuration name",
    "data.hub_data_files": "a file inside a hub dataset repository, not a local path",
    "data.hub_split": "a split name",
    "data.scored_columns": "column names",
    "data.score_range": "numbers",
    "data.column_names": "column names",
    "objective.name": "a choice",
    "objective.temperature": "a number",
    "objective.hard_negative_weight": "a number",
    "objective.scored_loss": "a choice",
    "objective.matryoshka_dims": "numbers",
    "objective.matryoshka_weights": "numbers",
    "objective.depths": "numbers",
    "objective.depth_weights": "numbers",
    "objective.depth_sample": "a number",
    **dict.fromkeys(
        (
            "training.epochs",
            "training.max_steps",
            "training.dataloader_workers",
            "training.per_device_batch_size",
            "training.learning_rate",
            "training.weight_decay",
            "training.warmup_ratio",
            "training.lr_scheduler",
            "training.precision",
            "training.device",
            "training.tf32",
            "training.mini_batch_size",
            "training.seed",
            "training.drop_last",
            "training.batch_sampler",
            "training.attention",
            "training.fast_dropout",
            "training.keep_freed_memory",
            "training.length_group_size",
            "training.head_learning_rate_multiplier",
            "training.head_warmup_steps",
            "training.logging_steps",
            "training.report_to",
            "training.progress_bar",
            "eval.dev_metric",
            "eval.dev_columns",
            "eval.dev_column_names",
            "eval.max_seq_length",
            "eval.precision",
            "eval.eval_steps",
            "eval.before_training",
            "eval.keep_best",
            "eval.start_competes",
            "eval.batch_size",
        ),
        "a setting",
    ),
}

# every LWAP_* environment variable that names no path, with why
NOT_PATH_VARIABLES: dict[str, str] = dict.fromkeys(
    (
        "LWAP_MAX_JSON_BYTES",
        "LWAP_MAX_YAML_BYTES",
        "LWAP_MAX_CSV_BYTES",
        "LWAP_MAX_LINE_BYTES",
        "LWAP_MAX_STDIN_BYTES",
        "LWAP_MAX_TOKENIZER_BYTES",
        "LWAP_MAX_MODEL_BYTES",
    ),
    "a size limit (lwap.checks.limits; the oversize and huge-config columns)",
)


@dataclass(frozen=True)
class Fault:
    name: str
    what: str  # how the doc describes it
    says: str  # regex: the error line must say what was expected or found


FAULTS = (
    Fault("missing", "does not exist", r"no such|does not exist|not found|leads to no"),
    Fault(
        "wrong-kind",
        "a folder where a file is expected, or a file where a folder is",
        r"is a (file|directory)|not a folder|not found",
    ),
    Fault(
        "parent-is-file", "a parent in the path is a file", r"no such|does not exist|not found|not writable"
    ),
    Fault("unwritable", "a folder this process cannot write in", r"not writable"),
    Fault(
        "empty",
        "an empty file (input folders: an empty folder)",
        r"empty|no modules\.json|no config\.json|no such|not a complete",
    ),
    Fault(
        "not-utf8",
        "a file that is not UTF-8 (input folders: the file inside that is read)",
        r"UTF-8|malformed|not a valid JSON|not a complete",
    ),
    Fault("truncated-gzip", "a truncated .gz file", r"truncated or corrupt gzip"),
    Fault("symlink-loop", "a symbolic link to itself", r"symbolic link|no such|does not exist|not found"),
    Fault("weights-truncated", "model folders: the weights file cut in half", r"damaged weights file"),
    Fault("weights-empty", "model folders: the weights file empty (0 bytes)", r"damaged weights file"),
    Fault(
        "weights-bad-header",
        "model folders: the weights file's header overwritten (not safetensors)",
        r"damaged weights file",
    ),
    Fault(
        "half-json",
        "the JSON file inside that is read (the *not-utf8* one) cut in half",
        r"not valid JSON|not a complete",
    ),
    Fault(
        "auto-map",
        "model folders: config.json's `auto_map` names a class from a .py file in the folder, which "
        "would write a marker file when imported (transformers would ask `[y/N]` on a prompt)",
        r"auto_map names code from the folder",
    ),
    Fault(
        "pickle-weights",
        "model folders: the backbone's weights only as a pickle (`pytorch_model.bin`)",
        r"weights stored as a pickle",
    ),
    Fault(
        "path-escape",
        "model folders: a module path in modules.json that leaves the folder (`../..`)",
        r"leaves the model folder",
    ),
    Fault(
        "router-code",
        "model folders: a Router module routing to a class from a .py file in the folder",
        r"outside lwap and sentence-transformers",
    ),
    Fault("fifo", "a named pipe (FIFO) where a file is read (input folders: the file inside)", r"named pipe"),
    Fault(
        "device",
        "a link to /dev/zero where a file is read (input folders: the file inside)",
        r"character device|link out of the model folder \(to /dev/zero\)",
    ),
    Fault(
        "dangling-link",
        "a symbolic link to a path that does not exist",
        r"leads to no|does not exist|no such|not found",
    ),
    Fault(
        "oversize",
        "a file past its kind's limit (`lwap.checks.limits`): a 2 MiB YAML config, 17 MiB of JSON (the file "
        "inside that is read), or, in a file read line by line, one line past the 1 MiB line limit "
        "(gzipped where .gz is read)",
        r"more than the [\w ]+ limit|longer than the line limit",
    ),
    Fault(
        "huge-config",
        "model folders: config.json's vocabulary raised to a billion (a model of 128 GB in float32)",
        r"more than the model limit",
    ),
    Fault(
        "short-embeddings",
        "model folders: the backbone's weights with 30,000 embedding rows where config.json says 30,522",
        r"the weights do not fit the config",
    ),
    Fault("damaged-tokenizer", "model folders: tokenizer.json cut in half", r"damaged tokenizer file"),
    Fault(
        "token-past-table",
        "model folders: an added token in tokenizer.json whose id is past the embedding table",
        r"outside the embedding table",
    ),
    Fault(
        "tokenizer-outside",
        "model folders: sentence_bert_config.json's `tokenizer_name_or_path` naming a folder outside",
        r"names a tokenizer outside the model folder",
    ),
    Fault("unicode-name", "a name with spaces and non-ASCII characters (must work)", r""),
    Fault(
        "not-lwaps",
        "outputs: a folder holding a user's own file and no `.lwap-output.json` (not made by lwap), or a "
        "file already there (replaced only with `--overwrite`)",
        r"not made by lwap|already exists",
    ),
    Fault(
        "link-inside",
        "output folders: a folder lwap made, with a symbolic link to a user's file where lwap writes one "
        "(`metrics.csv`, `results.json`, `config.json`)",
        r"symbolic link",
    ),
    Fault("live-lock", "outputs: the target's lock held by a live process (a second writer)", r"in use by"),
    Fault(
        "stale-lock",
        "outputs: a lock left by a writer that died (must work: taken over, with a note naming it)",
        r"",
    ),
)
HOSTILE = (
    "auto-map",
    "pickle-weights",
    "path-escape",
    "router-code",
    "huge-config",
    "short-embeddings",
    "damaged-tokenizer",
    "token-past-table",
    "tokenizer-outside",
)
OUTPUT_FAULTS = ("not-lwaps", "link-inside", "live-lock", "stale-lock")  # what an output meets (issue 65)
READ_FAULTS = ("fifo", "device", "oversize")  # faults of what is read: an output is replaced, not read
FAULT = {fault.name: fault for fault in FAULTS}


def expectation(target: Target, fault: str) -> str:
    """'error' (exit 2, one line), 'works' (exit 0), or 'n/a: why' for a cell."""
    inputs = target.role in (INPUT_FILE, INPUT_FOLDER)
    if fault == "unicode-name":
        return "works"
    if fault in OUTPUT_FAULTS and inputs:
        return "n/a: an input is read, never claimed or locked"
    if fault == "link-inside" and target.role == OUTPUT_FILE:
        return "n/a: a file output has nothing inside"
    if fault == "stale-lock":
        return "works"
    if fault == "missing" and not inputs:
        return "n/a: a new output is the normal case (the unicode-name cell also creates missing parents)"
    if fault == "unwritable" and inputs:
        return "n/a: reading needs no write permission"
    if fault in ("empty", "not-utf8", *READ_FAULTS) and not inputs:
        return "n/a: an existing output is replaced, not read"
    if fault == "truncated-gzip" and not target.gzip:
        return "n/a: no .gz is read here" if inputs else "n/a: an output is not read"
    if fault.startswith("weights-") and not target.weights:
        return "n/a: no weights file is read here"
    if fault == "half-json" and not target.inner.endswith(".json"):
        return "n/a: no JSON file is read here" if inputs else "n/a: an output is not read"
    if fault in HOSTILE and target.model is None:
        return "n/a: no model folder is read here"
    if fault == "empty" and target.empty_ok:
        return "works"  # zero lines give a (0, dim) .npy, as encode([]) gives a (0, dim) array
    return "error"


def cells() -> list[tuple[Target, Fault, str]]:
    return [(target, fault, expectation(target, fault.name)) for target in TARGETS for fault in FAULTS]


def cell_id(target: Target, fault: Fault) -> str:
    return f"{target.name}|{fault.name}"


def doc_section() -> str:
    """The generated part of docs/RELIABILITY.md: one row per target, one column per fault."""
    table = cells()
    count = {kind: sum(1 for *_, e in table if e.startswith(kind)) for kind in ("error", "works", "n/a")}
    lines = [
        BEGIN,
        "<!-- generated by `python tests/path_matrix.py` from tests/path_matrix.py; do not edit by hand -->",
        "",
        f"{len(TARGETS)} path-taking arguments, config keys and variables × {len(FAULTS)} ways a path goes "
        f"wrong = {len(table)} cells: **{count['error']} must fail** (exit 2, one line on stderr naming the "
        "path and what was expected, no traceback, nothing left behind, nothing that existed changed), "
        f"**{count['works']} must work**, {count['n/a']} do not apply. Each cell is one case of "
        "`tests/test_path_matrix.py::test_path_cell`; `tests/test_path_matrix.py::"
        "test_every_option_and_key_is_classified` fails when an option or config key is added without a "
        "row here (or a reason it names no path). Root ignores permission bits, so under root the "
        "*unwritable* cells use a folder of `/sys` (sysfs refuses root too). A progress bar a library drew "
        "before the failure (datasets' `Generating train split`) counts as a second line. The "
        "training cells that must work run `lwap train` for real up to the optimisation loop (config "
        "read, data read, backbone loaded, checkpoint found, output folder prepared), which opens no "
        "path the user gave. The hostile-folder columns (*auto-map* to *router-code*, and *huge-config* to "
        "*tokenizer-outside*, crafted by `tests/hostile.py`) apply to every command that reads a model "
        "folder (for `card RUN`, the run's `model/`); their cells also fail if the folder's code ran (its "
        "marker file) or a prompt read stdin (closed). The *fifo*, *device* and *oversize* cells would hang "
        "or grow without bound if the file were read as it was before issue 49; each ends in one line "
        "within seconds.",
        "",
        "| path | kind | holds | " + " | ".join(f.name for f in FAULTS) + " |",
        "| --- | --- | --- | " + " | ".join("---" for _ in FAULTS) + " |",
    ]
    marks = {"error": "exit 2", "works": "works"}
    for target in TARGETS:
        row = [marks.get(expectation(target, f.name), "—") for f in FAULTS]
        if target.empty_ok:
            row[[f.name for f in FAULTS].index("empty")] = "works (0 rows)"
        lines.append(f"| `{target.name}` | {target.role} | {target.holds} | " + " | ".join(row) + " |")
    lines += ["", "Faults: " + "; ".join(f"*{f.name}*: {f.what}" for f in FAULTS) + ".", ""]
    reasons = sorted({e.removeprefix("n/a: ") for *_, e in table if e.startswith("n/a")})
    lines += ["Cells marked — do not apply: " + "; ".join(reasons) + ".", END]
    return "\n".join(lines)


def current_doc_section() -> str | None:
    text = DOC.read_text(encoding="utf-8")
    match = re.search(re.escape(BEGIN) + r".*?" + re.escape(END), text, re.S)
    return match.group(0) if match else None


def write_doc() -> None:
    text = DOC.read_text(encoding="utf-8")
    section = doc_section()
    if current_doc_section() is None:
        raise SystemExit(f"{DOC}: no {BEGIN} ... {END} section to replace")
    text = re.sub(re.escape(BEGIN) + r".*?" + re.escape(END), lambda _: section, text, flags=re.S)
    DOC.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    os.chdir(REPO)
    write_doc()
    print(f"wrote the path matrix section of {DOC.relative_to(REPO)}", file=sys.stderr)
