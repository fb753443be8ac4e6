"""The Duckietown look's markings in dt-core's line detector's colour ranges, and its
grass and road in none."""

from __future__ import annotations

import colorsys
from unittest import mock

import numpy as np
import pytest

from dmxshm.matrix import batch_render
from dmxshm.matrix import line_colours as lc
from dmxshm.matrix.batch_render import BatchRenderer
from dmxshm.matrix.camera import Camera
from dmxshm.world.maps import load_map
from dmxshm.world.scene import SPEC_DASH_M
from dmxshm.world.world import World
from tests.matrix.test_batch_render import lane_pose, straight_tile


@pytest.mark.parametrize("rgb", [(255, 255, 255), (0, 0, 0), (230, 209, 30), (204, 25, 25),
                                 (76, 140, 56), (20, 40, 200), (200, 30, 180)])
def test_hsv_is_opencvs(rgb: tuple[int, int, int]) -> None:
    h, s, v = colorsys.rgb_to_hsv(*(c / 255 for c in rgb))  # the same, in [0, 1]
    got = lc.hsv(np.array([[rgb]], np.uint8))[0, 0]
    want = np.array([(h * 180) % 180 if s else 0, s * 255, max(rgb)])
    # (OpenCV's fixed-point arithmetic rounds within one unit of the exact value)
    assert np.abs(got - want).max() <= 1 and got[2] == max(rgb)


_build_ground = batch_render.build_ground


def _frames(map_name: str, where: str) -> tuple[np.ndarray, np.ndarray]:
    """A Duckiebot's frame in the flat look and in Duckietown's, the same pose."""
    m = load_map(map_name)
    if where == "straight":
        pose = lane_pose(m, straight_tile(m), back_m=0.3)
    else:  # half a metre before an intersection's centre
        r, c = next((r, c) for r, row in enumerate(m.tiles) for c, t in enumerate(row)
                    if t.kind in ("3way", "4way"))
        cx, cy = m.tile_center(r, c)
        pose = (cx - 0.5, cy - m.lane_offset_m, 0.0)
    cam = Camera.duckiebot(320, 240, renderer="batch")
    out = []
    with World(m, 1, seed=0, renderer="batch") as w:
        w.replace_robots([pose])
        states = w.state()
        for look in ("flat", "duckietown"):
            # the flat look's plain colours label the pixels: its yellow dashes laid
            # as the Duckietown look's (the specification's), so that they match
            with mock.patch.object(batch_render, "build_ground",
                                   lambda m, o, _dash=None, around="grass":
                                   _build_ground(m, o, SPEC_DASH_M, around)):
                r = BatchRenderer.of_world(w, look=look)
            out.append(r.render([cam], states, 0.0, np.zeros((1, *cam.shape), np.uint8),
                                seen=states, owners=[0])[0])
    return out[0], out[1]


def _labels(flat: np.ndarray) -> dict[str, np.ndarray]:
    """What each pixel shows, read from the flat look's plain colours."""
    c = flat.astype(int)
    r, g, b = c[..., 0], c[..., 1], c[..., 2]
    lo, hi = c.min(axis=-1), c.max(axis=-1)
    return {"white": (lo > 100) & (hi - lo < 20) & (hi < 250),  # (not the white sky)
            "yellow": (r > 120) & (g > 90) & (b < 60) & (r - g < 80),
            "red": (r > 120) & (g < 60) & (b < 60),
            "grass": (g > r + 20) & (g > b + 30),
            "asphalt": (hi < 80) & (hi - lo < 15)}


@pytest.mark.parametrize("map_name, where", [("big-loop", "straight"), ("grid", "crossing")])
def test_the_markings_fall_in_the_line_detectors_ranges(map_name: str, where: str) -> None:
    flat, duckietown = _frames(map_name, where)
    truth = _labels(flat)
    found = lc.classes(duckietown)
    colours = ("white", "yellow") + (("red",) if where == "crossing" else ())
    for colour in colours:
        shown = truth[colour]
        assert shown.sum() > 200, colour  # in view
        assert found[colour][shown].mean() > 0.97, colour
    for surface in ("grass", "asphalt"):
        seen = truth[surface]
        assert seen.sum() > 2000
        for colour in ("white", "yellow", "red"):
            assert found[colour][seen].mean() < 0.01, (surface, colour)
    # the flat look's yellow is not the detector's (its hue, 24, is just below 25)
    assert lc.classes(flat)["yellow"][truth["yellow"]].mean() < 0.5
