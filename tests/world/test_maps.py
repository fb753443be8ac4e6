"""Map files: loading, diagnostics of malformed maps, lane geometry, start poses."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest

from dmxshm.errors import DmxError
from dmxshm.world.maps import (
    MapError,
    MapInfo,
    MapNotFoundError,
    bundled_maps,
    load_map,
    map_infos,
    parse_map,
)
from dmxshm.world.starts import MIN_START_SPACING_M
from dmxshm.world.tiles import LANE_OFFSET_M, TILE_SIZE_M

LOOP = json.loads((Path(__file__).parents[2] / "dmxshm/world/data/maps/loop.json").read_text())


@pytest.fixture(scope="module")
def loop():
    return load_map("loop")


@pytest.fixture(scope="module")
def grid():
    return load_map("grid")


def test_bundled_maps_load(loop) -> None:
    assert {"loop", "grid"} <= set(bundled_maps())
    for name in bundled_maps():
        road_map = load_map(name)
        assert road_map.name == name
        assert road_map.tile_size_m == TILE_SIZE_M
    assert (loop.rows, loop.cols) == (5, 6)
    kinds = {t.kind for row in loop.tiles for t in row}
    assert kinds == {"grass", "straight", "curve"}


def test_load_by_path_equals_by_name(tmp_path: Path, loop) -> None:
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(LOOP))
    mine = load_map(path)
    assert mine.tiles == loop.tiles
    assert mine.source == str(path)


def test_missing_map_names_what_exists(tmp_path: Path) -> None:
    with pytest.raises(MapNotFoundError, match="bundled: .*loop") as info:
        load_map("no-such-map")
    assert isinstance(info.value, (FileNotFoundError, DmxError, ValueError))
    with pytest.raises(MapNotFoundError, match="nowhere.json"):
        load_map(tmp_path / "nowhere.json")


def _with(change):
    data = copy.deepcopy(LOOP)
    change(data)
    return data


def _set_cell(r: int, c: int, value: object):
    def change(data: dict) -> None:
        data["tiles"][r][c] = value
    return change


MALFORMED = {
    "wrong format": (_with(lambda d: d.update(format="duckietown")), ["'format'"]),
    "unknown key": (_with(lambda d: d.update(tile_size=1.0)), ["unknown key", "tile_size"]),
    "bad tile size": (_with(lambda d: d.update(tile_size_m=-1)), ["tile_size_m"]),
    "no tiles": (_with(lambda d: d.update(tiles=[])), ["'tiles'"]),
    "ragged row": (_with(lambda d: d["tiles"][2].pop()), ["row 2 has 5 cells"]),
    "unknown kind": (_with(_set_cell(1, 2, "stright/0")), ["row 1, column 2", "'stright'"]),
    "bad rotation": (_with(_set_cell(3, 2, "straight/45")), ["row 3, column 2", "'45'"]),
    "cell not a string": (_with(_set_cell(0, 0, 7)), ["row 0, column 0"]),
    "road into grass": (_with(_set_cell(1, 2, "straight/90")),
                        ["row 1, column 1 (curve/0)", "E edge",
                         "row 1, column 2 (straight/90)", "no road on its W edge"]),
    "road off the map": (_with(lambda d: d["tiles"][0].__setitem__(0, "straight/0")),
                         ["row 0, column 0 (straight/0)", "leaves the map"]),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_map_names_file_and_entry(tmp_path: Path, case: str) -> None:
    data, fragments = MALFORMED[case]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(MapError) as info:
        load_map(path)
    message = str(info.value)
    assert str(path) in message
    for fragment in fragments:
        assert fragment in message
    assert isinstance(info.value, DmxError) and isinstance(info.value, ValueError)


def test_invalid_json_names_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{\n  "format": "dmxshm-map/1",\n  "tiles": [[\n}')
    with pytest.raises(MapError, match=r"broken\.json: invalid JSON at line 4"):
        load_map(path)


def test_document_must_be_an_object() -> None:
    with pytest.raises(MapError, match="JSON object"):
        parse_map([1, 2], source="list.json")


def test_tile_centres_and_cells(loop) -> None:
    # Row 0 is the north edge; column 0 the west edge.
    assert loop.tile_center(4, 0) == pytest.approx((TILE_SIZE_M / 2, TILE_SIZE_M / 2))
    assert loop.cell_of(*loop.tile_center(1, 2)) == (1, 2)
    assert loop.cell_of(-0.1, 0.1) is None
    assert loop.size_m == pytest.approx((6 * TILE_SIZE_M, 5 * TILE_SIZE_M))


def test_lane_pose_on_straight(loop) -> None:
    # Row 3 is the south straight; eastbound traffic keeps to its south half.
    cx, cy = loop.tile_center(3, 2)
    on_lane = loop.lane_pose(cx, cy - LANE_OFFSET_M, 0.0)
    assert on_lane.offset_m == pytest.approx(0.0, abs=1e-12)
    assert on_lane.heading_err_rad == pytest.approx(0.0, abs=1e-12)
    assert on_lane.on_road
    left = loop.lane_pose(cx, cy - LANE_OFFSET_M + 0.05, 0.1)
    assert left.offset_m == pytest.approx(0.05)  # positive: left of the lane centre
    assert left.heading_err_rad == pytest.approx(0.1)  # positive: pointing left
    westbound = loop.lane_pose(cx, cy + LANE_OFFSET_M, math.pi)
    assert westbound.offset_m == pytest.approx(0.0, abs=1e-12)
    wrong_lane = loop.lane_pose(cx, cy + LANE_OFFSET_M, 0.0)
    assert wrong_lane.offset_m == pytest.approx(2 * LANE_OFFSET_M)


def test_lane_pose_on_curve(loop) -> None:
    # The NW curve (row 1, column 1) turns around its SE corner with radius h.
    h = TILE_SIZE_M / 2
    cx, cy = loop.tile_center(1, 1)
    ox, oy = cx + h, cy - h
    a = math.radians(135)
    # Counter-clockwise about the corner (a left turn) the right lane is the
    # outer one; clockwise (a right turn) it is the inner one.
    for radius, heading in ((h + LANE_OFFSET_M, a + math.pi / 2),
                            (h - LANE_OFFSET_M, a - math.pi / 2)):
        pose = loop.lane_pose(ox + radius * math.cos(a), oy + radius * math.sin(a), heading)
        assert pose.offset_m == pytest.approx(0.0, abs=1e-9)
        assert pose.heading_err_rad == pytest.approx(0.0, abs=1e-9)
        assert pose.on_road
        curvature = loop.lane_curvature(ox + radius * math.cos(a), oy + radius * math.sin(a),
                                        heading)
        turn = 1.0 if heading > a else -1.0  # counter-clockwise turns left
        assert curvature == pytest.approx(turn / radius)
    assert loop.lane_curvature(*loop.tile_center(3, 2), 0.0) == 0.0


def test_entering_a_curve_is_measured_against_the_curve(loop) -> None:
    # Coming north up the west straight into the NW curve (a right turn, inner
    # lane). 20 degrees into the curve a robot that has not turned yet is 20
    # degrees left of its lane, not on the straight's extension.
    h = TILE_SIZE_M / 2
    cx, cy = loop.tile_center(1, 1)
    a, r = math.radians(160), h - LANE_OFFSET_M
    pose = loop.lane_pose(cx + h + r * math.cos(a), cy - h + r * math.sin(a), math.pi / 2)
    assert pose.heading_err_rad == pytest.approx(math.radians(20))
    assert pose.offset_m == pytest.approx(0.0, abs=1e-9)
    assert loop.lane_curvature(cx + h + r * math.cos(a), cy - h + r * math.sin(a),
                               math.pi / 2) == pytest.approx(-1 / r)


def test_off_road(loop) -> None:
    inner_grass = loop.lane_pose(*loop.tile_center(2, 2), 0.0)
    assert not inner_grass.on_road
    assert math.isfinite(inner_grass.offset_m)  # still measured against the nearest road
    far = loop.lane_pose(-10.0, -10.0, 0.0)
    assert not far.on_road and math.isnan(far.offset_m) and math.isnan(far.heading_err_rad)
    # The outer corner of a curve tile is asphalt but beyond the white line.
    cx, cy = loop.tile_center(1, 1)
    assert not loop.lane_pose(cx - 0.28, cy + 0.28, 0.0).on_road


def test_lane_pose_at_intersections(grid) -> None:
    cx, cy = grid.tile_center(3, 3)  # the 4-way
    north = grid.lane_pose(cx + LANE_OFFSET_M, cy - 0.1, math.pi / 2)
    assert north.offset_m == pytest.approx(0.0, abs=1e-12) and north.on_road
    east = grid.lane_pose(cx + 0.1, cy - LANE_OFFSET_M, 0.0)
    assert east.offset_m == pytest.approx(0.0, abs=1e-12) and east.on_road


@pytest.mark.parametrize("name", ["loop", "grid"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_start_poses_in_lane_and_apart(name: str, seed: int) -> None:
    road_map = load_map(name)
    poses = road_map.start_poses(8, np.random.default_rng(seed))
    assert len(poses) == 8
    for x, y, yaw in poses:
        pose = road_map.lane_pose(x, y, yaw)
        assert pose.on_road
        assert abs(pose.offset_m) < 1e-9 and abs(pose.heading_err_rad) < 1e-9
    for i, (x, y, _) in enumerate(poses):
        for u, v, _ in poses[:i]:
            assert math.hypot(x - u, y - v) >= MIN_START_SPACING_M


def test_start_poses_deterministic(loop) -> None:
    a = loop.start_poses(5, np.random.default_rng(7))
    b = loop.start_poses(5, np.random.default_rng(7))
    c = loop.start_poses(5, np.random.default_rng(8))
    assert a == b and a != c
    assert loop.start_poses(0, np.random.default_rng(0)) == []


def test_too_many_robots(loop) -> None:
    with pytest.raises(MapError, match="room for 16 robots"):
        loop.start_poses(100, np.random.default_rng(0))
    with pytest.raises(MapError):
        loop.start_poses(-1, np.random.default_rng(0))


@pytest.mark.parametrize("name", bundled_maps())
def test_a_maps_capacity_fits_whatever_the_seed(name: str) -> None:
    m = load_map(name)
    for seed in range(10):
        poses = m.start_poses(m.capacity, np.random.default_rng(seed))
        assert len(poses) == m.capacity
        assert all(np.hypot(a[0] - b[0], a[1] - b[1]) >= MIN_START_SPACING_M - 1e-9
                   for i, a in enumerate(poses) for b in poses[i + 1:])


def test_a_bundled_map_holds_the_most_robots_a_run_may_have() -> None:
    from dmxshm.network.config import MAX_ROBOTS

    assert max(load_map(name).capacity for name in bundled_maps()) >= MAX_ROBOTS


def test_too_many_robots_are_refused_naming_the_capacity() -> None:
    with pytest.raises(MapError, match="room for 16 robots .* not 17"):
        load_map("loop").start_poses(17, np.random.default_rng(0))


def test_map_infos_are_typed_and_write_the_json_names() -> None:
    infos = map_infos()
    assert [m.name for m in infos] == bundled_maps()
    loop = next(m for m in infos if m.name == "loop")
    assert loop == MapInfo(name="loop", cols=6, rows=5, width_m=6 * TILE_SIZE_M,
                           height_m=5 * TILE_SIZE_M, road_tiles=10, capacity=16,
                           description=load_map("loop").description)
    assert loop.to_dict() == {"name": "loop", "cols": 6, "rows": 5, "width_m": loop.width_m,
                              "height_m": loop.height_m, "road_tiles": 10, "capacity": 16,
                              "description": loop.description, "objects": 0}
    assert list(loop.to_dict()) == ["name", "cols", "rows", "width_m", "height_m",
                                    "road_tiles", "capacity", "description", "objects"]
