"""Write the GPU section of docs/BENCHMARKS.md from benchmarks/speed/gpu_check.sh's output folder.

    python benchmarks/speed/gpu_report.py OUTDIR [--md docs/BENCHMARKS.md]  # gpu_speed.json, gpu_tests.xml,
                                                                  # gpu_check.json (each where present)
    python benchmarks/speed/gpu_report.py --pending    # the section saying the run is pending

Rerunnable: the section is a function of the JSON (and the gpu tier's JUnit XML) alone.
"""

from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: the repository root on sys.path, as `python -m` would
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import REPO
from benchmarks.speed import gpu_section

COMMAND = (
    "benchmarks/speed/gpu_wheels.sh                  # once, with a package index: the wheels and tokenizer\n"
    "benchmarks/speed/gpu_check.sh --dry-run OUTDIR  # optional, on any CPU: the whole script, GPU parts "
    "skipped\n"
    "benchmarks/speed/gpu_check.sh OUTDIR            # on the GPU machine (under 9 minutes on one H200)"
)
TARGETS = (
    "`lwap train` ≥ 1.3× the stock recipe's sentences/s",
    "LWAP ≤ 5% over `cls`",
    "MFU ≥ 35% at sup 512×32",
)
VARIANTS = {
    "lwap": "`lwap train`, LWAP",
    "cls": "`lwap train`, cls",
    "stock": "sentence-transformers' SimCSE recipe",
    "plain": "plain PyTorch loop",
}


def how_to_run() -> list[str]:
    return [
        "Run on a machine with one CUDA GPU, from a checkout (it writes the log, the JSON and this section):",
        "",
        "```bash",
        *COMMAND.splitlines(),
        "```",
        "",
        "`gpu_check.sh` first checks the environment (CUDA, the versions, every import lwap training "
        "needs, the tokenizer: a broken one stops it within seconds), then runs the gpu test tier "
        "(`python -m pytest -m gpu`: bf16/fp16 steps with autocast, bf16 encode/search against fp32, "
        "fast_dropout's rate, one-process torchrun over nccl, save on GPU and reload on CPU, GradCache "
        "equal to the full batch; interrupted with SIGINT at its time limit so its JUnit file is still "
        "written, and each test limited by pytest-timeout where installed) and "
        "`benchmarks/speed/gpu_speed.py` (bert-base shape, random weights, bf16: `lwap train` against "
        "sentence-transformers' stock SimCSE recipe and a plain loop; unsupervised 64×32, supervised "
        "512×32 with and without mini-batches; "
        "then the levers CUDA graphs, torch.compile of the plain loop and of `lwap train`, each row "
        "checked to have compiled), then `python benchmarks/speed/gpu_report.py OUTDIR`. Every file is "
        "written as its stage ends, and none needs git. A test (`tests/test_gpu_benchmark.py`) runs the "
        "whole script with `--dry-run` on the CPU.",
    ]


def pending_lines() -> list[str]:
    return [
        "## GPU training (pending)",
        "",
        "Not measured yet: no GPU machine was at hand for this change. The CPU figures above say nothing "
        "about GPUs. " + how_to_run()[0],
        *how_to_run()[1:],
    ]


def tier_summary(xml_path: Path, check: dict[str, Any] | None = None) -> str:
    """One line on the gpu tier, from its JUnit file and gpu_check.sh's exit code (an interrupted tier
    with passing tests so far is not a PASS)."""
    check = check or {}
    if not xml_path.is_file():
        return f"gpu test tier: no result file (exit code {check.get('tier_exit')})"
    root = ET.parse(xml_path).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    counts = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
    passed = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    interrupted = check.get("tier_exit") == 124
    clean = counts["failures"] == counts["errors"] == 0 and passed > 0 and not interrupted
    verdict = "PASS" if clean else "**FAIL**"
    failed = [
        f"`{case.get('name')}`"
        for case in suite.iter("testcase")
        if case.find("failure") is not None or case.find("error") is not None
    ]
    extra = f"; failed: {', '.join(failed)}" if failed else ""
    if interrupted:
        extra += f"; INTERRUPTED at its {check.get('tier_limit_seconds')} s limit (later tests did not run)"
    return (
        f"gpu test tier (`pytest -m gpu`): {verdict}: {passed} passed, {counts['failures']} failed, "
        f"{counts['errors']} errors, {counts['skipped']} skipped{extra}"
    )


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def no_benchmark_lines(check: dict[str, Any], tier: str) -> list[str]:
    """The section when gpu_speed.py left no JSON: the tier's result is still worth keeping."""
    return [
        "## GPU training (no benchmark result)",
        "",
        f"`benchmarks/speed/gpu_check.sh` left no gpu_speed.json (benchmark exit code "
        f"{check.get('benchmark_exit')}, imports check exit code {check.get('imports_exit')}; commit "
        f"{check.get('commit', 'unknown')}); see its gpu_check.log.",
        "",
        tier,
        "",
        "### How to rerun",
        "",
        *how_to_run(),
    ]


def measured_lines(result: dict[str, Any], tier: str) -> list[str]:
    m = result["machine"]
    smoke = " — SMOKE RUN (tiny shapes on the CPU): not a measurement" if result.get("smoke") else ""
    if not result.get("complete", True):
        smoke += " — INCOMPLETE (the run stopped at its time limit; rows below are what it measured)"
    lines = [
        f"## GPU training ({m['device']}){smoke}",
        "",
        f"Measured by `benchmarks/speed/gpu_check.sh` on {m['date']}, commit {m['commit']}: {m['device']}, "
        f"torch {m['torch']} (CUDA {m['cuda']}), transformers {m['transformers']}, sentence-transformers "
        f"{m['sentence_transformers']}, Python {m['python']}. Backbone: bert-base shape "
        f"({result['shape']['layers']} layers, H={result['shape']['hidden']}), random weights; every row "
        f"{result['tokens']} tokens; {result['precision']}; {result['steps']} steps, the first "
        f"{result['warmup']} untimed. Measured bf16 matmul rate: {result['matmul_bf16_tflops']:.0f} TFLOP/s "
        f"(the MFU denominator). Benchmark time {result['seconds']:.0f} s.",
        "",
        tier,
        "",
        "### Targets",
        "",
        "| target | setting | measured | verdict |",
        "| --- | --- | --- | --- |",
    ]
    settings = result["settings"]
    for name, rows in settings.items():
        if "stock" in rows and "lwap" in rows:
            ratio = rows["lwap"]["sentences_per_second"] / rows["stock"]["sentences_per_second"]
            verdict = "PASS" if ratio >= 1.3 else "**MISS**"
            lines.append(f"| {TARGETS[0]} | {name} | {ratio:.2f}× | {verdict} |")
        if "cls" in rows and "lwap" in rows:
            over = rows["lwap"]["step_seconds"] / rows["cls"]["step_seconds"] - 1
            lines.append(
                f"| {TARGETS[1]} | {name} | {over * 100:+.1f}% step time | "
                f"{'PASS' if over <= 0.05 else '**MISS**'} |"
            )
    sup = next((r for n, r in settings.items() if n.startswith("sup") and not r["mini_batch"]), None)
    if sup and "lwap" in sup:
        mfu = sup["lwap"]["mfu"]
        verdict = "PASS" if mfu >= 0.35 else "**MISS**"
        lines.append(f"| {TARGETS[2]} | `lwap train`, LWAP | {mfu * 100:.1f}% | {verdict} |")
    unsup = next(iter(settings.values()), {})
    if "lwap" in unsup:
        lines.append(
            f"| (reported: the small unsupervised batch is launch-bound) | {next(iter(settings))} | "
            f"MFU {unsup['lwap']['mfu'] * 100:.1f}% | — |"
        )
    lines += [
        "",
        "### Speed by setting",
        "",
        "Step split from a second run with a CUDA synchronise at each phase boundary (forward includes "
        "the loss; backward includes gradient clipping; python = the rest: data, collation, callbacks, "
        "scheduler). sentences/s counts input texts (unsupervised: each sentence once, encoded twice).",
        "",
        "| setting | variant | sentences/s | step ms | forward | backward | optimizer | python | MFU "
        "| peak GiB |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, rows in settings.items():
        for kind, label in VARIANTS.items():
            if kind not in rows:
                continue
            r, split = rows[kind], rows[kind]["split_seconds"]
            lines.append(
                f"| {name} | {label} | {r['sentences_per_second']:,.0f} | {ms(r['step_seconds'])} | "
                f"{ms(split['forward'])} | {ms(split['backward'])} | {ms(split['optimizer'])} | "
                f"{ms(split['python'])} | {r['mfu'] * 100:.1f}% | {r.get('peak_memory_gib', '—')} |"
            )
    lines += ["", "### Levers (unsupervised setting)", "", "| lever | sentences/s | step ms | MFU | note |"]
    lines.append("| --- | --- | --- | --- | --- |")
    for key, r in result["levers"].items():
        if "sentences_per_second" in r:
            note = f"first run's wall {r['wall_seconds']:.0f} s (compilation included)"
            if "compiled_graphs" in r:
                note += f"; {r['compiled_graphs']} graphs compiled ({r['compile_backend']})"
            if r.get("cudagraph_skips"):
                note += f"; **CUDA graphs skipped {r['cudagraph_skips']}×** (inductor fell back)"
            lines.append(
                f"| {key} | {r['sentences_per_second']:,.0f} | {ms(r['step_seconds'])} | "
                f"{r['mfu'] * 100:.1f}% | {note} |"
            )
        else:
            lines.append(f"| {key} | — | — | — | {r.get('skipped') or r.get('failed')} |")
    lines += ["", "### How to rerun", "", *how_to_run()]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", nargs="?", help="gpu_check.sh's output folder")
    parser.add_argument("--pending", action="store_true", help="write the 'run pending' section")
    parser.add_argument("--md", default=str(REPO / "docs" / "BENCHMARKS.md"))
    args = parser.parse_args(argv)
    if args.pending:
        lines = pending_lines()
    else:
        if not args.outdir:
            parser.error("give OUTDIR or --pending")
        out = Path(args.outdir)
        check_file = out / "gpu_check.json"
        check = json.loads(check_file.read_text(encoding="utf-8")) if check_file.is_file() else {}
        tier = tier_summary(out / "gpu_tests.xml", check)
        speed = out / "gpu_speed.json"
        if speed.is_file():
            lines = measured_lines(json.loads(speed.read_text(encoding="utf-8")), tier)
        else:
            lines = no_benchmark_lines(check, tier)
        if check.get("dry_run"):
            lines[0] += " — DRY RUN of gpu_check.sh on a CPU"
    gpu_section.replace(Path(args.md), lines)
    print(f"gpu_report: wrote the GPU section of {args.md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
