"""The objects of the Duckietown look as low-polygon shapes of the project's own: each
kind a handful of convex solids (boxes, prisms, cones cut or whole, roof wedges,
spheres), sized by the object's height as its collision shape is
(:func:`dmxshm.world.objects.parts`), so the objects stand where they stand in physics.

A duckie has its head, beak, eyes and tail; a cone its base and white band; a barrier
its red and white planks on two legs; a traffic light its three lamps; a house its
walls, roof, door, windows and chimney; a building its window bands; a tree its trunk
and three tiers of a fir; a bus and a truck their windows and wheels. Signs are drawn
from :mod:`dmxshm.world.sign_faces`, a Duckiebot object as the robots are; a kind
without a shape here (``checkerboard``) keeps its flat one.

Example:
    >>> from dmxshm.world.objects import MapObject
    >>> [s.geom for s in solids(MapObject("d", "duckie", 0.0, 0.0, height_m=0.06))]
    ['sphere', 'sphere', 'wedge', 'sphere', 'sphere', 'frustum']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

GEOMS = ("box", "cylinder", "sphere", "frustum", "wedge")
"""A solid's kinds: ``box`` (half extents), ``cylinder`` (radius, length), ``sphere``
(radius,), ``frustum`` (bottom radius, top radius, length: a cone when the top is 0)
and ``wedge`` (half extents: a roof, its ridge along x at the top)."""


@dataclass(frozen=True)
class Solid:
    """One convex solid of an object's shape, in the object's frame (x ahead, z up from
    the floor). ``axis`` is the axis of a cylinder or frustum (``z``, or ``y`` for a
    wheel)."""

    geom: str
    size: tuple[float, ...]
    pos: tuple[float, float, float]
    rgb: tuple[float, float, float]
    axis: str = "z"


YELLOW = (0.98, 0.85, 0.10)
ORANGE = (0.98, 0.45, 0.05)
BLACK = (0.05, 0.05, 0.05)
WHITE = (0.95, 0.95, 0.95)
GLASS = (0.20, 0.30, 0.40)
TYRE = (0.08, 0.08, 0.08)
GREY = (0.55, 0.55, 0.55)
RED = (0.85, 0.12, 0.10)
_VEHICLE = {"red": (0.75, 0.12, 0.10), "blue": (0.15, 0.30, 0.75),
            "green": (0.15, 0.55, 0.20), "grey": (0.50, 0.50, 0.50),
            "yellow": (0.95, 0.80, 0.10)}


def solids(obj: Any) -> list[Solid]:
    """``obj``'s shape in the Duckietown look (empty: a kind drawn otherwise)."""
    make = _KINDS.get(obj.kind)
    return [] if make is None else make(obj.height_m, obj.color)


def _duckie(h: float, color: str | None) -> list[Solid]:
    body = _VEHICLE.get(color or "", YELLOW)
    return [Solid("sphere", (0.32 * h,), (0.0, 0.0, 0.32 * h), body),
            Solid("sphere", (0.22 * h,), (0.12 * h, 0.0, 0.78 * h), body),
            Solid("wedge", (0.09 * h, 0.08 * h, 0.035 * h), (0.38 * h, 0.0, 0.73 * h), ORANGE),
            Solid("sphere", (0.04 * h,), (0.28 * h, 0.09 * h, 0.86 * h), BLACK),
            Solid("sphere", (0.04 * h,), (0.28 * h, -0.09 * h, 0.86 * h), BLACK),
            Solid("frustum", (0.12 * h, 0.0, 0.18 * h), (-0.30 * h, 0.0, 0.48 * h), body)]


def _cone(h: float, color: str | None) -> list[Solid]:
    def radius(z: float) -> float:  # of the cone's side at height z
        return 0.30 * h - 0.24 * h * (z - 0.06 * h) / (0.94 * h)

    band = (0.40 * h, 0.62 * h)
    return [Solid("box", (0.36 * h, 0.36 * h, 0.03 * h), (0.0, 0.0, 0.03 * h), ORANGE),
            Solid("frustum", (0.30 * h, 0.06 * h, 0.94 * h), (0.0, 0.0, 0.53 * h), ORANGE),
            Solid("frustum", (radius(band[0]) + 0.01 * h, radius(band[1]) + 0.01 * h,
                              band[1] - band[0]), (0.0, 0.0, sum(band) / 2), WHITE)]


def _barrier(h: float, color: str | None) -> list[Solid]:
    out = []
    for x in (-1.7 * h, 1.7 * h):
        out += [Solid("box", (0.05 * h, 0.05 * h, 0.5 * h), (x, 0.0, 0.5 * h), GREY),
                Solid("box", (0.08 * h, 0.35 * h, 0.03 * h), (x, 0.0, 0.03 * h), GREY)]
    for z in (0.32 * h, 0.72 * h):  # two planks of red and white stripes
        for k in range(5):
            x = -2.0 * h + (k + 0.5) * 4.0 * h / 5
            out.append(Solid("box", (2.0 * h / 5, 0.06 * h, 0.11 * h), (x, 0.0, z),
                             RED if (k + (z > 0.5 * h)) % 2 == 0 else WHITE))
    return out


def _traffic_light(h: float, color: str | None) -> list[Solid]:
    return [Solid("box", (0.08 * h, 0.08 * h, 0.01 * h), (0.0, 0.0, 0.01 * h), GREY),
            Solid("cylinder", (0.02 * h, 0.76 * h), (0.0, 0.0, 0.40 * h), GREY),
            Solid("box", (0.05 * h, 0.05 * h, 0.13 * h), (0.0, 0.0, 0.87 * h), BLACK),
            Solid("sphere", (0.025 * h,), (0.05 * h, 0.0, 0.95 * h), RED),
            Solid("sphere", (0.025 * h,), (0.05 * h, 0.0, 0.87 * h), (0.95, 0.75, 0.10)),
            Solid("sphere", (0.025 * h,), (0.05 * h, 0.0, 0.79 * h), (0.15, 0.75, 0.25))]


def _house(h: float, color: str | None) -> list[Solid]:
    walls = (0.85, 0.75, 0.55)
    return [Solid("box", (0.5 * h, 0.35 * h, 0.3 * h), (0.0, 0.0, 0.3 * h), walls),
            Solid("wedge", (0.55 * h, 0.42 * h, 0.14 * h), (0.0, 0.0, 0.74 * h),
                  (0.65, 0.15, 0.12)),
            Solid("box", (0.05 * h, 0.05 * h, 0.12 * h), (0.3 * h, 0.15 * h, 0.8 * h),
                  (0.45, 0.20, 0.15)),
            Solid("box", (0.07 * h, 0.01 * h, 0.12 * h), (0.0, 0.35 * h, 0.12 * h),
                  (0.40, 0.25, 0.12)),
            *[Solid("box", (0.07 * h, 0.01 * h, 0.06 * h), (x, y, 0.38 * h), GLASS)
              for x in (-0.3 * h, 0.3 * h) for y in (-0.35 * h, 0.35 * h)]]


def _building(h: float, color: str | None) -> list[Solid]:
    return [Solid("box", (0.3 * h, 0.3 * h, 0.5 * h), (0.0, 0.0, 0.5 * h), (0.6, 0.62, 0.66)),
            *[Solid("box", (0.31 * h, 0.31 * h, 0.05 * h), (0.0, 0.0, z), GLASS)
              for z in (0.4 * h, 0.75 * h)]]


def _tree(h: float, color: str | None) -> list[Solid]:
    return [Solid("cylinder", (0.06 * h, 0.4 * h), (0.0, 0.0, 0.2 * h), (0.45, 0.28, 0.12)),
            Solid("frustum", (0.34 * h, 0.0, 0.45 * h), (0.0, 0.0, 0.50 * h),
                  (0.10, 0.40, 0.14)),
            Solid("frustum", (0.27 * h, 0.0, 0.38 * h), (0.0, 0.0, 0.68 * h),
                  (0.12, 0.46, 0.16)),
            Solid("frustum", (0.19 * h, 0.0, 0.30 * h), (0.0, 0.0, 0.85 * h),
                  (0.14, 0.52, 0.18))]


def _wheels(h: float, xs: tuple[float, ...], y: float, r: float) -> list[Solid]:
    return [Solid("cylinder", (r, 0.1 * h), (x, s * y, r), TYRE, axis="y")
            for x in xs for s in (1.0, -1.0)]


def _bus(h: float, color: str | None) -> list[Solid]:
    body = _VEHICLE.get(color or "", (0.95, 0.75, 0.10))
    return [Solid("box", (1.25 * h, 0.55 * h, 0.40 * h), (0.0, 0.0, 0.60 * h), body),
            Solid("box", (1.20 * h, 0.56 * h, 0.11 * h), (0.0, 0.0, 0.76 * h), GLASS),
            Solid("box", (0.01 * h, 0.48 * h, 0.13 * h), (1.25 * h, 0.0, 0.74 * h), GLASS),
            Solid("box", (1.27 * h, 0.50 * h, 0.03 * h), (0.0, 0.0, 0.22 * h), GREY),
            *_wheels(h, (0.8 * h, -0.8 * h), 0.52 * h, 0.16 * h)]


def _truck(h: float, color: str | None) -> list[Solid]:
    cab = _VEHICLE.get(color or "", (0.2, 0.35, 0.75))
    return [Solid("box", (0.3 * h, 0.5 * h, 0.38 * h), (1.0 * h, 0.0, 0.52 * h), cab),
            Solid("box", (0.01 * h, 0.42 * h, 0.12 * h), (1.3 * h, 0.0, 0.72 * h), GLASS),
            Solid("box", (0.95 * h, 0.5 * h, 0.43 * h), (-0.3 * h, 0.0, 0.57 * h),
                  (0.85, 0.85, 0.85)),
            *_wheels(h, (1.0 * h, -0.1 * h, -0.8 * h), 0.5 * h, 0.17 * h)]


_KINDS = {"duckie": _duckie, "cone": _cone, "barrier": _barrier,
          "trafficlight": _traffic_light, "house": _house, "building": _building,
          "tree": _tree, "bus": _bus, "truck": _truck}
"""Each kind drawn here, by kind."""
