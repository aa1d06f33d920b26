"""The clock every training benchmark times steps with: a step is the interval between two consecutive
step ends; optionally split into phases (forward, backward, optimizer) by marks, with the device
synchronised at each mark; optionally a torch.profiler window.

On a GPU the work is queued, so a mark without a synchronise times the launch, not the work: the phase
split (`sync=True`) costs a stall per mark, which is why a throughput run has none and takes its time
from the timed window (`finish`), synchronised only at its two ends.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Step:
    """One timed step: its seconds, per backbone forward (rows, padded length, real tokens) where a hook
    recorded them, and its phases' seconds where marks split it."""

    seconds: float
    forwards: list[tuple[int, int, int]]
    phases: dict[str, float] = field(default_factory=dict)


def synchronize(device: str) -> None:
    """Wait for the device's queued work (nothing to wait for on the CPU)."""
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


class Clock:
    """Closes a Step at every step end after the first `warmup`; on request, profiles a few steps.

    `device` and `sync`: whether each mark first synchronises the device (the phase split on a GPU). The
    timed window starts at the end of step `warmup` (synchronised) and ends at `finish()`. The profiled
    window starts at the end of the second step, so the run's setup (data loader, model card examples,
    callbacks' on_train_begin) and the first steps stay out of it.
    """

    def __init__(self, device: str = "cpu", sync: bool = False) -> None:
        self.device, self.sync = device, sync
        self.sink: list[tuple[int, int, int]] = []  # what record_forwards appends to
        self.start()

    def start(self, profile_steps: int = 0, warmup: int = 1) -> None:
        self.steps: list[Step] = []
        self.last: float | None = None
        self.ends, self.warmup, self.window = 0, warmup, None
        self.marks: dict[str, float] = {}
        self.sink.clear()
        self.profile_steps, self.profile, self._profiler = profile_steps, None, None

    def mark(self, name: str, first_only: bool = False) -> None:
        """The time of a phase boundary in this step (`first_only`: keep the first of several)."""
        if first_only and name in self.marks:
            return
        if self.sync:
            synchronize(self.device)
        self.marks[name] = time.perf_counter()

    def step_end(self) -> None:
        self.mark("end")
        now = self.marks["end"]
        self.ends += 1
        if self.ends == self.warmup:
            synchronize(self.device)
            self.window = time.perf_counter()
        if self.last is not None and self.ends > self.warmup:
            self.steps.append(Step(now - self.last, list(self.sink), self._phases()))
        self.sink.clear()
        self.marks = {}
        if self.profile_steps and self.ends == 2:
            from torch.profiler import ProfilerActivity, profile

            self._profiler = profile(activities=[ProfilerActivity.CPU])
            self._profiler.start()
            self._window_start = time.perf_counter()
        elif self._profiler is not None and self.ends == 2 + self.profile_steps:
            wall = time.perf_counter() - self._window_start
            self._profiler.stop()
            ops = [(e.key, e.self_cpu_time_total / 1e6, e.count) for e in self._profiler.key_averages()]
            self.profile = {"wall": wall, "steps": self.profile_steps, "ops": ops}
            self._profiler = None
        self.last = time.perf_counter()

    def _phases(self) -> dict[str, float]:
        """forward (loss included), backward (to the optimizer step: gradient clipping included),
        optimizer; empty where the step had no forward marks."""
        m = self.marks
        if not {"fwd_start", "fwd_end"} <= m.keys():
            return {}
        backward_end = m.get("bwd_end", m["end"])
        return {
            "forward": m["fwd_end"] - m["fwd_start"],
            "backward": backward_end - m["fwd_end"],
            "optimizer": m.get("opt_end", m["end"]) - backward_end,
        }

    def finish(self) -> float:
        """Seconds of the timed window (after the warm-up), synchronised."""
        synchronize(self.device)
        assert self.window is not None, "fewer steps than the warm-up"
        return time.perf_counter() - self.window


def clock_callback(clock: Clock) -> Any:
    """A trainer callback that marks the backward's and the optimizer's ends and closes each step."""
    from transformers import TrainerCallback

    class StepClock(TrainerCallback):
        def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            clock.mark("bwd_end")

        def on_optimizer_step(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            clock.mark("opt_end")

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            clock.step_end()

    return StepClock()


def forward_marks(model: Any, loss: Any, clock: Clock) -> None:
    """Mark the forward's start (the model's first call in a step) and end (the loss's first output).

    Outside dynamo's graph: a timer inside a compiled model would be a graph break it warns about."""
    import torch

    mark = torch.compiler.disable(clock.mark)
    model.register_forward_pre_hook(lambda *a: mark("fwd_start", first_only=True))
    loss.register_forward_hook(lambda *a: mark("fwd_end", first_only=True))
