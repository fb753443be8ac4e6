"""``dmxshm/DuckieLane-v0``: one robot keeping its lane on the ``loop`` map.

A Gymnasium environment over one pybullet world, in the calling process.

* **Action**: ``Box(-1, 1, (2,))``, left and right wheel, scaled to
  :data:`ACTION_SCALE_RAD_S` (25 rad/s, 0.8 m/s at the rim: the engine's bound
  when v0 was made, kept so that v0's action space means what it did; the
  motors' bound is now 27 rad/s, :mod:`dmxshm.world.motor`).
* **Observation** (``obs=``):

  - ``"state"``: float32 vector of :data:`STATE_FIELDS`: lateral offset from
    the right-lane centre (m, + left), heading error (rad, + left), forward
    speed (m/s), yaw rate (rad/s), IMU acceleration x, y, z (m/s^2) and
    angular velocity x, y, z (rad/s) in the robot frame, time-of-flight
    range (m, 1.2 when nothing is ahead);
  - ``"camera"``: uint8 ``(H, W, 3)`` from the robot's camera, size ``camera=(W, H)``;
  - ``"both"``: ``Dict(state=..., camera=...)``.
* **Reward**: progress along the lane in the step (m, forward speed times
  cos of the heading error times dt) minus ``offset_penalty`` times the
  absolute lateral offset (m) times dt.
* **Terminated** when the robot leaves the road; **truncated** after
  ``max_episode_steps`` steps (default 1000, 33 s of simulated time).
* ``reset(seed=...)`` seeds the start: a lane position anywhere on the map
  (start tile and place on it) plus pose noise (``pose_noise_m``,
  ``yaw_noise_rad``).

Example:
    >>> import gymnasium, dmxshm
    >>> env = gymnasium.make("dmxshm/DuckieLane-v0")
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, obs.dtype
    ((11,), dtype('float32'))
    >>> env.close()
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from dmxshm.matrix.camera import Camera, quat_matrix
from dmxshm.matrix.renderer_choice import resolve as resolve_renderer
from dmxshm.matrix.sensors import TimeOfFlight
from dmxshm.settings import EPISODE_STEPS
from dmxshm.sim.obs import STATE_FIELDS, STATE_HIGH, STATE_LOW  # noqa: F401  (v0 names them)
from dmxshm.sim.planar import PlanarWorld
from dmxshm.sim.spec import PHYSICS, V0
from dmxshm.world.maps import RoadMap
from dmxshm.world.scene import tint
from dmxshm.world.scoring import lane_score
from dmxshm.world.world import GRAVITY_M_S2, World

OBS_KINDS = ("state", "camera", "both")
ACTION_SCALE_RAD_S = 25.0
"""Wheel speed of action 1.0 (v0's meaning, fixed; not the motors' bound)."""


_SCENES: dict[tuple[int, str, str], World] = {}


def scene_client(road_map: RoadMap, renderer: str = "tiny",
                 sim_time_s: float | None = None,
                 shades: dict[str, float] | None = None) -> int:
    """The pybullet client of :func:`scene_world`."""
    return scene_world(road_map, renderer, sim_time_s, shades).client


def scene_world(road_map: RoadMap, renderer: str = "tiny",
                sim_time_s: float | None = None,
                shades: dict[str, float] | None = None) -> World:
    """A world with the scene of ``road_map`` and no robot, one per process;
    with ``sim_time_s``, its moving objects where they are at that time (an env's clock:
    every env's world has seed 0, so its objects move as the scene's); its road, markings
    and grass coloured with ``shades`` (an env's domain randomisation,
    :func:`~dmxshm.world.scene.tint`; None: as built).

    Every camera of this process renders there: the robot never appears in
    its own camera (tested), so the images are exactly those of the robot's
    own world, and with many environments in one process (a batch worker,
    ``SyncVectorEnv``) one renderer's data stays in the caches instead of
    one per environment: 5% more camera steps per second with 8 worlds.
    The client lives as long as the process.
    """
    # One per map content (not name: a map file may change between envs);
    # a forked child builds its own.
    key = (os.getpid(), road_map.digest(), renderer)
    if key not in _SCENES:
        _SCENES[key] = World(road_map, 0, renderer=renderer)
    scene = _SCENES[key]
    if sim_time_s is not None and scene.movers:
        scene.move_objects(sim_time_s)
    tint(scene.scene, scene.client, shades)
    return scene


@dataclass
class CameraJob:
    """A camera image an env asked for, to draw with the others of its process: the
    array to fill, the robot's state, the simulated time, the scene's shades, and what
    to do to it once drawn."""

    env: DuckieLaneEnv
    image: np.ndarray
    row: np.void
    sim_time_s: float
    shades: dict[str, float] | None
    finish: Callable[[np.ndarray], None] | None


def draw_cameras(jobs: list[CameraJob]) -> None:
    """Draw every job's image with the batch renderer, in as few calls as the scene
    allows (one; one per simulated time where objects move), then finish each. The
    images are those each env would draw alone (each pixel is computed on its own)."""
    from dmxshm.matrix.batch_render import renderer_of

    groups: dict[tuple[Any, ...], list[CameraJob]] = {}
    for job in jobs:
        env, cam = job.env, job.env.camera
        assert cam is not None  # (a job is an env's camera image)
        scene = scene_world(env.world.road_map, env.renderer)
        key = (id(scene), job.sim_time_s if scene.movers else 0.0, cam.shape, cam.look)
        groups.setdefault(key, []).append(job)
    for group in groups.values():
        env, cam = group[0].env, group[0].env.camera
        assert cam is not None
        scene = scene_world(env.world.road_map, env.renderer)
        out = np.empty((len(group), *cam.shape), np.uint8)
        poses = np.empty(len(group), group[0].row.dtype)  # (np.stack of records is slow)
        for k, job in enumerate(group):
            poses[k] = job.row
        renderer_of(scene, cam.look).render([job.env.camera for job in group], poses,
                                            group[0].sim_time_s, out,
                                            shades=[job.shades for job in group])
        for job, image in zip(group, out, strict=True):
            job.image[...] = image
            if job.finish is not None:
                job.finish(job.image)
    jobs.clear()


class DuckieLaneEnv(gym.Env[Any, np.ndarray]):
    """See the module docstring. Keyword arguments:

    Args:
        obs: ``"state"``, ``"camera"`` or ``"both"``.
        camera: ``(width, height)`` of the camera.
        map: bundled map name or map file.
        max_episode_steps: truncation (0: never).
        offset_penalty: reward lost per metre of offset per second.
        pose_noise_m: standard deviation of the start position noise.
        yaw_noise_rad: standard deviation of the start heading noise.
        dt_s: simulated time per step.
        renderer: the camera renderer, ``"tiny"``, ``"egl"``, ``"batch"`` or ``"auto"``
            (:mod:`dmxshm.world.renderers`; ``auto``: the fastest here for the camera,
            measured once per process, :mod:`dmxshm.matrix.renderer_choice`).
        camera_model: ``"pinhole"`` (dmxshm's 60-degree camera, the default) or
            ``"duckiebot"`` (the Duckiebot's wide-angle lens, height and tilt;
            :mod:`dmxshm.matrix.lens`): ``reset``'s ``info["calibration"]`` then gives
            its calibration, to undistort as on the robot.
        look: how the camera draws the world: ``"flat"`` (every renderer's, the
            default) or ``"duckietown"`` (the batch renderer's: signs with their
            AprilTags, the markings in dt-core's line-detector colours, a sky;
            docs/renderers.md).
    """

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 30}
    batch_info: dict[str, Any] = {"lane_offset_m": np.float64, "on_road": np.bool_,
                                  "progress_m": np.float64}
    """The info keys a batch (``make_vec``) gives as arrays, with their dtypes (a
    reset's info has no ``progress_m``: its ``_progress_m`` mask is False there)."""

    def __init__(self, obs: str = "state", camera: tuple[int, int] = V0.camera,
                 map: str = V0.map, max_episode_steps: int = EPISODE_STEPS,  # noqa: A002
                 offset_penalty: float = 2.0, pose_noise_m: float = 0.02,
                 yaw_noise_rad: float = 0.1, dt_s: float = V0.dt_s,
                 render_mode: str | None = None, renderer: str = V0.renderer,
                 camera_model: str = V0.camera_model, physics: str = V0.physics,
                 look: str = V0.look) -> None:
        if obs not in OBS_KINDS:
            raise ValueError(f"obs must be one of {OBS_KINDS}, not {obs!r}")
        if physics not in PHYSICS:
            raise ValueError(f"physics must be one of {', '.join(PHYSICS)}, not {physics!r}")
        self.obs_kind = obs
        self.physics = physics
        # Physics only: cameras render in the shared scene client (under DB18 too).
        self.world: World | PlanarWorld = (
            World(map, 1, seed=0, dt_s=dt_s, visuals=False) if physics == "bullet"
            else PlanarWorld(map, 1, seed=0, dt_s=dt_s))
        draws = obs in ("camera", "both") or bool(render_mode)
        self.renderer = resolve_renderer(renderer, tuple(camera) if draws else None,
                                         camera_model, look)
        self.camera = (Camera.of_model(camera_model, camera[0], camera[1],
                                       renderer=self.renderer, look=look) if draws else None)
        self.tof = TimeOfFlight()
        self.max_episode_steps = max_episode_steps
        self.offset_penalty = offset_penalty
        self.pose_noise_m = pose_noise_m
        self.yaw_noise_rad = yaw_noise_rad
        self.render_mode = render_mode
        self.action_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        state_space = spaces.Box(STATE_LOW, STATE_HIGH, dtype=np.float32)
        camera_space = spaces.Box(0, 255, (camera[1], camera[0], 3), np.uint8)
        kinds: dict[str, spaces.Space[Any]] = {
            "state": state_space, "camera": camera_space,
            "both": spaces.Dict({"state": state_space, "camera": camera_space}),
        }
        self.observation_space = kinds[obs]
        self._steps = 0
        # What this env simulates (its arguments checked above).
        self.sim_spec = V0.but(map=map, camera=(int(camera[0]), int(camera[1])), dt_s=dt_s,
                               renderer=renderer, camera_model=camera_model, physics=physics,
                               look=look)

    # -- helpers ---------------------------------------------------------------
    # Plain floats throughout: for one robot, numpy's per-call overhead would
    # cost more than the physics (see docs/batch.md, "where a step goes").
    def _measure(self, state: np.ndarray) -> tuple[Any, tuple[float, float, bool], float]:
        """Observation, lane ``(offset, heading error, on road)`` and forward speed."""
        (px, py, pz, qx, qy, qz, qw, vx, vy, vz, wx, wy, wz,
         ax, ay, az) = state.view(np.float64)[:16].tolist()
        rot = quat_matrix((qx, qy, qz, qw))
        yaw = math.atan2(2 * (qw * qz + qx * qy), 1 - 2 * (qy * qy + qz * qz))
        lane = self._lane_pose(px, py, yaw)
        offset, heading = lane.offset_m, lane.heading_err_rad
        (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = rot
        # rot maps robot to world; its transpose maps world to robot.
        speed = r00 * vx + r10 * vy + r20 * vz
        out: dict[str, Any] = {}
        if self.obs_kind != "camera":
            az += GRAVITY_M_S2  # the accelerometer reads specific force
            row = [0.0 if offset != offset else offset, 0.0 if heading != heading else heading,
                   speed, wz,
                   r00 * ax + r10 * ay + r20 * az, r01 * ax + r11 * ay + r21 * az,
                   r02 * ax + r12 * ay + r22 * az,
                   r00 * wx + r10 * wy + r20 * wz, r01 * wx + r11 * wy + r21 * wz,
                   r02 * wx + r12 * wy + r22 * wz,
                   self.world.tof_range(self.tof, (px, py, pz), rot),
                   *self._more_state()]
            vector = np.array(row, dtype=np.float32)
            out["state"] = np.minimum(np.maximum(vector, self._state_low, out=vector),
                                      self._state_high, out=vector)
        if self.obs_kind != "state":
            out["camera"] = self._camera_image(state[0])
        obs = out if self.obs_kind == "both" else out[self.obs_kind]
        return obs, (offset, heading, lane.on_road), speed

    def _camera_image(self, row: np.void) -> np.ndarray:
        """The camera's image from the robot in state ``row`` (a new array): drawn now,
        or, in a batch worker that draws its envs' cameras together
        (:attr:`camera_jobs`), an array it fills before the step's results are read."""
        assert self.camera is not None
        finish = self._image_finish()
        if self.camera_jobs is not None and self.renderer == "batch":
            image = np.empty(self.camera.shape, np.uint8)
            self.camera_jobs.append(CameraJob(self, image, row.copy(), self.world.sim_time_s,
                                              self._shades, finish))
            return image
        image = self._draw(self.camera, row)
        if finish is not None:
            finish(image)
        return image

    def _draw(self, camera: Camera, row: np.void) -> np.ndarray:
        """``camera``'s image from the robot in state ``row``, drawn now (a new array)
        in the process's scene, with this env's shades."""
        scene = scene_world(self.world.road_map, self.renderer, self.world.sim_time_s,
                            self._shades)
        if self.renderer == "batch":
            from dmxshm.matrix.batch_render import renderer_of

            return renderer_of(scene, camera.look).render(
                [camera], row[None], self.world.sim_time_s,
                np.empty((1, *camera.shape), np.uint8), shades=[self._shades])[0]
        return camera.render(scene.client, row)

    def _image_finish(self) -> Callable[[np.ndarray], None] | None:
        """What a later version does to each drawn image (v1: its appearance and the
        sensor's noise, as they are at this step), or None."""
        return None

    camera_jobs: list[CameraJob] | None = None
    """Set by a batch worker: the cameras to draw are collected here and drawn together
    (:func:`draw_cameras`) instead of one by one."""

    # What a later version adds: the lane pose it measures against, its fields after
    # v0's, and their bounds.
    _state_low, _state_high = STATE_LOW, STATE_HIGH
    _shades: dict[str, float] | None = None  # the scene's colours (v1's randomisation)

    def _lane_pose(self, x: float, y: float, yaw: float) -> Any:
        return self.world.road_map.lane_pose(x, y, yaw)

    def _more_state(self) -> list[float]:
        return []

    def _start_pose(self, rng: np.random.Generator) -> tuple[float, float, float]:
        """Where an episode starts: a lane position of the map plus pose noise."""
        x, y, yaw = self.world.road_map.start_poses(1, rng)[0]
        direction = np.array([math.cos(yaw), math.sin(yaw)])  # libm: the same on every CPU
        lateral = np.array([-direction[1], direction[0]])
        offset = rng.normal(0.0, self.pose_noise_m)
        x, y = np.array([x, y]) + offset * lateral
        yaw = yaw + rng.normal(0.0, self.yaw_noise_rad)
        return float(x), float(y), float(yaw)

    def _command(self, left: float, right: float) -> None:
        """Give the robot the action ``left``, ``right`` (in [-1, 1]) until the next step."""
        self.world.apply_wheel_speeds([self._wheels(left, right)])

    def _wheels(self, left: float, right: float) -> list[float]:
        """The wheel speeds (rad/s) of an action in [-1, 1] (v0: scaled by 25 rad/s)."""
        return [left * ACTION_SCALE_RAD_S, right * ACTION_SCALE_RAD_S]

    # -- gymnasium API ---------------------------------------------------------
    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.world.replace_robots([self._start_pose(self.np_random)])
        self._steps = 0
        info: dict[str, Any] = self._begin_episode()
        obs, lane, _ = self._measure(self.world.state(copy=False))
        info.update(lane_offset_m=lane[0], on_road=lane[2])
        if self.camera is not None and self.camera.lens is not None:
            info["calibration"] = self.camera.calibration
        return obs, info

    def _begin_episode(self) -> dict[str, Any]:
        """What a later version draws for an episode, once the robot is placed and
        before the first observation; what it adds to reset's ``info``."""
        return {}

    def step(self, action: np.ndarray) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        left, right = np.asarray(action, dtype=np.float64).reshape(2).tolist()
        return self.step_wheels(left, right)

    def step_wheels(self, left: float, right: float
                    ) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """:meth:`step` with the action as two floats (the batch workers' path)."""
        if not (math.isfinite(left) and math.isfinite(right)):
            raise ValueError(f"action must be finite, got {[left, right]}")
        self._command(max(-1.0, min(1.0, left)), max(-1.0, min(1.0, right)))
        self.world.step()
        self._steps += 1
        obs, (offset, heading, on_road), speed = self._measure(self.world.state(copy=False))
        # The rule of every front-end (world/scoring.py), without collisions: v0's
        # robot is alone on its map.
        reward, progress, terminated = lane_score(speed, heading, offset, on_road, False,
                                                  self.world.dt_s,
                                                  offset_penalty=self.offset_penalty)
        truncated = bool(self.max_episode_steps) and self._steps >= self.max_episode_steps
        info = {"lane_offset_m": offset, "on_road": on_road, "progress_m": progress}
        return obs, float(reward), terminated, truncated, info

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        return self._draw(self.camera or Camera(renderer=self.renderer), self.world.state()[0])

    def close(self) -> None:
        self.world.close()
