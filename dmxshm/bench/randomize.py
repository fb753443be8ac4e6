"""``dmxshm bench randomize``: what domain randomisation costs a batch.

``make_vec(num_envs, version="v1")`` with ``randomize=True`` (every parameter of
:data:`dmxshm.world.randomize.DEFAULTS`) against ``randomize=None``, each case with
state observations and with a camera, alternating ABBA in one run, one batch at a
time, the same random duties on both sides: env-steps/s over at least ``seconds``,
and the time of a whole-batch ``reset`` (the median of ``resets`` of them: a reset
draws and applies the parameters, and with a camera builds the jittered camera's
lens map). The reference is the same batch without randomisation; it measures the
cost, not whether the draws are right (tests/batch/test_randomize.py checks that).

The ``network`` case is a gym run of ``robots`` PWM robots with the Duckiebot's lens
camera at ``network_camera`` and the lane follower, ``randomize=True`` against none:
gym steps/s from the summary, and in place of the reset the run's time outside its
engine's loop: from :meth:`~dmxshm.network.Network.start` to the end of
:meth:`~dmxshm.network.Network.close`, less the summary's ``wall_time_s`` (the
processes start and each robot's jittered camera is built there;
tests/network/test_randomize.py checks the draws).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from dmxshm.bench.noise import _order, _vec_rate

OBS = ("state", "camera", "network")


@dataclass
class Case:
    """One observation kind: env-steps/s and reset times, randomised and not."""

    obs: str
    on: list[float] = field(default_factory=list)
    off: list[float] = field(default_factory=list)
    reset_on_s: list[float] = field(default_factory=list)
    reset_off_s: list[float] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return statistics.median(self.on) / statistics.median(self.off)

    @property
    def reset_ratio(self) -> float:
        return statistics.median(self.reset_on_s) / statistics.median(self.reset_off_s)


@dataclass
class Result:
    """What ``dmxshm bench randomize`` measured."""

    num_envs: int
    camera: tuple[int, int]
    seconds: float
    repeats: int
    resets: int
    robots: int = 4
    steps: int = 300
    network_camera: tuple[int, int] = (160, 120)
    cases: list[Case] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["camera"], d["network_camera"] = list(self.camera), list(self.network_camera)
        d["cases"] = [{**asdict(c), "ratio": c.ratio, "reset_ratio": c.reset_ratio}
                      for c in self.cases]
        return d


def _resets(vec: Any, n: int) -> list[float]:
    out = []
    for k in range(n):
        t0 = time.perf_counter()
        vec.reset(seed=100 + k)
        out.append(time.perf_counter() - t0)
    return out


def _network(on: bool, robots: int, steps: int, camera: tuple[int, int]) -> tuple[float, float]:
    """A gym run's steps/s and time outside its loop, randomised or not."""
    from dmxshm.network import Network, NetworkConfig

    cfg = NetworkConfig(robots=robots, steps=steps, camera=camera, camera_model="duckiebot",
                        action="pwm", randomize=True if on else None,
                        name=f"bench-randomize-{os.getpid()}")
    t0 = time.perf_counter()
    with Network(cfg) as net:
        summary = net.run()
    outside = time.perf_counter() - t0 - float(summary.wall_time_s)
    return float(summary.steps_per_s), outside


def run(num_envs: int = 16, camera: tuple[int, int] = (64, 64), seconds: float = 2.0,
        repeats: int = 3, resets: int = 5, obs_kinds: tuple[str, ...] = OBS,
        progress: Callable[[str], None] | None = None, robots: int = 4, steps: int = 300,
        network_camera: tuple[int, int] = (160, 120)) -> Result:
    """Measure each of ``obs_kinds`` randomised and not, ``repeats`` times each way."""
    from dmxshm.batch.vector import make_vec

    res = Result(num_envs=num_envs, camera=camera, seconds=seconds, repeats=repeats,
                 resets=resets, robots=robots, steps=steps, network_camera=network_camera)
    for obs in obs_kinds:
        case = Case(obs)
        res.cases.append(case)
        for r in range(repeats):
            for on in _order(r):
                if obs == "network":
                    rate, started = _network(on, robots, steps, network_camera)
                    (case.on if on else case.off).append(rate)
                    (case.reset_on_s if on else case.reset_off_s).append(started)
                    if progress is not None:
                        progress(f"network randomize {'on' if on else 'off'}")
                    continue
                vec = make_vec(num_envs, version="v1", obs=obs, camera=camera,
                               randomize=True if on else None, seed=0)
                try:
                    vec.reset(seed=0)  # the workers up and warm
                    times = _resets(vec, resets)
                    (case.reset_on_s if on else case.reset_off_s).append(statistics.median(times))
                    vec.reset(seed=0)
                    (case.on if on else case.off).append(_vec_rate(vec, seconds))
                finally:
                    vec.close()
                if progress is not None:
                    progress(f"{obs} randomize {'on' if on else 'off'}")
    return res
