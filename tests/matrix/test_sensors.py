"""IMU, wheel encoders, time of flight (their default rates: tests/sim/test_sensing.py)."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest

from dmxshm.matrix.sensors import (
    ENCODER_TICKS_PER_REV,
    TOF_MOUNT_M,
    TimeOfFlight,
    encoders,
    imu,
)
from dmxshm.world.maps import load_map
from dmxshm.world.robot import CHASSIS_BACK_X_M, CHASSIS_SIZE_M, yaw_rate_rad_s
from dmxshm.world.state import ROBOT_STATE_DTYPE, rest_states
from dmxshm.world.tiles import LANE_OFFSET_M
from dmxshm.world.world import GRAVITY_M_S2, World

LOOP = load_map("loop")
LANE_Y_M = LOOP.tile_center(3, 2)[1] - LANE_OFFSET_M
TOF = TimeOfFlight()


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    with World(LOOP, 2, seed=0) as w:
        yield w


@pytest.mark.parametrize("gap_m", [0.1, 0.4, 0.8, 1.1])
def test_tof_sees_robot_ahead(world: World, gap_m: float) -> None:
    # Robot 1 stands so that its back face is gap_m ahead of robot 0's sensor.
    x1 = 0.8 + TOF_MOUNT_M[0] + gap_m - CHASSIS_BACK_X_M
    world.set_state(rest_states([(0.8, LANE_Y_M, 0.0), (x1, LANE_Y_M, 0.0)]))
    assert TOF.measure(world.client, world.state()[0]) == pytest.approx(gap_m, abs=0.05)


def test_tof_sees_robot_side_on(world: World) -> None:
    x1 = 0.8 + TOF_MOUNT_M[0] + 0.5 + CHASSIS_SIZE_M[1] / 2
    world.set_state(rest_states([(0.8, LANE_Y_M, 0.0), (x1, LANE_Y_M - 0.03, math.pi / 2)]))
    assert TOF.measure(world.client, world.state()[0]) == pytest.approx(0.5, abs=0.05)


def test_tof_max_range_when_nothing_ahead(world: World) -> None:
    far_away = (0.8 + 1.3 - CHASSIS_BACK_X_M, LANE_Y_M, 0.0)  # just beyond 1.2 m
    world.set_state(rest_states([(0.8, LANE_Y_M, 0.0), far_away]))
    assert TOF.measure(world.client, world.state()[0]) == 1.2
    # Facing the other robot's back from behind it, but looking away.
    world.set_state(rest_states([(0.8, LANE_Y_M, math.pi), far_away]))
    assert TOF.measure(world.client, world.state()[0]) == 1.2


def test_tof_ignores_its_own_robot(world: World) -> None:
    world.set_state(rest_states([(0.8, LANE_Y_M, 0.0), (3.2, 2.7, 0.0)]))
    inside = TimeOfFlight(mount_m=(CHASSIS_BACK_X_M + 0.01, 0.0, 0.02))
    assert inside.measure(world.client, world.state()[0]) == 1.2


def test_encoders_count_135_per_revolution() -> None:
    state = np.zeros((), ROBOT_STATE_DTYPE)
    for revolutions in (0, 1, 2, 10, -1, -3):
        state["wheel_angle_rad"] = [2 * math.pi * revolutions, -2 * math.pi * revolutions]
        assert encoders(state).tolist() == [135 * revolutions, -135 * revolutions]
    state["wheel_angle_rad"] = [2 * math.pi / ENCODER_TICKS_PER_REV * 0.999, 0.0]
    assert encoders(state).tolist() == [0, 0]
    assert encoders(state).dtype == np.int64


def test_encoders_follow_the_driven_wheels(world: World) -> None:
    world.set_state(rest_states([(0.8, LANE_Y_M, 0.0), (3.2, 2.7, 0.0)]))
    start = world.state()[0]
    world.apply_wheel_speeds(np.array([[2 * math.pi, math.pi], [0.0, 0.0]]))  # 1 and 0.5 rev/s
    for _ in range(60):
        world.step()
    end = world.state()[0]
    ticks = encoders(end) - encoders(start)
    turned = (end["wheel_angle_rad"] - start["wheel_angle_rad"]) / (2 * math.pi)
    assert np.all(np.abs(ticks - ENCODER_TICKS_PER_REV * turned) <= 1)
    assert ticks.tolist() == pytest.approx([270, 135], rel=0.1)  # 2 s at 1 and 0.5 rev/s


def test_imu_at_rest_reads_gravity(world: World) -> None:
    world.set_state(rest_states([(0.8, LANE_Y_M, 1.0), (3.2, 2.7, 0.0)]))
    world.apply_wheel_speeds(np.zeros((2, 2)))
    for _ in range(5):
        world.step()
    acc, gyro = imu(world.state()[0])
    assert acc.dtype == np.float32 and gyro.dtype == np.float32
    assert acc == pytest.approx([0.0, 0.0, GRAVITY_M_S2], abs=0.05)
    assert gyro == pytest.approx([0.0, 0.0, 0.0], abs=0.01)


def test_imu_is_in_the_robot_frame() -> None:
    state = np.zeros((), ROBOT_STATE_DTYPE)
    state["quat_xyzw"] = [0.0, 0.0, math.sin(math.pi / 4), math.cos(math.pi / 4)]  # yaw 90
    state["lin_acc_m_s2"] = [1.0, 0.0, 0.0]  # world east = robot right (-y)
    state["ang_vel_rad_s"] = [0.0, 2.0, 0.0]  # about world north = robot +x
    acc, gyro = imu(state)
    assert acc == pytest.approx([0.0, -1.0, GRAVITY_M_S2], abs=1e-6)
    assert gyro == pytest.approx([2.0, 0.0, 0.0], abs=1e-6)


def test_imu_gyro_sees_turns(world: World) -> None:
    world.set_state(rest_states([(0.8, LANE_Y_M, 0.0), (3.2, 2.7, 0.0)]))
    world.apply_wheel_speeds(np.array([[-6.0, 6.0], [0.0, 0.0]]))
    for _ in range(20):
        world.step()
    _, gyro = imu(world.state()[0])
    assert gyro[2] == pytest.approx(yaw_rate_rad_s(-6.0, 6.0), rel=0.25)
