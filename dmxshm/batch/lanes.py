"""Many robots in one world, each sensing, driving and scored as DuckieLane-v1's robot.

:class:`MultiLane` is the core of dmxshm's multi-agent environments: the PettingZoo
:class:`~dmxshm.marl.parallel.DuckieParallelEnv` and the batched multi-agent rows of
``make_vec(..., robots_per_world=R)`` both step it, so a robot's numbers are the same
from either.

Each robot is ``DuckieLane-v1``'s (:mod:`dmxshm.batch.env_v1`): PWM duties through the
Duckiebot's motor model, v1's state vector (:data:`~dmxshm.batch.env_v1.STATE_FIELDS_V1`)
with the sensors' noise, or its camera, a route through intersections, and the same
reward: progress along its lane less ``offset_penalty`` times its offset, per second.
The rule is :func:`dmxshm.world.scoring.lane_score`'s, which a network's engine
scores its robots with too (``--episodes``). What the world adds: the robots meet.
They collide with each other and with the map's objects (one Bullet world); a contact
that begins costs ``collision_penalty``, and with ``end_on_collision`` (the default)
ends that robot's episode, as leaving the road does.
A robot whose episode ended has its motors stopped at once (no lag: it brakes, or skids
to rest if it was spinning) and stays there, an obstacle for the others; its observation
is the last it had; it is **inactive** until the world resets. The episode of the world
is truncated after ``max_episode_steps`` steps.

Seeds: ``reset(seed=s)`` seeds the world's generator, which draws, in order, the start
poses, each robot's pose noise, the route seed, the noise seed and each robot's domain
randomisation (robot by robot, in the config's sorted order).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from dmxshm.batch.env import OBS_KINDS
from dmxshm.batch.env_v1 import STATE_FIELDS_V1, STATE_HIGH_V1, STATE_LOW_V1, sense_v1
from dmxshm.errors import DmxError
from dmxshm.matrix.camera import Camera, quat_matrix
from dmxshm.matrix.cameras import RobotCameras
from dmxshm.matrix.noise import Noise
from dmxshm.matrix.renderer_choice import resolve as resolve_renderer
from dmxshm.matrix.sensors import TimeOfFlight
from dmxshm.settings import EPISODE_STEPS
from dmxshm.sim.db18 import DB18Params, drawn
from dmxshm.sim.planar import PlanarWorld
from dmxshm.sim.robots import Robots, apply_physics, robot_makes
from dmxshm.sim.spec import MULTI, PHYSICS
from dmxshm.world import randomize as rand
from dmxshm.world.maps import load_map
from dmxshm.world.motor import DUCKIEBOT, MotorModel
from dmxshm.world.renderers import RendererError
from dmxshm.world.routes import TURN_CODE, Router, parse_route
from dmxshm.world.scoring import COLLISION_PENALTY, OFFSET_PENALTY, lane_score
from dmxshm.world.world import GRAVITY_M_S2, World


def single_space(core: MultiLane, which: str = "observation") -> Any:
    """One robot's observation space (v1's state vector, its camera image, or both in a
    ``Dict``), or its action space (PWM duties, ``Box(-1, 1, (2,))``)."""
    from gymnasium import spaces

    if which == "action":
        return spaces.Box(-1.0, 1.0, (2,), np.float32)
    vector = spaces.Box(core.state_low, core.state_high, dtype=np.float32)
    w, h = core.camera_wh
    image = spaces.Box(0, 255, (h, w, 3), np.uint8)
    return {"state": vector, "camera": image,
            "both": spaces.Dict({"state": vector, "camera": image})}[core.obs_kind]


class MultiLaneError(DmxError, ValueError):
    """A multi-robot world that cannot be made: no robot, more robots than the map
    holds, an unknown observation kind; the message says which and what to do."""


class MultiLane:
    """``robots`` robots in one world (see the module docstring).

    Args:
        robots: how many robots (at most the map's capacity: ``dmxshm maps``).
        obs: ``"state"``, ``"camera"`` or ``"both"``.
        camera: ``(width, height)`` of each robot's camera.
        map: the map (a bundled name or a file).
        max_episode_steps: truncation of the world's episode (0: never).
        offset_penalty: reward lost per metre of offset per second.
        collision_penalty: reward lost when a robot's contact with a robot or an
            object begins.
        end_on_collision: a collision ends the robot's episode.
        pose_noise_m, yaw_noise_rad: the start poses' noise.
        dt_s: simulated time per step.
        route: v1's routes (``"seed"``, turns like ``"left,straight"``, or None).
        noise: the sensors' noise (v1's).
        motor_dynamics: the motors' lag and dead band.
        camera_model: ``"duckiebot"`` (the lens) or ``"pinhole"``.
        renderer: ``"auto"``, ``"batch"``, ``"tiny"`` or ``"egl"`` (the robots see
            each other: they are drawn in this world).
        randomize: domain randomisation of each robot at each reset (v1's
            ``randomize``: True, a dict or a file).
        look: how the cameras draw the world: ``"flat"`` or ``"duckietown"`` (the
            batch renderer's; docs/renderers.md).
    """

    batch_info: dict[str, Any] = {"lane_offset_m": np.float64, "on_road": np.bool_,
                                  "progress_m": np.float64, "active": np.bool_,
                                  "collided": np.bool_}
    """The info keys the multi-robot batch gives as arrays, with their dtypes: a
    robot's own, whether it acted in the step, and whether a contact began in it."""

    def __init__(self, robots: int = MULTI.robots, *, obs: str = "state",
                 camera: tuple[int, int] = MULTI.camera, map: str = MULTI.map,  # noqa: A002
                 max_episode_steps: int = EPISODE_STEPS, offset_penalty: float = OFFSET_PENALTY,
                 collision_penalty: float = COLLISION_PENALTY, end_on_collision: bool = True,
                 pose_noise_m: float = 0.02, yaw_noise_rad: float = 0.1,
                 dt_s: float = MULTI.dt_s, route: str | None = MULTI.route,
                 noise: bool = MULTI.noise, motor_dynamics: bool = MULTI.motor_dynamics,
                 camera_model: str = MULTI.camera_model, renderer: str = MULTI.renderer,
                 randomize: Any = MULTI.randomize, physics: str = MULTI.physics,
                 look: str = MULTI.look) -> None:
        if obs not in OBS_KINDS:
            raise MultiLaneError(f"obs must be one of {', '.join(OBS_KINDS)}, not {obs!r}")
        if not isinstance(robots, (int, np.integer)) or robots < 1:
            raise MultiLaneError(f"robots must be an integer >= 1, not {robots!r}")
        road_map = load_map(map)
        if robots > road_map.capacity:
            raise MultiLaneError(
                f"map {road_map.name} holds {road_map.capacity} robots, not {robots}: use "
                "fewer robots or a bigger map ('dmxshm maps' lists each map's capacity)")
        self.robots = int(robots)
        self.obs_kind = obs
        self.route_turns = parse_route(route)
        self.noise_on = bool(noise)
        self.motor = DUCKIEBOT if motor_dynamics else DUCKIEBOT.ideal()
        self.randomization = rand.parse(randomize)
        if physics == "db18" and randomize is True:  # the model's own parameters too
            self.randomization = rand.with_model(self.randomization)
        if look == "duckietown" and randomize is True:  # the look's own too
            self.randomization = rand.with_look(self.randomization)
        if physics not in PHYSICS:
            raise MultiLaneError(f"physics must be one of {', '.join(PHYSICS)}, not {physics!r}")
        draws = obs != "state"
        if physics == "db18" and draws:
            if renderer not in ("auto", "batch"):
                raise MultiLaneError(
                    f"physics='db18' draws cameras with the batch renderer, not {renderer!r} "
                    "(tiny and EGL draw Bullet's scene): use renderer='batch' or 'auto'")
            renderer = "batch"
        self.physics = physics
        try:
            self.renderer = resolve_renderer(renderer, (int(camera[0]), int(camera[1]))
                                             if draws else None, camera_model, look)
        except RendererError as exc:
            raise MultiLaneError(str(exc)) from None
        # The robots see each other: they are drawn in their own world (tiny and EGL
        # need its visual shapes; the batch renderer draws from the states).
        self.world: World | PlanarWorld = (
            World(road_map, self.robots, seed=0, dt_s=dt_s, visuals=draws,
                  renderer=self.renderer if draws else "tiny") if physics == "bullet"
            else PlanarWorld(road_map, self.robots, seed=0, dt_s=dt_s))
        self.camera = (Camera.of_model(camera_model, camera[0], camera[1],
                                       renderer=self.renderer, look=look) if draws else None)
        self.camera_wh = (int(camera[0]), int(camera[1]))
        self.tof = TimeOfFlight()
        self.max_episode_steps = max_episode_steps
        self.offset_penalty = offset_penalty
        self.collision_penalty = collision_penalty
        self.end_on_collision = end_on_collision
        self.pose_noise_m = pose_noise_m
        self.yaw_noise_rad = yaw_noise_rad
        self.rng = np.random.default_rng()
        self.steps = 0
        self.active = np.zeros(self.robots, bool)
        self._router: Router | None = None
        self._noise: Noise | None = None
        self._cameras: RobotCameras | None = None
        self._robots = Robots(self.world, self.motor)
        self._params: list[dict[str, float]] = []
        self._obs: Any = None
        self._touching: set[tuple[str, int, int]] = set()
        self._curvature = [0.0] * self.robots
        self.sim_spec = MULTI.but(robots=self.robots, map=map, camera=self.camera_wh,
                                  dt_s=dt_s, route=route, noise=self.noise_on,
                                  motor_dynamics=motor_dynamics, camera_model=camera_model,
                                  renderer=renderer, randomize=randomize, physics=physics,
                                  look=look)

    # -- spaces -------------------------------------------------------------------------
    @property
    def state_low(self) -> np.ndarray:
        return STATE_LOW_V1

    @property
    def state_high(self) -> np.ndarray:
        return STATE_HIGH_V1

    # -- episodes -----------------------------------------------------------------------
    def reset(self, seed: int | None = None, poses: Any = None
              ) -> tuple[Any, list[dict[str, Any]]]:
        """Place the robots afresh (seeded by ``seed``, else the generator goes on);
        their first observations and each one's info.

        ``poses``: ``(robots, 3)`` start poses ``(x, y, yaw)`` to use as they are
        (no start poses or pose noise drawn; the rest is drawn as usual), for a scene
        set up by hand."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        rng, m = self.rng, self.world.road_map
        if poses is not None:
            poses = self._check_poses(poses)
        else:
            poses = []
            for x, y, yaw in m.start_poses(self.robots, rng):
                lateral = (-math.sin(yaw), math.cos(yaw))  # libm: the same on every CPU
                offset = float(rng.normal(0.0, self.pose_noise_m))
                poses.append((x + offset * lateral[0], y + offset * lateral[1],
                              yaw + float(rng.normal(0.0, self.yaw_noise_rad))))
        self.world.replace_robots(poses)
        self.steps = 0
        self.active[:] = True
        self._router = (Router(m, self.robots, int(rng.integers(2**31)), self.route_turns)
                        if self.route_turns is not None else None)
        noise_seed = int(rng.integers(2**31))
        self._params = ([rand.draw(self.randomization, rng) for _ in range(self.robots)]
                        if self.randomization is not None else [])
        models, noise_models = self._randomize()
        self._noise = (Noise(noise_seed, robot_models=noise_models) if self.noise_on
                       else None)
        if self.camera is not None:
            self._cameras = RobotCameras(self.camera, self._noise, self._params or None)
        self._touching = set()
        obs, lanes, _ = self._measure(list(range(self.robots)))
        self._obs = obs
        infos: list[dict[str, Any]] = []
        for i in range(self.robots):
            info: dict[str, Any] = {"lane_offset_m": lanes[i][0], "on_road": lanes[i][2],
                                    "active": True, "motor": self._motor_info(models, i),
                                    "turn": self._turn(i)}
            if self._noise is not None:
                info["noise"] = {"seed": noise_seed}
            if self._params:
                info["randomization"] = dict(self._params[i])
            infos.append(info)
        return obs, infos

    def _motor_info(self, models: list[MotorModel], i: int) -> dict[str, float]:
        """Robot ``i``'s motor model (Bullet), or its DB18 parameters."""
        if isinstance(self.world, PlanarWorld):
            return dataclasses.asdict(self.world.model.params[i])
        return models[i].to_dict()

    def _check_poses(self, poses: Any) -> list[tuple[float, float, float]]:
        try:
            array = np.asarray(poses, np.float64)
        except (TypeError, ValueError) as exc:
            raise MultiLaneError(f"poses must be numbers, ({self.robots}, 3): {exc}") from None
        if array.shape != (self.robots, 3) or not np.isfinite(array).all():
            raise MultiLaneError(f"poses must be {self.robots} finite rows (x, y, yaw), "
                                 f"not {array.tolist()}")
        return [(float(x), float(y), float(yaw)) for x, y, yaw in array]

    def _randomize(self) -> tuple[list[MotorModel], list[Any]]:
        """Each robot's draw applied: physics, motors, noise (the nominal robot
        without a draw)."""
        makes = robot_makes(self._params or None, self.robots, self.motor)
        apply_physics(self.world, range(self.robots), makes)
        if isinstance(self.world, PlanarWorld):
            # DB18: each draw's gain, trim (and model parameters) are its model's own.
            nominal = DB18Params.nominal()
            self.world.set_model(range(self.robots), [drawn(nominal, p) for p in self._params]
                                 if self._params else [nominal] * self.robots)
        models = [make.motor for make in makes]
        self._robots = Robots(self.world, models)
        return models, [make.noise for make in makes]

    def step(self, actions: np.ndarray) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray,
                                                 list[dict[str, Any]]]:
        """Step every robot: ``actions`` ``(robots, 2)`` duties in [-1, 1] (an inactive
        robot's are ignored: its motors rest). Returns the observations, rewards,
        terminations and truncations (one per robot; an inactive robot's reward is 0,
        its flags False: its end was reported once) and each robot's info."""
        duties = np.clip(np.asarray(actions, np.float64).reshape(self.robots, 2), -1.0, 1.0)
        if not np.isfinite(duties).all():
            raise MultiLaneError(f"actions must be finite, not {duties.tolist()}")
        was_active = self.active.copy()
        duties[~was_active] = 0.0
        self._robots.step(self._robots.wheel_speeds(duties))
        self.steps += 1
        live = np.flatnonzero(was_active).tolist()
        obs, lanes, speeds = self._measure(live)
        hit = self._collisions()
        dt = self.world.dt_s
        rewards = np.zeros(self.robots)
        terminated = np.zeros(self.robots, bool)
        truncated = np.zeros(self.robots, bool)
        cut = bool(self.max_episode_steps) and self.steps >= self.max_episode_steps
        infos: list[dict[str, Any]] = []
        for i in range(self.robots):
            if not was_active[i]:
                infos.append({"active": False, "lane_offset_m": float("nan"),
                              "on_road": False, "progress_m": 0.0, "collided": False,
                              "turn": None})
                continue
            offset, heading, on_road = lanes[i]
            collided = i in hit
            rewards[i], progress, terminated[i] = lane_score(
                speeds[i], heading, offset, on_road, collided, dt,
                offset_penalty=self.offset_penalty, collision_penalty=self.collision_penalty,
                end_on_collision=self.end_on_collision)
            truncated[i] = cut and not terminated[i]
            infos.append({"active": True, "lane_offset_m": offset, "on_road": on_road,
                          "progress_m": progress, "collided": collided,
                          "turn": self._turn(i)})
        self.active &= ~(terminated | truncated)
        # an ended robot's motors stop at once (no lag): it brakes where it ended
        self._robots.stop(np.flatnonzero(terminated | truncated))
        self._obs = obs
        return obs, rewards, terminated, truncated, infos

    @property
    def done(self) -> bool:
        """Every robot's episode ended: the world needs a reset."""
        return not self.active.any()

    def batch_row_infos(self, infos: list[dict[str, Any]],
                        step_infos: list[dict[str, Any]] | None
                        ) -> list[dict[str, Any]]:
        """The info each robot's row of the batch shows (the shard's hook,
        :mod:`dmxshm.batch.shard`): ``infos`` as the world returned them (a reset's where
        it reset), ``step_infos`` its step's (None after a reset alone). A stopped
        robot's row has no progress, nor a row whose world reset; ``active`` and
        ``collided`` are the step's, also where the world reset in it (after a reset
        alone: active, not collided); every row has the other keys."""
        rows = []
        for i, info in enumerate(infos):
            step = step_infos[i] if step_infos is not None else None
            row = {"lane_offset_m": info["lane_offset_m"], "on_road": info["on_road"],
                   "active": True if step is None else step["active"],
                   "collided": False if step is None else bool(step.get("collided", False))}
            if step is info and step["active"]:
                row["progress_m"] = info.get("progress_m", 0.0)
            rows.append(row)
        return rows

    def poses(self) -> np.ndarray:
        """Every robot's ``(x, y, yaw)``."""
        from dmxshm.world.state import poses_2d

        return poses_2d(self.world.state(copy=False))

    def close(self) -> None:
        self.world.close()

    # -- measuring ----------------------------------------------------------------------
    def _measure(self, robots: list[int]) -> tuple[Any, dict[int, tuple[float, float, bool]],
                                                   dict[int, float]]:
        """New observations of ``robots`` (the others keep their last), their lane
        poses ``(offset, heading error, on road)`` and forward speeds."""
        states = self.world.state(copy=False)
        # new arrays: an inactive robot's row is its last observation
        obs = self._copy(self._obs) if self._obs is not None else self._blank()
        vectors = obs["state"] if self.obs_kind == "both" else (
            obs if self.obs_kind == "state" else None)
        lanes: dict[int, tuple[float, float, bool]] = {}
        speeds: dict[int, float] = {}
        ranges = (self.world.tof_ranges(self.tof, states[robots], robots)
                  if vectors is not None and robots else [])
        k, noise = self.steps, self._noise
        flat = states.view(np.float64).reshape(self.robots, -1)
        for n, i in enumerate(robots):
            (px, py, _pz, qx, qy, qz, qw, vx, vy, vz, wx, wy, wz,
             ax, ay, az) = flat[i, :16].tolist()
            (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = quat_matrix((qx, qy, qz, qw))
            yaw = math.atan2(2 * (qw * qz + qx * qy), 1 - 2 * (qy * qy + qz * qz))
            lane = self._lane_pose(i, px, py, yaw)
            offset, heading = lane.offset_m, lane.heading_err_rad
            speeds[i] = r00 * vx + r10 * vy + r20 * vz
            lanes[i] = (offset, heading, bool(lane.on_road))
            if vectors is None:
                continue
            az += GRAVITY_M_S2  # the accelerometer reads specific force
            row = [0.0 if offset != offset else offset, 0.0 if heading != heading else heading,
                   speeds[i], wz,
                   r00 * ax + r10 * ay + r20 * az, r01 * ax + r11 * ay + r21 * az,
                   r02 * ax + r12 * ay + r22 * az,
                   r00 * wx + r10 * wy + r20 * wz, r01 * wx + r11 * wy + r21 * wz,
                   r02 * wx + r12 * wy + r22 * wz, ranges[n], *self._route_fields(i)]
            vector = np.array(row, np.float32)
            sense_v1(vector, noise, i, k, self.world.dt_s, self.tof.max_range_m)
            vectors[i] = vector
        if self.obs_kind != "state" and robots:
            assert self._cameras is not None
            images = obs["camera"] if self.obs_kind == "both" else obs
            drawn = np.empty((len(robots), *images.shape[1:]), np.uint8)
            self._cameras.render(self.world, states, robots, k, drawn,
                                 self.world.sim_time_s)
            images[robots] = drawn
        return obs, lanes, speeds

    def _blank(self) -> Any:
        w, h = self.camera_wh
        vectors = np.zeros((self.robots, len(STATE_FIELDS_V1)), np.float32)
        images = np.zeros((self.robots, h, w, 3), np.uint8)
        return {"state": vectors, "camera": images} if self.obs_kind == "both" else (
            vectors if self.obs_kind == "state" else images)

    @staticmethod
    def _copy(obs: Any) -> Any:
        return {k: v.copy() for k, v in obs.items()} if isinstance(obs, dict) else obs.copy()

    def _lane_pose(self, i: int, x: float, y: float, yaw: float) -> Any:
        if self._router is None:
            lane, self._curvature[i] = self.world.road_map._lane(x, y, yaw)
            return lane
        self._router.update(i, x, y, yaw)
        lane, self._curvature[i] = self._router.lane(i, x, y, yaw)
        return lane

    def _route_fields(self, i: int) -> list[float]:
        c = self._curvature[i]
        state = self._router.states[i] if self._router is not None else None
        turn = TURN_CODE[state.turn] if state is not None else 0.0
        return [0.0 if c != c or math.isinf(c) else c, turn, float(state is not None)]

    def _turn(self, i: int) -> str | None:
        state = self._router.states[i] if self._router is not None else None
        return state.turn if state is not None else None

    def _collisions(self) -> set[int]:
        """The robots whose contact with a robot or an object began in this step."""
        robots, objects = self.world.touching()
        now = {("r", a, b) for a, b in robots} | {("o", a, b) for a, b in objects}
        begun = now - self._touching
        self._touching = now
        out: set[int] = set()
        for kind, a, b in begun:
            out.add(a)
            if kind == "r":
                out.add(b)
        return out
