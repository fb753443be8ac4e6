"""The run's digests, as taps: what a run produced, hashed where it is produced.

A run's ``trajectory_digest`` covers everything it produces (docs/logging.md):

- **states**: every published state in full (every field of every robot's
  record, :data:`~dmxshm.world.state.ROBOT_STATE_DTYPE`), then the state
  after the last step (:class:`StateDigest`, in the engine);
- **commands**: the wheel speeds physics applied in every step (the engine);
- **samples**: every sensor sample, images included, each with the step of
  the state it read, one stream per robot and sensor (:class:`SampleDigest`,
  in the renderers and camera processes).

Each stream is a SHA-256 of its own (on this machine's CPUs, with SHA
instructions, the cheapest of the hashes measured: docs/benchmarks.md), and
:func:`combine` folds them in a fixed order (states, commands, then robot by
robot, sensor by sensor), so the digest does not depend on how the robots
are split between renderers and agents. ``pose_digest`` is the digest of
earlier versions (:class:`PoseDigest`): poses only, kept so that old results
stay comparable.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

import numpy as np

from dmxshm.network.taps import Tap, poses_of
from dmxshm.sim import sensing

STREAM_ORDER = sensing.SENSOR_NAMES
"""The sensors' order in :func:`combine`: the registry's (a sensor's sample is its
:attr:`~dmxshm.sim.sensing.Sensor.field` in the observation record)."""
VERSION = b"dmxshm trajectory digest 2\0"
"""What :func:`combine` starts with: a digest of another layout never equals one of this."""


def stream_key(robot: int, sensor: str) -> str:
    """The name of a sample stream (a key of ``Summary.digests``): ``robot03/imu``."""
    return f"robot{robot:02d}/{sensor}"


def combine(states: str, commands: str, streams: Mapping[str, str]) -> str:
    """``trajectory_digest``: the states', commands' and samples' digests (hex) in a fixed
    order (robots ascending, sensors in :data:`STREAM_ORDER`); a stream a run did not
    have (a sensor turned off) is left out.

    Example:
        >>> a = combine("00", "11", {"robot00/imu": "22", "robot01/imu": "33"})
        >>> a == combine("00", "11", {"robot01/imu": "33", "robot00/imu": "22"})
        True
        >>> a == combine("00", "11", {"robot00/imu": "33", "robot01/imu": "22"})
        False
    """
    h = hashlib.sha256(VERSION)
    h.update(bytes.fromhex(states) + bytes.fromhex(commands))
    robots = sorted({int(k[len("robot"):].split("/")[0]) for k in streams})
    for robot in robots:
        for sensor in STREAM_ORDER:
            key = stream_key(robot, sensor)
            if key in streams:
                h.update(key.encode() + b"\0" + bytes.fromhex(streams[key]))
    return h.hexdigest()


class PoseDigest(Tap):
    """SHA-256 over every robot's float64 ``(x, y, yaw)`` of each published state, then
    of the state after the last step (``pose_digest``: the trajectory digest of
    versions before 0.5, which saw poses only).

    Args:
        with_end: hash the state after the last step too (not in a realtime spine
            run, whose digest covers its published states only, as its replay's).
    """

    def __init__(self, with_end: bool = True) -> None:
        self._hash = hashlib.sha256()
        self.with_end = with_end

    def state(self, step: int, sim_time_s: float, states: np.ndarray) -> None:
        self._hash.update(poses_of(states).tobytes())

    def end(self, step: int, sim_time_s: float, states: np.ndarray) -> None:
        if self.with_end:
            self._hash.update(poses_of(states).tobytes())

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


class StateDigest(Tap):
    """The engine's streams: every published state in full, the state after the last
    step (``with_end``, as :class:`PoseDigest`), and every applied command."""

    def __init__(self, with_end: bool = True) -> None:
        self._states = hashlib.sha256()
        self._commands = hashlib.sha256()
        self.with_end = with_end

    def state(self, step: int, sim_time_s: float, states: np.ndarray) -> None:
        self._states.update(states.tobytes())

    def commands(self, step: int, sim_time_s: float, applied: np.ndarray,
                 expired: np.ndarray | None) -> None:
        self._commands.update(np.ascontiguousarray(applied, "<f8").tobytes())

    def end(self, step: int, sim_time_s: float, states: np.ndarray) -> None:
        if self.with_end:
            self._states.update(states.tobytes())

    def hexdigests(self) -> dict[str, str]:
        """``{"states": hex, "commands": hex}``."""
        return {"states": self._states.hexdigest(), "commands": self._commands.hexdigest()}


class SampleDigest(Tap):
    """A renderer's or camera process's streams: each sample of each of its robots'
    sensors, as the 8 bytes of the step of the state it read and the sample's bytes
    (little-endian, as in the observation record), one stream per robot and sensor.

    Args:
        robots: the robots whose samples this process makes.
        sensors: the sensors it makes samples of.

    Example:
        >>> from dmxshm.matrix.obs import obs_dtype
        >>> obs = np.zeros(2, obs_dtype(None))
        >>> d = SampleDigest((4, 5), ("imu",))
        >>> d.samples(0, 0.0, (4, 5), obs, ("imu",))
        >>> sorted(d.hexdigests())
        ['robot04/imu', 'robot05/imu']
    """

    def __init__(self, robots: Iterable[int], sensors: Iterable[str]) -> None:
        self.hashes = {(robot, sensor): hashlib.sha256()
                       for robot in robots for sensor in sensors}

    def samples(self, step: int, sim_time_s: float, robots: tuple[int, ...],
                obs: np.ndarray, due: tuple[str, ...]) -> None:
        for sensor in due:
            # One copy of the field for all robots, cut per robot (numpy's per-row
            # indexing cost more than the hashing at a few robots).
            values = obs[sensing.get(sensor).field].tobytes()
            size = len(values) // len(robots)
            for j, robot in enumerate(robots):
                self.add(robot, sensor, step, values[j * size:(j + 1) * size])

    def images(self, frame: int, step: int, sim_time_s: float, robots: tuple[int, ...],
               images: np.ndarray) -> None:
        for j, robot in enumerate(robots):
            self.add(robot, "camera", step, images[j].tobytes())

    def add(self, robot: int, sensor: str, step: int, value: bytes) -> None:
        """One sample of ``sensor`` of ``robot``, made from state ``step``: what a stream
        hashes (a replay feeds its recomputed samples here too)."""
        h = self.hashes[robot, sensor]
        h.update(step.to_bytes(8, "little"))
        h.update(value)

    def hexdigests(self) -> dict[str, str]:
        """Each stream's digest, by :func:`stream_key`."""
        return {stream_key(robot, sensor): h.hexdigest()
                for (robot, sensor), h in self.hashes.items()}
