"""The live view's feeds (:mod:`dmxshm.view.rings`), as taps: overwrite rings
written a few times a second, that nobody waits on."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from dmxshm.network.taps import Tap, poses_of
from dmxshm.shm.ring import Ring
from dmxshm.view.rings import OBS_HZ, SENSORS, STATE_HZ, Throttle


class StatePoses(Tap):
    """The engine's feed (``view.state``): every robot's pose and LEDs, at most
    :data:`~dmxshm.view.rings.STATE_HZ` a second, and the last one at the end."""

    def __init__(self, ring_name: str, late_steps: Callable[[], int | None]) -> None:
        self.ring = Ring.attach(ring_name, side="writer", role="engine")
        self.throttle = Throttle(STATE_HZ)
        self.slot = np.zeros((), self.ring.dtype)
        self.late_steps = late_steps

    def state(self, step: int, sim_time_s: float, states: np.ndarray) -> None:
        if self.throttle.due():
            self._show(step, sim_time_s, states)

    def lights(self, step: int, sim_time_s: float, lights: np.ndarray,
               rows: np.ndarray) -> None:
        self.slot["lights"] = lights  # shown with the next pose

    def end(self, step: int, sim_time_s: float, states: np.ndarray) -> None:
        self._show(step, sim_time_s, states)

    def _show(self, step: int, sim_time_s: float, states: np.ndarray) -> None:
        slot = self.slot
        slot["step"], slot["sim_time_s"] = step, sim_time_s
        slot["late_steps"] = self.late_steps() or 0
        slot["wall_time_s"] = time.time()
        slot["poses"] = poses_of(states)
        self.ring.write(slot)

    def close(self) -> None:
        self.ring.close_writer()
        self.ring.close()


class SampleImages(Tap):
    """A renderer's feed (``view.obs.R``): its robots' newest images and its sensor
    counts, at most :data:`~dmxshm.view.rings.OBS_HZ` a second."""

    def __init__(self, ring_name: str, robots: tuple[int, ...], role: str) -> None:
        self.ring = Ring.attach(ring_name, side="writer", role=role)
        self.throttle = Throttle(OBS_HZ)
        self.slot = np.zeros((), self.ring.dtype)
        self.slot["robots"] = robots
        self.where = {r: j for j, r in enumerate(robots)}
        self.has_camera = "camera" in (self.slot.dtype.names or ())
        self._tick: bool | None = None  # this tick is one to show (None: not asked yet)

    def samples(self, step: int, sim_time_s: float, robots: tuple[int, ...],
                obs: np.ndarray, due: tuple[str, ...]) -> None:
        if self._tick is None:
            self._tick = self.throttle.due()
        if self._tick and self.has_camera and "camera" in (obs.dtype.names or ()):
            for j, robot in enumerate(robots):
                self.slot["camera"][self.where[robot]] = obs["camera"][j]

    def sent(self, step: int, produced: dict[str, int], missed: dict[str, int]) -> None:
        if self._tick:
            slot = self.slot
            slot["wall_time_s"], slot["step"] = time.time(), step
            slot["produced"] = [produced.get(s, 0) for s in SENSORS]
            slot["missed"] = [missed.get(s, 0) for s in SENSORS]
            self.ring.write(slot)
        self._tick = None

    def close(self) -> None:
        self.ring.close_writer()
        self.ring.close()
