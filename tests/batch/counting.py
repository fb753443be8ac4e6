"""A tiny counting world for the batch's autoreset and info semantics (as gymnasium's
own vector tests use a counting env): its observation is its step count, so every
row of a batch says by itself where its episode is.

- ``reset(seed=s)``: the count starts at ``s % every`` (envs seeded ``seed + i`` are
  staggered), 0 without a seed; info ``{"seed": s}`` (-1 without one).
- ``step(action)``: the count goes up by one; the reward is the action's first
  element (the row's own action came through); terminated when the count reaches
  ``every``; truncated after ``max_episode_steps`` steps of the episode (0: never);
  info ``{"count": count}``.

It declares both info keys (``batch_info``): ``count`` is in a step's info only,
``seed`` in a reset's only, so their ``_`` masks show which rows reset.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class CountingEnv(gym.Env[np.ndarray, np.ndarray]):
    """See the module docstring."""

    batch_info: dict[str, Any] = {"count": np.int64, "seed": np.int64}

    def __init__(self, every: int = 3, max_episode_steps: int = 0) -> None:
        self.every = every
        self.max_episode_steps = max_episode_steps
        self.observation_space = gym.spaces.Box(0, every, (1,), np.int64)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.count = 0
        self.steps = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self.count = 0 if seed is None else seed % self.every
        self.steps = 0
        return np.array([self.count]), {"seed": -1 if seed is None else seed}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self.count += 1
        self.steps += 1
        terminated = self.count >= self.every
        truncated = bool(self.max_episode_steps) and self.steps >= self.max_episode_steps
        return (np.array([self.count]), float(action[0]), terminated,
                truncated and not terminated, {"count": self.count})
