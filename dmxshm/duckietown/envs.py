"""gym-duckietown's ``gym_duckietown.envs``, on dmxshm, under the API its scripts were
written for (``reset()`` returns the observation, ``step()`` four values):

* :class:`DuckietownEnv`: ``(velocity, steering)`` actions (:mod:`dmxshm.duckietown`);
* :class:`DuckietownLF`: the lane-following task, a ``DuckietownEnv``;
* :class:`DuckietownNav`: the navigation task: at each reset a goal tile is drawn among
  the drivable tiles other than the start's (from the env's generator); reaching it
  ends the episode with reward 1000; ``info["goal_tile"]`` is its tile dict;
* :class:`MultiMapEnv`: one ``DuckietownEnv`` per map of ``map_names``, a reset moving
  to the next (gym-duckietown's own two maps, ``loop_only_duckies`` and
  ``small_loop_only_duckies``, are not bundled with dmxshm: the default is dmxshm's
  ``loop`` and ``grid``; give gym-duckietown's names with ``maps_dir=``, or their
  files);
* :class:`DiscreteWrapper` (:mod:`dmxshm.duckietown.wrappers`), which gym-duckietown's
  module imports too.

Example:
    >>> env = DuckietownNav(map_name="loop", camera_width=32, camera_height=24,
    ...                     domain_rand=False)
    >>> obs = env.reset(); start = env._get_tile(*env.get_grid_coords(env.cur_pos))
    >>> env.goal_tile["drivable"], env.goal_tile is not start
    (True, True)
    >>> obs, reward, done, info = env.step([0.3, 0.0])
    >>> info["goal_tile"] is env.goal_tile
    True
    >>> env.close()
"""

from __future__ import annotations

from typing import Any

from dmxshm.duckietown import legacy
from dmxshm.duckietown.legacy import DuckietownEnv
from dmxshm.duckietown.wrappers import DiscreteWrapper

GOAL_REWARD = 1000


class DuckietownLF(DuckietownEnv):
    """The lane-following task (LF, LFV): a :class:`DuckietownEnv`."""


class DuckietownNav(DuckietownEnv):
    """The navigation task (module docstring)."""

    goal_tile: dict[str, Any] | None = None

    def reset(self, **kwargs: Any) -> Any:
        out = super().reset(**kwargs)
        start = self._get_tile(*self.get_grid_coords(self.cur_pos))
        tiles = self.drivable_tiles
        if len(tiles) < 2:
            from dmxshm.duckietown import DropInError

            raise DropInError("DuckietownNav needs a map with two drivable tiles or more")
        while True:
            self.goal_tile = tiles[int(self.np_random.integers(len(tiles)))]
            if self.goal_tile is not start:
                break
        return out

    def step(self, action: Any) -> tuple[Any, ...]:
        obs, reward, terminated, truncated, info = legacy.split_step(super().step(action))
        info["goal_tile"] = self.goal_tile
        if self._get_tile(*self.get_grid_coords(self.cur_pos)) is self.goal_tile:
            terminated, reward = True, float(GOAL_REWARD)
        return legacy.join_step(obs, reward, terminated, truncated, info)


class MultiMapEnv:
    """One :class:`DuckietownEnv` per map, a reset moving to the next (module docstring).
    Keyword arguments go to every env."""

    def __init__(self, map_names: tuple[str, ...] | list[str] = ("loop", "grid"),
                 **kwargs: Any) -> None:
        self.env_list = [DuckietownEnv(map_name=name, **kwargs) for name in map_names]
        if not self.env_list:
            raise ValueError("MultiMapEnv needs one map or more")
        first = self.env_list[0]
        self.action_space, self.observation_space = first.action_space, first.observation_space
        self.reward_range = first.reward_range
        self.cur_env_idx = 0
        self.cur_reward_sum = 0.0
        self.cur_num_steps = 0

    @property
    def env(self) -> DuckietownEnv:
        """The env of the current map."""
        return self.env_list[self.cur_env_idx]

    @property
    def unwrapped(self) -> DuckietownEnv:
        return self.env

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("env_list", "cur_env_idx"):
            raise AttributeError(name)
        return getattr(self.env, name)

    def seed(self, seed: int | None = None) -> list[int | None]:
        for env in self.env_list:
            env.seed(seed)
        return [seed]

    def reset(self, **kwargs: Any) -> Any:
        self.cur_env_idx = (self.cur_env_idx + 1) % len(self.env_list)
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[Any, ...]:
        out = self.env.step(action)
        _, reward, terminated, truncated, _ = legacy.split_step(out)
        self.cur_reward_sum += reward
        self.cur_num_steps += 1
        if terminated or truncated:
            self.cur_reward_sum, self.cur_num_steps = 0.0, 0
        return out

    def render(self, mode: str = "human", close: bool = False) -> Any:
        return self.env.render(mode, close)

    def close(self) -> None:
        for env in self.env_list:
            env.close()

    @property
    def step_count(self) -> int:
        return self.env.step_count


__all__ = ["DiscreteWrapper", "DuckietownEnv", "DuckietownLF", "DuckietownNav", "MultiMapEnv"]
