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
