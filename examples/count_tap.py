"""A tap of your own: watch what the engine publishes, without touching a role.

    python examples/count_tap.py

The tap sees every published state (every robot's record at once); what it
reports lands in the run's summary under its name. Its spec travels to the
run's processes, so it lives in a module they can import (this file, imported
by its name below), not in ``__main__``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dmxshm.network.taps import Tap


class FastestRobot(Tap):
    """Counts the published states and the fastest speed any robot reached."""

    def __init__(self) -> None:
        self.states = 0
        self.fastest_m_s = 0.0

    def state(self, step: int, sim_time_s: float, states: np.ndarray) -> None:
        self.states += 1
        speeds = np.hypot(states["lin_vel_m_s"][:, 0], states["lin_vel_m_s"][:, 1])
        self.fastest_m_s = max(self.fastest_m_s, float(speeds.max()))

    def result(self) -> dict[str, Any]:
        return {"states": self.states, "fastest_m_s": round(self.fastest_m_s, 3)}


@dataclass(frozen=True)
class Fastest:
    """The spec the network is given: a FastestRobot in the engine, nothing elsewhere."""

    name: str = "fastest"

    def prepare(self, plan: Any, registry: Any) -> None:
        """Nothing to create in shared memory."""

    def __call__(self, plan: Any, role: str, index: int) -> Tap | None:
        return FastestRobot() if role == "engine" else None


if __name__ == "__main__":
    from count_tap import Fastest  # by its module's name: the processes import it so

    from dmxshm.network import NetworkConfig, run

    summary = run(NetworkConfig(robots=2, steps=200, camera=(0, 0), agent="random"),
                  taps=[Fastest()])
    print(f"{summary.steps} steps; tap 'fastest': {summary.taps['fastest']}")
