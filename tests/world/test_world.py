"""Physics worlds: determinism, driving, collisions, state mirroring."""

from __future__ import annotations

import gc
import hashlib
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pybullet as pb
import pytest

from dmxshm.errors import DmxError
from dmxshm.world.maps import load_map
from dmxshm.world.robot import (
    BASELINE_M,
    MAX_WHEEL_SPEED_RAD_S,
    WHEEL_RADIUS_M,
    yaw_rate_rad_s,
)
from dmxshm.world.state import ROBOT_STATE_DTYPE, poses_2d, rest_states
from dmxshm.world.tiles import LANE_OFFSET_M
from dmxshm.world.world import World, WorldError

# A fresh interpreter imports numpy and pybullet and steps a world in ~2 s.
CHILD_TIMEOUT_S = 60.0

LOOP = load_map("loop")
SOUTH_LANE_Y_M = LOOP.tile_center(3, 2)[1] - LANE_OFFSET_M  # eastbound lane, south straight


@pytest.fixture
def world1() -> Iterator[World]:
    with World(LOOP, 1, seed=0) as world:
        yield world


@pytest.fixture
def world2() -> Iterator[World]:
    with World(LOOP, 2, seed=0) as world:
        yield world


def run(world: World, cmd: np.ndarray, steps: int) -> None:
    world.apply_wheel_speeds(cmd)
    for _ in range(steps):
        world.step()


def random_run(world: World, seed: int, steps: int) -> list[bytes]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        world.apply_wheel_speeds(rng.uniform(-10.0, 25.0, (world.num_robots, 2)))
        world.step()
        out.append(world.state().tobytes())
    return out


def test_state_dtype_is_packed_float64() -> None:
    assert ROBOT_STATE_DTYPE.itemsize == 20 * 8
    assert ROBOT_STATE_DTYPE.names == ("pos_m", "quat_xyzw", "lin_vel_m_s", "ang_vel_rad_s",
                                       "lin_acc_m_s2", "wheel_angle_rad", "wheel_rate_rad_s")


def test_robots_start_at_rest_in_their_lanes() -> None:
    with World(LOOP, 4, seed=3) as world:
        state = world.state()
        assert state.shape == (4,) and state.dtype == ROBOT_STATE_DTYPE
        assert np.allclose(state["pos_m"][:, 2], WHEEL_RADIUS_M)
        for x, y, yaw in poses_2d(state):
            pose = LOOP.lane_pose(x, y, yaw)
            assert pose.on_road and abs(pose.offset_m) < 1e-6
        run(world, np.zeros((4, 2)), 15)  # standing still: nothing moves
        assert np.allclose(world.state()["pos_m"], state["pos_m"], atol=1e-3)
        assert world.contacts() == []


def test_bit_deterministic_same_seed() -> None:
    with World(LOOP, 4, seed=5) as a, World(LOOP, 4, seed=5) as b:
        assert random_run(a, 1, 90) == random_run(b, 1, 90)


def trajectory_digest(seed: int) -> str:
    """sha256 of every state of a 4-robot run with random commands."""
    with World(LOOP, 4, seed=seed) as world:
        return hashlib.sha256(b"".join(random_run(world, seed, 60))).hexdigest()


def test_bit_deterministic_across_processes() -> None:
    repo = Path(__file__).parents[2]
    code = "from tests.world.test_world import trajectory_digest as d; print(d(6))"
    env = dict(os.environ, PYTHONPATH=str(repo))
    child = subprocess.run([sys.executable, "-c", code], cwd=repo, env=env, check=True,
                           capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    assert child.stdout.split()[-1] == trajectory_digest(6)


def test_reset_equals_fresh_world() -> None:
    with World(LOOP, 3, seed=2) as world:
        first = random_run(world, 4, 45)
        world.reset(2)
        assert world.step_count == 0 and world.sim_time_s == 0.0
        assert random_run(world, 4, 45) == first
        world.reset(9)
        with World(LOOP, 3, seed=2) as fresh:
            assert world.state().tobytes() != fresh.state().tobytes()


def test_straight_speed_is_wheel_radius_times_omega(world1: World) -> None:
    omega = 12.0
    world1.set_state(rest_states([(0.5, SOUTH_LANE_Y_M, 0.0)]))
    run(world1, np.full((1, 2), omega), 15)  # spin up for 0.5 s
    start = world1.state()
    run(world1, np.full((1, 2), omega), 30)  # then measure over 1 s
    end = world1.state()
    travelled = end["pos_m"][0, :2] - start["pos_m"][0, :2]
    speed = np.linalg.norm(travelled) / (30 * world1.dt_s)
    assert speed == pytest.approx(WHEEL_RADIUS_M * omega, rel=0.10)
    assert travelled[0] > 0  # forward is the heading
    assert end["lin_vel_m_s"][0, 0] == pytest.approx(WHEEL_RADIUS_M * omega, rel=0.10)
    assert end["wheel_rate_rad_s"][0] == pytest.approx([omega, omega], rel=0.05)


@pytest.mark.parametrize(("left", "right"), [(4.0, 10.0), (10.0, 4.0), (-6.0, 6.0)])
def test_unequal_wheels_turn_the_right_way(world1: World, left: float, right: float) -> None:
    world1.set_state(rest_states([(1.0, SOUTH_LANE_Y_M, 0.0)]))
    run(world1, np.array([[left, right]]), 20)
    yaw = poses_2d(world1.state())[0, 2]
    expected = yaw_rate_rad_s(left, right)
    assert math.copysign(1.0, yaw) == math.copysign(1.0, expected)
    assert world1.state()["ang_vel_rad_s"][0, 2] == pytest.approx(expected, rel=0.25)


def test_acceleration_is_finite_difference(world1: World) -> None:
    world1.set_state(rest_states([(0.5, SOUTH_LANE_Y_M, 0.0)]))
    before = world1.state()
    run(world1, np.full((1, 2), 20.0), 1)
    after = world1.state()
    expected = (after["lin_vel_m_s"] - before["lin_vel_m_s"]) / world1.dt_s
    assert np.array_equal(after["lin_acc_m_s2"], expected)
    assert after["lin_acc_m_s2"][0, 0] > 1.0  # speeding up forward (east)


def test_head_on_robots_collide_and_do_not_pass(world2: World) -> None:
    world2.set_state(rest_states([(1.3, SOUTH_LANE_Y_M, 0.0), (1.9, SOUTH_LANE_Y_M, math.pi)]))
    world2.apply_wheel_speeds(np.full((2, 2), 15.0))
    touched = False
    for _ in range(60):
        world2.step()
        a, b = world2.state()["pos_m"][:, 0]
        assert b - a > 0.10  # front faces are 0.06 m ahead of the axle
        touched = touched or world2.contacts() == [(0, 1)]
    assert touched


def test_lane_geometry_supports_a_lane_follower() -> None:
    """A PD controller with curvature feed-forward stays in lane for 20 s."""
    speed_m_s = 0.22
    with World(LOOP, 3, seed=1) as world:
        for _ in range(600):
            cmd = []
            for x, y, yaw in poses_2d(world.state()):
                pose = LOOP.lane_pose(x, y, yaw)
                assert pose.on_road and abs(pose.offset_m) < 0.05
                turn = (speed_m_s * LOOP.lane_curvature(x, y, yaw) - 10.0 * pose.offset_m
                        - 4.0 * pose.heading_err_rad)
                cmd.append([(speed_m_s - turn * BASELINE_M / 2) / WHEEL_RADIUS_M,
                            (speed_m_s + turn * BASELINE_M / 2) / WHEEL_RADIUS_M])
            world.apply_wheel_speeds(np.array(cmd))
            world.step()
            assert world.contacts() == []


def test_set_state_mirrors_into_another_world(world2: World) -> None:
    random_run(world2, 3, 20)
    with World(LOOP, 2, seed=11) as mirror:
        mirror.set_state(world2.state())
        assert mirror.state().tobytes() == world2.state().tobytes()
        # Bullet now holds the same bodies: reading them back agrees.
        back = mirror._read_state(previous=None)
        for name in ("pos_m", "quat_xyzw", "lin_vel_m_s", "wheel_angle_rad"):
            assert np.allclose(back[name], world2.state()[name], atol=1e-9)
        # As a renderer gets it: a field of a state-ring slot.
        slot = np.zeros((), [("step", "<u8"), ("robots", ROBOT_STATE_DTYPE, (2,))])
        slot["robots"] = world2.state()
        mirror.set_state(slot["robots"])
        assert mirror.state().tobytes() == world2.state().tobytes()


def test_bad_commands_are_refused(world2: World) -> None:
    with pytest.raises(WorldError, match=r"shape \(3, 2\)"):
        world2.apply_wheel_speeds(np.zeros((3, 2)))
    with pytest.raises(WorldError, match=r"robot\(s\) \[1\]"):
        world2.apply_wheel_speeds(np.array([[0.0, 0.0], [np.nan, 1.0]]))
    with pytest.raises(WorldError):
        world2.set_state(np.zeros(3, ROBOT_STATE_DTYPE))
    assert issubclass(WorldError, DmxError)


@pytest.mark.parametrize("kwargs", [{"num_robots": -1}, {"dt_s": 0.0}, {"substeps": 0}])
def test_bad_configuration_is_refused(kwargs: dict) -> None:
    args = {"num_robots": 1} | kwargs
    with pytest.raises(WorldError):
        World(LOOP, **args)


def test_owned_client_is_disconnected_by_close_or_gc() -> None:
    world = World(LOOP, 1)
    client = world.client
    world.close()
    world.close()
    assert not pb.isConnected(physicsClientId=client)
    world = World(LOOP, 1)
    client = world.client
    del world
    gc.collect()
    assert not pb.isConnected(physicsClientId=client)


def test_borrowed_client_stays_connected() -> None:
    client = pb.connect(pb.DIRECT)
    try:
        world = World("loop", 1, client=client)
        world.close()
        world.close()
        assert pb.isConnected(physicsClientId=client)
    finally:
        pb.disconnect(physicsClientId=client)


def test_scene_is_few_bodies(world1: World) -> None:
    bodies = pb.getNumBodies(physicsClientId=world1.client)
    assert bodies <= 7  # ground + one mesh per colour + the robot
    for ids in world1.scene.visual_ids.values():
        for body in ids:
            if body != world1.scene.ground_id:
                assert pb.getCollisionShapeData(body, -1, physicsClientId=world1.client) == ()


def test_a_world_without_visuals_moves_exactly_the_same() -> None:
    rng = np.random.default_rng(11)
    commands = rng.uniform(-MAX_WHEEL_SPEED_RAD_S, MAX_WHEEL_SPEED_RAD_S, (200, 2, 2))
    runs, shapes = [], []
    for visuals in (True, False):
        with World("loop", 2, seed=3, visuals=visuals) as world:
            states = []
            for cmd in commands:
                world.apply_wheel_speeds(cmd)
                world.step()
                states.append(world.state())
            runs.append(np.array(states))
            shapes.append(len(pb.getVisualShapeData(world.robot_ids[0],
                                                    physicsClientId=world.client)))
            if not visuals:
                assert world.scene.visual_ids == {}
    assert np.array_equal(runs[0].view(np.float64), runs[1].view(np.float64))
    # the robots too: loaded without their visual shapes (Bullet shows their
    # collision shapes instead: 4, not 6)
    assert shapes[1] < shapes[0]


def test_the_collision_only_urdf_is_the_robot_without_its_visuals() -> None:
    import re

    from dmxshm.world.robot import COLLISION_URDF_PATH, URDF_PATH

    def body(text: str) -> str:  # the XML, comments and visuals left out
        text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
        return re.sub(r"\s+", "", re.sub(r"<visual>.*?</visual>", "", text, flags=re.S))

    assert body(COLLISION_URDF_PATH.read_text()) == body(URDF_PATH.read_text())
    assert "<visual>" not in re.sub(r"<!--.*?-->", "", COLLISION_URDF_PATH.read_text(),
                                    flags=re.S)


@pytest.mark.parametrize("robots", [1, 2, 4])
def test_replaced_robots_move_like_fresh_ones(robots: int) -> None:
    # Hardest case: each robot is put back where a robot stands after a long
    # past (contacts with the ground and each other nearby).
    rng = np.random.default_rng(1)
    limit = MAX_WHEEL_SPEED_RAD_S
    with World("loop", robots, seed=3) as used, World("loop", robots, seed=5) as fresh:
        for _ in range(300):
            used.apply_wheel_speeds(rng.uniform(-limit, limit, (robots, 2)))
            used.step()
        now = [tuple(p) for p in poses_2d(used.state()).tolist()]
        poses = now[1:] + now[:1]
        used.replace_robots(poses)
        fresh.replace_robots(poses)
        for _ in range(100):
            cmd = rng.uniform(-limit, limit, (robots, 2))
            for world in (used, fresh):
                world.apply_wheel_speeds(cmd)
                world.step()
            assert np.array_equal(used.state().view(np.float64),
                                  fresh.state().view(np.float64))


def test_several_robots_replaced_after_collisions_and_other_physics_run_as_fresh_ones() -> None:
    # A world with objects whose robots hit each other and the objects, one of them
    # with other physics for a while, then all put back: the same, bit for bit, as a
    # world that never moved (the bodies are loaded afresh).
    rng = np.random.default_rng(7)
    limit = MAX_WHEEL_SPEED_RAD_S
    with World("town", 4, seed=3) as used, World("town", 4, seed=8) as fresh:
        used.set_robot_physics(2, friction=0.5, mass=1.3, wheel_radius=1.1)
        hits = 0
        for _ in range(400):
            used.apply_wheel_speeds(rng.uniform(-limit, limit, (4, 2)))
            used.step()
            robots, objects = used.touching()
            hits += len(robots) + len(objects)
        assert hits > 0, "no contact in the past: the test would prove nothing"
        used.set_robot_physics(2)  # nominal again
        poses = [tuple(p) for p in poses_2d(fresh.state()).tolist()][::-1]
        for world in (used, fresh):
            world.replace_robots(poses)
        for _ in range(150):
            cmd = rng.uniform(-limit, limit, (4, 2))
            for world in (used, fresh):
                world.apply_wheel_speeds(cmd)
                world.step()
            assert np.array_equal(used.state().view(np.float64),
                                  fresh.state().view(np.float64))


def test_a_robots_physics_scales_hold_through_replace_and_reset() -> None:
    with World("loop", 2, seed=0) as world:
        body = world.robot_ids[1]
        loaded = pb.getDynamicsInfo(body, -1, physicsClientId=world.client)
        world.set_robot_physics(1, friction=0.5, mass=1.2, wheel_radius=1.1)
        for again in (lambda: None, lambda: world.replace_robots(world.start_poses),
                      lambda: world.reset(0)):
            again()  # the bodies are loaded afresh; the scales hold
            got = pb.getDynamicsInfo(world.robot_ids[1], -1, physicsClientId=world.client)
            assert got[0] == pytest.approx(loaded[0] * 1.2)
            assert got[1] == pytest.approx(loaded[1] * 0.5)
            assert [v for v in got[2]] == pytest.approx([v * 1.2 for v in loaded[2]])
            other = pb.getDynamicsInfo(world.robot_ids[0], -1, physicsClientId=world.client)
            assert other[:2] == loaded[:2]
        assert world.robot_physics(1) == (0.5, 1.2, 1.1) and world.robot_physics(0) == (1, 1, 1)
        world.set_robot_physics(1)  # back to the robot as loaded
        got = pb.getDynamicsInfo(world.robot_ids[1], -1, physicsClientId=world.client)
        assert got[:2] == pytest.approx(loaded[:2])
