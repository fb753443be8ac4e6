"""``make_vec(..., num_workers="auto")`` (the default): in-process or worker processes,
chosen by measuring a step.

A worker batch divides a step's work among W cores and adds a handoff (the command
out, the last worker's post back, the wait at the barrier:
:data:`~dmxshm.settings.BATCH_HANDOFF_US`). The batch goes to workers when that is
faster than the step in one process: ``t / W + handoff < t``. ``t`` is measured before
the batch is made, on envs that are then thrown away (the batch's own envs are not
touched): for a batch that may step its envs as arrays (DB18 envs, or multi-robot
DB18 worlds with state observations, :mod:`dmxshm.batch.array_shard`,
:mod:`dmxshm.batch.multi_array_shard`), a step of an in-process batch of the same envs;
otherwise a step of one env (or one multi-robot world) times the number of
worlds. A step of many cheap envs stays in the caller; one of cameras or Bullet
worlds goes to the workers. The batch's ``num_workers`` says what was picked (0: in
this process), and its ``worker_choice`` why.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from dmxshm import settings
from dmxshm.proc.cpus import usable_cpus

AUTO = "auto"
WARMUP_STEPS, TIMED_STEPS = 3, 8


@dataclass(frozen=True)
class WorkerChoice:
    """Why a batch runs where it runs: its measured step in one process (s), the
    handoff assumed (s), the cores it could use, and what was picked (0: in-process)."""

    step_s: float
    handoff_s: float
    cores: int
    num_workers: int


def handoff_s() -> float:
    """:data:`~dmxshm.settings.BATCH_HANDOFF_US` (or ``DMXSHM_HANDOFF_US``), in seconds."""
    text = os.environ.get(settings.HANDOFF_ENV)
    if text is None:
        return settings.BATCH_HANDOFF_US * 1e-6
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 3.6e9:  # (up to an hour)
        raise ValueError(f"{settings.HANDOFF_ENV} must be microseconds from 0 to 3.6e9 (an hour), "
                         f"not {text!r}")
    return value * 1e-6


def choose(step_s: float, num_worlds: int, handoff: float | None = None,
           cores: int | None = None) -> WorkerChoice:
    """Workers (one per usable CPU, at most one per world) where ``step_s / W +
    handoff < step_s``, else 0.

    Example:
        >>> choose(100e-6, 16, handoff=150e-6, cores=2).num_workers
        0
        >>> choose(8e-3, 16, handoff=150e-6, cores=2).num_workers
        2
    """
    h = handoff_s() if handoff is None else handoff
    w = min(cores if cores is not None else len(usable_cpus()), num_worlds)
    picked = w if w > 1 and step_s / w + h < step_s else 0
    return WorkerChoice(step_s, h, w, picked)


def _timed(step: Any) -> float:
    """The median time of :data:`TIMED_STEPS` calls of ``step`` after a warm-up."""
    for _ in range(WARMUP_STEPS):
        step()
    times = []
    for _ in range(TIMED_STEPS):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def probe_step_s(probe: Any, robots: int) -> float:
    """One step of ``probe`` (an env of one robot, or a multi-robot world of
    ``robots``), zero actions, reset on its own seed first; seconds."""
    probe.reset(seed=0)
    if robots > 1:
        zeros = [[0.0, 0.0]] * robots
        return _timed(lambda: probe.step(zeros))
    action = np.zeros(2, np.float32)

    def step() -> None:
        _, _, terminated, truncated, _ = probe.step(action)
        if terminated or truncated:
            probe.reset()
    return _timed(step)


def in_process_step_s(batch_type: Any, num_envs: int, **kwargs: Any) -> float:
    """A step of an in-process batch (``batch_type``:
    :class:`~dmxshm.batch.vector.DmxVectorEnv`) of ``num_envs`` envs made with ``kwargs``
    (thrown away after), zero actions; seconds."""
    batch = batch_type(num_envs, 0, **kwargs)
    try:
        batch.reset(seed=0)
        zeros = np.zeros((num_envs, 2), np.float32)
        return _timed(lambda: batch.step(zeros))
    finally:
        batch.close()
