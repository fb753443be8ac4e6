"""Footprints in the plane: what robots and objects cover of the floor, how far they
overlap, and where a ray first meets them. The world without Bullet
(:mod:`dmxshm.sim.planar`) keeps robots apart and measures the time of flight with these.

A robot's footprint is two discs along its length (:data:`ROBOT_DISCS`, covering the
chassis and the wheels); an object's is the floor plan of the parts it collides with
that reach below a robot's top (:func:`object_shapes`): boxes as rectangles, cylinders
and spheres as discs. Heights are not kept: a ray at the sensor's height meets what
stands on the floor, as a part's shadow on the floor.

Example:
    >>> shapes = Shapes.of([(0, "box", 1.0, 0.0, 0.0, 0.1, 0.2)])
    >>> ray_distances(shapes, np.array([[0.0, 0.0]]), np.array([[1.0, 0.0]]), 2.0)
    array([0.9])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dmxshm.world.objects import MapObject, parts
from dmxshm.world.robot import CHASSIS_BACK_X_M, CHASSIS_FRONT_X_M

ROBOT_DISC_RADIUS_M = 0.065
"""Radius of each of a robot's two discs (the wheels' outer faces are 6.5 cm out)."""
ROBOT_DISCS = ((CHASSIS_FRONT_X_M - ROBOT_DISC_RADIUS_M, 0.0),
               (CHASSIS_BACK_X_M + ROBOT_DISC_RADIUS_M, 0.0))
"""Centres of a robot's discs in its frame (x forward from the axle midpoint): together
they span the chassis from its back (-0.12 m) to its front (0.06 m)."""
ROBOT_TOP_M = 0.115
"""A part whose bottom is above this height passes over a robot (a sign's plate)."""

# One primitive in the plane: (owner, kind, x, y, yaw, a, b): a box's half extents
# a, b; a disc's radius a.
Primitive = tuple[int, str, float, float, float, float, float]


def object_shapes(obj: MapObject, index: int, pose: tuple[float, float, float]
                  ) -> list[Primitive]:
    """The floor plan of object ``obj`` (number ``index``) at ``pose`` (x, y, yaw)."""
    x0, y0, yaw0 = pose
    c, s = math.cos(yaw0), math.sin(yaw0)
    out: list[Primitive] = []
    for p in parts(obj):
        if not p.collide:
            continue
        half = p.size[2] if p.geom == "box" else (
            p.size[1] / 2 if p.geom == "cylinder" else p.size[0])
        if p.pos[2] - half > ROBOT_TOP_M:
            continue
        px, py = x0 + c * p.pos[0] - s * p.pos[1], y0 + s * p.pos[0] + c * p.pos[1]
        if p.geom == "box":
            out.append((index, "box", px, py, yaw0 + p.yaw_rad, p.size[0], p.size[1]))
        else:
            out.append((index, "disc", px, py, 0.0, p.size[0], 0.0))
    return out


@dataclass
class Shapes:
    """Obstacles as arrays: boxes (centre, rotation, half extents) and discs."""

    box_owner: np.ndarray
    box_c: np.ndarray      # (m, 2)
    box_rot: np.ndarray    # (m, 2): cos, sin
    box_half: np.ndarray   # (m, 2)
    disc_owner: np.ndarray
    disc_c: np.ndarray     # (k, 2)
    disc_r: np.ndarray     # (k,)

    @classmethod
    def of(cls, primitives: Sequence[Primitive]) -> Shapes:
        boxes = [p for p in primitives if p[1] == "box"]
        discs = [p for p in primitives if p[1] == "disc"]
        return cls(np.array([b[0] for b in boxes], np.int64),
                   np.array([(b[2], b[3]) for b in boxes], float).reshape(-1, 2),
                   np.array([(math.cos(b[4]), math.sin(b[4])) for b in boxes],
                            float).reshape(-1, 2),
                   np.array([(b[5], b[6]) for b in boxes], float).reshape(-1, 2),
                   np.array([d[0] for d in discs], np.int64),
                   np.array([(d[2], d[3]) for d in discs], float).reshape(-1, 2),
                   np.array([d[5] for d in discs], float))

    @property
    def empty(self) -> bool:
        return len(self.box_owner) == 0 and len(self.disc_owner) == 0


def robot_discs(x: np.ndarray, y: np.ndarray, c: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The centres of every robot's discs, shape ``(robots, 2, 2)``."""
    out = np.empty((len(x), len(ROBOT_DISCS), 2))
    for k, (dx, dy) in enumerate(ROBOT_DISCS):
        out[:, k, 0] = x + c * dx - s * dy
        out[:, k, 1] = y + s * dx + c * dy
    return out


def disc_penetrations(centres: np.ndarray, radius: float, shapes: Shapes
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """How deep discs (``centres``, shape ``(n, 2)``, all of ``radius``) reach into the
    obstacles: ``depth`` (n, m) (> 0: overlapping; < 0: the gap), the unit ``normal``
    (n, m, 2) from the obstacle towards the disc, and each obstacle's owner (m,), boxes
    first, then discs."""
    depths, normals = [], []
    if len(shapes.box_owner):
        rel = centres[:, None, :] - shapes.box_c[None]            # (n, m, 2)
        cos, sin = shapes.box_rot[None, :, 0], shapes.box_rot[None, :, 1]
        lx = cos * rel[..., 0] + sin * rel[..., 1]
        ly = -sin * rel[..., 0] + cos * rel[..., 1]
        hx, hy = shapes.box_half[None, :, 0], shapes.box_half[None, :, 1]
        dx, dy = lx - np.clip(lx, -hx, hx), ly - np.clip(ly, -hy, hy)
        dist = np.hypot(dx, dy)
        inside = dist == 0.0
        # A centre inside the box leaves by the nearer side.
        out_x, out_y = hx - np.abs(lx), hy - np.abs(ly)
        by_x = inside & (out_x <= out_y)
        by_y = inside & ~by_x
        safe = np.where(inside, 1.0, dist)
        nx = np.where(by_x, np.sign(lx) + (lx == 0), np.where(by_y, 0.0, dx / safe))
        ny = np.where(by_y, np.sign(ly) + (ly == 0), np.where(by_x, 0.0, dy / safe))
        depth = np.where(by_x, radius + out_x, np.where(by_y, radius + out_y,
                                                          radius - dist))
        normals.append(np.stack([cos * nx - sin * ny, sin * nx + cos * ny], axis=-1))
        depths.append(depth)
    if len(shapes.disc_owner):
        rel = centres[:, None, :] - shapes.disc_c[None]
        dist = np.hypot(rel[..., 0], rel[..., 1])
        safe = np.where(dist == 0.0, 1.0, dist)
        n = np.where((dist == 0.0)[..., None], np.array([1.0, 0.0]), rel / safe[..., None])
        depths.append(radius + shapes.disc_r[None] - dist)
        normals.append(n)
    owners = np.concatenate([shapes.box_owner, shapes.disc_owner])
    if not depths:
        return np.zeros((len(centres), 0)), np.zeros((len(centres), 0, 2)), owners
    return np.concatenate(depths, axis=1), np.concatenate(normals, axis=1), owners


def ray_distances(shapes: Shapes, starts: np.ndarray, directions: np.ndarray,
                  max_m: float, skip_disc_owner: np.ndarray | None = None) -> np.ndarray:
    """Distance along each ray (``starts``, unit ``directions``, shape ``(n, 2)``) to the
    first obstacle it enters, ``max_m`` when none within it. A ray that starts inside a
    shape does not see it (as Bullet's ray tests). ``skip_disc_owner[i]``: a disc owner
    ray ``i`` does not see (its own robot), or -1."""
    best = np.full(len(starts), float(max_m))
    if len(shapes.box_owner):
        rel = starts[:, None, :] - shapes.box_c[None]
        cos, sin = shapes.box_rot[None, :, 0], shapes.box_rot[None, :, 1]
        sx = cos * rel[..., 0] + sin * rel[..., 1]
        sy = -sin * rel[..., 0] + cos * rel[..., 1]
        dx = cos * directions[:, None, 0] + sin * directions[:, None, 1]
        dy = -sin * directions[:, None, 0] + cos * directions[:, None, 1]
        hx, hy = shapes.box_half[None, :, 0], shapes.box_half[None, :, 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            tx1, tx2 = (-hx - sx) / dx, (hx - sx) / dx
            ty1, ty2 = (-hy - sy) / dy, (hy - sy) / dy
        # A ray parallel to a slab: inside it always, or never.
        inx = np.abs(sx) <= hx
        iny = np.abs(sy) <= hy
        lo_x = np.where(dx == 0, np.where(inx, -np.inf, np.inf), np.minimum(tx1, tx2))
        hi_x = np.where(dx == 0, np.where(inx, np.inf, -np.inf), np.maximum(tx1, tx2))
        lo_y = np.where(dy == 0, np.where(iny, -np.inf, np.inf), np.minimum(ty1, ty2))
        hi_y = np.where(dy == 0, np.where(iny, np.inf, -np.inf), np.maximum(ty1, ty2))
        enter, leave = np.maximum(lo_x, lo_y), np.minimum(hi_x, hi_y)
        hit = (enter <= leave) & (enter >= 0.0)
        if hit.any():
            best = np.minimum(best, np.where(hit, enter, np.inf).min(axis=1))
    if len(shapes.disc_owner):
        rel = starts[:, None, :] - shapes.disc_c[None]
        b = rel[..., 0] * directions[:, None, 0] + rel[..., 1] * directions[:, None, 1]
        cc = rel[..., 0] ** 2 + rel[..., 1] ** 2 - shapes.disc_r[None] ** 2
        disc = b * b - cc
        t = -b - np.sqrt(np.maximum(disc, 0.0))
        hit = (disc >= 0.0) & (cc > 0.0) & (t >= 0.0)
        if skip_disc_owner is not None:
            hit &= shapes.disc_owner[None] != skip_disc_owner[:, None]
        if hit.any():
            best = np.minimum(best, np.where(hit, t, np.inf).min(axis=1))
    return np.minimum(best, max_m)
