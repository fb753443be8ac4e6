"""Duckietown's map formats (gym-duckietown's YAML, the Duckiematrix's layered folder)
and objects: parsed maps equal hand-checked expectations; malformed maps are refused
with the file, the line and the field; objects are bodies the robots hit and the time
of flight ranges."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import numpy as np
import pytest
import yaml

from dmxshm.matrix.sensors import TOF_MOUNT_M, TimeOfFlight
from dmxshm.world.dtmaps import gym_tile, layered_tile
from dmxshm.world.maps import MapError, load_map
from dmxshm.world.objects import KINDS, MapObject, ObjectError, parts
from dmxshm.world.tiles import Tile
from dmxshm.world.world import World

# A map of our own in gym-duckietown's format: a 3x3 loop in a floor border, with
# objects placed in each of the format's four ways.
GYM_MAP = textwrap.dedent("""\
    # written for dmxshm's tests
    tile_size: 0.6
    tiles:
    - [floor, floor       , floor     , floor       , floor]
    - [floor, curve_left/W, straight/W, curve_left/N, floor]
    - [floor, straight/S  , grass     , straight/N  , floor]
    - [floor, curve_left/S, straight/E, curve_left/E, floor]
    - [floor, floor       , floor     , floor       , floor]
    objects:
      duckie1:
        kind: duckie
        pos: [2.5, 1.25]
        rotate: 90
        height: 0.07
      cone1:
        kind: cone
        place:
          tile: [3, 2]
          relative:
            ~SE2Transform:
              p: [0.1, -0.05]
              theta_deg: 180
      tag1:
        kind: floor_tag
        pose:
          ~SE2Transform:
            p: [1.0, 2.0]
            theta_deg: 90
        tag:
          ~TagInstance:
            family: 36h11
            size: 0.065
            tag_id: 42
      sign1:
        kind: sign_stop
        attach:
          tile: [1, 1]
          slot: 0
        rotate: 45
      barrier1:
        kind: barrier
        pos: [1.0, 3.0]
        static: false
        optional: true
        scale: 2
    start_tile: [1, 1]
    """)


def _write(tmp_path: Path, text: str, name: str = "m.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_gym_duckietown_map_parses_to_the_hand_checked_tiles_and_objects(
        tmp_path: Path) -> None:
    m = load_map(_write(tmp_path, GYM_MAP))
    assert (m.rows, m.cols, m.tile_size_m) == (5, 5, 0.6)
    # Orientation S, E, N, W: a quarter turn counter-clockwise each; dmxshm's
    # unrotated curve joins E and S.
    assert m.tiles[1][1:4] == (Tile("curve", 0), Tile("straight", 0), Tile("curve", 270))
    assert m.tiles[2][1:4] == (Tile("straight", 90), Tile("grass", 0), Tile("straight", 90))
    assert m.tiles[3][1:4] == (Tile("curve", 90), Tile("straight", 0), Tile("curve", 180))
    assert m.tiles[0][0] == Tile("floor", 0)
    got = {o.name: o for o in m.objects}
    assert list(got) == ["duckie1", "cone1", "tag1", "sign1", "barrier1"]
    expect = {  # name: (kind, x, y, yaw, height)
        # pos: tiles from the west and from the north edge; rotate counter-clockwise.
        "duckie1": ("duckie", 2.5 * 0.6, (5 - 1.25) * 0.6, math.pi / 2, 0.07),
        # place: duckietown-world's tile (i east, j north), metres from its centre.
        "cone1": ("cone", 3.5 * 0.6 + 0.1, 2.5 * 0.6 - 0.05, math.pi, 0.08),
        "tag1": ("floor_tag", 1.0, 2.0, math.pi / 2, 0.001),
        # attach: duckietown-world's slot 0 (0.09, 0.035) of tile (1, 1), its formula.
        "sign1": ("sign_stop", 1.09 * 0.6, 1.035 * 0.6, math.pi / 4, 0.18),
        "barrier1": ("barrier", 0.6, 2 * 0.6, 0.0, 0.16),
    }
    for name, (kind, x, y, yaw, h) in expect.items():
        o = got[name]
        assert (o.kind, o.x_m, o.y_m, o.yaw_rad, o.height_m) == pytest.approx(
            (kind, x, y, yaw, h)), name
    assert got["tag1"].tag_id == 42 and got["duckie1"].tag_id is None
    assert (got["barrier1"].static, got["barrier1"].optional) == (False, True)
    assert (got["duckie1"].static, got["duckie1"].optional) == (True, False)
    assert m.extras == {"start_tile": [1, 1]}


def test_a_list_of_objects_is_named_as_duckietown_world_names_them(tmp_path: Path) -> None:
    text = GYM_MAP.split("objects:")[0] + textwrap.dedent("""\
        objects:
        - kind: cone
          pos: [1.5, 1.5]
        - kind: tree
          pos: [2.5, 2.5]
          height: 0.3
        """)
    m = load_map(_write(tmp_path, text))
    assert [(o.name, o.kind) for o in m.objects] == [("ob00-cone", "cone"), ("ob01-tree", "tree")]


@pytest.mark.parametrize("cell, tile", [
    ("straight/N", Tile("straight", 90)), ("straight/E", Tile("straight", 0)),
    ("curve_left/S", Tile("curve", 90)), ("curve_right/S", Tile("curve", 180)),
    ("curve_right/N", Tile("curve", 0)), ("3way_left/W", Tile("3way", 0)),
    ("3way_left/S", Tile("3way", 90)), ("3way_right/E", Tile("3way", 0)),
    ("3way_right/N", Tile("3way", 90)), ("4way", Tile("4way", 0)),
    ("4way/N", Tile("4way", 0)), ("straight", Tile("straight", 0)),
    ("empty", Tile("floor", 0)), (" asphalt ", Tile("asphalt", 0)),
])
def test_gym_tiles(cell: str, tile: Tile) -> None:
    assert gym_tile(cell) == tile


def test_a_map_without_objects_keeps_the_digest_of_its_tiles(tmp_path: Path) -> None:
    plain = load_map(_write(tmp_path, GYM_MAP.split("objects:")[0]))
    full = load_map(_write(tmp_path, GYM_MAP, "full.yaml"))
    assert plain.objects == () and plain.digest().startswith("(0.6, ((('floor'")
    assert full.digest() != plain.digest()


@pytest.mark.parametrize("change, line, field, words", [
    (("curve_left/N, floor]", "curve_middle/N, floor]"), 5, "tiles[1][3]",
     "unknown tile kind 'curve_middle' in 'curve_middle/N'; known kinds: straight, curve_left"),
    (("straight/S  , grass", "straight/Q  , grass"), 6, "tiles[2][1]",
     "unknown orientation 'Q'"),
    (("kind: cone", "kind: pylon"), 16, "objects.cone1.kind",
     "unknown object kind 'pylon'; known kinds: duckie, cone, barrier"),
    (("pos: [2.5, 1.25]", "pos: [2.5, north]"), 12, "objects.duckie1.pos[1]",
     "must be a number, not 'north'"),
    (("height: 0.07", "height: -1"), 14, "objects.duckie1.height", "must be positive"),
    (("static: false", "static: sometimes"), 43, "objects.barrier1.static",
     "must be true or false"),
    (("tile_size: 0.6", "tile_sise: 0.6"), 2, "tile_sise", "unknown key"),
    (("    rotate: 90\n", "    rotate: 90\n    colour: red\n"), 14,
     "objects.duckie1.colour", "unknown key"),
    (("      slot: 0", "      slot: 9"), 38, "objects.sign1.attach.slot",
     "must be a slot 0 to 7"),
    (("tag_id: 42", "tag_id: 587"), 33, "objects.tag1.tag.~TagInstance.tag_id",
     "tag_id 587 is not a tag36h11 id (0-586)"),
])
def test_a_malformed_gym_map_is_refused_with_its_file_line_and_field(
        tmp_path: Path, change: tuple[str, str], line: int, field: str, words: str) -> None:
    assert change[0] in GYM_MAP
    path = _write(tmp_path, GYM_MAP.replace(change[0], change[1], 1))
    with pytest.raises(MapError) as err:
        load_map(path)
    msg = str(err.value)
    assert msg.startswith(f"map {path}, line {line}: field {field!r}: "), msg
    assert words in msg


def test_a_gym_map_without_a_tile_size_or_with_bad_yaml_is_refused(tmp_path: Path) -> None:
    with pytest.raises(MapError, match="field 'tile_size': missing"):
        load_map(_write(tmp_path, GYM_MAP.replace("tile_size: 0.6\n", "")))
    with pytest.raises(MapError, match=r", line 5: not valid YAML"):
        load_map(_write(tmp_path, GYM_MAP.replace("- [floor, curve_left/W",
                                                  "- [floor, curve_left/W]]", 1)))
    with pytest.raises(MapError, match="row 2, column 2 .*no road on its"):
        load_map(_write(tmp_path, GYM_MAP.replace("grass     ", "straight/E")))


# ----------------------------------------------------------------------------------------
# The layered folder


def _layered(folder: Path, *, metres: bool, tile_size: float = 0.6) -> Path:
    """Our loop as a layered map folder, with one object of each object layer."""
    folder.mkdir()
    unit = tile_size if metres else 1.0
    # (i, j, type, yaw): j from the north edge, yaw quarter turns clockwise.
    tiles = [(0, 0, "curve", math.pi / 2), (1, 0, "straight", math.pi / 2),
             (2, 0, "curve", math.pi), (0, 1, "straight", 0.0), (1, 1, "grass", 0.0),
             (2, 1, "straight", 0.0), (0, 2, "curve", 0.0), (1, 2, "straight", math.pi / 2),
             (2, 2, "curve", 3 * math.pi / 2)]
    frames: dict = {"map_0": {"relative_to": None, "pose": {"x": 0, "y": 0, "yaw": 0}}}
    layer: dict = {}
    for i, j, kind, yaw in tiles:
        frames[f"map_0/tile_{i}_{j}"] = {"relative_to": "map_0", "pose": {
            "x": (i + 0.5) * unit, "y": (j + 0.5) * unit, "z": 0, "roll": 0, "pitch": 0,
            "yaw": yaw}}
        layer[f"map_0/tile_{i}_{j}"] = {"i": i, "j": j, "type": kind}
    # A sign at (1.5, 0.9) tiles, turned a quarter clockwise; a duckie relative to it.
    frames["map_0/sign1"] = {"relative_to": "map_0",
                             "pose": {"x": 1.5 * unit, "y": 0.9 * unit, "yaw": math.pi / 2}}
    frames["map_0/sign1/duckie1"] = {"relative_to": "map_0/sign1",
                                     "pose": {"x": 0.5 * unit, "y": 0.0}}
    frames["map_0/bot1"] = {"relative_to": "map_0", "pose": {"x": 2.5 * unit, "y": 1.5 * unit}}
    frames["map_0/tag5"] = {"relative_to": "map_0", "pose": {"x": 0.5 * unit, "y": 1.5 * unit}}
    docs = {
        "frames": frames, "tiles": layer,
        "tile_maps": {"map_0": {"tile_size": {"x": tile_size, "y": tile_size}}},
        "traffic_signs": {"map_0/sign1": {"type": "stop", "id": 7, "family": "36h11"}},
        "citizens": {"map_0/sign1/duckie1": {"color": "yellow"}},
        "vehicles": {"map_0/bot1": {"configuration": "DB21J", "color": "blue"}},
        "ground_tags": {"map_0/tag5": {"id": 305, "family": "36h11", "size": 0.065}},
    }
    for name, body in docs.items():
        (folder / f"{name}.yaml").write_text(yaml.safe_dump({name: body}))
    return folder


@pytest.mark.parametrize("metres", [False, True], ids=["in-tiles", "in-metres"])
def test_a_layered_folder_parses_to_the_hand_checked_tiles_and_objects(
        tmp_path: Path, metres: bool) -> None:
    m = load_map(_layered(tmp_path / "town", metres=metres))
    assert (m.rows, m.cols, m.tile_size_m, m.name) == (3, 3, 0.6, "town")
    # The same loop as the gym map's middle: clockwise yaws, j from the north.
    assert m.tiles == ((Tile("curve", 0), Tile("straight", 0), Tile("curve", 270)),
                       (Tile("straight", 90), Tile("grass", 0), Tile("straight", 90)),
                       (Tile("curve", 90), Tile("straight", 0), Tile("curve", 180)))
    got = {o.name: o for o in m.objects}
    expect = {  # y = (rows - frame y) tiles; yaw = -(clockwise frame yaw)
        "sign1": ("sign_stop", 1.5 * 0.6, (3 - 0.9) * 0.6, -math.pi / 2, 7),
        # 0.5 tiles along the sign's x, which points south: (1.5, 1.4) tiles.
        "duckie1": ("duckie", 1.5 * 0.6, (3 - 1.4) * 0.6, -math.pi / 2, None),
        "bot1": ("duckiebot", 2.5 * 0.6, 1.5 * 0.6, 0.0, None),
        "tag5": ("floor_tag", 0.5 * 0.6, 1.5 * 0.6, 0.0, 305),
    }
    assert set(got) == set(expect)
    for name, (kind, x, y, yaw, tag) in expect.items():
        o = got[name]
        assert (o.kind, o.x_m, o.y_m, o.yaw_rad, o.tag_id) == pytest.approx(
            (kind, x, y, yaw, tag)), name
    assert got["bot1"].color == "blue"


def test_the_same_loop_in_both_formats_is_the_same_map(tmp_path: Path) -> None:
    gym = load_map(_write(tmp_path, GYM_MAP.split("objects:")[0]))
    layered = load_map(_layered(tmp_path / "town", metres=False))
    inner = tuple(row[1:4] for row in gym.tiles[1:4])
    assert inner == layered.tiles


@pytest.mark.parametrize("edit, words", [
    (lambda d: (d / "tiles.yaml").unlink(), "no tiles.yaml"),
    (lambda d: (d / "traffic_signs.yaml").write_text(
        "traffic_signs:\n  map_0/sign1:\n    type: halt\n"),
     "traffic_signs.yaml, line 3: field 'traffic_signs.map_0/sign1.type': unknown sign type "
     "'halt'; known types:"),
    (lambda d: (d / "traffic_signs.yaml").write_text(
        "traffic_signs:\n  map_0/sign1:\n    type: stop\n    id: 600\n"),
     "traffic_signs.yaml, line 4: field 'traffic_signs.map_0/sign1.id': tag_id 600 is not "
     "a tag36h11 id (0-586)"),
    (lambda d: (d / "citizens.yaml").write_text("citizens:\n  map_0/nowhere: {}\n"),
     "citizens.yaml, line 2: field 'map_0/nowhere': has no frame in frames.yaml"),
    (lambda d: (d / "tiles.yaml").write_text(
        (d / "tiles.yaml").read_text().replace("type: grass", "type: lava")),
     "unknown tile type 'lava'; known types: straight, curve, 3way, 4way"),
])
def test_a_malformed_layered_folder_is_refused_with_its_file_and_field(
        tmp_path: Path, edit, words: str) -> None:
    folder = _layered(tmp_path / "town", metres=False)
    edit(folder)
    with pytest.raises(MapError, match="map .*town") as err:
        load_map(folder)
    assert words in str(err.value)


# ----------------------------------------------------------------------------------------
# Objects in the world


def test_every_kind_builds_a_body_and_an_unknown_kind_lists_the_known_ones() -> None:
    with World("loop", 1, visuals=False) as w:
        for k, kind in enumerate(KINDS):
            w.add_object(kind, 0.3 + 0.1 * k, 0.2)
        assert len(w.object_ids) == len(KINDS) == len(set(w.object_ids))
        with pytest.raises(ObjectError, match="unknown object kind 'pylon'; known kinds: duckie"):
            w.add_object("pylon", 1.0, 1.0)
        with pytest.raises(ObjectError, match="height"):
            w.add_object("cone", 1.0, 1.0, height_m=-0.1)


def test_the_time_of_flight_ranges_a_cone_in_front_of_a_robot() -> None:
    tof = TimeOfFlight()
    with World("loop", 1, visuals=False) as w:
        x, y, yaw = w.start_poses[0]
        assert tof.measure(w.client, w.state()[0]) == tof.max_range_m  # a clear lane
        d = 0.5
        cone = w.add_object("cone", x + d * math.cos(yaw), y + d * math.sin(yaw), height_m=0.3)
        # The ray, at the mount's height, meets the cone's lowest part.
        z_ray = float(w.state()[0]["pos_m"][2]) + TOF_MOUNT_M[2]
        (radius,) = [p.size[0] for p in parts(cone)
                     if abs(p.pos[2] - z_ray) <= p.size[1] / 2 and p.geom == "cylinder"]
        expected = d - TOF_MOUNT_M[0] - radius
        assert tof.measure(w.client, w.state()[0]) == pytest.approx(expected, abs=2e-3)


def test_a_robot_driving_into_a_barrier_stops_against_it() -> None:
    with World("loop", 1) as w:
        x, y, yaw = w.start_poses[0]
        ahead = 0.4
        w.add_object("barrier", x + ahead * math.cos(yaw), y + ahead * math.sin(yaw),
                     yaw + math.pi / 2, 0.08)
        touched, travelled = [], []
        for _ in range(300):  # 3 s at full speed: 1 m free road
            w.apply_wheel_speeds(np.full((1, 2), 20.0))
            w.step()
            p = w.state()[0]["pos_m"]
            travelled.append(math.hypot(p[0] - x, p[1] - y))
            touched.append(w.object_contacts() == [(0, 0)])
        assert any(touched) and touched[-1]
        # The barrier is 0.5 * 0.08 m deep: the robot's centre stops short of it.
        assert max(travelled) < ahead
        assert travelled[-1] == pytest.approx(travelled[-50], abs=0.01)  # stopped


def test_map_objects_are_in_the_world_and_stay_through_reset(tmp_path: Path) -> None:
    m = load_map(_write(tmp_path, GYM_MAP))
    with World(m, 1, visuals=False) as w:
        w.add_object("tree", 0.2, 0.2)
        assert [o.name for o in w.objects] == [o.name for o in m.objects] + ["tree-5"]
        before = list(w.objects)
        w.reset(3)
        assert w.objects == before and len(set(w.object_ids)) == 6
        assert not set(w.object_ids) & set(w.robot_ids)


def test_an_object_is_checked_when_made() -> None:
    with pytest.raises(ObjectError, match="finite"):
        MapObject("a", "cone", math.nan, 0.0)
    assert MapObject("a", "cone", 0.0, 0.0).height_m == 0.08


def test_layered_tile_turns_clockwise() -> None:
    assert layered_tile("curve", 0.0) == Tile("curve", 90)  # joins N and E
    assert layered_tile("3way", math.pi) == Tile("3way", 270)  # N, S and W
    with pytest.raises(ValueError, match="multiple of pi/2"):
        layered_tile("straight", 0.3)


@pytest.mark.parametrize("name", ["loop", "grid", "big-loop", "gym"])
def test_a_map_written_as_a_layered_folder_reads_back_the_same(tmp_path: Path,
                                                               name: str) -> None:
    from dmxshm.duckiematrix.layers import write_folder

    m = load_map(_write(tmp_path, GYM_MAP) if name == "gym" else name)
    write_folder(m, tmp_path / "out")
    back = load_map(tmp_path / "out")
    assert back.tiles == m.tiles and back.tile_size_m == m.tile_size_m
    mine, theirs = (sorted(x.objects, key=lambda o: o.name) for x in (back, m))
    assert [(o.name, o.kind, o.tag_id) for o in mine] == \
        [(o.name, o.kind, o.tag_id) for o in theirs]  # by layer, so in another order
    for a, b in zip(mine, theirs, strict=True):
        assert (a.x_m, a.y_m) == pytest.approx((b.x_m, b.y_m), abs=1e-9)
        assert math.remainder(a.yaw_rad - b.yaw_rad, 2 * math.pi) == pytest.approx(0, abs=1e-9)


def test_the_example_town_reads_the_same_from_both_formats() -> None:
    root = Path(__file__).parents[2] / "examples" / "maps"
    yaml_map, folder = load_map(root / "town.yaml"), load_map(root / "town-layered")
    assert yaml_map.tiles == folder.tiles
    assert sorted((o.name, o.kind, o.tag_id) for o in yaml_map.objects) == \
        sorted((o.name, o.kind, o.tag_id) for o in folder.objects)
    by_name = {o.name: o for o in folder.objects}
    for o in yaml_map.objects:
        b = by_name[o.name]
        assert (b.x_m, b.y_m) == pytest.approx((o.x_m, o.y_m), abs=1e-9)
        if not o.kind.startswith("sign_") and o.kind not in ("duckie", "duckiebot"):
            assert b.height_m == pytest.approx(o.height_m)  # decorations keep theirs
    # Its roads are dmxshm's grid's, in a floor border.
    grid = load_map("grid").tiles
    assert all(a == b or (a.kind, b.kind) == ("floor", "grass")
               for ra, rb in zip(yaml_map.tiles, grid, strict=True)
               for a, b in zip(ra, rb, strict=True))


def test_a_layer_file_that_is_not_a_mapping_is_refused(tmp_path: Path) -> None:
    folder = _layered(tmp_path / "town", metres=False)
    (folder / "citizens.yaml").write_text("- just\n- a list\n")
    with pytest.raises(MapError, match="citizens.yaml.*one mapping named 'citizens'"):
        load_map(folder)
    (folder / "citizens.yaml").write_text("42\n")
    with pytest.raises(MapError, match="one mapping named 'citizens'"):
        load_map(folder)


@pytest.mark.parametrize("edit, words", [
    (lambda f: f.replace("relative_to: map_0/sign1", "relative_to: [map_0]"),
     "relative_to': names ['map_0'], which has no frame"),
    (lambda f: f.replace("    relative_to: map_0/sign1\n", ""),
     "relative_to': missing: only the map's own frame, 'map_0', stands on its own"),
    (lambda f: f.replace("x: 0.5", "x: " + "9" * 400, 1),
     "pose.x': a number written with 400 characters"),
])
def test_malformed_frames_are_refused_not_raised(tmp_path: Path, edit, words: str) -> None:
    folder = _layered(tmp_path / "town", metres=False)
    frames = folder / "frames.yaml"
    text = frames.read_text()
    changed = edit(text)
    assert changed != text
    frames.write_text(changed)
    with pytest.raises(MapError) as err:
        load_map(folder)
    assert words in str(err.value)


def test_an_infinite_slot_and_deep_nesting_are_refused(tmp_path: Path) -> None:
    with pytest.raises(MapError, match="'objects.sign1.attach.slot': .inf is not a finite"):
        load_map(_write(tmp_path, GYM_MAP.replace("slot: 0", "slot: .inf")))
    deep = "tile_size: 0.6\ntiles: " + "[" * 5000 + "]" * 5000 + "\n"
    with pytest.raises(MapError, match="map .*m.yaml"):
        load_map(_write(tmp_path, deep))


def test_no_robot_starts_on_an_object() -> None:
    import numpy as np

    from dmxshm.world.objects import footprint_m

    m = load_map(Path(__file__).parents[2] / "examples" / "maps" / "town.yaml")
    plain = load_map("grid")
    # Cones on lane centres where robots could start.
    cones = tuple(MapObject(f"c{k}", "cone", x, y) for k, (x, y, _) in
                  enumerate(plain.start_poses(6, np.random.default_rng(1))))
    from dmxshm.world.maps import RoadMap

    blocked = RoadMap(plain.tiles, plain.tile_size_m, objects=cones)
    assert blocked.capacity < plain.capacity == m.capacity
    for seed in range(5):
        for x, y, _ in blocked.start_poses(blocked.capacity, np.random.default_rng(seed)):
            assert all(np.hypot(x - c.x_m, y - c.y_m) > footprint_m(c) + 0.15 for c in cones)


def test_a_route_near_a_road_that_leaves_the_map_is_no_intersection(tmp_path: Path) -> None:
    from dmxshm.world.routes import Router

    m = load_map(_write(tmp_path, "tile_size: 0.6\ntiles:\n- [straight/E, straight/E]\n"))
    router = Router(m, 1, turns=("left",))
    for x, yaw in ((1.15, 0.0), (0.05, 3.14159)):  # heading off either end
        assert router.update(0, x, 0.3 - m.lane_offset_m, yaw) is None
