"""``dmxshm bench vector``: the batch VectorEnv beside gymnasium's, in one run.

For each observation kind, on the same environment (``dmxshm/DuckieLane-v0``)
and the same number of sub-environments, with random actions, it measures
env-steps per second of:

* ``single``: one environment stepped in this process (the per-core rate);
* ``dmxshm``: :func:`dmxshm.make_vec` with one worker per core;
* ``sync``: gymnasium's ``SyncVectorEnv`` (everything in this process);
* ``async``: gymnasium's ``AsyncVectorEnv(shared_memory=True)``, one process
  per sub-environment, actions pickled through one pipe each.

Scaling efficiency = dmxshm / (cores x single). Each rate is the median of
three equal windows after a half-second warm-up.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import gymnasium as gym
import numpy as np

OBS_CONFIGS = (("state", (160, 120)), ("camera", (64, 64)), ("camera", (160, 120)))


@dataclass
class Row:
    """One measurement."""

    impl: str
    obs: str
    camera: str
    num_envs: int
    num_workers: int
    env_steps_per_s: float
    steps: int


def _factory(obs: str, camera: tuple[int, int]) -> Callable[[], gym.Env]:
    def make() -> gym.Env:
        from dmxshm.env import DuckieLaneEnv

        return DuckieLaneEnv(obs=obs, camera=camera)
    return make


WINDOWS = 3  # the rate is the median of this many equal time windows
WARMUP_S = 0.5  # stepped first, untimed: caches, page faults, lazy imports


def _windows(step: Callable[[], int], seconds: float) -> tuple[float, int]:
    """Median rate over WINDOWS windows of ``seconds / WINDOWS`` each, after a warm-up."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < WARMUP_S:
        step()
    rates, total = [], 0
    for _ in range(WINDOWS):
        count = 0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds / WINDOWS:
            count += step()
        rates.append(count / (time.perf_counter() - t0))
        total += count
    return float(np.median(rates)), total


def _time_vec(env: Any, n: int, seconds: float) -> tuple[float, int]:
    rng = np.random.default_rng(0)
    env.reset(seed=0)

    def step() -> int:
        env.step(rng.uniform(-1, 1, (n, 2)).astype(np.float32))
        return n
    return _windows(step, seconds)


def _time_single(obs: str, camera: tuple[int, int], seconds: float) -> tuple[float, int]:
    env = _factory(obs, camera)()
    rng = np.random.default_rng(0)
    env.reset(seed=0)

    def step() -> int:
        _, _, terminated, truncated, _ = env.step(rng.uniform(-1, 1, 2).astype(np.float32))
        if terminated or truncated:
            env.reset()
        return 1
    try:
        return _windows(step, seconds)
    finally:
        env.close()


def run(*, num_envs: int = 16, workers: int | None = None, quick: bool = False,
        configs: tuple[tuple[str, tuple[int, int]], ...] = OBS_CONFIGS,
        impls: tuple[str, ...] = ("dmxshm", "sync", "async"),
        progress: Callable[[str], None] | None = None) -> list[Row]:
    """Measure every implementation for every observation kind."""
    from dmxshm.vector import make_vec

    cores = os.cpu_count() or 1
    workers = workers or cores
    seconds = 1.5 if quick else 4.0
    rows = []
    for obs, camera in configs:
        cam = f"{camera[0]}x{camera[1]}" if obs != "state" else "-"
        if progress:
            progress(f"single {obs} {cam}")
        rate, steps = _time_single(obs, camera, seconds)
        rows.append(Row("single", obs, cam, 1, 1, rate, steps))
        for impl in impls:
            if progress:
                progress(f"{impl} {obs} {cam}")
            if impl == "dmxshm":
                env: Any = make_vec(num_envs, num_workers=workers, obs=obs, camera=camera)
                nproc = min(workers, num_envs)
            elif impl == "sync":
                env = gym.vector.SyncVectorEnv([_factory(obs, camera)] * num_envs)
                nproc = 1
            else:
                env = gym.vector.AsyncVectorEnv([_factory(obs, camera)] * num_envs,
                                                shared_memory=True)
                nproc = num_envs
            try:
                rate, steps = _time_vec(env, num_envs, seconds)
            finally:
                env.close()
            rows.append(Row(impl, obs, cam, num_envs, nproc, rate, steps))
    return rows


def summary(rows: list[Row]) -> list[dict[str, Any]]:
    """Per observation kind: ratios of dmxshm to each peer and scaling efficiency."""
    cores = os.cpu_count() or 1
    out = []
    for obs, cam in dict.fromkeys((r.obs, r.camera) for r in rows):
        by = {r.impl: r.env_steps_per_s for r in rows if (r.obs, r.camera) == (obs, cam)}
        if "dmxshm" not in by:
            continue
        out.append({
            "obs": obs, "camera": cam,
            "vs_sync": by["dmxshm"] / by["sync"] if "sync" in by else None,
            "vs_async": by["dmxshm"] / by["async"] if "async" in by else None,
            "scaling_efficiency": by["dmxshm"] / (cores * by["single"]),
        })
    return out


def as_dicts(rows: list[Row]) -> list[dict[str, Any]]:
    """Rows as JSON-ready dicts."""
    return [asdict(r) for r in rows]
