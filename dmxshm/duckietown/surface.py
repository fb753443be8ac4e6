"""gym-duckietown's ``Simulator`` surface on dmxshm's drop-in: what its exercises,
learning scripts, teachers and wrappers read and call, with gym-duckietown's semantics
(its ``daffy`` branch, 6.1.34), in its frame.

**The frame.** gym-duckietown places a point at ``[x, y, z]``: ``x`` east along the map's
columns, ``y`` up, ``z`` south along its rows (row 0, the first row of the map file,
is ``z`` from 0 to one tile); a heading ``angle`` points along ``[cos(angle), 0,
-sin(angle)]`` (:func:`get_dir_vec`). dmxshm's world frame is ``x`` east, ``y`` north;
so ``z = grid_height * road_tile_size - y`` and the angle is dmxshm's yaw
(:meth:`GymSurface.cartesian_from_weird`, gym-duckietown's name, gives dmxshm's pose).
``cur_pos`` is the robot's centre of rotation, the DB18 model's pose.

**The lane.** gym-duckietown follows Bezier curves per tile; the drop-in's lane is
dmxshm's (:mod:`dmxshm.world.lanes`: the right lane's centre, straight or a quarter
circle), the same lane as every other dmxshm front-end measures against.
:meth:`GymSurface.closest_curve_point` returns the point of the right lane nearest to
a position, for the direction the heading is closer to, and the lane's unit tangent
there; :meth:`GymSurface.get_lane_pos2` turns it into gym-duckietown's
``LanePosition`` by gym-duckietown's own formulas (``dist`` positive to the right of
the lane's centre, ``angle`` positive with the heading to the right of the tangent),
raising :class:`NotInLane` where the tile under the point is not drivable. In an
intersection gym-duckietown picks the turn curve best aligned with the heading; the
drop-in picks the through-road best aligned with it (its lanes through an
intersection are the roads that cross it).
"""

from __future__ import annotations

import math
import warnings
from typing import Any, NamedTuple

import numpy as np

from dmxshm.errors import DmxError
from dmxshm.world.dtmaps import GYM_TILE_KINDS, gym_tile
from dmxshm.world.objects import footprint_m

ROBOT_WIDTH, ROBOT_LENGTH = 0.13 + 0.02, 0.18
SAFETY_RAD_MULT = 1.8
AGENT_SAFETY_RAD = max(ROBOT_LENGTH, ROBOT_WIDTH) / 2 * SAFETY_RAD_MULT
"""gym-duckietown's constants (its ``simulator.py``), written out."""

_ORIENTS = ("S", "E", "N", "W")  # gym-duckietown's tile angles, by index


class DropInError(DmxError, ValueError):
    """An argument of gym-duckietown's that dmxshm's drop-in cannot honour."""


class NotInLane(DmxError, Exception):
    """gym-duckietown's ``NotInLane``: the point is not on a drivable tile."""


class LanePosition(NamedTuple):
    """gym-duckietown's lane position: ``dist`` (m, positive right of the lane's
    centre), ``dot_dir`` (the heading's cosine with the lane), ``angle_deg`` and
    ``angle_rad`` (positive with the heading right of the lane)."""

    dist: float
    dot_dir: float
    angle_deg: float
    angle_rad: float

    def as_json_dict(self) -> dict[str, float]:
        """Its fields as a dict (gym-duckietown's ``as_json_dict``)."""
        return {"dist": float(self.dist), "dot_dir": float(self.dot_dir),
                "angle_deg": float(self.angle_deg), "angle_rad": float(self.angle_rad)}


def get_dir_vec(cur_angle: float) -> np.ndarray:
    """The heading ``cur_angle`` as gym-duckietown's unit vector ``[x, 0, z]``."""
    return np.array([math.cos(cur_angle), 0.0, -math.sin(cur_angle)])


def get_right_vec(cur_angle: float) -> np.ndarray:
    """The unit vector to the right of heading ``cur_angle`` (gym-duckietown's frame)."""
    return np.array([math.sin(cur_angle), 0.0, math.cos(cur_angle)])


def gym_kind(tile: Any) -> tuple[str, int]:
    """gym-duckietown's ``(kind, angle)`` of a dmxshm tile (``angle``: its index in
    ``S, E, N, W``); of two gym cells that make the same tile (``curve_left/S`` and
    ``curve_right/E``), the first in gym-duckietown's list of kinds."""
    if not tile.is_road:
        return tile.kind, 1
    for kind in GYM_TILE_KINDS:
        for angle, orient in enumerate(_ORIENTS):
            cell = kind if kind == "4way" else f"{kind}/{orient}"
            if gym_tile(cell) == tile:
                return kind, angle if kind != "4way" else 1
    raise DmxError(f"no gym-duckietown tile for {tile}")  # pragma: no cover


class SimObject:
    """A map object as gym-duckietown's ``WorldObj`` shows it: ``kind``, ``static``,
    ``pos`` (``[x, 0, z]``, where it is now), ``angle`` (rad), ``safety_radius`` (m: its
    footprint's), ``visible``, and :meth:`proximity`."""

    visible = True

    def __init__(self, sim: GymSurface, index: int) -> None:
        self._sim, self._index = sim, index
        obj = sim.world.objects[index]
        self.kind: str = obj.kind
        self.static: bool = bool(obj.static)
        self.safety_radius = float(footprint_m(obj))

    @property
    def _pose(self) -> tuple[float, float, float]:
        world = self._sim.world
        x, y, yaw = world.object_poses(world.sim_time_s)[self._index]
        return float(x), float(y), float(yaw)

    @property
    def pos(self) -> np.ndarray:
        x, y, _ = self._pose
        return np.array([x, 0.0, self._sim._height_m - y])

    @property
    def angle(self) -> float:
        return self._pose[2]

    def proximity(self, agent_pos: Any, agent_safety_rad: float) -> float:
        """gym-duckietown's: 0 for a static object (its own penalty checks those in
        bulk: :meth:`GymSurface.proximity_penalty2`); for a moving one, how far its
        safety circle and the agent's overlap (0 or less)."""
        if self.static:
            return 0.0
        d = float(np.linalg.norm(np.asarray(agent_pos, float) - self.pos))
        return min(0.0, d - agent_safety_rad - self.safety_radius)

    def __repr__(self) -> str:
        return f"SimObject({self.kind!r}, static={self.static}, pos={self.pos.tolist()})"


class GymSurface:
    """The attributes and methods of gym-duckietown's ``Simulator`` (module docstring),
    for :class:`dmxshm.duckietown.Simulator`. What it needs of the class: ``world``,
    ``_pose()``, ``_steps``, ``last_action``, ``robot_speed``, ``camera``,
    ``proximity_penalty(x, y, yaw)`` and the step itself."""

    world: Any
    _steps: int
    last_action: np.ndarray
    robot_speed: float
    speed: float = 0.0
    _human_said = False

    def _pose(self) -> tuple[float, float, float]:
        raise NotImplementedError  # pragma: no cover

    # -- the map ---------------------------------------------------------------------
    @property
    def road_tile_size(self) -> float:
        return float(self.world.road_map.tile_size_m)

    @property
    def grid_width(self) -> int:
        return int(self.world.road_map.cols)

    @property
    def grid_height(self) -> int:
        return int(self.world.road_map.rows)

    @property
    def _height_m(self) -> float:
        return self.grid_height * self.road_tile_size

    def _tiles(self) -> list[dict[str, Any] | None]:
        m = self.world.road_map
        key = (id(m), id(m.tiles))
        if getattr(self, "_tiles_key", None) != key:
            grid: list[dict[str, Any] | None] = []
            for j, row in enumerate(m.tiles):
                for i, tile in enumerate(row):
                    kind, angle = gym_kind(tile)
                    grid.append({"coords": (i, j), "kind": kind, "angle": angle,
                                 "drivable": bool(tile.is_road)})
            self._tile_grid, self._tiles_key = grid, key
        return self._tile_grid

    def _get_tile(self, i: int, j: int) -> dict[str, Any] | None:
        """The tile at column ``i``, row ``j`` (a dict: ``coords``, ``kind``, ``angle``,
        ``drivable``; the same dict every call), None off the grid."""
        i, j = int(i), int(j)
        if not (0 <= i < self.grid_width and 0 <= j < self.grid_height):
            return None
        return self._tiles()[j * self.grid_width + i]

    @property
    def drivable_tiles(self) -> list[dict[str, Any]]:
        return [t for t in self._tiles() if t is not None and t["drivable"]]

    def get_grid_coords(self, abs_pos: Any) -> tuple[int, int]:
        """The tile ``(i, j)`` under ``[x, y, z]`` (possibly off the grid)."""
        x, _, z = (float(v) for v in abs_pos)
        return int(math.floor(x / self.road_tile_size)), int(math.floor(z / self.road_tile_size))

    # -- the robot -------------------------------------------------------------------
    @property
    def cur_pos(self) -> np.ndarray:
        x, y, _ = self._pose()
        return np.array([x, 0.0, self._height_m - y])

    @property
    def cur_angle(self) -> float:
        return self._pose()[2]

    @property
    def step_count(self) -> int:
        return self._steps

    @property
    def delta_time(self) -> float:
        return float(self.world.dt_s)

    @property
    def timestamp(self) -> float:
        return self._steps * self.delta_time

    @property
    def wheelVels(self) -> np.ndarray:  # noqa: N802  (gym-duckietown's name)
        """gym-duckietown's: the last action times ``robot_speed``."""
        return np.asarray(self.last_action, float) * self.robot_speed

    @property
    def camera_width(self) -> int:
        return int(self.observation_space.shape[1])  # type: ignore[attr-defined]

    @property
    def camera_height(self) -> int:
        return int(self.observation_space.shape[0])  # type: ignore[attr-defined]

    @property
    def objects(self) -> list[SimObject]:
        if getattr(self, "_objects", None) is None:
            self._objects = [SimObject(self, k) for k in range(len(self.world.objects))]
        return self._objects

    def get_dir_vec(self, angle: float | None = None) -> np.ndarray:
        return get_dir_vec(self.cur_angle if angle is None else angle)

    def get_right_vec(self, angle: float | None = None) -> np.ndarray:
        return get_right_vec(self.cur_angle if angle is None else angle)

    def cartesian_from_weird(self, pos: Any, angle: float) -> np.ndarray:
        """The pose ``(pos, angle)`` as an SE(2) matrix in the map's cartesian frame
        (dmxshm's: ``x`` east, ``y`` north; 0, 0 the map's south-west corner)."""
        gx, _, gz = (float(v) for v in pos)
        c, s = math.cos(angle), math.sin(angle)
        return np.array([[c, -s, gx], [s, c, self._height_m - gz], [0.0, 0.0, 1.0]])

    def weird_from_cartesian(self, q: Any) -> tuple[list[float], float]:
        """The inverse of :meth:`cartesian_from_weird`."""
        q = np.asarray(q, float)
        return [float(q[0, 2]), 0.0, self._height_m - float(q[1, 2])], math.atan2(q[1, 0],
                                                                                   q[0, 0])

    # -- the lane --------------------------------------------------------------------
    def closest_curve_point(self, pos: Any, angle: float
                            ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The right lane's point nearest ``pos`` for heading ``angle``, and its unit
        tangent (``[x, 0, z]`` both); ``(None, None)`` where the tile under ``pos`` is
        not drivable."""
        tile = self._get_tile(*self.get_grid_coords(pos))
        if tile is None or not tile["drivable"]:
            return None, None
        x, y = float(pos[0]), self._height_m - float(pos[2])
        lane, _ = self.world.road_map._lane(x, y, float(angle))
        offset, heading = lane.offset_m, lane.heading_err_rad
        if offset != offset or heading != heading:
            return None, None
        lane_yaw = float(angle) - heading
        c, s = math.cos(lane_yaw), math.sin(lane_yaw)
        px, py = x + offset * s, y - offset * c  # back across the lane by the offset
        return (np.array([px, 0.0, self._height_m - py]), np.array([c, 0.0, -s]))

    def get_lane_pos2(self, pos: Any, angle: float) -> LanePosition:
        """gym-duckietown's ``get_lane_pos2``: where ``pos`` with heading ``angle`` is
        against the right lane's centre (:class:`LanePosition`).

        Raises:
            NotInLane: the tile under ``pos`` is not drivable.
        """
        point, tangent = self.closest_curve_point(pos, angle)
        if point is None or tangent is None:
            raise NotInLane(f"Point not in lane: {pos}")
        dir_vec = get_dir_vec(angle)
        dot_dir = float(np.clip(np.dot(dir_vec, tangent), -1.0, 1.0))
        right_vec = np.cross(tangent, np.array([0.0, 1.0, 0.0]))
        dist = float(np.dot(np.asarray(pos, float) - point, right_vec))
        angle_rad = math.acos(dot_dir)
        if np.dot(dir_vec, right_vec) < 0:
            angle_rad = -angle_rad
        return LanePosition(dist, dot_dir, math.degrees(angle_rad), angle_rad)

    def get_lane_pos(self, pos: Any, angle: float) -> LanePosition:
        """:meth:`get_lane_pos2` under the name gym-duckietown used before it, which its
        ``exercises/basic_control.py`` still calls."""
        return self.get_lane_pos2(pos, angle)

    def proximity_penalty2(self, pos: Any, angle: float) -> float:
        """gym-duckietown's ``proximity_penalty2`` at ``pos`` (``[x, 0, z]``)."""
        return self.proximity_penalty(float(pos[0]), self._height_m - float(pos[2]),
                                      float(angle))

    def proximity_penalty(self, x: float, y: float, yaw: float) -> float:
        raise NotImplementedError  # pragma: no cover

    def get_agent_info(self) -> dict[str, Any]:
        """gym-duckietown's ``get_agent_info``: ``{"Simulator": {...}}`` with the last
        action and, with ``full_transparency``, the lane position, speed, proximity
        penalty, pose, wheel velocities, time and tile."""
        info: dict[str, Any] = {"action": [float(a) for a in self.last_action]}
        if getattr(self, "full_transparency", False):
            pos, angle = self.cur_pos, self.cur_angle
            try:
                info["lane_position"] = self.get_lane_pos2(pos, angle).as_json_dict()
            except NotInLane:
                pass
            info["robot_speed"] = float(self.speed)
            info["proximity_penalty"] = self.proximity_penalty2(pos, angle)
            info["cur_pos"] = [float(v) for v in pos]
            info["cur_angle"] = float(angle)
            info["wheel_velocities"] = [float(v) for v in self.wheelVels]
            info["timestamp"] = self.timestamp
            info["tile_coords"] = list(self.get_grid_coords(pos))
        return {"Simulator": info}

    # -- pictures --------------------------------------------------------------------
    def render_obs(self, segment: bool = False) -> np.ndarray:
        """The camera's image now (what a step returns)."""
        if segment:
            raise DropInError("render_obs(segment=True) is not supported by dmxshm's drop-in: "
                           "it draws no segmentation image")
        return self._camera_image(self.world.state(copy=False)[0])  # type: ignore[attr-defined]

    def top_down(self, width_px: int = 800) -> np.ndarray:
        """The map from above with the robot on it (a disc and a line along its
        heading), RGB uint8, ``width_px`` wide."""
        from dmxshm.matrix.camera import top_view

        m = self.world.road_map
        key = (id(m), width_px)
        if getattr(self, "_top_key", None) != key:
            self._top_image, self._top_key = top_view(m.still(), width_px), key
        image = self._top_image.copy()
        h, w = image.shape[:2]
        scale = w / m.size_m[0]
        x, y, yaw = self._pose()
        u, v = x * scale, (m.size_m[1] - y) * scale
        yy, xx = np.mgrid[0:h, 0:w]
        r = max(2.0, 0.065 * scale)
        image[(xx - u) ** 2 + (yy - v) ** 2 <= r * r] = (220, 40, 40)
        for t in np.linspace(0.0, 2.0 * r, max(2, int(2 * r))):
            a, b = int(round(u + t * math.cos(yaw))), int(round(v - t * math.sin(yaw)))
            if 0 <= a < w and 0 <= b < h:
                image[b, a] = (255, 255, 255)
        return image

    def render(self, mode: str = "human", close: bool = False,
               segment: bool = False) -> np.ndarray | None:
        """gym-duckietown's modes: ``"rgb_array"`` the camera's image, ``"top_down"``
        the map from above with the robot (:meth:`top_down`), ``"human"`` nothing (no
        window: said once, as a warning). A Gymnasium env made with ``render_mode``
        calls ``render()`` with none: that mode is taken."""
        if close:
            return None
        if mode == "human" and getattr(self, "render_mode", None) not in (None, "human"):
            mode = self.render_mode  # type: ignore[attr-defined]
        if segment:
            raise DropInError("render(segment=True) is not supported by dmxshm's drop-in")
        if mode == "top_down":
            return self.top_down()
        if mode == "rgb_array":
            camera = self.camera or self._base_camera  # type: ignore[attr-defined]
            return self._draw(camera, self.world.state()[0])  # type: ignore[attr-defined]
        if mode == "human":
            if not GymSurface._human_said:
                GymSurface._human_said = True
                warnings.warn("render('human') shows nothing: dmxshm's drop-in opens no "
                              "window; render('rgb_array') and render('top_down') return "
                              "images, and dmxshm's live view (dmxshm run --view) shows a "
                              "network from above", stacklevel=2)
            return None
        raise DropInError(f"render mode {mode!r} is not supported by dmxshm's drop-in: the "
                          "modes are human (nothing drawn), rgb_array and top_down")
