"""The batch renderer (``--renderer batch``): every camera of a process in one call.

The Duckietown world is a flat ground of road, markings and grass, a few dozen
simple shapes, and robots, seen by cameras whose geometry is known in advance. This
renderer draws it by casting one ray per pixel, for every camera of a call at once,
in compiled code (:mod:`dmxshm.matrix.raycast`, numba):

* the **ground** is a material map: the map's flat quads (:func:`~dmxshm.world.scene.
  map_quads`: grass, asphalt, floor, markings) and floor tags rasterised once into
  texels of :data:`TEXEL_M` (coarser for a big map, :data:`MAX_TEXELS` at most); in
  the flat look, the apron around the map is grass and beyond it is the background;
  in the Duckietown look, the room's floor (:data:`ROOM_RGBA`) is all around;
* **objects and robots** are convex polyhedra: the objects' boxes and their
  tessellated cylinders and spheres as :mod:`dmxshm.world.objects` builds them for
  the other renderers, the robots' chassis, duck, beak, wheels and caster as their
  URDF has them; static ones placed once, moving objects at the state's time, robots
  at their states' poses. A camera never sees its own robot (as in the other
  renderers' batch scene);
* the **lens** is in the rays: each pixel's undistorted direction is computed once
  per camera model, so a lens camera costs what a pinhole camera costs;
* **shading** is pybullet's tiny renderer's (ambient 0.6, diffuse 0.35, specular
  0.05), with its ground: pybullet gives a mesh without normals (the scene's ground)
  the direction of each vertex from the world's origin as its normal, so tiny's
  ground darkens and brightens with the bearing from the map's origin; this renderer
  shades its ground the same way so that its images agree with tiny's (the default).

Appearance randomisation reaches it as the other renderers: each camera's light
direction (in the shading), its shades of road, markings and grass (in its palette);
brightness, contrast and channel gains are applied by the caller, after it.

The images are deterministic: each pixel is computed on its own, the same however
cameras are grouped into calls and processes.
"""

from __future__ import annotations

import math
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dmxshm.errors import DmxError
from dmxshm.matrix.camera import LOOKS  # (re-exported: the looks the renderer draws)
from dmxshm.world import object_meshes, sign_faces
from dmxshm.world.objects import (
    CYLINDER_SIDES,
    DEFAULT_HEIGHT_M,
    FLOOR_TAG_SIZE_M,
    SIGN_KINDS,
    SPHERE_RINGS,
    SPHERE_SEGMENTS,
    MapObject,
    parts,
)
from dmxshm.world.randomize import LOOK_NOMINAL
from dmxshm.world.robot import WHEEL_RADIUS_M
from dmxshm.world.scene import APRON_M, COLORS_RGBA, SHADED, SPEC_DASH_M, map_quads

TEXEL_M = 0.002
"""The material map's texel: 1 mm (a 640x480 camera's nearest pixels see about 1.5 mm
of road)."""
MAX_TEXELS = 24_000_000
"""The largest material map (a bigger map gets coarser texels)."""
MAX_IMAGE_PIXELS = 1920 * 1080
"""The largest image the batch renderer draws (as the network's own limit)."""
BACKGROUND = (255, 255, 255)
"""Where a ray meets nothing: the tiny renderer's white."""
MATERIALS = ("grass", "asphalt", "floor", "room", "white", "yellow", "red", "tag")
"""The ground's materials, in the material map's codes (the surfaces first: the
Duckietown look's grain is on the first :data:`~dmxshm.matrix.raycast.GRAINED`;
``room`` is the Duckietown look's ground around the map)."""
ROOM_RGBA = (0.15, 0.15, 0.15, 1.0)
"""The Duckietown look's ground around the map: the room's floor the map lies on,
gym-duckietown's ground colour (its ``color_ground``)."""
DUCKIETOWN_RGBA = {**COLORS_RGBA, "white": (1.0, 1.0, 1.0, 1.0),
                   "yellow": (0.90, 0.82, 0.12, 1.0), "room": ROOM_RGBA}
"""The Duckietown look's ground colours: the markings' tape as Duckietown's line
detector's colour ranges take it (dt-core's ``line_detector`` defaults, HSV in
OpenCV's units: white S <= 100 and V >= 150, yellow H 25-45, red H <= 15 or >= 165)
under the look's light; the room's floor around the map; the rest as the flat
look's."""
SKY_RGB = ((0.45, 0.82, 1.0), (0.80, 0.88, 0.94))
"""The Duckietown look's sky at the zenith (gym-duckietown's sky blue) and at the
horizon."""
ROOM_LIGHT = (0.78, 0.22)
"""The Duckietown look's light on objects and robots: ambient and directional, as in a
room lit from everywhere (the flat look's is pybullet's 0.6 and 0.35, which leaves a
face turned from the light, a sign's facing the robot among them, at 0.6)."""
GRAIN = 0.08
"""The Duckietown look's grain on its surfaces (grass, asphalt, floor, the room's
floor): brightness +-8%."""
TAG_RGBA = (0.05, 0.05, 0.05, 1.0)
"""A floor tag's colour (as :mod:`dmxshm.world.objects` draws it)."""
ROBOT_CYLINDER_SIDES = 32
"""The robots' wheels: 32-sided prisms (as pybullet tessellates a URDF cylinder)."""


class BatchRenderError(DmxError, ValueError):
    """The batch renderer cannot draw what was asked (an image beyond its limit)."""


# -- convex polyhedra ---------------------------------------------------------------
def box_planes(hx: float, hy: float, hz: float) -> np.ndarray:
    """The 6 planes ``n . p <= d`` of a box of half extents, centred at the origin."""
    out = []
    for axis, h in enumerate((hx, hy, hz)):
        for sign in (1.0, -1.0):
            n = [0.0, 0.0, 0.0]
            n[axis] = sign
            out.append([*n, h])
    return np.array(out)


def prism_planes(radius: float, length: float, sides: int) -> np.ndarray:
    """A cylinder as :mod:`dmxshm.world.objects` tessellates it (axis z, ``sides``
    faces between vertices at angles ``2 pi k / sides``): its side planes and caps."""
    out = []
    apothem = radius * math.cos(math.pi / sides)
    for k in range(sides):
        a = 2 * math.pi * (k + 0.5) / sides
        out.append([math.cos(a), math.sin(a), 0.0, apothem])
    out += [[0.0, 0.0, 1.0, length / 2], [0.0, 0.0, -1.0, length / 2]]
    return np.array(out)


def sphere_planes(radius: float, rings: int = SPHERE_RINGS,
                  segments: int = SPHERE_SEGMENTS) -> np.ndarray:
    """A sphere as :mod:`dmxshm.world.objects` tessellates it (``rings`` bands of
    ``segments`` planar faces): each face's plane."""
    out = []
    for i in range(rings):
        lat0 = math.pi * i / rings - math.pi / 2
        lat1 = math.pi * (i + 1) / rings - math.pi / 2
        for j in range(segments):
            lon = 2 * math.pi * (j + 0.5) / segments
            half = math.pi / segments
            mid_lat = (lat0 + lat1) / 2
            n = np.array([math.cos(mid_lat) * math.cos(lon), math.cos(mid_lat) * math.sin(lon),
                          math.sin(mid_lat)])
            # the face's vertices lie at radius r on lat0/lat1, lon +- half: its
            # plane's distance is n . v for any of them
            v = radius * np.array([math.cos(lat0) * math.cos(lon - half),
                                   math.cos(lat0) * math.sin(lon - half), math.sin(lat0)])
            if abs(math.cos(lat0)) < 1e-12:  # a pole: take the other ring's vertex
                v = radius * np.array([math.cos(lat1) * math.cos(lon - half),
                                       math.cos(lat1) * math.sin(lon - half), math.sin(lat1)])
            out.append([*n, float(n @ v)])
    return np.array(out)


def frustum_planes(r_bottom: float, r_top: float, length: float, sides: int) -> np.ndarray:
    """A cone cut at ``r_top`` (whole at 0) about the z axis, ``sides`` faces round,
    centred at the origin: its side planes and caps."""
    out = []
    a0, a1 = r_bottom * math.cos(math.pi / sides), r_top * math.cos(math.pi / sides)
    norm = math.hypot(length, a0 - a1)
    for k in range(sides):
        a = 2 * math.pi * (k + 0.5) / sides
        out.append([length * math.cos(a) / norm, length * math.sin(a) / norm,
                    (a0 - a1) / norm, length * (a0 + a1) / 2 / norm])
    out += [[0.0, 0.0, 1.0, length / 2], [0.0, 0.0, -1.0, length / 2]]
    return np.array(out)


def wedge_planes(hx: float, hy: float, hz: float) -> np.ndarray:
    """A roof: a prism ``2 hx`` long whose triangle has its base ``2 hy`` wide at
    ``z = -hz`` and its ridge along x at ``z = hz``."""
    norm = math.hypot(2 * hz, hy)
    return np.array([[1.0, 0.0, 0.0, hx], [-1.0, 0.0, 0.0, hx], [0.0, 0.0, -1.0, hz],
                     [0.0, 2 * hz / norm, hy / norm, hy * hz / norm],
                     [0.0, -2 * hz / norm, hy / norm, hy * hz / norm]])


FLAT, SMOOTH, BALL = 0, 1, 2
"""A part's kind (:mod:`dmxshm.matrix.raycast`): a polyhedron with flat faces, a
tessellated sphere shaded smooth, a true sphere (no planes)."""


@dataclass
class Shape:
    """One convex part in its body's frame: its planes, colour (0-255), kind, its
    bounding sphere's centre and radius (a sphere's own), and the 8 corners of a box
    around it (what the screen rectangle is found from)."""

    planes: np.ndarray
    colour: tuple[float, float, float]
    kind: int
    centre: np.ndarray
    bound_m: float
    corners: np.ndarray
    decal: int = -1
    """The index of the image on one of its faces (a sign's face), or -1: none."""
    decal_face: int = 0
    """Which of its planes the image is on."""
    uv: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))
    """The image's top-left corner, then the vectors whose dot products with a point's
    offset from it give the point's column and row as fractions of the image."""

    def placed(self, rot: np.ndarray, pos: np.ndarray) -> Shape:
        """This part of a body turned by ``rot`` and moved to ``pos``."""
        uv = np.stack([rot @ self.uv[0] + pos, rot @ self.uv[1], rot @ self.uv[2]])
        return Shape(_placed(self.planes, rot, pos), self.colour, self.kind,
                     rot @ self.centre + pos, self.bound_m, self.corners @ rot.T + pos,
                     self.decal, self.decal_face, uv)


_SIGNS = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)],
                  np.float64)


def _corners(half: Sequence[float], rot: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """The 8 corners of a box of half extents ``half``, turned and moved."""
    return (_SIGNS * np.asarray(half, np.float64)) @ rot.T + pos


def _placed(planes: np.ndarray, rot: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """``planes`` of a body turned by ``rot`` and moved to ``pos``."""
    n = planes[:, :3] @ rot.T
    return np.concatenate([n, (planes[:, 3] + n @ pos)[:, None]], axis=1)


def _rz(yaw: float) -> np.ndarray:
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _rx(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def _colour(rgba: Sequence[float]) -> tuple[float, float, float]:
    # pybullet turns a colour into 0-255 levels by truncation
    return float(int(255 * rgba[0])), float(int(255 * rgba[1])), float(int(255 * rgba[2]))


def object_shapes(obj: MapObject, look: str = "flat",
                  faces: list[np.ndarray] | None = None) -> list[Shape]:
    """The convex parts of ``obj`` in its own frame (z up from the floor), as the other
    renderers draw it (:func:`dmxshm.world.objects.parts`; floor tags are ground); in
    the ``duckietown`` look a sign is Duckietown's, its face's image appended to
    ``faces``."""
    if look == "duckietown" and obj.kind in SIGN_KINDS:
        if faces is None:
            raise ValueError("a sign's face needs the list of faces to add it to")
        faces.append(sign_faces.face(obj.kind, obj.tag_id))
        return sign_shapes(len(faces) - 1)
    if look == "duckietown" and obj.kind == "duckiebot":  # as the robots are drawn,
        # centred along x on the object's body, standing on the floor
        scale = obj.height_m / DEFAULT_HEIGHT_M["duckiebot"]
        robot = robot_shapes()
        corners = np.concatenate([p.corners for p in robot])
        mid_x = (corners[:, 0].min() + corners[:, 0].max()) / 2
        shift = np.array([-mid_x * scale, 0.0, WHEEL_RADIUS_M * scale])
        return [_scaled(p, scale, shift) for p in robot]
    solids = object_meshes.solids(obj) if look == "duckietown" else []
    if solids:
        return [_solid_shape(p) for p in solids]
    out = []
    for p in parts(obj):
        rot, pos = _rz(p.yaw_rad), np.array(p.pos)
        if p.geom == "box":
            local, kind, half = box_planes(*p.size), FLAT, p.size
            bound = float(np.linalg.norm(p.size))
        elif p.geom == "cylinder":
            local, kind = prism_planes(p.size[0], p.size[1], CYLINDER_SIDES), FLAT
            half = (p.size[0], p.size[0], p.size[1] / 2)
            bound = math.hypot(p.size[0], p.size[1] / 2)
        else:
            local, kind = sphere_planes(p.size[0]), SMOOTH
            half = (p.size[0],) * 3
            bound = p.size[0]
        out.append(Shape(_placed(local, rot, pos), _colour(p.rgba), kind, pos, bound,
                         _corners(half, rot, pos)))
    return out


def _solid_shape(p: object_meshes.Solid) -> Shape:
    """A solid of :mod:`dmxshm.world.object_meshes` as a part to draw."""
    rot = _rx(math.pi / 2) if p.axis == "y" else np.eye(3)
    pos = np.array(p.pos)
    if p.geom == "sphere":  # drawn exact, smooth
        r = p.size[0]
        return Shape(np.zeros((0, 4)), _colour(p.rgb), BALL, pos, r,
                     _corners((r, r, r), np.eye(3), pos))
    if p.geom == "box":
        local, half = box_planes(*p.size), p.size
    elif p.geom == "wedge":
        local, half = wedge_planes(*p.size), p.size
    elif p.geom == "cylinder":
        local = prism_planes(p.size[0], p.size[1], CYLINDER_SIDES)
        half = (p.size[0], p.size[0], p.size[1] / 2)
    else:  # a frustum
        r = max(p.size[0], p.size[1])
        local = frustum_planes(p.size[0], p.size[1], p.size[2], CYLINDER_SIDES)
        half = (r, r, p.size[2] / 2)
    return Shape(_placed(local, rot, pos), _colour(p.rgb), FLAT, pos,
                 float(np.linalg.norm(half)), _corners(half, rot, pos))


def _scaled(shape: Shape, scale: float, shift: np.ndarray) -> Shape:
    """``shape`` (without an image) made ``scale`` times bigger about its body's origin,
    then moved by ``shift``."""
    planes = shape.planes.copy()
    planes[:, 3] *= scale
    return Shape(_placed(planes, np.eye(3), shift), shape.colour, shape.kind,
                 shape.centre * scale + shift, shape.bound_m * scale,
                 shape.corners * scale + shift)


def sign_shapes(decal: int) -> list[Shape]:
    """A Duckietown sign in its frame (facing +x): a pole, and a plate whose front face
    shows face image ``decal`` (:mod:`dmxshm.world.sign_faces`' sizes)."""
    f = sign_faces
    top = f.FACE_BOTTOM_M + f.FACE_H_M
    pole_h = f.FACE_BOTTOM_M + f.FACE_H_M / 2
    pole_at = np.array([0.0, 0.0, pole_h / 2])
    pole = Shape(_placed(prism_planes(f.POLE_RADIUS_M, pole_h, CYLINDER_SIDES), np.eye(3),
                         pole_at), _colour((0.55, 0.55, 0.55)), FLAT, pole_at,
                 math.hypot(f.POLE_RADIUS_M, pole_h / 2),
                 _corners((f.POLE_RADIUS_M, f.POLE_RADIUS_M, pole_h / 2), np.eye(3), pole_at))
    half = np.array([f.PLATE_THICKNESS_M / 2, f.FACE_W_M / 2, f.FACE_H_M / 2])
    at = np.array([f.POLE_RADIUS_M + half[0], 0.0, f.FACE_BOTTOM_M + half[2]])
    front = f.FRONT_M
    uv = np.array([[front, -half[1], top], [0.0, 1.0 / f.FACE_W_M, 0.0],
                   [0.0, 0.0, -1.0 / f.FACE_H_M]])
    plate = Shape(_placed(box_planes(*half), np.eye(3), at), _colour((0.95, 0.95, 0.95)),
                  FLAT, at, float(np.linalg.norm(half)), _corners(half.tolist(), np.eye(3), at),
                  decal, 0, uv)  # (box_planes' first plane: the +x face)
    return [pole, plate]


def robot_shapes() -> list[Shape]:
    """The Duckiebot's visible parts in its frame (``data/duckiebot.urdf``)."""
    def box(size: tuple[float, float, float], at: tuple[float, float, float],
            rgba: tuple[float, ...]) -> Shape:
        half = np.array(size) / 2
        return Shape(_placed(box_planes(*half), np.eye(3), np.array(at)), _colour(rgba), FLAT,
                     np.array(at), float(np.linalg.norm(half)),
                     _corners(half, np.eye(3), np.array(at)))

    def ball(r: float, at: tuple[float, float, float], rgba: tuple[float, ...]) -> Shape:
        # pybullet draws a URDF sphere as a fine hull with smooth normals: a sphere
        return Shape(np.zeros((0, 4)), _colour(rgba), BALL, np.array(at), r,
                     _corners((r, r, r), np.eye(3), np.array(at)))

    def wheel(y: float) -> Shape:
        at = np.array([0.0, y, 0.0])
        planes = _placed(prism_planes(0.0318, 0.02, ROBOT_CYLINDER_SIDES), _rx(math.pi / 2), at)
        return Shape(planes, _colour((0.05, 0.05, 0.05)), FLAT, at, math.hypot(0.0318, 0.01),
                     _corners((0.0318, 0.01, 0.0318), np.eye(3), at))

    return [box((0.18, 0.10, 0.08), (-0.03, 0.0, 0.035), (0.10, 0.25, 0.75)),
            ball(0.028, (-0.04, 0.0, 0.100), (1.00, 0.85, 0.05)),
            box((0.02, 0.02, 0.01), (-0.01, 0.0, 0.105), (1.00, 0.45, 0.00)),
            wheel(0.055), wheel(-0.055),
            ball(0.012, (-0.10, 0.0, -0.0198), (0.60, 0.60, 0.60))]


# -- the ground -----------------------------------------------------------------------
@dataclass
class Ground:
    """The map's material map and where it lies."""

    material: np.ndarray  # (rows, cols) uint8: MATERIALS codes, row 0 at y0
    x0: float
    y0: float
    texel_m: float
    apron: tuple[float, float, float, float]
    around: int = MATERIALS.index("grass")  # the apron's material (and the texels
    # past the map's edge)

    def params(self) -> np.ndarray:
        h, w = self.material.shape
        return np.array([self.x0, self.y0, 1.0 / self.texel_m, *self.apron,
                         self.around, w, h], np.float64)


def build_ground(road_map: Any, objects: Sequence[MapObject],
                 dash_m: float | None = None, around: str = "grass") -> Ground:
    """Rasterise the map's quads (and floor tags) into a material map: each texel the
    material of the last quad that covers its centre, in the other renderers' order
    (surfaces, then markings on top); the yellow dashes as
    :func:`~dmxshm.world.scene.map_quads` draws them for ``dash_m``; ``around``, the
    apron's material, in the texels whose centres are past the map's edge (the flat
    look's grass, or the Duckietown look's room floor)."""
    width_m, height_m = road_map.size_m
    texel = TEXEL_M
    while (width_m / texel) * (height_m / texel) > MAX_TEXELS:
        texel *= 1.5
    cols, rows = math.ceil(width_m / texel), math.ceil(height_m / texel)
    material = np.full((rows, cols), MATERIALS.index("grass"), np.uint8)
    quads = map_quads(road_map, dash_m)
    for name in ("grass", "floor", "asphalt", "white", "yellow", "red"):
        code = MATERIALS.index(name)
        for quad in quads[name]:
            _fill(material, quad, code, texel)
    outside = MATERIALS.index(around)
    material[:, (np.arange(cols) + 0.5) * texel > width_m] = outside
    material[(np.arange(rows) + 0.5) * texel > height_m, :] = outside
    tag = MATERIALS.index("tag")
    s = FLOOR_TAG_SIZE_M / 2
    for o in objects:
        if o.kind == "floor_tag":
            c, si = math.cos(o.yaw_rad), math.sin(o.yaw_rad)
            quad = tuple((o.x_m + c * x - si * y, o.y_m + si * x + c * y)
                         for x, y in ((-s, -s), (s, -s), (s, s), (-s, s)))
            _fill(material, quad, tag, texel)
    return Ground(material, 0.0, 0.0, texel,
                  (-APRON_M, -APRON_M, width_m + APRON_M, height_m + APRON_M), outside)


def _fill(material: np.ndarray, quad: Sequence[tuple[float, float]], code: int,
          texel: float) -> None:
    """Set the texels whose centres lie in the convex ``quad`` to ``code``."""
    xs, ys = [p[0] for p in quad], [p[1] for p in quad]
    rows, cols = material.shape
    c0, c1 = max(int(min(xs) / texel) - 1, 0), min(int(max(xs) / texel) + 2, cols)
    r0, r1 = max(int(min(ys) / texel) - 1, 0), min(int(max(ys) / texel) + 2, rows)
    if c0 >= c1 or r0 >= r1:
        return
    gx = (np.arange(c0, c1) + 0.5) * texel
    gy = (np.arange(r0, r1) + 0.5)[:, None] * texel
    inside = np.ones((r1 - r0, c1 - c0), bool)
    area = sum(xs[i] * ys[(i + 1) % len(xs)] - xs[(i + 1) % len(xs)] * ys[i]
               for i in range(len(xs)))
    sign = 1.0 if area >= 0 else -1.0
    for i in range(len(xs)):
        ax, ay = xs[i], ys[i]
        bx, by = xs[(i + 1) % len(xs)], ys[(i + 1) % len(ys)]
        inside &= sign * ((bx - ax) * (gy - ay) - (by - ay) * (gx - ax)) >= 0.0
    material[r0:r1, c0:c1][inside] = code


# -- cameras --------------------------------------------------------------------------
@dataclass
class RaySet:
    """One camera model's pixels: each one's undistorted normalised ``(x, y)``, per
    row and column the range of ``y`` and ``x`` (to find a rectangle's pixels), and the
    median distance between neighbouring pixels' rays (a pixel's width at depth 1)."""

    xy: np.ndarray  # (H * W, 2) float32
    row_lo: np.ndarray
    row_hi: np.ndarray
    col_lo: np.ndarray
    col_hi: np.ndarray
    pitch: float


SAMPLE_OFFSET_PX = (-0.5, 0.5)
"""Where in its pixel a ray goes, from the pixel's centre (right, down): where pybullet's
tiny renderer samples (at whole pixel coordinates of its bottom-up frame, so half a
pixel left of and below the centre), so that edges fall on the same pixels; for a
lens camera, in pixels of the pinhole image the other renderers draw and remap
(:class:`~dmxshm.matrix.lens.LensMap`). Measured: against centres, the mean absolute
difference to tiny at 160x120 falls from 3.5 to 0.7 levels (pinhole), 1.9 to 1.7 (lens)."""


def ray_set(camera: Any) -> RaySet:
    """The rays of ``camera`` (a :class:`~dmxshm.matrix.camera.Camera`): its lens's
    undistorted pixel rays, or a pinhole's, each through its pixel at
    :data:`SAMPLE_OFFSET_PX`."""
    w, h = camera.width, camera.height
    ox, oy = SAMPLE_OFFSET_PX
    if camera.lens is not None:
        x, y = camera.lens.pixel_rays()
        f = max(camera.lens.fx, camera.lens.fy) * camera.lens_oversample
        x, y = x + ox / f, y + oy / f
    else:
        half = math.tan(math.radians(camera.fov_deg) / 2)
        u = ((np.arange(w) + 0.5 + ox) * 2 / w - 1) * half * w / h
        v = ((np.arange(h) + 0.5 + oy) * 2 / h - 1) * half
        x, y = np.meshgrid(u, v)
    steps = np.concatenate([np.hypot(np.diff(x, axis=a), np.diff(y, axis=a)).ravel()
                            for a in (0, 1)])
    pitch = float(np.nanmedian(steps)) if steps.size else math.inf  # (1 pixel: any width)
    return RaySet(np.stack([x, y], axis=-1).reshape(-1, 2).astype(np.float32),
                  y.min(axis=1), y.max(axis=1), x.min(axis=0), x.max(axis=0), pitch)


def mount_basis(tilt_deg: float) -> np.ndarray:
    """The camera's optical frame (x right, y down, z forward) in the robot's frame,
    as columns, for a camera tilted ``tilt_deg`` below the horizontal."""
    t = math.radians(tilt_deg)
    forward = np.array([math.cos(t), 0.0, -math.sin(t)])
    up = np.array([math.sin(t), 0.0, math.cos(t)])
    right = np.cross(forward, up)
    return np.stack([right, -up, forward], axis=1)


# -- the renderer ---------------------------------------------------------------------
class BatchRenderer:
    """Draws the cameras of many robots of one world in one call.

    Args:
        road_map: the map.
        objects: its objects (static and moving).
        movers: the moving objects' :class:`~dmxshm.world.movers.Mover` by index in
            ``objects`` (their pose is a function of the simulated time).
        threads: threads of the compiled kernel (1: this process's one core).

    Example:
        >>> from dmxshm.world.world import World
        >>> from dmxshm.matrix.camera import Camera
        >>> with World("loop", 2, seed=0, visuals=False) as world:
        ...     r = BatchRenderer.of_world(world)
        ...     out = np.zeros((2, 12, 16, 3), np.uint8)
        ...     states = world.state()
        ...     _ = r.render([Camera(16, 12)] * 2, states, 0.0, out, seen=states,
        ...                  owners=[0, 1])
        >>> out.shape, bool((out != 255).any())
        ((2, 12, 16, 3), True)
    """

    def __init__(self, road_map: Any, objects: Sequence[MapObject],
                 movers: Mapping[int, Any] | None = None, threads: int = 1,
                 look: str = "flat") -> None:
        if look not in LOOKS:
            raise BatchRenderError(f"unknown look {look!r}; known looks: {', '.join(LOOKS)}")
        self.look = look
        self.road_map = road_map
        # the Duckietown look's yellow dashes at the specification's length and period
        # (and the room's floor around the map, where the flat look has its grass apron)
        self.ground = build_ground(road_map, objects,
                                   None if look == "flat" else SPEC_DASH_M,
                                   "grass" if look == "flat" else "room")
        self._ground_params = self.ground.params()
        self.threads = threads
        self.movers = dict(movers or {})
        # (the flat look has no room: its ground around the map is the grass apron)
        colours = {**COLORS_RGBA, "room": COLORS_RGBA["grass"], "tag": TAG_RGBA} \
            if look == "flat" else {**DUCKIETOWN_RGBA, "tag": TAG_RGBA}
        self.rgba = np.array([colours[m][:3] for m in MATERIALS], np.float64)
        from dmxshm.matrix import raycast

        self._style = np.array(
            [0.0, 0.0, MATERIALS.index("floor"), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
             raycast.AMBIENT, raycast.DIFFUSE]  # (fields 1-9 unread: the flat look's
            # ground has no grain and nothing beyond its apron, and no sky)
            if look == "flat" else
            [1.0, GRAIN, MATERIALS.index("room"),
             *[math.floor(255 * c) for c in SKY_RGB[0]],
             *[math.floor(255 * c) for c in SKY_RGB[1]], 0.0, *ROOM_LIGHT], np.float64)
        self._styles_plain: dict[int, np.ndarray] = {}
        self._shade_of = np.zeros(len(MATERIALS), np.int64)  # material -> shade index
        for k, (_, names) in enumerate(SHADED.items()):
            for name in names:
                self._shade_of[MATERIALS.index(name)] = k + 1
        static: list[Shape] = []
        self._static_groups: list[int] = []  # each static object's count of parts
        self._mover_shapes: list[tuple[int, list[Shape]]] = []
        faces: list[np.ndarray] = []
        for i, o in enumerate(objects):
            if o.kind == "floor_tag":
                continue
            shapes = object_shapes(o, look, faces)
            if i in self.movers:
                self._mover_shapes.append((i, shapes))
            else:
                rot, pos = _rz(o.yaw_rad), np.array([o.x_m, o.y_m, 0.0])
                static += [s.placed(rot, pos) for s in shapes]
                self._static_groups.append(len(shapes))
        self._static_shapes = static
        # the faces' images (one texel of white where there are none) and their colours
        self._faces = raycast.summed_area(
            np.stack(faces) if faces else np.zeros((1, 1, 1), np.uint8),
            sign_faces.palette_rgb())
        self._static = _Table.of(static, self._static_groups)
        self._robot = _Table.of(robot_shapes())
        self._rays: dict[tuple[Any, ...], int] = {}  # camera model -> index in its size's
        self._sizes: dict[tuple[int, int], _Sets] = {}
        self._cameras: dict[int, tuple[Any, int, np.ndarray, np.ndarray, np.ndarray]] = {}
        self._background = np.array(BACKGROUND, np.float32)
        self._joined: dict[tuple[int, int], tuple[np.ndarray, ...]] = {}
        self._depth: dict[tuple[int, int], np.ndarray] = {}  # the kernel's scratch
        self._calls: dict[tuple[int, ...], tuple[list[Any], tuple[np.ndarray, ...]]] = {}
        self._plains: dict[int, np.ndarray] = {}
        self._plain_palette = self._palette([None], 1)[0]

    @classmethod
    def of_world(cls, world: Any, threads: int = 1, look: str = "flat") -> BatchRenderer:
        """The renderer of ``world``'s map, objects and moving objects."""
        return cls(world.road_map, world.objects, world.movers, threads, look)

    # -- cameras ------------------------------------------------------------------------
    def _camera(self, camera: Any) -> tuple[Any, int, np.ndarray, np.ndarray, np.ndarray]:
        """What a camera gives the kernel, kept for as long as the camera lives here:
        its ray set's index, its optical frame in the robot's, its mount, its light."""
        got = self._cameras.get(id(camera))
        if got is not None and got[0] is camera:
            return got
        key = (camera.width, camera.height, camera.fov_deg,
               None if camera.lens is None else (camera.lens.K, camera.lens.D))
        index = self._rays.get(key)
        if index is None:
            if camera.width * camera.height > MAX_IMAGE_PIXELS:
                raise BatchRenderError(
                    f"the batch renderer draws images of at most {MAX_IMAGE_PIXELS} pixels "
                    f"(1920x1080), not {camera.width}x{camera.height}")
            sets = self._sizes.setdefault((camera.width, camera.height), _Sets())
            index = self._rays[key] = sets.add(ray_set(camera))
        got = (camera, index, mount_basis(camera.tilt_deg),
               np.asarray(camera.mount_m, np.float64), _light(camera))
        if len(self._cameras) > 4096:
            self._cameras.clear()  # cameras come and go (jittered per episode)
        self._cameras[id(camera)] = got
        return got

    # -- drawing ------------------------------------------------------------------------
    def render(self, cameras: Sequence[Any], poses: np.ndarray, sim_time_s: float,
               out: np.ndarray, seen: np.ndarray | None = None,
               owners: Sequence[int] | None = None,
               shades: Sequence[Mapping[str, float] | None] | None = None) -> np.ndarray:
        """Draw camera ``cameras[j]``, on a robot whose state is ``poses[j]``, into
        ``out[j]``.

        Args:
            cameras: one :class:`~dmxshm.matrix.camera.Camera` per image (size, lens
                or field of view, tilt, mount, light), all of one size.
            poses: each camera's robot's state (rows of :data:`~dmxshm.world.state.
                ROBOT_STATE_DTYPE`).
            sim_time_s: the simulated time (where moving objects are).
            out: ``(len(cameras), H, W, 3)`` uint8.
            seen: the states of the robots the cameras see (a network's world's
                robots), or None: none (a batch's single-robot worlds).
            owners: each camera's own robot's index in ``seen`` (it does not see its
                own robot), or -1; None: none.
            shades: each camera's road, marking and grass shades (None: as built).

        Raises:
            BatchRenderError: an image beyond :data:`MAX_IMAGE_PIXELS`, cameras of
                different sizes in one call, or ``out`` of another shape.
        """
        from dmxshm.matrix import raycast

        n = len(cameras)
        if n == 0:
            return out
        h, w = cameras[0].height, cameras[0].width
        if out.shape != (n, h, w, 3) or out.dtype != np.uint8:
            raise BatchRenderError(f"out must be ({n}, {h}, {w}, 3) uint8, not "
                                   f"{out.shape} {out.dtype}")
        if any((c.width, c.height) != (w, h) for c in cameras):
            raise BatchRenderError("the cameras of one call draw one image size, not "
                                   + ", ".join(sorted({f"{c.width}x{c.height}"
                                                       for c in cameras})))
        sets, basis, mount, light = self._call(cameras)
        # the cameras' clipping planes (one pair a call: the nearest near, the farthest far)
        near = min(float(c.near_m) for c in cameras)
        far = max(float(c.far_m) for c in cameras)
        palette = (self._plain(n) if not shades or not any(shades)
                   else self._palette(shades, n))
        static = self._static if not self._mover_shapes else self._with_movers(sim_time_s)
        seen = poses[:0] if seen is None else seen
        r = self._robot
        xy, row_lo, row_hi, col_lo, col_hi, pitch = self._sizes[(w, h)].stacked
        planes, spans, bound, rot, eye, cand, box, count = raycast.prepare(
            np.ascontiguousarray(seen["pos_m"], np.float64),
            np.ascontiguousarray(seen["quat_xyzw"], np.float64),
            np.ascontiguousarray(poses["pos_m"], np.float64),
            np.ascontiguousarray(poses["quat_xyzw"], np.float64),
            np.full(n, -1, np.int64) if owners is None else np.asarray(owners, np.int64),
            basis, mount, static.planes, static.spans, static.centre, static.radius,
            static.corners, static.groups, static.group_bound, static.group_corners,
            r.planes, r.spans, r.centre, r.radius, r.corners,
            sets, row_lo, row_hi, col_lo, col_hi, near, far)
        colour, kind, decal, uv = self._colours(static, len(seen))
        depth = self._depth.get((n, h * w))
        if depth is None:  # kept: fresh pages for every call would cost their faults
            depth = self._depth[(n, h * w)] = np.empty((n, h * w), np.float32)
        _threads(self.threads)
        raycast.render(xy, sets, pitch, rot, eye, light, palette,
                       self._background, self.ground.material, self._ground_params,
                       self._styles(shades, n), planes,
                       spans, colour, bound, kind, decal, uv, self._faces,
                       cand, box, count, near, far, depth, out)
        return out

    def _call(self, cameras: Sequence[Any]) -> tuple[np.ndarray, ...]:
        """The cameras' ray sets, optical frames, mounts and lights, stacked as the
        kernels take them (kept for the same cameras in the same order: a process
        draws the same ones call after call)."""
        key = tuple(map(id, cameras))
        got = self._calls.get(key)
        if got is not None and all(a is b for a, b in zip(got[0], cameras, strict=True)):
            return got[1]
        each = [self._camera(c) for c in cameras]
        stacked = (np.array([g[1] for g in each], np.int64), np.stack([g[2] for g in each]),
                   np.stack([g[3] for g in each]), np.stack([g[4] for g in each]))
        if len(self._calls) > 64:
            self._calls.clear()
        self._calls[key] = (list(cameras), stacked)
        return stacked

    def _plain(self, n: int) -> np.ndarray:
        """``n`` cameras' ground colours without shades (kept)."""
        got = self._plains.get(n)
        if got is None:
            got = self._plains[n] = np.ascontiguousarray(
                np.broadcast_to(self._plain_palette, (n, *self._plain_palette.shape)))
        return got

    def _palette(self, shades: Sequence[Mapping[str, float] | None] | None,
                 n: int) -> np.ndarray:
        """Each camera's ground colours (0-255, before shading): the materials times
        their shades, clipped to full colour, in levels as pybullet takes a colour (as
        :func:`~dmxshm.world.scene.tint` colours the other renderers' meshes)."""
        scale = np.ones((n, len(SHADED) + 1))
        for j, s in enumerate(shades or ()):
            if s:
                scale[j, 1:] = [float(s.get(k, 1.0)) for k in SHADED]
        factor = scale[:, self._shade_of]  # (n, materials)
        rgba = np.minimum(self.rgba[None] * factor[..., None], 1.0)
        return np.floor(rgba * 255.0).astype(np.float32)

    def _styles(self, shades: Sequence[Mapping[str, float] | None] | None,
                n: int) -> np.ndarray:
        """Each camera's style row (:data:`~dmxshm.matrix.raycast.STYLE_FIELDS`): the
        look's, with the Duckietown look's randomised grain, grain pattern and sky
        (:data:`dmxshm.world.randomize.LOOK`) where a camera's shades have them."""
        drawn = [j for j, s in enumerate(shades or ()) if s and not _LOOK_KEYS.isdisjoint(s)]
        if self.look == "flat" or not drawn:
            got = self._styles_plain.get(n)
            if got is None:
                got = self._styles_plain[n] = np.ascontiguousarray(
                    np.broadcast_to(self._style, (n, len(self._style))))
            return got
        out = np.tile(self._style, (n, 1))
        for j in drawn:
            p = dict(LOOK_NOMINAL)
            p.update(shades[j] or {})  # type: ignore[index]
            out[j, 1] *= p["grain_scale"]
            out[j, 3:9] = np.floor(np.minimum(out[j, 3:9] * p["sky_shade"], 255.0))
            out[j, 9] = math.floor(p["texture"] * 2**31)
        return out

    def _colours(self, static: _Table, n_rob: int) -> tuple[np.ndarray, ...]:
        """Every part's colour, kind, face image and that image's placement, static
        then robot by robot (kept: the same for every call with the same robots; moving
        objects carry no image)."""
        key = (len(static.kind), n_rob)
        got = self._joined.get(key)
        if got is None:
            r = self._robot
            got = self._joined[key] = (
                np.concatenate([static.colour, np.tile(r.colour, (n_rob, 1))]),
                np.concatenate([static.kind, np.tile(r.kind, n_rob)]),
                np.concatenate([static.decal, np.tile(r.decal, (n_rob, 1))]),
                np.concatenate([static.uv, np.tile(r.uv, (n_rob, 1, 1))]))
        return got

    def _with_movers(self, sim_time_s: float) -> _Table:
        """The static parts and the moving objects' where they are at ``sim_time_s``."""
        shapes = list(self._static_shapes)
        groups = list(self._static_groups)
        for i, parts_of in self._mover_shapes:
            x, y, yaw = self.movers[i].pose(sim_time_s)
            rot, at = _rz(yaw), np.array([x, y, 0.0])
            shapes += [s.placed(rot, at) for s in parts_of]
            groups.append(len(parts_of))
        return _Table.of(shapes, groups, prefix=self._static)


_OF_WORLD: weakref.WeakKeyDictionary[Any, dict[str, tuple[int, BatchRenderer]]] = (
    weakref.WeakKeyDictionary())


_LOOK_KEYS = frozenset(LOOK_NOMINAL)
"""The Duckietown look's randomised parameters (:data:`dmxshm.world.randomize.LOOK`)."""


def renderer_of(world: Any, look: str = "flat") -> BatchRenderer:
    """The batch renderer of ``world`` (its map, objects and moving objects) in
    ``look`` (:data:`LOOKS`), made once per world and look (again when objects were
    added to it)."""
    looks = _OF_WORLD.get(world)
    if looks is None:
        looks = _OF_WORLD[world] = {}
    got = looks.get(look)
    if got is None or got[0] != len(world.objects):
        got = looks[look] = (len(world.objects), BatchRenderer.of_world(world, look=look))
    return got[1]


COMPILE_NOTE_S = 2.0
"""Say so when loading (compiling) the renderer's code takes longer than this."""


def ensure_compiled(say: Any = None) -> float:
    """Load the batch renderer's compiled code in this process, compiling it the first
    time on this installation (numba keeps it on disk after that: 14-23 s once on a
    busy 2-core machine, 0.5-1.2 s after; docs/benchmarks.md, 2026-12-03); ``say`` (a
    callable taking a line) is told when it takes long. A process that starts others
    calls this first, so that they load, not compile, it.
    Returns the seconds it took."""
    from dmxshm.matrix.camera import Camera
    from dmxshm.world.world import World

    t0 = time.perf_counter()
    with World("loop", 1, seed=0, renderer="batch") as world:
        states = world.state()
        renderer_of(world).render([Camera(8, 6)], states, 0.0,
                                  np.zeros((1, 6, 8, 3), np.uint8), seen=states, owners=[0])
    took = time.perf_counter() - t0
    if say is not None and took > COMPILE_NOTE_S:
        say(f"dmxshm: the batch renderer's code was compiled in {took:.0f} s (once per "
            "installation: numba keeps it)")
    return took


def _light(camera: Any) -> np.ndarray:
    from dmxshm.matrix.camera import LIGHT_DIRECTION

    v = np.asarray(camera.light_direction or LIGHT_DIRECTION, np.float64)
    return v / np.linalg.norm(v)


_THREADS: list[int] = []


def _threads(n: int) -> None:
    import numba

    if not _THREADS or _THREADS[0] != n:
        numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
        _THREADS[:] = [n]


@dataclass
class _Sets:
    """The ray sets of one image size, and their arrays stacked as the kernels take
    them (each set's index is its row)."""

    sets: list[RaySet] = field(default_factory=list)
    stacked: tuple[np.ndarray, ...] = ()

    def add(self, rays: RaySet) -> int:
        self.sets.append(rays)
        self.stacked = tuple(np.ascontiguousarray(np.stack([getattr(r, f) for r in self.sets]))
                             for f in ("xy", "row_lo", "row_hi", "col_lo", "col_hi",
                                       "pitch"))
        return len(self.sets) - 1


@dataclass
class _Table:
    """Parts as the kernels take them: planes, each part's span of planes, colour,
    kind, bounding sphere, its box's corners, and its face image (index and plane)
    and that image's placement."""

    planes: np.ndarray
    spans: np.ndarray
    colour: np.ndarray
    kind: np.ndarray
    centre: np.ndarray
    radius: np.ndarray
    corners: np.ndarray
    decal: np.ndarray
    uv: np.ndarray
    groups: np.ndarray
    """``(G, 2)``: each object's first part and count of parts (one object's parts are
    culled together before one by one: :func:`~dmxshm.matrix.raycast.prepare`)."""
    group_bound: np.ndarray
    """``(G, 4)``: a sphere around each object's parts' spheres (centre, radius)."""
    group_corners: np.ndarray
    """``(G, 8, 3)``: the corners of a box around each object's parts' boxes."""

    @classmethod
    def of(cls, shapes: Sequence[Shape], groups: Sequence[int] | None = None,
           prefix: _Table | None = None) -> _Table:
        """The table of ``shapes``, in groups of ``groups[g]`` consecutive parts (None:
        each part its own group); ``prefix``, a table of the same first groups, gives
        their bounds (the static parts' under the moving objects', every call)."""
        counts = [len(s.planes) for s in shapes]
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]) if shapes else np.zeros(0)
        sizes = [1] * len(shapes) if groups is None else list(groups)
        if sum(sizes) != len(shapes):
            raise ValueError(f"groups of {sum(sizes)} parts for {len(shapes)} parts")
        first = (np.cumsum([0, *sizes[:-1]]) if sizes else np.zeros(0)).astype(np.int64)
        g_bound = np.zeros((len(sizes), 4))
        g_corners = np.zeros((len(sizes), 8, 3))
        known = 0 if prefix is None else len(prefix.groups)
        if known:
            g_bound[:known] = prefix.group_bound  # type: ignore[union-attr]
            g_corners[:known] = prefix.group_corners  # type: ignore[union-attr]
        for g, (f, k) in enumerate(zip(first, sizes, strict=True)):
            if g < known or k == 0:
                continue
            corners = np.concatenate([s.corners for s in shapes[f:f + k]])
            lo, hi = corners.min(axis=0), corners.max(axis=0)
            centre = (lo + hi) / 2
            g_bound[g, :3] = centre
            g_bound[g, 3] = max(float(np.linalg.norm(s.centre - centre)) + s.bound_m
                                for s in shapes[f:f + k])
            g_corners[g] = _corners((hi - lo) / 2, np.eye(3), centre)
        return cls(
            np.concatenate([s.planes for s in shapes]) if shapes else np.zeros((0, 4)),
            np.stack([starts, counts], axis=1).astype(np.int64) if shapes
            else np.zeros((0, 2), np.int64),
            np.array([s.colour for s in shapes], np.float32).reshape(-1, 3),
            np.array([s.kind for s in shapes], np.int64),
            np.array([s.centre for s in shapes], np.float64).reshape(-1, 3),
            np.array([s.bound_m for s in shapes], np.float64),
            np.array([s.corners for s in shapes], np.float64).reshape(-1, 8, 3),
            np.array([(s.decal, s.decal_face) for s in shapes], np.int64).reshape(-1, 2),
            np.array([s.uv for s in shapes], np.float64).reshape(-1, 3, 3),
            np.stack([first, np.array(sizes, np.int64)], axis=1).reshape(-1, 2),
            g_bound, g_corners)
