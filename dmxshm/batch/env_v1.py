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
* ``info["turn"]`` names the turn (``None`` when none is ahead);
* **actions are PWM duties** in [-1, 1], left and right, through the Duckiebot's
  motor model (:mod:`dmxshm.world.motor`: 27 rad/s at duty 1, its 0.1 s lag and
  0.05 dead band; ``motor_dynamics=False`` for none), the convention of a network
  robot in ``--action pwm`` and of a duckietown-sdk robot, so one policy drives all
  three;
* **sensors read with the Duckiebot's noise** (``noise=True``, the default;
  :mod:`dmxshm.matrix.noise`): IMU white noise and bias, time-of-flight spread, the
  camera's pixel noise and exposure, drawn from a stream keyed by a seed the env's
  generator draws at each ``reset`` (so ``reset(seed=s)`` gives the same noise);
  with nothing within 1.2 m the range reads 8.0, the Duckiebot driver's
  out-of-range value, with or without noise;
* the camera is the Duckiebot's wide-angle lens by default (``camera_model=
  "duckiebot"``; ``reset``'s ``info["calibration"]`` has its calibration), drawn by
  the fastest renderer here (``renderer="auto"``: the batch renderer where numba is
  installed, measured once per process; :mod:`dmxshm.matrix.renderer_choice`).

v1 may change until the release that fixes it; v0 does not change.

Example:
    >>> import gymnasium, dmxshm
    >>> env = gymnasium.make("dmxshm/DuckieLane-v1")
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, sorted(info)
    ((14,), ['lane_offset_m', 'motor', 'noise', 'on_road', 'turn'])
    >>> env.close()
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium import spaces

from dmxshm.batch.env import DuckieLaneEnv
from dmxshm.matrix.noise import Noise
from dmxshm.sim.db18 import DB18Params, drawn
from dmxshm.sim.obs import (  # noqa: F401  (v1's vector, here since v1 was made)
    MORE_FIELDS,
    NO_TARGET_M,
    STATE_FIELDS,
    STATE_FIELDS_V1,
    STATE_HIGH_V1,
    STATE_LOW_V1,
)
from dmxshm.sim.planar import PlanarWorld
from dmxshm.sim.robots import apply_physics, robot_make
from dmxshm.sim.spec import V1
from dmxshm.world import randomize as rand
from dmxshm.world.motor import DUCKIEBOT, MotorModel, Motors
from dmxshm.world.routes import TURN_CODE, Router, parse_route

_TOF = STATE_FIELDS.index("tof_m")
_ACC = STATE_FIELDS.index("acc_x")



def sense_v1(vector: np.ndarray, noise: Noise | None, robot: int, k: int, dt_s: float,
             max_range_m: float) -> None:
    """v1's sensors on robot ``robot``'s exact state vector at step ``k``, in place: the
    time-of-flight's no-target reading, the IMU's and the range's noise (``noise`` None:
    exact), clipped to v1's bounds. :class:`DuckieLaneV1Env` and the multi-robot worlds
    (:class:`dmxshm.batch.lanes.MultiLane`) both read their robots through it."""
    hit = bool(vector[_TOF] < max_range_m)
    if noise is None:
        if not hit:
            vector[_TOF] = NO_TARGET_M
    else:
        acc, gyro = noise.imu(robot, k, k * dt_s, vector[_ACC:_ACC + 3],
                              vector[_ACC + 3:_ACC + 6])
        vector[_ACC:_ACC + 3], vector[_ACC + 3:_ACC + 6] = acc, gyro
        vector[_TOF] = noise.tof(robot, k, float(vector[_TOF]), hit)
    np.minimum(np.maximum(vector, STATE_LOW_V1, out=vector), STATE_HIGH_V1, out=vector)


class DuckieLaneV1Env(DuckieLaneEnv):
    """See the module docstring; keyword arguments are v0's, and ``route``,
    ``noise``, ``motor_dynamics`` and ``randomize`` (``camera_model`` defaults to
    ``"duckiebot"``).

    ``renderer`` defaults to ``"auto"`` (the fastest renderer here for the camera,
    measured once per process: :mod:`dmxshm.matrix.renderer_choice`; v0 keeps
    ``"tiny"``).

    ``randomize``: None (the default: nothing drawn), True (every parameter of
    :data:`dmxshm.world.randomize.DEFAULTS`), a dict or the path of a YAML/JSON file
    naming the parameters to draw and their ranges (:mod:`dmxshm.world.randomize`).
    """

    _state_low, _state_high = STATE_LOW_V1, STATE_HIGH_V1
    db18_delay_s = 0.0
    """Under DB18, the model's command delay (0: the Duckiematrix engine's default)."""

    def __init__(self, *, map: str = V1.map, route: str | None = V1.route,  # noqa: A002
                 noise: bool = V1.noise, motor_dynamics: bool = V1.motor_dynamics,
                 camera_model: str = V1.camera_model, randomize: Any = V1.randomize,
                 renderer: str = V1.renderer, **kwargs: Any) -> None:
        self.route_turns = parse_route(route)
        self._router: Router | None = None
        self._curvature = 0.0
        self.noise = bool(noise)
        self._noise: Noise | None = None
        self.motor = DUCKIEBOT if motor_dynamics else DUCKIEBOT.ideal()
        self.randomization = rand.parse(randomize)
        if kwargs.get("physics") == "db18" and randomize is True:  # the model's own too
            self.randomization = rand.with_model(self.randomization)
        if kwargs.get("look") == "duckietown" and randomize is True:  # the look's own too
            self.randomization = rand.with_look(self.randomization)
        self._params: dict[str, float] = {}
        self._lut: np.ndarray | None = None
        super().__init__(map=map, camera_model=camera_model, renderer=renderer, **kwargs)
        self._motors = Motors(self.motor, 1, self.world.dt_s)
        self._base_camera = self.camera
        self.sim_spec = self.sim_spec.but(action=V1.action, motor_dynamics=motor_dynamics,
                                          noise=bool(noise), route=route, randomize=randomize)
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

    def _wheels(self, left: float, right: float) -> list[float]:
        return self._motors.step_one(left, right)  # (the world scales by the wheel radius)

    def _command(self, left: float, right: float) -> None:
        if isinstance(self.world, PlanarWorld):  # DB18: the duties are the model's input
            self.world.apply_duties([[left, right]])
        else:
            super()._command(left, right)

    def _measure(self, state: np.ndarray) -> tuple[Any, tuple[float, float, bool], float]:
        obs, lane, speed = super()._measure(state)
        vector = obs if self.obs_kind == "state" else (
            obs["state"] if self.obs_kind == "both" else None)
        if vector is not None:
            sense_v1(vector, self._noise, 0, self._steps, self.world.dt_s,
                     self.tof.max_range_m)
        return obs, lane, speed

    def _image_finish(self) -> Callable[[np.ndarray], None] | None:
        # This step's appearance and noise (a batch worker may draw the image later,
        # after a reset has started another episode).
        lut, noise, k = self._lut, self._noise, self._steps
        if lut is None and noise is None:
            return None

        def finish(image: np.ndarray) -> None:
            if lut is not None:  # the light's colour, brightness, contrast
                rand.apply_lut(image, lut)
            if noise is not None:  # then the sensor's own noise
                noise.camera(0, k, image)
        return finish

    def _turn(self) -> str | None:
        state = self._router.states[0] if self._router is not None else None
        return state.turn if state is not None else None

    def _begin_episode(self) -> dict[str, Any]:
        # The router's, the noise's and the randomisation's draws come from the env's
        # generator, which reset seeded, after the start pose (the router's first:
        # routes as before noise).
        self._router = None
        if self.route_turns is not None:
            self._router = Router(self.world.road_map, 1,
                                  int(self.np_random.integers(2**31)), self.route_turns)
        noise_seed = int(self.np_random.integers(2**31))
        params = (rand.draw(self.randomization, self.np_random)
                  if self.randomization is not None else None)
        motor, noise_model = self._randomize(params)  # the episode's camera, too
        # One bank of camera noise frames for every episode (its seed 0): an episode's
        # own draws pick the frame, its shift and the exposure.
        self._noise = Noise(noise_seed, noise_model, bank_seed=0) if self.noise else None
        info: dict[str, Any] = {"motor": (motor.to_dict() if self.physics == "bullet" else
                                          self._db18_params())}
        if self.noise:
            info["noise"] = {"seed": noise_seed, **noise_model.to_dict()}
        if self._params:
            info["randomization"] = dict(self._params)
        return info

    def _db18_params(self) -> dict[str, float]:
        assert isinstance(self.world, PlanarWorld)
        p = self.world.model.params[0]  # (asdict, but a tenth of its time: flat floats)
        return {f.name: getattr(p, f.name) for f in dataclasses.fields(p)}

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        obs, info = super().reset(seed=seed, options=options)
        info["turn"] = self._turn()
        return obs, info

    def _randomize(self, params: dict[str, float] | None) -> tuple[MotorModel, Any]:
        """Apply one draw of :mod:`~dmxshm.world.randomize` (None: the nominal robot) to
        the robot just placed; its motor model and noise model."""
        self._params = params or {}
        self._lut, self._shades = None, None
        make = robot_make(params, self.motor)
        apply_physics(self.world, [0], [make])
        if isinstance(self.world, PlanarWorld):
            # DB18: the draw's gain, trim and model parameters are the model's own (no
            # motor model on top).
            self.world.set_model([0], [drawn(DB18Params.nominal(self.db18_delay_s), params)])
        if params is not None:
            if self._base_camera is not None:
                self.camera = self._base_camera.jittered(
                    params["camera_height_m"], params["camera_tilt_deg"],
                    params["camera_focal_scale"], params["light_azimuth_deg"])
            self._lut = rand.appearance_lut(params)
            self._shades = rand.shades(params)
        self._motors = Motors(make.motor, 1, self.world.dt_s)
        return make.motor, make.noise

    def step_wheels(self, left: float, right: float
                    ) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = super().step_wheels(left, right)
        info["turn"] = self._turn()
        return obs, reward, terminated, truncated, info

