"""The batch renderer's kernels: every pixel of every camera of a call, compiled.

Each camera's pixel is a ray ``rot @ (x, y, 1)`` from the camera's eye, where
``(x, y)`` are the pixel's undistorted normalised coordinates (the lens model is in
them, computed once per camera model) and ``rot`` turns the camera's optical frame
(x right, y down, z forward) into the world. With the forward component 1, a ray's
parameter ``t`` at a hit is the hit's depth along the camera's axis, as a
rasteriser's z-buffer holds it, so the far plane clips the same.

Two passes per camera, both over pixels independently (so the image does not depend
on how pixels or cameras are split between threads):

1. :func:`_ground`: the ray meets the ground plane (z = 0) at ``t = -eye_z / d_z``;
   the map's material there (a texel of the material map, grass in the apron around
   the map, nothing beyond) gives the camera's shaded colour of that material;
2. :func:`_parts`: each part the camera may see (a convex polyhedron: boxes, the
   tessellated cylinders and spheres of the objects, the robots' parts) is tested
   only on the pixels of its screen rectangle, by clipping the ray against its
   planes (Cyrus-Beck); a hit nearer than the pixel's depth shades the pixel with
   the face's normal (a sphere's: the normal at the hit, as a smooth mesh has it).

Shading (:func:`_shade`) follows pybullet's tiny renderer: ambient plus diffuse plus
a specular term of the reflected light's height, times the surface's colour.

The kernels are compiled with numpy's error model: a division by zero gives an
infinity (which the comparisons after it reject) instead of raising.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# Shading: colour * (AMBIENT + DIFFUSE * max(n.l, 0) + SPECULAR * max(r_z, 0)^2), as
# pybullet's tiny renderer (its Shader::fragment: coefficients 0.6, 0.35, 0.05).
AMBIENT, DIFFUSE, SPECULAR = 0.6, 0.35, 0.05


@njit(cache=True, error_model="numpy")
def _shade(colour: float, nx: float, ny: float, nz: float, lx: float, ly: float,
           lz: float, ambient: float, diffuse_k: float) -> float:
    dot = nx * lx + ny * ly + nz * lz
    diffuse = dot if dot > 0.0 else 0.0
    rz = 2.0 * dot * nz - lz
    spec = rz * rz if rz > 0.0 else 0.0
    value = colour * (ambient + diffuse_k * diffuse + SPECULAR * spec)
    return value if value < 255.0 else 255.0


FLAT, SMOOTH, BALL = 0, 1, 2
"""Part kinds: a polyhedron shaded by its faces' normals; a tessellated sphere (a
polyhedron) shaded smooth, by the normal at the hit; a sphere hit exactly."""


@njit(cache=True, error_model="numpy")
def render(rays: np.ndarray, ray_set: np.ndarray, pitch: np.ndarray, rot: np.ndarray,
           eye: np.ndarray,
           light: np.ndarray, palette: np.ndarray, background: np.ndarray,
           material: np.ndarray, ground: np.ndarray, style: np.ndarray, planes: np.ndarray,
           part_planes: np.ndarray, part_colour: np.ndarray, part_bound: np.ndarray,
           part_kind: np.ndarray, part_decal: np.ndarray, part_uv: np.ndarray,
           decal_sat: np.ndarray, cand: np.ndarray, cand_box: np.ndarray,
           cand_n: np.ndarray, near: float, far: float, depth: np.ndarray,
           out: np.ndarray) -> None:
    """Render every camera ``b`` of the call into ``out[b]`` (``(B, H, W, 3)`` uint8).

    Args:
        rays: ``(K, H * W, 2)`` float32: each camera model's pixels' ``(x, y)``.
        ray_set: ``(B,)`` int: camera ``b``'s model.
        pitch: ``(K,)``: each camera model's distance between neighbouring pixels' rays
            (the median; in ``(x, y)``'s units): a pixel's width is about ``t *
            pitch`` at depth ``t``, which fades the Duckietown look's grain out where
            a pixel covers more than one of its cells (:func:`_ground_lit`).
        rot: ``(B, 3, 3)``: optical frame to world; ``eye``: ``(B, 3)``.
        light: ``(B, 3)`` unit vectors towards the light.
        palette: ``(B, M, 3)`` float32: each material's colour per camera (0-255).
        background: ``(3,)`` float32: where a ray meets nothing.
        material: ``(Hm, Wm)`` uint8: the map's materials, row 0 at ``y0``.
        ground: ``(x0, y0, 1 / texel, apron x0, apron y0, apron x1, apron y1,
            apron's material)``.
        style: ``(B, F)``: each camera's look (:data:`STYLE_FIELDS`): 0 flat (the
            tiny renderer's ground and white background), 1 Duckietown's (a ground lit
            from above with a grain, the room's floor around the map, a sky).
        planes: ``(N, 4)``: every part's planes ``n . p <= d`` in world coordinates.
        part_planes: ``(P, 2)`` int: each part's first plane and count.
        part_colour: ``(P, 3)`` float32 (0-255); ``part_bound``: ``(P, 4)`` its
            bounding sphere (centre, radius; a sphere's own); ``part_kind``: ``(P,)``
            :data:`FLAT`, :data:`SMOOTH` or :data:`BALL`.
        part_decal: ``(P, 2)`` int: the image on one face of each part (an index
            into ``decals``, or -1) and which of its planes that face is;
            ``part_uv``: ``(P, 3, 3)`` the image's top-left corner and the vectors
            giving a point's column and row as fractions of the image.
        decal_sat: ``(D, Hd + 1, Wd + 1, 3)`` float64: the images' summed-area
            tables (:func:`summed_area`): a pixel shows the mean of its image over
            its footprint, so a tag's edges are where they are to a fraction of a
            pixel (not on the nearest pixel, as one sample a pixel draws them).
        cand: ``(B, C)`` int: the parts camera ``b`` may see, nearest first;
            ``cand_box``: ``(B, C, 4)`` their pixel rows and columns (first, last
            + 1); ``cand_n``: ``(B,)`` how many.
        near, far: the clipping planes (depth along the camera's axis).
        depth: ``(B, H * W)`` float32 scratch.
        out: the images.
    """
    n_cam = rot.shape[0]
    for b in range(n_cam):
        if style[b, 0] == 0.0:
            _ground(rays[ray_set[b]], rot[b], eye[b], light[b], palette[b], background,
                    material, ground, near, far, depth[b], out[b])
        else:
            _ground_lit(rays[ray_set[b]], pitch[ray_set[b]], rot[b], eye[b], light[b],
                        palette[b], material, ground, style[b], near, far, depth[b],
                        out[b])
        for c in range(cand_n[b]):
            p = cand[b, c]
            _part(rays[ray_set[b]], rot[b], eye[b], light[b], planes, part_planes[p, 0],
                  part_planes[p, 1], part_colour[p], part_bound[p], part_kind[p],
                  part_decal[p, 0], part_decal[p, 1], part_uv[p], decal_sat,
                  cand_box[b, c], near, style[b, 10], style[b, 11], depth[b], out[b])


@njit(cache=True, error_model="numpy")
def _ground(rays: np.ndarray, rot: np.ndarray, eye: np.ndarray, light: np.ndarray,
            palette: np.ndarray, background: np.ndarray, material: np.ndarray,
            ground: np.ndarray, near: float, far: float, depth: np.ndarray,
            img: np.ndarray) -> None:
    height, width = img.shape[0], img.shape[1]
    lx, ly, lz = light[0], light[1], light[2]
    # The ground's normal as pybullet gives a mesh without normals: the direction of
    # the point from the world's origin (horizontal), so n . l is that of (x, y) and
    # the specular term's reflected height is -l_z.
    spec = -lz if lz < 0.0 else 0.0
    flat = AMBIENT + SPECULAR * spec * spec
    r00, r01, r02 = rot[0, 0], rot[0, 1], rot[0, 2]
    r10, r11, r12 = rot[1, 0], rot[1, 1], rot[1, 2]
    r20, r21, r22 = rot[2, 0], rot[2, 1], rot[2, 2]
    ex, ey, ez = eye[0], eye[1], eye[2]
    x0, y0, inv = ground[0], ground[1], ground[2]
    ax0, ay0, ax1, ay1 = ground[3], ground[4], ground[5], ground[6]
    grass = int(ground[7])
    mh, mw = material.shape[0], material.shape[1]
    bg0, bg1, bg2 = background[0], background[1], background[2]
    i = 0
    for row in range(height):
        for col in range(width):
            x, y = rays[i, 0], rays[i, 1]
            dz = r20 * x + r21 * y + r22
            hit = False
            if dz < 0.0:
                t = -ez / dz
                if near < t <= far:
                    gx = ex + t * (r00 * x + r01 * y + r02)
                    gy = ey + t * (r10 * x + r11 * y + r12)
                    if ax0 <= gx <= ax1 and ay0 <= gy <= ay1:
                        fu = (gx - x0) * inv
                        fv = (gy - y0) * inv
                        m = grass
                        if 0.0 <= fu < mw and 0.0 <= fv < mh:
                            m = material[int(fv), int(fu)]
                        radial = gx * lx + gy * ly
                        f = flat
                        if radial > 0.0:
                            f += DIFFUSE * radial / np.sqrt(gx * gx + gy * gy)
                        img[row, col, 0] = min(palette[m, 0] * f, 255.0)
                        img[row, col, 1] = min(palette[m, 1] * f, 255.0)
                        img[row, col, 2] = min(palette[m, 2] * f, 255.0)
                        depth[i] = t
                        hit = True
            if not hit:
                img[row, col, 0] = bg0
                img[row, col, 1] = bg1
                img[row, col, 2] = bg2
                depth[i] = np.inf
            i += 1


GRAINED = 4
"""The Duckietown look's grain is on the materials of codes below this (the surfaces:
grass, asphalt, floor and the room's floor)."""
STYLE_FIELDS = ("look", "grain", "material beyond the apron", "zenith r", "zenith g", "zenith b",
                "horizon r", "horizon g", "horizon b", "grain key", "parts' ambient",
                "parts' diffuse")
"""A camera's ``style`` row's fields (colours 0-255; the grain key picks the grain's
pattern, 0 the look's own; the parts' light: :data:`AMBIENT` and :data:`DIFFUSE` in the
flat look, as pybullet lights them)."""
GRAIN_CELL_M = 0.004
"""The ground's grain: one random brightness per 4 mm square."""


@njit(cache=True, error_model="numpy")
def _grain(gx: float, gy: float, key: np.int64) -> float:
    """A brightness in [-1, 1) for the grain cell at ``(gx, gy)`` (a hash of the cell
    and ``key``: the same wherever and however it is seen; cells by truncation, so the
    two around each axis are one)."""
    i = np.int64(gx * (1.0 / GRAIN_CELL_M))
    j = np.int64(gy * (1.0 / GRAIN_CELL_M))
    h = (i * 2654435761 + j * 2246822519 + key * 3266489917) & 0xFFFFFFFF
    h = ((h ^ (h >> 15)) * 739982445) & 0xFFFFFFFF
    h = (h ^ (h >> 13)) & 0xFFFF
    return h * (1.0 / 32768.0) - 1.0


@njit(cache=True, error_model="numpy")
def _ground_lit(rays: np.ndarray, pitch: float, rot: np.ndarray, eye: np.ndarray,
                light: np.ndarray,
                palette: np.ndarray, material: np.ndarray, ground: np.ndarray,
                style: np.ndarray, near: float, far: float, depth: np.ndarray,
                img: np.ndarray) -> None:
    """The ground and sky of the Duckietown look: the map's materials on a ground lit
    from above (its normal up), the surfaces (the first :data:`GRAINED` materials)
    with a grain, at full strength where a pixel is at most one grain cell wide across
    the ray (``t * pitch``) and fading out to none at two (a camera's pixel averages the
    cells it covers, and a grain sampled once a pixel beyond that is only noise; along
    the ray, where it meets the ground at a slant, a pixel covers more cells than this
    counts, so some of that noise is left at 0.1-2 cells across); the apron's
    material (``ground[7]``) and the style's beyond it (the
    room's floor, both); a sky from the horizon's colour to the zenith's."""
    height, width = img.shape[0], img.shape[1]
    lz = light[2]
    rz = 2.0 * lz - lz
    lit = AMBIENT + DIFFUSE * (lz if lz > 0.0 else 0.0) + SPECULAR * (rz * rz if rz > 0.0
                                                                      else 0.0)
    r00, r01, r02 = rot[0, 0], rot[0, 1], rot[0, 2]
    r10, r11, r12 = rot[1, 0], rot[1, 1], rot[1, 2]
    r20, r21, r22 = rot[2, 0], rot[2, 1], rot[2, 2]
    ex, ey, ez = eye[0], eye[1], eye[2]
    x0, y0, inv = ground[0], ground[1], ground[2]
    ax0, ay0, ax1, ay1 = ground[3], ground[4], ground[5], ground[6]
    apron = int(ground[7])
    grain, beyond, key = style[1], int(style[2]), np.int64(style[9])
    cells = pitch * (1.0 / GRAIN_CELL_M)  # a pixel's width in grain cells, a metre away
    mh, mw = material.shape[0], material.shape[1]
    i = 0
    for row in range(height):
        for col in range(width):
            x, y = rays[i, 0], rays[i, 1]
            dz = r20 * x + r21 * y + r22
            hit = False
            if dz < 0.0:
                t = -ez / dz
                if near < t <= far:
                    gx = ex + t * (r00 * x + r01 * y + r02)
                    gy = ey + t * (r10 * x + r11 * y + r12)
                    m = beyond
                    if ax0 <= gx <= ax1 and ay0 <= gy <= ay1:
                        m = apron
                        fu = (gx - x0) * inv
                        fv = (gy - y0) * inv
                        if 0.0 <= fu < mw and 0.0 <= fv < mh:
                            m = material[int(fv), int(fu)]
                    f = lit
                    q = t * cells  # the pixel's width in grain cells
                    if m < GRAINED and q < 2.0:  # grass, asphalt, floor, room: a grain
                        g = grain * _grain(gx, gy, key)
                        f *= 1.0 + (g if q <= 1.0 else g * (2.0 - q))
                    img[row, col, 0] = min(palette[m, 0] * f, 255.0)
                    img[row, col, 1] = min(palette[m, 1] * f, 255.0)
                    img[row, col, 2] = min(palette[m, 2] * f, 255.0)
                    depth[i] = t
                    hit = True
            if not hit:  # the sky: by the ray's height above the horizon (the ray's
                # length is the same turned: that of (x, y, 1))
                up = dz / np.sqrt(x * x + y * y + 1.0)
                a = up * 2.0 if up > 0.0 else 0.0
                a = a if a < 1.0 else 1.0
                img[row, col, 0] = style[6] + a * (style[3] - style[6])
                img[row, col, 1] = style[7] + a * (style[4] - style[7])
                img[row, col, 2] = style[8] + a * (style[5] - style[8])
                depth[i] = np.inf
            i += 1


@njit(cache=True, error_model="numpy")
def _part(rays: np.ndarray, rot: np.ndarray, eye: np.ndarray, light: np.ndarray,
          planes: np.ndarray, first: int, count: int, colour: np.ndarray,
          bound: np.ndarray, kind: int, decal: int, decal_face: int, uv: np.ndarray,
          decal_sat: np.ndarray, box: np.ndarray, near: float, ambient: float,
          diffuse_k: float, depth: np.ndarray, img: np.ndarray) -> None:
    width = img.shape[1]
    r00, r01, r02 = rot[0, 0], rot[0, 1], rot[0, 2]
    r10, r11, r12 = rot[1, 0], rot[1, 1], rot[1, 2]
    r20, r21, r22 = rot[2, 0], rot[2, 1], rot[2, 2]
    ex, ey, ez = eye[0], eye[1], eye[2]
    lx, ly, lz = light[0], light[1], light[2]
    # the bounding sphere, from the eye: a ray that misses it misses the part
    ox, oy, oz = bound[0] - ex, bound[1] - ey, bound[2] - ez
    radius = bound[3]
    c_far = ox * ox + oy * oy + oz * oz - radius * radius
    for row in range(box[0], box[1]):
        for col in range(box[2], box[3]):
            i = row * width + col
            x, y = rays[i, 0], rays[i, 1]
            dx = r00 * x + r01 * y + r02
            dy = r10 * x + r11 * y + r12
            dz = r20 * x + r21 * y + r22
            half_b = ox * dx + oy * dy + oz * dz
            dd = dx * dx + dy * dy + dz * dz
            disc = half_b * half_b - dd * c_far
            if disc < 0.0:
                continue
            t_in, t_out = near, depth[i]
            if kind == BALL:
                t = (half_b - np.sqrt(disc)) / dd
                if t <= near or t >= t_out:
                    continue
                t_in = t
                face = 0
            else:
                face = -1
                for k in range(first, first + count):
                    nx, ny, nz, d = planes[k, 0], planes[k, 1], planes[k, 2], planes[k, 3]
                    denom = nx * dx + ny * dy + nz * dz
                    num = d - (nx * ex + ny * ey + nz * ez)
                    if denom < 0.0:
                        t = num / denom
                        if t > t_in:
                            t_in, face = t, k
                    elif denom > 0.0:
                        t = num / denom
                        if t < t_out:
                            t_out = t
                    elif num < 0.0:
                        face = -1  # parallel to a face, outside it
                        break
                    if t_in >= t_out:
                        face = -1
                        break
                if face < 0:
                    continue
            if kind == FLAT:
                nx, ny, nz = planes[face, 0], planes[face, 1], planes[face, 2]
            else:  # a sphere is smooth: the normal at the hit
                hx = t_in * dx - ox
                hy = t_in * dy - oy
                hz = t_in * dz - oz
                norm = np.sqrt(hx * hx + hy * hy + hz * hz)
                nx, ny, nz = hx / norm, hy / norm, hz / norm
            c0, c1, c2 = colour[0], colour[1], colour[2]
            if decal >= 0 and face == first + decal_face:  # the face's image
                n_rows, n_cols = decal_sat.shape[1] - 1, decal_sat.shape[2] - 1
                u, v = _face_uv(rays, i, rot, eye, nx, ny, nz, planes[face, 3], uv)
                if 0.0 <= u < 1.0 and 0.0 <= v < 1.0:
                    # the pixel's footprint on the face: where its neighbours' rays meet it
                    j = i + 1 if col + 1 < width else i - 1
                    u1, v1 = _face_uv(rays, j, rot, eye, nx, ny, nz, planes[face, 3], uv)
                    j = i + width if (i + width) < rays.shape[0] else i - width
                    u2, v2 = _face_uv(rays, j, rot, eye, nx, ny, nz, planes[face, 3], uv)
                    hu = max(0.5 * (abs(u1 - u) + abs(u2 - u)) * n_cols, 0.5)
                    hv = max(0.5 * (abs(v1 - v) + abs(v2 - v)) * n_rows, 0.5)
                    c0, c1, c2 = _box_mean(decal_sat, decal, u * n_cols, v * n_rows, hu, hv)
            img[row, col, 0] = _shade(c0, nx, ny, nz, lx, ly, lz, ambient, diffuse_k)
            img[row, col, 1] = _shade(c1, nx, ny, nz, lx, ly, lz, ambient, diffuse_k)
            img[row, col, 2] = _shade(c2, nx, ny, nz, lx, ly, lz, ambient, diffuse_k)
            depth[i] = t_in


@njit(cache=True, error_model="numpy", inline="always")
def _face_uv(rays: np.ndarray, i: int, rot: np.ndarray, eye: np.ndarray, nx: float,
             ny: float, nz: float, d: float, uv: np.ndarray) -> tuple[float, float]:
    """Where pixel ``i``'s ray meets the plane ``n . p = d`` of a face, in the face's
    image (fractions of its width and height)."""
    x, y = rays[i, 0], rays[i, 1]
    dx = rot[0, 0] * x + rot[0, 1] * y + rot[0, 2]
    dy = rot[1, 0] * x + rot[1, 1] * y + rot[1, 2]
    dz = rot[2, 0] * x + rot[2, 1] * y + rot[2, 2]
    denom = nx * dx + ny * dy + nz * dz
    if denom > -1e-9:
        denom = -1e-9  # (a neighbour's ray grazing the face: a wide footprint)
    t = (d - (nx * eye[0] + ny * eye[1] + nz * eye[2])) / denom
    px = eye[0] + t * dx - uv[0, 0]
    py = eye[1] + t * dy - uv[0, 1]
    pz = eye[2] + t * dz - uv[0, 2]
    return (px * uv[1, 0] + py * uv[1, 1] + pz * uv[1, 2],
            px * uv[2, 0] + py * uv[2, 1] + pz * uv[2, 2])


@njit(cache=True, error_model="numpy", inline="always")
def _sat_at(sat: np.ndarray, d: int, r: float, c: float, ch: int) -> float:
    """A summed-area table at a fractional texel corner: bilinear between its four
    whole corners, which is exact for an image of constant texels."""
    r0 = min(int(r), sat.shape[1] - 2)
    c0 = min(int(c), sat.shape[2] - 2)
    fr, fc = r - r0, c - c0
    return ((sat[d, r0, c0, ch] * (1.0 - fc) + sat[d, r0, c0 + 1, ch] * fc) * (1.0 - fr)
            + (sat[d, r0 + 1, c0, ch] * (1.0 - fc) + sat[d, r0 + 1, c0 + 1, ch] * fc) * fr)


@njit(cache=True, error_model="numpy")
def _box_mean(sat: np.ndarray, d: int, c: float, r: float, hc: float,
              hr: float) -> tuple[float, float, float]:
    """The mean colour of image ``d`` over the box ``c +- hc`` by ``r +- hr`` (texels),
    cut to the image."""
    n_rows, n_cols = sat.shape[1] - 1, sat.shape[2] - 1
    c_lo, c_hi = max(c - hc, 0.0), min(c + hc, float(n_cols))
    r_lo, r_hi = max(r - hr, 0.0), min(r + hr, float(n_rows))
    area = (c_hi - c_lo) * (r_hi - r_lo)
    return (_box_sum(sat, d, r_lo, r_hi, c_lo, c_hi, 0) / area,
            _box_sum(sat, d, r_lo, r_hi, c_lo, c_hi, 1) / area,
            _box_sum(sat, d, r_lo, r_hi, c_lo, c_hi, 2) / area)


@njit(cache=True, error_model="numpy", inline="always")
def _box_sum(sat: np.ndarray, d: int, r_lo: float, r_hi: float, c_lo: float, c_hi: float,
             ch: int) -> float:
    """Channel ``ch`` of image ``d`` summed over a box (so that a sign's face pixel
    allocates no array)."""
    return (_sat_at(sat, d, r_hi, c_hi, ch) - _sat_at(sat, d, r_lo, c_hi, ch)
            - _sat_at(sat, d, r_hi, c_lo, ch) + _sat_at(sat, d, r_lo, c_lo, ch))


def summed_area(images: np.ndarray, rgb: np.ndarray) -> np.ndarray:
    """The summed-area tables ``(D, H + 1, W + 1, 3)`` (float64) of images of colour
    codes ``(D, H, W)`` (uint8 indices into ``rgb``, ``(codes, 3)``): entry ``[d, r,
    c]`` is the sum of image ``d``'s colours above row ``r`` and left of column ``c``."""
    colours = rgb.astype(np.float64)[images]
    sat = np.zeros((images.shape[0], images.shape[1] + 1, images.shape[2] + 1, 3))
    sat[:, 1:, 1:] = colours.cumsum(axis=1).cumsum(axis=2)
    return sat


@njit(cache=True, error_model="numpy")
def prepare(robot_pos: np.ndarray, robot_quat: np.ndarray, cam_pos: np.ndarray,
            cam_quat: np.ndarray, cam_owner: np.ndarray, cam_basis: np.ndarray,
            cam_mount: np.ndarray, s_planes: np.ndarray, s_spans: np.ndarray,
            s_centre: np.ndarray, s_radius: np.ndarray, s_corners: np.ndarray,
            s_groups: np.ndarray, s_group_bound: np.ndarray, s_group_corners: np.ndarray,
            r_planes: np.ndarray, r_spans: np.ndarray, r_centre: np.ndarray,
            r_radius: np.ndarray, r_corners: np.ndarray, ray_set: np.ndarray,
            row_lo: np.ndarray, row_hi: np.ndarray, col_lo: np.ndarray,
            col_hi: np.ndarray, near: float, far: float
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                       np.ndarray, np.ndarray, np.ndarray]:
    """Place the robots' parts and each camera, and find what each camera may see.

    The parts are the static ones (``s_*``: world planes, spans, bounding spheres and
    the 8 corners of each one's box) and each seen robot's (``r_*``, in the robot's
    frame) placed at ``robot_pos``/``robot_quat``. Camera ``b`` sits on a robot at
    ``cam_pos[b]``/``cam_quat[b]`` (``cam_basis``: its optical frame in the robot's,
    ``cam_mount``: its position there), the seen robot ``cam_owner[b]`` (-1: none of
    them), whose parts it does not see. A part is a candidate of a camera when its
    bounding sphere reaches between the clipping planes and its box's visible part
    projects onto pixels (the rows and columns whose undistorted coordinates' ranges,
    ``row_lo``/``row_hi`` and ``col_lo``/``col_hi`` of the camera's model, meet the
    box's). Candidates are sorted by depth, nearest first. The static parts come in
    groups (``s_groups``: each object's first part and count): a group of several parts
    whose sphere (``s_group_bound``) or box (``s_group_corners``), around all of its
    parts', fails the same tests is passed over whole; what is a candidate is the same.

    Returns:
        ``(planes, spans, bound, rot, eye, cand, box, count)``: every part's planes and
        spans (static first, then robot after robot), their bounding spheres, each
        camera's rotation and eye, its candidates, their pixel boxes and how many.
    """
    n_rob, n_s, n_r = robot_pos.shape[0], s_centre.shape[0], r_centre.shape[0]
    n_parts = n_s + n_rob * n_r
    n_sp, n_rp = s_planes.shape[0], r_planes.shape[0]
    planes = np.empty((n_sp + n_rob * n_rp, 4))
    planes[:n_sp] = s_planes
    spans = np.empty((n_parts, 2), np.int64)
    spans[:n_s] = s_spans
    bound = np.empty((n_parts, 4))
    bound[:n_s, :3] = s_centre
    bound[:n_s, 3] = s_radius
    corners = np.empty((n_parts, 8, 3))
    corners[:n_s] = s_corners
    owner = np.full(n_parts, -1, np.int64)
    r = np.empty((3, 3))
    for i in range(n_rob):
        _rotation(robot_quat[i], r)
        p = robot_pos[i]
        base = n_sp + i * n_rp
        for k in range(n_rp):
            _turn(r, r_planes[k], planes[base + k])
            n = planes[base + k]
            planes[base + k, 3] = r_planes[k, 3] + n[0] * p[0] + n[1] * p[1] + n[2] * p[2]
        for j in range(n_r):
            q = n_s + i * n_r + j
            spans[q, 0] = r_spans[j, 0] + base
            spans[q, 1] = r_spans[j, 1]
            _turn(r, r_centre[j], bound[q])
            bound[q, :3] += p
            bound[q, 3] = r_radius[j]
            for c in range(8):
                _turn(r, r_corners[j, c], corners[q, c])
                corners[q, c] += p
            owner[q] = i
    n_cam = cam_pos.shape[0]
    rot = np.empty((n_cam, 3, 3))
    eye = np.empty((n_cam, 3))
    cand = np.zeros((n_cam, max(n_parts, 1)), np.int64)
    box = np.zeros((n_cam, max(n_parts, 1), 4), np.int64)
    count = np.zeros(n_cam, np.int64)
    key = np.empty(max(n_parts, 1))
    cam = np.empty((8, 3))
    group_box = np.empty(4, np.int64)
    for b in range(n_cam):
        i = cam_owner[b]
        _rotation(cam_quat[b], r)
        for a in range(3):
            _turn(r, cam_basis[b, :, a], eye[b])  # (eye[b] as scratch)
            rot[b, :, a] = eye[b]
        _turn(r, cam_mount[b], eye[b])
        eye[b] += cam_pos[b]
        m = rot[b]
        e = eye[b]
        k_set = ray_set[b]
        n = 0
        g, g_end, skip = 0, 0, False  # the next static group, where this one ends
        for q in range(n_parts):
            if q < n_s and q == g_end:  # a group begins: passed over whole when it can be
                while s_groups[g, 1] == 0:  # (no parts: an object drawn as nothing)
                    g += 1
                g_end = s_groups[g, 0] + s_groups[g, 1]
                skip = False
                if s_groups[g, 1] > 1:
                    cx = s_group_bound[g, 0] - e[0]
                    cy = s_group_bound[g, 1] - e[1]
                    cz = s_group_bound[g, 2] - e[2]
                    qz = m[0, 2] * cx + m[1, 2] * cy + m[2, 2] * cz
                    radius = s_group_bound[g, 3]
                    skip = (qz + radius <= near or qz - radius >= far
                            or not _screen_box(s_group_corners[g], m, e, near,
                                               row_lo[k_set], row_hi[k_set], col_lo[k_set],
                                               col_hi[k_set], cam, group_box))
                g += 1
            if q < n_s and skip:
                continue
            if i >= 0 and owner[q] == i:  # its own robot (-1: the camera has none here)
                continue
            cx, cy, cz = bound[q, 0] - e[0], bound[q, 1] - e[1], bound[q, 2] - e[2]
            qz = m[0, 2] * cx + m[1, 2] * cy + m[2, 2] * cz
            if qz + bound[q, 3] <= near or qz - bound[q, 3] >= far:
                continue
            if not _screen_box(corners[q], m, e, near, row_lo[k_set], row_hi[k_set],
                               col_lo[k_set], col_hi[k_set], cam, box[b, n]):
                continue
            cand[b, n] = q
            key[n] = qz
            n += 1
        _sort_nearest(key, cand[b], box[b], n)
        count[b] = n
    return planes, spans, bound, rot, eye, cand, box, count


@njit(cache=True, error_model="numpy")
def _turn(r: np.ndarray, v: np.ndarray, out: np.ndarray) -> None:
    """``out[:3] = r @ v[:3]`` (without BLAS)."""
    x, y, z = v[0], v[1], v[2]
    out[0] = r[0, 0] * x + r[0, 1] * y + r[0, 2] * z
    out[1] = r[1, 0] * x + r[1, 1] * y + r[1, 2] * z
    out[2] = r[2, 0] * x + r[2, 1] * y + r[2, 2] * z


@njit(cache=True, error_model="numpy")
def _rotation(quat: np.ndarray, r: np.ndarray) -> None:
    """``r`` = the rotation of quaternion ``quat`` (x, y, z, w)."""
    x, y, z, w = quat[0], quat[1], quat[2], quat[3]
    r[0, 0] = 1 - 2 * (y * y + z * z)
    r[0, 1] = 2 * (x * y - z * w)
    r[0, 2] = 2 * (x * z + y * w)
    r[1, 0] = 2 * (x * y + z * w)
    r[1, 1] = 1 - 2 * (x * x + z * z)
    r[1, 2] = 2 * (y * z - x * w)
    r[2, 0] = 2 * (x * z - y * w)
    r[2, 1] = 2 * (y * z + x * w)
    r[2, 2] = 1 - 2 * (x * x + y * y)


@njit(cache=True, error_model="numpy")
def _first_at_least(values: np.ndarray, x: float) -> int:
    """The first index of sorted ``values`` whose value is >= ``x`` (its length: none)."""
    lo, hi = 0, values.shape[0]
    while lo < hi:
        mid = (lo + hi) // 2
        if values[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, error_model="numpy")
def _first_above(values: np.ndarray, x: float) -> int:
    """The first index of sorted ``values`` whose value is > ``x`` (its length: none)."""
    lo, hi = 0, values.shape[0]
    while lo < hi:
        mid = (lo + hi) // 2
        if values[mid] <= x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, error_model="numpy")
def _screen_box(corners: np.ndarray, m: np.ndarray, e: np.ndarray, near: float,
                row_lo: np.ndarray, row_hi: np.ndarray, col_lo: np.ndarray,
                col_hi: np.ndarray, cam: np.ndarray, out: np.ndarray) -> bool:
    """The pixel rows and columns (first, last + 1) that a box's part in front of the
    near plane covers, into ``out``; False when it covers none. That part is the hull
    of the box's corners in front and of the points where its edges (corners that
    differ in one coordinate) cross the plane."""
    for c in range(8):
        vx = corners[c, 0] - e[0]
        vy = corners[c, 1] - e[1]
        vz = corners[c, 2] - e[2]
        cam[c, 0] = m[0, 0] * vx + m[1, 0] * vy + m[2, 0] * vz
        cam[c, 1] = m[0, 1] * vx + m[1, 1] * vy + m[2, 1] * vz
        cam[c, 2] = m[0, 2] * vx + m[1, 2] * vy + m[2, 2] * vz
    x0, x1, y0, y1 = np.inf, -np.inf, np.inf, -np.inf
    for c in range(8):
        zc = cam[c, 2]
        if zc > near:
            px, py = cam[c, 0] / zc, cam[c, 1] / zc
            x0, x1, y0, y1 = min(x0, px), max(x1, px), min(y0, py), max(y1, py)
        for shift in range(3):
            o = c ^ (1 << shift)
            zo = cam[o, 2]
            if o < c or (zc > near) == (zo > near):
                continue
            f = (near - zc) / (zo - zc)
            px = (cam[c, 0] + f * (cam[o, 0] - cam[c, 0])) / near
            py = (cam[c, 1] + f * (cam[o, 1] - cam[c, 1])) / near
            x0, x1, y0, y1 = min(x0, px), max(x1, px), min(y0, py), max(y1, py)
    if x0 > x1:
        return False  # all of it behind the near plane
    out[0] = _first_at_least(row_hi, y0)
    out[1] = _first_above(row_lo, y1)
    out[2] = _first_at_least(col_hi, x0)
    out[3] = _first_above(col_lo, x1)
    return out[0] < out[1] and out[2] < out[3]


@njit(cache=True, error_model="numpy")
def _sort_nearest(key: np.ndarray, cand: np.ndarray, box: np.ndarray, n: int) -> None:
    """Sort the first ``n`` candidates (and their boxes) by ``key``, nearest first
    (insertion sort: stable, and a camera sees a few dozen parts)."""
    for a in range(1, n):
        k_a, c_a = key[a], cand[a]
        b0, b1, b2, b3 = box[a, 0], box[a, 1], box[a, 2], box[a, 3]
        z = a - 1
        while z >= 0 and key[z] > k_a:
            key[z + 1] = key[z]
            cand[z + 1] = cand[z]
            box[z + 1, 0], box[z + 1, 1], box[z + 1, 2], box[z + 1, 3] = \
                box[z, 0], box[z, 1], box[z, 2], box[z, 3]
            z -= 1
        key[z + 1], cand[z + 1] = k_a, c_a
        box[z + 1, 0], box[z + 1, 1], box[z + 1, 2], box[z + 1, 3] = b0, b1, b2, b3
