"""gym-duckietown's ``Simulator`` surface on the drop-in (:mod:`dmxshm.duckietown.surface`):
scripts written the way gym-duckietown's are (a pure-pursuit follower on
``closest_curve_point``/``cur_pos``/``cur_angle``, a PD on ``get_lane_pos2``) keep
their lane for 1,000 steps on two maps; its frame, tiles, lane position and
``NotInLane``; its module paths; ``render``'s modes; ``update_physics``."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dmxshm.duckietown import DropInError, legacy
from dmxshm.duckietown import surface as surface_module
from dmxshm.duckietown.envs import (
    DiscreteWrapper,
    DuckietownEnv,
    DuckietownLF,
    DuckietownNav,
    MultiMapEnv,
)
from dmxshm.duckietown.simulator import (
    AGENT_SAFETY_RAD,
    NotInLane,
    Simulator,
    get_dir_vec,
    get_right_vec,
)
from dmxshm.duckietown.wrappers import PyTorchObsWrapper, ResizeWrapper, SteeringToWheelVelWrapper

SMALL = {"camera_width": 32, "camera_height": 24, "domain_rand": False}


def reset(env: object) -> np.ndarray:
    """The observation of ``reset()``, whichever gym API the module speaks (with gym
    0.26 installed, its new one: :mod:`dmxshm.duckietown.legacy`)."""
    out = env.reset()  # type: ignore[attr-defined]
    return out[0] if legacy.NEW_API else out


def step(env: object, action: object) -> tuple[np.ndarray, float, bool, dict]:
    """``step()`` as four values ``(obs, reward, done, info)`` under either API."""
    out = env.step(action)  # type: ignore[attr-defined]
    if legacy.NEW_API:
        obs, reward, terminated, truncated, info = out
        return obs, reward, terminated or truncated, info
    return out
MAPS = ["loop", "grid"]


def pure_pursuit(env: DuckietownEnv, lookahead: float = 0.24) -> list[float]:
    """The teacher's way: a point ahead along the lane, steered to."""
    point, tangent = env.closest_curve_point(env.cur_pos, env.cur_angle)
    assert point is not None and tangent is not None
    follow = None
    while follow is None and lookahead > 0.01:
        ahead, ahead_tangent = env.closest_curve_point(point + tangent * lookahead,
                                                       env.cur_angle)
        if ahead is not None and ahead_tangent is not None:
            follow = ahead
        lookahead *= 0.5
    assert follow is not None
    to_point = follow - env.cur_pos
    to_point /= np.linalg.norm(to_point)
    dot = float(np.dot(get_right_vec(env.cur_angle), to_point))
    return [0.35, -8.0 * dot]


def pd(env: DuckietownEnv) -> list[float]:
    """basic_control's way: steer by the lane position's distance and angle (gains for
    the DB18's slower turn: a DuckietownEnv's steering of 1 turns it at 0.45 rad/s)."""
    lp = env.get_lane_pos2(env.cur_pos, env.cur_angle)
    return [0.2, 30.0 * lp.dist + 8.0 * lp.angle_rad]


@pytest.mark.parametrize("controller", [pure_pursuit, pd], ids=["pure-pursuit", "pd"])
@pytest.mark.parametrize("map_name", MAPS)
def test_a_script_on_the_surface_keeps_its_lane(map_name: str, controller: object) -> None:
    env = DuckietownEnv(map_name=map_name, **SMALL)
    try:
        env.seed(3)
        reset(env)
        worst, travelled, start = 0.0, 0.0, env.cur_pos.copy()
        for _ in range(1000):
            _, _, done, info = step(env, controller(env))  # type: ignore[operator]
            assert not done, info["Simulator"]["msg"]
            lp = env.get_lane_pos2(env.cur_pos, env.cur_angle)
            worst = max(worst, abs(lp.dist))
            travelled += env.speed * env.delta_time
        assert worst < 0.08, worst  # the lane is 0.21 m wide: inside it throughout
        assert travelled > 3.0 and env.step_count == 1000  # it drove on, not stood
        assert np.linalg.norm(env.cur_pos - start) > 0.1
    finally:
        env.close()


def test_the_frame_is_gym_duckietowns() -> None:
    env = Simulator(map_name="loop", **SMALL)
    try:
        env.reset(seed=0)
        x, y, yaw = env._pose()
        h = env.grid_height * env.road_tile_size
        assert env.cur_pos.tolist() == [x, 0.0, h - y] and env.cur_angle == yaw
        q = env.cartesian_from_weird(env.cur_pos, env.cur_angle)
        assert np.allclose(q[:2, 2], [x, y]) and math.isclose(math.atan2(q[1, 0], q[0, 0]), yaw)
        pos, angle = env.weird_from_cartesian(q)
        assert np.allclose(pos, env.cur_pos) and math.isclose(angle, yaw)
        # the heading is dmxshm's yaw: a step ahead moves the robot along get_dir_vec
        before = env.cur_pos.copy()
        for _ in range(10):
            env.step(np.array([0.5, 0.5]))
        moved = env.cur_pos - before
        assert np.dot(moved / np.linalg.norm(moved), get_dir_vec(yaw)) > 0.95
        assert np.allclose(get_right_vec(yaw), np.cross(get_dir_vec(yaw), [0, 1, 0]))
        assert env.get_dir_vec().tolist() == get_dir_vec(env.cur_angle).tolist()
    finally:
        env.close()


def test_tiles_are_gym_duckietowns() -> None:
    env = Simulator(map_name="loop", **SMALL)
    try:
        m = env.world.road_map
        assert (env.grid_width, env.grid_height, env.road_tile_size) == (m.cols, m.rows,
                                                                         m.tile_size_m)
        kinds = {t["kind"] for t in env.drivable_tiles}
        assert kinds <= {"straight", "curve_left", "curve_right", "3way_left", "3way_right",
                         "4way"} and "straight" in kinds
        assert len(env.drivable_tiles) == sum(t.is_road for row in m.tiles for t in row)
        for tile in env.drivable_tiles:
            i, j = tile["coords"]
            assert env._get_tile(i, j) is tile and m.tiles[j][i].is_road
            centre = np.array([(i + 0.5) * env.road_tile_size, 0.0,
                               (j + 0.5) * env.road_tile_size])
            assert env.get_grid_coords(centre) == (i, j)
        assert env._get_tile(-1, 0) is None and env._get_tile(0, env.grid_height) is None
    finally:
        env.close()


def test_lane_position_and_not_in_lane() -> None:
    env = Simulator(map_name="loop", **SMALL)
    try:
        env.reset(seed=2)
        lp = env.get_lane_pos2(env.cur_pos, env.cur_angle)
        point, tangent = env.closest_curve_point(env.cur_pos, env.cur_angle)
        assert abs(np.linalg.norm(tangent) - 1.0) < 1e-12
        # moved right of the lane by 3 cm: dist +0.03; turned right by 0.2 rad: angle -0.2
        right = np.cross(tangent, [0.0, 1.0, 0.0])  # the lane's right
        moved = env.get_lane_pos2(point + 0.03 * right, env.cur_angle)
        assert moved.dist == pytest.approx(0.03, abs=1e-6)
        heading = math.atan2(-tangent[2], tangent[0])
        turned = env.get_lane_pos2(point, heading - 0.2)
        assert turned.angle_rad == pytest.approx(0.2, abs=1e-6)
        assert turned.angle_deg == pytest.approx(math.degrees(0.2), abs=1e-4)
        assert turned.dot_dir == pytest.approx(math.cos(0.2), abs=1e-9)
        assert abs(lp.dist) < 0.05 and env.get_lane_pos(env.cur_pos, env.cur_angle) == lp
        grass = next(t for t in env._tiles() if t is not None and not t["drivable"])
        i, j = grass["coords"]
        off = np.array([(i + 0.5) * env.road_tile_size, 0.0, (j + 0.5) * env.road_tile_size])
        assert env.closest_curve_point(off, 0.0) == (None, None)
        with pytest.raises(NotInLane):
            env.get_lane_pos2(off, 0.0)
    finally:
        env.close()


def test_step_count_timestamp_speed_update_physics_and_agent_info() -> None:
    env = Simulator(map_name="loop", full_transparency=True, **SMALL)
    try:
        env.reset(seed=0)
        assert env.step_count == 0 and env.timestamp == 0.0
        env.update_physics(np.array([0.6, 0.6]))
        for _ in range(9):  # (past the DB18's 0.15 s command delay)
            env.update_physics([0.6, 0.6])
        assert env.step_count == 10 and env.timestamp == pytest.approx(10 * env.delta_time)
        assert env.speed > 0 and env.wheelVels.tolist() == pytest.approx([0.72, 0.72])
        with pytest.raises(DropInError, match="delta_time"):
            env.update_physics([0.1, 0.1], delta_time=0.5)
        _, _, done, info = step(env, [0.4, 0.4])
        sim = info["Simulator"]
        assert not done and sim["msg"] == "" and sim["action"] == [0.4, 0.4]
        assert sim["cur_pos"] == env.cur_pos.tolist() and sim["cur_angle"] == env.cur_angle
        assert sim["tile_coords"] == list(env.get_grid_coords(env.cur_pos))
        assert sim["lane_position"] == env.get_lane_pos2(env.cur_pos,
                                                         env.cur_angle).as_json_dict()
        assert env.get_agent_info()["Simulator"]["timestamp"] == env.timestamp
        assert env.render_obs().shape == (24, 32, 3)
        assert (env.camera_width, env.camera_height) == (32, 24)
        assert env.proximity_penalty2(env.cur_pos, env.cur_angle) == 0.0 and not env.objects
        assert pytest.approx(0.162) == AGENT_SAFETY_RAD
    finally:
        env.close()


def test_render_modes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(surface_module.GymSurface, "_human_said", False)
    env = Simulator(map_name="loop", **SMALL)
    try:
        env.reset(seed=0)
        top = env.render("top_down")
        assert top.dtype == np.uint8 and top.shape[1] == 800 and top.shape[2] == 3
        for _ in range(10):
            env.step([1.0, 1.0])
        assert not np.array_equal(top, env.render("top_down"))  # the robot moved on it
        assert env.render("rgb_array").shape == (24, 32, 3)
        with pytest.warns(UserWarning, match="shows nothing"):
            assert env.render() is None  # gym-duckietown's default mode: human
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert env.render("human") is None  # said once
        with pytest.raises(DropInError, match="free_cam"):
            env.render("free_cam")
    finally:
        env.close()


def test_envs_and_wrappers_of_gym_duckietowns_modules() -> None:
    env = DuckietownNav(map_name="grid", **SMALL)
    try:
        env.seed(1)
        reset(env)
        start = env._get_tile(*env.get_grid_coords(env.cur_pos))
        assert env.goal_tile is not None and env.goal_tile is not start
        assert isinstance(DuckietownLF(map_name="loop", **SMALL), DuckietownEnv)
    finally:
        env.close()
    multi = MultiMapEnv(map_names=["loop", "grid"], **SMALL)
    try:
        reset(multi)
        assert multi.env.map_name == "grid"
        reset(multi)
        assert multi.env.map_name == "loop" and multi.step_count == 0
        step(multi, [0.2, 0.0])
        assert multi.step_count == 1 and multi.cur_pos[1] == 0.0
    finally:
        multi.close()
    wrapped = ResizeWrapper(PyTorchObsWrapper(DiscreteWrapper(
        DuckietownEnv(map_name="loop", **SMALL))), resize_w=16, resize_h=12)
    try:
        obs = reset(wrapped)
        assert obs.shape == wrapped.observation_space.shape == (3, 16, 12)
        obs, _, _, _ = step(wrapped, 2)
        assert obs.shape == (3, 16, 12) and wrapped.unwrapped.step_count == 1
        with pytest.raises(ValueError, match="unknown action"):
            step(wrapped, 7)
    finally:
        wrapped.close()
    sim = SteeringToWheelVelWrapper(Simulator(map_name="loop", **SMALL))
    try:
        reset(sim)
        step(sim, [0.3, 0.0])
        assert sim.last_action.tolist() == pytest.approx([0.3 / 0.0318 / 27] * 2)
    finally:
        sim.close()


def test_the_robot_may_leave_the_map_as_in_gym_duckietown() -> None:
    # gym-duckietown has no walls at the map's edges (dmxshm's DB18 worlds have): a robot
    # driven out leaves the map (and a step would end its episode at the invalid pose).
    env = Simulator(map_name="loop", **SMALL)
    try:
        env.reset(seed=0)
        width = env.grid_width * env.road_tile_size
        env.world.replace_robots([(width - 0.2, 0.5, 0.0)])  # facing east, near the edge
        for _ in range(60):
            env.update_physics([1.0, 1.0])
        assert env.cur_pos[0] > width + 0.2
        assert not env._valid_pose(*env._pose())
    finally:
        env.close()
