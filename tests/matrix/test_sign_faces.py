"""Signs as Duckietown prints them (the batch renderer's ``duckietown`` look): a face
with the sign's symbol above its tag36h11 tag, which Duckietown's detector reads in a
Duckiebot camera's frame."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dmxshm.matrix.batch_render import BatchRenderer, BatchRenderError
from dmxshm.matrix.camera import Camera
from dmxshm.world import sign_faces, tag36h11
from dmxshm.world.maps import load_map
from dmxshm.world.world import World
from tests.apriltags import detector
from tests.matrix.test_batch_render import lane_pose, straight_tile

WHITE, BLACK = sign_faces._CODE["white"], sign_faces._CODE["black"]


def test_a_face_is_its_symbol_above_its_tags_cells() -> None:
    f = sign_faces.face("sign_stop", 7)
    n = sign_faces.FACE_TEXELS[1]
    assert f.shape == sign_faces.FACE_TEXELS == (2 * n, n)
    cells = f[n::sign_faces.FACE_CELLS, ::sign_faces.FACE_CELLS]  # a texel of each cell
    assert np.array_equal(cells == WHITE, tag36h11.cells(7) == 1)
    assert set(np.unique(f[n:]).tolist()) == {WHITE, BLACK}
    assert (f[:n] == sign_faces._CODE["red"]).mean() > 0.3  # stop: a red octagon
    blank = sign_faces.face("sign_stop", None)  # no tag: white where it would be
    assert (blank[n:] == WHITE).all() and np.array_equal(blank[:n], f[:n])
    kinds = ["sign_stop", "sign_yield", "sign_do_not_enter", "sign_duck_crossing",
             "sign_parking", "sign_4_way_intersect", "sign_oneway_left", "sign_oneway_right"]
    symbols = {k: sign_faces.symbol(k).tobytes() for k in kinds}
    assert len(set(symbols.values())) == len(kinds)  # each its own


def _frame(distance_m: float, look: str, tag_id: int | None = 7,
           camera: Camera | None = None) -> np.ndarray:
    """A Duckiebot's 640x480 lens frame of a stop sign ``distance_m`` ahead."""
    m = load_map("big-loop")
    x, y, _ = lane_pose(m, straight_tile(m), back_m=0.5)
    cam = camera or Camera.duckiebot(640, 480, renderer="batch")
    with World(m, 1, seed=0, renderer="batch") as w:
        w.replace_robots([(x, y, 0.0)])
        mount = cam.mount_m[0]  # (the distance from the camera)
        w.add_object("sign_stop", x + mount + distance_m - sign_faces.POLE_RADIUS_M
                     - sign_faces.PLATE_THICKNESS_M, y, math.pi, tag_id=tag_id)
        states = w.state()
        r = BatchRenderer.of_world(w, look=look)
        return r.render([cam], states, 0.0, np.zeros((1, *cam.shape), np.uint8),
                        seen=states, owners=[0])[0]


def test_the_tag_is_drawn_on_the_face_and_only_with_an_id() -> None:
    tagged, untagged = _frame(0.5, "duckietown"), _frame(0.5, "duckietown", tag_id=None)
    changed = np.any(tagged != untagged, axis=-1)
    rows, cols = np.nonzero(changed)
    assert changed.sum() > 1000  # the tag's black cells
    # all of it in one small box in the middle: the tag, nothing else
    assert cols.min() > 250 and cols.max() < 390 and rows.max() - rows.min() < 140
    # the flat look is today's: the sign one colour, no tag
    from dmxshm.matrix.batch_render import renderer_of

    assert np.array_equal(_frame(0.5, "flat"), _frame(0.5, "flat", tag_id=None))
    m = load_map("big-loop")
    with World(m, 1, seed=0, renderer="batch") as w:
        w.add_object("sign_stop", 1.0, 1.0, 0.0, tag_id=3)
        states = w.state()
        cam = Camera(32, 24)
        images = [r.render([cam], states, 0.0, np.zeros((1, *cam.shape), np.uint8),
                           seen=states, owners=[0])
                  for r in (renderer_of(w), BatchRenderer.of_world(w, look="flat"))]
        assert np.array_equal(*images)
    with pytest.raises(BatchRenderError, match="unknown look 'photo'; known looks: flat, "):
        BatchRenderer(load_map("loop"), [], look="photo")


@pytest.mark.parametrize("distance_m", [0.3, 0.6, 1.0])
def test_duckietowns_detector_reads_the_signs_tag_ahead(distance_m: float) -> None:
    detect = detector().detect
    img = _frame(distance_m, "duckietown", tag_id=7)
    grey = (0.299 * img[..., 0] + 0.587 * img[..., 1] + 0.114 * img[..., 2]).astype(np.uint8)
    found = detect(grey)
    assert [(d.tag_id, d.hamming) for d in found] == [(7, 0)]
    flat = _frame(distance_m, "flat")
    grey = flat.mean(axis=-1).astype(np.uint8)
    assert detect(grey) == []  # today's look has no tag
