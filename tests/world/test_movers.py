"""Objects that move along their lane: on the road, continuous, the same wherever asked."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dmxshm._pybullet import pb
from dmxshm.matrix.sensors import TimeOfFlight
from dmxshm.world.maperror import MapError
from dmxshm.world.maps import load_map
from dmxshm.world.movers import Mover, speed_of
from dmxshm.world.objects import MapObject, ObjectError
from dmxshm.world.tiles import INTERSECTION_KINDS
from dmxshm.world.world import World

# A road across the map, open at both ends (the border): a mover turns round there.
STRIP = textwrap.dedent("""\
    tile_size: 0.585
    tiles:
    - [grass, grass, grass]
    - [straight/E, straight/E, straight/E]
    - [grass, grass, grass]
    objects:
      bot:
        kind: duckiebot
        pos: [1.5, 1.5]
        rotate: 0
        static: false
        speed: 0.2
    """)

DT = 0.05


def _walk(m: object, mover: Mover, seconds: float) -> list[tuple[float, float, float]]:
    return [mover.pose(k * DT) for k in range(int(seconds / DT) + 1)]


def _check_on_the_lane(m, poses: list[tuple[float, float, float]], speed: float) -> None:  # noqa: ANN001
    for (x0, y0, _), (x1, y1, yaw) in zip(poses, poses[1:], strict=False):
        # Continuous: never further than its speed allows (arc length >= chord).
        assert math.hypot(x1 - x0, y1 - y0) <= speed * DT + 1e-9
        cell = m.cell_of(x1, y1)
        assert cell is not None and m.tiles[cell[0]][cell[1]].is_road, (x1, y1)
        if m.tiles[cell[0]][cell[1]].kind not in INTERSECTION_KINDS:
            lane = m.lane_pose(x1, y1, yaw)
            # In its right lane and along it (a U-turn at a road's end crosses lanes).
            assert lane.on_road


@pytest.mark.parametrize("name", ["loop", "grid", "examples/maps/town.yaml"])
def test_a_mover_stays_on_the_road_continuously_through_every_tile(name: str) -> None:
    m = load_map(name)
    starts = m.start_poses(4, np.random.default_rng(1))
    intersections = 0
    for i, (x, y, yaw) in enumerate(starts):
        mover = Mover(m, MapObject(f"o{i}", "duckiebot", x, y, yaw, static=False), i, 3)
        poses = _walk(m, mover, 120.0)
        _check_on_the_lane(m, poses, mover.speed_m_s)
        assert poses[0][:2] == pytest.approx((x, y), abs=1e-9)  # a start pose is on its lane
        in_lane = [abs(m.lane_pose(*p).offset_m) < 1e-6 for p in poses
                   if m.tiles[m.cell_of(*p[:2])[0]][m.cell_of(*p[:2])[1]].kind
                   not in INTERSECTION_KINDS]
        assert sum(in_lane) / len(in_lane) > 0.99  # on the right lane's centre
        intersections += mover._visits
    assert (intersections > 0) == (name != "loop")


def test_a_mover_turns_round_where_its_road_ends_and_stays_on_the_map(tmp_path: Path) -> None:
    path = tmp_path / "strip.yaml"
    path.write_text(STRIP)
    m = load_map(path)
    (obj,) = m.objects
    assert (obj.static, obj.speed_m_s, speed_of(obj)) == (False, 0.2, 0.2)
    mover = Mover(m, obj, 0, 0)
    poses = _walk(m, mover, 60.0)  # 12 m: back and forth along 1.755 m, twice over
    _check_on_the_lane(m, poses, 0.2)
    xs = [p[0] for p in poses]
    assert min(xs) > 0.0 and max(xs) < 3 * 0.585
    headings = {round(math.cos(p[2])) for p in poses}
    assert headings == {-1, 0, 1}  # east, turning, west


@settings(max_examples=30, deadline=None)
@given(times=st.lists(st.floats(0.0, 300.0), min_size=2, max_size=12))
def test_a_movers_pose_depends_on_the_time_only_not_on_what_was_asked_before(
        times: list[float]) -> None:
    m = load_map("grid")
    (x, y, yaw), = m.start_poses(1, np.random.default_rng(0))
    obj = MapObject("bot", "duckiebot", x, y, yaw, static=False)
    fresh = [Mover(m, obj, 0, 5).pose(t) for t in times]
    one = Mover(m, obj, 0, 5)
    assert [one.pose(t) for t in times] == fresh


def test_a_movers_turns_are_drawn_by_the_seed() -> None:
    m = load_map("grid")
    (x, y, yaw), = m.start_poses(1, np.random.default_rng(0))
    obj = MapObject("bot", "duckiebot", x, y, yaw, static=False)
    ends = {seed: Mover(m, obj, 0, seed).pose(300.0) for seed in range(4)}
    assert ends[0] == Mover(m, obj, 0, 0).pose(300.0)
    assert len(set(ends.values())) > 1  # 45 m of grid: the seeds' turns part ways


def test_moving_objects_off_the_road_or_static_with_a_speed_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "off.yaml"
    path.write_text(STRIP.replace("pos: [1.5, 1.5]", "pos: [1.5, 0.5]"))
    with pytest.raises(MapError, match=r"off.yaml: objects: object 'bot' \(duckiebot\) moves "
                                       r"along a lane, so it must stand on a road tile"):
        load_map(path)
    path.write_text(STRIP.replace("static: false", "static: true"))
    with pytest.raises(MapError, match=r"line 12: field .objects.bot.speed.*a static object has no "
                                       r"speed"):
        load_map(path)
    with pytest.raises(ObjectError, match="cannot move"):
        MapObject("t", "floor_tag", 0.0, 0.0, static=False)
    with World("loop", 0, visuals=False) as w, pytest.raises(ObjectError, match="road tile"):
        w.add_object("duckiebot", 0.1, 0.1, static=False)


def _body_xy(w: World, i: int) -> tuple[float, float]:
    (x, y, _), _ = pb.getBasePositionAndOrientation(w.object_ids[i], physicsClientId=w.client)
    return x, y


def test_a_world_moves_its_objects_with_the_clock_and_a_mirror_with_the_states_time() -> None:
    with World("loop", 1) as w, World("loop", 1) as mirror:
        x, y, yaw = w.start_poses[0]
        ahead = 0.6
        for world in (w, mirror):
            world.add_object("duckiebot", x + ahead * math.cos(yaw), y + ahead * math.sin(yaw),
                             yaw, static=False)
        mover = w.movers[0]
        start = _body_xy(w, 0)
        tof = TimeOfFlight()
        ranges = []
        for _ in range(60):  # 2 s at 30 Hz: it drives away from the robot at rest
            w.step()
            ranges.append(tof.measure(w.client, w.state()[0]))
        assert _body_xy(w, 0) == pytest.approx(mover.pose(w.sim_time_s)[:2], abs=1e-9)
        assert math.dist(_body_xy(w, 0), start) == pytest.approx(2.0 * 0.15, abs=1e-6)
        assert ranges[-1] > ranges[0] + 0.25  # the time of flight sees it go
        # A world that mirrors the states, told their time, shows the object there too.
        mirror.set_state(w.state(), w.sim_time_s)
        assert _body_xy(mirror, 0) == pytest.approx(_body_xy(w, 0), abs=1e-12)
        w.replace_robots(w.start_poses)  # the clock back to 0: so are the movers
        assert _body_xy(w, 0) == pytest.approx(start, abs=1e-12)


def test_a_mover_runs_into_a_robot_standing_in_its_lane() -> None:
    with World("loop", 1) as w:
        x, y, yaw = w.start_poses[0]
        behind = 0.4
        w.add_object("duckiebot", x - behind * math.cos(yaw), y - behind * math.sin(yaw),
                     yaw, static=False, speed_m_s=0.3)
        hit = None
        for k in range(90):
            w.step()
            if w.object_contacts() == [(0, 0)]:
                hit = k
                break
        # It reaches the robot once it covered the gap between their bodies.
        assert hit is not None and 0.3 * (hit + 1) * w.dt_s < behind
