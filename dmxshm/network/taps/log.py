"""The MCAP log (``--log``), as taps: each process writes its own part."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np

from dmxshm.network.taps import Tap

if TYPE_CHECKING:
    from dmxshm.logs import LogPart


def _part(path: str, role: str) -> LogPart:
    # Loaded by a run with --log only: a role's process imports this module always.
    from dmxshm.logs import LogPart

    return LogPart(path, role)


class StateLog(Tap):
    """The engine's part: every robot's pose at each published state, and the command
    each robot had in each step (what replay applies there)."""

    def __init__(self, path: str) -> None:
        self.part = _part(path, "engine")

    def state(self, step: int, sim_time_s: float, states: np.ndarray) -> None:
        wall_ns = time.time_ns()
        for robot in range(len(states)):
            self.part.pose(robot, states[robot], step, sim_time_s, wall_ns)

    def commands(self, step: int, sim_time_s: float, applied: np.ndarray,
                 expired: np.ndarray | None) -> None:
        self.part.wheels(step, sim_time_s, time.time_ns(), applied, expired)

    def lights(self, step: int, sim_time_s: float, lights: np.ndarray,
               rows: np.ndarray) -> None:
        self.part.lights(step, sim_time_s, time.time_ns(), lights, rows)

    def close(self) -> None:
        self.part.close()


class SampleLog(Tap):
    """A renderer's part: each sample of its sensors. The samples are copied while
    their slot is held (without images unless the camera was due) and written once
    the tick's slots went out, so that an agent never waits for the log."""

    def __init__(self, path: str, role: str) -> None:
        self.part = _part(path, role)
        self._pending: list[tuple[tuple[int, ...], np.ndarray, tuple[str, ...]]] = []

    def samples(self, step: int, sim_time_s: float, robots: tuple[int, ...],
                obs: np.ndarray, due: tuple[str, ...]) -> None:
        if not due:
            return
        names = obs.dtype.names or ()
        if "camera" in names and "camera" not in due:  # the images are not logged: not copied
            from numpy.lib import recfunctions  # (numpy.ma: a tenth of a second to load)

            kept = recfunctions.repack_fields(obs[[n for n in names if n != "camera"]])
        else:
            kept = obs.copy()
        self._pending.append((robots, kept, due))

    def sent(self, step: int, produced: dict[str, int], missed: dict[str, int]) -> None:
        wall_ns = time.time_ns()
        for robots, obs, due in self._pending:
            self.part.sensors(robots, obs, due, wall_ns)
        self._pending.clear()

    def close(self) -> None:
        self.part.close()


class ImageLog(Tap):
    """A camera process's part: each of its frames."""

    def __init__(self, path: str, role: str) -> None:
        self.part = _part(path, role)

    def images(self, frame: int, step: int, sim_time_s: float, robots: tuple[int, ...],
               images: np.ndarray) -> None:
        self.part.images(robots, images, sim_time_s, time.time_ns())

    def close(self) -> None:
        self.part.close()
