"""Episodes in a running network: the engine scores the robots of outside agents.

A gym run with ``--episodes`` (:attr:`~dmxshm.network.config.NetworkConfig.episodes`)
scores each robot of its agent slots at every step, by the rule of the multi-robot
worlds (:func:`dmxshm.world.scoring.lane_score`): the reward of the step that led to
the state published at step k, a termination (off the road; a collision with a robot or
an object) and a truncation (``episode_steps`` steps since the robot's episode began).
Each is sent to the robot's slot with the observation of step k (the ``score.slot.N``
port), into the slot's reserved reward and flag fields (docs/abi.md).

A robot whose episode ended is reported once, then stands still (its wheels held at 0,
its motors stopped at once, whatever its agent sends), scoring 0, until its slot asks
for a reset: the slot's robots go back to their start poses, at rest, and start new
episodes; the state after that step is their first (reward 0, no flag).
Robots of built-in agents are scored for nobody: they never end.
"""

from __future__ import annotations

import numpy as np

from dmxshm.shm.slot import scores_dtype
from dmxshm.world.scoring import forward_speed, lane_score


def score_dtype(robots: int) -> np.dtype:
    """What the engine sends one slot each step: its robots' rewards and flags."""
    return np.dtype([("step", "<u8"), *scores_dtype(robots).descr])


class Episodes:
    """The episodes of the ``scored`` robots (indices into the world's robots).

    Args:
        robots: the world's robots.
        scored: the robots that have episodes (an outside agent's).
        dt_s: simulated time between two published states.
        episode_steps: truncation (0: never).
    """

    def __init__(self, robots: int, scored: list[int], dt_s: float,
                 episode_steps: int) -> None:
        self.scored = np.zeros(robots, bool)
        self.scored[scored] = True
        self.dt_s = dt_s
        self.episode_steps = episode_steps
        self.active = self.scored.copy()  # in an episode that has not ended
        self.steps = np.zeros(robots, np.int64)  # steps of each robot's episode
        self._fresh = np.ones(robots, bool)  # the next state is an episode's first
        self.reward = np.zeros(robots)
        self.terminated = np.zeros(robots, bool)
        self.truncated = np.zeros(robots, bool)
        self.ended = 0  # episodes ended so far (the summary's)
        self.resets = 0

    @property
    def stopped(self) -> np.ndarray:
        """The robots held still: scored, and their episode over."""
        return self.scored & ~self.active

    def score(self, states: np.ndarray, lanes: list[tuple[float, float, bool]],
              began: set[int]) -> None:
        """Score the state just published (every robot's ``states``; ``lanes`` their
        ``(offset, heading error, on road)``; ``began``: the robots whose contact began
        in it) into :attr:`reward`, :attr:`terminated` and :attr:`truncated`."""
        self.reward[:] = 0.0
        self.terminated[:] = False
        self.truncated[:] = False
        rows = np.flatnonzero(self.active & ~self._fresh).tolist()
        quats, vels = states["quat_xyzw"].tolist(), states["lin_vel_m_s"].tolist()
        for i in rows:
            offset, heading, on_road = lanes[i]
            speed = forward_speed(quats[i], vels[i])
            self.reward[i], _, self.terminated[i] = lane_score(
                speed, heading, offset, on_road, i in began, self.dt_s)
            self.steps[i] += 1
        if self.episode_steps:
            self.truncated[rows] = (self.steps[rows] >= self.episode_steps) & ~self.terminated[rows]
        ended = self.terminated | self.truncated
        self.ended += int(ended.sum())
        self.active &= ~ended
        self._fresh[:] = False

    def reset(self, robots: np.ndarray) -> None:
        """``robots`` start new episodes (their slot asked: they are back at their start
        poses); the next state scored is their first."""
        rows = np.asarray(robots)[self.scored[np.asarray(robots)]]
        self.active[rows] = True
        self.steps[rows] = 0
        self._fresh[rows] = True
        self.resets += 1

    def write(self, record: np.ndarray, step: int, robots: np.ndarray) -> None:
        """Fill a :func:`score_dtype` ``record`` for ``robots`` (a slot's)."""
        record["step"] = step
        record["reward"] = self.reward[robots]
        record["terminated"] = self.terminated[robots]
        record["truncated"] = self.truncated[robots]
