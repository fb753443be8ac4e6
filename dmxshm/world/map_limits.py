"""The limits a map file is held to, in one place, and the checks that hold it there.

A map is a file from outside: anything dmxshm builds from it (a grid of tiles, a
pybullet body per object, a frame tree, a copy of a YAML document) is bounded by
these limits, and a file past one is refused with a
:class:`~dmxshm.world.maperror.MapError` naming the file, the field, and the line
where the format gives one, before the thing it would make is made. All three
formats (:mod:`dmxshm.world.maps`' JSON, gym-duckietown's YAML and the layered
folder of :mod:`dmxshm.world.dtmaps`) use them; docs/maps.md ("Limits") lists them
for users. The text-level checks (nesting, YAML aliases, numbers) run before a
document is built: :mod:`dmxshm.world.map_text`.

Example:
    >>> check_tile_size(0.585, "m.yaml", "tile_size", 2)
    >>> check_tile_size(1e300, "m.yaml", "tile_size", 2)
    Traceback (most recent call last):
    ...
    dmxshm.world.maperror.MapError: map m.yaml, line 2: field 'tile_size': must be \
between 0.1 and 10 m (a tile's side), not 1e+300
"""

from __future__ import annotations

import math

from dmxshm.world.maperror import MapError

MAX_FILE_BYTES = 10_000_000
"""A map file (each file of a layered folder) holds at most 10 MB, checked by its size
before it is read."""

MAX_TILES_PER_SIDE = 200
"""A map has at most 200 rows and 200 columns of tiles."""

MAX_OBJECTS = 1_000
"""A map holds at most 1,000 objects (each is a pybullet body)."""

MAX_COORDINATE_M = 1_000.0
"""Every coordinate a map gives is within 1 km of its origin: the map's own width
and height, each object's x and y (and its height), each layered frame's x and y."""

MIN_TILE_SIZE_M = 0.1
"""A tile's side is at least 0.1 m (Duckietown's is 0.585 m)."""

MAX_TILE_SIZE_M = 10.0
"""A tile's side is at most 10 m."""

MAX_SPEED_M_S = 10.0
"""A moving object's speed is at most 10 m/s (a Duckiebot's top speed is about 1 m/s):
its path along the lanes is laid out as far as it has driven."""

MAX_ANGLE_DEG = 3_600.0
"""An angle a map gives (a yaw, ``rotate``, ``theta_deg``) is within ten turns
either way."""

MAX_DEPTH = 64
"""Nesting (lists and mappings within each other) and a layered map's
``relative_to`` chains are at most 64 deep."""

MAX_YAML_NODES = 100_000
"""A YAML map holds at most 100,000 nodes (scalars, lists and mappings, as written;
a layered folder's files together): a gym-duckietown map of 200 x 200 tiles and
1,000 objects fits (about 85,000 nodes), a layered map of some 4,000 tiles (20 to 26
nodes a tile in ``frames.yaml`` and ``tiles.yaml``)."""

MAX_ALIAS_NODES = 10_000
"""YAML aliases (``*name``) bring in at most 10,000 nodes in all, counted as they
would be copied."""

MAX_JSON_CONTAINERS = 10_000
"""A JSON map holds at most 10,000 lists and objects (one a row of tiles, and the
document)."""

MAX_NUMBER_CHARS = 64
"""A number is written in at most 64 characters; Infinity and NaN are refused."""


def map_error(source: str, field: str, msg: str, line: int = 0) -> MapError:
    """The error for ``field`` of map file ``source`` (at ``line``, 1-based, when
    the format gives one).

    Example:
        >>> print(map_error("m.json", "tiles", "too many rows"))
        map m.json: field 'tiles': too many rows
    """
    at = f", line {line}" if line else ""
    return MapError(f"map {source}{at}: field {field!r}: {msg}")


def check_tile_size(size_m: float, source: str, field: str, line: int = 0) -> None:
    """Refuse a tile side outside :data:`MIN_TILE_SIZE_M` .. :data:`MAX_TILE_SIZE_M`."""
    if not MIN_TILE_SIZE_M <= size_m <= MAX_TILE_SIZE_M:
        raise map_error(source, field, f"must be between {MIN_TILE_SIZE_M:g} and "
                        f"{MAX_TILE_SIZE_M:g} m (a tile's side), not {size_m!r}", line)


def check_grid(rows: int, cols: int, size_m: float, source: str, field: str,
               line: int = 0) -> None:
    """Refuse a grid of more than :data:`MAX_TILES_PER_SIDE` a side, or wider or taller
    than :data:`MAX_COORDINATE_M`."""
    for count, what in ((rows, "rows"), (cols, "columns")):
        if count > MAX_TILES_PER_SIDE:
            raise map_error(source, field, f"{count} {what} of tiles; a map has at most "
                            f"{MAX_TILES_PER_SIDE} a side", line)
    width_m, height_m = cols * size_m, rows * size_m
    if max(width_m, height_m) > MAX_COORDINATE_M:
        raise map_error(source, field, f"the map would be {width_m:g} x {height_m:g} m; a "
                        f"map fits within {MAX_COORDINATE_M:g} m a side (fewer or smaller "
                        "tiles)", line)


def check_tile_index(i: int, j: int, source: str, field: str, line: int = 0) -> None:
    """Refuse a tile at column ``i`` or row ``j`` of :data:`MAX_TILES_PER_SIDE` or more."""
    if max(i, j) >= MAX_TILES_PER_SIDE:
        raise map_error(source, field, f"tile ({i}, {j}) is beyond the {MAX_TILES_PER_SIDE} "
                        "tiles a side a map may have", line)


def check_object_count(count: int, source: str, field: str, line: int = 0) -> None:
    """Refuse more than :data:`MAX_OBJECTS` objects."""
    if count > MAX_OBJECTS:
        raise map_error(source, field, f"{count} objects; a map holds at most "
                        f"{MAX_OBJECTS}", line)


def check_point(x_m: float, y_m: float, source: str, field: str, line: int = 0,
                limit: float = MAX_COORDINATE_M, unit: str = "m") -> None:
    """Refuse a point further than ``limit`` (:data:`MAX_COORDINATE_M`) from the origin
    along either axis, or not finite."""
    if not (abs(x_m) <= limit and abs(y_m) <= limit):
        raise map_error(source, field, f"({x_m:g}, {y_m:g}) {unit} is more than "
                        f"{MAX_COORDINATE_M:g} m from the map's origin", line)


def check_height(height_m: float, source: str, field: str, line: int = 0) -> None:
    """Refuse an object taller than :data:`MAX_COORDINATE_M`."""
    if not height_m <= MAX_COORDINATE_M:
        raise map_error(source, field, f"{height_m:g} m is taller than "
                        f"{MAX_COORDINATE_M:g} m", line)


def check_speed(speed_m_s: float, source: str, field: str, line: int = 0) -> None:
    """Refuse a moving object faster than :data:`MAX_SPEED_M_S`."""
    if not speed_m_s <= MAX_SPEED_M_S:
        raise map_error(source, field, f"{speed_m_s:g} m/s is faster than "
                        f"{MAX_SPEED_M_S:g} m/s", line)


def check_angle(angle_deg: float, source: str, field: str, line: int = 0) -> None:
    """Refuse an angle beyond :data:`MAX_ANGLE_DEG` either way."""
    if not abs(angle_deg) <= MAX_ANGLE_DEG:
        raise map_error(source, field, f"{angle_deg:g} degrees is more than "
                        f"{MAX_ANGLE_DEG / 360:g} turns", line)


def finite(value: float) -> bool:
    """Whether ``value`` (an int or a float) is a finite float: an int too big for a
    float is not."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False
