"""What one ``recv()`` + ``send()`` pair costs the parent of a batch.

Two measurements, 16 state envs, ``batch_size=8``:

1. **hot loop**: the parent's Python alone, with no worker involved: the
   completions are planted in the collector and the ``go`` posts go to a
   stand-in, so every call runs warm in the caches;
2. **real run**: recv/send against running workers; the parent's thread CPU
   time per pair, split into the waits on ``ready`` (kernel sleep and
   wake-up included) and everything else.

Usage: ``python scripts/recv_cost.py`` (about 10 s).
"""

from __future__ import annotations

import time
import timeit
from typing import Any

import numpy as np

import dmxshm
import dmxshm.batch.vector as vector_module

PAIRS = 4000


class _NoPost:
    def release(self) -> None:
        pass


def hot_loop(envs: Any) -> float:
    """Microseconds of parent Python per recv+send pair, warm."""
    real_go, envs._go = envs._go, [_NoPost() for _ in envs._go]
    collector = envs._collector
    ids = list(range(8, 16))
    actions = np.zeros((8, 2), np.float32)
    envs._in_flight[:] = True

    def pair() -> None:
        collector.finished = [(float(i), i) for i in ids]
        _, _, _, _, info = envs.recv()
        envs.send(actions, info["env_id"])
        envs._arrays.views["cmd"][:] = 0  # nothing reaches the workers

    try:
        return min(timeit.repeat(pair, number=5000, repeat=5)) / 5000 * 1e6
    finally:
        envs._go = real_go
        envs._in_flight[:] = False


def real_run() -> dict[str, float]:
    """recv/send against the workers: per pair, wall and CPU in and out of the waits."""
    spent = {"wall": 0.0, "cpu": 0.0}
    wait = vector_module.wait_semaphore

    def timed_wait(*args: Any, **kwargs: Any) -> None:
        t, c = time.perf_counter(), time.thread_time()
        try:
            wait(*args, **kwargs)
        finally:
            spent["wall"] += time.perf_counter() - t
            spent["cpu"] += time.thread_time() - c

    vector_module.wait_semaphore = timed_wait
    try:
        envs = dmxshm.make_vec(16, batch_size=8, seed=0)
        try:
            rng = np.random.default_rng(0)
            envs.async_reset(seed=0)

            def pairs(n: int) -> None:
                for _ in range(n):
                    _, _, _, _, info = envs.recv()
                    envs.send(rng.uniform(-1, 1, (8, 2)).astype(np.float32), info["env_id"])
            pairs(200)
            spent.update(wall=0.0, cpu=0.0)
            t0, c0 = time.perf_counter(), time.thread_time()
            pairs(PAIRS)
            wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
        finally:
            envs.close()
    finally:
        vector_module.wait_semaphore = wait
    us = 1e6 / PAIRS
    return {"env_steps_per_s": PAIRS * 8 / wall, "cpu_us": cpu * us,
            "cpu_in_waits_us": spent["cpu"] * us, "cpu_outside_us": (cpu - spent["cpu"]) * us,
            "wall_in_waits_us": spent["wall"] * us}


def main() -> None:
    envs = dmxshm.make_vec(16, batch_size=8, seed=0)
    try:
        hot = hot_loop(envs)
    finally:
        envs.close()
    print(f"hot loop (parent Python only, warm): {hot:.1f} us per recv+send pair")
    r = real_run()
    print(f"real run: {r['env_steps_per_s']:.0f} env-steps/s; parent CPU per pair "
          f"{r['cpu_us']:.1f} us ({r['cpu_us'] / 8:.1f} us per env-step): "
          f"{r['cpu_in_waits_us']:.1f} in the waits on ready, {r['cpu_outside_us']:.1f} outside "
          f"(asleep {r['wall_in_waits_us']:.0f} us per pair)")


if __name__ == "__main__":
    main()
