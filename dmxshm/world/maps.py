"""Road maps: the file formats, loading, lane geometry and start poses.

Formats
-------

:func:`load_map` reads three formats:

- dmxshm's own JSON (``*.json``, below; the bundled maps);
- gym-duckietown's single YAML file (``*.yaml``/``*.yml``, as duckietown-world's
  ``data/gd1/maps`` are written), with its objects;
- the Duckiematrix's layered map folder (``frames.yaml``, ``tiles.yaml``,
  ``tile_maps.yaml`` and object layers), with its objects.

The two Duckietown formats and how dmxshm reads them are in
:mod:`dmxshm.world.dtmaps`; objects in :mod:`dmxshm.world.objects`. All three are
held to the limits of :mod:`dmxshm.world.map_limits` (10 MB a file, 200 x 200
tiles, 1,000 objects, 1 km, ...), checked before what a file asks for is built.

dmxshm's JSON
-------------

A map is a JSON file (``.json``)::

    {
      "format": "dmxshm-map/1",
      "name": "loop",
      "description": "a closed loop of straights and curves",
      "tile_size_m": 0.585,
      "tiles": [
        ["grass", "grass",    "grass",      "grass"],
        ["grass", "curve/0",  "curve/270",  "grass"],
        ["grass", "curve/90", "curve/180",  "grass"],
        ["grass", "grass",    "grass",      "grass"]
      ]
    }

- ``format`` (required) must be ``"dmxshm-map/1"``.
- ``tiles`` (required) is a list of rows, **north first**: the first row is
  the top of the map as drawn. Every row has the same number of cells.
- Each cell is ``"KIND"`` or ``"KIND/ROTATION"``: ``KIND`` is one of
  ``grass``, ``asphalt``, ``floor``, ``straight``, ``curve``, ``3way``, ``4way``;
  ``ROTATION`` is ``0``, ``90``, ``180`` or ``270`` degrees, counter-clockwise
  (default 0). Unrotated, a ``straight`` runs west-east, a ``curve``
  connects the east and south edges, a ``3way`` connects west, east and
  south, a ``4way`` all four (see :mod:`dmxshm.world.tiles`).
- ``tile_size_m`` (optional, default 0.585), ``name`` and ``description``
  (optional strings). Any other key is an error, so a typo cannot pass
  silently.
- Every road must connect: a road leaving a tile through an edge must enter
  the neighbouring tile through the facing edge, and no road may leave the
  map.

Tiles (unrotated; rotations turn them counter-clockwise):

============  ==========  ==================================================
kind          connects    drawn as
============  ==========  ==================================================
``grass``     --          green, not drivable
``asphalt``   --          grey, no markings, not a road (``on_road`` false)
``straight``  W, E        white edge lines, dashed yellow centre line
``curve``     E, S        quarter turn around the SE corner, same markings
``3way``      W, E, S     white line along N, red stop lines at W, E, S
``4way``      all four    red stop lines at each entrance
============  ==========  ==================================================

Roads are two-way with Duckietown's markings (tile 0.585 m, white lines
0.048 m, yellow 0.024 m, lanes 0.2325 m) and traffic keeps right: the
right lane's centre is 0.128 m right of the road centreline.
:meth:`RoadMap.lane_pose` gives a robot's lateral offset from its right-lane
centre (m, positive to the left), heading error (rad, positive to the left)
and whether it is on the road; the lane is the one of the travel direction
closest to the robot's heading. :meth:`RoadMap.lane_curvature` gives the
lane's curvature there, :meth:`RoadMap.start_poses` spaced-out start poses.

World coordinates: x points east, y north, z up, in metres; the origin is
the south-west corner of the map. The tile in row ``r`` (0-based, from the
top) and column ``c`` (0-based, from the left) has its centre at
``x = (c + 0.5) * size``, ``y = (rows - 1 - r + 0.5) * size``. Errors name
the file and the offending cell as ``row r, column c`` (0-based).

Bundled maps live in ``dmxshm/world/data/maps/``; :func:`load_map` takes
their name (``"loop"``) or a path to a user map.

Example:
    >>> m = load_map("loop")
    >>> (m.rows, m.cols, m.tile_size_m)
    (5, 6, 0.585)
    >>> pose = m.lane_pose(*m.start_poses(1, np.random.default_rng(0))[0])
    >>> abs(pose.offset_m) < 1e-9, abs(pose.heading_err_rad) < 1e-9, pose.on_road
    (True, True, True)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path as FsPath
from typing import Any

import numpy as np

from dmxshm.world.lanes import LanePose, Path, lane_pose_among
from dmxshm.world.map_limits import check_grid, check_tile_size
from dmxshm.world.map_text import loads_json, read_map_text
from dmxshm.world.maperror import MapError, MapNotFoundError
from dmxshm.world.movers import Mover
from dmxshm.world.objects import MapObject, ObjectError, footprint_m
from dmxshm.world.starts import (
    MIN_START_SPACING_M,
    lane_candidates,
    place,
    place_in_order,
)
from dmxshm.world.tiles import (
    EDGE_VECTORS,
    INTERSECTION_KINDS,
    KINDS,
    ROTATIONS_DEG,
    TILE_SIZE_M,
    Tile,
    lane_offset_m,
    opposite_edge,
    tile_paths,
)

FORMAT = "dmxshm-map/1"
"""The value of the ``format`` key this module reads."""

MAPS_DIR = FsPath(__file__).parent / "data" / "maps"
"""Where the bundled maps are installed."""

_KEYS = frozenset({"format", "name", "description", "tile_size_m", "tiles"})

ROBOT_CLEARANCE_M = 0.15
"""How far from an object's footprint a robot's start pose must be (its own reach
from its axle is 0.12 m)."""


def bundled_maps() -> list[str]:
    """Names of the maps shipped with dmxshm.

    Example:
        >>> "loop" in bundled_maps()
        True
    """
    return sorted(p.stem for p in (*MAPS_DIR.glob("*.json"), *MAPS_DIR.glob("*.yaml")))


@dataclass(frozen=True)
class MapInfo:
    """What ``dmxshm maps`` says of a bundled map.

    Attributes:
        name: its name (``--map NAME``).
        cols, rows: its size in tiles.
        width_m, height_m: its size in metres.
        road_tiles: tiles with road on them.
        capacity: how many robots always fit on it (:attr:`RoadMap.capacity`).
        description: what it is, from its file.
        objects: how many objects it holds.
    """

    name: str
    cols: int
    rows: int
    width_m: float
    height_m: float
    road_tiles: int
    capacity: int
    description: str
    objects: int = 0

    def to_dict(self) -> dict[str, Any]:
        """``dmxshm maps --json``'s object for this map."""
        return asdict(self)


def map_infos(maps: list[str] | None = None) -> list[MapInfo]:
    """Name, size, road tiles, objects, capacity and description of every bundled map,
    or of ``maps`` (names or paths, as :func:`load_map` takes them).

    Example:
        >>> [(m.name, m.capacity) for m in map_infos()]
        [('big-loop', 84), ('grid', 28), ('loop', 16), ('town', 28)]
    """
    out = []
    for name in bundled_maps() if maps is None else maps:
        m = load_map(name)
        width_m, height_m = m.size_m
        out.append(MapInfo(name=name, cols=len(m.tiles[0]), rows=len(m.tiles),
                           width_m=width_m, height_m=height_m,
                           road_tiles=sum(t.is_road for row in m.tiles for t in row),
                           capacity=m.capacity, description=m.description,
                           objects=len(m.objects)))
    return out


def load_map(name_or_path: str | FsPath) -> RoadMap:
    """Load a bundled map by name, or a user map: a ``.json`` file in dmxshm's format,
    a ``.yaml`` file in gym-duckietown's, or a folder in the Duckiematrix's layered
    format.

    Args:
        name_or_path: a bundled map name (see :func:`bundled_maps`) or a path.

    Returns:
        The parsed :class:`RoadMap`.

    Raises:
        MapNotFoundError: no such bundled map, file or folder.
        MapError: the file is not valid or not a valid map; the message names the
            file, and the line and the field where the format has them.
    """
    text = str(name_or_path)
    path = FsPath(text)
    if path.is_dir():
        return _load_layered(path)
    if not path.is_file():
        bundled = MAPS_DIR / f"{text}.json"
        if not bundled.is_file():  # a bundled map in gym-duckietown's format (town)
            bundled = MAPS_DIR / f"{text}.yaml"
        if "/" in text or text.endswith((".json", ".yaml", ".yml")) or not bundled.is_file():
            raise MapNotFoundError(
                f"no map {text!r}: not a file or folder, and not a bundled map "
                f"(bundled: {', '.join(bundled_maps())}); pass a bundled name, a .json or "
                "gym-duckietown .yaml map file, or a Duckiematrix map folder (docs/maps.md)"
            )
        path = bundled
    if path.suffix in (".yaml", ".yml"):
        return _load_gym(path)
    return parse_map(loads_json(read_map_text(path), str(path)), source=str(path))


def _load_gym(path: FsPath) -> RoadMap:
    from dmxshm.world.dtmaps import parse_gym, read_yaml

    grid, size, objects, extras = parse_gym(read_yaml(path), str(path))
    road_map = RoadMap(tuple(tuple(row) for row in grid), size, name=path.stem,
                       source=str(path), description=f"gym-duckietown map {path.name}",
                       objects=tuple(objects), extras=extras)
    road_map.check_connected(open_border=True)
    return road_map


def _load_layered(path: FsPath) -> RoadMap:
    from dmxshm.world.dtmaps import parse_layered

    grid, size, objects = parse_layered(path)
    road_map = RoadMap(tuple(tuple(row) for row in grid), size, name=path.resolve().name,
                       source=str(path), description=f"Duckiematrix layered map {path.name}",
                       objects=tuple(objects))
    road_map.check_connected(open_border=True)
    return road_map


def parse_map(data: object, source: str = "<dict>") -> RoadMap:
    """Build a :class:`RoadMap` from the decoded JSON of a map.

    Args:
        data: the decoded JSON document.
        source: the file name used in error messages.

    Raises:
        MapError: naming ``source`` and the offending key or cell.
    """
    if not isinstance(data, dict):
        raise MapError(f"map {source}: the document must be a JSON object, not "
                       f"{type(data).__name__}")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise MapError(f"map {source}: unknown key(s) {unknown}; allowed: {sorted(_KEYS)}")
    if data.get("format") != FORMAT:
        raise MapError(f"map {source}: key 'format' is {data.get('format')!r}; "
                       f"it must be {FORMAT!r}")
    size = data.get("tile_size_m", TILE_SIZE_M)
    if isinstance(size, bool) or not isinstance(size, (int, float)) or not size > 0:
        raise MapError(f"map {source}: 'tile_size_m' must be a positive number, not {size!r}")
    check_tile_size(size, source, "tile_size_m")
    for key in ("name", "description"):
        if not isinstance(data.get(key, ""), str):
            raise MapError(f"map {source}: {key!r} must be a string")
    rows = data.get("tiles")
    if not isinstance(rows, list) or not rows:
        raise MapError(f"map {source}: 'tiles' must be a non-empty list of rows")
    check_grid(len(rows), len(rows[0]) if isinstance(rows[0], list) else 1, size, source,
               "tiles")
    grid: list[tuple[Tile, ...]] = []
    for r, row in enumerate(rows):
        if not isinstance(row, list) or not row:
            raise MapError(f"map {source}: tiles row {r} must be a non-empty list of cells")
        if len(row) != len(rows[0]):
            raise MapError(f"map {source}: tiles row {r} has {len(row)} cells, "
                           f"row 0 has {len(rows[0])}; every row needs the same number")
        grid.append(tuple(_parse_cell(cell, source, r, c) for c, cell in enumerate(row)))
    name = data.get("name") or FsPath(source).stem
    road_map = RoadMap(tuple(grid), float(size), name=name, source=source,
                       description=data.get("description", ""))
    road_map.check_connected()
    return road_map


def _parse_cell(cell: object, source: str, r: int, c: int) -> Tile:
    where = f"map {source}: row {r}, column {c}"
    if not isinstance(cell, str):
        raise MapError(f"{where}: a cell must be a string like 'straight/90', not {cell!r}")
    kind, _, rot = cell.partition("/")
    if kind not in KINDS:
        raise MapError(f"{where}: unknown tile kind {kind!r} in {cell!r}; "
                       f"known kinds: {', '.join(KINDS)}")
    try:
        rotation = int(rot) if rot else 0
    except ValueError:
        rotation = -1
    if rotation not in ROTATIONS_DEG:
        raise MapError(f"{where}: rotation {rot!r} in {cell!r} must be one of "
                       f"{', '.join(map(str, ROTATIONS_DEG))}")
    return Tile(kind, rotation)


class RoadMap:
    """A grid of tiles with its road centrelines.

    Attributes:
        tiles: rows of :class:`~dmxshm.world.tiles.Tile`, north first.
        tile_size_m: side of a tile.
        name: the map's name.
        source: the file it came from (or ``"<dict>"``).
        description: free text from the file.
        objects: the map's objects (:class:`~dmxshm.world.objects.MapObject`).
        extras: keys a Duckietown map has that dmxshm keeps but does not use
            (gym-duckietown's ``start_tile``, ``start_pose``, ``version``).
        rows: number of rows.
        cols: number of columns.
        lane_offset_m: road centreline to right-lane centre.
        road_half_width_m: road centreline to the outer edge of a white line.
    """

    def __init__(
        self,
        tiles: tuple[tuple[Tile, ...], ...],
        tile_size_m: float = TILE_SIZE_M,
        *,
        name: str = "map",
        source: str = "<dict>",
        description: str = "",
        objects: tuple[MapObject, ...] = (),
        extras: dict[str, Any] | None = None,
    ) -> None:
        self.tiles = tiles
        self.objects = objects
        self.extras = dict(extras or {})
        self.tile_size_m = tile_size_m
        self.name = name
        self.source = source
        self.description = description
        self.rows = len(tiles)
        self.cols = len(tiles[0])
        self.lane_offset_m = lane_offset_m(tile_size_m)
        self.road_half_width_m = tile_size_m / 2
        self._paths = {
            (r, c): tile_paths(t, *self.tile_center(r, c), tile_size_m)
            for r, row in enumerate(tiles) for c, t in enumerate(row)
        }
        self._nearby = {
            (r, c): tuple(p for dr in (-1, 0, 1) for dc in (-1, 0, 1) if dr or dc
                          for p in self._paths.get((r + dr, c + dc), ()))
            for (r, c) in self._paths
        }
        for i, obj in enumerate(objects):
            if not obj.static:  # refused here, before any world is built
                try:
                    Mover(self, obj, i, 0)
                except ObjectError as exc:
                    raise MapError(f"{source}: objects: {exc}") from None

    def digest(self) -> str:
        """A key of what the map looks like (tiles and tile size), not of its name.

        Example:
            >>> load_map("loop").digest() == load_map("loop").digest() != load_map("grid").digest()
            True
        """
        # Kept while the tiles and objects are the same lists (a renderer looks it up
        # for every image; building it takes about 50 us).
        key = (id(self.tiles), id(self.objects), len(self.objects), self.tile_size_m)
        if getattr(self, "_digest_key", None) == key:
            return self._digest
        tiles = (self.tile_size_m, tuple(tuple((t.kind, t.rotation_deg) for t in row)
                                         for row in self.tiles))
        if not self.objects:  # a map without objects keeps the key it always had
            digest = repr(tiles)
        else:
            digest = repr((*tiles, tuple(sorted(repr(o) for o in self.objects))))
        self._digest_key, self._digest = key, digest
        return digest

    def still(self) -> RoadMap:
        """This map without its moving objects (itself when it has none): a picture
        of the map draws them where they are, not where they started."""
        if all(o.static for o in self.objects):
            return self
        return RoadMap(self.tiles, self.tile_size_m, name=self.name, source=self.source,
                       description=self.description,
                       objects=tuple(o for o in self.objects if o.static), extras=self.extras)

    @property
    def size_m(self) -> tuple[float, float]:
        """``(width, height)`` of the map, east-west and north-south."""
        return self.cols * self.tile_size_m, self.rows * self.tile_size_m

    def tile_center(self, row: int, col: int) -> tuple[float, float]:
        """World ``(x, y)`` of the centre of the tile in ``row``, ``col``."""
        return ((col + 0.5) * self.tile_size_m, (self.rows - 1 - row + 0.5) * self.tile_size_m)

    def cell_of(self, x: float, y: float) -> tuple[int, int] | None:
        """``(row, col)`` of the tile under ``(x, y)``, or ``None`` off the map."""
        col = math.floor(x / self.tile_size_m)
        row = self.rows - 1 - math.floor(y / self.tile_size_m)
        if 0 <= row < self.rows and 0 <= col < self.cols:
            return row, col
        return None

    def paths(self, row: int, col: int) -> tuple[Path, ...]:
        """The road centrelines of one tile, in world coordinates."""
        return self._paths[(row, col)]

    def check_connected(self, open_border: bool = False) -> None:
        """Check that every road leaving a tile enters its neighbour.

        Args:
            open_border: a road may end at the map's border (Duckietown's formats
                allow it; dmxshm's own maps do not).

        Raises:
            MapError: naming the tile, the edge and the neighbour.
        """
        for r, row in enumerate(self.tiles):
            for c, tile in enumerate(row):
                where = f"map {self.source}: row {r}, column {c} ({tile})"
                neighbours = []
                for edge in sorted(tile.edges):
                    dx, dy = EDGE_VECTORS[edge]
                    nr, nc = r - dy, c + dx
                    if not (0 <= nr < self.rows and 0 <= nc < self.cols):
                        if open_border:
                            continue
                        raise MapError(f"{where}: its road leaves the map through the {edge} "
                                       "edge; rotate the tile or add a connecting tile")
                    neighbours.append((edge, nr, nc))
                for edge, nr, nc in neighbours:
                    other = self.tiles[nr][nc]
                    if opposite_edge(edge) not in other.edges:
                        raise MapError(
                            f"{where}: its road leaves through the {edge} edge into row {nr}, "
                            f"column {nc} ({other}), which has no road on its "
                            f"{opposite_edge(edge)} edge; rotate or replace one of the two")

    def lane_pose(self, x: float, y: float, yaw: float) -> LanePose:
        """Lateral offset and heading error relative to the right lane.

        Args:
            x: position, m (world frame).
            y: position, m.
            yaw: heading, rad, counter-clockwise from east.

        Returns:
            A :class:`~dmxshm.world.lanes.LanePose` ``(offset_m,
            heading_err_rad, on_road)``: offset positive to the left of the
            right-lane centre; ``nan`` values when no road is within a tile.
        """
        return self._lane(x, y, yaw)[0]

    def lane_curvature(self, x: float, y: float, yaw: float) -> float:
        """Signed curvature (1/m, positive turning left) of the right lane here.

        Zero on straights and through intersections; on a curve, one over
        the radius of the right lane (the outer lane when the curve turns
        left, the inner one when it turns right); ``nan`` far from roads.
        """
        return self._lane(x, y, yaw)[1]

    def _lane(self, x: float, y: float, yaw: float) -> tuple[LanePose, float]:
        x, y, yaw = float(x), float(y), float(yaw)  # numpy scalars would leak out
        cell = self.cell_of(x, y)
        if cell is None:
            # Off the map: measure against the nearest border tile's roads.
            col = min(max(math.floor(x / self.tile_size_m), 0), self.cols - 1)
            row = min(max(self.rows - 1 - math.floor(y / self.tile_size_m), 0), self.rows - 1)
            cx, cy = self.tile_center(row, col)
            far = math.hypot(x - cx, y - cy) > 1.5 * self.tile_size_m
            own = () if far else self._paths[(row, col)]
            nearby = () if far else self._nearby[(row, col)]
            on_tile = False
        else:
            own, nearby = self._paths[cell], self._nearby[cell]
            on_tile = self.tiles[cell[0]][cell[1]].is_road
        return lane_pose_among(own, nearby, x, y, yaw, lane_offset_m=self.lane_offset_m,
                               road_half_width_m=self.road_half_width_m,
                               on_road_tile=on_tile)

    def start_poses(self, n: int, rng: np.random.Generator) -> list[tuple[float, float, float]]:
        """``n`` poses ``(x, y, yaw)`` on right-lane centres, far enough apart.

        See :mod:`dmxshm.world.starts` for how they are chosen.

        Args:
            n: number of robots.
            rng: the generator that decides the placement (seeded by caller).

        Raises:
            MapError: ``n`` is negative or the map has no room for ``n`` robots.
        """
        if n < 0:
            raise MapError(f"cannot place {n} robots on map {self.name}")
        poses = place(self._start_candidates(), n, rng)
        if len(poses) < n:
            raise MapError(f"map {self.name} has room for {self.capacity} robots "
                           f"{MIN_START_SPACING_M} m apart, not {n}: use fewer robots or a "
                           "bigger map ('dmxshm maps' lists each map's capacity)")
        return poses

    def _start_candidates(self) -> list[tuple[float, float, float]]:
        # Kept while the tiles and objects are the same (an env resets often: about
        # 140 us a time to build them).
        key = (id(self.tiles), id(self.objects), len(self.objects), self.tile_size_m)
        if getattr(self, "_candidates_key", None) != key:
            self._candidates = tuple(self._build_candidates())
            self._candidates_key = key
        return list(self._candidates)

    def _build_candidates(self) -> list[tuple[float, float, float]]:
        lanes = [p for (r, c), paths in sorted(self._paths.items())
                 if self.tiles[r][c].kind not in INTERSECTION_KINDS for p in paths]
        candidates = lane_candidates(lanes, self.lane_offset_m)
        if not self.objects:
            return candidates
        # No robot starts in (or against) an object on the road.
        keep_out = [(o.x_m, o.y_m, footprint_m(o) + ROBOT_CLEARANCE_M)
                    for o in self.objects if footprint_m(o) > 0]
        return [(x, y, yaw) for x, y, yaw in candidates
                if all(math.hypot(x - ox, y - oy) > r for ox, oy, r in keep_out)]

    @property
    def capacity(self) -> int:
        """How many robots always fit, whatever the seed (see :mod:`dmxshm.world.starts`).

        Example:
            >>> load_map("loop").capacity
            16
        """
        return len(place_in_order(self._start_candidates()))

    def __repr__(self) -> str:
        return f"RoadMap({self.name!r}, {self.rows}x{self.cols} tiles of {self.tile_size_m} m)"

