"""Agents for the spine tests, importable by spawned agent processes."""

from __future__ import annotations

import threading

import numpy as np

ANSWERS_BEFORE_HANG = 20


class _Counter:
    calls = 0


def hangs_after_20(obs: np.ndarray) -> tuple[float, float]:
    """Answers 20 observations, then never again (a hung agent)."""
    _Counter.calls += 1
    if _Counter.calls > ANSWERS_BEFORE_HANG:
        threading.Event().wait()  # hang: the spine must go on without us
    return 6.0, 6.0


def crashes_after_20(obs: np.ndarray) -> tuple[float, float]:
    """Answers 20 observations, then raises."""
    _Counter.calls += 1
    if _Counter.calls > ANSWERS_BEFORE_HANG:
        raise RuntimeError("agent crashed on purpose")
    return 6.0, 6.0


def starts_late(obs: np.ndarray) -> tuple[float, float]:
    """Keeps the spine waiting for 0.3 s before its first answer."""
    if _Counter.calls == 0:
        threading.Event().wait(0.3)  # the behaviour under test: a slow start
    _Counter.calls += 1
    return 6.0, 6.0
