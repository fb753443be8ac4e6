"""Stable-Baselines3: a ``VecEnv`` over one dmxshm batch (the ``sb3`` extra).

``pip install 'dmxshm[sb3]'`` (Stable-Baselines3 and its PyTorch), then::

    from stable_baselines3 import PPO
    from dmxshm.sb3 import make_vec_env

    venv = make_vec_env(16, seed=0)          # 16 DuckieLane worlds, one worker per core
    model = PPO("MlpPolicy", venv).learn(100_000)
    venv.close()

SB3's ``VecEnv`` resets an ended env in the step that ended it and puts the
episode's last observation in that env's ``info["terminal_observation"]``:
the batch runs with gymnasium's ``SAME_STEP`` autoreset, and this class turns
its per-key info arrays into SB3's list of per-env dicts, as
``SubprocVecEnv`` gives them (``TimeLimit.truncated`` included). Every
SB3 wrapper of a ``VecEnv`` (``VecNormalize``, ``VecMonitor``,
``VecFrameStack``...) goes on top.

Multi-agent (parameter sharing): ``make_vec_env(64, robots_per_world=4)`` makes the
rows the robots of 16 worlds (:func:`dmxshm.make_vec`'s ``robots_per_world``), so one
policy drives every robot. A row's info adds ``world``, ``agent`` (the robot
``duckiebot{agent}`` of that world), ``active`` and ``collided``. A robot whose episode
ended while its world goes on is a *stopped row*: its ``done`` (with its
``terminal_observation``) comes once, in the step that ended it; after that SB3 sees
reward 0, ``done`` False, ``info["active"]`` False and the robot's last observation, and
its actions are ignored, until its world resets (when all its robots ended, or at
truncation), after which the row is the robot's next episode without another ``done``.
So SB3's ``VecMonitor`` counts a robot's episode's return right, while the episode
after a stopped spell is counted from the stop: its length includes the stopped steps
(their reward is 0), and the stopped steps are in PPO's rollouts (reward 0).

The worlds live in worker processes: ``get_attr`` answers for what every
world shares (``render_mode``, the spaces, ``spec``, ``metadata``),
``env_method`` and ``set_attr`` are refused with an ``AttributeError`` that
says so, and ``get_images`` gives the camera images of the first
:data:`~dmxshm.batch.worker.RENDER_ENVS` worlds (``render_mode="rgb_array"``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import EnvSpec
from gymnasium.vector import AutoresetMode

try:
    from stable_baselines3.common.vec_env.base_vec_env import (
        VecEnv,
        VecEnvIndices,
        VecEnvObs,
        VecEnvStepReturn,
    )
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("dmxshm.sb3 needs Stable-Baselines3: pip install 'dmxshm[sb3]'") from exc

from dmxshm.batch.vector import DmxVectorEnv, make_vec, parse_autoreset_mode
from dmxshm.batch.worker import RENDER_ENVS

SHARED_ATTRS = ("render_mode", "observation_space", "action_space", "spec", "metadata")
"""What ``get_attr`` answers: the same for every world of the batch."""
ROW_KEYS = ("world", "agent", "active", "collided")
"""A multi-agent row's info keys besides DuckieLane's (``robots_per_world``)."""


def row_spec(version: str | type, max_episode_steps: int | None = None) -> EnvSpec | None:
    """The gymnasium spec of one row of a batch of ``version``: ``dmxshm/DuckieLane-v0``
    or ``-v1`` (a multi-agent batch's robots are v1's), with the batch's
    ``max_episode_steps`` where given; None for the gym-duckietown drop-ins and a
    user's env class (``make_vec(version=MyEnv)``), which gymnasium does not know."""
    if not isinstance(version, str):
        return None
    env_id = f"dmxshm/DuckieLane-{version}"
    if env_id not in gym.registry:
        return None
    spec = gym.spec(env_id)
    if max_episode_steps is None:
        return spec
    return dataclasses.replace(spec, max_episode_steps=int(max_episode_steps))


def make_vec_env(num_envs: int, num_workers: int | None = None, seed: int | None = None,
                 **kwargs: Any) -> DmxSB3VecEnv:
    """A :class:`DmxSB3VecEnv` of ``num_envs`` DuckieLane worlds, or, with
    ``robots_per_world=R``, of ``num_envs`` robots in ``num_envs / R`` worlds.

    Args:
        num_envs: rows: worlds, or robots with ``robots_per_world``.
        num_workers: worker processes (default: one per CPU this process may use).
        seed: row i is given ``seed + i`` at the first reset (SB3's ``VecEnv.seed``),
            as ``stable_baselines3.common.env_util.make_vec_env`` does: world i starts
            from ``seed + i``; with ``robots_per_world=R`` a world takes its first
            row's, so world w starts from ``seed + w * R``, the seed of
            ``dmxshm.parallel_env(robots=R, ...).reset(seed=seed + w * R)``.
        kwargs: :func:`dmxshm.make_vec`'s (``obs``, ``camera``, ``max_episode_steps``,
            ``robots_per_world``...), except ``autoreset_mode``.

    Example:
        >>> from dmxshm.sb3 import make_vec_env
        >>> venv = make_vec_env(4, robots_per_world=2, num_workers=1, seed=0)
        >>> obs = venv.reset()
        >>> obs.shape, [(i["world"], i["agent"]) for i in venv.reset_infos]
        ((4, 14), [(0, 0), (0, 1), (1, 0), (1, 1)])
        >>> venv.close()
    """
    venv = DmxSB3VecEnv(num_envs, num_workers, **kwargs)
    if seed is not None:
        venv.seed(seed)
    return venv


class DmxSB3VecEnv(VecEnv):
    """SB3's ``VecEnv`` over a :class:`~dmxshm.batch.vector.DmxVectorEnv` (see the module
    docstring). ``self.batch`` is the batch underneath."""

    def __init__(self, num_envs: int, num_workers: int | None = None, **kwargs: Any) -> None:
        mode = kwargs.pop("autoreset_mode", AutoresetMode.SAME_STEP)
        if parse_autoreset_mode(mode) != AutoresetMode.SAME_STEP:
            raise ValueError("an SB3 VecEnv resets in the step that ends an episode: "
                             f"autoreset_mode must be SAME_STEP, not {mode!r}")
        if not kwargs.pop("copy", True):
            # SB3 keeps the observations a step returns (PPO's _last_obs,
            # VecNormalize's old_obs) past the next step: views of the shared
            # arrays would change under it.
            raise ValueError("copy=False cannot work under SB3, which keeps a step's arrays "
                             "past the next step; leave copy at its default")
        self.batch: DmxVectorEnv = make_vec(num_envs, num_workers,
                                            autoreset_mode=AutoresetMode.SAME_STEP, **kwargs)
        self._actions: np.ndarray | None = None
        self._spec = row_spec(self.batch.version, kwargs.get("max_episode_steps"))
        try:
            super().__init__(num_envs, self.batch.single_observation_space,
                             self.batch.single_action_space)
        except BaseException:
            self.batch.close()
            raise

    # -- the stepping ----------------------------------------------------------
    def reset(self) -> VecEnvObs:
        if any(self._options):
            raise ValueError("a dmxshm batch under SB3 takes no reset options (its worlds "
                             "reset on their own); got "
                             f"{[o for o in self._options if o]}")
        seeds = None if all(s is None for s in self._seeds) else list(self._seeds)
        obs, info = self.batch.reset(seed=seeds)
        self.reset_infos = _per_env(info, self.num_envs)
        self._reset_seeds()
        self._reset_options()
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)

    def step_wait(self) -> VecEnvStepReturn:
        if self._actions is None:
            raise RuntimeError("step_wait() without step_async()")
        actions, self._actions = self._actions, None
        obs, rewards, terminated, truncated, info = self.batch.step(actions)
        dones = terminated | truncated
        now = _per_env(info, self.num_envs)  # the reset's info where an episode ended
        infos: list[dict[str, Any]] = []
        reset_infos: list[dict[str, Any]] = []
        final = _per_env(info.get("final_info", {}), self.num_envs)
        for i in range(self.num_envs):
            if dones[i]:
                # the ended step's info (final_info has DuckieLane's keys) and a
                # multi-agent row's world, agent, active and collided, as make_vec
                # gives them (of this step, also where its world reset in it)
                step_info = {key: now[i][key] for key in ROW_KEYS if key in now[i]}
                step_info.update(final[i])
                step_info["terminal_observation"] = info["final_obs"][i]
                reset_infos.append(now[i])
            else:
                step_info = now[i]
                reset_infos.append({})
            step_info["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
            infos.append(step_info)
        self.reset_infos = reset_infos
        return obs, rewards, dones, infos

    def close(self) -> None:
        self.batch.close()

    # -- what reaches the worlds -----------------------------------------------
    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        if attr_name not in SHARED_ATTRS:
            raise AttributeError(
                f"get_attr({attr_name!r}): the worlds of a dmxshm batch live in worker "
                f"processes; get_attr answers for {', '.join(SHARED_ATTRS)}")
        value = {"observation_space": self.batch.single_observation_space,
                 "action_space": self.batch.single_action_space,
                 "render_mode": self.batch.render_mode,
                 "spec": self._spec,
                 "metadata": {**self.batch.metadata}}[attr_name]
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        raise AttributeError(f"set_attr({attr_name!r}): the worlds of a dmxshm batch live in "
                             "worker processes and cannot be changed after make_vec; pass "
                             "the setting to make_vec_env instead")

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> list[Any]:
        raise AttributeError(f"env_method({method_name!r}): the worlds of a dmxshm batch live "
                             "in worker processes; no method of theirs can be called from here")

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper],
                       indices: VecEnvIndices = None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]  # bare worlds, no gym wrappers

    def get_images(self) -> Sequence[np.ndarray | None]:
        """The camera images of the first :data:`RENDER_ENVS` worlds (``render_mode``
        ``"rgb_array"``), else one None per world."""
        if self.render_mode != "rgb_array":
            return [None for _ in range(self.num_envs)]
        self.batch.render()  # fills the shared images
        return list(self.batch._arrays.views["render"][:RENDER_ENVS].copy())


def _per_env(info: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """Gymnasium's vector info (arrays with ``_key`` masks, a nested dict for a nested
    info such as ``randomization``) as one dict per env, with Python scalars, as SB3's
    VecEnvs give them."""
    out: list[dict[str, Any]] = [{} for _ in range(n)]
    for key, values in info.items():
        if key.startswith("_") or key in ("final_obs", "final_info"):
            continue
        mask = info.get(f"_{key}")
        rows = _per_env(values, n) if isinstance(values, dict) else values
        for i in range(n):
            if mask is None or mask[i]:
                value = rows[i]
                out[i][key] = value.item() if isinstance(value, np.generic) else value
    return out
