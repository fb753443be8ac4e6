"""Replaying a realtime run in this process, sample for sample.

A realtime run's samples depend on timing: which state each sensor read at
its tick. Its log keeps that: every sample with the step of the state it
read (``step`` in the JSON sensors; a camera frame's ``timestamp`` is that
state's simulated time), and the command physics applied in every step. This
replay steps the recorded physics with the recorded commands, as the
engine's loop did (``network/engine.py``: a state published every Bullet
step, or every ``state_every`` CAN cycles through a spine), and at each
published state recomputes every logged sample that read it, as the renderer
and camera processes did (the time of flight on a scene holding the poses,
the camera on one holding the whole state). It compares each with the
logged one, and hashes all of it as the run's taps did
(:mod:`dmxshm.network.taps.digest`), so that the verdict covers both: the
same digest, and every logged sample what the recorded states give. The first
sample that differs is named (step, robot, topic).
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from dmxshm.network.taps.digest import PoseDigest, SampleDigest, StateDigest, combine
from dmxshm.sim import sensing
from dmxshm.sim.sensing import Reading

if TYPE_CHECKING:
    from dmxshm.network.config import NetworkConfig
    from dmxshm.sim.planar import PlanarWorld
    from dmxshm.world.world import World

Recording = Any
"""A :class:`dmxshm.network.replay.Recording` (named, not imported: replay imports this module)."""


@dataclass(frozen=True)
class Sample:
    """One logged sample: the step of the state it read (None for a camera frame, found
    by its simulated time), that time in nanoseconds, and its value as logged."""

    step: int | None
    sim_ns: int
    value: Any


@dataclass(frozen=True)
class Difference:
    """The first logged sample that is not what the replayed state gives."""

    step: int
    robot: int
    topic: str
    logged: str
    replayed: str

    def __str__(self) -> str:
        return (f"step {self.step}, robot {self.robot}, {self.topic}: logged {self.logged}, "
                f"replayed {self.replayed}")


@dataclass
class RealtimeReplay:
    """What a realtime replay gives: the digests it computed, the samples it checked,
    and the first difference (None: every logged sample is what its state gives)."""

    mode: str
    steps: int
    wall_time_s: float
    trajectory_digest: str
    pose_digest: str
    digests: dict[str, str]
    final_poses: list[list[float]]
    samples: int = 0
    first_difference: Difference | None = None
    unread: list[str] = field(default_factory=list)  # samples of states never published

    def to_dict(self) -> dict[str, Any]:
        """Its figures, as ``dmxshm replay --json`` writes them."""
        out = dataclasses.asdict(self)
        out["first_difference"] = (dataclasses.asdict(self.first_difference)
                                   if self.first_difference is not None else None)
        return out


def realtime_config(rec: Recording) -> NetworkConfig:
    """The recorded realtime run's configuration (what its physics and sensors were),
    without what this process need not do (log, record, pin, profile)."""
    from dmxshm.network.config import NetworkConfig

    names = {f.name for f in dataclasses.fields(NetworkConfig) if not f.name.startswith("_")}
    given = {k: v for k, v in rec.config.items() if k in names}
    given.setdefault("noise", False)  # a log from before noise was made without it
    given.update(log=None, record_dir=None, pin={}, profile=False, agent="idle",
                 camera=tuple(given.get("camera", (0, 0))), name=None,
                 # the renderer the run used ("auto" resolved there, not here)
                 renderer=str(rec.summary.get("renderer", given.get("renderer", "tiny"))))
    return NetworkConfig(**given)


class _Sensors(sensing.Sensing):
    """Recomputes samples from a state, as a realtime renderer and camera process do
    (the registry's sensors), each scene set to a state only when a sensor reads it."""

    def __init__(self, cfg: NetworkConfig, camera: bool) -> None:

        # the renderer's: poses, for rays
        super().__init__(cfg.mirror_world(), cfg.sensor_noise())
        self.view: World | PlanarWorld | None = None
        try:
            if camera and cfg.camera_wh is not None:
                self.view = cfg.mirror_world(cfg.renderer_used)
                self.cameras = cfg.robot_cameras(self.noise)
        except BaseException:
            self.close()
            raise
        self._posed = self._viewed = -1

    def scene(self, reading: Reading, full: bool) -> World | PlanarWorld:
        if not full:
            if self._posed != reading.step:
                self.world.set_poses(reading.states, reading.sim_time_s)
                self._posed = reading.step
            return self.world
        assert self.view is not None
        if self._viewed != reading.step:
            self.view.set_state(reading.states, reading.sim_time_s)
            self._viewed = reading.step
        return self.view

    def values(self, sensor: str, step: int, states: np.ndarray,
               robots: list[int], sim_time_s: float) -> list[np.ndarray]:
        """Sensor ``sensor``'s samples of ``robots`` from state ``step``, as the digest
        hashes them (the observation record's dtype)."""
        rows = states[np.asarray(robots, np.intp)]
        return list(self.sample(sensor, Reading(states, tuple(robots), rows, step,
                                                sim_time_s)))

    def close(self) -> None:
        for world in (self.world, self.view):
            if world is not None:
                world.close()


def _fields(data: bytes) -> dict[int, Any]:
    """The top-level fields of a protobuf message: varints as int, the rest as bytes."""
    out: dict[int, Any] = {}
    at = 0

    def varint() -> int:
        nonlocal at
        value = shift = 0
        while True:
            if at >= len(data):
                raise ValueError("a protobuf message cut short")
            byte = data[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value

    while at < len(data):
        tag = varint()
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            out[number] = varint()
        elif wire == 2:
            n = varint()
            if at + n > len(data):
                raise ValueError("a protobuf field longer than its message")
            out[number] = data[at:at + n]
            at += n
        elif wire in (1, 5):
            n = 8 if wire == 1 else 4
            out[number] = data[at:at + n]
            at += n
        else:
            raise ValueError(f"protobuf wire type {wire} is not read here")
    return out


def camera_sample(data: bytes) -> Sample:
    """A logged camera frame (foxglove ``CompressedImage``, protobuf): its simulated time
    (the state it was made from) and its PNG. Read here, field by field, so that
    replay needs no protobuf library (tests/logs checks it on the SDK's encoding)."""
    message = _fields(data)  # timestamp = 1, data = 2, format = 3, frame_id = 4
    stamp = _fields(message.get(1, b""))  # seconds = 1, nanos = 2
    return Sample(None, int(stamp.get(1, 0)) * 1_000_000_000 + int(stamp.get(2, 0)),
                  bytes(message.get(2, b"")))


def json_sample(sensor: str, d: dict[str, Any]) -> Sample:
    """A logged reading of a timed sensor other than the camera (the log's JSON, read
    by the sensor's :class:`~dmxshm.sim.sensing.LogFields`)."""
    log = sensing.get(sensor).log
    assert log is not None, f"{sensor} is not logged as JSON"
    return Sample(int(d["step"]), round(float(d["sim_time_s"]) * 1e9), log.decode(d))


def _logged(sensor: str, sample: Sample) -> np.ndarray:
    """A logged sample's value in the observation record's dtype (a PNG decoded)."""
    if sensor == "camera":
        from dmxshm.pngio import decode_png

        return decode_png(sample.value)
    return np.asarray(sample.value, sensing.get(sensor).value_dtype)


def _show(value: np.ndarray) -> str:
    if value.ndim == 3:
        return f"an image of digest {hashlib.sha256(value.tobytes()).hexdigest()[:12]}"
    return np.array2string(value, precision=9)


def replay_realtime(rec: Recording, camera: bool = True,
                    on_progress: Callable[[int], None] | None = None) -> RealtimeReplay:
    """Replay the realtime run ``rec`` in this process (see the module docstring).

    Args:
        rec: the recording (:func:`dmxshm.network.replay.load`).
        camera: recompute the camera's frames too (False: faster; the camera's
            streams are then not part of the replay's digests).
        on_progress: called with the physics steps done.
    """
    from dmxshm.sim.robots import Robots
    from dmxshm.world.state import poses_2d

    cfg = realtime_config(rec)
    t0 = time.perf_counter()
    made = list(sensing.names(camera=camera and cfg.camera_wh is not None))
    # The run's own digest taps, fed what the replay recomputes.
    streams = SampleDigest(range(cfg.robots), made)
    state_digest = StateDigest(with_end=not cfg.spine_process)
    pose_digest = PoseDigest(with_end=not cfg.spine_process)
    by_step: dict[int, list[tuple[int, str, Sample]]] = {}
    images: dict[int, list[tuple[int, Sample]]] = {}  # by simulated time, ns
    for (robot, sensor), got in rec.samples.items():
        if sensor not in made:
            continue
        for sample in got:
            if sample.step is None:
                images.setdefault(sample.sim_ns, []).append((robot, sample))
            else:
                by_step.setdefault(sample.step, []).append((robot, sensor, sample))
    result = RealtimeReplay(rec.mode, rec.steps, 0.0, "", "", {}, [])
    sensors = _Sensors(cfg, camera)
    try:
        # The engine's world, stepped through sim's Robots as the engine steps it (the
        # logged commands are what it applied: Bullet's wheel speeds, the motors' output,
        # so no motors here; under DB18 a PWM run's duties, the model's input).
        with cfg.engine_world() as world:
            robots = Robots(world, cfg.motor if cfg.action == "pwm" and cfg.physics != "bullet"
                            else None)

            def publish(step: int, states: np.ndarray) -> None:
                state_digest.state(step, world.sim_time_s, states)
                pose_digest.state(step, world.sim_time_s, states)
                due = by_step.pop(step, [])
                due += [(r, "camera", s) for r, s in
                        images.pop(round(world.sim_time_s * 1e9), [])]
                _check(result, sensors, streams, step, world.sim_time_s, states, due)

            published = 0
            if cfg.spine_process:  # a physics step per CAN cycle; a state every few
                publish(0, world.state())
                published = 1
            for k in range(rec.steps):
                if not cfg.spine_process:
                    publish(k, world.state())
                state_digest.commands(k, world.sim_time_s, rec.commands[k], None)
                robots.step(rec.commands[k])
                if cfg.spine_process and (k + 1) % cfg.state_every == 0:
                    publish(published, world.state())
                    published += 1
                if on_progress is not None and k % 100 == 0:
                    on_progress(k)
            if on_progress is not None:
                on_progress(rec.steps)
            states = world.state()
            # The state after the last step, as the engine's end (not under a spine).
            state_digest.end(rec.steps, world.sim_time_s, states)
            pose_digest.end(rec.steps, world.sim_time_s, states)
            result.final_poses = poses_2d(states).tolist()
    finally:
        sensors.close()
    result.unread = sorted({f"robot{r:02d}/{s}" for left in by_step.values()
                            for r, s, _ in left}
                           | {f"robot{r:02d}/camera" for left in images.values() for r, _ in left})
    digests = streams.hexdigests()
    result.digests = {**state_digest.hexdigests(), **digests}
    result.trajectory_digest = combine(result.digests["states"], result.digests["commands"],
                                       digests)
    result.pose_digest = pose_digest.hexdigest()
    result.wall_time_s = time.perf_counter() - t0
    return result


def _check(result: RealtimeReplay, sensors: _Sensors,
           streams: SampleDigest, step: int, sim_time_s: float,
           states: np.ndarray, due: list[tuple[int, str, Sample]]) -> None:
    """Recompute the samples ``due`` (those that read state ``step``), compare each with
    its logged value, and hash the recomputed ones into their streams."""
    by_sensor: dict[str, list[tuple[int, Sample]]] = {}
    for robot, sensor, sample in due:
        by_sensor.setdefault(sensor, []).append((robot, sample))
    for sensor in sensing.SENSOR_NAMES:  # in any order: each stream is a robot's sensor
        got = by_sensor.get(sensor)
        if not got:
            continue
        robots = sorted({r for r, _ in got})
        made = sensors.values(sensor, step, states, robots, sim_time_s)
        values = dict(zip(robots, made, strict=True))
        for robot, sample in got:
            value = values[robot]
            streams.add(robot, sensor, step, value.tobytes())
            result.samples += 1
            if result.first_difference is not None:
                continue
            try:
                logged = _logged(sensor, sample)
            except (ValueError, zlib.error) as exc:
                from dmxshm.logs import LogError, robot_topic

                raise LogError(f"a message on {robot_topic(robot, sensor)} (state {step}) "
                               f"does not decode ({exc}): the log is damaged") from None
            same_time = sample.sim_ns == round(sim_time_s * 1e9)
            if not same_time or logged.shape != value.shape or not np.array_equal(logged, value):
                from dmxshm.logs import robot_topic

                result.first_difference = Difference(
                    step, robot, robot_topic(robot, sensor),
                    _show(logged) + ("" if same_time else f" at {sample.sim_ns} ns"),
                    _show(value) + ("" if same_time else f" at {round(sim_time_s * 1e9)} ns"))
