"""``dmxshm/DuckieLane-v1``: v0's robot on a map with intersections, with routes.

Everything of :mod:`dmxshm.batch.env` (``DuckieLane-v0``), and:

* the map is ``grid`` by default (a ring with four 3-ways and a 4-way);
* at every intersection the robot is given a turn (``route="seed"``: drawn by a
  generator seeded at each ``reset``; or turns like ``"left,straight,right"``,
  cycled; ``None``: straight on where it can, v0's way), and its lane through the
  intersection is that turn's (:mod:`dmxshm.world.routes`);
* the ``state`` vector gains :data:`MORE_FIELDS` after v0's 11: the lane's
  curvature (1/m, + left; a turn's through an intersection), the turn at the
  intersection ahead or under the robot (-1 left, 0 straight, 1 right) and whether
  one is decided (1) or no intersection is ahead (0);
* ``info["turn"]`` names the turn (``None`` when none is ahead).

Sensor noise, the PWM action convention of the Duckiebot's motor model and the
lens camera come to v1 with the next release's sensors and motors; v1 may change
until that release, v0 does not.

Example:
    >>> import gymnasium, dmxshm
    >>> env = gymnasium.make("dmxshm/DuckieLane-v1")
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, sorted(info)
    ((14,), ['lane_offset_m', 'on_road', 'turn'])
    >>> env.close()
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from gymnasium import spaces

from dmxshm.batch.env import STATE_FIELDS, STATE_HIGH, STATE_LOW, DuckieLaneEnv
from dmxshm.world.routes import TURN_CODE, Router, parse_route

MORE_FIELDS = ("curvature_1_m", "turn", "turn_known")
"""The state vector's fields after v0's :data:`~dmxshm.batch.env.STATE_FIELDS`."""

STATE_FIELDS_V1 = STATE_FIELDS + MORE_FIELDS
STATE_HIGH_V1 = np.concatenate([STATE_HIGH, np.array([10.0, 1.0, 1.0], np.float32)])
STATE_LOW_V1 = np.concatenate([STATE_LOW, np.array([-10.0, -1.0, 0.0], np.float32)])


class DuckieLaneV1Env(DuckieLaneEnv):
    """See the module docstring; keyword arguments are v0's, and ``route``."""

    _state_low, _state_high = STATE_LOW_V1, STATE_HIGH_V1

    def __init__(self, *, map: str = "grid", route: str | None = "seed",  # noqa: A002
                 **kwargs: Any) -> None:
        self.route_turns = parse_route(route)
        self._router: Router | None = None
        self._curvature = 0.0
        super().__init__(map=map, **kwargs)
        state_space = spaces.Box(STATE_LOW_V1, STATE_HIGH_V1, dtype=np.float32)
        if self.obs_kind == "state":
            self.observation_space = state_space
        elif self.obs_kind == "both":
            assert isinstance(self.observation_space, spaces.Dict)
            self.observation_space = spaces.Dict(
                {"state": state_space, "camera": self.observation_space["camera"]})

    def _lane_pose(self, x: float, y: float, yaw: float) -> Any:
        if self._router is None:
            lane, self._curvature = self.world.road_map._lane(x, y, yaw)
            return lane
        self._router.update(0, x, y, yaw)
        lane, self._curvature = self._router.lane(0, x, y, yaw)
        return lane

    def _more_state(self) -> list[float]:
        c = self._curvature
        state = self._router.states[0] if self._router is not None else None
        turn = TURN_CODE[state.turn] if state is not None else 0.0
        return [0.0 if c != c or math.isinf(c) else c, turn, float(state is not None)]

    def _turn(self) -> str | None:
        state = self._router.states[0] if self._router is not None else None
        return state.turn if state is not None else None

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        # The router's seed comes from the env's generator, which reset seeds first.
        self._router = None
        obs, info = super().reset(seed=seed, options=options)
        if self.route_turns is not None:
            self._router = Router(self.world.road_map, 1,
                                  int(self.np_random.integers(2**31)), self.route_turns)
            obs, lane, _ = self._measure(self.world.state(copy=False))
            info.update(lane_offset_m=lane[0], on_road=lane[2])
        info["turn"] = self._turn()
        return obs, info

    def step_wheels(self, left: float, right: float
                    ) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = super().step_wheels(left, right)
        info["turn"] = self._turn()
        return obs, reward, terminated, truncated, info
