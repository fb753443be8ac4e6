"""gym-duckietown's module paths under the installed gym (0.21 to 0.26): its ``gym.Env``,
its spaces, the reset and step its wrappers expect; an old-gym ``ObservationWrapper``
that replaces ``observation_space`` and unpacks ``reset()`` as its version does. Runs
where gym is installed (CI's gym environment, ``.ci/run``); skipped with the reason
elsewhere."""

from __future__ import annotations

import os

import numpy as np
import pytest

if os.environ.get("DMXSHM_REQUIRE_GYM"):  # CI's gym environment: fail, not skip
    import gym
else:
    gym = pytest.importorskip("gym", reason="gym is not installed (CI's gym environment "
                              "has it)")

from dmxshm.duckietown import legacy  # noqa: E402
from dmxshm.duckietown.envs import DiscreteWrapper, DuckietownEnv  # noqa: E402
from dmxshm.duckietown.simulator import Simulator  # noqa: E402
from dmxshm.duckietown.wrappers import PyTorchObsWrapper  # noqa: E402

SMALL = {"map_name": "loop", "camera_width": 32, "camera_height": 24, "domain_rand": False}
VERSION = tuple(int(p) for p in gym.__version__.split(".")[:2])


class Halve(gym.ObservationWrapper):
    """A script's own wrapper, written as for that gym: a new observation space, the
    image halved, ``reset()`` unpacked as its version returns it."""

    def __init__(self, env: object) -> None:
        super().__init__(env)
        h, w, c = self.observation_space.shape
        self.observation_space = gym.spaces.Box(0, 255, (h // 2, w // 2, c), np.uint8)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return observation[::2, ::2]


def test_the_classes_are_that_gyms() -> None:
    assert legacy.GYM is gym and legacy.GYM_VERSION == VERSION
    assert (VERSION >= (0, 26)) == legacy.NEW_API
    env = DuckietownEnv(**SMALL)
    try:
        assert isinstance(env, gym.Env) and isinstance(Simulator(**SMALL), gym.Env)
        assert isinstance(env.observation_space, gym.spaces.Box)
        assert isinstance(env.action_space, gym.spaces.Box)
        assert isinstance(DiscreteWrapper(env).action_space, gym.spaces.Discrete)
        assert isinstance(PyTorchObsWrapper(env), gym.ObservationWrapper)
    finally:
        env.close()


def test_reset_and_step_as_its_wrappers_expect() -> None:
    env = Halve(DuckietownEnv(**SMALL))
    try:
        if VERSION >= (0, 26):
            obs, info = env.reset(seed=1)
            obs, reward, terminated, truncated, info = env.step([0.2, 0.0])
            assert isinstance(terminated, bool) and isinstance(truncated, bool)
        else:
            obs = env.reset()
            if VERSION >= (0, 22):
                obs, info = env.reset(return_info=True)
                assert "Simulator" in info
            obs, reward, done, info = env.step([0.2, 0.0])
            assert isinstance(done, bool)
        assert obs.shape == env.observation_space.shape == (12, 16, 3)
        assert env.observation_space.contains(obs)
        assert env.unwrapped.step_count == 1 and env.cur_pos[1] == 0.0
    finally:
        env.close()
