"""The clock: a step's time is the interval between two consecutive step ends; optional profiled window."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any


@dataclass
class Step:
    """One timed step: its seconds, and per backbone forward (rows, padded length, real tokens)."""

    seconds: float
    forwards: list[tuple[int, int, int]]


class Clock:
    """Closes a Step at every step end; on request, profiles the steps between two step ends.

    The profiled window starts at the end of the second step, so the run's setup (data loader, model card
    examples, callbacks' on_train_begin) and the first steps stay out of it.
    """

    def __init__(self) -> None:
        self.sink: list[tuple[int, int, int]] = []
        self.steps: list[Step] = []
        self.profile_steps = 0
        self.profile: dict[str, Any] | None = None

    def start(self, profile_steps: int = 0) -> None:
        self.steps, self.last, self.ends = [], None, 0
        self.sink.clear()
        self.profile_steps, self.profile, self._profiler = profile_steps, None, None

    def step_end(self) -> None:
        now = time.perf_counter()
        if self.last is not None:
            self.steps.append(Step(now - self.last, list(self.sink)))
        self.sink.clear()
        self.ends += 1
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


def clock_callback(clock: Clock) -> Any:
    from transformers import TrainerCallback

    class StepClock(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            clock.step_end()

    return StepClock()
