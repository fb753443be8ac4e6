"""``dmxshm bench routes``: the lane follower through intersections.

Gym runs of the built-in lane follower with routes drawn by the seed
(``--route seed``) on a map with 3-way and 4-way intersections (the bundled
``grid``: a ring with four 3-ways and a 4-way in the middle), one run per seed.
From each run's summary (the engine's lane figures, over every state): the states
each robot spent off the road, the turns each took (``lane.turns``), the longest
each stood still (``lane.max_still_s``, simulated time: waiting at a stop line, or
stuck), the contacts between robots and with objects. Targets, every seed: no state
off the road, every robot took a turn (left or right), none stood still for more
than 10 s.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from dmxshm.network import Network, NetworkConfig

MAX_STILL_S = 10.0


@dataclass
class SeedRun:
    """One seed's run."""

    seed: int
    off_road_steps: list[int]
    turns: dict[str, list[int]]
    max_still_s: list[float]
    stop_line_waits: list[int]
    robot_collisions: list[int]
    object_collisions: list[int]
    steps_per_s: float

    @property
    def everyone_turned(self) -> bool:
        return all(left + right > 0 for left, right in
                   zip(self.turns["left"], self.turns["right"], strict=True))


@dataclass
class Result:
    """What ``dmxshm bench routes`` measured."""

    map_name: str
    robots: int
    steps: int
    runs: list[SeedRun] = field(default_factory=list)

    def targets(self) -> list[tuple[str, float, bool]]:
        off = sum(sum(r.off_road_steps) for r in self.runs)
        still = max(max(r.max_still_s) for r in self.runs)
        turned = sum(r.everyone_turned for r in self.runs)
        return [("states off the road, every seed: 0", float(off), off == 0),
                ("seeds where every robot turned (of all)", float(turned),
                 turned == len(self.runs)),
                (f"longest standstill <= {MAX_STILL_S:g} s (simulated)", still,
                 still <= MAX_STILL_S)]

    def to_dict(self) -> dict[str, Any]:
        return {"map": self.map_name, "robots": self.robots, "steps": self.steps,
                "runs": [asdict(r) for r in self.runs]}


def run(seeds: tuple[int, ...] = (0, 1, 2), robots: int = 8, steps: int = 3000,
        map_name: str = "grid", route: str = "seed",
        progress: Callable[[str], None] | None = None) -> Result:
    """One gym run per seed (no camera: the lane follower reads the lane pseudo-sensor
    and the time of flight)."""
    res = Result(map_name=map_name, robots=robots, steps=steps)
    for seed in seeds:
        cfg = NetworkConfig(robots=robots, steps=steps, camera=(0, 0), map=map_name,
                            route=route, seed=seed, name=f"bench-routes-{os.getpid()}")
        with Network(cfg) as net:
            s = net.run()
        lane: dict[str, Any] = dict(s.lane)
        res.runs.append(SeedRun(
            seed=seed, off_road_steps=[int(v) for v in lane["off_road_steps"]],
            turns={k: [int(v) for v in vs] for k, vs in lane["turns"].items()},
            max_still_s=[float(v) for v in lane["max_still_s"]],
            stop_line_waits=[int(v) for v in lane["stop_line_waits"]],
            robot_collisions=[int(v) for v in lane["robot_collisions"]],
            object_collisions=[int(v) for v in lane["object_collisions"]],
            steps_per_s=s.steps_per_s))
        if progress is not None:
            progress(f"seed {seed}")
    return res
