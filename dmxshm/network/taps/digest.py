"""The trajectory digest, as a tap of the engine."""

from __future__ import annotations

import hashlib

import numpy as np

from dmxshm.network.taps import Tap, poses_of


class Digest(Tap):
    """SHA-256 over every robot's float64 ``(x, y, yaw)`` of each published state, then
    of the state after the last step: two runs with the same digest drove the same
    poses (what it covers, and what not: docs/logging.md).

    Args:
        with_end: hash the state after the last step too (not in a realtime spine
            run, whose digest covers its published states only, as its replay's).
    """

    def __init__(self, with_end: bool = True) -> None:
        self._hash = hashlib.sha256()
        self.with_end = with_end

    def state(self, step: int, sim_time_s: float, states: np.ndarray) -> None:
        self._hash.update(poses_of(states).tobytes())

    def end(self, step: int, sim_time_s: float, states: np.ndarray) -> None:
        if self.with_end:
            self._hash.update(poses_of(states).tobytes())

    def hexdigest(self) -> str:
        return self._hash.hexdigest()
