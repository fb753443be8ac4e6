"""The drop-in under the old gym API that gym-duckietown's scripts were written for:
``reset()`` returns the observation, ``step()`` returns ``(obs, reward, done, info)``
(``done``: terminated or truncated), ``seed(s)`` seeds the next reset and
``render(mode)`` takes the mode (``"human"`` by default, as gym-duckietown's: it
draws nothing and says so once; ``"rgb_array"`` and ``"top_down"`` return images). A
script written for gym-duckietown runs with one import changed::

    # from gym_duckietown.envs import DuckietownEnv
    from dmxshm.duckietown.legacy import DuckietownEnv

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


class _OldGymAPI:
    """reset, step, seed and render as gym before 0.26 had them."""

    _next_seed: int | None = None

    def seed(self, seed: int | None = None) -> list[int | None]:
        self._next_seed = seed
        return [seed]

    def reset(self, **kwargs: Any) -> np.ndarray:
        seed, self._next_seed = kwargs.pop("seed", self._next_seed), None
        obs, _ = super().reset(seed=seed, **kwargs)  # type: ignore[misc]
        return obs

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = super().step(  # type: ignore[misc]
            np.asarray(action, dtype=np.float64))
        return obs, reward, bool(terminated or truncated), info

    def render(self, mode: str = "human", close: bool = False,
               segment: bool = False) -> np.ndarray | None:
        return super().render(mode, close, segment)  # type: ignore[misc]


# The old API's reset and step differ from gymnasium's on purpose: that is the point.
class Simulator(_OldGymAPI, duckietown.Simulator):  # type: ignore[misc]
    """:class:`dmxshm.duckietown.Simulator` under the old gym API."""


class DuckietownEnv(_OldGymAPI, duckietown.DuckietownEnv):  # type: ignore[misc]
    """:class:`dmxshm.duckietown.DuckietownEnv` under the old gym API."""


__all__ = ["DuckietownEnv", "Simulator"]
