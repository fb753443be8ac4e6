"""A drop-in for gym-duckietown: ``Simulator`` and ``DuckietownEnv`` with its
constructor arguments, its observation, its action conventions and its reward, on
dmxshm's world, under Gymnasium's API (``dmxshm.duckietown.legacy`` has the same
classes under the old gym API gym-duckietown's scripts were written for).

What is the same as gym-duckietown (its ``daffy`` branch, 6.1.34), and what is not,
is in docs/gym-duckietown.md. In short:

* **observation**: the camera image, uint8 ``(camera_height, camera_width, 3)``; its
  camera sits where gym-duckietown's does (0.108 m up, 0.066 m forward, 19.15 degrees
  down, a 75-degree vertical field of view), or with ``distortion=True`` it is the
  Duckiebot's lens (dmxshm's, :mod:`dmxshm.matrix.lens`);
* **motion**: gym-duckietown's own, Duckietown's DB18 model with its parameters
  (:mod:`dmxshm.sim.db18`: the nominal model, or with ``dynamics_rand`` the
  uncalibrated one with a drawn trim; its 0.15 s command delay; integrated once per
  frame at ``frame_rate``), contacts in the plane (:mod:`dmxshm.sim.planar`);
  ``physics="bullet"`` gives the robot of dmxshm 0.4 and before (Bullet's, its motors'
  model on top);
* **actions**: ``Simulator``'s are the two motors' duties in [-1, 1] (left, right), the
  DB18's input; ``DuckietownEnv``'s are ``(velocity, steering)``, turned into duties by
  gym-duckietown's own formula with its ``gain``, ``trim``, ``radius``, ``k``, ``limit``
  and wheel distance (0.102 m);
* **reward**: gym-duckietown's ``compute_reward``: ``robot_speed * cos(heading error)
  - 10 * |lateral offset| + 40 * proximity penalty`` on a lane, ``40 * proximity
  penalty`` off one, -1000 and the end of the episode at an invalid pose (a corner off
  the road, or touching an object); truncated after ``max_steps`` physics steps;
* arguments it cannot honour are refused with the reason (:class:`DropInError`).

Example:
    >>> import numpy as np
    >>> from dmxshm.duckietown import DuckietownEnv
    >>> env = DuckietownEnv(map_name="loop", camera_width=64, camera_height=48,
    ...                     domain_rand=False)
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, obs.dtype
    ((48, 64, 3), dtype('uint8'))
    >>> obs, reward, terminated, truncated, info = env.step(np.array([0.3, 0.0]))
    >>> reward > 0, sorted(info["Simulator"])
    (True, ['action', 'msg'])
    >>> env.close()
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
from gymnasium import spaces

from dmxshm.batch.env_v1 import DuckieLaneV1Env
from dmxshm.duckietown.surface import (
    AGENT_SAFETY_RAD,
    ROBOT_LENGTH,
    ROBOT_WIDTH,
    DropInError,
    GymSurface,
    LanePosition,
    NotInLane,
    get_dir_vec,
    get_right_vec,
)
from dmxshm.matrix.camera import Camera
from dmxshm.sim.spec import DROPIN
from dmxshm.world.maps import bundled_maps
from dmxshm.world.objects import footprint_m
from dmxshm.world.robot import BASELINE_M, CHASSIS_CENTER_M, WHEEL_RADIUS_M
from dmxshm.world.state import poses_2d

# gym-duckietown's constants (src/gym_duckietown/simulator.py, daffy), written out.
DEFAULT_MAX_STEPS = 1500
DEFAULT_FRAMERATE = 30
DEFAULT_CAMERA_WIDTH, DEFAULT_CAMERA_HEIGHT = DROPIN.camera
DEFAULT_ROBOT_SPEED = 1.20
DB18_DELAY_S = 0.15
"""gym-duckietown's DB18 command delay (its ``get_DB18_nominal(delay=0.15)``)."""
WHEEL_DIST_M = 0.102
"""gym-duckietown's ``WHEEL_DIST``, the baseline of ``DuckietownEnv``'s formula."""
DEFAULT_ACCEPT_START_ANGLE_DEG = 60
REWARD_INVALID_POSE = -1000
CAMERA_FLOOR_DIST_M, CAMERA_FORWARD_DIST_M = 0.108, 0.066
CAMERA_ANGLE_DEG, CAMERA_FOV_Y_DEG = 19.15, 75.0
COLOR_GROUND, BLUE_SKY = (0.15, 0.15, 0.15), (0.45, 0.82, 1.0)
INVALID_POSE_MSG = "Stopping the simulator because we are at an invalid pose."


MAPS_ENV = "DMXSHM_DUCKIETOWN_MAPS"
"""A folder of gym-duckietown maps (``<name>.yaml``) the drop-in looks in by name."""


def duckietown_world_maps() -> str | None:
    """The folder of gym-duckietown's maps in an installed duckietown-world
    (``duckietown_world/data/gd1/maps``, where gym-duckietown looks), or None. Found
    without importing it."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("duckietown_world")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = os.path.join(list(spec.submodule_search_locations)[0], "data", "gd1", "maps")
    return folder if os.path.isdir(folder) else None


def resolve_map(map_name: str, maps_dir: str | os.PathLike[str] | None = None) -> str:
    """What ``map_name`` names, looked for in this order: an existing file or folder
    (gym-duckietown's YAML, a Duckiematrix layered folder, dmxshm's JSON);
    ``<folder>/<map_name>.yaml`` in ``maps_dir``, in the folder ``$DMXSHM_DUCKIETOWN_MAPS``
    names, and in an installed duckietown-world's maps (gym-duckietown's own:
    ``udem1``, ``loop_empty``, ``small_loop``...); a map bundled with dmxshm.

    Raises:
        DropInError: none of them, saying how to get gym-duckietown's maps.
    """
    if os.path.exists(map_name):
        return map_name
    folders = [os.fspath(f) for f in (maps_dir, os.environ.get(MAPS_ENV) or None,
                                      duckietown_world_maps()) if f is not None]
    for folder in folders:
        for ext in (".yaml", ".yml", ".json", ""):
            path = os.path.join(folder, map_name + ext)
            if os.path.exists(path):
                return path
    if map_name in bundled_maps():
        return map_name
    where = f" nor in {', '.join(folders)}" if folders else ""
    raise DropInError(
        f"map_name {map_name!r} is not a file{where}, nor one of dmxshm's maps "
        f"({', '.join(bundled_maps())}). gym-duckietown's maps (udem1, small_loop, ...) "
        "are not bundled: install duckietown-world (pip install duckietown-world), or "
        f"give maps_dir= or ${MAPS_ENV} the folder that holds them (duckietown-world's "
        "src/duckietown_world/data/gd1/maps), or the path of the map's YAML file")


def _refuse(what: str, value: Any, default: Any, why: str) -> None:
    if value != default:
        raise DropInError(f"{what}={value!r} is not supported by dmxshm's drop-in: {why}")


def _randomization(domain_rand: bool, dynamics_rand: bool, camera_rand: bool
                   ) -> dict[str, dict[str, tuple[float, float]]] | None:
    from dmxshm.world.randomize import DEFAULTS

    config: dict[str, dict[str, tuple[float, float]]] = {}
    if domain_rand:  # gym-duckietown's: light, colours, camera pose and field of view
        config["appearance"] = dict(DEFAULTS["appearance"])
        config["sensing"] = {k: v for k, v in DEFAULTS["sensing"].items()
                             if k.startswith("camera_")}
    if camera_rand:
        config.setdefault("sensing", {})["camera_focal_scale"] = \
            DEFAULTS["sensing"]["camera_focal_scale"]
    if dynamics_rand:  # gym-duckietown's: an uncalibrated robot's trim
        config["physics"] = {"motor_trim": DEFAULTS["physics"]["motor_trim"]}
    return config or None


class Simulator(GymSurface, DuckieLaneV1Env):
    """gym-duckietown's ``Simulator`` (see the module docstring): actions are the
    motors' duties (left, right) in [-1, 1]; its surface (``cur_pos``, ``cur_angle``,
    ``get_lane_pos2``, ``closest_curve_point``, ``_get_tile``...) is gym-duckietown's,
    in its frame (:mod:`dmxshm.duckietown.surface`). Its keyword arguments are
    gym-duckietown's, with its defaults, and dmxshm's ``render_mode``, ``renderer``,
    ``maps_dir`` (where ``map_name`` is looked for) and ``noise`` (the Duckiebot's
    sensor noise on the camera; gym-duckietown has none, so off by default);
    ``renderer`` defaults to ``"auto"`` (the fastest here, as v1's); ``look``
    ``"duckietown"`` draws the batch renderer's Duckietown look (signs with their
    AprilTags, a sky: closer to gym-duckietown's frames than the default ``"flat"``).
    ``map_name`` defaults to dmxshm's ``loop``: gym-duckietown's ``udem1`` is not
    bundled.

    Raises:
        DropInError: an argument it cannot honour, or a map it cannot find.
    """

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": DEFAULT_FRAMERATE}
    db18_delay_s = DB18_DELAY_S

    def __init__(self, map_name: str = "loop", max_steps: int = DEFAULT_MAX_STEPS,
                 draw_curve: bool = False, draw_bbox: bool = False, domain_rand: bool = True,
                 frame_rate: float = DEFAULT_FRAMERATE, frame_skip: int = 1,
                 camera_width: int = DEFAULT_CAMERA_WIDTH,
                 camera_height: int = DEFAULT_CAMERA_HEIGHT,
                 robot_speed: float = DEFAULT_ROBOT_SPEED,
                 accept_start_angle_deg: float = DEFAULT_ACCEPT_START_ANGLE_DEG,
                 full_transparency: bool = False,
                 user_tile_start: tuple[int, int] | None = None, seed: int | None = None,
                 distortion: bool = False, dynamics_rand: bool = False,
                 camera_rand: bool = False, randomize_maps_on_reset: bool = False,
                 num_tris_distractors: int = 12,
                 color_ground: tuple[float, float, float] = COLOR_GROUND,
                 color_sky: tuple[float, float, float] = BLUE_SKY, style: str = "photos",
                 enable_leds: bool = False, *, render_mode: str | None = None,
                 renderer: str = DROPIN.renderer, maps_dir: str | None = None,
                 noise: bool = DROPIN.noise, physics: str = DROPIN.physics,
                 look: str = DROPIN.look) -> None:
        _refuse("draw_curve", draw_curve, False, "it draws no lane curves into the image")
        _refuse("draw_bbox", draw_bbox, False, "it draws no bounding boxes into the image")
        _refuse("randomize_maps_on_reset", randomize_maps_on_reset, False,
                "an env keeps its map; batch envs of different maps instead")
        _refuse("num_tris_distractors", num_tris_distractors, 12,
                "it draws no distractor triangles (the default, 12, is accepted and draws "
                "none)")
        _refuse("color_ground", tuple(color_ground), COLOR_GROUND,
                "its ground and sky colours are its own")
        _refuse("color_sky", tuple(color_sky), BLUE_SKY, "its ground and sky colours are its own")
        _refuse("style", style, "photos", "its tile textures are its own")
        _refuse("enable_leds", enable_leds, False, "its robots' lights are not drawn in "
                "the camera")
        if camera_rand and not distortion:
            raise DropInError("camera_rand=True needs distortion=True, as in gym-duckietown")
        if not (isinstance(frame_skip, (int, np.integer)) and frame_skip >= 1):
            raise DropInError(f"frame_skip must be an integer >= 1, not {frame_skip!r}")
        if not (math.isfinite(frame_rate) and frame_rate > 0):
            raise DropInError(f"frame_rate must be a positive number, not {frame_rate!r}")
        if not (isinstance(max_steps, (int, np.integer)) and max_steps >= 1):
            raise DropInError(f"max_steps must be an integer >= 1, not {max_steps!r}")
        self.map_name = map_name
        self.max_steps = int(max_steps)
        self.frame_skip = int(frame_skip)
        self.frame_rate = float(frame_rate)
        self.robot_speed = float(robot_speed)
        self.accept_start_angle_deg = float(accept_start_angle_deg)
        self.full_transparency = bool(full_transparency)
        self.user_tile_start = None if user_tile_start is None else tuple(user_tile_start)
        self.domain_rand, self.distortion = bool(domain_rand), bool(distortion)
        # gym-duckietown's wheel distance under its DB18 model (Bullet's robot: its own).
        self.wheel_dist = WHEEL_DIST_M if physics == "db18" else BASELINE_M
        self._first_seed = seed
        self.last_action = np.zeros(2)
        super().__init__(obs="camera", camera=(int(camera_width), int(camera_height)),
                         map=resolve_map(map_name, maps_dir), max_episode_steps=0,
                         dt_s=1.0 / self.frame_rate, route=None, noise=noise,
                         randomize=_randomization(domain_rand, dynamics_rand, camera_rand),
                         camera_model="duckiebot" if distortion else "pinhole",
                         render_mode=render_mode, renderer=renderer, physics=physics,
                         look=look)
        if getattr(self.world, "physics", "") == "db18":
            self.world.walls = False  # gym-duckietown's robot may leave the map
        if not distortion:  # gym-duckietown's pinhole camera, where it mounts it
            self.camera = self._base_camera = Camera(
                int(camera_width), int(camera_height), fov_deg=CAMERA_FOV_Y_DEG,
                tilt_deg=CAMERA_ANGLE_DEG,
                mount_m=(CAMERA_FORWARD_DIST_M, 0.0, CAMERA_FLOOR_DIST_M - WHEEL_RADIUS_M),
                renderer=self.renderer, look=look)
        if self.user_tile_start is not None:
            col, row = self.user_tile_start
            m = self.world.road_map
            if not (0 <= row < m.rows and 0 <= col < m.cols and m.tiles[row][col].is_road):
                raise DropInError(f"user_tile_start {self.user_tile_start} is not a road "
                                  f"tile of {map_name} ({m.cols} x {m.rows} tiles, (i, j) "
                                  "= (column, row from the top))")
        self.action_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.observation_space = spaces.Box(0, 255, (int(camera_height), int(camera_width), 3),
                                            np.uint8)
        self.reward_range = (-1000, 1000)

    # -- start ----------------------------------------------------------------------
    def _start_pose(self, rng: np.random.Generator) -> tuple[float, float, float]:
        """A right-lane position (on ``user_tile_start`` when given), heading along
        the lane within +-``accept_start_angle_deg``."""
        m = self.world.road_map
        for _ in range(1000):
            x, y, yaw = m.start_poses(1, rng)[0]
            if self.user_tile_start is None or m.cell_of(x, y) == self.user_tile_start[::-1]:
                break
        else:
            raise DropInError(f"no start position on tile {self.user_tile_start}")
        a = math.radians(self.accept_start_angle_deg)
        return float(x), float(y), float(yaw + rng.uniform(-a, a))

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        if seed is None:
            seed = self._first_seed  # the constructor's seed, for the first reset only
        self._first_seed = None
        obs, info = super().reset(seed=seed, options=options)
        self.last_action = np.zeros(2)
        self.speed = 0.0
        info["Simulator"] = {"action": [0.0, 0.0], "msg": ""}
        return obs, info

    def update_physics(self, action: Any, delta_time: float | None = None) -> None:
        """gym-duckietown's: one physics step under ``action`` (the duties, clipped to
        [-1, 1]), no image; ``step_count``, ``timestamp`` and ``speed`` move on.

        Raises:
            DropInError: a ``delta_time`` other than the env's (1 / ``frame_rate``).
        """
        if delta_time is not None and not math.isclose(float(delta_time), self.delta_time):
            raise DropInError(f"update_physics(delta_time={delta_time!r}): the drop-in "
                              f"steps its physics by 1 / frame_rate = {self.delta_time}")
        left, right = (max(-1.0, min(1.0, float(a))) for a in np.asarray(action).reshape(2))
        if not (math.isfinite(left) and math.isfinite(right)):
            raise ValueError(f"action must be finite, got {[left, right]}")
        x0, y0, _ = self._pose()
        self._command(left, right)
        self.world.step()
        self._steps += 1
        self.last_action = np.array([left, right])
        x1, y1, _ = self._pose()
        self.speed = math.hypot(x1 - x0, y1 - y0) / self.delta_time

    # -- step (DuckieLaneEnv.step hands the action to step_wheels) --------------------
    def step_wheels(self, left: float, right: float
                    ) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """:meth:`step` with the duties as two floats (the batch workers' path):
        ``frame_skip`` physics steps, then one image and gym-duckietown's reward."""
        if not (math.isfinite(left) and math.isfinite(right)):
            raise ValueError(f"action must be finite, got {[left, right]}")
        left, right = max(-1.0, min(1.0, left)), max(-1.0, min(1.0, right))
        for _ in range(self.frame_skip - 1):
            self.update_physics((left, right))
        x0, y0, _ = self._pose()
        obs, _, _, _, info = super().step_wheels(left, right)
        self.last_action = np.array([left, right])
        x1, y1, _ = self._pose()
        self.speed = math.hypot(x1 - x0, y1 - y0) / self.delta_time
        reward, terminated, truncated, msg = self._done_reward()
        info["Simulator"] = {**self.get_agent_info()["Simulator"], "msg": msg}
        return obs, reward, terminated, truncated, info

    def _pose(self) -> tuple[float, float, float]:
        x, y, yaw = poses_2d(self.world.state(copy=False))[0].tolist()
        return x, y, yaw

    def _valid_pose(self, x: float, y: float, yaw: float) -> bool:
        """gym-duckietown's: the body's centre, its two sides and its front on road
        tiles, and no object touched."""
        c, s = math.cos(yaw), math.sin(yaw)
        cx, cy = x + CHASSIS_CENTER_M[0] * c, y + CHASSIS_CENTER_M[0] * s
        rx, ry = s, -c  # the robot's right
        m = self.world.road_map
        for px, py in ((cx, cy), (cx + 0.5 * ROBOT_WIDTH * rx, cy + 0.5 * ROBOT_WIDTH * ry),
                       (cx - 0.5 * ROBOT_WIDTH * rx, cy - 0.5 * ROBOT_WIDTH * ry),
                       (cx + 0.5 * ROBOT_LENGTH * c, cy + 0.5 * ROBOT_LENGTH * s)):
            cell = m.cell_of(px, py)
            if cell is None or not m.tiles[cell[0]][cell[1]].is_road:
                return False
        return not self.world.object_contacts()

    def proximity_penalty(self, x: float, y: float, yaw: float) -> float:
        """gym-duckietown's ``proximity_penalty2``: the sum, over the objects whose
        footprint comes within its safety radius of the robot's centre, of
        ``distance - safety radius - footprint`` (0 or less)."""
        world = self.world
        if not world.objects:
            return 0.0
        cx = x + CHASSIS_CENTER_M[0] * math.cos(yaw)
        cy = y + CHASSIS_CENTER_M[0] * math.sin(yaw)
        penalty = 0.0
        poses = world.object_poses(world.sim_time_s)
        for obj, (ox, oy, _) in zip(world.objects, poses, strict=True):
            gap = math.hypot(ox - cx, oy - cy) - AGENT_SAFETY_RAD - footprint_m(obj)
            penalty += min(0.0, gap)
        return penalty

    def _done_reward(self) -> tuple[float, bool, bool, str]:
        x, y, yaw = self._pose()
        if not self._valid_pose(x, y, yaw):
            return float(REWARD_INVALID_POSE), True, False, INVALID_POSE_MSG
        if self._steps >= self.max_steps:
            return 0.0, False, True, ("Stopping the simulator because we reached "
                                      f"max_steps = {self.max_steps}")
        return self.compute_reward(x, y, yaw), False, False, ""

    def compute_reward(self, x: float, y: float, yaw: float) -> float:
        """gym-duckietown's ``compute_reward`` (daffy): ``robot_speed * dot_dir - 10 *
        |dist| + 40 * proximity penalty`` in a lane, ``40 * proximity penalty`` off one
        (its ``NotInLane``). As there, the speed is the constant ``robot_speed``, not
        the robot's measured speed (gym-duckietown's master branch used that)."""
        penalty = self.proximity_penalty(x, y, yaw)
        lane = self._lane_pose(x, y, yaw)
        if not lane.on_road or lane.offset_m != lane.offset_m:
            return 40.0 * penalty
        dot_dir = math.cos(lane.heading_err_rad)
        return self.robot_speed * dot_dir - 10.0 * abs(lane.offset_m) + 40.0 * penalty


class DuckietownEnv(Simulator):
    """gym-duckietown's ``DuckietownEnv``: actions are ``(velocity, steering)``, turned
    into the motors' duties by its formula (its ``gain``, ``trim``, ``radius``, ``k``,
    ``limit``; the baseline is this robot's wheel distance, ``wheel_dist``). Other
    keyword arguments are :class:`Simulator`'s."""

    def __init__(self, gain: float = 1.0, trim: float = 0.0, radius: float = 0.0318,
                 k: float = 27.0, limit: float = 1.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.action_space = spaces.Box(np.array([-1.0, -1.0], np.float32),
                                       np.array([1.0, 1.0], np.float32), dtype=np.float32)
        self.gain, self.trim, self.radius, self.k, self.limit = gain, trim, radius, k, limit

    def step_wheels(self, vel: float, angle: float
                    ) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """:meth:`step` with ``(velocity, steering)`` as two floats."""
        baseline = self.wheel_dist
        k_r_inv = (self.gain + self.trim) / self.k
        k_l_inv = (self.gain - self.trim) / self.k
        omega_r = (vel + 0.5 * angle * baseline) / self.radius
        omega_l = (vel - 0.5 * angle * baseline) / self.radius
        u_r = max(min(omega_r * k_r_inv, self.limit), -self.limit)
        u_l = max(min(omega_l * k_l_inv, self.limit), -self.limit)
        obs, reward, terminated, truncated, info = super().step_wheels(u_l, u_r)
        info["DuckietownEnv"] = {"k": self.k, "gain": self.gain, "train": self.trim,
                                 "radius": self.radius, "omega_r": omega_r, "omega_l": omega_l}
        return obs, reward, terminated, truncated, info


__all__ = ["AGENT_SAFETY_RAD", "DropInError", "DuckietownEnv", "LanePosition", "NotInLane",
           "Simulator", "get_dir_vec", "get_right_vec", "resolve_map"]
