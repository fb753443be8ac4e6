"""``dmxshm bench randomize``: what domain randomisation costs a batch.

``make_vec(num_envs, version="v1")`` with ``randomize=True`` (every parameter of
:data:`dmxshm.batch.randomize.DEFAULTS`) against ``randomize=None``, each case with
state observations and with a camera, alternating ABBA in one run, one batch at a
time, the same random duties on both sides: env-steps/s over at least ``seconds``,
and the time of a whole-batch ``reset`` (the median of ``resets`` of them: a reset
draws and applies the parameters, and with a camera builds the jittered camera's
lens map). The reference is the same batch without randomisation; it measures the
cost, not whether the draws are right (tests/batch/test_randomize.py checks that).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from dmxshm.bench.noise import _order, _vec_rate

OBS = ("state", "camera")


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
    cases: list[Case] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["camera"] = list(self.camera)
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


def run(num_envs: int = 16, camera: tuple[int, int] = (64, 64), seconds: float = 2.0,
        repeats: int = 3, resets: int = 5, obs_kinds: tuple[str, ...] = OBS,
        progress: Callable[[str], None] | None = None) -> Result:
    """Measure each of ``obs_kinds`` randomised and not, ``repeats`` times each way."""
    from dmxshm.batch.vector import make_vec

    res = Result(num_envs=num_envs, camera=camera, seconds=seconds, repeats=repeats,
                 resets=resets)
    for obs in obs_kinds:
        case = Case(obs)
        res.cases.append(case)
        for r in range(repeats):
            for on in _order(r):
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
