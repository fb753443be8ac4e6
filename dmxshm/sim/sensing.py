"""The sensors: one registry, from which every list of sensors derives, and the
sensing of a block of robots, every sensor for all of them at once.

A :class:`Sensor` is registered once (:func:`register`; the built-in ones at the
end of this module). What a run does with sensors is read from the registry:

- the observation record (:func:`obs_dtype`): each timed sensor's ``<name>_time_s``
  stamp, in registration order, then every present sensor's value field, by
  :attr:`Sensor.place`;
- the default realtime rates (:data:`DEFAULT_RATES_HZ`) and the names of the timed
  sensors (:data:`SENSOR_NAMES`: the renderer's, the summary's, the live view's,
  the log's topics, the digest's streams and their order);
- the log's JSON messages and their schemas, and the replay's decoders
  (:class:`LogFields`, :attr:`Sensor.value_dtype`);
- what a renderer and the realtime replay compute (:class:`Sensing`).

A *timed* sensor (with a ``rate_hz``) samples at its own rate in realtime mode, is
stamped, hashed into its robot's digest stream and logged. A *pseudo-sensor*
(``rate_hz`` None: the lane pose, the route, the motion) is refreshed with every observation and
is neither stamped, hashed nor logged.

Example:
    >>> [s.name for s in sensors()]
    ['camera', 'imu', 'encoders', 'tof', 'lane', 'route', 'motion']
    >>> list(SENSOR_NAMES), DEFAULT_RATES_HZ["imu"]
    (['camera', 'imu', 'encoders', 'tof'], 100.0)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from dmxshm.errors import DmxError
from dmxshm.matrix.camera import quat_matrix
from dmxshm.matrix.obs import ObsLayoutError
from dmxshm.matrix.sensors import (
    CAMERA_RATE_HZ,
    ENCODER_RATE_HZ,
    IMU_RATE_HZ,
    TOF_RATE_HZ,
    TimeOfFlight,
    encoders_many,
    imu_many,
)
from dmxshm.world.state import poses_2d, yaw_of

if TYPE_CHECKING:
    from dmxshm.matrix.cameras import RobotCameras
    from dmxshm.matrix.noise import Noise
    from dmxshm.sim.planar import PlanarWorld
    from dmxshm.world.routes import Routes
    from dmxshm.world.world import World


class SensorError(DmxError, ValueError):
    """A sensor could not be registered (a name or field taken), or is not registered."""


@dataclass(frozen=True)
class Reading:
    """What every sensor reads: the state records of every robot, the robots of the
    block being sensed, their records (``states[robots]``), the step and its time."""

    states: np.ndarray
    robots: tuple[int, ...]
    rows: np.ndarray
    step: int
    sim_time_s: float


Measure = Callable[["Sensing", Reading, np.ndarray], None]
"""``measure(sensing, reading, out)``: write the samples of ``reading.robots`` into
``out`` (the sensor's field of their records, ``(n, *shape)``), noise included."""


@dataclass(frozen=True)
class LogFields:
    """A timed sensor's JSON message in the log, beside ``step``, ``sim_time_s`` and
    ``wall_time_s``.

    Args:
        types: each property's JSON type (its log schema, ``dmxshm.<name>``).
        encode: a sample (the record's value) -> those properties.
        decode: the properties -> the sample's value (what ``np.asarray`` makes the
            record's value of; the realtime replay compares it with its own).
    """

    types: Mapping[str, str]
    encode: Callable[[np.ndarray], dict[str, Any]]
    decode: Callable[[Mapping[str, Any]], Any]


@dataclass(frozen=True)
class Sensor:
    """One sensor of every robot.

    Args:
        name: its name in the summary, the log's topic (``/robot03/<name>``), the
            digest's stream (``robot03/<name>``) and ``--rates``.
        field: the observation record's field holding its sample.
        dtype: that field's numpy type (little-endian: the record is an ABI).
        shape: that field's shape; None for the camera's image (the camera's size).
        measure: computes the samples (:data:`Measure`).
        rate_hz: its default realtime rate; None: a pseudo-sensor (see the module).
        log: its log message; None for the camera (a PNG image) and pseudo-sensors.
        needs: ``"camera"`` or ``"route"``: in the record only with a camera, with
            routes; None: always.
        place: where its value field sits among the values (ascending, then by
            registration): the built-in sensors keep the record's layout, the image
            comes last so that every other field keeps its offset at any camera size.
    """

    name: str
    field: str
    dtype: str
    shape: tuple[int, ...] | None
    measure: Measure
    rate_hz: float | None = None
    log: LogFields | None = None
    needs: str | None = None
    place: int = 100

    @property
    def timed(self) -> bool:
        """Whether it samples at a rate (stamped, hashed, logged)."""
        return self.rate_hz is not None

    @property
    def time_field(self) -> str:
        """The record's field of the simulated time of its newest sample."""
        return f"{self.name}_time_s"

    @property
    def image(self) -> bool:
        """Whether its sample is the camera's image."""
        return self.shape is None

    @property
    def value_dtype(self) -> np.dtype:
        """The type of its sample's elements (what the digest hashes, what the replay
        decodes a logged sample into)."""
        return np.dtype(self.dtype)

    def present(self, camera: bool, route: bool) -> bool:
        """Whether a record with (or without) a camera and routes holds it."""
        return {None: True, "camera": camera, "route": route}[self.needs]


_REGISTRY: dict[str, Sensor] = {}


def register(sensor: Sensor) -> Sensor:
    """Add ``sensor`` to every robot: from now on records, runs, logs, digests and
    replays carry it (in this process, and in the processes that import its
    registration: a built-in sensor is registered at the end of this module).

    Raises:
        SensorError: its name or one of its fields is taken, or it is malformed.
    """
    if sensor.name in _REGISTRY:
        raise SensorError(f"a sensor named {sensor.name!r} is registered already; "
                          f"sensors: {', '.join(_REGISTRY)}")
    taken = {"step", "sim_time_s"} | {f for s in _REGISTRY.values() for f in _fields_of(s)}
    clash = sorted(set(_fields_of(sensor)) & taken)
    if clash:
        raise SensorError(f"sensor {sensor.name!r}: record field(s) {clash} are taken")
    if sensor.needs not in (None, "camera", "route"):
        raise SensorError(f"sensor {sensor.name!r}: needs is None, 'camera' or 'route', "
                          f"not {sensor.needs!r}")
    if sensor.image and sensor.needs != "camera":
        raise SensorError(f"sensor {sensor.name!r}: only the camera's image has no shape")
    if sensor.timed and not sensor.image and sensor.log is None:
        raise SensorError(f"sensor {sensor.name!r} is timed, so it is logged: give its "
                          "LogFields")
    _REGISTRY[sensor.name] = sensor
    return sensor


def unregister(name: str) -> None:
    """Remove the sensor ``name`` (a test's, a plugin's)."""
    get(name)
    del _REGISTRY[name]


@contextlib.contextmanager
def registered(sensor: Sensor) -> Iterator[Sensor]:
    """``sensor`` registered for the ``with`` block only."""
    register(sensor)
    try:
        yield sensor
    finally:
        unregister(sensor.name)


def get(name: str) -> Sensor:
    """The sensor ``name``.

    Raises:
        SensorError: no such sensor (the message lists them).
    """
    try:
        return _REGISTRY[name]
    except KeyError:
        raise SensorError(f"no sensor {name!r}; sensors: {', '.join(_REGISTRY)}") from None


def sensors() -> tuple[Sensor, ...]:
    """Every registered sensor, in registration order."""
    return tuple(_REGISTRY.values())


def timed() -> tuple[Sensor, ...]:
    """The timed sensors, in registration order."""
    return tuple(s for s in _REGISTRY.values() if s.timed)


def names(camera: bool = True) -> tuple[str, ...]:
    """The timed sensors' names; without the camera's where ``camera`` is False.

    Example:
        >>> names(camera=False)
        ('imu', 'encoders', 'tof')
    """
    return tuple(s.name for s in timed() if camera or not s.image)


def _fields_of(sensor: Sensor) -> tuple[str, ...]:
    return (sensor.field, sensor.time_field) if sensor.timed else (sensor.field,)


class _Names(Sequence[str]):
    """The timed sensors' names, read from the registry at each use."""

    def __getitem__(self, index: Any) -> Any:
        return names()[index]

    def __len__(self) -> int:
        return len(names())

    def __repr__(self) -> str:
        return repr(names())


class _Rates(Mapping[str, float]):
    """The timed sensors' default rates, read from the registry at each use."""

    def __getitem__(self, name: str) -> float:
        sensor = _REGISTRY.get(name)
        if sensor is None or sensor.rate_hz is None:
            raise KeyError(name)
        return sensor.rate_hz

    def __iter__(self) -> Iterator[str]:
        return iter(names())

    def __len__(self) -> int:
        return len(names())

    def __repr__(self) -> str:
        return repr(dict(self))


SENSOR_NAMES: Sequence[str] = _Names()
"""The timed sensors' names in registration order (a live view of the registry): the
renderer's, the summary's and the view's sensors, the log's topics, the digest's
streams in the order :func:`dmxshm.network.taps.digest.combine` folds them."""

DEFAULT_RATES_HZ: Mapping[str, float] = _Rates()
"""Each timed sensor's default realtime rate (a live view of the registry)."""


# -- the record -------------------------------------------------------------------

def obs_dtype(camera_wh: tuple[int, int] | None, route: bool = False) -> np.dtype:
    """One robot's observation record for a camera of ``(width, height)`` (None or
    ``(0, 0)``: none), with the ``route`` pseudo-sensor or not: ``step``,
    ``sim_time_s``, then the sensors' fields (see the module docstring;
    :mod:`dmxshm.matrix.obs` describes the built-in ones).

    Raises:
        ObsLayoutError: a negative size, or only one of the two is zero.

    Example:
        >>> obs_dtype((160, 120))["camera"].shape
        (120, 160, 3)
        >>> obs_dtype(None).names[:3], obs_dtype(None).itemsize
        (('step', 'sim_time_s', 'imu_time_s'), 108)
    """
    camera = camera_wh is not None and tuple(camera_wh) != (0, 0)
    if camera_wh is not None:
        width, height = camera_wh
        if width < 0 or height < 0 or (camera and (width == 0 or height == 0)):
            raise ObsLayoutError(f"camera size {width}x{height}: both must be positive, "
                                 "or both 0 to disable the camera")
    present = [s for s in _REGISTRY.values() if s.present(camera, route)]
    fields: list[tuple[Any, ...]] = [("step", "<u8"), ("sim_time_s", "<f8")]
    fields += [(s.time_field, "<f8") for s in present if s.timed]
    for s in sorted(present, key=lambda s: s.place):  # stable: ties in registration order
        if s.image:
            assert camera_wh is not None
            fields.append((s.field, s.dtype, (int(camera_wh[1]), int(camera_wh[0]), 3)))
        else:
            fields.append((s.field, s.dtype, s.shape) if s.shape else (s.field, s.dtype))
    return np.dtype(fields)


# -- sensing ----------------------------------------------------------------------

@dataclass
class Sensing:
    """Computes the sensors of a block of robots from a state: each sensor for every
    robot at once (one numpy pass, one batch of rays; the camera as
    :class:`~dmxshm.matrix.cameras.RobotCameras` draws).

    Args:
        world: the scene the sensors read, kept by its owner in the state being
            sensed (the renderer mirrors it before :meth:`fill`); see :meth:`scene`.
        noise: the run's sensor noise, or None (exact readings).
        cameras: every robot's camera, or None (no camera).
        routes: every robot's routes (the ``lane`` and ``route`` pseudo-sensors), or
            None (the lane pose of the map).
    """

    world: World | PlanarWorld
    noise: Noise | None = None
    cameras: RobotCameras | None = None
    routes: Routes | None = None
    tof: TimeOfFlight = field(default_factory=TimeOfFlight)

    def scene(self, reading: Reading, full: bool) -> World | PlanarWorld:
        """The world holding ``reading``'s state: its poses (the rays), or every field
        (``full``: the camera draws lights and wheels). The renderer's world is kept so
        by the renderer; the replay's are set here when needed."""
        return self.world

    def fill(self, obs: np.ndarray, robots: tuple[int, ...], states: np.ndarray,
             step: int, sim_time_s: float, due: Sequence[str],
             rows: np.ndarray | None = None) -> None:
        """Update the ``due`` timed sensors of ``robots`` in ``obs`` (their records, one
        each) with their stamps, and every pseudo-sensor the record holds; ``rows``
        is ``states[robots]`` where the caller has it."""
        obs["step"] = step
        obs["sim_time_s"] = sim_time_s
        reading = Reading(states, robots,
                          states[np.asarray(robots, np.intp)] if rows is None else rows,
                          step, sim_time_s)
        held = obs.dtype.names or ()
        for sensor in _REGISTRY.values():
            if sensor.field not in held or (sensor.timed and sensor.name not in due):
                continue
            sensor.measure(self, reading, obs[sensor.field])
            if sensor.timed:
                obs[sensor.time_field] = sim_time_s

    def sample(self, name: str, reading: Reading) -> np.ndarray:
        """The samples of sensor ``name`` of ``reading.robots``, as a new ``(n, ...)``
        array in the record's type (what the digest hashes)."""
        sensor = get(name)
        if sensor.image:
            assert self.cameras is not None, "no camera: no image to sample"
            shape: tuple[int, ...] = self.cameras.shape
        else:
            shape = sensor.shape or ()
        out = np.zeros((len(reading.robots), *shape), sensor.dtype)
        sensor.measure(self, reading, out)
        return out


# -- the built-in sensors -----------------------------------------------------------

def _camera(s: Sensing, r: Reading, out: np.ndarray) -> None:
    if s.cameras is not None:
        s.cameras.render(s.scene(r, full=True), r.states, r.robots, r.step, out, r.sim_time_s)


def _imu(s: Sensing, r: Reading, out: np.ndarray) -> None:
    acc, gyro = imu_many(r.rows)
    if s.noise is not None:
        acc, gyro = s.noise.imu_rows(r.robots, r.step, r.sim_time_s, acc, gyro)
    out[:, :3] = acc
    out[:, 3:] = gyro


def _encoders(s: Sensing, r: Reading, out: np.ndarray) -> None:
    ticks = encoders_many(r.rows)
    out[...] = ticks if s.noise is None else s.noise.encoder_rows(r.robots, ticks)


def _tof(s: Sensing, r: Reading, out: np.ndarray) -> None:
    ranges = s.scene(r, full=False).tof_ranges(s.tof, r.rows, r.robots)
    out[...] = ranges if s.noise is None else s.noise.tof_rows(
        r.robots, r.step, ranges, s.tof.max_range_m)


def _lane(s: Sensing, r: Reading, out: np.ndarray) -> None:
    if s.routes is not None:  # every robot's routes, once a step
        s.routes.see(r.step, poses_2d(r.states).tolist())
        for j, robot in enumerate(r.robots):
            out[j] = s.routes.lane[robot]
        return
    lane_pose = s.world.road_map.lane_pose
    xy = r.rows["pos_m"][:, :2].tolist()
    for j, yaw in enumerate(yaw_of(r.rows["quat_xyzw"]).tolist()):
        lane = lane_pose(xy[j][0], xy[j][1], yaw)
        out[j] = (lane.offset_m, lane.heading_err_rad, float(lane.on_road))


def _route(s: Sensing, r: Reading, out: np.ndarray) -> None:
    if s.routes is not None:
        s.routes.see(r.step, poses_2d(r.states).tolist())  # (a no-op after the lane's)
        for j, robot in enumerate(r.robots):
            out[j] = s.routes.route[robot]


def _motion(s: Sensing, r: Reading, out: np.ndarray) -> None:
    """Forward speed (m/s), yaw rate (rad/s, world z) and the lane's curvature (1/m,
    + left; nan far from roads): what the state vectors add to the sensors
    (:mod:`dmxshm.sim.obs`)."""
    if s.routes is not None:
        s.routes.see(r.step, poses_2d(r.states).tolist())  # (a no-op after the lane's)
        curvatures = [s.routes.curvature[robot] for robot in r.robots]
    else:
        road_map = s.world.road_map
        xy = r.rows["pos_m"][:, :2].tolist()
        curvatures = [road_map._lane(xy[j][0], xy[j][1], yaw)[1]  # noqa: SLF001
                      for j, yaw in enumerate(yaw_of(r.rows["quat_xyzw"]).tolist())]
    for j, (q, (vx, vy, vz), (_wx, _wy, wz)) in enumerate(zip(
            r.rows["quat_xyzw"].tolist(), r.rows["lin_vel_m_s"].tolist(),
            r.rows["ang_vel_rad_s"].tolist(), strict=True)):
        (r00, _, _), (r10, _, _), (r20, _, _) = quat_matrix(q)
        # the velocity along the robot's x axis (the rotation's first column)
        out[j] = (r00 * vx + r10 * vy + r20 * vz, wz, curvatures[j])


def _imu_message(value: np.ndarray) -> dict[str, Any]:
    imu = value.tolist()
    return {"acceleration_m_s2": imu[:3], "angular_velocity_rad_s": imu[3:]}


def _encoders_message(value: np.ndarray) -> dict[str, Any]:
    left, right = (int(v) for v in value)
    return {"left_ticks": left, "right_ticks": right}


register(Sensor("camera", "camera", "u1", None, _camera, rate_hz=CAMERA_RATE_HZ,
                needs="camera", place=1000))
register(Sensor("imu", "imu", "<f4", (6,), _imu, rate_hz=IMU_RATE_HZ, place=20, log=LogFields(
    {"acceleration_m_s2": "array", "angular_velocity_rad_s": "array"}, _imu_message,
    lambda d: [*d["acceleration_m_s2"], *d["angular_velocity_rad_s"]])))
register(Sensor("encoders", "encoders", "<i8", (2,), _encoders, rate_hz=ENCODER_RATE_HZ,
                place=10, log=LogFields({"left_ticks": "integer", "right_ticks": "integer"},
                                        _encoders_message,
                                        lambda d: [d["left_ticks"], d["right_ticks"]])))
register(Sensor("tof", "tof_m", "<f4", (), _tof, rate_hz=TOF_RATE_HZ, place=30, log=LogFields(
    {"range_m": "number"}, lambda v: {"range_m": float(v)}, lambda d: d["range_m"])))
register(Sensor("lane", "lane", "<f4", (3,), _lane, place=40))
register(Sensor("route", "route", "<f4", (2,), _route, needs="route", place=50))
register(Sensor("motion", "motion", "<f4", (3,), _motion, place=60))
