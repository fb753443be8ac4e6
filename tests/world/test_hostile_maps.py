"""Hostile map files (issue 42): each is refused with a MapError that names the file and
the field (and the line where the format gives one), before the parser builds what the
file asks for; hypothesis-drawn garbage is refused the same way or reads as a map
within the limits (dmxshm/world/map_limits.py). Counts are asserted, not durations."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dmxshm.cli import cli
from dmxshm.world.dtmaps import parse_layered
from dmxshm.world.map_limits import (
    MAX_ALIAS_NODES,
    MAX_COORDINATE_M,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_JSON_CONTAINERS,
    MAX_OBJECTS,
    MAX_SPEED_M_S,
    MAX_TILE_SIZE_M,
    MAX_TILES_PER_SIDE,
    MAX_YAML_NODES,
    MIN_TILE_SIZE_M,
)
from dmxshm.world.map_text import YamlBudget
from dmxshm.world.maps import MapError, RoadMap, load_map

CLI_TIMEOUT_S = 60  # one `dmxshm maps` in a fresh interpreter, on a loaded machine
FUZZ = settings(max_examples=50, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])

LOOP_ROWS = [["curve/0", "curve/270"], ["curve/90", "curve/180"]]
GYM_HEAD = ("tile_size: 0.585\ntiles:\n- [curve_left/W, curve_left/N]\n"
            "- [curve_left/S, curve_left/E]\n")
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # writes 5,000 frames in a blink


def _json_map(path: Path, **fields: object) -> Path:
    doc = {"format": "dmxshm-map/1", "tiles": LOOP_ROWS, **fields}
    path.write_text(json.dumps(doc))  # writes Infinity and NaN as JavaScript does
    return path


def _refused(path: Path, *words: str) -> str:
    """The message of the MapError loading ``path`` raises; it names the file and each
    of ``words``."""
    with pytest.raises(MapError) as err:
        load_map(path)
    msg = str(err.value)
    assert f"map {path}" in msg or f"map {path.parent}" in msg, msg
    for w in words:
        assert w in msg, msg
    return msg


def _layered(folder: Path, frames: dict, tiles: dict, tile_size: float = 0.585,
             **layers: dict) -> Path:
    """A layered map folder of the given frames, tiles and object layers."""
    folder.mkdir()
    docs = {"frames": {"map_0": {"relative_to": None, "pose": {"x": 0, "y": 0}}, **frames},
            "tiles": tiles, "tile_maps": {"map_0": {"tile_size": {"x": tile_size}}}, **layers}
    for name, body in docs.items():
        (folder / f"{name}.yaml").write_text(yaml.dump({name: body}, Dumper=DUMPER,
                                                       width=10**9))
    return folder


def _one_tile(i: float, j: float) -> tuple[dict, dict]:
    key = "map_0/tile"
    return ({key: {"relative_to": "map_0", "pose": {"x": i, "y": j}}},
            {key: {"type": "4way"}})


# ----------------------------------------------------------------------------------------
# The audit's cases, one by one


def test_nested_aliases_are_refused_before_they_are_copied(tmp_path: Path) -> None:
    # 517 bytes that expand to a billion leaves: nine levels of nine aliases.
    lines = ['  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"  {name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    path = tmp_path / "laughs.yaml"
    path.write_text(GYM_HEAD + "version:\n" + "\n".join(lines) + "\n")
    msg = _refused(path, f"aliases expand to more than {MAX_ALIAS_NODES} nodes", "field 'version.")
    assert ", line " in msg


def test_a_row_repeated_by_aliases_is_refused(tmp_path: Path) -> None:
    row = "&r [" + ", ".join(["grass"] * 10_000) + "]"
    path = tmp_path / "wide.yaml"
    path.write_text(f"tile_size: 0.585\ntiles:\n- {row}\n" + "- *r\n" * 9_999)
    _refused(path, "aliases expand to more than", "field 'tiles[1]'", "line 4")


def test_an_alias_to_its_own_anchor_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "loop.yaml"
    path.write_text(GYM_HEAD + "start_pose: &p [1, *p]\n")
    _refused(path, "the alias *p names no anchor closed before it", "'start_pose[1]'", "line 5")


def test_a_layered_tile_three_million_tiles_away_is_refused(tmp_path: Path) -> None:
    folder = _layered(tmp_path / "far", *_one_tile(3_000_000.5, 3_000_000.5))
    _refused(folder, "frames.yaml", "field 'frames.map_0/tile.pose'",
             f"more than {MAX_COORDINATE_M:g} m from the map's origin")


def test_a_layered_tile_past_the_tiles_a_side_is_refused(tmp_path: Path) -> None:
    folder = _layered(tmp_path / "wide", *_one_tile(MAX_TILES_PER_SIDE + 0.5, 0.5))
    _refused(folder, "tiles.yaml", "field 'tiles.map_0/tile'",
             f"beyond the {MAX_TILES_PER_SIDE} tiles a side")


def test_a_long_relative_to_chain_is_refused(tmp_path: Path) -> None:
    frames = {f"f{k}": {"relative_to": f"f{k - 1}" if k else "map_0", "pose": {"x": 0.0}}
              for k in range(5_000)}
    frames["map_0/tile"] = {"relative_to": "f4999", "pose": {"x": 0.5, "y": 0.5}}
    folder = _layered(tmp_path / "chain", frames, {"map_0/tile": {"type": "4way"}})
    _refused(folder, "field 'frames.map_0/tile.relative_to'",
             f"its relative_to chain is longer than {MAX_DEPTH} frames")


def test_a_long_chain_resolved_root_first_is_refused_all_the_same(tmp_path: Path) -> None:
    # Duckies on every frame of a 100-frame chain, in order from its root: each frame's
    # parent is resolved before it, yet the chain is as long.
    frames, tiles = _one_tile(0.5, 0.5)
    frames.update({f"f{k}": {"relative_to": f"f{k - 1}" if k else "map_0",
                             "pose": {"x": 0.0}} for k in range(100)})
    duckies = {f"map_0/d{k}": {"color": "yellow"} for k in range(100)}
    frames.update({f"map_0/d{k}": {"relative_to": f"f{k}", "pose": {"x": 0.5, "y": 0.5}}
                   for k in range(100)})
    folder = _layered(tmp_path / "rootfirst", frames, tiles, citizens=duckies)
    _refused(folder, f"its relative_to chain is longer than {MAX_DEPTH} frames")


def test_a_json_map_of_a_thousand_tiles_a_side_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    path.write_text(json.dumps({"format": "dmxshm-map/1", "tiles": [["grass"] * 1000] * 1000}))
    _refused(path, "field 'tiles'", f"1000 rows of tiles; a map has at most {MAX_TILES_PER_SIDE}")


@pytest.mark.parametrize("size", [1e300, 1e-300, 0.05, MAX_TILE_SIZE_M * 1.01])
def test_a_tile_size_out_of_range_is_refused_in_every_format(tmp_path: Path,
                                                              size: float) -> None:
    words = f"must be between {MIN_TILE_SIZE_M:g} and {MAX_TILE_SIZE_M:g} m"
    _refused(_json_map(tmp_path / "m.json", tile_size_m=size), "field 'tile_size_m'", words)
    gym = tmp_path / "m.yaml"
    gym.write_text(GYM_HEAD.replace("0.585", f"{size:.6e}"))  # 1.000000e+300: a YAML float
    _refused(gym, "field 'tile_size'", "line 1", words)
    folder = _layered(tmp_path / "layered", *_one_tile(0.5, 0.5), tile_size=size)
    _refused(folder, "tile_maps.yaml", "field 'tile_maps.map_0.tile_size.x'", words)


def test_a_grid_wider_than_a_kilometre_is_refused(tmp_path: Path) -> None:
    path = _json_map(tmp_path / "m.json", tile_size_m=MAX_TILE_SIZE_M,
                     tiles=[["grass"] * MAX_TILES_PER_SIDE])
    _refused(path, "field 'tiles'", f"a map fits within {MAX_COORDINATE_M:g} m a side")


@pytest.mark.parametrize("count", [MAX_OBJECTS + 1, 100_000])
def test_too_many_gym_objects_are_refused(tmp_path: Path, count: int) -> None:
    path = tmp_path / "crowd.yaml"
    path.write_text(GYM_HEAD + "objects:\n" + "- {kind: duckie, pos: [1, 1]}\n" * count)
    if count * 7 > MAX_YAML_NODES:  # the file is refused by its nodes, before its objects
        _refused(path, f"more than {MAX_YAML_NODES} nodes", "field 'objects[")
    else:
        _refused(path, "field 'objects'", "line 6", f"{count} objects; a map holds at most "
                 f"{MAX_OBJECTS}")


def test_too_many_layered_objects_are_refused(tmp_path: Path) -> None:
    frames, tiles = _one_tile(0.5, 0.5)
    duckies = {f"map_0/d{k}": {"color": "yellow"} for k in range(MAX_OBJECTS)}
    frames.update({k: {"relative_to": "map_0", "pose": {"x": 0.5, "y": 0.5}} for k in duckies})
    folder = _layered(tmp_path / "crowd", frames, tiles, citizens=duckies,
                      vehicles={"map_0/d0": {"color": "blue"}})
    _refused(folder, "vehicles.yaml", "field 'vehicles'", f"{MAX_OBJECTS + 1} objects")


@pytest.mark.parametrize("where, text, words", [
    ("pos", "pos: [2000, 1]", "field 'objects.o.pos'"),
    ("pose", "pose: {~SE2Transform: {p: [1, -1.0e+200]}}", "field 'objects.o.pose'"),
    ("place", "place: {tile: [1.0e+308, 0], relative: {~SE2Transform: {p: [1.0e+308, 0]}}}",
     "field 'objects.o.place'"),
])
def test_a_gym_object_further_than_a_kilometre_is_refused(tmp_path: Path, where: str, text: str,
                                                          words: str) -> None:
    path = tmp_path / "far.yaml"
    path.write_text(GYM_HEAD + f"objects:\n  o: {{kind: cone, {text}}}\n")
    _refused(path, words, "line 6", f"more than {MAX_COORDINATE_M:g} m from the map's origin")


@pytest.mark.parametrize("text, words", [
    ("rotate: 1.0e+300", "field 'objects.o.rotate'"),
    ("height: 5000", "field 'objects.o.height'"),
    ("scale: 1.0e+300", "field 'objects.o.scale'"),
    ("static: false, speed: 1.0e+300", "field 'objects.o.speed'"),  # its path: 1e300 m
])
def test_absurd_object_angles_and_heights_are_refused(tmp_path: Path, text: str,
                                                      words: str) -> None:
    path = tmp_path / "odd.yaml"
    path.write_text(GYM_HEAD + f"objects:\n  o: {{kind: cone, pos: [1, 1], {text}}}\n")
    _refused(path, words, "line 6")


def test_a_layered_folders_files_share_one_node_limit(tmp_path: Path) -> None:
    frames, tiles = _one_tile(0.5, 0.5)  # each file under the budget, the two over it
    frames["map_0/tile"]["unused"] = [0] * 50
    tiles["map_0/tile"]["unused"] = [0] * 50
    folder = _layered(tmp_path / "heavy", frames, tiles)
    with pytest.raises(MapError, match=r"tiles.yaml, line \d+: field 'tiles.map_0/tile.unused\["):
        parse_layered(folder, YamlBudget(node_limit=100))
    assert parse_layered(folder, YamlBudget(node_limit=160))[0]


def test_a_layered_object_further_than_a_kilometre_is_refused(tmp_path: Path) -> None:
    frames, tiles = _one_tile(0.5, 0.5)  # frames in tiles of 2 m: 600 tiles are 1.2 km
    frames["map_0/d"] = {"relative_to": "map_0", "pose": {"x": 600.0, "y": 0.5}}
    folder = _layered(tmp_path / "far", frames, tiles, tile_size=2.0,
                      citizens={"map_0/d": {}})
    _refused(folder, "citizens.yaml", "field 'citizens.map_0/d'", "from the map's origin")


@pytest.mark.timeout(30)  # before: the text check alone ran for hours on this file
def test_an_unterminated_string_of_escaped_quotes_is_refused_at_once(tmp_path: Path) -> None:
    # A quote, then 200,000 escaped quotes and no closing one: a string pattern that
    # needs its closing quote retries from every quote to the line's end (quadratic).
    path = tmp_path / "quotes.json"
    path.write_text('{"format": "dmxshm-map/1", "description": "' + '\\"' * 200_000)
    with pytest.raises(MapError):
        load_map(str(path))


def test_deeply_nested_json_is_refused_before_it_is_decoded(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"format": "dmxshm-map/1",\n "tiles": ' + "[" * 5_000 + "]" * 5_000 + "}")
    _refused(path, "field '(document)'", "line 2", f"nested more than {MAX_DEPTH} deep")
    path.write_text("[" + "[]," * MAX_JSON_CONTAINERS + "[]]")
    _refused(path, f"{MAX_JSON_CONTAINERS + 2} lists and objects")
    # Nesting is the structure's: brackets (and escaped quotes) in strings are not.
    path = _json_map(tmp_path / "m.json", description='[{"\\"' * 10_000)
    assert load_map(path).description.startswith('[{"\\"[')


@pytest.mark.parametrize("block", [False, True], ids=["flow", "block"])
def test_deeply_nested_yaml_is_refused(tmp_path: Path, block: bool) -> None:
    path = tmp_path / "deep.yaml"
    depth = MAX_DEPTH + 5
    if block:
        nested = "".join(f"{' ' * (k + 1)}k{k}:\n" for k in range(depth)) + " " * (depth + 1) \
            + "x: 1\n"
    else:
        nested = "[" * depth + "]" * depth + "\n"
    path.write_text(GYM_HEAD + "version:" + ("\n" if block else " ") + nested)
    _refused(path, f"nested more than {MAX_DEPTH} deep", "field 'version")


@pytest.mark.parametrize("value, words", [
    ("Infinity", "not Infinity (not a finite number)"),
    ("-Infinity", "not -Infinity (not a finite number)"),
    ("NaN", "not NaN (not a finite number)"), ("1e999", "not 1e999 (not a finite number)"),
    ("9" * 5_000, "not a number written with 5000 characters"),
    ("0." + "5" * 5_000, "not a number written with 5002 characters"),
])
def test_non_finite_and_absurdly_long_json_numbers_are_refused(tmp_path: Path, value: str,
                                                               words: str) -> None:
    path = tmp_path / "m.json"
    path.write_text('{"format": "dmxshm-map/1", "tile_size_m": ' + value + ', "tiles": '
                    + json.dumps(LOOP_ROWS) + "}")
    msg = _refused(path, f"'tile_size_m' must be a positive number, {words}")
    assert len(msg) < 400  # the number is described, not copied
    path.write_text(json.dumps({"format": "dmxshm-map/1", "tiles": [["grass", 0]]})
                    .replace("0]", value + "]"))
    _refused(path, "row 0, column 1: a cell must be a string", words)


@pytest.mark.parametrize("value, words", [
    (".inf", ".inf is not a finite number"), ("-.Inf", "is not a finite number"),
    (".NaN", ".NaN is not a finite number"), ("1.0e+999", "is not a finite number"),
    ("9" * 5_000, "a number written with 5000 characters"),
])
def test_non_finite_and_absurdly_long_yaml_numbers_are_refused(tmp_path: Path, value: str,
                                                               words: str) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(GYM_HEAD.replace("0.585", value))
    _refused(path, "line 1", "field 'tile_size'", words)
    path.write_text(GYM_HEAD + f"start_pose: [1, {value}]\n")  # a field dmxshm keeps, unused
    _refused(path, "line 5", "field 'start_pose[1]'", words)
    frames, tiles = _one_tile(0.5, 0.5)
    folder = _layered(tmp_path / "layered", frames, tiles)
    (folder / "frames.yaml").write_text((folder / "frames.yaml").read_text()
                                        .replace("y: 0.5", f"y: {value}"))
    _refused(folder, "frames.yaml", "field 'frames.map_0/tile.pose.y'", words)


def test_a_file_over_the_size_limit_is_refused_by_its_size(tmp_path: Path) -> None:
    for name in ("big.json", "big.yaml"):
        path = tmp_path / name
        with path.open("wb") as f:
            f.truncate(MAX_FILE_BYTES + 1)  # sparse: nothing is written, or need be read
        _refused(path, "field '(file)'", f"{MAX_FILE_BYTES + 1} bytes; a map file holds at most")


# ----------------------------------------------------------------------------------------
# Garbage drawn by hypothesis: refused naming the file, or a map within the limits


def _within_limits(m: RoadMap) -> None:
    assert MIN_TILE_SIZE_M <= m.tile_size_m <= MAX_TILE_SIZE_M
    assert m.rows <= MAX_TILES_PER_SIDE and m.cols <= MAX_TILES_PER_SIDE
    assert max(m.size_m) <= MAX_COORDINATE_M and len(m.objects) <= MAX_OBJECTS
    for o in m.objects:
        assert abs(o.x_m) <= MAX_COORDINATE_M and abs(o.y_m) <= MAX_COORDINATE_M
        assert math.isfinite(o.yaw_rad) and o.height_m <= MAX_COORDINATE_M
        assert o.speed_m_s <= MAX_SPEED_M_S


def _load_or_refuse(path: Path) -> None:
    try:
        m = load_map(path)
    except MapError as exc:
        assert f"map {path}" in str(exc) or f"map {path.parent}" in str(exc), str(exc)
    else:
        _within_limits(m)


_NUMBERS = st.one_of(st.floats(), st.integers(min_value=-10**80, max_value=10**80),
                     st.sampled_from([0.1, 0.585, 10, 1e300, -1.0]))
_JSON = st.recursive(st.none() | st.booleans() | _NUMBERS | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(st.text(max_size=5), inner, max_size=4),
                     max_leaves=20)


@FUZZ
@given(size=_NUMBERS | _JSON, rows=st.integers(1, 3), cols=st.integers(1, 3),
       cell=st.sampled_from(["grass", "straight/0", "curve/90", "4way", "bogus"]) | _JSON,
       extra=st.dictionaries(st.sampled_from(["name", "description", "format", "x"]), _JSON,
                             max_size=2))
def test_drawn_json_maps_are_refused_or_within_limits(tmp_path: Path, size: object, rows: int,
                                                      cols: int, cell: object,
                                                      extra: dict) -> None:
    doc = {"format": "dmxshm-map/1", "tile_size_m": size,
           "tiles": [["grass"] * cols for _ in range(rows)], **extra}
    doc["tiles"][0][0] = cell
    path = tmp_path / "drawn.json"
    path.write_text(json.dumps(doc))
    _load_or_refuse(path)


_TOKENS = [".inf", "-.inf", ".nan", "1.0e+999", "9" * 5_000, "1.0e+300", "-1", "0", "~", "*a",
           "&a x", "[", "}", "!!binary AAAA", "!!python/object:os.system x", "? [1, 2]",
           "{a: 1, a: 2}", "3000000.5", "!!int '12'", "1:30", "0x1F", "'x'", "[*a, *a]",
           "!include other.yaml"]


_EDITS = st.lists(st.tuples(st.integers(0, 80), st.booleans(),
                            st.sampled_from(_TOKENS) | st.text(max_size=12)),
                  min_size=1, max_size=3)


@FUZZ
@example(edits=[(1, True, "9" * 5_000)])  # tile_size: a ValueError from int() once
@example(edits=[(11, True, "[1.0e+300, 1]")])  # a duckie 1e300 m away: once accepted
@given(edits=_EDITS)
def test_drawn_yaml_maps_are_refused_or_within_limits(
        tmp_path: Path, edits: list[tuple[int, bool, str]]) -> None:
    from tests.world.test_dtmaps import GYM_MAP

    lines = GYM_MAP.splitlines()
    for k, replace, token in edits:
        k %= len(lines)
        if replace and ":" in lines[k]:  # a value replaced
            lines[k] = f"{lines[k].split(':', 1)[0]}: {token}"
        else:  # or a line inserted
            lines.insert(k, token)
    path = tmp_path / "drawn.yaml"
    path.write_text("\n".join(lines) + "\n")
    _load_or_refuse(path)


@FUZZ
@example(raw=b"[" * 5_000, suffix=".json")  # once a RecursionError
@example(raw=b"&a [*a, " * 10 + b"]" * 10, suffix=".yaml")
@given(raw=st.binary(max_size=200) | st.text("[]{}&*a:, -\n").map(str.encode),
       suffix=st.sampled_from([".json", ".yaml"]))
def test_drawn_bytes_are_refused(tmp_path: Path, raw: bytes, suffix: str) -> None:
    path = tmp_path / f"bytes{suffix}"
    path.write_bytes(raw)
    _load_or_refuse(path)


# ----------------------------------------------------------------------------------------
# The command line: a refusal is exit 2, before anything starts


def test_dmxshm_maps_and_run_refuse_a_hostile_map_with_exit_2(tmp_path: Path) -> None:
    path = _json_map(tmp_path / "inf.json")
    path.write_text(path.read_text().replace('"tiles"', '"tile_size_m": Infinity, "tiles"'))
    for args in (["maps", str(path)], ["run", "--map", str(path), "--steps", "1"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 2, (args, result.output)
        assert "'tile_size_m' must be a positive number, not Infinity" in result.output, (
            args, result.output)


@pytest.mark.timeout(CLI_TIMEOUT_S)
def test_dmxshm_maps_refuses_nested_aliases_in_a_fresh_process(tmp_path: Path) -> None:
    path = tmp_path / "laughs.yaml"
    path.write_text(GYM_HEAD + textwrap.dedent("""\
        version:
          a: &a [x, x, x, x, x, x, x, x, x, x]
          b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
          c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
          d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
          e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
        """))
    done = subprocess.run([sys.executable, "-m", "dmxshm.cli", "maps", str(path)],
                          capture_output=True, text=True, timeout=CLI_TIMEOUT_S)
    assert done.returncode == 2, done.stderr
    assert "field 'version.d[" in done.stderr and "aliases expand" in done.stderr, done.stderr
