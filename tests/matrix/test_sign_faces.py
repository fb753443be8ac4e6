"""Signs as Duckietown prints them (the batch renderer's ``duckietown`` look): a face
with the sign's symbol above its tag36h11 tag, which Duckietown's detector reads in a
Duckiebot camera's frame."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from dmxshm.matrix.batch_render import BatchRenderer, BatchRenderError
from dmxshm.matrix.camera import Camera
from dmxshm.matrix.tag_pose import pose_error, rectifier, robot_facing, tag_pose
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


def _view(distance_m: float, look: str, tag_id: int | None = 7, yaw_deg: float = 0.0,
          aside_m: float = 0.0) -> tuple[np.ndarray, Any, np.ndarray, Camera]:
    """A Duckiebot's 640x480 lens frame of a stop sign whose face is ``distance_m``
    ahead of the camera (and ``aside_m`` to its left, the robot turned ``yaw_deg``
    from facing it): the frame, the sign, the robot's state, the camera."""
    m = load_map("big-loop")
    x, y, _ = lane_pose(m, straight_tile(m), back_m=0.5)
    cam = Camera.duckiebot(640, 480, renderer="batch")
    with World(m, 1, seed=0, renderer="batch") as w:
        w.replace_robots([(x, y, math.radians(yaw_deg))])
        mount = cam.mount_m[0]  # (the distance from the camera)
        sign = w.add_object("sign_stop", x + mount + distance_m - sign_faces.FRONT_M,
                            y + aside_m, math.pi, tag_id=tag_id)
        states = w.state()
        r = BatchRenderer.of_world(w, look=look)
        img = r.render([cam], states, 0.0, np.zeros((1, *cam.shape), np.uint8),
                       seen=states, owners=[0])[0]
        return img, sign, states[0], cam


def _frame(distance_m: float, look: str, tag_id: int | None = 7) -> np.ndarray:
    """A Duckiebot's 640x480 lens frame of a stop sign ``distance_m`` ahead."""
    return _view(distance_m, look, tag_id)[0]


def _grey(img: np.ndarray) -> np.ndarray:
    return (0.299 * img[..., 0] + 0.587 * img[..., 1] + 0.114 * img[..., 2]).astype(np.uint8)


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


def test_the_tags_edges_fall_between_pixels() -> None:
    """A pixel shows the mean of the face over its footprint: at 1 m, where a tag's
    cell is about 2.5 pixels, a fifth of the tag's pixels are blends of its white and
    black (one sample a pixel, or a footprint of one texel, gives 6%), which is what
    lets a detector find its corners to a fraction of a pixel."""
    tagged = _grey(_frame(1.0, "duckietown")).astype(np.int64)
    rows, cols = np.nonzero(tagged != _grey(_frame(1.0, "duckietown", tag_id=None)))
    box = tagged[rows.min():rows.max() + 1, cols.min():cols.max() + 1]
    black, white = np.percentile(box, 2), np.percentile(box, 98)
    inner = black + 0.2 * (white - black), white - 0.2 * (white - black)
    assert ((box > inner[0]) & (box < inner[1])).mean() > 0.14


@pytest.mark.parametrize("distance_m", [0.3, 0.6, 1.0])
def test_duckietowns_detector_reads_the_signs_tag_ahead(distance_m: float) -> None:
    detect = detector().detect
    found = detect(_grey(_frame(distance_m, "duckietown", tag_id=7)))
    assert [(d.tag_id, d.hamming) for d in found] == [(7, 0)]
    flat = _frame(distance_m, "flat")
    grey = flat.mean(axis=-1).astype(np.uint8)
    assert detect(grey) == []  # today's look has no tag


@pytest.mark.parametrize(("distance_m", "off_deg", "turn_deg"),
                         [(0.3, 0.0, 0.0), (0.45, 12.0, -5.0), (0.6, -20.0, 8.0)])
def test_the_tags_pose_on_the_rectified_frame_is_the_true_one(
        distance_m: float, off_deg: float, turn_deg: float) -> None:
    """As Duckietown's AprilTag node reads it: the lens frame rectified (alpha 0),
    grey, the rectified intrinsics and the tag's 6.5 cm given to the detector."""
    m = load_map("big-loop")
    cam = Camera.duckiebot(640, 480, renderer="batch")
    with World(m, 1, seed=0, renderer="batch") as w:
        sign = w.add_object("sign_stop", 1.2, 0.9, 0.0, tag_id=1)
        w.replace_robots([robot_facing(sign, cam, distance_m, math.radians(off_deg),
                                       math.radians(turn_deg))])
        robot = w.state()
        img = BatchRenderer.of_world(w, look="duckietown").render(
            [cam], robot, 0.0, np.zeros((1, *cam.shape), np.uint8), seen=robot, owners=[0])
    remap, params = rectifier(cam)
    found = detector().detect(_grey(remap(img[0])), estimate_tag_pose=True,
                              camera_params=params, tag_size=sign_faces.TAG_SIZE_M)
    assert [d.tag_id for d in found] == [1]
    t, R = tag_pose(sign, robot[0], cam)
    above_m = sign_faces.TAG_CENTRE_M - (robot[0]["pos_m"][2] + cam.mount_m[2])
    assert np.linalg.norm(t) == pytest.approx(math.hypot(distance_m, above_m), abs=1e-9)
    # turned left (anticlockwise), the robot sees the sign to its right
    assert t[0] == pytest.approx(distance_m * math.sin(math.radians(turn_deg)), abs=1e-9)
    metres, degrees = pose_error(t, R, found[0].pose_t, found[0].pose_R)
    assert metres <= 0.02 and degrees <= 3.0, (metres, degrees)
