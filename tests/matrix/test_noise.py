"""The sensor noise models: their statistics, their keys, and that nothing depends on
who asks or in what order.

The statistical checks are on fixed seeds (each is deterministic); their bounds are
set so that over random seeds each would fail less than once in 10^5 runs: 5
standard errors of the estimate (a normal tail of 6e-7 per check).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dmxshm.matrix.noise import (
    BIAS_KNOT_S,
    DUCKIEBOT,
    EncoderNoise,
    Noise,
    NoiseModel,
    normals,
    uniforms,
)
from dmxshm.matrix.sensors import ENCODER_TICKS_PER_REV

N = 5000
IMU_DT = 0.01  # 100 Hz


def test_the_generator_is_standard_normal_and_uniform() -> None:
    z = np.concatenate([normals(3, 1, "imu", i, 6) for i in range(N)])
    assert abs(z.mean()) < 5 / math.sqrt(z.size)
    assert abs(z.std() - 1) < 5 / math.sqrt(2 * z.size)
    u = np.concatenate([uniforms(3, 1, "tof", i, 2) for i in range(N)])
    assert ((u >= 0) & (u < 1)).all() and abs(u.mean() - 0.5) < 5 * math.sqrt(1 / 12 / u.size)
    # Different robots, streams and seeds draw different numbers.
    base = normals(3, 1, "imu", 7, 6)
    for other in (normals(3, 2, "imu", 7, 6), normals(3, 1, "tof", 7, 6),
                  normals(4, 1, "imu", 7, 6)):
        assert (other != base).all()


def test_an_imu_at_rest_reads_gravity_within_its_bias_and_its_noise() -> None:
    noise = Noise(11)
    m = DUCKIEBOT.imu
    acc0 = np.array([0.0, 0.0, 9.81], np.float32)
    gyro0 = np.zeros(3, np.float32)
    reads, biases = [], []
    for k in range(N):
        acc, gyro = noise.imu(0, k, k * IMU_DT, acc0, gyro0)
        reads.append(np.concatenate([acc, gyro]))
        biases.append(noise.imu_bias(0, k * IMU_DT))
    reads, biases = np.array(reads, np.float64), np.array(biases)
    clean = np.concatenate([acc0, gyro0])
    seconds = N * IMU_DT
    white = np.repeat([m.acc_white, m.gyro_white], 3)
    bound = (np.repeat([m.acc_bias, m.gyro_bias], 3) * m.bias_bound_sigmas
             + 5 * np.repeat([m.acc_walk, m.gyro_walk], 3) * math.sqrt(seconds)
             + 5 * white / math.sqrt(N))
    assert (np.abs(reads.mean(axis=0) - clean) <= bound).all()
    # What is left once the bias is taken out is white noise of the configured spread
    # (float32 rounding of 9.81 + noise is far below it).
    spread = (reads - clean - biases).std(axis=0)
    assert np.allclose(spread, white, rtol=5 / math.sqrt(2 * N))
    assert not np.allclose(reads.mean(axis=0), clean, atol=1e-6)  # it is not exact


def test_the_bias_walks_by_its_configured_step_and_is_continuous() -> None:
    noise = Noise(5)
    m = DUCKIEBOT.imu
    knots = np.array([noise.imu_bias(0, j * BIAS_KNOT_S) for j in range(N)])
    steps = np.diff(knots, axis=0)
    expected = np.repeat([m.acc_walk, m.gyro_walk], 3) * math.sqrt(BIAS_KNOT_S)
    assert np.allclose(steps.std(axis=0), expected, rtol=5 / math.sqrt(2 * N))
    # Between knots it is interpolated: half way is the mean of the two ends.
    mid = noise.imu_bias(0, 10.5 * BIAS_KNOT_S)
    assert mid == pytest.approx((knots[10] + knots[11]) / 2)


@settings(max_examples=25, deadline=None)
@given(ticks=st.lists(st.integers(-20000, 20000), min_size=1, max_size=8))
def test_encoder_counts_depend_on_the_wheel_angle_only(ticks: list[int]) -> None:
    fresh = [Noise(2).encoders(0, np.array([t, -t])) for t in ticks]
    one = Noise(2)
    assert all((one.encoders(0, np.array([t, -t])) == f).all()
               for t, f in zip(ticks, fresh, strict=True))


def test_encoders_count_the_angles_ticks_less_the_missed_ones() -> None:
    exact = Noise(1, NoiseModel(encoders=EncoderNoise(miss_rate=0.0)))
    angle = np.array([20.3, -7.9]) * 2 * math.pi  # revolutions
    true = np.floor(angle / (2 * math.pi / ENCODER_TICKS_PER_REV)).astype(np.int64)
    assert (exact.encoders(0, true) == true).all()
    # A high miss rate, counted boundary by boundary against the model's own draws.
    rate = 0.05
    lossy = Noise(1, NoiseModel(encoders=EncoderNoise(miss_rate=rate)))
    counts = [int(lossy.encoders(0, np.array([n, 0]))[0]) for n in range(1, 3000)]
    missed = [n - c for n, c in zip(range(1, 3000), counts, strict=True)]
    assert all(b - a in (0, 1) for a, b in zip(missed, missed[1:], strict=False))  # monotone
    total = missed[-1]
    assert abs(total - rate * 2999) < 5 * math.sqrt(2999 * rate * (1 - rate))
    # Going back over a boundary takes back what going forward over it gave.
    assert int(lossy.encoders(0, np.array([1500, 0]))[0]) == counts[1499]


@pytest.mark.parametrize("distance_m", [0.1, 0.5, 1.0])
def test_the_time_of_flight_is_unbiased_with_a_spread_growing_with_range(
        distance_m: float) -> None:
    noise = Noise(8)
    m = DUCKIEBOT.tof
    reads = np.array([noise.tof(0, k, distance_m, True) for k in range(N)])
    sigma = m.sigma_m + m.sigma_per_m * distance_m
    assert abs(reads.mean() - distance_m) < 5 * sigma / math.sqrt(N)
    assert reads.std() == pytest.approx(sigma, rel=5 / math.sqrt(2 * N))


def test_the_time_of_flight_reads_the_drivers_out_of_range_value_with_nothing_ahead() -> None:
    noise = Noise(8)
    assert noise.tof(0, 3, 1.2, False) == 8.0
    assert noise.tof(0, 3, 1.25, True) == 8.0


def test_camera_noise_is_keyed_by_the_frame_and_has_the_configured_spread() -> None:
    clean = np.full((48, 64, 3), 128, np.uint8)
    noise = Noise(4)
    a = noise.camera(0, 10, clean.copy())
    b = Noise(4).camera(0, 10, clean.copy())
    assert (a == b).all()
    assert (a != noise.camera(0, 11, clean.copy())).any()
    frames = np.array([noise.camera(0, k, clean.copy()) for k in range(200)], np.float64)
    m = DUCKIEBOT.camera
    # Per frame, the exposure gain moves every pixel together; within a frame, the
    # spread around its own mean is the pixel noise (rounded to whole levels).
    within = (frames - frames.mean(axis=(1, 2, 3), keepdims=True)).std()
    assert within == pytest.approx(math.sqrt(m.sigma_dn**2 + 1 / 12), rel=0.1)
    gains = frames.mean(axis=(1, 2, 3)) / 128
    assert gains.std() == pytest.approx(m.exposure_sigma, rel=0.3)


def test_sample_blocks_are_the_same_in_any_order_and_few_are_kept() -> None:
    from dmxshm.matrix.noise import Noise

    acc, gyro = np.zeros(3, np.float32), np.zeros(3, np.float32)
    a, b = Noise(9), Noise(9)
    indices = [0, 5000, 3, 70000, 255, 256, 4999]
    forward = {i: a.imu(0, i, 0.0, acc, gyro)[0].tolist() for i in indices}
    backward = {i: b.imu(0, i, 0.0, acc, gyro)[0].tolist() for i in reversed(indices)}
    assert forward == backward
    assert len(a._blocks) <= 2 and len(b._blocks) <= 2  # noqa: SLF001


def test_a_model_per_robot_gives_each_robot_its_own_models_draws() -> None:
    # A network's randomised robots: robot 1 twice as noisy, robot 0 as the default.
    loud = DUCKIEBOT.scaled(2.0)
    many = Noise(3, robot_models=[DUCKIEBOT, loud])
    acc, gyro = np.array([0.0, 0.0, 9.81]), np.zeros(3)
    image = np.full((12, 16, 3), 100, np.uint8)
    for robot, model in ((0, DUCKIEBOT), (1, loud)):
        alone = Noise(3, model)
        for k in (0, 7, 300):
            for a, b in zip(many.imu(robot, k, k * IMU_DT, acc, gyro),
                            alone.imu(robot, k, k * IMU_DT, acc, gyro), strict=True):
                assert a.tobytes() == b.tobytes()
            assert many.tof(robot, k, 0.5, True) == alone.tof(robot, k, 0.5, True)
            assert np.array_equal(many.camera(robot, k, image.copy()),
                                  alone.camera(robot, k, image.copy()))
    spread = [np.std([many.tof(r, k, 0.5, True) for k in range(N)]) for r in (0, 1)]
    assert spread[1] == pytest.approx(2 * spread[0], rel=0.1)
    assert many.model_of(5) is DUCKIEBOT  # beyond the list: the run's model
