"""benchmarks/new_backbone_queue.py: issue 36's stages in order, each skipped once done, the grid only
after a passed gate and with its budget, seed-major with the regimes alternating."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from lwap.compare.grid import ROWS

REPO = Path(__file__).resolve().parents[1]
BACKBONE = "benchmarks/backbones/bert-new"
SETS = {"unsup": ["training.learning_rate=1e-4", "data.max_examples=64000"], "sup": ["training.epochs=3"]}


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("queue", REPO / "benchmarks" / "new_backbone_queue.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_choice(repo: Path, passed: dict[str, bool], rule: str = "gate") -> None:
    path = repo / "benchmarks/results/compare/budget/bert-new/choice.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    regimes = {r: {"budget": "lr1e-4", "passed": ok, "set": SETS[r]} for r, ok in passed.items()}
    path.write_text(json.dumps({"rule": rule, "backbone": BACKBONE, "regimes": regimes}), encoding="utf-8")


def test_the_stages_follow_each_other_and_the_grid_takes_the_gates_budget(tmp_path: Path) -> None:
    script = load_script()
    stages = script.stages(BACKBONE, tmp_path)
    assert next(stages) == ("the long MLM run", ["bash", "benchmarks/pretrain_long_run.sh"])
    what, command = next(stages)  # read when its turn comes: no choice yet, so the gate
    assert what == "the gate" and command[-2:] == ["--rule", "gate"]
    write_choice(tmp_path, {"unsup": True, "sup": True})
    rest = list(stages)
    grid, report, figure = rest[:-2], rest[-2], rest[-1]
    assert [w for w, _ in grid] == [f"grid: {r} seed {s}" for s in (0, 1, 2) for r in ("unsup", "sup")]
    first = grid[0][1]
    assert first[first.index("--poolers") + 1 : first.index("--set")] == list(script.ROWS)
    assert first[first.index("--set") :] == ["--set", SETS["unsup"][0], "--set", SETS["unsup"][1]]
    assert grid[1][1][-2:] == ["--set", "training.epochs=3"]
    assert report == ("the report", ["benchmarks/compare_poolers.py", "report"])
    assert figure == ("the figures", ["benchmarks/compare_poolers.py", "figure"])


def test_finished_stages_are_skipped(tmp_path: Path) -> None:
    (tmp_path / BACKBONE).mkdir(parents=True)
    (tmp_path / BACKBONE / "SOURCE.md").write_text("exported", encoding="utf-8")
    write_choice(tmp_path, {"unsup": True, "sup": True})
    assert next(load_script().stages(BACKBONE, tmp_path))[0] == "grid: unsup seed 0"


def run_queue(
    tmp_path: Path, passed: dict[str, bool], monkeypatch: pytest.MonkeyPatch
) -> tuple[ModuleType, int, list[list[str]]]:
    """The queue from an exported backbone on, with every command faked; the gate writes `passed`."""
    script = load_script()
    (tmp_path / BACKBONE).mkdir(parents=True)
    (tmp_path / BACKBONE / "SOURCE.md").write_text("exported", encoding="utf-8")
    ran = []

    def fake_run(command: list[str]) -> int:
        ran.append(command)
        write_choice(tmp_path, passed)  # what the gate writes
        return 0

    monkeypatch.setattr(script, "REPO", tmp_path)
    monkeypatch.setattr(script, "run", fake_run)
    return script, script.main(["--backbone", BACKBONE]), ran


@pytest.mark.parametrize("passed", [{"unsup": True, "sup": False}, {"unsup": False, "sup": True}])
def test_a_regime_that_failed_gets_the_diagnosis_and_no_grid_the_other_its_grid(
    tmp_path: Path, passed: dict[str, bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, code, ran = run_queue(tmp_path, passed, monkeypatch)
    assert code == 0
    # the gate, then its control (plain PyTorch SimCSE, cls and mean, each evaluated), then the two
    # diagnoses (the same with one setting changed), their table, then the passed regime's grid
    plain = ["benchmarks/plain_simcse.py", "-m"] * 6
    assert [c[0] for c in ran[:14]] == ["benchmarks/budget_probe.py", *plain, "benchmarks/gate_diagnosis.py"]
    assert ran[1][ran[1].index("--lr") + 1] == "3e-4" and "--overwrite" in ran[1]
    assert ran[2][:4] == ["-m", "lwap", "eval", "runs/plain-simcse/bert-new/cls"]
    lr_diagnosis, dropout_diagnosis = ran[5], ran[9]
    assert (
        lr_diagnosis[len(lr_diagnosis) - 1 - lr_diagnosis[::-1].index("--lr") + 1] == "3e-5"
    )  # the last wins
    assert dropout_diagnosis[dropout_diagnosis.index("--dropout") + 1] == "0.05"
    assert (
        dropout_diagnosis[dropout_diagnosis.index("--out") + 1] == "runs/diagnosis/dropout0.05/bert-new/cls"
    )
    assert ran[10][ran[10].index("--output") + 1].endswith("budget/bert-new/diagnosis/dropout0.05/cls")
    grid = ran[14:-2]
    kept = next(r for r, ok in passed.items() if ok)
    assert [(c[3], c[7]) for c in grid] == [(kept, str(seed)) for seed in (0, 1, 2)]
    assert [c[1] for c in ran[-2:]] == ["report", "figure"]


def test_no_regime_passed_stops_after_the_diagnosis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    _, code, ran = run_queue(tmp_path, {"unsup": False, "sup": False}, monkeypatch)
    assert code == 1 and ran[-1][0] == "benchmarks/gate_diagnosis.py"
    assert "the gate did not pass (no regime passed)" in capsys.readouterr().out


def test_a_probe_choice_is_not_a_gate(tmp_path: Path) -> None:
    """issue 26's probe writes the same file; its 2-point rule is not the gate's."""
    script = load_script()
    write_choice(tmp_path, {"unsup": True, "sup": True}, rule="probe")
    with pytest.raises(script.GateFailed, match="not the gate rule"):
        script.grid_commands(BACKBONE, json.loads(next(tmp_path.rglob("choice.json")).read_text()))


def test_the_rows_are_the_six_poolers_and_issue_37s_four_variants() -> None:
    rows = load_script().ROWS
    assert len(rows) == 10 and set(rows) <= set(ROWS)
    assert {"cls", "mean", "first_last_avg", "last2_avg", "weighted", "lwap"} <= set(rows)


def test_the_control_matches_the_gates_first_unsupervised_budget() -> None:
    script = load_script()
    gate = dict(o.split("=") for o in script_budget_probe().GATE_BUDGETS["long"]["unsup"])
    control = dict(zip(script.CONTROL[::2], script.CONTROL[1::2], strict=True))
    assert float(control["--lr"]) == float(gate["training.learning_rate"])
    assert control["--max-examples"] == gate["data.max_examples"]
    config = (REPO / "configs/compare/unsup-minilm.yaml").read_text(encoding="utf-8")
    for key, flag in [("per_device_batch_size", "--batch"), ("max_seq_length", "--max-length")]:
        assert f"{key}: {control[flag]}" in config
    assert f"eval_steps: {control['--eval-steps']}" in config and "temperature: 0.05" in config


def script_budget_probe() -> ModuleType:
    spec = importlib.util.spec_from_file_location("budget_probe", REPO / "benchmarks" / "budget_probe.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
