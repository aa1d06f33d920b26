"""Re-measure the README's quick-start table: `lwap train quickstart` into a fresh folder, then `lwap eval`.

    python benchmarks/baselines/quickstart_table.py [--out outputs/quickstart-table] [--threads N]
        [--skip-backbone]

Runs, each as its own process (as a user runs them): `lwap train quickstart` into OUT/quickstart
(--overwrite: a fresh run, never a resumed one), `lwap eval OUT/quickstart/model` and, unless
--skip-backbone, `lwap eval sentence-transformers/all-MiniLM-L6-v2` (fp32, the default protocol). Then
prints the README's table rows (same header and row format as README.md's "Quick start" table), what
differs from the rows README.md has now, and what it ran on: the torch thread count the processes got
(OMP_NUM_THREADS=N with --threads), CPUs, load average, versions, data source, wall times. Writes
OUT/quickstart_table.json and OUT/quickstart_table.md.

The STS-B dev column is the figure `lwap train` prints (the trainer's evaluation at the kept step; the
backbone's is the step-0 score, which with `lwap_start: native` is the backbone's own sentence vector),
as README.md has always reported it; the saved model and the backbone are also rescored on STS-B dev in
fp32 outside the trainer, recorded beside it. About 15-20 minutes on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: the repository root on sys.path, as `python -m` would
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import REPO
from benchmarks.speed.speedbench.machine import machine_info

BACKBONE = "sentence-transformers/all-MiniLM-L6-v2"
STS_COLUMNS = (  # results.json "sts" key → README column
    ("sts12", "STS12"),
    ("sts13", "STS13"),
    ("sts14", "STS14"),
    ("sts15", "STS15"),
    ("sts16", "STS16"),
    ("stsb", "STS-B"),
    ("sickr", "SICK-R"),
)
HEADER = (
    "| model | STS-B dev | "
    + " | ".join(label for _, label in STS_COLUMNS)
    + " | Avg. (7 STS) | SciFact nDCG@10 |"
)
SEPARATOR = "| --- |" + " ---: |" * (len(STS_COLUMNS) + 3)
BACKBONE_LABEL = "untouched all-MiniLM-L6-v2 (its mean pooling)"
QUICKSTART_LABEL = "quick start, native start (kept checkpoint: step {step})"


def table_row(label: str, dev_spearman: float, results: dict[str, Any]) -> str:
    """One README row: STS-B dev to 4 decimals (a 0-1 Spearman), `lwap eval`'s scores (x100) to 2."""
    sts = results["sts"]
    missing = [key for key, _ in STS_COLUMNS if key not in sts]
    if "scifact" not in results.get("search", {}):
        missing.append("scifact")
    if missing:
        raise ValueError(f"lwap eval results lack {', '.join(missing)}: run it with the default --tasks all")
    cells = [f"{dev_spearman:.4f}", *(f"{sts[key]['score']:.2f}" for key, _ in STS_COLUMNS)]
    average = sum(sts[key]["score"] for key, _ in STS_COLUMNS) / len(STS_COLUMNS)
    cells += [f"{average:.2f}", f"{results['search']['scifact']['ndcg@10']:.2f}"]
    return f"| {label} | " + " | ".join(cells) + " |"


def readme_table(text: str) -> list[str]:
    """The rows of README.md's quick-start table (the lines after its header and separator)."""
    lines = text.splitlines()
    if HEADER not in lines:
        raise ValueError(f"README.md has no table with the header {HEADER!r}")
    start = lines.index(HEADER) + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows


def cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def differences(old: str, new: str) -> str:
    """'STS-B dev 0.8728 → 0.8742, ...' between two rows of the table ('same' when equal)."""
    headers = cells(HEADER)
    changed = [
        f"{header} {a} → {b}"
        for header, a, b in zip(headers, cells(old), cells(new), strict=True)
        if a != b and header != "model"
    ]
    label_old, label_new = cells(old)[0], cells(new)[0]
    if label_old != label_new:
        changed.insert(0, f"label {label_old!r} → {label_new!r}")
    return ", ".join(changed) or "same"


def report(record: dict[str, Any], summary: dict[str, Any], results: dict[str, Any], readme: str) -> str:
    """The table rows, what they change in README.md's, and what they ran on (Markdown); the rows and
    the changes also go into `record`. `results`: `lwap eval`'s results.json by "quickstart" and,
    where measured, "backbone"; `summary`: the run's train_summary.json."""
    rows = {}
    if "backbone" in results:
        rows["backbone"] = table_row(BACKBONE_LABEL, summary["dev_score_before"], results["backbone"])
    label = QUICKSTART_LABEL.format(step=summary["final_model_step"])
    rows["quickstart"] = table_row(label, summary["final_model_dev_score"], results["quickstart"])
    old = {
        ("backbone" if row.startswith(f"| {BACKBONE_LABEL} |") else "quickstart"): row
        for row in readme_table(readme)
    }
    record["rows"] = list(rows.values())
    record["against_readme"] = {
        kind: differences(old[kind], row) if kind in old else "not in README" for kind, row in rows.items()
    }
    m, seconds = record["machine"], record["seconds"]
    fp32 = ", ".join(f"{k} {v:.4f}" for k, v in record["fp32_dev_spearman"].items())
    ran_on = (
        f"Measured {record['date']} (`python benchmarks/baselines/quickstart_table.py`): "
        f"{m['torch_threads']} torch threads on {m['cores']} CPUs (load average "
        f"{record['load_average_before'][0]} before, {record['load_average_after'][0]} after); "
        f"torch {m['torch']}, transformers {m['transformers']}, "
        f"sentence-transformers {m['sentence_transformers']}, lwap {m['lwap']}; training data "
        f"{record['train']['data']}; training {seconds['train']:.0f} s wall. STS-B dev rescored in fp32 "
        f"outside the trainer: {fp32}."
    )
    record["ran_on"] = ran_on
    changes = "\n".join(f"- {kind}: {change}" for kind, change in record["against_readme"].items())
    return "\n".join([HEADER, SEPARATOR, *rows.values(), "", ran_on, "", "Against README.md now:", changes])


def run(command: list[str], env: dict[str, str], log: Path) -> float:
    """Run one command (output to `log` and the terminal's stderr); its wall seconds."""
    print("$ " + " ".join(command), file=sys.stderr, flush=True)
    started = time.perf_counter()
    with log.open("w", encoding="utf-8") as handle:
        done = subprocess.run(
            command, cwd=REPO, env=env, stdout=handle, stderr=subprocess.STDOUT, check=False
        )
    if done.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace")[-2000:]
        sys.exit(f"quickstart_table: {' '.join(command)} failed (exit {done.returncode}); {log}:\n{tail}")
    return round(time.perf_counter() - started, 1)


def probe(env: dict[str, str]) -> dict[str, Any]:
    """What a fresh process gets here: torch's thread count and the versions."""
    code = (
        "import json, torch, transformers, sentence_transformers, lwap; print(json.dumps({"
        "'torch_threads': torch.get_num_threads(), 'torch': torch.__version__, "
        "'transformers': transformers.__version__, "
        "'sentence_transformers': sentence_transformers.__version__, 'lwap': lwap.__version__}))"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def fp32_dev(model: str) -> float:
    """STS-B dev Spearman of a saved model or backbone, fp32, outside the trainer."""
    from lwap import load_model
    from lwap.eval.evaluators import stsb_evaluator

    return float(stsb_evaluator("dev")(load_model(model))["stsb-dev_spearman_cosine"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "outputs/quickstart-table"))
    parser.add_argument("--threads", type=int, default=None, help="OMP_NUM_THREADS for every process")
    parser.add_argument("--skip-backbone", action="store_true", help="do not re-evaluate the backbone")
    args = parser.parse_args(argv)

    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    if args.threads is not None:
        env["OMP_NUM_THREADS"] = str(args.threads)
    lwap = [sys.executable, "-m", "lwap"]
    record: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {  # torch's threads and the versions: a fresh process's, as `lwap` gets them (probe)
            **machine_info(),
            "OMP_NUM_THREADS": env.get("OMP_NUM_THREADS"),
            "LWAP_DATA_DIR": env.get("LWAP_DATA_DIR"),
            **probe(env),
        },
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
        "seconds": {},
    }
    run_dir = out / "quickstart"
    record["seconds"]["train"] = run(
        [*lwap, "train", "quickstart", "--overwrite", "--set", f"output.dir={run_dir}",
         "--set", "training.progress_bar=false"],
        env,
        out / "train.log",
    )  # fmt: skip
    summary = json.loads((run_dir / "train_summary.json").read_text(encoding="utf-8"))
    evals = {"quickstart": run_dir / "model"}
    if not args.skip_backbone:
        evals["backbone"] = BACKBONE
    results = {}
    for name, model in evals.items():
        folder = out / f"eval-{name}"
        record["seconds"][f"eval_{name}"] = run(
            [*lwap, "eval", str(model), "--output", str(folder), "--no-progress"],
            env,
            out / f"eval-{name}.log",
        )
        results[name] = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    record["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    record["train"] = {
        key: summary[key]
        for key in (
            "dev_score_before",
            "final_model_step",
            "final_model_dev_score",
            "dev_scores_by_step",
            "wall_time_seconds",
            "sentences_per_second",
            "train_examples",
            "versions",
        )
    }
    record["train"]["data"] = summary.get("config", {}).get("data", {}).get("train")
    record["fp32_dev_spearman"] = {"quickstart": fp32_dev(str(run_dir / "model"))}
    if "backbone" in results:
        record["fp32_dev_spearman"]["backbone"] = fp32_dev(BACKBONE)
    text = report(record, summary, results, (REPO / "README.md").read_text(encoding="utf-8"))
    (out / "quickstart_table.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    (out / "quickstart_table.md").write_text(text + "\n", encoding="utf-8")
    print(text)
    print(f"\nwrote {out / 'quickstart_table.json'} and {out / 'quickstart_table.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
