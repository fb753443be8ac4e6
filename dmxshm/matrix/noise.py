"""Sensor noise as the Duckiebot's parts have it, drawn so that every process agrees.

Every random value is drawn from a counter-based generator keyed by ``(seed,
robot, sensor)`` with the sample's index as its counter: SplitMix64's finaliser
over the counter for the few values of one sample (:func:`normals`, a few
microseconds: numpy's Philox costs 20-60 us to set up per sample), numpy's Philox
for bulk draws (:func:`bulk_normals`). No state is carried from one sample to the
next, so the same run draws the same noise whatever the number of processes, in
whatever order they ask, and a replay draws it again. The sample
index is the step of the state a sample is made from (the engine's step in a
network, the env's step count in a Gymnasium env).

The models and their parameters (:data:`DUCKIEBOT`; docs/sensors.md cites the
sources, and says which figures are datasheet values and which are ours):

- **IMU** (the Duckiebot's MPU-6050): each axis reads the true value plus white
  noise plus a bias; the bias is a turn-on value drawn once per robot and run
  plus a random walk, its increments drawn once per simulated second
  (:data:`BIAS_KNOT_S`) and interpolated between, so the bias at any time is a
  function of the seed, the robot and the time alone.
- **Wheel encoders** (135 ticks a revolution): the count is the wheel angle's
  tick, less the ticks the encoder missed: each tick boundary is missed with a
  probability, drawn per boundary (so the count is a function of the wheel angle,
  the same in every process and both ways round).
- **Time of flight** (the VL53L0X): Gaussian noise growing with the range; beyond
  the maximum range, or with no target, it reads :attr:`TofNoise.no_target_m`
  (8.0 m: what Duckietown's ToF driver publishes out of range).
- **Camera**: per frame an exposure gain (around 1) and per pixel sensor noise.
  The pixel noise comes from a bank of noise frames drawn once per robot and image
  size, each frame taking one of them at a keyed offset (drawing a fresh 640x480x3
  frame of normals would cost more than rendering it).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

SENSOR_STREAMS = {"imu": 1, "imu_bias": 2, "encoders": 3, "tof": 4, "camera": 5,
                  "camera_bank": 6, "camera_pick": 7}
"""Each stream's number in the generator's key: a sensor's draws never meet another's."""

BIAS_KNOT_S = 1.0
"""The spacing of the bias random walk's knots, s."""

CAMERA_BANK_FRAMES = 8
"""How many noise frames a camera's bank holds."""

_MASK = (1 << 64) - 1


def _mix(z: int) -> int:
    """SplitMix64's finaliser: a bijection of 64-bit words that scatters every bit."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


_GOLDEN = 0x9E3779B97F4A7C15
MAX_PER_SAMPLE = 64
"""The most values one sample may draw from :func:`normals` or :func:`uniforms`."""


@functools.lru_cache(maxsize=4096)
def _key(seed: int, robot: int, stream: str) -> int:
    return _mix(_mix(_mix(int(seed) & _MASK) ^ (int(robot) & _MASK)) ^ SENSOR_STREAMS[stream])


def _words(seed: int, robot: int, stream: str, index: int, n: int) -> list[int]:
    """``n`` 64-bit words of sample ``index``: SplitMix64 of the counter
    ``index * MAX_PER_SAMPLE + k`` in a sequence keyed by (seed, robot, stream)."""
    if not 0 < n <= MAX_PER_SAMPLE:
        raise ValueError(f"a sample draws 1 to {MAX_PER_SAMPLE} values, not {n}")
    key = _key(seed, robot, stream)
    first = (int(index) * MAX_PER_SAMPLE) & _MASK
    return [_mix((key + (first + k) * _GOLDEN) & _MASK) for k in range(n)]


def uniforms(seed: int, robot: int, stream: str, index: int, n: int) -> np.ndarray:
    """``n`` uniforms in [0, 1) of sample ``index`` of ``stream`` of ``robot`` in the run
    of ``seed``: the same numbers wherever and whenever they are asked for (a
    counter-based generator: no state, nothing carried from one sample to the next).

    Example:
        >>> a = uniforms(1, 0, "tof", 41, 2)
        >>> bool((a == uniforms(1, 0, "tof", 41, 2)).all()), bool((a < 1).all())
        (True, True)
    """
    return np.array([(w >> 11) * 2.0**-53 for w in _words(seed, robot, stream, index, n)])


def normals(seed: int, robot: int, stream: str, index: int, n: int) -> np.ndarray:
    """``n`` standard normals, keyed as :func:`uniforms` (Box-Muller over its words).

    Example:
        >>> a = normals(1, 0, "imu", 41, 3)
        >>> bool((a == normals(1, 0, "imu", 41, 3)).all())
        True
        >>> bool((a != normals(1, 0, "imu", 42, 3)).all())
        True
    """
    return np.array(_normal_list(seed, robot, stream, index, n))


def _normal_list(seed: int, robot: int, stream: str, index: int, n: int) -> list[float]:
    """:func:`normals` as a list of floats (the C library's log, cos and sin: the same
    on every CPU, where numpy's vector paths are not)."""
    words = _words(seed, robot, stream, index, 2 * ((n + 1) // 2))
    out: list[float] = []
    for a, b in zip(words[::2], words[1::2], strict=True):
        r = math.sqrt(-2.0 * math.log(1.0 - (a >> 11) * 2.0**-53))  # 1 - u: in (0, 1]
        t = 2.0 * math.pi * (b >> 11) * 2.0**-53
        out += (r * math.cos(t), r * math.sin(t))
    return out[:n]


def bulk_normals(seed: int, robot: int, stream: str, index: int, n: int) -> np.ndarray:
    """Many standard normals at once (a camera's noise bank): numpy's counter-based
    Philox keyed by (seed, robot, stream) with ``index`` as its counter."""
    return _philox(seed, robot, stream, index).standard_normal(n)


def bulk_uniforms(seed: int, robot: int, stream: str, index: int, n: int) -> np.ndarray:
    """Many uniforms at once, keyed as :func:`bulk_normals`."""
    return _philox(seed, robot, stream, index).random(n)


def _philox(seed: int, robot: int, stream: str, index: int) -> np.random.Generator:
    # The index is the counter's third word: a block's draws advance the first two
    # (2^128 draws before they could reach it), so blocks never overlap.
    key = np.array([int(seed) & _MASK, ((int(robot) & 0xFFFFFFFF) << 8)
                    | SENSOR_STREAMS[stream]], np.uint64)
    counter = np.array([0, 0, int(index) & _MASK, 0], np.uint64)
    return np.random.Generator(np.random.Philox(key=key, counter=counter))


SAMPLE_BLOCK = 256
"""Samples of a per-sample stream (IMU, time of flight) drawn at once: sample ``i``'s
values are row ``i % 256`` of block ``i // 256`` of :func:`bulk_normals`."""


@dataclass(frozen=True)
class ImuNoise:
    """Per-axis noise of the accelerometer (m/s^2) and the gyroscope (rad/s).

    Attributes:
        acc_white: white noise of one sample.
        acc_bias: standard deviation of the turn-on bias.
        acc_walk: the bias random walk, per square root of a second.
        gyro_white, gyro_bias, gyro_walk: the same for the gyroscope.
        bias_bound_sigmas: the turn-on bias is clipped to this many standard
            deviations (a bound a test can hold it to).
    """

    acc_white: float = 0.039
    acc_bias: float = 0.05
    acc_walk: float = 1e-3
    gyro_white: float = 8.7e-4
    gyro_bias: float = 8.7e-3
    gyro_walk: float = 1e-4
    bias_bound_sigmas: float = 3.0


@dataclass(frozen=True)
class EncoderNoise:
    """Attributes: miss_rate: the chance that a tick boundary is never counted."""

    miss_rate: float = 1e-3


@dataclass(frozen=True)
class TofNoise:
    """Attributes:
        sigma_m: noise at zero range; sigma_per_m: growth per metre of range.
        max_range_m: beyond it (or with nothing ahead) the reading is ``no_target_m``.
        no_target_m: Duckietown's ToF driver's out-of-range reading.
    """

    sigma_m: float = 0.003
    sigma_per_m: float = 0.015
    max_range_m: float = 1.2
    no_target_m: float = 8.0


@dataclass(frozen=True)
class CameraNoise:
    """Attributes: sigma_dn: pixel noise in 8-bit levels; exposure_sigma: the
    frame's gain's standard deviation around 1."""

    sigma_dn: float = 2.0
    exposure_sigma: float = 0.02


@dataclass(frozen=True)
class NoiseModel:
    """Every sensor's noise (see the module docstring)."""

    imu: ImuNoise = field(default_factory=ImuNoise)
    encoders: EncoderNoise = field(default_factory=EncoderNoise)
    tof: TofNoise = field(default_factory=TofNoise)
    camera: CameraNoise = field(default_factory=CameraNoise)

    def to_dict(self) -> dict[str, Any]:
        """The parameters as JSON (the summary's and the log's ``noise``)."""
        return asdict(self)

    def scaled(self, s: float) -> NoiseModel:
        """Every IMU and time-of-flight noise figure and the camera's exposure flicker
        times ``s`` (domain randomisation's ``noise_scale``; the camera's pixel noise,
        drawn once into a bank, and the encoders' miss rate are kept)."""
        i, t = self.imu, self.tof
        return replace(self, imu=replace(i, acc_white=i.acc_white * s, acc_bias=i.acc_bias * s,
                                         acc_walk=i.acc_walk * s,
                                         gyro_white=i.gyro_white * s,
                                         gyro_bias=i.gyro_bias * s, gyro_walk=i.gyro_walk * s),
                       tof=replace(t, sigma_m=t.sigma_m * s, sigma_per_m=t.sigma_per_m * s),
                       camera=replace(self.camera,
                                      exposure_sigma=self.camera.exposure_sigma * s))


DUCKIEBOT = NoiseModel()
"""The Duckiebot's parts (docs/sensors.md)."""


class Noise:
    """The noise of one run (or one env episode): adds it to clean readings.

    Args:
        seed: keys every draw.
        model: the parameters.
        bank_seed: keys the camera's bank of noise frames (default: ``seed``).
        robot_models: each robot's parameters, where they differ (a network's
            randomised robots: :func:`~dmxshm.world.randomize.robot_draws`'s
            ``noise_scale``); ``model`` for a robot beyond the list.

    Every method takes the robot (its index in the run), the sample index (the
    state's step) and the clean readings, and returns the noisy ones.
    """

    def __init__(self, seed: int, model: NoiseModel = DUCKIEBOT,
                 bank_seed: int | None = None,
                 robot_models: Sequence[NoiseModel] | None = None) -> None:
        self.seed = int(seed)
        self.model = model
        self.robot_models = list(robot_models or ())
        # The camera's bank of noise frames is keyed by its own seed (the run's, by
        # default): an env that draws a seed per episode keeps one bank, and only
        # which frame, where and how bright is the episode's.
        self.bank_seed = self.seed if bank_seed is None else int(bank_seed)
        self._walks: dict[int, list[list[float]]] = {}  # robot -> the walk at the knots
        self._turn_on: dict[int, list[float]] = {}
        self._missed: dict[tuple[int, int, int], list[np.ndarray]] = {}  # running counts
        self._blocks: dict[tuple[int, str, int], list[list[float]]] = {}

    def model_of(self, robot: int) -> NoiseModel:
        """``robot``'s noise parameters."""
        models = self.robot_models
        return models[robot] if robot < len(models) else self.model

    def _sample(self, robot: int, stream: str, index: int, width: int,
                scale: np.ndarray | float) -> list[float]:
        """Sample ``index``'s ``width`` normals of ``stream``, times ``scale``."""
        block, within = divmod(int(index), SAMPLE_BLOCK)
        rows = self._blocks.get((robot, stream, block))
        if rows is None:
            z = bulk_normals(self.seed, robot, stream, block, SAMPLE_BLOCK * width)
            rows = (z.reshape(SAMPLE_BLOCK, width) * scale).tolist()
            for key in [k for k in self._blocks if k[:2] == (robot, stream)
                        and k[2] != block - 1]:
                del self._blocks[key]  # keep this block and the one before it
            self._blocks[(robot, stream, block)] = rows
        return rows[within]

    # -- IMU ------------------------------------------------------------------------
    def imu_bias(self, robot: int, sim_time_s: float) -> np.ndarray:
        """The six biases (acc x y z, gyro x y z) of ``robot`` at ``sim_time_s``."""
        return np.array(self._bias(robot, sim_time_s))

    def _bias(self, robot: int, sim_time_s: float) -> list[float]:
        turn_on = self._turn_on.get(robot)
        if turn_on is None:
            m = self.model_of(robot).imu
            bound = m.bias_bound_sigmas
            scale = [m.acc_bias] * 3 + [m.gyro_bias] * 3
            turn_on = self._turn_on[robot] = [
                min(max(z, -bound), bound) * s
                for z, s in zip(_normal_list(self.seed, robot, "imu_bias", 0, 6), scale,
                                strict=True)]
        t = max(float(sim_time_s), 0.0) / BIAS_KNOT_S
        j = int(t)
        walk = self._walk(robot, j + 1)
        frac = t - j
        return [o + a * (1.0 - frac) + b * frac
                for o, a, b in zip(turn_on, walk[j], walk[j + 1], strict=True)]

    def _walk(self, robot: int, knots: int) -> list[list[float]]:
        """The random walk at knots 0..``knots`` (knot 0 is zero), extended as needed,
        one knot after the other (the same values however far each call reaches)."""
        walk = self._walks.setdefault(robot, [[0.0] * 6])
        if len(walk) <= knots:
            m = self.model_of(robot).imu
            step = [m.acc_walk * math.sqrt(BIAS_KNOT_S)] * 3 + \
                [m.gyro_walk * math.sqrt(BIAS_KNOT_S)] * 3
            for k in range(len(walk) - 1, max(knots, 2 * (len(walk) - 1), 8)):
                z = _normal_list(self.seed, robot, "imu_bias", 1 + k, 6)
                walk.append([p + v * s for p, v, s in zip(walk[-1], z, step, strict=True)])
        return walk

    def imu(self, robot: int, index: int, sim_time_s: float, acc: np.ndarray,
            gyro: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Noisy ``(acc[3], gyro[3])`` (float32, as the clean ones)."""
        m = self.model_of(robot).imu
        white = self._sample(robot, "imu", index, 6, (m.acc_white,) * 3 + (m.gyro_white,) * 3)
        clean = [float(v) for v in acc] + [float(v) for v in gyro]
        out = np.array([c + (w + b) for c, w, b in zip(
            clean, white, self._bias(robot, sim_time_s), strict=True)], np.float32)
        return out[:3], out[3:]

    # -- encoders -------------------------------------------------------------------
    def encoders(self, robot: int, ticks: np.ndarray) -> np.ndarray:
        """Counted ticks (left, right) for the true ``ticks``: each less the tick
        boundaries between 0 and it that the encoder missed."""
        out = np.asarray(ticks, np.int64).copy()
        for wheel in range(2):
            n = int(out[wheel])
            if n:
                out[wheel] = n - (1 if n > 0 else -1) * self._misses(robot, wheel, n)
        return out

    _BLOCK = 4096

    def _misses(self, robot: int, wheel: int, n: int) -> int:
        """How many of the tick boundaries 1..n (or -1..n for n < 0) are missed."""
        way = 1 if n > 0 else 0
        block, within = divmod(abs(n) - 1, self._BLOCK)
        blocks = self._missed.setdefault((robot, wheel, way), [])
        while len(blocks) <= block:  # running counts, a block of boundaries at a time
            u = bulk_uniforms(self.seed, robot, "encoders",
                              (len(blocks) << 2) | (wheel << 1) | way, self._BLOCK)
            base = int(blocks[-1][-1]) if blocks else 0
            blocks.append(np.cumsum(u < self.model_of(robot).encoders.miss_rate) + base)
        return int(blocks[block][within])

    # -- time of flight --------------------------------------------------------------
    def tof(self, robot: int, index: int, range_m: float, hit: bool) -> float:
        """The noisy range of a clean ``range_m``; ``hit`` False: nothing within range."""
        m = self.model_of(robot).tof
        if not hit or range_m > m.max_range_m:
            return m.no_target_m
        z = self._sample(robot, "tof", index, 1, 1.0)[0]
        return max(0.0, range_m + z * (m.sigma_m + m.sigma_per_m * range_m))

    # -- camera ----------------------------------------------------------------------
    def camera(self, robot: int, index: int, image: np.ndarray) -> np.ndarray:
        """``image`` (uint8 HxWx3) with the frame's exposure and pixel noise, in place."""
        m = self.model_of(robot).camera
        z, pick, shift_u = normals(self.seed, robot, "camera", index, 1)[0], *uniforms(
            self.seed, robot, "camera_pick", index, 2)
        gain = 1.0 + m.exposure_sigma * float(z)
        bank = self._bank(robot, image.shape)
        frame = bank[int(pick * CAMERA_BANK_FRAMES) % CAMERA_BANK_FRAMES]
        h = image.shape[0]
        shift = int(shift_u * h) % h
        if image.dtype == np.uint8 and image.ndim == 3 and image.flags.c_contiguous:
            from dmxshm.matrix.noise_kernels import expose

            expose(image, gain, frame, shift)  # (compiled: the same integers)
            return image
        return self.camera_numpy(image, gain, frame, shift)

    @staticmethod
    def camera_numpy(image: np.ndarray, gain: float, frame: np.ndarray,
                     shift: int) -> np.ndarray:
        """:meth:`camera`'s exposure and noise in numpy (any image layout; the compiled
        one's reference)."""
        h = image.shape[0]
        lut = np.clip(np.arange(256) * gain, 0, 255).astype(np.int16)
        noisy = np.take(lut, image)  # the exposure; then the bank's frame rolled by shift
        noisy[shift:] += frame[:h - shift]
        noisy[:shift] += frame[h - shift:]
        np.clip(noisy, 0, 255, out=noisy)
        image[...] = noisy
        return image

    def _bank(self, robot: int, shape: tuple[int, ...]) -> np.ndarray:
        return _bank(self.bank_seed, robot, tuple(shape), self.model_of(robot).camera.sigma_dn)

    # -- many robots at once (a renderer's block) -----------------------------------
    def imu_rows(self, robots: tuple[int, ...] | list[int], index: int, sim_time_s: float,
                 acc: np.ndarray, gyro: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`imu` of each of ``robots`` (rows of ``(n, 3)`` arrays), as new arrays."""
        out_acc, out_gyro = np.array(acc, np.float32), np.array(gyro, np.float32)
        for j, robot in enumerate(robots):
            out_acc[j], out_gyro[j] = self.imu(robot, index, sim_time_s, acc[j], gyro[j])
        return out_acc, out_gyro

    def encoder_rows(self, robots: tuple[int, ...] | list[int],
                     ticks: np.ndarray) -> np.ndarray:
        """:meth:`encoders` of each of ``robots`` (rows of an ``(n, 2)`` array)."""
        return np.array([self.encoders(r, ticks[j]) for j, r in enumerate(robots)],
                        np.int64).reshape(-1, 2)

    def tof_rows(self, robots: tuple[int, ...] | list[int], index: int,
                 ranges: list[float], max_range_m: float) -> list[float]:
        """:meth:`tof` of each of ``robots``; a clean reading of ``max_range_m`` (the
        clean sensor's no-target reading) is no target."""
        return [self.tof(r, index, d, d < max_range_m) for r, d in zip(robots, ranges,
                                                                       strict=True)]


@functools.lru_cache(maxsize=64)
def _bank(seed: int, robot: int, shape: tuple[int, ...], sigma_dn: float) -> np.ndarray:
    """A camera's bank of noise frames (int16, read-only), shared by every
    :class:`Noise` of the same bank seed in the process."""
    size = int(np.prod(shape))
    h, w, c = shape
    z = bulk_normals(seed, robot, "camera_bank", (h << 20) | (w << 4) | c,
                     CAMERA_BANK_FRAMES * size)
    bank = np.rint(z * sigma_dn).astype(np.int16).reshape((CAMERA_BANK_FRAMES, *shape))
    bank.flags.writeable = False
    return bank
