"""What a run shows the live view: a few overwrite rings, written at a low rate.

Every network run has them (so that ``dmxshm view`` can attach to a run
already going): ``view.meta`` (the run's configuration, as JSON, written
once by the supervisor), ``view.state`` (every robot's pose, written by the
engine at most :data:`STATE_HZ` times a wall second) and ``view.obs.R`` (the
newest camera images and sensor counters of renderer R, at most
:data:`OBS_HZ`). They are overwrite rings: a writer never waits, and the
view only peeks at them (:meth:`~dmxshm.shm.ring.Ring.peek`), so nothing it
does reaches the run. A spine run's timing records are peeked at the same way.
"""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np

from dmxshm.shm.ring import Ring
from dmxshm.sim.sensing import SENSOR_NAMES

STATE_HZ = 30.0
OBS_HZ = 10.0
META_BYTES = 16384
META = "view.meta"
STATE = "view.state"
SENSORS = SENSOR_NAMES
"""The sensors whose counts ``view.obs.R`` carries, in this order (the registry's)."""
META_DTYPE = np.dtype([("json", f"S{META_BYTES}")])


def obs_name(renderer: int) -> str:
    return f"view.obs.{renderer}"


def state_dtype(robots: int) -> np.dtype:
    """``view.state``: the engine's step, times, every robot's (x, y, yaw) and LEDs
    (RGBA of front left, front right, back left, back right; all 0: never set)."""
    return np.dtype([("step", "<i8"), ("sim_time_s", "<f8"), ("wall_time_s", "<f8"),
                     ("late_steps", "<i8"), ("poses", "<f8", (robots, 3)),
                     ("lights", "<f4", (robots, 4, 4))])


def obs_dtype(robots: int, camera_wh: tuple[int, int] | None) -> np.dtype:
    """``view.obs.R``: a renderer's robots, their newest images, its sensor counts."""
    fields: list[tuple] = [("wall_time_s", "<f8"), ("step", "<i8"),
                           ("robots", "<i8", (robots,)), ("produced", "<i8", (len(SENSORS),)),
                           ("missed", "<i8", (len(SENSORS),))]
    if camera_wh:
        fields.append(("camera", "u1", (robots, camera_wh[1], camera_wh[0], 3)))
    return np.dtype(fields)


def write_meta(ring: Ring, meta: dict[str, Any]) -> None:
    data = json.dumps(meta).encode()
    if len(data) > META_BYTES:
        raise ValueError(f"view meta of {len(data)} bytes exceeds {META_BYTES}")
    slot = np.zeros((), META_DTYPE)
    slot["json"] = data
    ring.write(slot)


def read_meta(ring: Ring) -> dict[str, Any] | None:
    got = ring.peek(1)
    return json.loads(bytes(got[0]["json"]).rstrip(b"\0")) if len(got) else None


class Throttle:
    """True at most ``hz`` times a second (and always the first time)."""

    def __init__(self, hz: float) -> None:
        self.period_s = 1.0 / hz
        self.next_s = 0.0

    def due(self) -> bool:
        now = time.monotonic()
        if now < self.next_s:
            return False
        self.next_s = now + self.period_s
        return True
