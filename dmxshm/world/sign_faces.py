"""Traffic signs as Duckietown prints them: a plate on a pole, its face the sign's
symbol above its AprilTag (tag36h11, the map's ``tag_id``).

Sizes from Duckietown's appearance specification: the tag's black square is 6.5 cm
(:data:`TAG_SIZE_M`, the size Duckietown's detector is given), with a white ring of one
cell (0.8 cm) around it; the tag's centre is 13 cm above the floor
(:data:`TAG_CENTRE_M`). The symbol sits on the same plate above the tag, in a square of
the tag's printed size. The symbols are the project's own simple drawings (an
octagon for stop, a triangle for yield, a disc with a bar for no entry, ...), not
Duckietown's artwork.

A face is an image of palette codes (:data:`PALETTE`): :data:`FACE_CELLS` texels a tag
cell, row 0 at the top and column 0 at the left as seen from the front.
"""

from __future__ import annotations

import numpy as np

from dmxshm.world import tag36h11

TAG_SIZE_M = 0.065
"""The edge of a tag's black square on a Duckietown sign (8 of its 10 cells)."""
CELL_M = TAG_SIZE_M / tag36h11.WIDTH_AT_BORDER
"""One cell of a tag: 8.125 mm."""
TAG_CENTRE_M = 0.13
"""The tag's centre above the floor."""
FACE_W_M = tag36h11.TOTAL_WIDTH * CELL_M
"""The plate's face: the tag with its white ring across (81.25 mm)..."""
FACE_H_M = 2 * FACE_W_M
"""... and twice that high: the symbol's square above the tag's."""
FACE_BOTTOM_M = TAG_CENTRE_M - FACE_W_M / 2
"""Where the face's lower edge is above the floor."""
PLATE_THICKNESS_M = 0.004
POLE_RADIUS_M = 0.006
FRONT_M = POLE_RADIUS_M + PLATE_THICKNESS_M
"""The face ahead of the pole's axis (the sign's position on the map)."""

FACE_CELLS = 8
"""Texels a tag cell, across (a face is 80 x 160 texels)."""
FACE_TEXELS = (2 * tag36h11.TOTAL_WIDTH * FACE_CELLS, tag36h11.TOTAL_WIDTH * FACE_CELLS)
"""A face's texels (rows, columns)."""

PALETTE = {
    "white": (0.95, 0.95, 0.95), "black": (0.03, 0.03, 0.03), "red": (0.80, 0.08, 0.08),
    "blue": (0.15, 0.35, 0.80), "yellow": (0.95, 0.80, 0.10), "green": (0.10, 0.55, 0.25),
    "grey": (0.55, 0.55, 0.55),
}
"""A face's colours (linear 0-1), by name; a face's codes index this order."""
_CODE = {name: k for k, name in enumerate(PALETTE)}


def _square(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Texel centres of an n x n square as (x, y) in [-1, 1], y up."""
    c = (np.arange(n) + 0.5) / n * 2 - 1
    return c[None, :], -c[:, None]


def symbol(kind: str) -> np.ndarray:
    """The symbol of sign ``kind`` (a :data:`~dmxshm.world.objects.SIGN_KINDS` name):
    a square of palette codes, :data:`FACE_TEXELS`'s columns across."""
    n = FACE_TEXELS[1]
    x, y = _square(n)
    out = np.full((n, n), _CODE["white"], np.uint8)
    ax, ay = np.abs(x), np.abs(y)
    disc = x * x + y * y <= 0.85 ** 2
    octagon = (ax <= 0.85) & (ay <= 0.85) & (ax + ay <= 1.2)
    diamond = ax + ay <= 0.9
    name = kind.removeprefix("sign_")

    def paint(mask: np.ndarray, colour: str) -> None:
        out[np.broadcast_to(mask, out.shape)] = _CODE[colour]

    if name == "stop":  # a red octagon inside a thin white one
        paint(octagon, "red")
        inner = (ax <= 0.75) & (ay <= 0.75) & (ax + ay <= 1.06)
        paint(octagon & ~inner, "white")
        paint((ax <= 0.7) & (ay <= 0.7) & (ax + ay <= 0.99), "red")
    elif name == "yield":  # a triangle pointing down, red rim
        tri = (y <= 0.75) & (y >= 2 * ax - 1.0)
        inner = (y <= 0.55) & (y >= 2 * ax - 0.6)
        paint(tri, "red")
        paint(inner, "white")
    elif name == "do_not_enter":
        paint(disc, "red")
        paint((ay <= 0.14) & (ax <= 0.6), "white")
    elif name in ("no_right_turn", "no_left_turn"):
        paint(disc, "red")
        paint(x * x + y * y <= 0.68 ** 2, "white")
        arrow = (ax <= 0.1) & (y >= -0.5) & (y <= 0.3)
        head = (y >= 0.2) & (y <= 0.5) & ((x if name == "no_right_turn" else -x) >= 0) \
            & ((x if name == "no_right_turn" else -x) <= 0.45) & (np.abs(y - 0.35) <= 0.1)
        paint(arrow | head, "black")
        paint((np.abs(x - y) <= 0.12) & disc, "red")
    elif name in ("oneway_right", "oneway_left"):
        paint((ay <= 0.35) & (ax <= 0.9), "black")
        sx = x if name == "oneway_right" else -x
        paint(((ay <= 0.1) & (sx >= -0.7) & (sx <= 0.3)) | ((sx >= 0.3) & (sx <= 0.75)
                                                            & (ay <= 0.75 - sx) & (ay <= 0.25)),
              "white")
    elif name in ("4_way_intersect", "right_T_intersect", "left_T_intersect",
                  "T_intersect"):
        paint(diamond, "yellow")
        up = (ax <= 0.08) & (y <= 0.55) & (y >= (-0.55 if name == "4_way_intersect" else -0.05))
        across = (ay <= 0.08) & (ax <= 0.55)
        if name == "right_T_intersect":
            across = (ay <= 0.08) & (x >= -0.05) & (x <= 0.55)
            up = (ax <= 0.08) & (ay <= 0.55)
        elif name == "left_T_intersect":
            across = (ay <= 0.08) & (x <= 0.05) & (x >= -0.55)
            up = (ax <= 0.08) & (ay <= 0.55)
        elif name == "T_intersect":
            up = (ax <= 0.08) & (y <= 0.05) & (y >= -0.55)
        paint(up | across, "black")
    elif name in ("t_light_ahead", "T_light_ahead"):
        paint(diamond, "yellow")
        paint((ax <= 0.16) & (ay <= 0.45), "black")
        for cy, colour in ((0.28, "red"), (0.0, "yellow"), (-0.28, "green")):
            paint(x * x + (y - cy) ** 2 <= 0.1 ** 2, colour)
    elif name == "duck_crossing":
        paint(diamond, "yellow")
        paint(x * x + (y + 0.1) ** 2 <= 0.25 ** 2, "black")
        paint((x - 0.12) ** 2 + (y - 0.28) ** 2 <= 0.15 ** 2, "black")
    elif name in ("pedestrian", "parking"):
        paint((ax <= 0.85) & (ay <= 0.85), "blue")
        if name == "parking":  # a P
            paint(((x >= -0.35) & (x <= -0.15) & (ay <= 0.6))
                  | ((np.hypot(x + 0.05, y - 0.25) <= 0.38)
                     & (np.hypot(x + 0.05, y - 0.25) >= 0.18) & (x >= -0.2)), "white")
        else:  # a figure
            paint((x * x + (y - 0.45) ** 2 <= 0.14 ** 2) | ((ax <= 0.12) & (y <= 0.3)
                                                           & (y >= -0.6)), "white")
    return out


def face(kind: str, tag_id: int | None) -> np.ndarray:
    """The face of sign ``kind``: its symbol above the cells of tag ``tag_id`` (a white
    square where it has none), :data:`FACE_TEXELS` of palette codes."""
    n = FACE_TEXELS[1]
    out = np.full(FACE_TEXELS, _CODE["white"], np.uint8)
    out[:n] = symbol(kind)
    if tag_id is not None:
        cells = tag36h11.cells(tag_id)
        out[n:] = np.where(np.kron(cells, np.ones((FACE_CELLS, FACE_CELLS), np.uint8)) == 1,
                           _CODE["white"], _CODE["black"])
    return out


def palette_rgb() -> np.ndarray:
    """:data:`PALETTE` as (codes, 3) float32 levels 0-255 (truncated, as pybullet takes
    a colour)."""
    return np.floor(np.array(list(PALETTE.values())) * 255.0).astype(np.float32)
