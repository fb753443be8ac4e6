"""A PettingZoo ``ParallelEnv`` of many robots in one world.

``dmxshm.parallel_env(robots=4, ...)`` makes a :class:`DuckieParallelEnv` over a
:class:`~dmxshm.batch.lanes.MultiLane`: agents ``duckiebot0`` ... ``duckiebotR-1``, each
acting with PWM duties ``Box(-1, 1, (2,))`` and observing v1's state vector, its
camera, or both; each rewarded as ``DuckieLane-v1``'s robot, less a collision penalty.
A robot whose episode ended (off the road, or in a collision) leaves ``agents``; the
others go on until they end too or the episode is truncated.

``reset(seed, options={"poses": [(x, y, yaw), ...]})`` starts the robots where given
(one row per robot; no start poses drawn), for scenes set up by hand.

``state()`` is the global view for centralised training: every robot's ``(x, y, yaw,
active)`` (``state="poses"``, the default), or the map from above with the robots on it
(``state="top"``, drawn by the batch renderer); ``render()`` (``render_mode=
"rgb_array"``) draws the top view.

The env is picklable (SuperSuit and Ray pickle envs): what travels is how it was
made, not a world; an unpickled env is reset before use, as every PettingZoo env is.

Example:
    >>> import dmxshm
    >>> env = dmxshm.parallel_env(robots=2, map="loop")
    >>> obs, infos = env.reset(seed=0)
    >>> sorted(obs), obs["duckiebot0"].shape
    (['duckiebot0', 'duckiebot1'], (14,))
    >>> obs, rewards, terms, truncs, infos = env.step({a: [0.3, 0.3] for a in env.agents})
    >>> env.close()
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo.utils.env import ParallelEnv

from dmxshm.batch.lanes import MultiLane, MultiLaneError, single_space

AGENT_PREFIX = "duckiebot"
STATES = ("poses", "top")
TOP_VIEW_PX = 256
"""The top view's side (``state="top"`` and ``render()``)."""


class DuckieParallelEnv(ParallelEnv[str, Any, np.ndarray]):
    """See the module docstring. Keyword arguments are
    :class:`~dmxshm.batch.lanes.MultiLane`'s, with ``render_mode`` (``"rgb_array"``: the
    top view) and ``state`` (``"poses"`` or ``"top"``)."""

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "name": "dmxshm_duckielane_v1",
                                "is_parallelizable": True, "render_fps": 30}

    def __init__(self, robots: int = 4, render_mode: str | None = None,
                 state: str = "poses", **kwargs: Any) -> None:
        if render_mode not in (None, "rgb_array"):
            raise MultiLaneError(f"render_mode must be None or 'rgb_array', not "
                                 f"{render_mode!r}")
        if state not in STATES:
            raise MultiLaneError(f"state must be one of {', '.join(STATES)}, not {state!r}")
        self._kwargs = {"robots": robots, **kwargs}
        self.render_mode = render_mode
        self.state_kind = state
        self.core = MultiLane(robots, **kwargs)
        self.possible_agents = [f"{AGENT_PREFIX}{i}" for i in range(self.core.robots)]
        self.agents: list[str] = []
        self._index = {a: i for i, a in enumerate(self.possible_agents)}
        single = single_space(self.core)
        self.observation_spaces = {a: single for a in self.possible_agents}
        action = single_space(self.core, "action")
        self.action_spaces = {a: action for a in self.possible_agents}
        r = self.core.robots
        self.state_space = (spaces.Box(0, 255, (TOP_VIEW_PX, TOP_VIEW_PX, 3), np.uint8)
                            if state == "top" else
                            spaces.Box(-np.inf, np.inf, (r, 4), np.float32))
        self._top: Any = None

    # -- PettingZoo's API ---------------------------------------------------------------
    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        poses = (options or {}).get("poses")
        obs, infos = self.core.reset(seed, poses)
        self.agents = list(self.possible_agents)
        return self._split(obs, self.agents), {a: infos[i] for i, a in enumerate(self.agents)}

    def step(self, actions: dict[str, Any]) -> tuple[dict[str, Any], dict[str, float],
                                                     dict[str, bool], dict[str, bool],
                                                     dict[str, dict[str, Any]]]:
        if not self.agents:
            raise MultiLaneError("step() after every agent's episode ended: reset() first")
        duties = np.zeros((self.core.robots, 2))
        for agent, action in actions.items():
            i = self._index.get(agent)
            if i is None:
                raise MultiLaneError(f"unknown agent {agent!r}; the agents are "
                                     f"{', '.join(self.possible_agents)}")
            duties[i] = np.asarray(action, np.float64).reshape(2)
        live = self.agents
        obs, rewards, terminated, truncated, infos = self.core.step(duties)
        out = (self._split(obs, live), {a: float(rewards[self._index[a]]) for a in live},
               {a: bool(terminated[self._index[a]]) for a in live},
               {a: bool(truncated[self._index[a]]) for a in live},
               {a: infos[self._index[a]] for a in live})
        self.agents = [a for a in live if self.core.active[self._index[a]]]
        return out

    def _split(self, obs: Any, agents: list[str]) -> dict[str, Any]:
        index = self._index
        if isinstance(obs, dict):
            return {a: {k: v[index[a]] for k, v in obs.items()} for a in agents}
        return {a: obs[index[a]] for a in agents}

    def state(self) -> np.ndarray:
        """The global view: ``(robots, 4)`` float32 rows ``(x, y, yaw, active)``, or the
        top view (``state="top"``)."""
        if self.state_kind == "top":
            return self._top_view()
        poses = self.core.poses()
        return np.concatenate([poses, self.core.active[:, None]], axis=1).astype(np.float32)

    def render(self) -> np.ndarray | None:
        """The map from above with the robots (``render_mode="rgb_array"``), else None."""
        if self.render_mode != "rgb_array":
            return None
        return self._top_view()

    def _top_view(self) -> np.ndarray:
        """The map straight from above, every robot on it, drawn by the batch renderer
        (a camera high over the map's centre, looking down)."""
        from dmxshm.matrix.batch_render import renderer_of
        from dmxshm.matrix.camera import Camera
        from dmxshm.world.state import ROBOT_STATE_DTYPE

        world = self.core.world
        if self._top is None:
            w_m, h_m = world.road_map.size_m
            height = 4.0 * max(w_m, h_m)
            fov = 2 * math.degrees(math.atan(0.55 * max(w_m, h_m) / height))
            camera = Camera(TOP_VIEW_PX, TOP_VIEW_PX, fov_deg=fov, tilt_deg=90.0,
                            mount_m=(0.0, 0.0, 0.0), far_m=2 * height, renderer="batch")
            pose = np.zeros(1, ROBOT_STATE_DTYPE)
            pose["pos_m"] = (w_m / 2, h_m / 2, height)
            # turned a quarter left: the image's up is north, its right east
            pose["quat_xyzw"] = (0.0, 0.0, math.sin(math.pi / 4), math.cos(math.pi / 4))
            self._top = (camera, pose)
        camera, pose = self._top
        out = np.zeros((1, TOP_VIEW_PX, TOP_VIEW_PX, 3), np.uint8)
        states = world.state(copy=False)
        return renderer_of(world).render([camera], pose, world.sim_time_s, out,
                                         seen=states)[0]

    def close(self) -> None:
        self.core.close()

    # -- pickling: how it was made, not its world ---------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        return {"kwargs": self._kwargs, "render_mode": self.render_mode,
                "state": self.state_kind}

    def __setstate__(self, d: dict[str, Any]) -> None:
        kwargs = dict(d["kwargs"])
        self.__init__(kwargs.pop("robots"), render_mode=d["render_mode"],  # type: ignore[misc]
                      state=d["state"], **kwargs)
