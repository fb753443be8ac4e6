"""Duckietown's two map formats, read directly: gym-duckietown's single YAML file and
the Duckiematrix's layered map folder.

Both become a :class:`~dmxshm.world.maps.RoadMap` (tiles in dmxshm's kinds and
rotations, objects as :class:`~dmxshm.world.objects.MapObject` in dmxshm's world
frame: x east, y north, metres, origin the map's south-west corner, yaw
counter-clockwise from east). A map that cannot be read, or passes one of the limits
of :mod:`dmxshm.world.map_limits`, is refused with a
:class:`~dmxshm.world.maps.MapError` naming the file, the line and the field.

gym-duckietown's YAML (``*.yaml``, as in duckietown-world's ``data/gd1/maps``)
-----------------------------------------------------------------------------

- ``tile_size`` (required): the side of a tile, metres.
- ``tiles``: rows, the first row the map's north edge; each cell ``KIND/ORIENT``
  or ``KIND`` (orientation ``E``), with ``KIND`` one of :data:`GYM_TILE_KINDS` and
  ``ORIENT`` one of ``N``, ``E``, ``S``, ``W``, the direction a robot is expected
  to drive onto the tile. Curves and 3-way tiles turn counter-clockwise by a
  quarter per step of ``S, E, N, W`` (gym-duckietown's ``_get_curve``): at ``S`` a
  ``curve_left`` joins the north and east edges, a ``curve_right`` the north and
  west edges, a ``3way_left`` the north, south and east edges and a ``3way_right``
  the north, south and west edges (duckietown-world's tile templates;
  gym-duckietown 6 draws both 3-way kinds with the left one's, which sends the
  roads of its own ``TTIC_ripltown`` off the map). dmxshm's roads are two-way, so
  ``curve_left`` and ``curve_right`` with the same edges are the same tile.
  ``empty`` and ``calibration_tile`` are drawn as ``floor``. A road may end at the
  map's border (gym-duckietown's ``straight_road``); a robot that drives on off
  it is off the road.
- ``objects``: a mapping of name to object, or a list (named ``obNN-KIND`` as
  duckietown-world names them). Each has a ``kind``
  (:data:`~dmxshm.world.objects.KINDS`) and is placed by the first of ``pos``,
  ``pose``, ``place`` and ``attach`` it has (duckietown-world's ``get_transform``
  takes them in that order):

  - ``pos: [x, y]`` in tiles, ``x`` from the west edge, ``y`` from the north edge
    (``[1.5, 2.5]`` is the middle of the tile in column 1, row 2), with
    ``rotate`` in degrees counter-clockwise, as the format's own maps document
    it (``udem1.yaml``) and gym-duckietown drew them. duckietown-world 6.4's
    ``get_transform`` puts such an object one tile further south and turns it the
    other way; dmxshm follows the documented meaning;
  - ``place: {tile: [i, j], relative: {~SE2Transform: {p: [dx, dy], theta_deg}}}``:
    ``tile`` in duckietown-world's frame (``i`` east, ``j`` north, from the
    south-west tile), ``p`` metres from the tile's centre, ``theta_deg``
    counter-clockwise;
  - ``pose: {~SE2Transform: {p: [x, y], theta_deg}}``: metres in the world frame;
  - ``attach: {tile: [i, j], slot: 0..7}``: a tile's sign slot, by
    duckietown-world's ``get_xy_slot`` and formula, with ``rotate``.

  ``height`` (metres) scales the shape (or ``scale``, times the kind's default
  height; not both); ``static`` (default true; false: the object moves along the
  lane it stands on, :mod:`dmxshm.world.movers`); ``speed`` (dmxshm's own key, m/s,
  a moving object's speed; default by kind); ``optional`` (default false);
  ``tag: {~TagInstance: {tag_id, family, size}}`` gives a sign's or a floor tag's
  AprilTag id.
- ``version``, ``start_tile`` and ``start_pose`` are read and kept
  (:attr:`RoadMap.extras`), not used: dmxshm places robots by the seed.

The Duckiematrix's layered folder
---------------------------------

A folder with ``frames.yaml``, ``tiles.yaml`` and ``tile_maps.yaml`` (required) and
any of the object layers :data:`OBJECT_LAYERS` (``traffic_signs.yaml``,
``citizens.yaml``, ``vehicles.yaml``, ``ground_tags.yaml``, ``watchtowers.yaml``,
``decorations.yaml``), each file one mapping named like its layer, keyed by frame
names (``map_0/tile_3_1``). The frame tree is gym-duckietown's ground plane, as
duckietown-sdk's ``MapInterpreter`` reads it: ``x`` east, ``y`` south from the
north edge; ``relative_to`` chains are composed. Tile ``(i, j)`` has its centre at
``((i + 0.5), (j + 0.5))`` tile sides, written either in tiles (as
:mod:`dmxshm.duckiematrix.layers` serves them to the SDK) or in metres (as
lib-dt-maps writes them): the tiles' frames say which. A tile's ``yaw`` turns its
kind's unrotated roads (``straight`` north-south, ``curve`` north and east, ``3way``
north, south and east) clockwise as seen from above; ``tiles`` entries give
``type`` (``straight``, ``curve``, ``3way``, ``4way``, ``asphalt``, ``grass``,
``floor``) and may give ``i``, ``j``. An object frame's yaw is taken the same way
(clockwise, as the frame's ``y`` points south). Object layers: ``traffic_signs``
(``type`` such as ``stop``, ``id`` the AprilTag, ``family``), ``citizens``
(duckies, ``color``), ``vehicles`` (non-agent Duckiebots, ``color``),
``ground_tags`` (``id``), ``watchtowers`` (drawn as buildings) and ``decorations``
(dmxshm's own layer: ``type`` one of the object kinds, and ``height`` in metres).
``main.yaml`` and other layers are not needed and not read. The layers give no
height for signs, duckies and vehicles: they get their kind's default.
"""

from __future__ import annotations

import math
from pathlib import Path as FsPath
from typing import Any, NoReturn, cast

from dmxshm.world import tag36h11
from dmxshm.world.map_limits import (
    MAX_COORDINATE_M,
    MAX_DEPTH,
    check_angle,
    check_grid,
    check_height,
    check_object_count,
    check_point,
    check_speed,
    check_tile_index,
    check_tile_size,
    finite,
    map_error,
)
from dmxshm.world.map_text import YamlBudget, check_yaml_events, read_map_text
from dmxshm.world.maperror import MapError
from dmxshm.world.objects import DEFAULT_HEIGHT_M, KINDS, SIGN_KINDS, MapObject, ObjectError
from dmxshm.world.tiles import ROTATIONS_DEG, Tile

GYM_TILE_KINDS = ("straight", "curve_left", "curve_right", "3way_left", "3way_right", "4way",
                  "asphalt", "grass", "floor", "empty", "calibration_tile")
"""The tile kinds of gym-duckietown's format that dmxshm reads."""

_ORIENTS = ("S", "E", "N", "W")  # gym-duckietown's directions; each a quarter turn ccw
_GYM_BASE_ROTATION = {"curve_left": 90, "curve_right": 180, "3way_left": 90, "3way_right": 270}
"""dmxshm's rotation of each gym kind at orientation ``S``: dmxshm's unrotated curve
joins E and S (gym's ``curve_left/S`` joins N and E: one quarter on), its 3-way
W, E and S (gym's ``3way_left/S``: N, S and E; ``3way_right/S``: N, S and W)."""

_GYM_KEYS = ("tiles", "tile_size", "objects", "version", "start_tile", "start_pose")
_OBJECT_KEYS = ("kind", "pos", "rotate", "place", "pose", "attach", "height", "scale",
                "static", "optional", "tag", "color", "speed")

OBJECT_LAYERS = ("traffic_signs", "citizens", "vehicles", "ground_tags", "watchtowers",
                 "decorations")
"""The object layers of a layered map folder that dmxshm reads."""

LAYER_TILE_TYPES = ("straight", "curve", "3way", "4way", "asphalt", "grass", "floor")
"""The tile types of the layered format (lib-dt-maps' ``TileType``)."""

LAYER_BASE_EDGES = {"straight": ("N", "S"), "curve": ("N", "E"), "3way": ("N", "S", "E"),
                    "4way": ("N", "E", "S", "W")}
"""The layered format's tiles at yaw 0: the edges their roads leave by."""

CLOCKWISE = ("N", "E", "S", "W")
"""The edges in the order a clockwise quarter turn (the layers' yaw) takes them."""

# duckietown-world's get_xy_slot: a tile's sign slots, from its south-west corner.
_SLOT_TO, _SLOT_TC = 0.09, 0.035
_SLOTS = {0: (_SLOT_TO, _SLOT_TC), 1: (_SLOT_TC, _SLOT_TO), 2: (-_SLOT_TC, _SLOT_TO),
          3: (-_SLOT_TO, _SLOT_TC), 4: (-_SLOT_TO, -_SLOT_TC), 5: (-_SLOT_TC, -_SLOT_TO),
          6: (_SLOT_TC, -_SLOT_TO), 7: (_SLOT_TO, -_SLOT_TC)}

_SIGN_TYPES = {k.removeprefix("sign_").lower(): k for k in SIGN_KINDS}
_SIGN_TYPES.update({"four_way_intersect": "sign_4_way_intersect",
                    "right_t_intersect": "sign_right_T_intersect",
                    "left_t_intersect": "sign_left_T_intersect",
                    "t_intersection": "sign_T_intersect", "t_intersect": "sign_T_intersect",
                    "t_light_ahead": "sign_t_light_ahead"})


class _Dict(dict):
    """A YAML mapping that remembers the line of each key (1-based)."""

    line = 0
    lines: dict[Any, int]


class _List(list):
    """A YAML sequence that remembers the line of each item (1-based)."""

    line = 0
    lines: list[int]


def _base_loader() -> Any:
    import yaml

    # libyaml's parser where PyYAML has it: about ten times the speed of the pure-Python
    # one, which takes seconds over a 10 MB file
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _loader() -> Any:
    import yaml

    class Loader(_base_loader()):  # type: ignore[misc]
        pass

    def mapping(loader: Any, node: Any) -> _Dict:
        d = _Dict(loader.construct_mapping(node, deep=True))
        d.line = node.start_mark.line + 1
        d.lines = {}
        for k, v in node.value:
            d.lines[loader.construct_object(k, deep=True)] = v.start_mark.line + 1
        return d

    def sequence(loader: Any, node: Any) -> _List:
        out = _List(loader.construct_sequence(node, deep=True))
        out.line = node.start_mark.line + 1
        out.lines = [v.start_mark.line + 1 for v in node.value]
        return out

    def include(loader: Any, node: Any) -> str:
        return str(loader.construct_scalar(node))

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, sequence)
    Loader.add_constructor("!include", include)
    return Loader


def read_yaml(path: FsPath, budget: YamlBudget | None = None) -> Any:
    """The document of a YAML file, its mappings and sequences remembering lines.

    The file's size, its nodes, nesting, aliases and numbers are checked against
    :mod:`dmxshm.world.map_limits` before the document is built
    (:func:`~dmxshm.world.map_text.check_yaml_events`); ``budget`` is what the map
    has left of its nodes (a layered folder's files share one).

    Raises:
        MapError: naming the file and the line where it is not valid YAML, or the
            line and the field where it passes a limit.
    """
    import yaml

    text = read_map_text(path)
    try:
        check_yaml_events(yaml.parse(text, Loader=_base_loader()), str(path), budget)
        return yaml.load(text, Loader=_loader())  # noqa: S506 (a SafeLoader subclass)
    except RecursionError:
        raise MapError(f"map {path}: nested too deeply to be a map") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f", line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise MapError(f"map {path}{where}: not valid YAML: {problem}") from exc


class _Where:
    """Names a place in a map file for an error message."""

    def __init__(self, source: str) -> None:
        self.source = source

    def error(self, line: int, field: str, msg: str) -> Exception:
        return map_error(self.source, field, msg, line)


def _line(container: Any, key: Any) -> int:
    if isinstance(container, _Dict):
        return container.lines.get(key, container.line)
    if isinstance(container, _List) and isinstance(key, int) and key < len(container.lines):
        return container.lines[key]
    return getattr(container, "line", 0)


def _number(w: _Where, container: Any, key: Any, field: str, *, positive: bool = False) -> float:
    value = container[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not finite(value):
        text = repr(value) if len(repr(value)) < 40 else repr(value)[:40] + "..."
        raise w.error(_line(container, key), field, f"must be a number, not {text}")
    if positive and not value > 0:
        raise w.error(_line(container, key), field, f"must be positive, not {value!r}")
    return float(value)


def _pair(w: _Where, container: Any, key: Any, field: str) -> tuple[float, float]:
    value = container[key]
    if not isinstance(value, list) or len(value) < 2:
        raise w.error(_line(container, key), field, f"must be a list [x, y], not {value!r}")
    return _number(w, value, 0, field + "[0]"), _number(w, value, 1, field + "[1]")


def gym_tile(cell: str) -> Tile:
    """dmxshm's tile for one gym-duckietown cell (``"curve_left/W"``).

    Raises:
        ValueError: an unknown kind or orientation (the message lists the known ones).

    Example:
        >>> gym_tile("curve_left/W"), gym_tile("straight/N"), gym_tile("4way")
        (Tile(kind='curve', rotation_deg=0), Tile(kind='straight', rotation_deg=90), \
Tile(kind='4way', rotation_deg=0))
    """
    cell = cell.strip()
    if "/" in cell:
        kind, _, orient = (s.strip() for s in cell.partition("/"))
    elif "4" in cell:  # gym-duckietown: any cell with a 4 and no orientation is a 4-way
        kind, orient = "4way", "E"
    else:
        kind, orient = cell, "E"
    if kind not in GYM_TILE_KINDS:
        raise ValueError(f"unknown tile kind {kind!r} in {cell!r}; known kinds: "
                         f"{', '.join(GYM_TILE_KINDS)}")
    if orient not in _ORIENTS:
        raise ValueError(f"unknown orientation {orient!r} in {cell!r}; known: N, E, S, W")
    steps = _ORIENTS.index(orient)
    if kind in ("asphalt", "grass", "floor", "empty", "calibration_tile"):
        return Tile("floor" if kind in ("empty", "calibration_tile") else kind, 0)
    if kind == "4way":
        return Tile("4way", 0)
    if kind == "straight":
        return Tile("straight", 90 if orient in ("N", "S") else 0)
    base = _GYM_BASE_ROTATION[kind]
    return Tile("curve" if kind.startswith("curve") else "3way", (base + 90 * steps) % 360)


def parse_gym(data: Any, source: str) -> tuple[list[list[Tile]], float, list[MapObject],
                                               dict[str, Any]]:
    """Tiles (rows, north first), tile size, objects and the kept extra keys of a
    gym-duckietown map document (:func:`read_yaml`'s result)."""
    w = _Where(source)
    if not isinstance(data, dict):
        raise w.error(0, "(document)", f"the map must be a YAML mapping, not "
                      f"{type(data).__name__}")
    for key in data:
        if key not in _GYM_KEYS:
            raise w.error(_line(data, key), str(key),
                          f"unknown key; a gym-duckietown map has {', '.join(_GYM_KEYS)}")
    if "tile_size" not in data:
        raise w.error(getattr(data, "line", 0), "tile_size",
                      "missing (gym-duckietown requires an explicit tile size, in metres)")
    size = _number(w, data, "tile_size", "tile_size", positive=True)
    check_tile_size(size, w.source, "tile_size", _line(data, "tile_size"))
    rows = data.get("tiles")
    if not isinstance(rows, list) or not rows:
        raise w.error(_line(data, "tiles"), "tiles", "must be a non-empty list of rows")
    check_grid(len(rows), len(rows[0]) if isinstance(rows[0], list) else 1, size, w.source,
               "tiles", _line(data, "tiles"))
    grid: list[list[Tile]] = []
    for r, row in enumerate(rows):
        field = f"tiles[{r}]"
        if not isinstance(row, list) or not row:
            raise w.error(_line(rows, r), field, "must be a non-empty list of cells")
        if len(row) != len(rows[0]):
            raise w.error(_line(rows, r), field, f"has {len(row)} cells, row 0 has "
                          f"{len(rows[0])}; every row needs the same number")
        out = []
        for c, cell in enumerate(row):
            if not isinstance(cell, str):
                raise w.error(_line(row, c), f"{field}[{c}]",
                              f"must be a string like 'straight/N', not {cell!r}")
            try:
                out.append(gym_tile(cell))
            except ValueError as exc:
                raise w.error(_line(row, c), f"{field}[{c}]", str(exc)) from None
        grid.append(out)
    objects = _gym_objects(w, data, len(grid), size)
    extras = {k: _plain(data[k]) for k in ("version", "start_tile", "start_pose") if k in data}
    return grid, size, objects, extras


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _gym_objects(w: _Where, data: Any, rows: int, size: float) -> list[MapObject]:
    raw = data.get("objects")
    if raw is None:
        return []
    if isinstance(raw, (dict, list)):
        check_object_count(len(raw), w.source, "objects", _line(data, "objects"))
    if isinstance(raw, dict):
        named = [(str(name), raw[name], _line(raw, name)) for name in raw]
    elif isinstance(raw, list):
        named = []
        for idx, desc in enumerate(raw):
            kind = desc.get("kind", "object") if isinstance(desc, dict) else "object"
            named.append((f"ob{idx:02d}-{kind}", desc, _line(raw, idx)))
    else:
        raise w.error(_line(data, "objects"), "objects",
                      "must be a mapping of name to object (or a list of objects)")
    return [_gym_object(w, name, desc, line, rows, size) for name, desc, line in named]


def _se2(w: _Where, holder: Any, key: str, field: str) -> tuple[float, float, float]:
    """``(x, y, theta_rad)`` of a ``{~SE2Transform: {p: [x, y], theta_deg: a}}``."""
    value = holder[key]
    inner = value.get("~SE2Transform") if isinstance(value, dict) else None
    if not isinstance(inner, dict):
        raise w.error(_line(holder, key), field,
                      "must be {~SE2Transform: {p: [x, y], theta_deg: angle}}")
    f = field + ".~SE2Transform"
    x, y = _pair(w, inner, "p", f + ".p") if "p" in inner else (0.0, 0.0)
    theta = _angle(w, inner, "theta_deg", f + ".theta_deg") if "theta_deg" in inner else 0.0
    return x, y, math.radians(theta)


def _angle(w: _Where, container: Any, key: Any, field: str) -> float:
    """An angle in degrees, within :data:`~dmxshm.world.map_limits.MAX_ANGLE_DEG`."""
    value = _number(w, container, key, field)
    check_angle(value, w.source, field, _line(container, key))
    return value


def _gym_object(w: _Where, name: str, desc: Any, line: int, rows: int,
                size: float) -> MapObject:
    field = f"objects.{name}"
    if not isinstance(desc, dict):
        raise w.error(line, field, f"must be a mapping with a 'kind', not {desc!r}")
    for key in desc:
        if key not in _OBJECT_KEYS:
            raise w.error(_line(desc, key), f"{field}.{key}",
                          f"unknown key; an object has {', '.join(_OBJECT_KEYS)}")
    kind = desc.get("kind")
    if kind not in KINDS:
        raise w.error(_line(desc, "kind"), f"{field}.kind",
                      f"unknown object kind {kind!r}; known kinds: {', '.join(KINDS)}")
    placements = [k for k in ("pos", "pose", "place", "attach") if k in desc]
    if not placements:  # duckietown-world's order: the first one given wins
        raise w.error(getattr(desc, "line", 0), field,
                      "needs a placement: pos, pose, place or attach")
    rotate = math.radians(_angle(w, desc, "rotate", f"{field}.rotate")) if "rotate" in desc \
        else 0.0
    how = placements[0]
    if how == "pos":
        px, py = _pair(w, desc, "pos", f"{field}.pos")
        x, y, yaw = px * size, (rows - py) * size, rotate
    elif how == "pose":
        x, y, yaw = _se2(w, desc, "pose", f"{field}.pose")
    else:
        spec = desc[how]
        if not isinstance(spec, dict) or "tile" not in spec:
            raise w.error(_line(desc, how), f"{field}.{how}", "must give 'tile: [i, j]'")
        i, j = _pair(w, spec, "tile", f"{field}.{how}.tile")
        if how == "place":
            if "relative" not in spec:
                raise w.error(_line(desc, how), f"{field}.place.relative", "missing")
            dx, dy, yaw = _se2(w, spec, "relative", f"{field}.place.relative")
            x, y = (i + 0.5) * size + dx, (j + 0.5) * size + dy
        else:
            slot = spec.get("slot")
            try:
                sx, sy = _SLOTS[int(cast(Any, slot))]
            except (TypeError, ValueError, KeyError, OverflowError):
                raise w.error(_line(spec, "slot"), f"{field}.attach.slot",
                              f"must be a slot 0 to 7, not {slot!r}") from None
            x, y, yaw = (sx + i) * size, (sy + j) * size, rotate
    check_point(x, y, w.source, f"{field}.{how}", _line(desc, how))
    if "height" in desc and "scale" in desc:
        raise w.error(_line(desc, "scale"), f"{field}.scale",
                      "give height or scale, not both")
    height = 0.0
    if "height" in desc:
        height = _number(w, desc, "height", f"{field}.height", positive=True)
    elif "scale" in desc:
        height = DEFAULT_HEIGHT_M[kind] * _number(w, desc, "scale", f"{field}.scale",
                                                  positive=True)
    if height:
        size_key = "height" if "height" in desc else "scale"
        check_height(height, w.source, f"{field}.{size_key}", _line(desc, size_key))
    flags = {}
    for key, default in (("static", True), ("optional", False)):
        value = desc.get(key, default)
        if not isinstance(value, bool):
            raise w.error(_line(desc, key), f"{field}.{key}", f"must be true or false, not "
                          f"{value!r}")
        flags[key] = value
    tag_id = None
    if "tag" in desc:
        tag = desc["tag"]
        inner = tag.get("~TagInstance") if isinstance(tag, dict) else None
        if not isinstance(inner, dict) or not isinstance(inner.get("tag_id"), int):
            raise w.error(_line(desc, "tag"), f"{field}.tag",
                          "must be {~TagInstance: {tag_id: N, family: ..., size: ...}}")
        tag_id = int(inner["tag_id"])
        _check_tag(w, _line(inner, "tag_id") or _line(desc, "tag"),
                   f"{field}.tag.~TagInstance.tag_id", tag_id)
    color = desc.get("color")
    speed = 0.0
    if "speed" in desc:  # dmxshm's own key: a moving object's speed, m/s
        speed = _number(w, desc, "speed", f"{field}.speed", positive=True)
        check_speed(speed, w.source, f"{field}.speed", _line(desc, "speed"))
        if flags["static"]:
            raise w.error(_line(desc, "speed"), f"{field}.speed",
                          "a static object has no speed: give static: false to move it")
    try:
        return MapObject(name, kind, x, y, yaw, height, static=flags["static"],
                         optional=flags["optional"], tag_id=tag_id,
                         color=str(color) if color is not None else None, speed_m_s=speed)
    except ObjectError as exc:
        raise w.error(line, field, str(exc)) from None


# ----------------------------------------------------------------------------------------
# The layered folder


def layered_tile(kind: str, yaw_rad: float) -> Tile:
    """dmxshm's tile for a layered map's tile ``type`` and frame ``yaw``
    (quarter turns clockwise, as seen from above).

    Example:
        >>> layered_tile("curve", math.pi / 2), layered_tile("straight", 0.0)
        (Tile(kind='curve', rotation_deg=0), Tile(kind='straight', rotation_deg=90))
    """
    if kind not in LAYER_TILE_TYPES:
        raise ValueError(f"unknown tile type {kind!r}; known types: "
                         f"{', '.join(LAYER_TILE_TYPES)}")
    if kind in ("asphalt", "grass", "floor"):
        return Tile(kind, 0)
    turns = round(yaw_rad / (math.pi / 2))
    if abs(yaw_rad - turns * math.pi / 2) > 1e-3:
        raise ValueError(f"a tile's yaw must be a multiple of pi/2, not {yaw_rad!r}")
    edges = {CLOCKWISE[(CLOCKWISE.index(e) + turns) % 4] for e in LAYER_BASE_EDGES[kind]}
    for rot in ROTATIONS_DEG:
        if Tile(kind, rot).edges == edges:
            return Tile(kind, rot)
    raise AssertionError("unreachable: every yaw of a road kind has a dmxshm rotation")


def _layer(folder: FsPath, name: str, required: bool,
           budget: YamlBudget) -> tuple[Any, FsPath]:
    path = folder / f"{name}.yaml"
    if not path.is_file():
        alt = folder / f"{name.replace('_', '')}.yaml"  # duckietown-world writes trafficsigns
        if alt.is_file():
            path = alt
        elif required:
            raise MapError(f"map {folder}: no {name}.yaml; a layered map folder has "
                           "frames.yaml, tiles.yaml and tile_maps.yaml")
        else:
            return _Dict(), path
    doc = read_yaml(path, budget)
    if doc is None:
        return _Dict(), path
    key = None
    if isinstance(doc, dict):
        key = name if name in doc else name.replace("_", "")
    if key is None or key not in doc:
        raise _Where(str(path)).error(getattr(doc, "line", 0), name,
                                      f"the file must hold one mapping named {name!r}")
    layer = doc[key]
    if layer is None:
        return _Dict(), path
    if not isinstance(layer, dict):
        raise _Where(str(path)).error(_line(doc, key), name,
                                      "must be a mapping of frame names to entries")
    return layer, path


def parse_layered(folder: FsPath, budget: YamlBudget | None = None
                  ) -> tuple[list[list[Tile]], float, list[MapObject]]:
    """Tiles (rows, north first), tile size and objects of a layered map folder; its
    files share one ``budget`` of YAML nodes (default: the map limits')."""
    budget = budget if budget is not None else YamlBudget()
    frames, frames_path = _layer(folder, "frames", True, budget)
    tiles, tiles_path = _layer(folder, "tiles", True, budget)
    tile_maps, tm_path = _layer(folder, "tile_maps", True, budget)
    wtm = _Where(str(tm_path))
    if len(tile_maps) != 1:
        raise wtm.error(getattr(tile_maps, "line", 0), "tile_maps",
                        f"must hold exactly one map, not {len(tile_maps)}")
    (map_name,) = tile_maps
    entry = tile_maps[map_name]
    ts = entry.get("tile_size") if isinstance(entry, dict) else None
    if not isinstance(ts, dict) or "x" not in ts:
        raise wtm.error(_line(tile_maps, map_name), f"tile_maps.{map_name}.tile_size",
                        "must be {x: metres, y: metres}")
    size = _number(wtm, ts, "x", f"tile_maps.{map_name}.tile_size.x", positive=True)
    check_tile_size(size, wtm.source, f"tile_maps.{map_name}.tile_size.x", _line(ts, "x"))
    if "y" in ts and abs(_number(wtm, ts, "y", f"tile_maps.{map_name}.tile_size.y") - size) \
            > 1e-9:
        raise wtm.error(_line(ts, "y"), f"tile_maps.{map_name}.tile_size.y",
                        "must equal x: dmxshm's tiles are square")
    # Frames are in tiles or in metres (below): neither puts a frame 1 km away with
    # a coordinate under this.
    poses = _Frames(frames, str(frames_path), str(map_name),
                    limit=MAX_COORDINATE_M / min(size, 1.0))
    wt = _Where(str(tiles_path))
    cells: dict[tuple[int, int], Tile] = {}
    centres = []
    for key in tiles:
        entry = tiles[key]
        field = f"tiles.{key}"
        if not isinstance(entry, dict) or "type" not in entry:
            raise wt.error(_line(tiles, key), field, "must be a mapping with a 'type'")
        x, y, yaw = poses.world(key, _line(tiles, key), str(tiles_path))
        centres.append((key, x, y, yaw, entry))
    # Tile frames sit at tile centres, in tiles or in metres: the tiles' own i and j
    # say which where they are given; else whichever makes every centre a
    # half-integer.
    given = [(x, y, e["i"], e["j"]) for _, x, y, _, e in centres
             if isinstance(e.get("i"), int) and isinstance(e.get("j"), int)]
    if given:
        in_tiles = all(abs(x - (i + 0.5)) < 1e-6 and abs(y - (j + 0.5)) < 1e-6
                       for x, y, i, j in given)
    else:
        in_tiles = all(_half_integer(x) and _half_integer(y) for _, x, y, _, _ in centres)
    scale = 1.0 if in_tiles else 1.0 / size
    for key, x, y, yaw, entry in centres:
        field = f"tiles.{key}"
        i, j = x * scale - 0.5, y * scale - 0.5
        if not (_half_integer(i + 0.5) and _half_integer(j + 0.5)):
            raise wt.error(_line(tiles, key), field,
                           f"its frame ({x}, {y}) is not at a tile centre")
        i, j = round(i), round(j)
        for name, at in (("i", i), ("j", j)):
            if name in entry and entry[name] != at:
                raise wt.error(_line(entry, name), f"{field}.{name}",
                               f"is {entry[name]!r}, its frame puts it at {at}")
        if (i, j) in cells:
            raise wt.error(_line(tiles, key), field, f"a second tile at ({i}, {j})")
        if i < 0 or j < 0:
            raise wt.error(_line(tiles, key), field, f"tile ({i}, {j}) is off the map")
        check_tile_index(i, j, wt.source, field, _line(tiles, key))
        try:
            cells[(i, j)] = layered_tile(str(entry["type"]), yaw)
        except ValueError as exc:
            raise wt.error(_line(entry, "type"), f"{field}.type", str(exc)) from None
    if not cells:
        raise wt.error(getattr(tiles, "line", 0), "tiles", "no tiles")
    cols = max(i for i, _ in cells) + 1
    nrows = max(j for _, j in cells) + 1
    check_grid(nrows, cols, size, wt.source, "tiles", getattr(tiles, "line", 0))
    grid = [[cells.get((i, j), Tile("floor", 0)) for i in range(cols)] for j in range(nrows)]
    height_m = nrows * size
    unit = size if in_tiles else 1.0
    layers = [(name, *_layer(folder, name, False, budget)) for name in OBJECT_LAYERS]
    count = 0
    for layer_name, layer, path in layers:  # before any object is built
        count += len(layer)
        check_object_count(count, str(path), layer_name, getattr(layer, "line", 0))
    objects = []
    for layer_name, layer, path in layers:
        wl = _Where(str(path))
        for key in layer:
            entry = layer[key] if isinstance(layer[key], dict) else _Dict()
            x, y, yaw = poses.world(key, _line(layer, key), str(path))
            kind, tag_id, color = _layer_kind(wl, layer_name, key, entry, _line(layer, key))
            size_m = (_number(wl, entry, "height", f"{layer_name}.{key}.height", positive=True)
                      if layer_name == "decorations" and "height" in entry else 0.0)
            if size_m:
                check_height(size_m, wl.source, f"{layer_name}.{key}.height",
                             _line(entry, "height"))
            check_point(x * unit, height_m - y * unit, wl.source, f"{layer_name}.{key}",
                        _line(layer, key))
            try:
                objects.append(MapObject(
                    str(key).rsplit("/", 1)[-1], kind, x * unit, height_m - y * unit, -yaw,
                    size_m, tag_id=tag_id, color=color))
            except ObjectError as exc:
                raise wl.error(_line(layer, key), f"{layer_name}.{key}", str(exc)) from None
    return grid, size, objects


def _check_tag(w: _Where, line: int, field: str, tag_id: int) -> None:
    """Refuse an AprilTag id outside the family Duckietown prints (tag36h11)."""
    try:
        tag36h11.check_id(tag_id)
    except ValueError as exc:
        raise w.error(line, field, str(exc)) from None


def _half_integer(v: float) -> bool:
    return abs(v - 0.5 - round(v - 0.5)) < 1e-6


def _layer_kind(w: _Where, layer: str, key: str, entry: Any,
                line: int) -> tuple[str, int | None, str | None]:
    field = f"{layer}.{key}"
    tag = entry.get("id")
    tag_id = tag if isinstance(tag, int) and not isinstance(tag, bool) else None
    if tag_id is not None and layer in ("traffic_signs", "ground_tags"):
        _check_tag(w, _line(entry, "id") or line, f"{field}.id", tag_id)
    color = entry.get("color")
    color = str(color) if color else None
    if layer == "traffic_signs":
        t = str(entry.get("type", ""))
        kind = t if t in SIGN_KINDS else _SIGN_TYPES.get(t.lower())
        if kind is None:
            raise w.error(_line(entry, "type") or line, f"{field}.type",
                          f"unknown sign type {t!r}; known types: "
                          f"{', '.join(sorted(set(_SIGN_TYPES)))}")
        return kind, tag_id, None
    if layer == "citizens":
        return "duckie", None, color
    if layer == "vehicles":
        return "duckiebot", None, color
    if layer == "ground_tags":
        return "floor_tag", tag_id, None
    if layer == "watchtowers":
        return "building", None, None
    t = str(entry.get("type", ""))
    if t not in KINDS:
        raise w.error(_line(entry, "type") or line, f"{field}.type",
                      f"unknown object kind {t!r}; known kinds: {', '.join(KINDS)}")
    return t, tag_id, color


class _Frames:
    """The frame tree of a layered map: world poses by composing ``relative_to``.

    A chain is followed by a loop, not by recursion, and is at most
    :data:`~dmxshm.world.map_limits.MAX_DEPTH` frames long; every frame lies within
    ``limit`` (in the frames' own units) of the root.
    """

    def __init__(self, frames: Any, source: str, root: str | None = None,
                 limit: float = MAX_COORDINATE_M) -> None:
        self.frames = frames
        self.root = root
        self.limit = limit
        self.w = _Where(source)
        self.cache: dict[str, tuple[float, float, float]] = {}
        self.depth: dict[str, int] = {}  # each resolved frame's chain length to the root

    def world(self, key: str, line: int, user: str) -> tuple[float, float, float]:
        """``(x, y, yaw)`` of frame ``key`` in the map's root frame."""
        if key not in self.frames:
            raise _Where(user).error(line, str(key), "has no frame in frames.yaml")
        return self._resolve(key)

    def _resolve(self, key: str) -> tuple[float, float, float]:
        chain: list[tuple[str, float, float, float, Any]] = []  # key first, its root last
        seen: set[str] = set()
        k = key
        while k not in self.cache:
            if k in seen:
                raise self.w.error(_line(self.frames, k), f"frames.{k}.relative_to",
                                   "the frames' relative_to chain loops")
            if len(chain) == MAX_DEPTH:
                self._too_deep(key)
            seen.add(k)
            local = self._local(k)
            chain.append((k, *local))
            if local[3] is None:
                break
            k = local[3]
        # The chain's depth whatever order frames are resolved in: a resolved parent's
        # own depth counts (before, a chain resolved root first passed at any length).
        base = self.depth.get(k, 0) if k in self.cache else 0
        if base + len(chain) > MAX_DEPTH:
            self._too_deep(key)
        for n, (k, x, y, yaw, parent) in enumerate(reversed(chain)):
            self.depth[k] = base + n + 1
            if parent is None:
                out = (0.0, 0.0, 0.0)  # the map's root: everything is measured from it
            else:
                px, py, pyaw = self.cache[parent]
                if self.frames[parent].get("relative_to") is None:
                    px, py, pyaw = 0.0, 0.0, 0.0
                # The frames' y points south, their yaw turns clockwise from above: a
                # frame-plane rotation all the same.
                c, s = math.cos(pyaw), math.sin(pyaw)
                out = (px + c * x - s * y, py + s * x + c * y, pyaw + yaw)
                entry = self.frames[k]
                check_point(out[0], out[1], self.w.source, f"frames.{k}.pose",
                            _line(entry, "pose") or _line(self.frames, k), self.limit,
                            "(tiles or m)")
            self.cache[k] = out
        return self.cache[key]

    def _too_deep(self, key: str) -> NoReturn:
        raise self.w.error(_line(self.frames, key), f"frames.{key}.relative_to",
                           f"its relative_to chain is longer than {MAX_DEPTH} frames")

    def _local(self, key: str) -> tuple[float, float, float, str | None]:
        """Frame ``key``'s own ``x, y, yaw`` and the frame it is relative to."""
        entry = self.frames[key]
        field = f"frames.{key}"
        if not isinstance(entry, dict):
            raise self.w.error(_line(self.frames, key), field, "must be a mapping")
        pose = entry.get("pose") or _Dict()
        if not isinstance(pose, dict):
            raise self.w.error(_line(entry, "pose"), f"{field}.pose", "must be a mapping")
        x, y, yaw = (_number(self.w, pose, k, f"{field}.pose.{k}") if k in pose else 0.0
                     for k in ("x", "y", "yaw"))
        if "yaw" in pose:
            check_angle(math.degrees(yaw), self.w.source, f"{field}.pose.yaw",
                        _line(pose, "yaw"))
        parent = entry.get("relative_to")
        if parent is None:
            if self.root is not None and key != self.root:
                raise self.w.error(_line(entry, "pose") or _line(self.frames, key),
                                   f"{field}.relative_to", f"missing: only the map's own "
                                   f"frame, {self.root!r}, stands on its own")
        elif not isinstance(parent, str) or parent not in self.frames:
            raise self.w.error(_line(entry, "relative_to"), f"{field}.relative_to",
                               f"names {parent!r}, which has no frame")
        return x, y, yaw, parent
