"""Issue 48's case: a user whose task is scientific-claim retrieval trains on their own data with lwap.

    python benchmarks/owntask/scifact_case.py prepare         # the user's files, the mined file (once)
    nice -n 10 python benchmarks/owntask/scifact_case.py run  # the grid, resumable: a finished run is skipped
    python benchmarks/owntask/scifact_case.py report          # docs/OWN_TASK.md from the run files
    ... --smoke                                               # the whole pipeline at a tiny budget

Pre-registered (written before any full run; the grid's numbers change nothing here):

- **The user's data.** The data mirror's SciFact train split: 809 claims with their cited abstracts. A
  seeded fifth (162 claims, `scifact_data.py`) is the user's dev folder, in BEIR layout: those claims,
  their judgements, and a corpus of the abstracts they cite plus a seeded sample of the others, 1,000 in
  all. The other 647 claims give one (claim, cited abstract) pair per judgement: `pairs.csv`. The 300 test
  claims are not read until `lwap eval` scores the kept models.
- **Mined negatives.** `lwap mine pairs.csv --model sentence-transformers/all-MiniLM-L6-v2 --corpus
  <the whole SciFact corpus>`, its defaults (one negative: the most similar candidate of the whole corpus
  past a 5% relative margin to the positive, the claim's own cited abstracts never one), fp32, 256 tokens:
  `mined.csv` (a pair with no candidate past the margin is left out: the run files count the rows).
- **Training.** Supervised SimCSE (`lwap train`, in-batch negatives, τ 0.05) from all-MiniLM-L6-v2 on
  `pairs.csv` (no hard negatives) or `mined.csv` (one each), poolers `lwap` with `lwap_start: native`,
  `mean` (the backbone's own) and the paper's `lwap` (random head). Budget, the same for every run
  (`BUDGET`): 2 epochs of batch 32 (about 44 steps), lr 2e-5 linear, bf16, 128 tokens in training, seeds
  0 1 2.
- **Selection.** The dev set is evaluated before training, every 10 steps and at the end; the best step is
  kept (step 0 competes): `eval.dev: <the dev folder>` (nDCG@10; its corpus encoded at 128 tokens in bf16 per
  evaluation) against `eval.dev: stsb` (STS-B dev Spearman, lwap's default, as SimCSE).
- **Scores.** Each kept model by `lwap eval` (fp32): SciFact test nDCG@10 (300 claims, the whole corpus)
  and the 7 STS tasks (SentEval data, Spearman × 100, their average), and the untouched backbone once.
- **Read as.** Per pooler and negatives, the paired difference (same seed, same training) between the
  model kept by the dev folder and the one kept by STS-B dev, on SciFact test (what the user gains) and on
  the STS average (what it costs elsewhere), mean ± sd over the 3 seeds; likewise mined against no
  negatives. A difference is *beyond the seed spread* when all three paired differences have its sign,
  else *within* it. Reported whichever way it falls.

Runs write small JSON files to benchmarks/results/owntask/runs/ (the models, logs and checkpoints stay in
`--work`, default outputs/owntask); `report` writes docs/OWN_TASK.md. Two runs whose kept models have
identical weights (both dev sets kept the same step) share one evaluation: the file says so.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: the repository root on sys.path, as `python -m` would
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import REPO
from benchmarks.owntask.case_reading import SELECTION_WORDS, paired, same_model, spread, summary, verdict
from benchmarks.owntask.scifact_data import UserFiles, make_files, scifact_folder

RESULTS = REPO / "benchmarks" / "results" / "owntask"
DOC = REPO / "docs" / "OWN_TASK.md"
BACKBONE = "sentence-transformers/all-MiniLM-L6-v2"
POOLERS = {
    "lwap-native": {"pooling": "lwap", "lwap_start": "native"},
    "mean": {"pooling": "mean"},
    "lwap": {"pooling": "lwap"},
}
NEGATIVES = ("none", "mined")
SELECTIONS = ("dev", "stsb")
SEEDS = (0, 1, 2)
CASE_RUNS = len(POOLERS) * len(NEGATIVES) * len(SELECTIONS) * len(SEEDS)
STS = ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr")
BUDGET = {
    "epochs": 2,
    "per_device_batch_size": 32,
    "learning_rate": 2e-5,
    "max_seq_length": 128,
    "eval_steps": 10,
    "dev_max_seq_length": 128,
    "mine_max_seq_length": 256,
}
SMOKE = {**BUDGET, "max_steps": 2, "eval_steps": 1, "max_seq_length": 32, "dev_max_seq_length": 32}
SMOKE_DATA = {
    "max_pairs": 48,
    "dev_corpus": 60,
    "mine_max_seq_length": 32,
    "test_claims": 20,
    "test_corpus": 60,
}


class Case:
    """Where one mode (full or smoke) keeps its files, and its budget."""

    def __init__(self, work: Path, smoke: bool) -> None:
        self.smoke = smoke
        self.work = work / ("smoke" if smoke else "full")
        self.results = self.work / "results" if smoke else RESULTS
        self.budget = SMOKE if smoke else BUDGET
        self.user = UserFiles.under(self.work / "user")
        self.mined = self.work / "user" / "mined.csv"

    def run_file(self, name: str) -> Path:
        return self.results / "runs" / f"{name}.json"


def run_logged(command: list[str], log: Path) -> float:
    """Run `command`, its output appended to `log`; its wall time. SystemExit naming the log on failure."""
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with log.open("a", encoding="utf-8") as handle:
        handle.write(f"\n$ {' '.join(command)}\n")
        handle.flush()
        code = subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT, check=False).returncode
    if code != 0:
        raise SystemExit(f"failed ({code}): {' '.join(command)}; see {log}")
    return time.perf_counter() - started


def lwap(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "lwap", *arguments]


# --- prepare ---------------------------------------------------------------------------------------------


def prepare(case: Case) -> dict[str, Any]:
    """The user's files, the mined file and (smoke) a small test folder; each made once."""
    options = (
        {"max_pairs": SMOKE_DATA["max_pairs"], "dev_corpus": SMOKE_DATA["dev_corpus"]} if case.smoke else {}
    )
    files = make_files(case.user.folder, **options)
    record = case.work / "user" / "mined.json"
    if not case.mined.is_file():
        length = SMOKE_DATA["mine_max_seq_length"] if case.smoke else BUDGET["mine_max_seq_length"]
        corpus = files.dev if case.smoke else scifact_folder()  # smoke: a small corpus
        command = lwap("mine", str(files.pairs), "--model", BACKBONE, "--corpus", str(corpus))
        command += ["--output", str(case.mined), "--max-seq-length", str(length)]
        seconds = run_logged(command, case.work / "user" / "mine.log")
        write_json(record, {"command": command, "seconds": round(seconds, 1)})
    if case.smoke and not (case.work / "test").is_dir():
        _smoke_test_folder(case.work / "test")
    return json.loads(record.read_text(encoding="utf-8"))


def _smoke_test_folder(folder: Path) -> None:
    """Smoke only: a few SciFact test claims and a small corpus, so the smoke's scoring takes seconds."""
    import random

    from benchmarks.owntask.scifact_data import _write_beir
    from lwap.eval.beir_data import load_beir

    test = load_beir(scifact_folder(), "test", name="scifact-test")
    claims = sorted(test.queries)[: SMOKE_DATA["test_claims"]]
    cited = sorted({d for q in claims for d in test.qrels[q] if d in test.corpus})
    others = sorted(set(test.corpus) - set(cited))
    docs = [*cited, *random.Random(0).sample(others, SMOKE_DATA["test_corpus"] - len(cited))]
    _write_beir(folder, test, claims, docs)
    (folder / "qrels" / "dev.tsv").rename(folder / "qrels" / "test.tsv")


def write_json(path: Path, data: dict[str, Any]) -> None:
    from lwap.checks.files import write_json_atomically

    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomically(data, path)


# --- one run -----------------------------------------------------------------------------------------------


def run_name(pooler: str, negatives: str, selection: str, seed: int) -> str:
    return f"{pooler}-{negatives}-{selection}-seed{seed}"


def train_config(case: Case, pooler: str, negatives: str, selection: str, seed: int) -> dict[str, Any]:
    """The run's config, every key written out (lwap's own defaults for what the budget leaves alone)."""
    from lwap.train.config import config_from_dict

    b = case.budget
    dev = {"dev": "stsb"}
    if selection == "dev":
        dev = {"dev": str(case.user.dev), "max_seq_length": b["dev_max_seq_length"], "precision": "bf16"}
    training = {
        "epochs": b["epochs"],
        "per_device_batch_size": b["per_device_batch_size"],
        "learning_rate": b["learning_rate"],
        "precision": "bf16",
        "seed": seed,
        "logging_steps": b["eval_steps"],
        "progress_bar": False,
    }
    if "max_steps" in b:
        training["max_steps"] = b["max_steps"]
    raw = {
        "output": {"dir": str(case.work / "runs" / run_name(pooler, negatives, selection, seed))},
        "model": {"backbone": BACKBONE, "max_seq_length": b["max_seq_length"], **POOLERS[pooler]},
        "data": {
            "train": str(case.mined if negatives == "mined" else case.user.pairs),
            "hard_negative_column": "hard_neg" if negatives == "mined" else None,
        },
        "objective": {"name": "sup_simcse"},
        "training": training,
        "eval": {
            "eval_steps": b["eval_steps"],
            "keep_best": True,
            "start_competes": True,
            "batch_size": 64,
            **dev,
        },
    }
    raw["output"].update({"save_steps": b["eval_steps"], "save_total_limit": 1})
    return config_from_dict(raw, "scifact_case").to_dict()


def weights_hash(model: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(model.rglob("*.safetensors")):
        digest.update(path.relative_to(model).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def eval_tasks(case: Case) -> list[str]:
    return ["stsb", str(case.work / "test")] if case.smoke else [*STS, "scifact"]


def scores(results: dict[str, Any]) -> dict[str, Any]:
    """The figures the report reads from `lwap eval`'s results.json."""
    search = next(iter(results["search"].values()))
    return {
        "scifact": {key: search[key] for key in ("ndcg@10", "mrr@10", "recall@100")},
        "sts": {name: entry["score"] for name, entry in results["sts"].items()},
        "sts_average": results["sts_average"],
        "eval_seconds": round(results["timing_seconds"]["total"], 1),
    }


def evaluate(case: Case, model: str, out: Path, log: Path) -> dict[str, Any]:
    if not (out / "results.json").is_file():
        command = lwap("eval", model, "--tasks", *eval_tasks(case), "--output", str(out), "--no-progress")
        run_logged(command + (["--max-seq-length", "64"] if case.smoke else []), log)
    return scores(json.loads((out / "results.json").read_text(encoding="utf-8")))


def one_run(case: Case, pooler: str, negatives: str, selection: str, seed: int) -> None:
    from lwap.train.config import config_from_dict, dump_config
    from lwap.train.outputs import is_finished, latest_complete_checkpoint

    name = run_name(pooler, negatives, selection, seed)
    if case.run_file(name).is_file():
        return
    config = train_config(case, pooler, negatives, selection, seed)
    out = Path(config["output"]["dir"])
    log = out.parent / f"{name}.log"
    started = time.perf_counter()
    if not is_finished(out):
        path = out.parent / f"{name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dump_config(config_from_dict(config, name)), encoding="utf-8")
        again = ["--resume"] if latest_complete_checkpoint(out) else (["--overwrite"] if out.exists() else [])
        print(f"{name}: training", flush=True)
        run_logged(lwap("train", str(path), *again), log)
    summary = json.loads((out / "train_summary.json").read_text(encoding="utf-8"))
    digest = weights_hash(out / "model")
    twin = next((r for r in load_runs(case) if r.get("weights_sha256") == digest and r["name"] != name), None)
    if twin is not None:  # the same kept weights: the same scores
        figures, reused = (
            {k: twin[k] for k in ("scifact", "sts", "sts_average", "eval_seconds")},
            twin["name"],
        )
    else:
        print(f"{name}: scoring", flush=True)
        figures, reused = evaluate(case, str(out / "model"), out / "eval", log), None
    keep = ("steps", "best_step", "final_model_step", "dev_set", "dev_metric", "dev_score_before")
    train = {key: summary.get(key) for key in keep}
    train.update(
        dev_scores_by_step=summary["dev_scores_by_step"],
        wall_seconds=summary["wall_time_seconds"],
        train_examples=summary["train_examples"],
    )
    result = {
        "name": name,
        "pooler": pooler,
        "negatives": negatives,
        "selection": selection,
        "seed": seed,
        "train": train,
        **figures,
        "weights_sha256": digest,
        "eval_reused_from": reused,
        "seconds": round(time.perf_counter() - started, 1),
        "budget": case.budget,
        "smoke": case.smoke,
    }
    write_json(case.run_file(name), result)
    print(f"{name}: SciFact nDCG@10 {result['scifact']['ndcg@10']:.2f}, STS avg {result['sts_average']:.2f}")


def baseline(case: Case) -> None:
    path = case.results / "runs" / "backbone.json"
    if path.is_file():
        return
    out = case.work / "backbone-eval"
    figures = evaluate(case, BACKBONE, out, case.work / "backbone-eval.log")
    write_json(path, {"name": "backbone", "model": BACKBONE, **figures, "smoke": case.smoke})


def load_runs(case: Case) -> list[dict[str, Any]]:
    folder = case.results / "runs"
    runs = (
        [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))]
        if folder.is_dir()
        else []
    )
    return [r for r in runs if r["name"] != "backbone"]


def run(case: Case, poolers: list[str], seeds: list[int]) -> None:
    prepare(case)
    baseline(case)
    for seed in seeds:
        for pooler in poolers:
            for negatives in NEGATIVES:
                for selection in SELECTIONS:
                    one_run(case, pooler, negatives, selection, seed)


# --- size ------------------------------------------------------------------------------------------------


def size(case: Case, steps: int) -> dict[str, Any]:
    """Measure what one run costs and estimate the grid: a `steps`-step training of lwap-native on the pairs
    kept by the dev folder (its dev evaluated before and after), and the backbone's scoring (the
    grid's baseline file, so not wasted). Training and scoring times scale to the budget's steps and dev
    evaluations; runs whose kept weights match another's share its scoring, which the estimate ignores."""
    make_files(case.user.folder)  # not the mined file: this run trains on the pairs
    baseline(case)
    scoring = json.loads((case.results / "runs" / "backbone.json").read_text(encoding="utf-8"))[
        "eval_seconds"
    ]
    config = train_config(case, "lwap-native", "none", "dev", 0)
    config["training"]["max_steps"] = steps
    config["eval"]["eval_steps"] = config["output"]["save_steps"] = (
        steps  # two dev evaluations: 0 and the end
    )
    out = case.work / "size" / "run"
    config["output"].update(dir=str(out), overwrite=True)
    from lwap.train.config import config_from_dict, dump_config

    path = case.work / "size" / "run.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_config(config_from_dict(config, "size")), encoding="utf-8")
    run_logged(lwap("train", str(path)), case.work / "size" / "run.log")
    summary = json.loads((out / "train_summary.json").read_text(encoding="utf-8"))
    evaluations = len(summary["dev_scores_by_step"])
    per_eval = summary["eval_seconds"] / max(1, evaluations)  # the loop's timer holds step 0's evaluation too
    per_step = (summary["train_loop_seconds"] - summary["eval_seconds"]) / steps
    examples = summary["train_examples"]
    budget_steps = int(case.budget["epochs"] * (examples // case.budget["per_device_batch_size"]))
    budget_evals = (
        budget_steps // case.budget["eval_steps"] + 1 + bool(budget_steps % case.budget["eval_steps"])
    )
    training = per_step * budget_steps + per_eval * budget_evals + 30  # + loading and saving
    estimate = {
        "measured": {
            "steps": steps,
            "seconds_per_step": round(per_step, 1),
            "seconds_per_dev_evaluation": round(per_eval, 1),
            "scoring_seconds": scoring,
            "load_average": os.getloadavg(),
        },
        "budget_steps": budget_steps,
        "budget_dev_evaluations": budget_evals,
        "run_seconds": round(training + scoring),
        "runs": CASE_RUNS,
        "grid_hours": round(CASE_RUNS * (training + scoring) / 3600, 1),
    }
    write_json(case.results / "size.json", estimate)
    return estimate


# --- report ------------------------------------------------------------------------------------------------


def _cost(case: Case) -> list[str]:
    """What one run and the grid cost, from `size` (size.json), and mining's cost (mine_cost.json)."""
    lines = ["## Cost", ""]
    size_file = case.results / "size.json"
    if size_file.is_file():
        size = json.loads(size_file.read_text(encoding="utf-8"))
        m = size["measured"]
        lines.append(
            f"Measured by `scifact_case.py size` ({m['steps']} training steps of lwap-native on the "
            f"pairs, kept by the dev folder, and the untouched backbone's scoring), on 2 CPUs shared with "
            f"other jobs (load average {m['load_average'][1]:.1f}): {m['seconds_per_step']:.1f} s a training "
            "step, "
            f"{m['seconds_per_dev_evaluation']:.1f} s a dev-folder evaluation (1,000 documents, 128 tokens, "
            f"bf16), {m['scoring_seconds'] / 60:.0f} min to score a model (7 STS tasks and SciFact test, "
            f"fp32). A run of the budget ({size['budget_steps']} steps, {size['budget_dev_evaluations']} dev "
            f"evaluations, its scoring) about {size['run_seconds'] / 60:.0f} min; the grid's {size['runs']} "
            f"runs about {size['grid_hours']:.0f} h at that load, less where two runs keep identical weights "
            "and share one scoring, and less on a quiet machine."
        )
        lines.append("")
    runs = load_runs(case)
    if runs:
        training = statistics.median(r["train"]["wall_seconds"] for r in runs) / 60
        scored = [r["eval_seconds"] for r in runs if not r.get("eval_reused_from")]
        scoring = f", scoring {statistics.median(scored) / 60:.1f} min" if scored else ""
        so_far = " made so far" * (len(runs) < CASE_RUNS)
        lines += [
            f"The {len(runs)} runs{so_far}, as they measured themselves (medians): training "
            f"{training:.1f} min (its dev evaluations included){scoring}.",
            "",
        ]
    mine_file = case.results / "mine_cost.json"
    if mine_file.is_file() and not case.smoke:
        mined = json.loads(mine_file.read_text(encoding="utf-8"))
        figures = "; ".join(
            f"{r['precision']} at {r['max_seq_length']} tokens {r['seconds']:.0f} s, peak "
            f"{r['peak_rss_mib']:,.0f} MiB"
            for r in mined["runs"]
        )
        lines += [
            f"`lwap mine` on the {mined['pairs']} pairs and the whole corpus (`mine_cost.py`): {figures}.",
            "",
        ]
    return lines if len(lines) > 2 else []


def report_text(case: Case) -> str:
    runs = load_runs(case)
    base_file = case.results / "runs" / "backbone.json"
    base = json.loads(base_file.read_text(encoding="utf-8")) if base_file.is_file() else None
    mode = " (smoke: a tiny budget, not results)" if case.smoke else ""
    lines = [
        f"# Your own task: SciFact claim retrieval{mode}",
        "",
        "Issue 48's case: a user whose task is scientific-claim retrieval brings SciFact's training claims, "
        "keeps a fifth as their dev folder, mines hard negatives with `lwap mine`, trains with `lwap train` "
        "keeping the checkpoint their dev folder picks (`eval.dev`), and compares it with lwap's default "
        "selection by STS-B dev. Generated by `python benchmarks/owntask/scifact_case.py report` from "
        "`benchmarks/results/owntask/runs/`; how to train on your own data: "
        "[TRAINING.md](TRAINING.md#train-on-your-own-data).",
        "",
        "## Pre-registration",
        "",
        __doc__.split("Pre-registered")[1].split("Runs write")[0].split("\n", 1)[1].strip(),
        "",
        "## Commands",
        "",
        "```bash",
        "python benchmarks/owntask/scifact_case.py prepare",
        "nice -n 10 python benchmarks/owntask/scifact_case.py run     # resumable",
        "python benchmarks/owntask/scifact_case.py report",
        "python benchmarks/owntask/mine_cost.py                       # lwap mine's time and memory",
        "```",
        "",
        *_cost(case),
        "## Results",
        "",
    ]
    if not runs and base is None:
        lines += ["No runs yet: the grid has not been run (the commands above make it).", ""]
        return "\n".join(lines)
    lines += [
        "SciFact test nDCG@10 and the 7-task STS average (× 100), mean ± sd over seeds; kept step: the steps "
        "each seed kept (0: no trained step beat the model before training, which for `lwap-native` and "
        "`mean` is the untouched backbone).",
        "",
        "| pooler | negatives | kept by | seeds | kept step | SciFact nDCG@10 | STS avg. |",
        "| --- | --- | --- | ---: | --- | ---: | ---: |",
    ]
    if base is not None:
        lines.append(
            f"| untouched {BACKBONE.split('/')[-1]} | — | — | — | — | {base['scifact']['ndcg@10']:.2f} | "
            f"{base['sts_average']:.2f} |"
        )
    for pooler in POOLERS:
        for negatives in NEGATIVES:
            for selection in SELECTIONS:
                group = [
                    r
                    for r in runs
                    if (r["pooler"], r["negatives"], r["selection"]) == (pooler, negatives, selection)
                ]
                if not group:
                    continue
                kept = ", ".join(
                    str(r["train"]["final_model_step"]) for r in sorted(group, key=lambda r: r["seed"])
                )
                search = spread([r["scifact"]["ndcg@10"] for r in group])
                sts = spread([r["sts_average"] for r in group])
                cells = (pooler, negatives, SELECTION_WORDS[selection], str(len(group)), kept, search, sts)
                lines.append("| " + " | ".join(cells) + " |")
    if not runs:
        lines += ["", "No grid runs yet: only the backbone is scored (the commands above make the rest).", ""]
        return "\n".join(lines)
    lines += [
        "",
        "What keeping the dev folder's checkpoint (instead of STS-B dev's) gains on SciFact test and costs "
        "on STS; and what mined negatives add. Paired by seed: mean ± sd of the differences.",
        "",
        "| pooler | comparison | Δ SciFact nDCG@10 | reading | Δ STS avg. | reading |",
        "| --- | --- | ---: | --- | ---: | --- |",
    ]
    negatives_words = {"none": "no negatives", "mined": "mined negatives"}
    comparisons = [
        (f"dev folder − STS-B dev, {negatives_words[n]}", (n, "dev"), (n, "stsb")) for n in NEGATIVES
    ] + [(f"mined − none, kept by {SELECTION_WORDS[s]}", ("mined", s), ("none", s)) for s in SELECTIONS]
    for pooler in POOLERS:
        for label, a, b in comparisons:
            search = paired(runs, pooler, ("scifact",), a, b)
            sts = paired(runs, pooler, ("sts",), a, b)
            if search:
                same = same_model(runs, pooler, a, b)  # both kept the same weights: no comparison
                words = ("the same model",) * 2 if same else (verdict(search), verdict(sts))
                cells = (pooler, label, spread(search), words[0], spread(sts), words[1])
                lines.append("| " + " | ".join(cells) + " |")
    seconds = [r["seconds"] for r in runs if not r.get("eval_reused_from")]
    done = len(runs) >= CASE_RUNS or case.smoke
    status = "" if done else f" of {CASE_RUNS} planned (the grid runs seed by seed)"
    wall = f"wall time per run (training + scoring) {spread(seconds)} s"
    lines += ["", f"{len(runs)} runs{status}; {wall}.", ""]
    lines += summary(runs, base, tuple(POOLERS), NEGATIVES, len(SEEDS))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("prepare", "size", "run", "report"))
    parser.add_argument("--smoke", action="store_true", help="the whole pipeline at a tiny budget")
    parser.add_argument("--work", type=Path, default=REPO / "outputs" / "owntask")
    parser.add_argument("--poolers", nargs="+", choices=tuple(POOLERS), default=None)
    parser.add_argument("--seeds", nargs="+", type=int, default=None)
    parser.add_argument("--steps", type=int, default=4, help="size: the steps of the measured run")
    args = parser.parse_args()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    case = Case(args.work, args.smoke)
    if args.command == "prepare":
        print(json.dumps(prepare(case)))
    elif args.command == "size":
        print(json.dumps(size(case, args.steps), indent=1))
    elif args.command == "run":
        poolers = args.poolers or (["lwap-native"] if args.smoke else list(POOLERS))
        run(case, poolers, args.seeds or ([0] if args.smoke else list(SEEDS)))
    else:
        text = report_text(case)
        target = case.work / "OWN_TASK.md" if args.smoke else DOC
        from lwap.checks.files import write_text_atomically

        write_text_atomically(target, text)
        print(f"wrote {target}")


if __name__ == "__main__":
    main()
