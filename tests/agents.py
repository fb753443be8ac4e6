"""Policies for the network tests, importable by spawned agent processes."""

from __future__ import annotations

import threading
import time

import numpy as np

SLOW_AGENT_S = 0.02


class Slow:
    """Drives straight, but takes SLOW_AGENT_S per answer."""

    def __init__(self, robot_ids: tuple[int, ...], seed: int = 0) -> None:
        self.n = len(robot_ids)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        time.sleep(SLOW_AGENT_S)  # the behaviour under test: a slow agent, not a wait
        return np.full((self.n, 2), 5.0)


class AnswersOnce:
    """Answers the first observation, then never again (a hung agent)."""

    def __init__(self, robot_ids: tuple[int, ...], seed: int = 0) -> None:
        self.n = len(robot_ids)
        self.calls = 0

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        self.calls += 1
        if self.calls > 1:
            threading.Event().wait()  # hang until the supervisor stops us
        return np.full((self.n, 2), 5.0)


def raises(obs: np.ndarray) -> np.ndarray:
    raise RuntimeError("policy exploded on purpose")


def wrong_shape(obs: np.ndarray) -> np.ndarray:
    return np.zeros(3)


def nan_wheels(obs: np.ndarray) -> np.ndarray:
    return np.full((len(obs), 2), np.nan)


NOT_CALLABLE = 42


def inf_wheels(obs: np.ndarray) -> np.ndarray:
    return np.full((len(obs), 2), np.inf)


def too_fast(obs: np.ndarray) -> np.ndarray:
    return np.full((len(obs), 2), 1e6)


def strings(obs: np.ndarray) -> list[list[str]]:
    return [["fast", "faster"]] * len(obs)


def forward(obs: np.ndarray) -> np.ndarray:
    """Both wheels forward at 5 rad/s: the robots drive."""
    return np.full((len(obs), 2), 5.0)


class NanEveryThird:
    """Drives forward, but the last robot's command is NaN at every third call."""

    def __init__(self, robot_ids: tuple[int, ...], seed: int = 0) -> None:
        self.calls = 0

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        wheels = np.full((len(obs), 2), 5.0)
        if self.calls % 3 == 0:
            wheels[-1] = np.nan
        self.calls += 1
        return wheels


class NeverAnswers:
    """Hangs in its first call (a policy that sleeps): its robots never get a command."""

    def __init__(self, robot_ids: tuple[int, ...], seed: int = 0) -> None:
        self.n = len(robot_ids)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        threading.Event().wait()  # hang until the supervisor stops us
        return np.zeros((self.n, 2))


class BlindLaneFollow:
    """The built-in lane follower with its time of flight covered: it drives into
    whatever is in its lane."""

    def __init__(self, robot_ids: tuple[int, ...], seed: int = 0) -> None:
        from dmxshm.policies import LaneFollow

        self.inner = LaneFollow(robot_ids, seed)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        obs = obs.copy()
        obs["tof_m"] = 10.0
        return self.inner(obs)


def full_speed(obs: np.ndarray) -> np.ndarray:
    """Both wheels at 27 rad/s: the Duckiebot's full speed (duty 1)."""
    return np.full((len(obs), 2), 27.0)
