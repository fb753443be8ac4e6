"""Routes through intersections: turns, the lane through an intersection (continuous
across tile borders), route decisions by list and by seed, and who goes first."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dmxshm.world.lanes import Arc, Segment
from dmxshm.world.maps import load_map
from dmxshm.world.routes import (
    TURNS,
    RightOfWay,
    RouteError,
    Router,
    Routes,
    RouteState,
    exit_of,
    parse_route,
    turn_of,
    turn_path,
)
from dmxshm.world.tiles import EDGE_VECTORS, INTERSECTION_KINDS

GRID = load_map("grid")
INTERSECTIONS = [(r, c) for r, row in enumerate(GRID.tiles) for c, t in enumerate(row)
                 if t.kind in INTERSECTION_KINDS]
# Every (cell, entry, turn) the grid's intersections offer.
MOVES = [(cell, entry, turn) for cell in INTERSECTIONS
         for entry in sorted(GRID.tiles[cell[0]][cell[1]].edges) for turn in TURNS
         if exit_of(entry, turn) in GRID.tiles[cell[0]][cell[1]].edges]


def test_turns_and_exits_invert_each_other() -> None:
    for entry in EDGE_VECTORS:
        for turn in TURNS:
            assert turn_of(entry, exit_of(entry, turn)) == turn
        assert turn_of(entry, entry) is None


def test_a_route_is_seed_or_known_turns() -> None:
    assert parse_route("right, left") == ("right", "left")
    with pytest.raises(RouteError, match="turns from left, straight, right"):
        parse_route("left,u-turn")
    with pytest.raises(RouteError):
        parse_route(",")


@pytest.mark.parametrize("entry", sorted(EDGE_VECTORS))
@pytest.mark.parametrize("turn", TURNS)
def test_a_turns_path_runs_from_edge_middle_to_edge_middle_in_the_travel_direction(
        entry: str, turn: str) -> None:
    size = 0.585
    path = turn_path(1.0, 2.0, size, entry, exit_of(entry, turn))
    x0, y0, yaw0 = path.point_at(0.0)
    x1, y1, yaw1 = path.point_at(1.0)
    ex, ey = EDGE_VECTORS[entry]
    xx, xy = EDGE_VECTORS[exit_of(entry, turn)]
    assert (x0, y0) == pytest.approx((1.0 + ex * size / 2, 2.0 + ey * size / 2))
    assert (x1, y1) == pytest.approx((1.0 + xx * size / 2, 2.0 + xy * size / 2))
    # It starts heading in, and ends heading out.
    assert (math.cos(yaw0), math.sin(yaw0)) == pytest.approx((-ex, -ey), abs=1e-9)
    assert (math.cos(yaw1), math.sin(yaw1)) == pytest.approx((xx, xy), abs=1e-9)
    assert isinstance(path, Segment if turn == "straight" else Arc)


def _inside(router: Router, cell: tuple[int, int], entry: str, turn: str) -> None:
    router.states[0] = RouteState(cell, entry, exit_of(entry, turn), turn, inside=True)


@settings(max_examples=150, deadline=None)
@given(move=st.sampled_from(MOVES), d=st.floats(-0.06, 0.06), phi=st.floats(-0.3, 0.3),
       at_exit=st.booleans())
def test_the_lane_pose_is_continuous_across_an_intersections_borders(
        move: tuple[tuple[int, int], str, str], d: float, phi: float, at_exit: bool) -> None:
    """Just outside and just inside an intersection's border, a robot at the same
    offset from its lane and heading has the same lane pose."""
    cell, entry, turn = move
    exit_ = exit_of(entry, turn)
    cx, cy = GRID.tile_center(*cell)
    h, lo, eps = GRID.tile_size_m / 2, GRID.lane_offset_m, 1e-4
    edge = exit_ if at_exit else entry
    ex, ey = EDGE_VECTORS[edge]
    # Travel direction across that border: in by the entry, out by the exit.
    tx, ty = (ex, ey) if at_exit else (-ex, -ey)
    rx, ry = ty, -tx  # to the right of travel
    bx, by = cx + ex * h + rx * (lo - d), cy + ey * h + ry * (lo - d)  # on the border
    yaw = math.atan2(ty, tx) + phi
    poses = {}
    for side in (-1, 1):  # before and after the border, along the travel direction
        x, y = bx + side * eps * tx, by + side * eps * ty
        router = Router(GRID, 1)
        if GRID.cell_of(x, y) == cell:
            _inside(router, cell, entry, turn)
        poses[side] = router.lane(0, x, y, yaw)[0]
    a, b = poses[-1], poses[1]
    assert a.on_road and b.on_road
    assert a.offset_m == pytest.approx(d, abs=1e-3) and b.offset_m == pytest.approx(d, abs=1e-3)
    assert math.remainder(a.heading_err_rad - b.heading_err_rad, 2 * math.pi) == \
        pytest.approx(0.0, abs=1e-3)


@settings(max_examples=150, deadline=None)
@given(move=st.sampled_from(MOVES), f=st.floats(0.0, 1.0), d=st.floats(-0.05, 0.05))
def test_the_lane_pose_follows_the_turn_through_the_intersection(
        move: tuple[tuple[int, int], str, str], f: float, d: float) -> None:
    cell, entry, turn = move
    cx, cy = GRID.tile_center(*cell)
    path = turn_path(cx, cy, GRID.tile_size_m, entry, exit_of(entry, turn))
    x, y, yaw = path.point_at(f)
    lo = GRID.lane_offset_m
    # On the right lane's centre (lo to the right of the centreline), d to its left.
    rx, ry = math.sin(yaw), -math.cos(yaw)
    x, y = x + rx * (lo - d), y + ry * (lo - d)
    router = Router(GRID, 1)
    _inside(router, cell, entry, turn)
    lane, curvature = router.lane(0, x, y, yaw)
    assert lane.on_road
    assert lane.offset_m == pytest.approx(d, abs=1e-6)
    assert lane.heading_err_rad == pytest.approx(0.0, abs=1e-6)
    h = GRID.tile_size_m / 2
    expect = {"straight": 0.0, "left": 1 / (h + lo), "right": -1 / (h - lo)}[turn]
    assert curvature == pytest.approx(expect)


def _drive_through(router: Router, robot: int, cell: tuple[int, int], entry: str) -> str:
    """Put robot ``robot`` on the approach lane to ``cell`` by ``entry``: its turn."""
    cx, cy = GRID.tile_center(*cell)
    ex, ey = EDGE_VECTORS[entry]
    size = GRID.tile_size_m
    tx, ty = -ex, -ey
    x = cx + ex * size * 0.8 + ty * GRID.lane_offset_m
    y = cy + ey * size * 0.8 - tx * GRID.lane_offset_m
    state = router.update(robot, x, y, math.atan2(ty, tx))
    assert state is not None and state.cell == cell and state.entry == entry
    router.update(robot, cx, cy, math.atan2(ty, tx))  # in it
    router.update(robot, x, y, math.atan2(-ty, -tx))  # and out (heading away)
    return state.turn


def test_a_listed_route_is_cycled_and_an_impossible_turn_skipped() -> None:
    four, three = (3, 3), (1, 3)  # the grid's 4-way, and its north 3-way (W, E, S open)
    router = Router(GRID, 1, turns=("left", "right", "straight"))
    assert [_drive_through(router, 0, four, "S") for _ in range(4)] == \
        ["left", "right", "straight", "left"]
    # Entering the north 3-way from the south: left and right only.
    assert _drive_through(router, 0, three, "S") == "right"
    assert _drive_through(router, 0, three, "S") == "left"  # straight skipped
    assert router.taken[0] == {"left": 3, "straight": 1, "right": 2}


def test_turns_drawn_by_the_seed_are_the_same_for_the_same_seed_and_robot() -> None:
    def turns(seed: int, robot: int) -> list[str]:
        router = Router(GRID, 3, seed=seed)
        return [_drive_through(router, robot, (3, 3), "W") for _ in range(12)]

    assert turns(4, 1) == turns(4, 1)
    assert turns(4, 1) != turns(5, 1) or turns(4, 1) != turns(4, 2)
    assert set(turns(4, 1)) == set(TURNS)  # a 4-way offers all three


def test_the_first_to_arrive_goes_first_and_ties_go_to_the_lower_index() -> None:
    cell = (3, 3)
    cx, cy = GRID.tile_center(*cell)
    h, lo = GRID.tile_size_m / 2, GRID.lane_offset_m
    router = Router(GRID, 3, turns=("straight",))
    way = RightOfWay(router)

    def at_stop_line(entry: str) -> tuple[float, float, float]:
        ex, ey = EDGE_VECTORS[entry]
        tx, ty = -ex, -ey
        return (cx + ex * (h + 0.1) + ty * lo, cy + ey * (h + 0.1) - tx * lo,
                math.atan2(ty, tx))

    far = (0.3, 0.3, 0.0)  # on grass, nowhere near
    poses = [at_stop_line("W"), far, far]
    for i, p in enumerate(poses):
        router.update(i, *p)
    assert way.update(0, poses) == [True, True, True]  # alone: it goes
    poses = [at_stop_line("W"), at_stop_line("S"), at_stop_line("E")]
    for i, p in enumerate(poses):
        router.update(i, *p)
    # Robot 0 arrived at step 0; 1 and 2 at step 1 (1 before 2 by index).
    assert way.update(1, poses) == [True, False, False]
    poses[0] = (cx, cy, 0.0)  # robot 0 in the intersection: the others wait
    router.update(0, *poses[0])
    assert way.update(2, poses) == [True, False, False]
    poses[0] = (cx + 2 * h, cy - lo, 0.0)  # out on the east side
    router.update(0, *poses[0])
    assert way.update(3, poses) == [True, True, False]
    assert way.waits == [0, 2, 3]


def _lane_point(cell: tuple[int, int], entry: str, depth_m: float) -> tuple[float, float, float]:
    """A pose on the lane into ``cell`` by ``entry``, ``depth_m`` outside its edge."""
    cx, cy = GRID.tile_center(*cell)
    ex, ey = EDGE_VECTORS[entry]
    tx, ty = -ex, -ey
    h, lo = GRID.tile_size_m / 2, GRID.lane_offset_m
    return (cx + ex * (h + depth_m) + ty * lo, cy + ey * (h + depth_m) - tx * lo,
            math.atan2(ty, tx))


def test_a_robot_close_behind_another_is_held_and_says_by_whom() -> None:
    routes = Routes.of(GRID, 3, 0, ("straight",))
    back = _lane_point((3, 3), "W", 0.45)
    front = _lane_point((3, 3), "W", 0.25)  # 0.2 m ahead: its disc 0.02 m from the front
    routes.see(0, [back, front, (0.3, 0.3, 0.0)])
    assert [g for _, g in routes.route] == [0.0, 1.0, 1.0]
    assert routes.holds[0] == "robot 1 ahead 0.02 m" and routes.holds[1] is None


def test_of_two_robots_each_in_the_others_way_the_lower_index_goes() -> None:
    routes = Routes.of(GRID, 2, 0, ("straight",))
    x, y, _ = _lane_point((3, 3), "W", 0.4)
    routes.see(0, [(x + 0.2, y, math.pi), (x, y, 0.0)])  # nose to nose, 0.08 m apart
    assert [g for _, g in routes.route] == [1.0, 0.0]
    assert routes.holds == [None, "robot 0 ahead 0.08 m"]


def test_a_robot_at_the_stop_line_says_whom_it_waits_for() -> None:
    routes = Routes.of(GRID, 2, 0, ("straight",))
    cx, cy = GRID.tile_center(3, 3)
    routes.see(0, [(cx, cy, 0.0), _lane_point((3, 3), "S", 0.1)])
    assert routes.holds == [None, "waiting at the intersection (robot 0 in it)"]


@pytest.fixture(scope="module")
def pole_map(tmp_path_factory: pytest.TempPathFactory) -> object:
    """A 4-way with a pole 0.18 m south-west of its centre (where duckietown-world's 4way
    map stands its traffic light), in a ring of roads."""
    path = tmp_path_factory.mktemp("maps") / "pole.yaml"
    path.write_text(
        "tiles:\n"
        "  - [curve_left/W, straight/W, 3way_left/W, straight/W, curve_left/N]\n"
        "  - [straight/S, asphalt, straight/N, asphalt, straight/N]\n"
        "  - [3way_left/S, straight/W, 4way, straight/E, 3way_left/N]\n"
        "  - [straight/S, asphalt, straight/S, asphalt, straight/N]\n"
        "  - [curve_left/S, straight/E, 3way_left/E, straight/E, curve_left/E]\n"
        "objects:\n  light:\n    kind: trafficlight\n"
        "    place: {tile: [2, 2], relative: {~SE2Transform: {p: [-0.18, -0.18]}}}\n"
        "    height: 0.4\n"
        "tile_size: 0.585\n")
    return load_map(str(path))


def test_a_lane_through_an_intersection_moves_aside_to_pass_an_object(pole_map: object) -> None:
    router = Router(pole_map, 1)
    four = (2, 2)
    # The right turn from the west runs round the pole's corner: it moves out (left) by
    # the most; the straight lanes beside the pole move left; lanes far from it stay.
    assert router.shift(four, "W", "S") == pytest.approx(0.1)
    assert router.shift(four, "N", "S") == router.shift(four, "W", "E") == pytest.approx(0.06)
    assert router.shift(four, "S", "N") == router.shift(four, "E", "N") == 0.0
    # In the intersection, on the moved line, the robot is on its lane.
    m = pole_map
    cx, cy = m.tile_center(*four)  # type: ignore[attr-defined]
    x = cx - m.lane_offset_m + 0.06  # type: ignore[attr-defined]
    _inside(router, four, "N", "straight")
    router.states[0].shift_m = router.shift(four, "N", "S")  # type: ignore[union-attr]
    lane, _ = router.lane(0, x, cy, -math.pi / 2)
    assert lane.offset_m == pytest.approx(0.0, abs=1e-9) and lane.on_road
    # Half the ramp out of it (the south edge, then 0.125 m on), half way back.
    router.update(0, cx, cy, -math.pi / 2)
    router.update(0, x, cy - m.tile_size_m / 2 - 0.125, -math.pi / 2)  # type: ignore[attr-defined]
    lane, _ = router.lane(0, x, cy - m.tile_size_m / 2 - 0.125, -math.pi / 2)  # type: ignore[attr-defined]
    assert lane.offset_m == pytest.approx(0.03, abs=1e-3)


def test_a_turn_an_object_bars_is_not_offered(tmp_path: Path) -> None:
    path = tmp_path / "barred.yaml"  # a house in the middle of a 4-way
    path.write_text(
        "tiles:\n  - [straight/E, 4way, straight/E]\ntile_size: 0.585\n"
        "objects:\n  - {kind: house, pose: {~SE2Transform: {p: [0.8775, 0.2925]}}, height: 0.3}\n")
    router = Router(load_map(str(path)), 1, turns=("straight",))
    assert router.shift((0, 1), "W", "E") is None
    assert router.shift((0, 1), "W", "N") is None
    assert router.shift((0, 1), "W", "S") is not None  # round the corner, inside the house
    # The route's straight on is barred: the one turn that passes instead.
    assert router._decide(0, (0, 1), "W").turn == "right"
