"""Trajectory digests of the single-robot and multi-robot front-ends: the behaviour
the one simulation core must keep bit for bit.

    python scripts/front_end_digests.py                   # print the table
    python scripts/front_end_digests.py --json d.json     # and write it
    python scripts/front_end_digests.py --compare d.json  # exit 1 if any digest differs

Rows (each a SHA-256 of what the front-end returned: observations, rewards,
terminations and truncations, in order, over steps that cross resets):

- ``v0-state``, ``v0-camera``: ``DuckieLane-v0`` (state; a 32x24 camera);
- ``v1-state``, ``v1-camera``, ``v1-randomized``: ``DuckieLane-v1`` (its defaults: the
  grid, noise, routes, motor dynamics; a 32x24 camera; randomisation on);
- ``parallel-state``, ``parallel-camera``: ``dmxshm.parallel_env`` of 3 robots;
- ``dropin``: the gym-duckietown drop-in ``DuckietownEnv`` (its 32x24 camera: the image
  is the observation), driven by (velocity, angle) actions.

Actions come from a generator seeded per row, so a table is a function of the code
alone. ``scripts/digests.py`` pins the network and ``make_vec``; this script the rest.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

STEPS = 150
"""Steps per row: enough to end episodes (off the road under random actions) and
reset."""


class _Hash:
    def __init__(self) -> None:
        self._h = hashlib.sha256()

    def add(self, *values: Any) -> None:
        for value in values:
            if isinstance(value, dict):
                for key in sorted(value):
                    self._h.update(str(key).encode())
                    self.add(value[key])
            else:
                array = np.ascontiguousarray(np.asarray(value))
                self._h.update(str(array.dtype).encode() + str(array.shape).encode())
                self._h.update(array.tobytes())

    def hexdigest(self) -> str:
        return self._h.hexdigest()


def _single(make: Callable[[], Any], low: float, high: float, seed: int) -> tuple[str, int]:
    env = make()
    rng = np.random.default_rng(seed)
    h = _Hash()
    try:
        obs, _ = env.reset(seed=seed)
        h.add(obs)
        episode_seed = seed
        for _ in range(STEPS):
            action = rng.uniform(low, high, 2).astype(np.float32)
            obs, reward, terminated, truncated, _ = env.step(action)
            h.add(obs, np.float64(reward), bool(terminated), bool(truncated))
            if terminated or truncated:
                episode_seed += 1
                obs, _ = env.reset(seed=episode_seed)
                h.add(obs)
    finally:
        env.close()
    return h.hexdigest(), episode_seed - seed


def _parallel(obs: str, seed: int) -> tuple[str, int]:
    import dmxshm

    kwargs: dict[str, Any] = {"camera": (32, 24)} if obs != "state" else {}
    env = dmxshm.parallel_env(robots=3, obs=obs, map="loop", **kwargs)
    rng = np.random.default_rng(seed)
    h = _Hash()
    try:
        observations, _ = env.reset(seed=seed)
        h.add(observations)
        episode_seed = seed
        for _ in range(STEPS):
            actions = {a: rng.uniform(-0.2, 1.0, 2).astype(np.float32) for a in env.agents}
            observations, rewards, terms, truncs, _ = env.step(actions)
            h.add(observations, {a: np.float64(r) for a, r in rewards.items()}, terms, truncs)
            if not env.agents:
                episode_seed += 1
                observations, _ = env.reset(seed=episode_seed)
                h.add(observations)
    finally:
        env.close()
    return h.hexdigest(), episode_seed - seed


def rows() -> dict[str, Callable[[], tuple[str, int]]]:
    import gymnasium

    import dmxshm  # noqa: F401  (registers the envs)

    def v(version: str, **kwargs: Any) -> Callable[[], Any]:
        return lambda: gymnasium.make(f"dmxshm/DuckieLane-{version}", **kwargs)

    def dropin() -> Any:
        from dmxshm.duckietown import DuckietownEnv

        # Bullet: the drop-in as pinned (its default moved to DB18 after the pin).
        return DuckietownEnv(map_name="loop", camera_width=32, camera_height=24,
                             physics="bullet")

    return {
        "v0-state": lambda: _single(v("v0"), -0.2, 1.0, 1),
        "v0-camera": lambda: _single(v("v0", obs="camera", camera=(32, 24)), -0.2, 1.0, 2),
        "v1-state": lambda: _single(v("v1"), -0.2, 1.0, 3),
        "v1-camera": lambda: _single(v("v1", obs="camera", camera=(32, 24)), -0.2, 1.0, 4),
        "v1-randomized": lambda: _single(v("v1", randomize=True), -0.2, 1.0, 5),
        "parallel-state": lambda: _parallel("state", 6),
        "parallel-camera": lambda: _parallel("camera", 7),
        "dropin": lambda: _single(dropin, -0.3, 1.0, 8),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="write the table to this file")
    parser.add_argument("--compare", help="compare with the table in this file")
    args = parser.parse_args(argv)
    table = {}
    for name, digest in rows().items():
        table[name], resets = digest()
        print(f"{name:16} {table[name]}  ({resets} resets)", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(table, f, indent=1, sort_keys=True)
            f.write("\n")
    if args.compare:
        with open(args.compare) as f:
            pinned = json.load(f)
        same = [n for n in pinned if table.get(n) == pinned[n]]
        for name in pinned:
            if name not in same:
                print(f"DIFFERS: {name}: {table.get(name)} != {pinned[name]}")
        print(f"{len(same)} of {len(pinned)} equal")
        return 0 if len(same) == len(pinned) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
