"""Lane metrics, as a tap of the engine."""

from __future__ import annotations

import time

import numpy as np

from dmxshm.network.taps import Tap, poses_of
from dmxshm.world.world import World


class Lanes(Tap):
    """How well each robot kept its lane, over the published states: worst offset,
    states off the road, and how far it drove (path length)."""

    def __init__(self, world: World) -> None:
        self.world = world
        n = world.num_robots
        self.max_abs_offset_m = np.zeros(n)
        self.off_road_steps = np.zeros(n, np.int64)
        self.distance_m = np.zeros(n)
        self._last: np.ndarray | None = None
        self.seconds = 0.0  # the engine's time in this tap (the summary's metrics_s)

    def state(self, step: int, sim_time_s: float, states: np.ndarray) -> None:
        self.update(poses_of(states))

    def update(self, poses: np.ndarray) -> None:
        """Count ``(R, 3)`` poses ``(x, y, yaw)``."""
        t0 = time.perf_counter()
        if self._last is not None:
            self.distance_m += np.hypot(*(poses[:, :2] - self._last[:, :2]).T)
        self._last = poses
        lane_pose = self.world.road_map.lane_pose
        for i, (x, y, yaw) in enumerate(poses.tolist()):
            lane = lane_pose(x, y, yaw)
            if not lane.on_road:
                self.off_road_steps[i] += 1
            elif np.isfinite(lane.offset_m):
                self.max_abs_offset_m[i] = max(self.max_abs_offset_m[i], abs(lane.offset_m))
        self.seconds += time.perf_counter() - t0

    def report(self) -> dict[str, list[float]]:
        return {"max_abs_offset_m": self.max_abs_offset_m.tolist(),
                "off_road_steps": self.off_road_steps.tolist(),
                "distance_m": self.distance_m.tolist()}
