"""Taps for the network tests, importable by a run's processes.

A tap's spec travels to every process of a run, which imports the spec's module:
this one imports no test machinery (pytest alone is a fifth of a second of each
process's start-up), as ``tests/agents.py`` for the agents.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from dmxshm.network.taps import Tap


class _Counts(Tap):
    """Counts what the engine shows it: each published state, each applied command."""

    def __init__(self) -> None:
        self.seen: list[int] = []
        self.applied: list[int] = []
        self.ended_at: int | None = None

    def state(self, step: int, sim_time_s: float, states: np.ndarray) -> None:
        self.seen.append(step)

    def commands(self, step: int, sim_time_s: float, applied: np.ndarray,
                 expired: np.ndarray | None) -> None:
        self.applied.append(step)

    def end(self, step: int, sim_time_s: float, states: np.ndarray) -> None:
        self.ended_at = step

    def result(self) -> dict[str, Any]:
        return {"states": self.seen, "commands": self.applied, "ended_at": self.ended_at}


@dataclass(frozen=True)
class CountStates:
    """A tap given to a network from a test: one per engine, none elsewhere."""

    name: str = "count"

    def prepare(self, plan: Any, registry: Any) -> None:
        """Nothing to create."""

    def __call__(self, plan: Any, role: str, index: int) -> Tap | None:
        return _Counts() if role == "engine" else None


class _Hangs(Tap):
    """Busy in the engine's loop from its 20th published state on (at most a minute)."""

    def state(self, step: int, sim_time_s: float, states: object) -> None:
        if step >= 20:
            until = time.monotonic() + 60.0
            while time.monotonic() < until:
                pass


@dataclass(frozen=True)
class HangTheEngine:
    """A tap that hangs the engine: it runs, it is not stopped, it publishes nothing."""

    name: str = "hang"

    def prepare(self, plan: Any, registry: Any) -> None:
        """Nothing to create."""

    def __call__(self, plan: Any, role: str, index: int) -> Tap | None:
        return _Hangs() if role == "engine" else None
