"""Issue 66's control and seen-ness runs (benchmarks/backbone/verdict_controls.py): the three arm files built
as docs/COMPARE.md pre-registers them on a hand-made mirror, and refused when the mirror gives others; the
step list (its order, commands and done-markers) against the pre-registration and the committed runs it
repeats; `run` resuming after a failed step, one process at a time."""

from __future__ import annotations

import csv
import gzip
import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from benchmarks.backbone import plain_simcse
from benchmarks.backbone import verdict_controls as controls
from benchmarks.backbone.mlm_data import normalise
from benchmarks.backbone.verdict_controls_arms import ArmError, check_files, prepare, sentences_text, sha256
from lwap.compare.grid import REGIMES, shipped_config

HELD_OUT = 8
WIKI = [f"Wikipedia line number {i} tells of a river." for i in range(40)]
SNLI_PAIRS = [(f"A person number {i} walks.", f"Somebody {i % 7} is outside.") for i in range(30)]


def write_corpora(mirror: Path) -> tuple[list[str], str]:
    """The mirror's Wikipedia and SNLI files: Wikipedia line 3 is an STS sentence in other case and
    punctuation (removed as evaluation), line 4 blank, line 20 repeats held-out line 1 (removed as its
    duplicate); SNLI repeats hypotheses and holds the same STS sentence once. Returns the lines written
    and the STS sentence."""
    sts = (mirror / "sts12-16/senteval-tokenized/STS12-en-test/STS.input.MSRpar.txt").read_text()
    evaluation = sts.split("\t", 1)[0]
    lines = list(WIKI)
    lines[3], lines[4], lines[20] = evaluation.upper() + " !", "", WIKI[1]
    (mirror / "wiki").mkdir()
    with gzip.open(mirror / "wiki" / "wiki_sentences_1m.txt.gz", "wt", encoding="utf-8") as handle:
        handle.write("".join(f"{line}\n" for line in lines))
    (mirror / "nli").mkdir()
    snli = mirror / "nli" / "snli_dev_test_pairs.tsv.gz"
    with gzip.open(snli, "wt", encoding="utf-8", newline="") as handle:
        rows = csv.writer(handle, delimiter="\t", quoting=csv.QUOTE_NONE, lineterminator="\n")
        rows.writerow(["split", "premise", "hypothesis", "label"])
        rows.writerows(
            ["dev", premise, hypothesis, "neutral"] for premise, hypothesis in snli_pairs(evaluation)
        )
    return lines, evaluation


def snli_pairs(evaluation: str) -> list[tuple[str, str]]:
    """SNLI_PAIRS with the STS sentence as the 6th premise."""
    return [(evaluation if i == 5 else pair[0], pair[1]) for i, pair in enumerate(SNLI_PAIRS)]


def write_backbone(folder: Path, record: dict | None = None, held_out: int = HELD_OUT) -> Path:
    """A backbone folder's SOURCE.md as pretrain_mlm.py writes it: its command and its data record."""
    folder.mkdir(parents=True, exist_ok=True)
    command = (
        f"python benchmarks/backbone/pretrain_mlm.py --name fake --size 4l256 --held-out {held_out} --lr 1e-3"
    )
    data = json.dumps(record or {})
    text = f"# fake\n\nMade with\n`{command}`\n\n- Data (Wikipedia sentences): `{data}`\n"
    (folder / "SOURCE.md").write_text(text, encoding="utf-8")
    return folder


@pytest.fixture()
def arms(tmp_path: Path, data_mirror: Path) -> dict:
    """A mirror with the two corpora, a backbone whose SOURCE.md records this mirror's splits, and
    prepare's first run (no committed record yet)."""
    from benchmarks.backbone.mlm_data import read_splits
    from benchmarks.backbone.pretrain_mlm import parse_args

    lines, evaluation = write_corpora(data_mirror)
    _, _, splits = read_splits(parse_args(["--name", "fake", "--held-out", str(HELD_OUT)]))
    backbone = write_backbone(tmp_path / "backbone", splits)
    folder, record_file = tmp_path / "outputs", tmp_path / "results" / "sentences.json"
    record = prepare(backbone, folder, record_file, None)
    return {"lines": lines, "evaluation": evaluation, "backbone": backbone, "folder": folder,
            "record_file": record_file, "record": record, "splits": splits}  # fmt: skip


def test_the_arms_are_the_held_out_lines_the_next_training_lines_and_bs_snli_list(arms: dict) -> None:
    folder, splits = arms["folder"], arms["splits"]
    files = {arm: (folder / f"{arm}.txt").read_text(encoding="utf-8").splitlines() for arm in "UWS"}
    kept = [line for line in arms["lines"] if line and normalise(line) != normalise(arms["evaluation"])]
    assert splits["removed_as_evaluation"] == 1 and splits["removed_as_held_out_duplicate"] == 1
    assert files["U"] == kept[:HELD_OUT]  # the first 8 usable lines: what the backbone held out
    assert files["W"] == [line for line in kept[HELD_OUT:] if line != WIKI[1]][:HELD_OUT]
    distinct = list(dict.fromkeys(s for pair in snli_pairs(arms["evaluation"]) for s in pair))
    snli = [s for s in distinct if normalise(s) != normalise(arms["evaluation"])]
    random.Random(0).shuffle(snli)
    assert files["S"] == snli[:HELD_OUT] and len(set(files["S"])) == HELD_OUT

    record = arms["record"]
    assert json.loads(arms["record_file"].read_text(encoding="utf-8")) == record
    expected = {"distinct": len(distinct), "removed_as_evaluation": 1, "sentences": len(snli)}
    assert record["snli_list"] == {**expected, "sha256": sha256(sentences_text(snli))}
    for arm, sentences in files.items():
        assert record["arms"][arm]["sentences"] == HELD_OUT
        assert record["arms"][arm]["sha256"] == sha256(sentences_text(sentences))
    assert record["shared"] == {"U-W": 0, "U-S": 0, "W-S": 0}
    assert record["pretraining_command"].endswith(f"--held-out {HELD_OUT} --lr 1e-3")


def test_a_rerun_rebuilds_the_same_files_and_a_changed_mirror_is_refused(
    arms: dict, data_mirror: Path
) -> None:
    folder, record_file, backbone = arms["folder"], arms["record_file"], arms["backbone"]
    (folder / "W.txt").write_text("edited\n", encoding="utf-8")
    with pytest.raises(ArmError, match=r"W\.txt: sha256"):
        check_files(folder, record_file)
    assert prepare(backbone, folder, record_file, None) == arms["record"]  # rebuilt, the same files
    check_files(folder, record_file)

    lines = list(arms["lines"])
    lines[6] = "Another sentence in the held-out lines."  # same counts, other text
    with gzip.open(data_mirror / "wiki" / "wiki_sentences_1m.txt.gz", "wt", encoding="utf-8") as handle:
        handle.write("".join(f"{line}\n" for line in lines))
    with pytest.raises(ArmError, match=r"differ from the committed ones \(arms\.U\.sha256: "):
        prepare(backbone, folder, record_file, None)

    write_backbone(backbone, {**arms["splits"], "held_out": 9})  # SOURCE.md records other splits
    with pytest.raises(ArmError, match=r"SOURCE\.md: its data record has held_out = 9, this mirror gives 8"):
        prepare(backbone, folder, record_file, None)


def test_an_snli_list_other_than_issue_50s_is_refused(arms: dict, tmp_path: Path) -> None:
    issue50 = tmp_path / "issue50.json"
    issue50.write_text(json.dumps({"snli": {"sha256": "0" * 64, "sentences": 1}}), encoding="utf-8")
    with pytest.raises(ArmError, match="not \\(b\\)'s list"):
        prepare(arms["backbone"], arms["folder"], arms["record_file"], issue50)
    issue50.write_text(json.dumps({"snli": arms["record"]["snli_list"]}), encoding="utf-8")
    prepare(arms["backbone"], arms["folder"], arms["record_file"], issue50)


def test_the_committed_arm_record_names_issue_50s_snli_list() -> None:
    """The record a first `prepare` committed: 4,000 sentences an arm, S drawn from (b)'s very list."""
    record = json.loads(controls.LAYOUT.arm_record().read_text(encoding="utf-8"))
    issue50 = json.loads(controls.ISSUE50_SNLI.read_text(encoding="utf-8"))
    assert record["snli_list"]["sha256"] == issue50["snli"]["sha256"]
    assert [record["arms"][arm]["sentences"] for arm in "UWS"] == [4000] * 3
    assert record["splits"]["held_out"] == 4000 and record["shared"] == {"U-W": 0, "U-S": 0, "W-S": 0}


def test_prepare_from_the_command_line_says_a_wrong_source_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data_mirror: Path
) -> None:
    write_corpora(data_mirror)
    monkeypatch.setattr(controls, "REPO", tmp_path)
    monkeypatch.setattr(controls, "LAYOUT", controls.Layout(tmp_path / "results", tmp_path / "work"))
    (tmp_path / controls.BACKBONE).mkdir(parents=True)
    (tmp_path / controls.BACKBONE / "SOURCE.md").write_text("# no command\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from benchmarks.backbone import verdict_controls as v; "
         f"v.REPO = __import__('pathlib').Path({str(tmp_path)!r}); sys.exit(v.main(['prepare']))"],
        capture_output=True, text=True, cwd=REPO, timeout=300,
    )  # fmt: skip
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0].startswith("verdict_controls.py: error: ") and "SOURCE.md: no `python" in lines[0]


def steps_of(tmp_path: Path) -> list[tuple[str, list[str] | object, Path]]:
    return list(controls.steps(controls.Layout(tmp_path / "results", tmp_path / "work")))


def option(command: list[str], flag: str) -> list[str]:
    return [command[i + 1] for i, a in enumerate(command) if a == flag]


def test_the_steps_follow_the_pre_registered_order_each_with_its_own_marker(tmp_path: Path) -> None:
    found = steps_of(tmp_path)
    names = [what for what, _, _ in found]
    assert names[0] == "seen-ness: the arm files U, W, S" and len(names) == 1 + 3 * 7 + 3 * 3 * 2 * 2
    runs = ["T (lwap's trainer)"] + [
        f"{r} {s}" for r in ("P", "P+clip") for s in ("train", "score", "record")
    ]
    control = [f"control seed {seed}: {run}" for seed in (0, 1, 2) for run in runs]
    seen = [f"seen-ness seed {seed}: {arm} {pooler}{part}" for seed in (0, 1, 2) for arm in "UWS"
            for pooler in ("mean", "cls") for part in ("", ": per-subset scores")]  # fmt: skip
    assert names[1:] == control + seen
    markers = [done for _, _, done in found]
    assert len(set(markers)) == len(markers)
    results = tmp_path / "results"
    for what, _, done in found[1:]:  # a run's marker is a tracked file, but the plain models' records
        assert done.is_relative_to(tmp_path / ("work" if what.endswith("train") else "results")), what
    assert (
        markers[1] == results / "control/trainer/backbones/bert-prenorm-4l256-sentences/unsup/cls-seed0.json"
    )
    assert markers[2] == tmp_path / "work/control/plain/cls-seed0/plain_simcse.json"
    assert markers[3] == results / "control/plain/cls-seed0/results.json"
    assert markers[4] == results / "control/plain/cls-seed0/plain_simcse.json"
    assert markers[22] == results / "seen/U/backbones/bert-prenorm-4l256-sentences/unsup/mean-seed0.json"
    assert markers[23] == results / "seen/U/eval/mean-seed0/results.json"


def test_t_repeats_the_gates_long_cell_and_p_the_committed_control_p_clip_adds_only_the_clip(
    tmp_path: Path,
) -> None:
    commands = {what: command for what, command, _ in steps_of(tmp_path)}
    t = commands["control seed 1: T (lwap's trainer)"]
    assert t[:2] == ["benchmarks/grid/compare_poolers.py", "run"] and option(t, "--seeds") == ["1"]
    assert option(t, "--poolers") == ["cls"] and option(t, "--tasks") == ["sts"] and "--no-untouched" in t
    budget = REPO / "benchmarks/results/compare/budget/bert-prenorm-4l256-sentences/long/backbones"
    gate = json.loads((budget / "bert-prenorm-4l256-sentences/unsup/cls-seed0.json").read_text())
    assert [f"model.backbone={option(t, '--backbone')[0]}", *option(t, "--set")] == gate["overrides"][2:]

    p, clipped = commands["control seed 1: P train"], commands["control seed 1: P+clip train"]
    committed = json.loads((budget.parent.parent / "plain-simcse/cls/plain_simcse.json").read_text())["args"]
    parsed = vars(plain_simcse.parse_args(p[1:]))
    defaults = vars(plain_simcse.parse_args(["--backbone", "b", "--pooling", "cls", "--out", "o"]))
    for key in ("max_examples", "batch", "max_length", "lr", "epochs", "temperature", "dropout", "precision",
                "eval_steps", "train", "stsb_dev", "backbone", "pooling"):  # fmt: skip
        assert parsed[key] == committed[key], key
        assert key in ("backbone", "pooling") or parsed[key] == defaults[key], key
    assert parsed["seed"] == 1 and parsed["clip"] is None
    clip_out = str(Path(parsed["out"]).parent.parent / "plain-clip" / "cls-seed1")
    assert vars(plain_simcse.parse_args(clipped[1:])) == {**parsed, "clip": 1.0, "out": clip_out}

    score = commands["control seed 1: P+clip score"]
    assert score[:3] == ["-m", "lwap", "eval"] and option(score, "--tasks") == ["sts"]
    assert option(score, "--precision") == ["bf16"] and option(score, "--max-seq-length") == ["256"]
    assert score[3] == clip_out


def test_seen_ness_sets_parse_to_the_pre_registered_budget(tmp_path: Path) -> None:
    """`data.max_examples=null` is YAML's null (every line of the arm's file); 6 epochs, lr 3e-4."""
    from lwap.config_files import resolve_config
    from lwap.train.config import load_config

    commands = {what: command for what, command, _ in steps_of(tmp_path)}
    for arm in "UWS":
        command = commands[f"seen-ness seed 2: {arm} cls"]
        assert option(command, "--poolers") == ["cls"] and option(command, "--seeds") == ["2"]
        assert option(command, "--results") == [str(tmp_path / "results/seen" / arm)]
        backbone = f"model.backbone={option(command, '--backbone')[0]}"
        config = load_config(
            resolve_config(shipped_config(REGIMES["unsup"])), [backbone, *option(command, "--set")]
        )
        assert config.data.max_examples is None and config.training.epochs == 6
        assert config.training.learning_rate == 3e-4 and config.data.train == str(
            tmp_path / f"work/seen/{arm}.txt"
        )
        assert config.model.backbone == controls.BACKBONE and config.training.per_device_batch_size == 64
        assert (config.eval.eval_steps, config.eval.start_competes) == (50, False)


def test_dry_run_lists_what_is_left(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    layout = controls.Layout(tmp_path / "results", tmp_path / "work")
    assert controls.run(True, layout) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "58 steps left"
    for _, _, done in list(controls.steps(layout))[:5]:
        done.parent.mkdir(parents=True, exist_ok=True)
        done.write_text("{}", encoding="utf-8")
    before = sorted(tmp_path.rglob("*"))
    controls.run(True, layout)
    shown = capsys.readouterr().out.splitlines()
    assert shown[0] == "[todo] control seed 0: P+clip train" and shown[-1] == "53 steps left"
    assert sorted(tmp_path.rglob("*")) == before  # a dry run writes nothing


def test_run_makes_each_step_once_and_resumes_after_a_failed_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    layout = controls.Layout(tmp_path / "results", tmp_path / "work")
    calls: list[str] = []
    fail = {"now": True}

    def fake_steps(_: controls.Layout):
        first = tmp_path / "first.txt"
        yield "first", lambda: calls.append("first") or first.write_text("x"), first
        second = tmp_path / "second.txt"
        yield "second", ["-c", f"open({str(second)!r}, 'w').write('x')"], second
        third = tmp_path / "third.txt"
        code = "raise SystemExit(3)" if fail["now"] else f"open({str(third)!r}, 'w').write('x')"
        yield "third", ["-c", code], third

    monkeypatch.setattr(controls, "steps", fake_steps)
    monkeypatch.setattr(controls, "LAYOUT", layout)
    assert controls.main(["run"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("verdict_controls.py: error: a step failed (exit 3)")
    assert calls == ["first"] and (tmp_path / "second.txt").is_file() and not layout.report().exists()
    fail["now"] = False
    assert controls.main(["run"]) == 0
    assert calls == ["first"] and (tmp_path / "third.txt").is_file()  # the done steps were not made again
    assert "[run ] third" in capsys.readouterr().out and layout.report().is_file()


def test_a_second_run_is_refused_while_one_holds_the_lock(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from lwap.checks.locking import claim

    layout = controls.Layout(tmp_path / "results", tmp_path / "work")
    layout.work.mkdir(parents=True)
    with claim(layout.work / "verdict-controls.lock") as mine:
        assert mine
        with pytest.raises(controls.StepError, match=r"another `verdict_controls\.py run`"):
            controls.run(False, layout)


def test_run_checks_the_arm_files_against_their_record_before_any_step(tmp_path: Path) -> None:
    layout = controls.Layout(tmp_path / "results", tmp_path / "work")
    layout.arm_file("S").parent.mkdir(parents=True)
    files = {arm: f"{arm} sentence\n" for arm in "UWS"}
    for arm, text in files.items():
        layout.arm_file(arm).write_text(text, encoding="utf-8")
    arms = {arm: {"file": f"{arm}.txt", "sha256": sha256(text)} for arm, text in files.items()}
    arms["U"]["sha256"] = sha256("another\n")
    layout.arm_record().parent.mkdir(parents=True)
    layout.arm_record().write_text(json.dumps({"arms": arms}), encoding="utf-8")
    with pytest.raises(ArmError, match=r"U\.txt: sha256"):
        controls.run(False, layout)
    assert not (layout.work / "control").exists()


SHORTER = {
    "64000": "128",
    "data.max_examples=64000": "data.max_examples=128",
    "training.epochs=6": "training.epochs=1",
}


@pytest.mark.slow
def test_the_real_steps_on_a_tiny_mirror_leave_the_files_that_mark_them_done(
    tmp_path: Path, data_mirror: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seed 0 of the control (T, P, P+clip) and one seen-ness cell, their commands as `run` makes them but
    for the budget (128 sentences, one epoch: two steps), on the shipped backbone and a hand-made mirror:
    each step leaves the file that marks it done, and the report reads them back."""
    write_corpora(data_mirror)
    with gzip.open(data_mirror / "wiki" / "wiki_sentences_1m.txt.gz", "wt", encoding="utf-8") as handle:
        handle.write(
            "".join(f"Line {i} of a longer page about rivers and {i % 9} towns.\n" for i in range(200))
        )
    layout = controls.Layout(tmp_path / "results", tmp_path / "work")
    layout.arm_file("U").parent.mkdir(parents=True)
    layout.arm_file("U").write_text("".join(f"Held-out sentence {i} on hills.\n" for i in range(128)))
    wanted = [what for what, _, _ in controls.steps(layout) if what.startswith("control seed 0")]
    wanted += ["seen-ness seed 0: U mean", "seen-ness seed 0: U mean: per-subset scores"]

    real_steps = controls.steps

    def shorter(_: controls.Layout):
        for what, command, done in real_steps(layout):
            if what in wanted:
                yield what, command if callable(command) else [SHORTER.get(a, a) for a in command], done

    monkeypatch.setattr(controls, "steps", shorter)
    assert controls.run(False, layout) == 0
    assert all(done.is_file() for _, _, done in shorter(layout))
    clipped = json.loads((layout.plain_scores("P+clip", 0) / "plain_simcse.json").read_text())
    assert clipped["clip"] == 1.0 and clipped["steps"] == 2 and len(clipped["grad_norm_by_step"]) == 2
    cell = json.loads(layout.seen_grid("U").cell_file(controls.BACKBONE, "unsup", "mean", 0).read_text())
    assert (
        f"data.train={layout.arm_file('U')}" in cell["overrides"]
        and "data.max_examples=null" in cell["overrides"]
    )
    assert cell["train"]["steps"] == 2 and cell["eval_tasks"] == "sts" and cell["eval_max_seq_length"] == 256
    report = layout.report().read_text(encoding="utf-8")
    seed0 = r"\| -?\d+\.\d\d \(\d+/2\) \| not run yet \| not run yet \|"  # avg (kept/steps)
    runs = ("T: lwap's trainer (compare cells)", "P: the plain loop as committed", "`mean` | U")
    for row in (*runs, "P+clip: the plain loop, gradient norm clipped at 1.0"):
        assert re.search(re.escape(f"| {row} ") + seed0, report), row
    assert re.search(r"\| `mean` \| U \| (-?\d+\.\d\d \| ){4}1 \|", report)  # its subsets, one seed
    assert "Not read yet: the reading waits for all 9 runs." in report
