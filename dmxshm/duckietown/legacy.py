"""The drop-in under the old gym API that gym-duckietown's scripts were written for:
``reset()`` returns the observation, ``step()`` returns ``(obs, reward, done, info)``
(``done``: terminated or truncated), ``seed(s)`` seeds the next reset and
``render(mode)`` takes the mode (``"human"`` by default, as gym-duckietown's: it
draws nothing and says so once; ``"rgb_array"`` and ``"top_down"`` return images). A
script written for gym-duckietown runs with one import changed::

    # from gym_duckietown.envs import DuckietownEnv
    from dmxshm.duckietown.legacy import DuckietownEnv

**With gym installed** (0.21 to 0.26), these classes are that gym's: ``gym.Env``
subclasses whose ``action_space`` and ``observation_space`` are its spaces, with the
reset and step its wrappers expect (:data:`GYM_VERSION`): before 0.26, the old API
above (``reset(return_info=True)`` gives ``(obs, info)`` as 0.22-0.25's); from 0.26,
that gym's new one (``reset()`` gives ``(obs, info)``, ``step()`` five values, as
Gymnasium's). Without gym, the old API.

Example:
    >>> env = DuckietownEnv(map_name="loop", camera_width=32, camera_height=24)
    >>> obs = env.reset()
    >>> obs, reward, done, info = env.step([0.2, 0.0])
    >>> obs.shape, isinstance(done, bool), "Simulator" in info
    ((24, 32, 3), True, True)
    >>> env.close()
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dmxshm import duckietown


def _installed_gym() -> Any:
    """gym, where it is installed (and imports), else None."""
    try:
        import gym
    except Exception:  # noqa: BLE001  (absent, or broken: the old API without it)
        return None
    return gym


GYM = _installed_gym()
GYM_VERSION: tuple[int, ...] | None = (
    tuple(int(p) for p in GYM.__version__.split(".")[:2] if p.isdigit())
    if GYM is not None else None)
"""The installed gym's version ``(major, minor)``, or None."""
NEW_API = GYM_VERSION is not None and GYM_VERSION >= (0, 26)
"""Whether the installed gym is 0.26 or later: reset and step as Gymnasium's."""


def gym_space(space: Any) -> Any:
    """``space`` (Gymnasium's) as the installed gym's (itself without gym)."""
    if GYM is None:
        return space
    from gymnasium import spaces

    if isinstance(space, spaces.Box):
        return GYM.spaces.Box(space.low, space.high, space.shape, dtype=space.dtype)
    if isinstance(space, spaces.Discrete):
        return GYM.spaces.Discrete(int(space.n))
    return space


def split_step(out: tuple[Any, ...]) -> tuple[Any, float, bool, bool, dict[str, Any]]:
    """A step's values, four (before gym 0.26) or five, as five."""
    if len(out) == 5:
        return out
    obs, reward, done, info = out
    return obs, reward, done, False, info


def join_step(obs: Any, reward: float, terminated: bool, truncated: bool,
              info: dict[str, Any]) -> tuple[Any, ...]:
    """A step's values as the installed gym returns them (:data:`NEW_API`)."""
    if NEW_API:
        return obs, reward, terminated, truncated, info
    return obs, reward, bool(terminated or truncated), info


class _OldGymAPI:
    """reset, step, seed and render as gym before 0.26 had them (from 0.26, that gym's:
    Gymnasium's own)."""

    _next_seed: int | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.action_space = gym_space(self.action_space)  # type: ignore[has-type]
        self.observation_space = gym_space(self.observation_space)  # type: ignore[has-type]

    def seed(self, seed: int | None = None) -> list[int | None]:
        self._next_seed = seed
        return [seed]

    def reset(self, **kwargs: Any) -> Any:
        seed, self._next_seed = kwargs.pop("seed", self._next_seed), None
        return_info = kwargs.pop("return_info", False)
        obs, info = super().reset(seed=seed, **kwargs)  # type: ignore[misc]
        return (obs, info) if NEW_API or return_info else obs

    def step(self, action: Any) -> tuple[Any, ...]:
        return join_step(*super().step(np.asarray(action, dtype=np.float64)))  # type: ignore[misc]

    def render(self, mode: str = "human", close: bool = False,
               segment: bool = False) -> np.ndarray | None:
        return super().render(mode, close, segment)  # type: ignore[misc]


_BASES: tuple[type, ...] = (GYM.Env,) if GYM is not None else ()


# The old API's reset and step differ from gymnasium's on purpose: that is the point.
class Simulator(_OldGymAPI, duckietown.Simulator, *_BASES):  # type: ignore[misc]
    """:class:`dmxshm.duckietown.Simulator` under gym-duckietown's gym API."""


class DuckietownEnv(_OldGymAPI, duckietown.DuckietownEnv, *_BASES):  # type: ignore[misc]
    """:class:`dmxshm.duckietown.DuckietownEnv` under gym-duckietown's gym API."""


__all__ = ["DuckietownEnv", "GYM_VERSION", "NEW_API", "Simulator", "gym_space", "join_step",
           "split_step"]
