"""A world without Bullet: robots moved by the DB18 model (:mod:`dmxshm.sim.db18`) and
kept apart in the plane (:mod:`dmxshm.sim.footprints`).

:class:`PlanarWorld` has the interface of :class:`~dmxshm.world.world.World` that the
front-ends use (reset, replace and return robots, wheel commands, a step, the state
records, contacts, objects and their movers), so an env or a network picks its physics
by the class it makes (:func:`make_world`). What differs:

* **Motion** is the DB18's: a robot's PWM duties are the model's input
  (:meth:`apply_duties`); a wheel speed command becomes a duty by Duckietown's
  kinematics (27 rad/s at duty 1, :meth:`apply_wheel_speeds`).
* **Contacts** are between footprints: after each step a robot that overlaps an object,
  another robot or the map's edge is pushed back out along the contact's normal, and
  its forward speed, if it drove into the contact, is zeroed. Robots touching (within
  :data:`CONTACT_DISTANCE_M`) are reported as Bullet's are (:meth:`touching`). Nothing
  tips, slides sideways or slips: a robot pushed into a wall spins its wheels in place.
* **State records** (:data:`~dmxshm.world.state.ROBOT_STATE_DTYPE`): the pose in the
  plane (the axle at the wheels' radius above the floor), the velocity ``u`` along the
  heading, the yaw rate, the model's acceleration (``u'`` along the heading and ``u w``
  across it), the wheels' angles and rates from the model.
* **Time of flight** is a ray against the same footprints (:meth:`tof_range`).

Example:
    >>> world = PlanarWorld("loop", 2, seed=0)
    >>> world.apply_duties(np.full((2, 2), 0.5))
    >>> for _ in range(30):
    ...     world.step()
    >>> speeds = np.hypot(*world.state()["lin_vel_m_s"][:, :2].T)
    >>> [round(float(v), 3) for v in speeds]
    [0.299, 0.299]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dmxshm.sim import db18_kernels as kernels
from dmxshm.sim import footprints as fp
from dmxshm.sim import planar_kernels as pk
from dmxshm.sim.db18 import (
    DB18,
    WHEEL_DISTANCE_M,
    WHEEL_RADIUS_M,
    WHEEL_SPEED_PER_DUTY_RAD_S,
    DB18Params,
)
from dmxshm.world.maps import RoadMap, load_map
from dmxshm.world.movers import Mover, movers_of
from dmxshm.world.objects import MapObject
from dmxshm.world.state import ROBOT_STATE_DTYPE
from dmxshm.world.world import DEFAULT_DT_S, WorldError

CONTACT_DISTANCE_M = 1e-3
"""Footprints at most this far apart are touching."""
PUSH_ITERATIONS = 4
"""Rounds of pushing robots out of what they overlap, per step."""
_FLOATS = ROBOT_STATE_DTYPE.itemsize // 8
_DISCS = np.array(fp.ROBOT_DISCS, float)


class PlanarWorld:
    """A road map with ``num_robots`` DB18 robots, their contacts in the plane.

    Args:
        road_map: a :class:`~dmxshm.world.maps.RoadMap`, or a bundled map name or path.
        num_robots: number of robots, placed by ``road_map.start_poses``.
        seed: seed of the start poses (and of the moving objects).
        dt_s: simulated time of one :meth:`step`.
        substeps: model integrations of ``dt_s / substeps`` per step (1: one
            integration per step, as gym-duckietown and the Duckiematrix engine do).
        params: every robot's model (one :class:`~dmxshm.sim.db18.DB18Params` for all,
            or one per robot); default the nominal DB18 without delay.
        **_: the Bullet world's drawing options (``visuals``, ``renderer``...), which
            have nothing to draw here.

    Attributes:
        model: the robots' :class:`~dmxshm.sim.db18.DB18`.
        physics: ``"db18"``.
    """

    physics = "db18"
    walls = True
    """Whether the map's edges are walls (gym-duckietown's drop-in: none, as there)."""

    def __init__(self, road_map: RoadMap | str | Path, num_robots: int, seed: int = 0,
                 dt_s: float = DEFAULT_DT_S, substeps: int = 1,
                 params: DB18Params | Sequence[DB18Params] | None = None,
                 **_: Any) -> None:
        if not isinstance(num_robots, (int, np.integer)) or num_robots < 0:
            raise WorldError(f"num_robots must be an integer >= 0, not {num_robots!r}")
        if not dt_s > 0:
            raise WorldError(f"dt_s must be positive, not {dt_s!r}")
        if not isinstance(substeps, (int, np.integer)) or substeps < 1:
            raise WorldError(f"substeps must be an integer >= 1, not {substeps!r}")
        self.road_map = road_map if isinstance(road_map, RoadMap) else load_map(road_map)
        self.num_robots = int(num_robots)
        self.dt_s = float(dt_s)
        self.substeps = int(substeps)
        if params is None or isinstance(params, DB18Params):
            params = [params or DB18Params()] * self.num_robots
        if len(params) != self.num_robots:
            raise WorldError(f"{len(params)} DB18 parameter sets for {self.num_robots} robots")
        self.model = DB18(params)
        self.objects: list[MapObject] = list(self.road_map.objects)
        self.object_ids = list(range(len(self.objects)))  # (no bodies: one id each)
        self.step_count = 0
        self._duties = np.zeros((self.num_robots, 2))
        self._physics = [(1.0, 1.0, 1.0)] * self.num_robots
        self._touching: tuple[list[tuple[int, int]], list[tuple[int, int]]] = ([], [])
        self.reset(seed)

    @property
    def physics_dt_s(self) -> float:
        """The model's integration step."""
        return self.dt_s / self.substeps

    @property
    def sim_time_s(self) -> float:
        """Simulated time since the last reset (``step_count * dt_s``)."""
        return self.step_count * self.dt_s

    # -- placing ---------------------------------------------------------------
    def reset(self, seed: int = 0) -> np.ndarray:
        """The robots at the start poses of ``seed``, at rest; the objects as at time 0."""
        self.seed = int(seed)
        self.movers = movers_of(self.road_map, self.objects, self.seed)
        poses = self.road_map.start_poses(self.num_robots, np.random.default_rng(seed))
        return self.replace_robots(poses)

    def replace_robots(self, poses: list[tuple[float, float, float]]) -> np.ndarray:
        """Put the robots at rest at ``poses``, with no memory of their past."""
        if len(poses) != self.num_robots:
            raise WorldError(f"{len(poses)} poses for {self.num_robots} robots")
        self.start_poses = [(float(x), float(y), float(yaw)) for x, y, yaw in poses]
        self.model.place(np.arange(self.num_robots), self.start_poses)
        self._duties[:] = 0.0
        self.step_count = 0
        self._shapes = self._object_shapes(0.0)
        self._touching = self._contacts()
        return self.state()

    def return_to_start(self, robots: Iterable[int]) -> None:
        """Put ``robots`` back at their start poses at rest, wheel angles zeroed; the
        others and the clock go on."""
        rows = [int(r) for r in robots]
        self.model.place(rows, [self.start_poses[r] for r in rows])
        self._duties[rows] = 0.0

    def move_objects(self, sim_time_s: float) -> None:
        """The moving objects where they are at ``sim_time_s``."""
        if self.movers:
            self._shapes = self._object_shapes(sim_time_s)

    def object_poses(self, sim_time_s: float) -> list[tuple[float, float, float]]:
        """Every object's ``(x, y, yaw)`` at ``sim_time_s``."""
        return [self.movers[i].pose(sim_time_s) if i in self.movers
                else (o.x_m, o.y_m, o.yaw_rad) for i, o in enumerate(self.objects)]

    def add_object(self, kind: str, x_m: float, y_m: float, yaw_rad: float = 0.0,
                   height_m: float = 0.0, *, name: str | None = None,
                   tag_id: int | None = None, color: str | None = None,
                   static: bool = True, speed_m_s: float = 0.0) -> MapObject:
        """Put an object on the map, as :meth:`World.add_object
        <dmxshm.world.world.World.add_object>` does."""
        obj = MapObject(name or f"{kind}-{len(self.objects)}", kind, float(x_m), float(y_m),
                        float(yaw_rad), float(height_m), tag_id=tag_id, color=color,
                        static=static, speed_m_s=float(speed_m_s))
        index = len(self.objects)
        if not static:
            self.movers[index] = Mover(self.road_map, obj, index, self.seed)
        self.objects.append(obj)
        self.object_ids.append(index)
        self._shapes = self._object_shapes(self.sim_time_s)
        return obj

    def _object_shapes(self, sim_time_s: float) -> fp.Shapes:
        poses = self.object_poses(sim_time_s)
        return fp.Shapes.of([s for i, o in enumerate(self.objects)
                             for s in fp.object_shapes(o, i, poses[i])])

    # -- the robots' models ------------------------------------------------------
    def set_model(self, robots: Sequence[int], params: Sequence[DB18Params]) -> None:
        """Give ``robots`` these DB18 parameters (a randomised robot's)."""
        self.model.set_params(list(robots), list(params))

    def set_robot_physics(self, robot: int, friction: float = 1.0, mass: float = 1.0,
                          wheel_radius: float = 1.0) -> None:
        """Kept for :meth:`robot_physics`; the DB18 has no friction, mass or wheel
        radius to scale (its own parameters are drawn instead: :meth:`set_model`)."""
        self._physics[robot] = (float(friction), float(mass), float(wheel_radius))

    def robot_physics(self, robot: int) -> tuple[float, float, float]:
        return self._physics[robot]

    # -- commands and the step ---------------------------------------------------
    def apply_duties(self, duties: ArrayLike) -> None:
        """Each robot's left and right PWM duties until the next command (shape
        ``(num_robots, 2)``; the model clips them to [-1, 1])."""
        d = np.asarray(duties, dtype=np.float64)
        if d.shape != (self.num_robots, 2):
            raise WorldError(f"duties have shape {d.shape}, expected ({self.num_robots}, 2)")
        if not np.all(np.isfinite(d)):
            raise WorldError(f"duties are not finite: {d.tolist()}")
        self._duties = d.copy()

    def apply_wheel_speeds(self, cmd_rad_s: ArrayLike) -> None:
        """Wheel speeds (rad/s), as the duties that give them by Duckietown's kinematics
        (``speed / 27``)."""
        self.apply_duties(np.asarray(cmd_rad_s, dtype=np.float64) / WHEEL_SPEED_PER_DUTY_RAD_S)

    def step(self) -> None:
        """Advance by ``dt_s``: the model's integrations, then the contacts."""
        h = self.physics_dt_s
        for _ in range(self.substeps):
            self.model.step(h, self._duties)
        self.step_count += 1
        if self.movers:
            self._shapes = self._object_shapes(self.sim_time_s)
        self._resolve()
        self._touching = self._contacts()

    def _resolve(self) -> None:
        """Push overlapping robots out, and stop those that drove into a contact."""
        m, n = self.model, self.num_robots
        if n == 0:
            return
        width, height = self.road_map.size_m
        if n == 1 and self._shapes.empty:  # alone: only the map's edges (compiled)
            if self.walls:
                kernels.keep_inside(m._s, _DISCS, fp.ROBOT_DISC_RADIUS_M, width, height)
            return
        if self._shapes.empty:  # robots and no objects: compiled, the same floats
            pk.resolve(m._s, n, _DISCS, fp.ROBOT_DISC_RADIUS_M, width, height, self.walls,
                       PUSH_ITERATIONS)
            return
        self._resolve_numpy()

    def _resolve_numpy(self) -> None:
        """:meth:`_resolve` in numpy, with objects (and the compiled one's reference:
        ``tests/sim/test_planar_kernels.py``)."""
        m, n = self.model, self.num_robots
        width, height = self.road_map.size_m
        r = fp.ROBOT_DISC_RADIUS_M
        total = np.zeros((n, 2))
        for _ in range(PUSH_ITERATIONS):
            centres = fp.robot_discs(m.x, m.y, m.c, m.s)              # (n, 2, 2)
            push = np.zeros((n, 2))
            flat = centres.reshape(-1, 2)
            if not self._shapes.empty:
                depth, normal, _ = fp.disc_penetrations(flat, r, self._shapes)
                push += _deepest(depth.reshape(n, 2, -1), normal.reshape(n, 2, -1, 2))
            if n > 1:
                depth, normal, owner = fp.disc_penetrations(flat, r, self._robot_shapes())
                depth = depth.reshape(n, 2, n, 2)
                depth[np.arange(n), :, np.arange(n), :] = -np.inf  # not against itself
                d = depth.reshape(n, 2, n * 2)
                # Each of a touching pair goes half way.
                push += 0.5 * _deepest(d, normal.reshape(n, 2, n * 2, 2), groups=n)
            if self.walls:  # the map's edges
                lo = np.maximum(r - centres, 0.0).max(axis=1)
                hi = np.maximum(centres + r - np.array([width, height]), 0.0).max(axis=1)
                push += lo - hi
            if not np.any(push):
                break
            m.x, m.y = m.x + push[:, 0], m.y + push[:, 1]
            total += push
        into = m.u * (m.c * total[:, 0] + m.s * total[:, 1]) < 0.0
        if np.any(into):
            m.u = np.where(into, 0.0, m.u)

    def _robot_shapes(self) -> fp.Shapes:
        m = self.model
        centres = fp.robot_discs(m.x, m.y, m.c, m.s).reshape(-1, 2)
        owners = np.repeat(np.arange(self.num_robots), 2)
        return fp.Shapes(np.zeros(0, np.int64), np.zeros((0, 2)), np.zeros((0, 2)),
                         np.zeros((0, 2)), owners, centres,
                         np.full(len(owners), fp.ROBOT_DISC_RADIUS_M))

    def _contacts(self) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        m, n = self.model, self.num_robots
        if n == 0 or (n == 1 and self._shapes.empty):
            return [], []
        if self._shapes.empty:  # robots and no objects: compiled
            touching = np.zeros((1, n, n), np.bool_)
            pk.touching(m._s, n, _DISCS, fp.ROBOT_DISC_RADIUS_M, CONTACT_DISTANCE_M,
                        touching)
            return [(int(a), int(b)) for a, b in zip(*np.nonzero(touching[0]),
                                                     strict=True)], []
        return self._contacts_numpy()

    def _contacts_numpy(self) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """:meth:`_contacts` in numpy, with objects (and the compiled one's reference)."""
        m, n = self.model, self.num_robots
        flat = fp.robot_discs(m.x, m.y, m.c, m.s).reshape(-1, 2)
        r = fp.ROBOT_DISC_RADIUS_M
        objects: set[tuple[int, int]] = set()
        if not self._shapes.empty:
            depth, _, owner = fp.disc_penetrations(flat, r, self._shapes)
            for i, j in zip(*np.nonzero(depth > -CONTACT_DISTANCE_M), strict=True):
                objects.add((int(i) // 2, int(owner[j])))
        robots: set[tuple[int, int]] = set()
        if n > 1:
            depth, _, owner = fp.disc_penetrations(flat, r, self._robot_shapes())
            for i, j in zip(*np.nonzero(depth > -CONTACT_DISTANCE_M), strict=True):
                a, b = int(i) // 2, int(owner[j])
                if a < b:
                    robots.add((a, b))
        return sorted(robots), sorted(objects)

    # -- reading -------------------------------------------------------------------
    def state(self, copy: bool = True) -> np.ndarray:
        """Every robot's state record (:data:`~dmxshm.world.state.ROBOT_STATE_DTYPE`), a
        new array each call (``copy`` is for the Bullet world's signature)."""
        n = self.num_robots
        out = np.zeros(n, ROBOT_STATE_DTYPE)
        kernels.fill_states(self.model._s, WHEEL_RADIUS_M, self.step_count > 0,
                            WHEEL_RADIUS_M, WHEEL_DISTANCE_M,
                            out.view(np.float64).reshape(n, _FLOATS))
        return out

    def set_state(self, states: np.ndarray, sim_time_s: float | None = None) -> None:
        """Put the robots in ``states`` (a world that mirrors another: a renderer's
        rays and drawings): pose, forward speed, yaw rate and wheel angles; with
        ``sim_time_s``, the moving objects where they are then."""
        if states.dtype != ROBOT_STATE_DTYPE or states.shape != (self.num_robots,):
            raise WorldError(f"set_state needs shape ({self.num_robots},) of "
                             f"ROBOT_STATE_DTYPE, got shape {states.shape} of {states.dtype}")
        m = self.model
        q = states["quat_xyzw"]
        yaw = np.arctan2(2 * (q[:, 3] * q[:, 2] + q[:, 0] * q[:, 1]),
                         1 - 2 * (q[:, 1] ** 2 + q[:, 2] ** 2))
        m.x, m.y = states["pos_m"][:, 0].copy(), states["pos_m"][:, 1].copy()
        m.c, m.s = np.cos(yaw), np.sin(yaw)
        m.r01, m.r11 = -m.s, m.c.copy()
        v = states["lin_vel_m_s"]
        m.u = v[:, 0] * m.c + v[:, 1] * m.s
        m.w = states["ang_vel_rad_s"][:, 2].copy()
        m.axis_l = states["wheel_angle_rad"][:, 0].copy()
        m.axis_r = states["wheel_angle_rad"][:, 1].copy()
        if sim_time_s is not None:
            self.move_objects(sim_time_s)

    set_poses = set_state
    """:meth:`set_state` (the Bullet world's cheaper variant is the same here)."""

    def touching(self) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """Robots touching robots, and robots touching objects, after the last step."""
        return self._touching

    def object_contacts(self) -> list[tuple[int, int]]:
        return self._touching[1]

    def contacts(self) -> list[tuple[int, int]]:
        return self._touching[0]

    def tof_range(self, tof: Any, pos: Sequence[float], rot: Sequence[Sequence[float]],
                  robot: int = 0) -> float:
        """The range ``tof`` (a :class:`~dmxshm.matrix.sensors.TimeOfFlight`) reads from
        robot ``robot`` at ``pos`` with rotation ``rot`` (rows)."""
        return float(self._rays(tof, np.array([pos[:2]], float),
                                np.array([[rot[0][0], rot[1][0]]], float), [robot])[0])

    def tof_ranges(self, tof: Any, rows: np.ndarray, robots: Sequence[int]) -> list[float]:
        """The ranges ``tof`` reads from robots ``robots`` in state records ``rows``."""
        q = rows["quat_xyzw"]
        x, y, z, w = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
        heading = np.stack([1 - 2 * (y * y + z * z), 2 * (x * y + w * z)], axis=1)
        heading /= np.linalg.norm(heading, axis=1, keepdims=True)
        return self._rays(tof, rows["pos_m"][:, :2], heading, robots).tolist()

    def _rays(self, tof: Any, positions: np.ndarray, headings: np.ndarray,
              robots: Sequence[int]) -> np.ndarray:
        """Ranges from robots ``robots`` at ``positions`` (n, 2) facing the unit
        ``headings`` (n, 2): a ray from the sensor's mount along the heading against
        the objects' and the other robots' footprints."""
        if self.num_robots == 1 and self._shapes.empty:  # nothing to see
            return np.full(len(positions), float(tof.max_range_m))
        mx, my = tof.mount_m[0], tof.mount_m[1]
        starts = positions + headings * mx + np.stack([-headings[:, 1], headings[:, 0]],
                                                      axis=1) * my
        best = fp.ray_distances(self._shapes, starts, headings, tof.max_range_m)
        if self.num_robots > 1:
            best = np.minimum(best, fp.ray_distances(
                self._robot_shapes(), starts, headings, tof.max_range_m,
                skip_disc_owner=np.asarray(robots, np.int64)))
        return best

    def close(self) -> None:
        """Nothing to release (for the Bullet world's signature)."""

    def __enter__(self) -> PlanarWorld:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _deepest(depth: np.ndarray, normal: np.ndarray, groups: int | None = None) -> np.ndarray:
    """Each robot's push out of what it overlaps: for each obstacle (or, with ``groups``,
    each other robot: ``depth``'s last axis in groups of two discs), the deepest of the
    robot's discs in it, along its normal; summed over obstacles. ``depth`` (n, 2, m),
    ``normal`` (n, 2, m, 2)."""
    n = depth.shape[0]
    if groups is not None:
        depth = depth.reshape(n, 2, groups, 2).transpose(0, 2, 1, 3).reshape(n, groups, 4)
        normal = normal.reshape(n, 2, groups, 2, 2).transpose(0, 2, 1, 3, 4).reshape(
            n, groups, 4, 2)
        axis = 2
    else:
        depth, normal = depth.transpose(0, 2, 1), normal.transpose(0, 2, 1, 3)
        axis = 2
    k = np.argmax(depth, axis=axis)
    d = np.take_along_axis(depth, k[..., None], axis=axis)[..., 0]
    nrm = np.take_along_axis(normal, k[..., None, None], axis=axis)[..., 0, :]
    d = np.where(d > 0.0, d, 0.0)
    return (nrm * d[..., None]).sum(axis=1)


def make_world(physics: str, road_map: RoadMap | str | Path, num_robots: int, **kw: Any
               ) -> Any:
    """A world of ``physics`` (``"bullet"`` or ``"db18"``) with the keyword arguments of
    :class:`~dmxshm.world.world.World` (``params``: the DB18's, for ``db18``)."""
    if physics == "db18":
        return PlanarWorld(road_map, num_robots, **kw)
    if physics == "bullet":
        from dmxshm.world.world import World

        kw.pop("params", None)
        return World(road_map, num_robots, **kw)
    raise WorldError(f"physics must be one of bullet, db18, not {physics!r}")

