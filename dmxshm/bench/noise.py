"""``dmxshm bench noise``: what the sensors' noise costs, on against off in one run.

Four cases, each measured with the noise on and off, alternating, in the same
process and the same run:

* ``network-camera``: gym runs of a network (``robots`` robots, the lane follower,
  a ``camera`` camera): steps/s from the summary;
* ``network-state``: the same without a camera (IMU, encoders, time of flight);
* ``make_vec-camera``: ``make_vec(num_envs, version="v1", obs="camera")`` at
  ``vec_camera``, random duties: env-steps/s over at least ``seconds``;
* ``make_vec-state``: the same with state observations.

The order alternates (on, off, off, on, ...). The figure of each case is the ratio
of the medians, noise on over off (targets:
>= 0.9 with a camera, >= 0.85 state-only). What it measures is the noise's own
work (the draws, the bias walk, the camera's LUT and pixel noise) and what it
changes downstream; the two sides are the same code with ``noise=`` flipped, so
neither is a reference for the other's correctness, only for its speed.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

CAMERA_TARGET = 0.9
STATE_TARGET = 0.85
CASES = ("network-camera", "network-state", "make_vec-camera", "make_vec-state")


@dataclass
class Case:
    """One case: its rates with the noise on and off (steps/s or env-steps/s)."""

    name: str
    unit: str
    on: list[float] = field(default_factory=list)
    off: list[float] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return statistics.median(self.on) / statistics.median(self.off)

    @property
    def target(self) -> float:
        return CAMERA_TARGET if self.name.endswith("camera") else STATE_TARGET


@dataclass
class Result:
    """What ``dmxshm bench noise`` measured."""

    robots: int
    steps: int
    camera: tuple[int, int]
    num_envs: int
    vec_camera: tuple[int, int]
    seconds: float
    repeats: int
    cases: list[Case] = field(default_factory=list)

    def targets(self) -> list[tuple[str, float, bool]]:
        return [(f"{c.name}: {c.unit} with noise / without >= {c.target}", c.ratio,
                 c.ratio >= c.target) for c in self.cases]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["camera"], d["vec_camera"] = list(self.camera), list(self.vec_camera)
        d["cases"] = [{**asdict(c), "ratio": c.ratio, "target": c.target} for c in self.cases]
        return d


def _network(noise: bool, robots: int, steps: int, camera: tuple[int, int]) -> float:
    from dmxshm.network import Network, NetworkConfig

    cfg = NetworkConfig(robots=robots, steps=steps, camera=camera, noise=noise,
                        name=f"bench-noise-{os.getpid()}")
    with Network(cfg) as net:
        return float(net.run().steps_per_s)


def _vec_rate(vec: Any, seconds: float) -> float:
    """Env-steps/s of ``vec`` under random duties (the same for every call), over at
    least ``seconds``."""
    n = vec.num_envs
    actions = np.random.default_rng(0).uniform(-1.0, 1.0, (64, n, 2)).astype(np.float32)
    for k in range(10):  # warm-up
        vec.step(actions[k])
    steps, t0 = 0, time.perf_counter()
    while True:
        vec.step(actions[steps % 64])
        steps += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            return steps * n / elapsed


def _order(repeat: int) -> tuple[bool, bool]:
    """On then off, then off then on (ABBA): neither side always goes first."""
    return (True, False) if repeat % 2 == 0 else (False, True)


def run(robots: int = 4, steps: int = 600, camera: tuple[int, int] = (160, 120),
        num_envs: int = 16, vec_camera: tuple[int, int] = (64, 64), seconds: float = 2.0,
        repeats: int = 3, cases: tuple[str, ...] = CASES,
        progress: Callable[[str], None] | None = None) -> Result:
    """Measure ``cases`` (see the module docstring), ``repeats`` times each way."""
    from dmxshm.batch.vector import make_vec

    res = Result(robots=robots, steps=steps, camera=camera, num_envs=num_envs,
                 vec_camera=vec_camera, seconds=seconds, repeats=repeats)
    for name in cases:
        case = Case(name, "gym steps/s" if name.startswith("network") else "env-steps/s")
        res.cases.append(case)
        if name.startswith("network"):
            cam = camera if name.endswith("camera") else (0, 0)
            for r in range(repeats):
                for noise in _order(r):
                    (case.on if noise else case.off).append(_network(noise, robots, steps, cam))
                    if progress is not None:
                        progress(f"{name} noise {'on' if noise else 'off'}")
            continue
        obs = "camera" if name.endswith("camera") else "state"
        for r in range(repeats):
            for noise in _order(r):  # one batch at a time: its workers alone on the cores
                vec = make_vec(num_envs, version="v1", obs=obs, camera=vec_camera,
                               noise=noise, seed=0)
                try:
                    vec.reset(seed=0)
                    (case.on if noise else case.off).append(_vec_rate(vec, seconds))
                finally:
                    vec.close()
                if progress is not None:
                    progress(f"{name} noise {'on' if noise else 'off'}")
    return res
