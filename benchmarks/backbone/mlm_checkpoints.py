"""How a pretrain_mlm.py run survives stops: slices that checkpoint on a clock, on a signal and at their
end, the record of each slice (run.json), the loss curve, and the committed snapshot a fresh machine
resumes from with the learning rate re-warmed."""

from __future__ import annotations

import argparse
import copy
import json
import math
import shutil
import signal
import time
from pathlib import Path

import torch
from transformers import Trainer, TrainerCallback

from benchmarks.speed.speedbench.machine import cpu_name
from lwap.checks import files


class Slice(TrainerCallback):
    """Checkpoint every `--save-minutes`, and stop with one on SIGTERM/SIGINT or when the slice is up;
    record each slice (wall time, step, tokens, machine) in run.json."""

    def __init__(self, a: argparse.Namespace, run: dict) -> None:
        self.a, self.run, self.start, self.saved, self.stop = a, run, time.monotonic(), time.monotonic(), ""
        self.cpu = time.process_time()  # CPU-seconds too: the budget is in CPU-hours, the machine shared
        self.previous = {s: signal.signal(s, self.request_stop) for s in (signal.SIGTERM, signal.SIGINT)}
        run["slices"].append({"seconds": 0, "to_step": 0, "tokens_seen": 0, "machine": machine()})

    def request_stop(self, signum, frame) -> None:
        if self.stop:  # a second Ctrl-C: give up at once (the last checkpoint stays)
            raise KeyboardInterrupt
        self.stop = signal.Signals(signum).name

    def on_step_end(self, args, state, control, **kwargs):
        now = time.monotonic()
        if self.a.max_minutes is not None and now - self.start > self.a.max_minutes * 60:
            self.stop = self.stop or "--max-minutes"
        if self.stop:
            control.should_training_stop = control.should_log = True
        if not self.a.measure and (
            self.stop or now - self.saved > self.a.save_minutes * 60 or state.global_step >= state.max_steps
        ):
            control.should_save, self.saved = True, now

    def on_save(self, args, state, control, **kwargs):
        seconds, tokens = round(time.monotonic() - self.start), state.num_input_tokens_seen
        cpu_seconds = round(time.process_time() - self.cpu)
        self.run["slices"][-1].update(
            seconds=seconds, cpu_seconds=cpu_seconds, to_step=state.global_step, tokens_seen=tokens
        )
        files.write_json_atomically(self.run, self.a.run_dir / "run.json")
        write_curve(self.a.run_dir, state.log_history)
        if self.a.snapshot_dir and not self.a.measure:
            write_snapshot(self.a.snapshot_dir, kwargs["model"], state, self.run)

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        loss = metrics["eval_loss"]
        print(f"step {state.global_step}: held-out MLM loss {loss:.4f}, perplexity {math.exp(loss):.1f}")

    def on_train_end(self, args, state, control, **kwargs):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)


def write_curve(run_dir: Path, history: list[dict]) -> None:
    """loss_curve.csv (step, tokens, train loss, held-out loss) and loss_curve.png from the trainer's log."""
    from matplotlib.figure import Figure  # no pyplot: no display, no global figure state

    rows = [
        (h["step"], h.get("num_input_tokens_seen", ""), h.get("loss", ""), h.get("eval_loss", ""))
        for h in history
        if "loss" in h or "eval_loss" in h
    ]
    lines = ["step,tokens_seen,train_loss,held_out_loss", *(",".join(map(str, r)) for r in rows)]
    files.write_text_atomically(run_dir / "loss_curve.csv", "\n".join(lines) + "\n")
    axis = Figure(figsize=(6, 4)).subplots()
    for column, label in ((2, "train"), (3, "held-out")):
        points = [(r[0], r[column]) for r in rows if r[column] != ""]
        if points:
            axis.plot(*zip(*points, strict=True), label=label, marker="o" if column == 3 else None)
    axis.set(xlabel="step", ylabel="MLM loss (cross-entropy, nats)", title=run_dir.name)
    axis.legend()
    files.save_figure_atomically(axis.figure, run_dir / "loss_curve.png", dpi=100, bbox_inches="tight")


def write_snapshot(folder: Path, model, state, run: dict) -> None:
    """What a fresh machine needs to go on with the run, small enough to commit: the weights in bf16 (the
    MLM head included; 22 MB at 4 x 256) and the trainer's and the run's state, without the optimizer's
    moments (twice the weights in fp32). Resuming from it re-warms the learning rate (`--rewarm`)."""
    with files.atomic_path(folder) as partial:
        copy.deepcopy(model).to(torch.bfloat16).save_pretrained(partial)  # (a bf16 state_dict= is upcast)
        state.save_to_json(str(partial / "trainer_state.json"))
        files.write_json_atomically(run, partial / "run.json")


def resume_from_snapshot(a: argparse.Namespace) -> None:
    """A run folder without a checkpoint (a fresh machine) takes the snapshot's step as a checkpoint that has
    weights but no optimizer or scheduler state; `ReWarmedTrainer` then continues the schedule from there."""
    if (
        not a.snapshot_dir
        or finished_checkpoints(a.run_dir)
        or not (a.snapshot_dir / "trainer_state.json").is_file()
    ):
        return
    step = read_state(a.snapshot_dir)["global_step"]
    checkpoint = a.run_dir / f"checkpoint-{step}"
    with files.atomic_path(checkpoint) as partial:
        shutil.copytree(
            a.snapshot_dir, partial, ignore=shutil.ignore_patterns("run.json"), dirs_exist_ok=True
        )
    run = json.loads((a.snapshot_dir / "run.json").read_text(encoding="utf-8"))
    files.write_json_atomically({**run, "rewarmed_at": step}, a.run_dir / "run.json")
    print(
        f"{a.name}: no checkpoint in {a.run_dir}; resuming from the snapshot {a.snapshot_dir} at step {step} "
        f"(weights only: the optimizer starts afresh, the learning rate re-warmed over {a.rewarm} steps)"
    )


class ReWarmedTrainer(Trainer):
    """The Trainer, whose linear schedule (warm-up, decay to 0) continues from `rewarmed_at` after a resume
    from a snapshot (the step count of a fresh scheduler starts at 0 there), ramped up over `rewarm` steps
    because the optimizer's moments start at 0. transformers' schedules take no start step, hence this."""

    def __init__(self, *args, rewarmed_at: int = 0, rewarm: int = 0, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.rewarmed_at, self.rewarm = rewarmed_at, rewarm

    def create_scheduler(self, num_training_steps: int, optimizer=None):
        if self.lr_scheduler is None and self.rewarmed_at:
            shape = (self.rewarmed_at, self.args.warmup_steps, num_training_steps, self.rewarm)
            self.lr_scheduler = torch.optim.lr_scheduler.LambdaLR(
                optimizer or self.optimizer, lambda k: rewarmed_factor(k, *shape)
            )
        return super().create_scheduler(num_training_steps, optimizer)


def rewarmed_factor(k: int, offset: int, warmup: int, total: int, ramp: int) -> float:
    """The linear schedule's factor at step offset + k (transformers' `get_linear_schedule_with_warmup`),
    times a ramp from 1/ramp to 1 over the first `ramp` steps after the resume."""
    t = k + offset
    base = t / max(1, warmup) if t < warmup else max(0.0, (total - t) / max(1, total - warmup))
    return base * min(1.0, (k + 1) / max(1, ramp))


def finished_checkpoints(run_dir: Path) -> list[Path]:
    """Checkpoints the Trainer finished writing (it writes trainer_state.json last), oldest first."""
    done = [c for c in run_dir.glob("checkpoint-*") if (c / "trainer_state.json").is_file()]
    return sorted(done, key=lambda c: int(c.name.split("-")[1]))


def read_state(checkpoint: Path) -> dict:
    return json.loads((checkpoint / "trainer_state.json").read_text(encoding="utf-8"))


def machine() -> str:
    """The accelerator, or the CPU model and thread count: wall times depend on it."""
    if torch.cuda.is_available():
        return torch.cuda.get_device_name()
    return f"{cpu_name()}, {torch.get_num_threads()} thread(s)"
