"""A dmxshm road map as the Duckiematrix's map layers (``map/frames``, ``map/tiles``,
``map/tile_maps``), the way duckietown-sdk's ``MapInterpreter``
(``duckietown/sdk/utils/lane_position.py``) reads them.

The layers' frame is gym-duckietown's ground plane: ``X`` east, ``Z`` south, tile
``(i, j)`` covering ``X`` in ``[i, i + 1]`` and ``Z`` in ``[j, j + 1]`` tile sides,
``j`` counted from the north (a dmxshm map's first row). A tile's frame sits at its
centre in **tile units** (``x = i + 0.5``, ``y = j + 0.5``; ``MapInterpreter``
multiplies by the tile size), and its ``yaw`` turns the tile kind's unrotated
roads clockwise as seen from above, by quarter turns. Unrotated, a ``straight``
runs north-south, a ``curve`` joins the north and east edges and a ``3way`` joins
north, south and east (``MapInterpreter``'s ``_get_curve``).

A point ``(x, y)`` of dmxshm's world (x east, y north, metres, origin the map's
south-west corner) with heading ``yaw`` (counter-clockwise from east) is, for
``MapInterpreter``, ``pos = (x, 0, rows * tile_size - y)`` and angle ``yaw``
(:func:`map_position`).

Example:
    >>> from dmxshm.world.maps import load_map
    >>> frames, tiles, info = layers(load_map("loop"))
    >>> tiles["map_0/tile_1_1"], frames["map_0/tile_1_1"]["pose"]["x"]
    ({'i': 1, 'j': 1, 'type': 'curve'}, 1.5)
    >>> info["map_0"]["tile_size"]
    {'x': 0.585, 'y': 0.585}
"""

from __future__ import annotations

import math
import os
from typing import Any

from dmxshm.world.dtmaps import CLOCKWISE, LAYER_BASE_EDGES
from dmxshm.world.maps import RoadMap

MAP = "map_0"
"""The map frame's name (``MapInterpreter`` reads ``map_0`` only)."""

TYPES = {"grass": "grass", "asphalt": "asphalt", "floor": "floor", "straight": "straight",
         "curve": "curve", "3way": "3way", "4way": "4way"}
"""dmxshm's tile kinds and the Duckiematrix's type of each."""


def _quarter_turns(kind: str, edges: frozenset[str]) -> int:
    """The clockwise quarter turns that take the Duckiematrix's unrotated ``kind`` to
    the tile's ``edges`` (0 for a tile without roads)."""
    base = LAYER_BASE_EDGES.get(kind)
    if base is None:
        return 0
    for k in range(4):
        if {CLOCKWISE[(CLOCKWISE.index(e) + k) % 4] for e in base} == set(edges):
            return k
    raise ValueError(f"no rotation of a {kind} leaves by {sorted(edges)}")


def layers(road_map: RoadMap) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``(frames, tiles, tile_maps)``: the ``data`` of each of the three topics."""
    frames: dict[str, Any] = {MAP: {"relative_to": None, "pose": _pose(0.0, 0.0, 0.0)}}
    tiles: dict[str, Any] = {}
    for j, row in enumerate(road_map.tiles):
        for i, tile in enumerate(row):
            name = f"{MAP}/tile_{i}_{j}"
            yaw = _quarter_turns(tile.kind, tile.edges) * math.pi / 2
            frames[name] = {"relative_to": MAP, "pose": _pose(i + 0.5, j + 0.5, yaw)}
            tiles[name] = {"i": i, "j": j, "type": TYPES[tile.kind]}
    size = road_map.tile_size_m
    return frames, tiles, {MAP: {"tile_size": {"x": size, "y": size}}}


_SIGN_TYPE = {"sign_4_way_intersect": "four_way_intersect",
              "sign_right_T_intersect": "right_t_intersect",
              "sign_left_T_intersect": "left_t_intersect", "sign_T_intersect": "t_intersection",
              "sign_T_light_ahead": "t_light_ahead"}


def object_layers(road_map: RoadMap) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """``(frames, layers)`` of the map's objects: their frames (tile units, the frames'
    ``y`` south, yaw clockwise) and their entries by layer (``traffic_signs``,
    ``citizens``, ``vehicles``, ``ground_tags``, ``decorations``), as
    :func:`dmxshm.world.dtmaps.parse_layered` reads them back."""
    size, height = road_map.tile_size_m, road_map.size_m[1]
    frames: dict[str, Any] = {}
    out: dict[str, dict[str, Any]] = {k: {} for k in (
        "traffic_signs", "citizens", "vehicles", "ground_tags", "decorations")}
    for o in road_map.objects:
        name = f"{MAP}/{o.name}"
        frames[name] = {"relative_to": MAP,
                        "pose": _pose(o.x_m / size, (height - o.y_m) / size, -o.yaw_rad)}
        if o.kind.startswith("sign_"):
            entry: dict[str, Any] = {"type": _SIGN_TYPE.get(o.kind, o.kind.removeprefix("sign_")),
                                     "family": "36h11"}
            if o.tag_id is not None:
                entry["id"] = o.tag_id
            out["traffic_signs"][name] = entry
        elif o.kind == "duckie":
            out["citizens"][name] = {"color": o.color or "yellow"}
        elif o.kind == "duckiebot":
            out["vehicles"][name] = {"configuration": "DB21J", "color": o.color or "red"}
        elif o.kind == "floor_tag":
            out["ground_tags"][name] = {"family": "36h11", "size": 0.065,
                                        **({"id": o.tag_id} if o.tag_id is not None else {})}
        else:  # dmxshm's own layer of the other kinds; its height too
            out["decorations"][name] = {"type": o.kind, "height": o.height_m}
    return frames, out


def write_folder(road_map: RoadMap, folder: str | os.PathLike[str]) -> list[str]:
    """Write ``road_map`` as a layered map folder (``frames.yaml``, ``tiles.yaml``,
    ``tile_maps.yaml`` and the object layers that have entries); the files written.

    The folder reads back as the same map (:func:`dmxshm.world.maps.load_map`), and
    duckietown-sdk's ``MapInterpreter`` reads its three tile layers (tested).

    Example:
        >>> import tempfile
        >>> from dmxshm.world.maps import load_map
        >>> with tempfile.TemporaryDirectory() as d:
        ...     names = write_folder(load_map("loop"), d)
        ...     load_map(d).tiles == load_map("loop").tiles
        True
    """
    import yaml

    frames, tiles, tile_maps = layers(road_map)
    more_frames, objects = object_layers(road_map)
    docs = {"frames": {**frames, **more_frames}, "tiles": tiles, "tile_maps": tile_maps,
            **{k: v for k, v in objects.items() if v}}
    os.makedirs(folder, exist_ok=True)
    written = []
    for name, body in docs.items():
        path = os.path.join(folder, f"{name}.yaml")
        with open(path, "w", encoding="utf-8") as f:
            yaml.safe_dump({name: body}, f, sort_keys=False)
        written.append(path)
    return written


def _pose(x: float, y: float, yaw: float) -> dict[str, float]:
    return {"x": x, "y": y, "z": 0.0, "roll": 0.0, "pitch": 0.0, "yaw": yaw}


def map_position(road_map: RoadMap, x: float, y: float) -> tuple[float, float, float]:
    """dmxshm's world point ``(x, y)`` in the layers' frame: ``(X, 0, Z)`` in metres.

    Example:
        >>> from dmxshm.world.maps import load_map
        >>> map_position(load_map("loop"), 1.0, 0.5)
        (1.0, 0.0, 2.425)
    """
    return x, 0.0, road_map.rows * road_map.tile_size_m - y
