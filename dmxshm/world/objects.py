"""Objects on a map: duckies, cones, barriers, signs, traffic lights, houses,
buildings, trees, buses, trucks, non-agent Duckiebots and floor tags.

An object is a :class:`MapObject` (its kind, pose, height and flags, from a map
file or from :meth:`~dmxshm.world.world.World.add_object`). In a world it becomes
one static pybullet body whose collision shape is dmxshm's own simple shapes
(boxes, cylinders, spheres) sized by the object's height: robots hit it and the
time of flight ranges it. What the cameras see is the same shapes as low-polygon
triangle meshes, every object's merged into one body per colour (both renderers
draw them; a primitive shape per part cost the tiny renderer more: see
docs/benchmarks.md, issue 28). No mesh is taken from another project.

Poses are dmxshm's world frame (x east, y north, metres, origin the map's
south-west corner) and ``yaw`` counter-clockwise from east. At yaw 0 an object
faces east (+x): a sign shows its face to a robot driving west towards it, a
vehicle points east (gym-duckietown's convention: "models should, at angle 0,
face towards the positive X axis").

Kinds (:data:`KINDS`), each with the height it gets when the map gives none:

================================  ========  ===================================
kind                              height m  shape (h = height)
================================  ========  ===================================
``duckie``                        0.06      body and head spheres, yellow
``cone``                          0.08      three stacked cylinders, orange
``barrier``                       0.08      a 4h x 0.5h x h box, red and white
``sign_*`` (:data:`SIGN_KINDS`)   0.18      a pole and a 0.5h x 0.4h plate
``trafficlight``                  0.40      a pole and a lamp box
``house``                         0.50      a box and a darker roof box
``building``                      0.60      a tall grey box
``tree``                          0.25      a trunk cylinder and a crown sphere
``bus``                           0.18      a 2.5h x 1.1h x h yellow box
``truck``                         0.20      a cab and a cargo box
``duckiebot``                     0.12      a chassis box and two wheels
``checkerboard``                  0.30      a thin standing board
``floor_tag``                     0.001     a flat black 6.5 cm square, no
                                            collision (an AprilTag's place)
================================  ========  ===================================

A sign or a floor tag may carry an AprilTag id (``tag_id``) where the map
format gives one; it is kept and reported, not drawn as a pattern.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dmxshm.errors import DmxError
from dmxshm.world import tag36h11

SIGN_KINDS = (
    "sign_stop", "sign_yield", "sign_no_right_turn", "sign_no_left_turn",
    "sign_do_not_enter", "sign_oneway_right", "sign_oneway_left", "sign_4_way_intersect",
    "sign_right_T_intersect", "sign_left_T_intersect", "sign_T_intersect",
    "sign_pedestrian", "sign_t_light_ahead", "sign_T_light_ahead", "sign_duck_crossing",
    "sign_parking", "sign_blank",
)
"""The sign kinds of duckietown-world's map format (its ``SIGNS``)."""

DEFAULT_HEIGHT_M = {
    "duckie": 0.06, "cone": 0.08, "barrier": 0.08, "trafficlight": 0.40, "house": 0.50,
    "building": 0.60, "tree": 0.25, "bus": 0.18, "truck": 0.20, "duckiebot": 0.12,
    "checkerboard": 0.30, "floor_tag": 0.001, **{k: 0.18 for k in SIGN_KINDS},
}
"""Height of each kind when the map gives none."""

KINDS = tuple(DEFAULT_HEIGHT_M)
"""Every object kind a map may use."""

FLOOR_TAG_SIZE_M = 0.065
"""Side of a floor tag (duckietown-world's ``DEFAULT_TAG_SIZE``)."""

_SIGN_FACE_RGBA = {
    "sign_stop": (0.80, 0.08, 0.08, 1.0), "sign_yield": (0.95, 0.95, 0.95, 1.0),
    "sign_do_not_enter": (0.80, 0.08, 0.08, 1.0), "sign_pedestrian": (0.15, 0.35, 0.80, 1.0),
    "sign_parking": (0.15, 0.35, 0.80, 1.0), "sign_duck_crossing": (0.95, 0.80, 0.10, 1.0),
}
_DEFAULT_SIGN_RGBA = (0.92, 0.92, 0.92, 1.0)


class ObjectError(DmxError, ValueError):
    """An object was given an unknown kind or an invalid pose or size."""


@dataclass(frozen=True)
class MapObject:
    """One object on a map.

    Attributes:
        name: its name in the map (unique within a map).
        kind: one of :data:`KINDS`.
        x_m, y_m: position in the world frame.
        yaw_rad: heading, counter-clockwise from east.
        height_m: height; the shape is scaled by it.
        static: False for an object that moves along its lane.
        optional: may be dropped under randomisation (kept otherwise).
        tag_id: the AprilTag id a sign or a floor tag carries, if given.
        color: a colour name the format gives (duckies, vehicles), if any.
        speed_m_s: for a moving object, its speed along its lane (0: the kind's
            default, :data:`dmxshm.world.movers.DEFAULT_SPEED_M_S`).
    """

    name: str
    kind: str
    x_m: float
    y_m: float
    yaw_rad: float = 0.0
    height_m: float = 0.0
    static: bool = True
    optional: bool = False
    tag_id: int | None = None
    color: str | None = None
    speed_m_s: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ObjectError(f"unknown object kind {self.kind!r}; known kinds: "
                              f"{', '.join(KINDS)}")
        for name in ("x_m", "y_m", "yaw_rad"):
            if not math.isfinite(getattr(self, name)):
                raise ObjectError(f"object {self.name!r}: {name} must be finite")
        if self.height_m == 0.0:
            object.__setattr__(self, "height_m", DEFAULT_HEIGHT_M[self.kind])
        if not (self.height_m > 0 and math.isfinite(self.height_m)):
            raise ObjectError(f"object {self.name!r}: height {self.height_m!r} must be a "
                              "positive number of metres")
        if not (self.speed_m_s >= 0 and math.isfinite(self.speed_m_s)):
            raise ObjectError(f"object {self.name!r}: speed {self.speed_m_s!r} must be a "
                              "number of metres per second >= 0")
        if self.static and self.speed_m_s:
            raise ObjectError(f"object {self.name!r}: a static object has no speed (give "
                              "static false to move it along its lane)")
        if not self.static and not self.collides:
            raise ObjectError(f"object {self.name!r}: a {self.kind} cannot move")
        if self.tag_id is not None:
            try:
                tag36h11.check_id(self.tag_id)
            except ValueError as exc:
                raise ObjectError(f"object {self.name!r}: {exc}") from None

    @property
    def collides(self) -> bool:
        """Whether robots hit it (every kind but floor tags)."""
        return self.kind != "floor_tag"

    def to_dict(self) -> dict[str, Any]:
        """The object as JSON (the summary's and the log's ``objects``)."""
        return {"name": self.name, "kind": self.kind, "x_m": self.x_m, "y_m": self.y_m,
                "yaw_rad": self.yaw_rad, "height_m": self.height_m, "static": self.static,
                "optional": self.optional, "tag_id": self.tag_id, "color": self.color,
                **({} if self.static else {"speed_m_s": self.speed_m_s})}



@dataclass
class Part:
    """One primitive of an object's shape, in the object's frame (z up from the floor)."""

    geom: str  # "box", "cylinder" or "sphere"
    size: tuple[float, ...]  # box half extents; cylinder (radius, length); sphere (radius,)
    pos: tuple[float, float, float]
    rgba: tuple[float, float, float, float]
    collide: bool = True
    yaw_rad: float = 0.0


_VEHICLE_RGBA = {"red": (0.75, 0.12, 0.10, 1.0), "blue": (0.15, 0.30, 0.75, 1.0),
                 "green": (0.15, 0.55, 0.20, 1.0), "grey": (0.5, 0.5, 0.5, 1.0),
                 "yellow": (0.95, 0.80, 0.10, 1.0)}


def parts(obj: MapObject) -> list[Part]:
    """The primitives an object is drawn and collides with, sized by its height."""
    h, k = obj.height_m, obj.kind
    if k == "duckie":
        yellow = _VEHICLE_RGBA.get(obj.color or "", (0.98, 0.85, 0.10, 1.0))
        return [Part("sphere", (0.32 * h,), (0.0, 0.0, 0.32 * h), yellow),
                Part("sphere", (0.22 * h,), (0.12 * h, 0.0, 0.78 * h), yellow),
                Part("box", (0.10 * h, 0.08 * h, 0.04 * h), (0.36 * h, 0.0, 0.74 * h),
                     (0.95, 0.45, 0.05, 1.0), collide=False)]
    if k == "cone":
        orange, white = (0.98, 0.42, 0.05, 1.0), (0.95, 0.95, 0.95, 1.0)
        return [Part("cylinder", (0.30 * h, 0.34 * h), (0.0, 0.0, 0.17 * h), orange),
                Part("cylinder", (0.21 * h, 0.33 * h), (0.0, 0.0, 0.505 * h), white),
                Part("cylinder", (0.11 * h, 0.33 * h), (0.0, 0.0, 0.835 * h), orange)]
    if k == "barrier":
        return [Part("box", (2.0 * h, 0.25 * h, 0.25 * h), (0.0, 0.0, 0.75 * h),
                     (0.85, 0.12, 0.10, 1.0)),
                Part("box", (2.0 * h, 0.25 * h, 0.25 * h), (0.0, 0.0, 0.25 * h),
                     (0.95, 0.95, 0.95, 1.0))]
    if k.startswith("sign_"):
        face = _SIGN_FACE_RGBA.get(k, _DEFAULT_SIGN_RGBA)
        return [Part("cylinder", (0.04 * h, 0.62 * h), (0.0, 0.0, 0.31 * h),
                     (0.55, 0.55, 0.55, 1.0)),
                Part("box", (0.02 * h, 0.25 * h, 0.2 * h), (0.0, 0.0, 0.8 * h),
                     (0.1, 0.1, 0.1, 1.0)),
                Part("box", (0.003 * h, 0.22 * h, 0.17 * h), (0.022 * h, 0.0, 0.8 * h),
                     face, collide=False)]
    if k == "trafficlight":
        return [Part("cylinder", (0.025 * h, 0.8 * h), (0.0, 0.0, 0.4 * h),
                     (0.35, 0.35, 0.35, 1.0)),
                Part("box", (0.06 * h, 0.06 * h, 0.1 * h), (0.0, 0.0, 0.9 * h),
                     (0.08, 0.08, 0.08, 1.0)),
                Part("sphere", (0.035 * h,), (0.06 * h, 0.0, 0.93 * h),
                     (0.9, 0.1, 0.1, 1.0), collide=False)]
    if k == "house":
        return [Part("box", (0.5 * h, 0.35 * h, 0.3 * h), (0.0, 0.0, 0.3 * h),
                     (0.85, 0.75, 0.55, 1.0)),
                Part("box", (0.55 * h, 0.4 * h, 0.2 * h), (0.0, 0.0, 0.8 * h),
                     (0.65, 0.15, 0.12, 1.0))]
    if k == "building":
        return [Part("box", (0.3 * h, 0.3 * h, 0.5 * h), (0.0, 0.0, 0.5 * h),
                     (0.6, 0.62, 0.66, 1.0))]
    if k == "tree":
        return [Part("cylinder", (0.06 * h, 0.5 * h), (0.0, 0.0, 0.25 * h),
                     (0.45, 0.28, 0.12, 1.0)),
                Part("sphere", (0.3 * h,), (0.0, 0.0, 0.7 * h), (0.12, 0.45, 0.15, 1.0))]
    if k == "bus":
        return [Part("box", (1.25 * h, 0.55 * h, 0.45 * h), (0.0, 0.0, 0.55 * h),
                     _VEHICLE_RGBA.get(obj.color or "", (0.95, 0.75, 0.1, 1.0)))]
    if k == "truck":
        rgba = _VEHICLE_RGBA.get(obj.color or "", (0.2, 0.35, 0.75, 1.0))
        return [Part("box", (0.3 * h, 0.5 * h, 0.4 * h), (1.0 * h, 0.0, 0.5 * h), rgba),
                Part("box", (0.95 * h, 0.5 * h, 0.45 * h), (-0.3 * h, 0.0, 0.55 * h),
                     (0.85, 0.85, 0.85, 1.0))]
    if k == "duckiebot":
        rgba = _VEHICLE_RGBA.get(obj.color or "", (0.75, 0.12, 0.10, 1.0))
        return [Part("box", (0.75 * h, 0.45 * h, 0.3 * h), (0.0, 0.0, 0.5 * h), rgba),
                Part("cylinder", (0.28 * h, 0.1 * h), (0.2 * h, 0.5 * h, 0.28 * h),
                     (0.1, 0.1, 0.1, 1.0), collide=False),
                Part("cylinder", (0.28 * h, 0.1 * h), (0.2 * h, -0.5 * h, 0.28 * h),
                     (0.1, 0.1, 0.1, 1.0), collide=False)]
    if k == "checkerboard":
        return [Part("box", (0.01, 0.5 * h, 0.4 * h), (0.0, 0.0, 0.5 * h),
                     (0.9, 0.9, 0.9, 1.0))]
    # floor_tag
    s = FLOOR_TAG_SIZE_M / 2
    return [Part("box", (s, s, obj.height_m / 2), (0.0, 0.0, 0.0015), (0.05, 0.05, 0.05, 1.0),
                 collide=False)]


def footprint_m(obj: MapObject) -> float:
    """The radius, from the object's position, of the floor its collision shape covers
    (0 for what nothing hits)."""
    out = 0.0
    for p in parts(obj):
        if p.collide:
            reach = math.hypot(*p.size[:2]) if p.geom == "box" else p.size[0]
            out = max(out, math.hypot(p.pos[0], p.pos[1]) + reach)
    return out


def _box(hx: float, hy: float, hz: float,
         bottom: bool = True) -> tuple[list[list[float]], list[list[float]]]:
    """Triangles (flat: three vertices each, with their normals) of a box; without its
    bottom face if ``bottom`` is False (a box standing on the floor)."""
    tris: list[list[float]] = []
    norms: list[list[float]] = []
    for axis in range(3):
        for sign in (-1.0, 1.0):
            if axis == 2 and sign < 0 and not bottom:
                continue
            n = [0.0, 0.0, 0.0]
            n[axis] = sign
            u, v = [(1, 2), (2, 0), (0, 1)][axis]
            corners = []
            for a, b in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
                p = [0.0, 0.0, 0.0]
                p[axis] = sign
                p[u], p[v] = a, b
                corners.append([p[0] * hx, p[1] * hy, p[2] * hz])
            quad = [corners[0], corners[1], corners[2], corners[0], corners[2], corners[3]]
            if sign < 0:  # counter-clockwise seen from outside
                quad = quad[::-1]
            tris += quad
            norms += [n] * 6
    return tris, norms


CYLINDER_SIDES = 8
SPHERE_RINGS, SPHERE_SEGMENTS = 4, 8
"""The tessellation of the shapes cameras see: the tiny renderer's time follows the
triangles more than the pixels (50 duckies, two spheres each, cost a 160x120 frame
more than 50 houses; docs/benchmarks.md, issue 28)."""


def _cylinder(r: float, length: float,
              bottom: bool = True) -> tuple[list[list[float]], list[list[float]]]:
    tris: list[list[float]] = []
    norms: list[list[float]] = []
    h = length / 2
    ring = [(math.cos(2 * math.pi * k / CYLINDER_SIDES), math.sin(2 * math.pi * k / CYLINDER_SIDES))
            for k in range(CYLINDER_SIDES + 1)]
    for (c0, s0), (c1, s1) in zip(ring[:-1], ring[1:], strict=True):
        a, b = [r * c0, r * s0, -h], [r * c1, r * s1, -h]
        c, d = [r * c1, r * s1, h], [r * c0, r * s0, h]
        tris += [a, b, c, a, c, d]
        mid = [(c0 + c1) / 2, (s0 + s1) / 2, 0.0]
        norms += [mid] * 6
        tris += [[0.0, 0.0, h], d, c]
        norms += [[0.0, 0.0, 1.0]] * 3
        if bottom:
            tris += [[0.0, 0.0, -h], b, a]
            norms += [[0.0, 0.0, -1.0]] * 3
    return tris, norms


def _sphere(r: float) -> tuple[list[list[float]], list[list[float]]]:
    tris: list[list[float]] = []
    norms: list[list[float]] = []

    def at(i: int, j: int) -> list[float]:
        lat = math.pi * i / SPHERE_RINGS - math.pi / 2
        lon = 2 * math.pi * j / SPHERE_SEGMENTS
        return [math.cos(lat) * math.cos(lon), math.cos(lat) * math.sin(lon), math.sin(lat)]

    for i in range(SPHERE_RINGS):
        for j in range(SPHERE_SEGMENTS):
            a, b, c, d = at(i, j), at(i, j + 1), at(i + 1, j + 1), at(i + 1, j)
            for tri in ((a, b, c), (a, c, d)):
                tris += [[r * q for q in p] for p in tri]
                norms += [p for p in tri]
    return tris, norms


def _part_triangles(p: Part) -> tuple[list[list[float]], list[list[float]]]:
    if p.geom == "box":  # a face on the floor is never seen
        hx, hy, hz = p.size
        return _box(hx, hy, hz, bottom=p.pos[2] - hz > 1e-6)
    if p.geom == "cylinder":
        return _cylinder(p.size[0], p.size[1], bottom=p.pos[2] - p.size[1] / 2 > 1e-6)
    return _sphere(p.size[0])


Meshes = dict[tuple[float, ...], tuple[list[list[float]], list[list[float]]]]
"""Triangles by colour: ``{rgba: (vertices, normals)}``."""


def object_meshes(objects: list[MapObject], local: bool = False) -> Meshes:
    """Every object's visible shape as flat triangles in world coordinates, merged by
    colour: ``{rgba: (vertices, normals)}``, three vertices a triangle (dmxshm's own
    low-polygon spheres and cylinders: one mesh per colour costs the renderer far
    less than a primitive shape per part). ``local``: in each object's own frame (for
    one that moves) instead."""
    out: Meshes = {}
    for obj in objects:
        yaw, ox, oy = (0.0, 0.0, 0.0) if local else (obj.yaw_rad, obj.x_m, obj.y_m)
        c, s = math.cos(yaw), math.sin(yaw)
        for p in parts(obj):
            tris, norms = _part_triangles(p)
            pc, ps = math.cos(p.yaw_rad), math.sin(p.yaw_rad)
            verts, vns = out.setdefault(p.rgba, ([], []))
            for (x, y, z), (nx, ny, nz) in zip(tris, norms, strict=True):
                x, y = pc * x - ps * y, ps * x + pc * y  # the part's own turn
                nx, ny = pc * nx - ps * ny, ps * nx + pc * ny
                x, y, z = x + p.pos[0], y + p.pos[1], z + p.pos[2]
                verts.append([ox + c * x - s * y, oy + s * x + c * y, z])
                vns.append([c * nx - s * ny, s * nx + c * ny, nz])
    return out


def build_objects(objects: list[MapObject], client: int, visuals: bool = True,
                  mesh_files: bool = False) -> tuple[list[int], dict[int, list[int]]]:
    """Create ``objects`` in ``client``: one collision body each, with no mass, and the
    visible shapes of the static ones merged into one mesh body per colour.

    A body without a visual shape would be drawn from its collision shape, so each
    collision body wears a speck of a box half a metre under the floor.

    Returns:
        The collision bodies, in order; and for each moving object (by its index) its
        own visual bodies, one per colour in its own frame, to move with its collision
        body (:mod:`dmxshm.world.movers`).
    """
    from dmxshm._pybullet import pb

    if not objects:
        return [], {}
    hidden = pb.createVisualShape(pb.GEOM_BOX, halfExtents=[1e-4] * 3,
                                  visualFramePosition=[0.0, 0.0, -0.5],
                                  rgbaColor=[0.0, 0.0, 0.0, 1.0], physicsClientId=client)
    ids = [_collision_body(o, client, hidden) for o in objects]
    moving: dict[int, list[int]] = {}
    if visuals:
        _mesh_bodies(object_meshes([o for o in objects if o.static]), client, mesh_files)
        for i, o in enumerate(objects):
            if not o.static:
                moving[i] = _mesh_bodies(object_meshes([o], local=True), client, mesh_files)
    return ids, moving


def _mesh_bodies(meshes: Meshes, client: int, mesh_files: bool) -> list[int]:
    from dmxshm._pybullet import pb
    from dmxshm.world.meshfiles import obj_file

    out = []
    for rgba, (verts, norms) in meshes.items():
        indices = list(range(len(verts)))
        if mesh_files:
            shape = pb.createVisualShape(pb.GEOM_MESH, fileName=obj_file(verts, indices, norms),
                                         rgbaColor=list(rgba), physicsClientId=client)
        else:
            shape = pb.createVisualShape(pb.GEOM_MESH, vertices=verts, indices=indices,
                                         normals=norms, rgbaColor=list(rgba),
                                         physicsClientId=client)
        out.append(pb.createMultiBody(0.0, -1, shape, physicsClientId=client))
    return out


def _collision_body(obj: MapObject, client: int, visual: int) -> int:
    from dmxshm._pybullet import pb

    shapes = [p for p in parts(obj) if p.collide]
    geom = {"box": pb.GEOM_BOX, "cylinder": pb.GEOM_CYLINDER, "sphere": pb.GEOM_SPHERE}
    collision = -1
    if shapes:
        kw: dict[str, list[Any]] = {k: [] for k in (
            "shapeTypes", "halfExtents", "radii", "lengths", "collisionFramePositions",
            "collisionFrameOrientations")}
        for p in shapes:
            kw["shapeTypes"].append(geom[p.geom])
            kw["halfExtents"].append(list(p.size) if p.geom == "box" else [0.0, 0.0, 0.0])
            kw["radii"].append(p.size[0] if p.geom != "box" else 0.0)
            kw["lengths"].append(p.size[1] if p.geom == "cylinder" else 0.0)
            kw["collisionFramePositions"].append(list(p.pos))
            kw["collisionFrameOrientations"].append(
                [0.0, 0.0, math.sin(p.yaw_rad / 2), math.cos(p.yaw_rad / 2)])
        collision = pb.createCollisionShapeArray(physicsClientId=client, **kw)
    quat = (0.0, 0.0, math.sin(obj.yaw_rad / 2), math.cos(obj.yaw_rad / 2))
    return pb.createMultiBody(0.0, collision, visual, (obj.x_m, obj.y_m, 0.0), quat,
                              physicsClientId=client)
