"""Where a batch step goes: the parent's handoff, the workers' work, the barrier.

Every worker records, in the shared arrays, when it took the step's command
and when it was done (``time.perf_counter``: the same clock in every
process). With ``make_vec(..., breakdown=True)`` the parent adds, per batch
step, when it sent the command (``t0``) and when the last answer reached it
(``t_end``), and splits the step exactly::

    step = handoff_out + span + handoff_back
    handoff_out  = first worker's start - t0       (waking the workers)
    span         = last worker's end - first start (the shard work, and the wait
                   for the slowest: span - mean busy is the barrier's cost)
    handoff_back = t_end - last worker's end        (waking the parent)

and, per worker, ``busy`` (its end - its start) and ``idle`` (step - busy).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class StepBreakdown:
    """Means over the batch steps measured, in microseconds.

    Attributes:
        steps: batch steps measured.
        step_us: the parent's wall time per step (send to last answer).
        handoff_out_us: from the send to the first worker starting.
        span_us: from the first worker's start to the last worker's end.
        handoff_back_us: from the last worker's end to the parent holding every answer.
        busy_us: per worker, the time it worked on its shard.
        idle_us: per worker, the rest of the step.
        barrier_us: span minus the mean busy time: what waiting for the
            slowest worker costs.
    """

    steps: int
    step_us: float
    handoff_out_us: float
    span_us: float
    handoff_back_us: float
    busy_us: list[float]
    idle_us: list[float]
    barrier_us: float


class BreakdownMeter:
    """Sums the split of every batch step (see the module docstring)."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.reset()

    def reset(self) -> None:
        self.steps = 0
        self.step_s = self.out_s = self.span_s = self.back_s = 0.0
        self.busy_s = np.zeros(self.workers)

    def add(self, t0: float, t_end: float, t_start: np.ndarray, t_done: np.ndarray) -> None:
        """One batch step: sent at ``t0``, every answer in at ``t_end``; each worker's
        start and end."""
        first, last = float(t_start.min()), float(t_done.max())
        self.steps += 1
        self.step_s += t_end - t0
        self.out_s += first - t0
        self.span_s += last - first
        self.back_s += t_end - last
        self.busy_s += t_done - t_start

    def result(self) -> StepBreakdown:
        n = max(self.steps, 1)
        step = self.step_s / n * 1e6
        busy = (self.busy_s / n * 1e6).tolist()
        span = self.span_s / n * 1e6
        return StepBreakdown(
            steps=self.steps, step_us=step, handoff_out_us=self.out_s / n * 1e6, span_us=span,
            handoff_back_us=self.back_s / n * 1e6, busy_us=busy,
            idle_us=[step - b for b in busy], barrier_us=span - float(np.mean(busy)))
