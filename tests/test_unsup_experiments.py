"""Issue 50's unsupervised diagnosis (benchmarks/backbone/unsup_experiments.py): its report reads the runs
as docs/COMPARE.md pre-registered, item 4: (b) S against the bar and against W, (a) which arm passes, and
what follows."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.backbone import unsup_experiments as experiments


def rows(cls: float, mean: float) -> dict[str, dict]:
    return {"cls": {"avg_all": cls, "dev": "—"}, "mean": {"avg_all": mean, "dev": "—"}}


@pytest.mark.parametrize(
    ("snli", "wiki", "reading"),
    [
        (rows(52.0, 51.8), rows(47.0, 48.0), "the training sentences were the cause"),
        (rows(51.0, 50.5), rows(48.0, 48.4), "the training sentences are part of the cause"),
        (rows(51.0, 49.0), rows(48.0, 48.4), "the training sentences are not the cause"),  # `mean` +0.6
        (rows(53.0, 51.7), rows(48.0, 48.4), "the training sentences are part of the cause"),  # one misses
    ],
)
def test_unseen_sentences_are_read_as_pre_registered(
    monkeypatch: pytest.MonkeyPatch, snli: dict, wiki: dict, reading: str
) -> None:
    found = {"unseen/snli": snli, "unseen/wiki": wiki}
    monkeypatch.setattr(experiments, "cells_of", lambda label, grid: found[label])
    assert experiments.BAR == 51.77  # the shipped backbone's gate bar
    assert experiments.reading_unseen().endswith(f"{reading}.")


def test_unseen_sentences_unread_until_all_four_runs_exist(monkeypatch: pytest.MonkeyPatch) -> None:
    found = {"unseen/snli": rows(52.0, 52.0), "unseen/wiki": {"cls": None, "mean": {"avg_all": 1.0}}}
    monkeypatch.setattr(experiments, "cells_of", lambda label, grid: found[label])
    assert "not read yet" in experiments.reading_unseen()


@pytest.mark.parametrize(
    ("with_dropout", "without", "reading", "ships"),
    [
        (True, False, "dropout robustness was the cause", "the dropout0.1 arm ships as a backbone"),
        (
            True,
            True,
            "more MLM (with dropout or without) was the cause",
            "the dropout0.1 and the dropout0 arm ship",
        ),
        (False, False, "dropout adaptation at this dose is not the cause", "no arm passed"),
        (False, True, "did not foresee, reported as found", "the dropout0 arm ships as a backbone"),
    ],
)
def test_dropout_arms_are_read_as_pre_registered(
    with_dropout: bool, without: bool, reading: str, ships: str
) -> None:
    passed = {"dropout0.1": with_dropout, "dropout0": without}
    assert experiments.reading_dropout(passed).endswith(f"{reading}.")
    assert experiments.reading_dropout(passed).startswith(
        "(a) "
    ) and "(a) the" not in experiments.reading_dropout(passed)
    assert ships.replace(" ship", "") in experiments.next_step(passed) or ships in experiments.next_step(
        passed
    )


def test_an_arm_passes_only_when_both_poolers_clear_its_bar() -> None:
    assert experiments.clears(rows(56.0, 55.0), 55.0) is True
    assert experiments.clears(rows(56.0, 54.99), 55.0) is False
    assert experiments.clears({"cls": None, "mean": {"avg_all": 60.0}}, 55.0) is None
    assert experiments.clears(rows(56.0, 56.0), None) is None
    assert "decided once both arms are read" in experiments.next_step({"dropout0.1": True, "dropout0": None})


def test_a_resumed_run_copies_an_arm_record_the_mlm_step_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The MLM step is done (the arm's folder has its SOURCE.md) but its record was never copied (a run
    stopped in between): resuming copies it, as its own step, before the arm's cells."""
    monkeypatch.setattr(experiments, "REPO", tmp_path)
    monkeypatch.setattr(experiments, "RESULTS", tmp_path / "results")
    for arm in experiments.ARMS:
        folder = tmp_path / experiments.arm_folder(arm)
        folder.mkdir(parents=True)
        (folder / "SOURCE.md").write_text(f"# {arm}\n", encoding="utf-8")
        (folder / "loss_curve.csv").write_text("step,loss\n", encoding="utf-8")
    found = {what: (command, done) for what, command, done in experiments.steps()}
    command, done = found["arm dropout0.1: its record"]
    assert callable(command) and not done.is_file()
    command()
    assert done.read_text(encoding="utf-8") == "step,loss\n"
    assert (done.parent / "SOURCE.md").read_text(encoding="utf-8") == "# dropout0.1\n"
    order = list(found)
    assert order.index("arm dropout0.1: MLM") < order.index("arm dropout0.1: its record")
    assert order.index("arm dropout0.1: its record") < order.index("arm dropout0.1: lwap's cells")


def test_each_arm_is_reported_with_its_last_held_out_loss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The arms' MLM is said beside the reading (their MLM head starts fresh): the last held-out loss of
    each loss curve, not its last training loss, and an arm not run yet says so."""
    curve = "step,tokens_seen,train_loss,held_out_loss\n25,100,9.3,\n400,900,5.0,4.9\n"
    curve += "410,950,4.1,\n420,990,,4.38\n"
    monkeypatch.setattr(experiments, "RESULTS", tmp_path)
    (tmp_path / "arms" / "dropout0").mkdir(parents=True)
    (tmp_path / "arms" / "dropout0" / "loss_curve.csv").write_text(curve, encoding="utf-8")
    assert experiments.final_held_out_loss(tmp_path / "arms" / "dropout0" / "loss_curve.csv") == 4.38
    assert experiments.final_held_out_loss(tmp_path / "missing.csv") is None
    line = experiments.arm_losses()
    assert "dropout0.1 not run yet, dropout0 4.38" in line
    assert "the shipped backbone's: 3.51" in line  # the committed backbone's loss_curve.csv
