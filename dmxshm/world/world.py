"""A world: one pybullet client holding a road map and its Duckiebots.

Physics is deterministic: the same map, robot count, seed and sequence of
wheel commands give bit-identical state arrays, in this process or another
one. Nothing reads the clock or a global random generator; the seed only
picks the start poses (through a ``numpy.random.Generator``), and
:meth:`World.reset` rebuilds the simulation from scratch, so a reset world
and a fresh one are indistinguishable (Bullet keeps warm-start caches that a
pose reset alone would not clear).

Example:
    >>> with World("loop", num_robots=2, seed=0) as world:
    ...     world.apply_wheel_speeds(np.full((2, 2), 10.0))
    ...     for _ in range(30):
    ...         world.step()
    ...     speed = np.linalg.norm(world.state()["lin_vel_m_s"], axis=1)
    >>> bool(np.all(np.abs(speed - 0.318) < 0.03))
    True
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

import numpy as np
from numpy.typing import ArrayLike

from dmxshm._pybullet import pb
from dmxshm.errors import DmxError
from dmxshm.world.maps import RoadMap, load_map
from dmxshm.world.movers import Mover, movers_of
from dmxshm.world.objects import MapObject, build_objects
from dmxshm.world.renderers import load_egl, quiet_stdio, unload_egl
from dmxshm.world.robot import (
    COM_IN_BASE_M,
    MAX_WHEEL_SPEED_RAD_S,
    MAX_WHEEL_TORQUE_NM,
    WHEEL_JOINTS,
    WHEEL_RADIUS_M,
    load_robot,
)
from dmxshm.world.scene import Scene, build_scene
from dmxshm.world.state import ROBOT_STATE_DTYPE

GRAVITY_M_S2 = 9.81
"""Magnitude of gravity, along -z."""

DEFAULT_DT_S = 1.0 / 30.0
"""Default step: one camera frame at 30 Hz."""

DEFAULT_SUBSTEPS = 4
"""Default physics substeps per step (Bullet steps of dt_s / substeps)."""

CONTACT_DISTANCE_M = 1e-3
"""Two robots whose closest points are at most this far apart are touching
(Bullet reports contacts slightly before penetration)."""

SOLVER_ITERATIONS = 20
"""Bullet constraint-solver iterations per substep. The default, 50, costs
twice as much (about 55 us instead of 25 us per robot per substep here) for
no visible difference in wheel-ground contact or robot collisions."""

_STATE_FLOATS = ROBOT_STATE_DTYPE.itemsize // 8
assert all(ROBOT_STATE_DTYPE[name].base == np.float64 for name in ROBOT_STATE_DTYPE.names or ())


class WorldError(DmxError, ValueError):
    """A world was configured or commanded with invalid values."""


class World:
    """A road map with ``num_robots`` differential-drive robots in pybullet.

    Args:
        road_map: a :class:`~dmxshm.world.maps.RoadMap`, or a bundled map
            name or file path for :func:`~dmxshm.world.maps.load_map`.
        num_robots: number of robots, placed by ``road_map.start_poses``.
        seed: seed of the start poses.
        dt_s: simulated time of one :meth:`step`.
        substeps: Bullet steps of ``dt_s / substeps`` per :meth:`step`.
        client: an existing pybullet client to build into (it is then not
            disconnected by :meth:`close`, and :meth:`reset` clears it); by
            default the world connects its own DIRECT client.
        visuals: False leaves out the map's visual geometry (a world that is
            never rendered; same physics, cheaper steps).
        mesh_files: build the map's meshes from OBJ files (what pybullet's
            EGL renderer plugin needs; :func:`~dmxshm.world.scene.build_scene`).
        renderer: ``"tiny"``, ``"egl"`` or ``"batch"``: the camera renderer this
            world is drawn with (:mod:`dmxshm.world.renderers`). ``egl`` loads the
            plugin into the world's own client before the scene is built,
            and builds the meshes from files; ``batch`` builds no visual geometry
            (:mod:`dmxshm.matrix.batch_render` draws from the map and the states).

    Raises:
        RendererError: ``egl`` cannot be loaded here, or this process already
            holds an EGL world.
        WorldError: invalid ``num_robots``, ``dt_s`` or ``substeps``.
        MapError: the map cannot be loaded or has no room for the robots.

    Attributes:
        road_map: the map.
        num_robots: number of robots.
        dt_s: simulated time per step.
        substeps: physics substeps per step.
        client: the pybullet client id.
        step_count: steps since the last reset.
        robot_ids: pybullet body id of each robot.
        scene: the map's bodies.
        objects: the map's objects and those added (:meth:`add_object`).
        object_ids: the pybullet body of each object.
    """

    def __init__(
        self,
        road_map: RoadMap | str | Path,
        num_robots: int,
        seed: int = 0,
        dt_s: float = DEFAULT_DT_S,
        substeps: int = DEFAULT_SUBSTEPS,
        client: int | None = None,
        visuals: bool = True,
        mesh_files: bool = False,
        renderer: str = "tiny",
    ) -> None:
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
        # The batch renderer draws from the map and the states: no visual shapes here.
        self.visuals = visuals and renderer != "batch"
        self.renderer = renderer
        self.mesh_files = mesh_files or renderer == "egl"
        self._own_client = client is None
        self.client = pb.connect(pb.DIRECT) if client is None else client
        if self.client < 0:
            raise WorldError("pybullet could not open a DIRECT physics client")
        # An owned client is disconnected by close(), or when the world is
        # garbage-collected or the interpreter exits, whichever comes first.
        self._disconnect = weakref.finalize(
            self, _disconnect_quietly, self.client if self._own_client else None,
            renderer == "egl")
        if renderer == "egl":
            try:
                load_egl(self.client)
            except BaseException:
                self.close()
                raise
        self.robot_ids: list[int] = []
        self.objects: list[MapObject] = list(self.road_map.objects)
        self.object_ids: list[int] = []
        self.step_count = 0
        self._state = np.zeros(self.num_robots, ROBOT_STATE_DTYPE)
        # Each robot's physics scales (friction, mass, wheel radius), kept across
        # replace_robots; what each body has now; each body's dynamics as loaded.
        self._physics: list[tuple[float, float, float]] = [_NOMINAL_PHYSICS] * self.num_robots
        self._body_physics: dict[int, tuple[float, float]] = {}
        self._loaded: dict[int, dict[int, tuple[float, float, tuple[float, ...]]]] = {}
        self._wheel_scale: list[float] | None = None
        try:
            self.reset(seed)
        except BaseException:
            self.close()
            raise

    @property
    def sim_time_s(self) -> float:
        """Simulated time since the last reset (``step_count * dt_s``, no drift)."""
        return self.step_count * self.dt_s

    def reset(self, seed: int = 0) -> np.ndarray:
        """Rebuild the world and place the robots at the start poses of ``seed``.

        Returns:
            The new state array (robots at rest).
        """
        c = self.client
        pb.resetSimulation(physicsClientId=c)
        pb.setGravity(0.0, 0.0, -GRAVITY_M_S2, physicsClientId=c)
        pb.setPhysicsEngineParameter(fixedTimeStep=self.dt_s / self.substeps, numSubSteps=0,
                                     numSolverIterations=SOLVER_ITERATIONS,
                                     deterministicOverlappingPairs=1, physicsClientId=c)
        self.scene: Scene = build_scene(self.road_map, c, self.visuals, self.mesh_files)
        self.object_ids, self._mover_visuals = build_objects(self.objects, c, self.visuals,
                                                             self.mesh_files)
        self._object_of = {body: i for i, body in enumerate(self.object_ids)}
        self.seed = int(seed)
        self.movers = movers_of(self.road_map, self.objects, self.seed)
        self.robot_ids = []
        poses = self.road_map.start_poses(self.num_robots, np.random.default_rng(seed))
        return self.replace_robots(poses)

    def replace_robots(self, poses: list[tuple[float, float, float]]) -> np.ndarray:
        """Put robots at rest at ``poses``, with no memory of their past; keep the scene.

        A single robot replaced by a single robot is reused: moved far away
        (the broadphase then drops its contact pairs and their cached
        impulses), put back at its pose at rest, wheels and motors zeroed.
        That costs about 0.1 ms, where loading a fresh body costs 2 ms, and the
        runs that follow are bit-identical to those of a fresh body (tested).
        With several robots, reused bodies are not (Bullet's pair caches
        then depend on the past), so they are removed and fresh ones loaded.
        """
        c = self.client
        self.start_poses = list(poses)
        if len(poses) == len(self.robot_ids) == 1:
            for body, pose in zip(self.robot_ids, poses, strict=True):
                self._place_at_rest(body, pose)
        else:
            for body in self.robot_ids:
                pb.removeBody(body, physicsClientId=c)
            self.robot_ids = [load_robot(c, x, y, yaw, self.visuals) for x, y, yaw in poses]
            self._index_of = {body: i for i, body in enumerate(self.robot_ids)}
            self._body_physics, self._loaded = {}, {}  # fresh bodies, as loaded
            for i, physics in enumerate(self._physics):
                if physics != _NOMINAL_PHYSICS:
                    self.set_robot_physics(i, *physics)
        self.step_count = 0
        self.move_objects(0.0)
        self._state = self._read_state(previous=None)
        return self._state.copy()

    def move_objects(self, sim_time_s: float) -> None:
        """Put each moving object (:mod:`dmxshm.world.movers`) where it is at simulated
        time ``sim_time_s``: the engine does so before each step, a world that mirrors
        another (a renderer's, the time of flight's) with the state's time."""
        if not self.movers:
            return
        c = self.client
        for i, mover in self.movers.items():
            x, y, yaw = mover.pose(sim_time_s)
            quat = (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2))
            pb.resetBasePositionAndOrientation(self.object_ids[i], (x, y, 0.0), quat,
                                               physicsClientId=c)
            for body in self._mover_visuals.get(i, ()):
                pb.resetBasePositionAndOrientation(body, (x, y, 0.0), quat,
                                                   physicsClientId=c)

    def object_poses(self, sim_time_s: float) -> list[tuple[float, float, float]]:
        """Every object's ``(x, y, yaw)`` at simulated time ``sim_time_s`` (a static
        object's is its map pose)."""
        return [self.movers[i].pose(sim_time_s) if i in self.movers
                else (o.x_m, o.y_m, o.yaw_rad) for i, o in enumerate(self.objects)]

    def return_to_start(self, robots: Iterable[int]) -> None:
        """Put ``robots`` back at their start poses at rest, wheel angles zeroed; the
        other robots and the clock go on (a Duckiematrix agent's ``state/reset``).
        Every robot's velocity-derived readings start afresh at the next step."""
        for i in robots:
            self._place_at_rest(self.robot_ids[i], self.start_poses[i])
        self._state = self._read_state(previous=None)

    def _place_at_rest(self, body: int, pose: tuple[float, float, float]) -> None:
        """Move ``body`` far away (the broadphase drops its contact pairs and their
        cached impulses), then to ``pose`` at rest, wheels and motors zeroed."""
        c = self.client
        x, y, yaw = pose
        pb.resetBasePositionAndOrientation(body, _FAR_AWAY_M, (0.0, 0.0, 0.0, 1.0),
                                           physicsClientId=c)
        pb.performCollisionDetection(physicsClientId=c)
        quat = (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2))
        ox, oy, oz = _com_offset(*quat)
        pb.resetBasePositionAndOrientation(
            body, (x + ox, y + oy, WHEEL_RADIUS_M + oz), quat, physicsClientId=c)
        pb.resetBaseVelocity(body, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), physicsClientId=c)
        for joint in WHEEL_JOINTS:
            pb.resetJointState(body, joint, 0.0, 0.0, physicsClientId=c)
        pb.setJointMotorControlArray(
            body, WHEEL_JOINTS, pb.VELOCITY_CONTROL, targetVelocities=(0.0, 0.0),
            forces=(MAX_WHEEL_TORQUE_NM, MAX_WHEEL_TORQUE_NM), physicsClientId=c)

    def set_robot_physics(self, robot: int, friction: float = 1.0, mass: float = 1.0,
                          wheel_radius: float = 1.0) -> None:
        """Scale ``robot``'s physics against the robot as loaded (domain randomisation,
        :mod:`dmxshm.world.randomize`; 1.0: as loaded). Kept until set again, also
        through :meth:`replace_robots` and :meth:`reset`.

        Args:
            robot: the robot's index.
            friction: a scale of the wheels' and the chassis' lateral friction.
            mass: a scale of the chassis's mass, its inertia scaled along (Bullet
                would recompute the inertia from the collision box, not the URDF's).
            wheel_radius: a scale of each commanded wheel speed (Bullet's wheels keep
                their shape): the robot goes ``wheel_radius`` times as far per turn.
        """
        self._physics[robot] = (float(friction), float(mass), float(wheel_radius))
        scales = [p[2] for p in self._physics]
        self._wheel_scale = scales if any(v != 1.0 for v in scales) else None
        body, c = self.robot_ids[robot], self.client
        if self._body_physics.get(body, (1.0, 1.0)) == (friction, mass):
            return  # as it is
        loaded = self._loaded.get(body)
        if loaded is None:
            loaded = self._loaded[body] = {
                link: pb.getDynamicsInfo(body, link, physicsClientId=c)[:3]
                for link in (-1, *WHEEL_JOINTS)}
        for link, info in loaded.items():
            pb.changeDynamics(body, link, lateralFriction=info[1] * friction,
                              physicsClientId=c)
        base_mass, inertia = loaded[-1][0], loaded[-1][2]
        pb.changeDynamics(body, -1, mass=base_mass * mass, physicsClientId=c)
        pb.changeDynamics(body, -1, localInertiaDiagonal=[v * mass for v in inertia],
                          physicsClientId=c)
        self._body_physics[body] = (float(friction), float(mass))

    def robot_physics(self, robot: int) -> tuple[float, float, float]:
        """``robot``'s physics scales: (friction, mass, wheel radius)."""
        return self._physics[robot]

    def apply_wheel_speeds(self, cmd_rad_s: ArrayLike) -> None:
        """Command each robot's wheel speeds until the next command.

        The motors reach the speed with at most
        :data:`~dmxshm.world.robot.MAX_WHEEL_TORQUE_NM` each; commands are
        scaled by each robot's wheel radius scale (:meth:`set_robot_physics`), then
        clipped to +-:data:`~dmxshm.world.robot.MAX_WHEEL_SPEED_RAD_S`.

        Args:
            cmd_rad_s: shape ``(num_robots, 2)``: left and right wheel speed,
                rad/s, positive forward.

        Raises:
            WorldError: wrong shape or a non-finite value.
        """
        if type(cmd_rad_s) is list and self.num_robots == 1 == len(cmd_rad_s):
            # One robot's pair as plain floats (the single environment's path):
            # the same checks and clip without numpy's per-call overhead.
            pair = cmd_rad_s[0]
            if (type(pair) in (list, tuple) and len(pair) == 2
                    and type(pair[0]) is float and type(pair[1]) is float
                    and math.isfinite(pair[0]) and math.isfinite(pair[1])):
                m = MAX_WHEEL_SPEED_RAD_S
                left, right = pair
                if self._wheel_scale is not None:
                    left, right = left * self._wheel_scale[0], right * self._wheel_scale[0]
                left, right = max(-m, min(m, left)), max(-m, min(m, right))
                pb.setJointMotorControlArray(
                    self.robot_ids[0], WHEEL_JOINTS, pb.VELOCITY_CONTROL,
                    targetVelocities=(left, right),
                    forces=(MAX_WHEEL_TORQUE_NM, MAX_WHEEL_TORQUE_NM), physicsClientId=self.client)
                return
        cmd = np.asarray(cmd_rad_s, dtype=np.float64)
        if cmd.shape != (self.num_robots, 2):
            raise WorldError(f"wheel command has shape {cmd.shape}, expected "
                             f"({self.num_robots}, 2): one (left, right) pair per robot")
        if not np.all(np.isfinite(cmd)):
            bad = sorted({int(i) for i in np.argwhere(~np.isfinite(cmd))[:, 0]})
            raise WorldError(f"wheel command of robot(s) {bad} is not finite: {cmd[bad]}")
        if self._wheel_scale is not None:
            cmd = cmd * np.array(self._wheel_scale)[:, None]
        commands = np.clip(cmd, -MAX_WHEEL_SPEED_RAD_S, MAX_WHEEL_SPEED_RAD_S)
        forces = (MAX_WHEEL_TORQUE_NM, MAX_WHEEL_TORQUE_NM)
        for body, (left, right) in zip(self.robot_ids, commands.tolist(), strict=True):
            pb.setJointMotorControlArray(body, WHEEL_JOINTS, pb.VELOCITY_CONTROL,
                                         targetVelocities=(left, right), forces=forces,
                                         physicsClientId=self.client)

    def step(self) -> None:
        """Advance the simulation by ``dt_s`` in ``substeps`` Bullet steps (moving
        objects first put where they are at the step's end)."""
        if self.movers:
            self.move_objects((self.step_count + 1) * self.dt_s)
        for _ in range(self.substeps):
            pb.stepSimulation(physicsClientId=self.client)
        self.step_count += 1
        self._state = self._read_state(previous=self._state)

    def state(self, copy: bool = True) -> np.ndarray:
        """Every robot's state, shape ``(num_robots,)``, :data:`ROBOT_STATE_DTYPE`.

        Args:
            copy: False returns the world's own array, to read only, valid
                until the next :meth:`step` (no copy: for a caller in a hurry).
        """
        return self._state.copy() if copy else self._state

    def set_state(self, states: np.ndarray, sim_time_s: float | None = None) -> None:
        """Put the robots in ``states`` (e.g. to mirror another process's world).

        Poses, velocities and wheel joints are reset instantly; the next
        :meth:`state` returns ``states`` as given. With ``sim_time_s`` (the states'
        time), the moving objects go where they are then (:meth:`move_objects`).

        Raises:
            WorldError: wrong dtype or shape.
        """
        self._check_states(states, "set_state")
        c = self.client
        rows = np.ascontiguousarray(states).view(np.float64).reshape(-1, _STATE_FLOATS).tolist()
        for body, row in zip(self.robot_ids, rows, strict=True):
            px, py, pz, x, y, z, w, vx, vy, vz, wx, wy, wz = row[:13]
            ox, oy, oz = _com_offset(x, y, z, w)
            # The axle midpoint's pose and velocity, moved to the centre of mass.
            pb.resetBasePositionAndOrientation(body, (px + ox, py + oy, pz + oz), (x, y, z, w),
                                               physicsClientId=c)
            pb.resetBaseVelocity(body, (vx + wy * oz - wz * oy, vy + wz * ox - wx * oz,
                                        vz + wx * oy - wy * ox), (wx, wy, wz),
                                 physicsClientId=c)
            for joint, angle, rate in zip(WHEEL_JOINTS, row[16:18], row[18:20], strict=True):
                pb.resetJointState(body, joint, angle, rate, physicsClientId=c)
        if sim_time_s is not None:
            self.move_objects(sim_time_s)
        self._state = states.copy()

    def _check_states(self, states: np.ndarray, caller: str) -> None:
        if states.dtype != ROBOT_STATE_DTYPE or states.shape != (self.num_robots,):
            raise WorldError(f"{caller} needs shape ({self.num_robots},) of ROBOT_STATE_DTYPE, "
                             f"got shape {states.shape} of {states.dtype}")

    def set_poses(self, states: np.ndarray, sim_time_s: float | None = None) -> None:
        """Put the robots' bodies at the poses of ``states``, nothing else: for a world
        that only looks (ray tests of the time-of-flight sensor), never steps and never
        draws (a camera sees the wheels turn: use :meth:`set_state`). A third of
        :meth:`set_state`'s cost. ``sim_time_s``: as for :meth:`set_state`.

        Raises:
            WorldError: wrong dtype or shape.
        """
        self._check_states(states, "set_poses")
        c = self.client
        rows = np.ascontiguousarray(states).view(np.float64).reshape(-1, _STATE_FLOATS)
        for body, row in zip(self.robot_ids, rows[:, :7].tolist(), strict=True):
            px, py, pz, x, y, z, w = row
            ox, oy, oz = _com_offset(x, y, z, w)
            pb.resetBasePositionAndOrientation(body, (px + ox, py + oy, pz + oz), (x, y, z, w),
                                               physicsClientId=c)
        if sim_time_s is not None:
            self.move_objects(sim_time_s)
        self._state = states.copy()

    def tof_range(self, tof: object, pos: tuple[float, ...],
                  rot: tuple[tuple[float, ...], ...], robot: int = 0) -> float:
        """The range ``tof`` (a :class:`~dmxshm.matrix.sensors.TimeOfFlight`) reads from
        ``pos`` with rotation ``rot`` (rows): a ray test in this world (``robot``: whose
        sensor, for a world that must be told; Bullet's ray starts outside it)."""
        return tof.measure_pose(self.client, pos, rot)  # type: ignore[attr-defined]

    def tof_ranges(self, tof: object, rows: np.ndarray, robots: object = None) -> list[float]:
        """The ranges ``tof`` reads from the robots in state records ``rows``, in one
        batch of rays (``robots``: whose, for a world that must be told)."""
        return tof.measure_many(self.client, rows)  # type: ignore[attr-defined]

    def add_object(self, kind: str, x_m: float, y_m: float, yaw_rad: float = 0.0,
                   height_m: float = 0.0, *, name: str | None = None,
                   tag_id: int | None = None, color: str | None = None,
                   static: bool = True, speed_m_s: float = 0.0) -> MapObject:
        """Put an object (:mod:`dmxshm.world.objects`) on the map, as a map file would:
        a body robots hit, the time of flight ranges and the cameras see; static, or
        moving along its lane (:mod:`dmxshm.world.movers`) from where the clock is now.

        It stays through :meth:`reset`. Objects of a network come from its map file;
        this adds to this world only.

        Args:
            kind: one of :data:`~dmxshm.world.objects.KINDS`.
            x_m, y_m: position, world frame.
            yaw_rad: heading, counter-clockwise from east (the object faces it).
            height_m: height; 0 for the kind's default.
            name: a name (default ``KIND-N``).
            tag_id: an AprilTag id (signs, floor tags).
            color: a colour name (duckies, vehicles).
            static: False: it moves along the lane it stands on.
            speed_m_s: a moving object's speed (0: its kind's default).

        Raises:
            ObjectError: an unknown kind (the message lists the known ones), a pose or
                height that is not a finite number, or a moving object off the road.

        Example:
            >>> with World("loop", 1) as w:
            ...     cone = w.add_object("cone", 1.0, 1.0)
            ...     (cone.kind, cone.height_m, len(w.object_ids))
            ('cone', 0.08, 1)
        """
        obj = MapObject(name or f"{kind}-{len(self.objects)}", kind, float(x_m), float(y_m),
                        float(yaw_rad), float(height_m), tag_id=tag_id, color=color,
                        static=static, speed_m_s=float(speed_m_s))
        index = len(self.objects)
        mover = None if static else Mover(self.road_map, obj, index, self.seed)
        (body,), visuals = build_objects([obj], self.client, self.visuals, self.mesh_files)
        self._object_of[body] = index
        self.objects.append(obj)
        self.object_ids.append(body)
        if mover is not None:
            self.movers[index] = mover
            if visuals:
                self._mover_visuals[index] = visuals[0]
            self.move_objects(self.sim_time_s)
        return obj

    def touching(self) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """Robots touching robots, and robots touching objects, after the last step: pairs
        ``(i, j)``, ``i < j``, of robot indices, and pairs ``(robot, object)`` (indices
        into ``robot_ids`` and ``objects``), each sorted. One query of the contacts."""
        robots, objects = set(), set()
        index_of, object_of = self._index_of, self._object_of
        for point in pb.getContactPoints(physicsClientId=self.client):
            if point[8] > CONTACT_DISTANCE_M:
                continue
            a, b = point[1], point[2]
            ra, rb = index_of.get(a), index_of.get(b)
            if ra is not None and rb is not None:
                if ra != rb:
                    robots.add((min(ra, rb), max(ra, rb)))
            elif ra is not None and b in object_of:
                objects.add((ra, object_of[b]))
            elif rb is not None and a in object_of:
                objects.add((rb, object_of[a]))
        return sorted(robots), sorted(objects)

    def object_contacts(self) -> list[tuple[int, int]]:
        """Pairs ``(robot, object)`` (indices into ``robot_ids`` and ``objects``) touching
        after the last step, sorted."""
        return self.touching()[1] if self.object_ids else []

    def contacts(self) -> list[tuple[int, int]]:
        """Pairs ``(i, j)``, ``i < j``, of robots touching after the last step, sorted."""
        return self.touching()[0]

    def close(self) -> None:
        """Disconnect the client if the world owns it; safe to call twice."""
        self._disconnect()

    def __enter__(self) -> World:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _read_state(self, previous: np.ndarray | None) -> np.ndarray:
        """Read the robots from Bullet; finite-difference the acceleration.

        Plain float arithmetic per robot: for a handful of robots it costs a
        few microseconds, where the numpy equivalent costs ~60 us of overhead.
        """
        c = self.client
        dt = self.dt_s
        before = (previous.view(np.float64).reshape(-1, _STATE_FLOATS)[:, 7:10].tolist()
                  if previous is not None else None)
        rows = []
        for i, body in enumerate(self.robot_ids):
            pos, quat = pb.getBasePositionAndOrientation(body, physicsClientId=c)
            lin, ang = pb.getBaseVelocity(body, physicsClientId=c)
            left, right = pb.getJointStates(body, WHEEL_JOINTS, physicsClientId=c)
            x, y, z, w = quat
            ox, oy, oz = _com_offset(x, y, z, w)
            wx, wy, wz = ang
            # v_axle = v_com - omega x o
            vx = lin[0] - (wy * oz - wz * oy)
            vy = lin[1] - (wz * ox - wx * oz)
            vz = lin[2] - (wx * oy - wy * ox)
            if before is None:
                ax = ay = az = 0.0
            else:
                px, py, pz = before[i]
                ax, ay, az = (vx - px) / dt, (vy - py) / dt, (vz - pz) / dt
            rows.append((pos[0] - ox, pos[1] - oy, pos[2] - oz, x, y, z, w, vx, vy, vz,
                         wx, wy, wz, ax, ay, az, left[0], right[0], left[1], right[1]))
        flat = np.array(rows, dtype=np.float64).reshape(self.num_robots, _STATE_FLOATS)
        return flat.view(ROBOT_STATE_DTYPE).reshape(self.num_robots)


_NOMINAL_PHYSICS = (1.0, 1.0, 1.0)  # friction, mass, wheel radius scales
_FAR_AWAY_M = (1e4, 1e4, 1e4)  # where a reused robot goes to lose its contacts


def _com_offset(x: float, y: float, z: float, w: float) -> tuple[float, float, float]:
    """``R(q) @ COM_IN_BASE_M``: from the axle midpoint to the centre of mass, world frame.

    Plain floats (its y component is 0): for one robot this costs ~1 us where
    numpy costs ~20 us of overhead.
    """
    cx, _, cz = COM_IN_BASE_M
    return ((1 - 2 * (y * y + z * z)) * cx + 2 * (x * z + y * w) * cz,
            2 * (x * y + z * w) * cx + 2 * (y * z - x * w) * cz,
            2 * (x * z - y * w) * cx + (1 - 2 * (x * x + y * y)) * cz)


def _disconnect_quietly(client: int | None, egl: bool = False) -> None:
    if client is None:
        return
    try:
        if egl:  # the plugin says goodbye on stdout
            unload_egl(client)
            with quiet_stdio():
                pb.disconnect(physicsClientId=client)
        else:
            pb.disconnect(physicsClientId=client)
    except pb.error:  # already gone (pybullet tears clients down at exit itself)
        pass
