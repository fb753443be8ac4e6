"""The world without Bullet: DB18 robots kept apart in the plane, its sensors' readings."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dmxshm.matrix.sensors import TimeOfFlight, encoders_many
from dmxshm.sim import footprints as fp
from dmxshm.sim.planar import PlanarWorld, make_world
from dmxshm.world.world import World, WorldError

START = (1.0, 1.0, 0.0)


def world_with(robots: list[tuple[float, float, float]]) -> PlanarWorld:
    w = PlanarWorld("loop", len(robots), seed=0)
    w.replace_robots(robots)
    return w


def gap_to_cone(w: PlanarWorld, robot: int, cone_x: float, cone_y: float, cone_r: float
                ) -> float:
    centres = fp.robot_discs(w.model.x, w.model.y, w.model.c, w.model.s)[robot]
    return float(np.min(np.hypot(centres[:, 0] - cone_x, centres[:, 1] - cone_y))
                 - fp.ROBOT_DISC_RADIUS_M - cone_r)


def test_a_robot_driving_into_a_cone_stops_against_it() -> None:
    w = world_with([START])
    cone = w.add_object("cone", START[0] + 0.5, START[1])
    radius = 0.30 * cone.height_m  # the cone's widest part
    w.apply_duties([[0.8, 0.8]])
    touching_steps, gaps = [], []
    for k in range(120):
        w.step()
        gaps.append(gap_to_cone(w, 0, cone.x_m, cone.y_m, radius))
        if w.object_contacts():
            touching_steps.append(k)
    assert min(gaps) > -1e-9                      # never through it
    assert touching_steps and touching_steps == list(range(touching_steps[0], 120))
    assert w.object_contacts() == [(0, 0)]
    assert w.model.u[0] == 0.0                    # stopped: driving into it
    x_stopped = w.model.x[0]
    w.apply_duties([[-0.5, -0.5]])                # backing away is free
    for _ in range(10):
        w.step()
    assert w.model.x[0] < x_stopped - 0.02 and w.object_contacts() == []


def test_two_robots_head_on_stop_touching() -> None:
    w = world_with([(1.0, 1.0, 0.0), (1.6, 1.0, math.pi)])
    w.apply_duties([[0.6, 0.6], [0.6, 0.6]])
    for _ in range(90):
        w.step()
        centres = fp.robot_discs(w.model.x, w.model.y, w.model.c, w.model.s)
        d = np.hypot(*(centres[0][:, None] - centres[1][None]).transpose(2, 0, 1))
        assert d.min() >= 2 * fp.ROBOT_DISC_RADIUS_M - 1e-9
    assert w.contacts() == [(0, 1)]
    assert abs(w.model.u).max() < 0.05  # each pushes the other: both held


def test_the_map_edge_holds_a_robot() -> None:
    w = world_with([(0.3, 1.0, math.pi)])
    w.apply_duties([[1.0, 1.0]])
    for _ in range(60):
        w.step()
    centres = fp.robot_discs(w.model.x, w.model.y, w.model.c, w.model.s)
    assert centres[..., 0].min() == pytest.approx(fp.ROBOT_DISC_RADIUS_M, abs=1e-9)


@pytest.mark.parametrize("distance_m", [0.2, 0.5, 0.9])
def test_time_of_flight_to_a_wall(distance_m: float) -> None:
    w = world_with([START])
    tof = TimeOfFlight()
    # A barrier across the robot's path: its near face distance_m past the sensor.
    barrier = w.add_object("barrier", 0.0, START[1], math.pi / 2)
    half_depth = 0.25 * barrier.height_m
    x_face = START[0] + tof.mount_m[0] + distance_m
    w.objects.pop()
    w.object_ids.pop()
    w.add_object("barrier", x_face + half_depth, START[1], math.pi / 2)
    rot = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
    assert w.tof_range(tof, (START[0], START[1], 0.03), rot) == pytest.approx(distance_m,
                                                                               abs=1e-12)


def test_time_of_flight_sees_other_robots_not_itself() -> None:
    w = world_with([(1.0, 1.0, 0.0), (1.5, 1.0, 0.0)])
    tof = TimeOfFlight()
    ranges = w.tof_ranges(tof, w.state(), [0, 1])
    back_of_1 = 1.5 - 0.055 - fp.ROBOT_DISC_RADIUS_M  # its rear disc's edge
    assert ranges[0] == pytest.approx(back_of_1 - (1.0 + tof.mount_m[0]), abs=1e-12)
    assert ranges[1] == tof.max_range_m


def test_imu_at_rest_and_in_a_steady_turn() -> None:
    w = world_with([START])
    w.step()
    assert not np.any(w.state()["lin_acc_m_s2"])
    w.apply_duties([[0.3, 0.7]])
    for _ in range(150):  # 5 s: the model's velocities have settled
        w.step()
    s = w.state()[0]
    u, yaw_rate = w.model.u[0], w.model.w[0]
    assert s["ang_vel_rad_s"][2] == yaw_rate and yaw_rate > 0.5
    heading = np.array([w.model.c[0], w.model.s[0]])
    left = np.array([-heading[1], heading[0]])
    acc = s["lin_acc_m_s2"][:2]
    assert acc @ left == pytest.approx(u * yaw_rate, rel=1e-12)   # centripetal
    assert abs(acc @ heading) < 1e-6                              # steady


def test_encoders_count_the_wheel_angles() -> None:
    w = world_with([START])
    w.apply_duties([[0.9, -0.4]])
    for _ in range(40):
        w.step()
    s = w.state()
    ticks = encoders_many(s)[0]
    angles = np.array([w.model.axis_l[0], w.model.axis_r[0]])
    assert ticks.tolist() == np.floor(angles / (2 * math.pi / 135) + 1e-9).astype(int).tolist()
    assert ticks[0] > 0 > ticks[1]


def test_return_to_start() -> None:
    w = world_with([START])
    w.apply_duties([[0.5, 0.5]])
    for _ in range(10):
        w.step()
    w.return_to_start([0])
    assert (w.model.x[0], w.model.y[0], w.model.u[0]) == (START[0], START[1], 0.0)


def test_make_world_picks_the_backend() -> None:
    with make_world("bullet", "loop", 1, visuals=False) as b:
        assert isinstance(b, World)
    assert isinstance(make_world("db18", "loop", 1, visuals=False), PlanarWorld)
    with pytest.raises(WorldError, match="bullet, db18"):
        make_world("ode", "loop", 1)
