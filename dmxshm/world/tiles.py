"""Road tiles: kinds, rotations, which edges connect, and the lane dimensions.

A tile is a square of side :data:`TILE_SIZE_M`. In its own frame (origin at
the tile centre, x east, y north, before rotation) the kinds are:

============  ==================  ==========================================
kind          connects edges      road centreline(s)
============  ==================  ==========================================
``grass``     none                none (not drivable)
``asphalt``   none                none (flat filler, no lanes)
``floor``     none                none (a room's floor, not drivable)
``straight``  W, E                segment from the W to the E edge midpoint
``curve``     E, S                quarter circle of radius size/2 centred on
                                  the SE corner
``3way``      W, E, S             W-E segment, and centre-to-S segment
``4way``      W, E, S, N          W-E segment and S-N segment
============  ==================  ==========================================

A rotation of 90, 180 or 270 degrees turns the tile counter-clockwise about
its centre: a ``straight`` rotated by 90 runs S-N, a ``curve`` rotated by 90
connects N and E.

Lanes follow Duckietown's markings: a white line of
:data:`WHITE_LINE_WIDTH_M` along each outer road edge, a dashed yellow
centre line of :data:`YELLOW_LINE_WIDTH_M`, and two lanes of
:data:`LANE_WIDTH_M` between them. Traffic keeps right, so the right lane's
centre lies :data:`LANE_OFFSET_M` to the right of the road centreline in the
direction of travel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dmxshm.world.lanes import Arc, Path, Segment

TILE_SIZE_M = 0.585
"""Side of a square tile (Duckietown's 58.5 cm)."""

WHITE_LINE_WIDTH_M = 0.048
"""Width of the white line along each outer road edge."""

YELLOW_LINE_WIDTH_M = 0.024
"""Width of the dashed yellow centre line."""

KINDS = ("grass", "asphalt", "floor", "straight", "curve", "3way", "4way")
"""Every tile kind a map may use."""

ROAD_KINDS = frozenset({"straight", "curve", "3way", "4way"})
"""Kinds that carry lanes."""

INTERSECTION_KINDS = frozenset({"3way", "4way"})
"""Kinds where roads meet (stop lines, no centre line)."""

ROTATIONS_DEG = (0, 90, 180, 270)
"""Allowed counter-clockwise rotations of a tile."""

# Unit vectors from the tile centre towards each edge midpoint.
EDGE_VECTORS = {"E": (1, 0), "N": (0, 1), "W": (-1, 0), "S": (0, -1)}
_EDGE_ORDER = ("E", "N", "W", "S")  # counter-clockwise, so +90 deg is one step
_BASE_EDGES = {
    "grass": (),
    "asphalt": (),
    "floor": (),
    "straight": ("W", "E"),
    "curve": ("E", "S"),
    "3way": ("W", "E", "S"),
    "4way": ("W", "E", "S", "N"),
}


def lane_width_m(tile_size_m: float = TILE_SIZE_M) -> float:
    """Width of one lane between the white and the yellow line."""
    return tile_size_m / 2 - WHITE_LINE_WIDTH_M - YELLOW_LINE_WIDTH_M / 2


def lane_offset_m(tile_size_m: float = TILE_SIZE_M) -> float:
    """Distance from the road centreline to the centre of the right lane."""
    return YELLOW_LINE_WIDTH_M / 2 + lane_width_m(tile_size_m) / 2


LANE_WIDTH_M = lane_width_m()
"""Width of one lane on a standard tile (0.2325 m)."""

LANE_OFFSET_M = lane_offset_m()
"""Road centreline to right-lane centre on a standard tile (0.12825 m)."""


def rotate_edge(edge: str, rotation_deg: int) -> str:
    """The edge that ``edge`` becomes after a counter-clockwise rotation.

    Example:
        >>> rotate_edge("E", 90), rotate_edge("S", 270)
        ('N', 'W')
    """
    steps = (rotation_deg // 90) % 4
    return _EDGE_ORDER[(_EDGE_ORDER.index(edge) + steps) % 4]


def opposite_edge(edge: str) -> str:
    """The edge facing ``edge`` across a tile border (``"E"`` -> ``"W"``)."""
    return rotate_edge(edge, 180)


def rotate_xy(x: float, y: float, rotation_deg: int) -> tuple[float, float]:
    """Rotate a tile-frame point counter-clockwise by a multiple of 90 degrees.

    Exact for the four allowed rotations (no trigonometry, so no rounding).
    """
    steps = (rotation_deg // 90) % 4
    for _ in range(steps):
        x, y = -y, x
    return x, y


@dataclass(frozen=True)
class Tile:
    """One cell of a road map.

    Attributes:
        kind: one of :data:`KINDS`.
        rotation_deg: one of :data:`ROTATIONS_DEG`, counter-clockwise.
    """

    kind: str
    rotation_deg: int = 0

    @property
    def is_road(self) -> bool:
        """Whether the tile carries lanes."""
        return self.kind in ROAD_KINDS

    @property
    def edges(self) -> frozenset[str]:
        """Edges (``"E"``, ``"N"``, ``"W"``, ``"S"``) where a road leaves the tile.

        Example:
            >>> sorted(Tile("curve", 90).edges)
            ['E', 'N']
        """
        return frozenset(rotate_edge(e, self.rotation_deg) for e in _BASE_EDGES[self.kind])

    def __str__(self) -> str:
        return f"{self.kind}/{self.rotation_deg}"


def tile_paths(tile: Tile, cx: float, cy: float, size: float) -> tuple[Path, ...]:
    """The road centrelines of ``tile`` (see the table above), centred at ``(cx, cy)``.

    Example:
        >>> tile_paths(Tile("straight", 90), 1.0, 1.0, 0.5)
        (Segment(x0=1.0, y0=0.75, x1=1.0, y1=1.25),)
    """
    h = size / 2
    rot = tile.rotation_deg

    def seg(ax: float, ay: float, bx: float, by: float) -> Segment:
        (ax, ay), (bx, by) = rotate_xy(ax, ay, rot), rotate_xy(bx, by, rot)
        return Segment(cx + ax, cy + ay, cx + bx, cy + by)

    if tile.kind == "straight":
        return (seg(-h, 0, h, 0),)
    if tile.kind == "3way":
        return (seg(-h, 0, h, 0), seg(0, 0, 0, -h))
    if tile.kind == "4way":
        return (seg(-h, 0, h, 0), seg(0, -h, 0, h))
    if tile.kind == "curve":
        # Centred on the SE corner, from the E edge (polar 90 deg) to the S
        # edge (polar 180 deg), counter-clockwise.
        ox, oy = rotate_xy(h, -h, rot)
        return (Arc(cx + ox, cy + oy, h, math.radians(90 + rot), math.pi / 2),)
    return ()
