"""Build a road map in a pybullet client: ground, road surfaces, lane markings.

The ground is one infinite collision plane without visual geometry. Everything
seen is flat visual geometry without collision, merged into one triangle
mesh per colour (grass, asphalt, white, yellow, red), so the whole map costs
a handful of bodies. This matters because ER_TINY_RENDERER pays for every
shape and for every pixel each triangle covers: grass is only drawn where
there is no road (no overdraw), and markings sit 1 mm above the road.

Markings follow Duckietown: a white line along each outer road edge, a
dashed yellow centre line on straights and curves, white corner squares and
red stop lines across each incoming right lane at intersections.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from dmxshm._pybullet import pb
from dmxshm.world.maps import RoadMap
from dmxshm.world.meshfiles import obj_file
from dmxshm.world.tiles import (
    INTERSECTION_KINDS,
    WHITE_LINE_WIDTH_M,
    YELLOW_LINE_WIDTH_M,
    Tile,
    rotate_xy,
)

Quad = tuple[tuple[float, float], ...]
"""Four ``(x, y)`` corners, counter-clockwise seen from above."""

COLORS_RGBA = {
    "grass": (0.30, 0.55, 0.22, 1.0),
    "asphalt": (0.20, 0.20, 0.21, 1.0),
    "white": (0.95, 0.95, 0.95, 1.0),
    "yellow": (0.95, 0.78, 0.10, 1.0),
    "red": (0.80, 0.10, 0.10, 1.0),
    "floor": (0.45, 0.36, 0.27, 1.0),
}
"""Colour of each mesh."""

MARKING_HEIGHT_M = 0.001
"""Height of the lane markings above the road surface (no z-fighting)."""

APRON_M = 5.0
"""Grass drawn beyond each side of the map, so the horizon is not bare."""

SURFACE_SPLIT = 2
"""Each tile's surface is drawn as this many by this many quads.

The renderer tests every pixel of a triangle's screen bounding box, and a
big triangle seen at a grazing angle has a huge one; splitting the ground
cut render time by about a quarter (more splitting costs more than it saves).
"""

APRON_CELL_M = 2.0
"""Largest side of a quad of the grass apron around the map (same reason)."""

DASHES_PER_TILE = 3
"""Yellow dashes on each straight or curve tile (the flat look's)."""

SPEC_DASH_M = 0.05
"""The yellow dashes of Duckietown's appearance specification: 5 cm long..."""
SPEC_DASH_PERIOD_M = 0.075
"""... with 2.5 cm gaps. A tile holds the whole number of dashes whose period comes
nearest (8 on a 58.5 cm straight: gaps of 2.3 cm), so dashes meet tile to tile."""

STOP_LINE_WIDTH_M = 0.048
"""Depth of a red stop line along the direction of travel."""

ARC_SEGMENTS = 8
"""Segments of the outer white arc of a curve (fewer for shorter arcs)."""

GROUND_FRICTION = 1.0
"""Lateral friction of the ground plane (rubber on floor mat)."""

# Bullet copies at most this many vertices per mesh (8192 on macOS builds)
# and silently drops the rest, so meshes are split below it.
_MAX_QUADS_PER_MESH = 2000


@dataclass
class Scene:
    """Bodies that make up a built map.

    Attributes:
        ground_id: the collision plane.
        visual_ids: the visual-only mesh bodies, by colour name.
        num_quads: quads drawn, by colour name (a measure of render cost).
    """

    ground_id: int
    visual_ids: dict[str, list[int]] = field(default_factory=dict)
    num_quads: dict[str, int] = field(default_factory=dict)
    shades: dict[str, float] = field(default_factory=dict)  # as :func:`tint` left them


SHADED = {"road_shade": ("asphalt", "floor"), "marking_shade": ("white", "yellow", "red"),
          "grass_shade": ("grass",)}
"""What each shade of :func:`tint` scales: the road's, the markings' and the grass's
meshes (domain randomisation's appearance, :mod:`dmxshm.world.randomize`)."""


def tint(scene: Scene, client: int, shades: dict[str, float] | None) -> None:
    """Colour the scene's meshes: each colour of :data:`COLORS_RGBA` times its shade of
    ``shades`` (``road_shade``, ``marking_shade``, ``grass_shade``; a missing one, or
    None, is 1: as built), clipped to 1. Only what changed since the last call is
    set (a renderer's robots may each have their own shades, drawn in one scene).

    Example:
        >>> from dmxshm.world.world import World
        >>> with World("loop", 0) as w:
        ...     tint(w.scene, w.client, {"road_shade": 0.5})
        ...     body = w.scene.visual_ids["asphalt"][0]
        ...     round(pb.getVisualShapeData(body, physicsClientId=w.client)[0][7][0], 3)
        0.1
    """
    for shade, colours in SHADED.items():
        value = 1.0 if shades is None else float(shades.get(shade, 1.0))
        if scene.shades.get(shade, 1.0) == value:
            continue
        for colour in colours:
            r, g, b, a = COLORS_RGBA[colour]
            rgba = (min(r * value, 1.0), min(g * value, 1.0), min(b * value, 1.0), a)
            for body in scene.visual_ids.get(colour, ()):
                pb.changeVisualShape(body, -1, rgbaColor=rgba, physicsClientId=client)
        scene.shades[shade] = value




def build_scene(road_map: RoadMap, client: int, visuals: bool = True,
                mesh_files: bool = False) -> Scene:
    """Create the ground and the map's visual geometry in ``client``.

    Args:
        road_map: the map to build.
        client: a pybullet physics client id.
        visuals: False builds the ground plane alone, for a world that is
            never rendered: the physics is the same (tested bit for bit) and
            a step costs 4% less (8% with 32 worlds in one process).
        mesh_files: give the meshes to pybullet as OBJ files rather than as
            vertex lists: pybullet's EGL renderer plugin draws only meshes it
            reads from files. The geometry is the same.

    Returns:
        The :class:`Scene` with the created body ids.
    """
    # The ground plane wears the first grass mesh: a body without a visual
    # shape would be drawn by the renderer as a textured checkerboard.
    plane = pb.createCollisionShape(pb.GEOM_PLANE, physicsClientId=client)
    if not visuals:
        ground = pb.createMultiBody(0.0, plane, -1, physicsClientId=client)
        pb.changeDynamics(ground, -1, lateralFriction=GROUND_FRICTION, physicsClientId=client)
        return Scene(ground)
    ground = -1
    scene = Scene(ground)
    for color, quads in map_quads(road_map).items():
        z = 0.0 if color in ("grass", "asphalt", "floor") else MARKING_HEIGHT_M
        scene.num_quads[color] = len(quads)
        scene.visual_ids[color] = []
        for i in range(0, len(quads), _MAX_QUADS_PER_MESH):
            collision = plane if ground < 0 else -1
            body = _mesh_body(quads[i:i + _MAX_QUADS_PER_MESH], z, COLORS_RGBA[color],
                              client, collision, mesh_files)
            ground = body if ground < 0 else ground
            scene.visual_ids[color].append(body)
    pb.changeDynamics(ground, -1, lateralFriction=GROUND_FRICTION, physicsClientId=client)
    scene.ground_id = ground
    return scene


def map_quads(road_map: RoadMap, dash_m: float | None = None) -> dict[str, list[Quad]]:
    """Every flat quad of the map, in world coordinates, by colour: the yellow dashes
    :data:`DASHES_PER_TILE` a tile, or (``dash_m``) that long, the specification's
    period apart (:data:`SPEC_DASH_PERIOD_M`).

    Example:
        >>> from dmxshm.world.maps import load_map
        >>> quads = map_quads(load_map("loop"))
        >>> sorted(quads), len(quads["asphalt"])
        (['asphalt', 'floor', 'grass', 'red', 'white', 'yellow'], 40)
    """
    size = road_map.tile_size_m
    out: dict[str, list[Quad]] = {c: [] for c in COLORS_RGBA}
    for r, row in enumerate(road_map.tiles):
        for c, tile in enumerate(row):
            cx, cy = road_map.tile_center(r, c)
            h = size / 2
            surface = tile.kind if tile.kind in ("grass", "floor") else "asphalt"
            out[surface] += _grid(cx - h, cy - h, cx + h, cy + h, SURFACE_SPLIT, SURFACE_SPLIT)
            for color, quad in _tile_markings(tile, size, dash_m):
                out[color].append(tuple(
                    (cx + qx, cy + qy)
                    for qx, qy in (rotate_xy(x, y, tile.rotation_deg) for x, y in quad)))
    width, height = road_map.size_m
    a = APRON_M
    for x0, y0, x1, y1 in ((-a, -a, width + a, 0.0), (-a, height, width + a, height + a),
                           (-a, 0.0, 0.0, height), (width, 0.0, width + a, height)):
        out["grass"] += _grid(x0, y0, x1, y1, math.ceil((x1 - x0) / APRON_CELL_M),
                              math.ceil((y1 - y0) / APRON_CELL_M))
    return out


def _grid(x0: float, y0: float, x1: float, y1: float, nx: int, ny: int) -> list[Quad]:
    """The rectangle ``x0..x1`` by ``y0..y1`` cut into ``nx`` by ``ny`` quads."""
    xs = [x0 + (x1 - x0) * i / nx for i in range(nx + 1)]
    ys = [y0 + (y1 - y0) * j / ny for j in range(ny + 1)]
    return [_rect(xs[i], ys[j], xs[i + 1], ys[j + 1]) for j in range(ny) for i in range(nx)]


def _rect(x0: float, y0: float, x1: float, y1: float) -> Quad:
    return ((x0, y0), (x1, y0), (x1, y1), (x0, y1))


def _arc(cx: float, cy: float, r0: float, r1: float, a0: float, a1: float, n: int) -> list[Quad]:
    """Quads of the ring ``r0..r1`` between polar angles ``a0 < a1``."""
    quads: list[Quad] = []
    for i in range(n):
        b0 = a0 + (a1 - a0) * i / n
        b1 = a0 + (a1 - a0) * (i + 1) / n
        c0, s0, c1, s1 = math.cos(b0), math.sin(b0), math.cos(b1), math.sin(b1)
        quads.append(((cx + r0 * c0, cy + r0 * s0), (cx + r1 * c0, cy + r1 * s0),
                      (cx + r1 * c1, cy + r1 * s1), (cx + r0 * c1, cy + r0 * s1)))
    return quads


def _tile_markings(tile: Tile, size: float,
                   dash_m: float | None = None) -> list[tuple[str, Quad]]:
    """Markings of one tile in its unrotated frame (centre at the origin); the yellow
    dashes as :func:`map_quads` says."""
    h, ww, yw = size / 2, WHITE_LINE_WIDTH_M, YELLOW_LINE_WIDTH_M
    out: list[tuple[str, Quad]] = []
    if tile.kind == "straight":
        out += [("white", _rect(-h, h - ww, h, h)), ("white", _rect(-h, -h, h, -h + ww))]
        n = DASHES_PER_TILE if dash_m is None else max(1, round(size / SPEC_DASH_PERIOD_M))
        dash = size / (2 * n) if dash_m is None else dash_m
        for k in range(n):
            x = -h + size * (k + 0.5) / n
            out.append(("yellow", _rect(x - dash / 2, -yw / 2, x + dash / 2, yw / 2)))
    elif tile.kind == "curve":
        a0, a1 = math.pi / 2, math.pi  # around the SE corner, E edge to S edge
        out += [("white", q) for q in _arc(h, -h, size - ww, size, a0, a1, ARC_SEGMENTS)]
        out += [("white", q) for q in _arc(h, -h, 0.0, ww, a0, a1, 2)]
        n = (DASHES_PER_TILE if dash_m is None
             else max(1, round((a1 - a0) * h / SPEC_DASH_PERIOD_M)))
        step = (a1 - a0) / n
        half = step / 4 if dash_m is None else dash_m / (2 * h)  # (radians, on the line)
        for k in range(n):
            mid = a0 + step * (k + 0.5)
            out += [("yellow", q) for q in _arc(h, -h, h - yw / 2, h + yw / 2,
                                                mid - half, mid + half, 2)]
    elif tile.kind in INTERSECTION_KINDS:
        open_edges = ("W", "E", "S") if tile.kind == "3way" else ("W", "E", "S", "N")
        if tile.kind == "3way":
            out.append(("white", _rect(-h, h - ww, h, h)))
        # Corner squares where two open roads' outer lines meet, and a stop
        # line across the incoming right lane of each open edge. Both are
        # written for the W edge (traffic heading east, right lane south)
        # and turned to the others.
        turn_of = {"W": 0, "S": 90, "E": 180, "N": 270}
        for edge in open_edges:
            turn = turn_of[edge]
            left_of_entry = rotate_edge_ccw(edge)  # next edge counter-clockwise
            quads = [("red", _rect(-h, -h + ww, -h + STOP_LINE_WIDTH_M, -yw / 2))]
            if left_of_entry in open_edges:  # the W and S roads share the SW corner
                quads.append(("white", _rect(-h, -h, -h + ww, -h + ww)))
            out += [(color, tuple(rotate_xy(x, y, turn) for x, y in q)) for color, q in quads]
    return out


def rotate_edge_ccw(edge: str) -> str:
    """The next edge counter-clockwise (``W`` -> ``S`` -> ``E`` -> ``N`` -> ``W``)."""
    return {"W": "S", "S": "E", "E": "N", "N": "W"}[edge]


def _mesh_body(quads: list[Quad], z: float, rgba: tuple[float, ...], client: int,
               collision: int = -1, mesh_files: bool = False) -> int:
    vertices: list[list[float]] = []
    indices: list[int] = []
    for quad in quads:
        base = len(vertices)
        vertices += [[x, y, z] for x, y in quad]
        indices += [base, base + 1, base + 2, base, base + 2, base + 3]
    if mesh_files:
        shape = pb.createVisualShape(pb.GEOM_MESH, fileName=obj_file(vertices, indices),
                                     rgbaColor=list(rgba), physicsClientId=client)
    else:
        shape = pb.createVisualShape(pb.GEOM_MESH, vertices=vertices, indices=indices,
                                     rgbaColor=list(rgba), physicsClientId=client)
    return pb.createMultiBody(0.0, collision, shape, physicsClientId=client)
