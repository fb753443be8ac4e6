"""The batch renderer (dmxshm.matrix.batch_render): tiny's images to within a stated
bound, the depth order, the lens, its limits, and the same images however the
cameras are grouped."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dmxshm.matrix.batch_render import (
    MAX_IMAGE_PIXELS,
    BatchRenderer,
    BatchRenderError,
    renderer_of,
)
from dmxshm.matrix.camera import Camera
from dmxshm.world.maps import load_map
from dmxshm.world.world import World
from tests.matrix.test_lens import _edge_points, _line_residual_px

MEAN_BOUND = 2.5
"""The largest mean absolute difference to tiny (levels, all channels) a scene may
show: the two sample each pixel at the same point, so they differ at edges only
(measured 0.3-2.0 on these scenes; a lens camera's more, where tiny blends the
pinhole image it remaps)."""
BIG_SHARE_BOUND = 0.04
"""The largest share of pixels that may differ by more than 32 levels (edges)."""


def both(road_map: object, poses: list[tuple[float, float, float]], camera: Camera,
         objects: tuple[tuple[str, float, float, float], ...] = ()
         ) -> tuple[np.ndarray, np.ndarray]:
    """Each robot's view drawn by tiny and by the batch renderer."""
    out = []
    for renderer in ("tiny", "batch"):
        with World(road_map, len(poses), seed=0, renderer=renderer) as w:
            w.replace_robots(poses)
            for kind, x, y, yaw in objects:
                w.add_object(kind, x, y, yaw)
            states = w.state()
            cam = Camera.of_model("duckiebot" if camera.lens is not None else "pinhole",
                                  camera.width, camera.height, renderer=renderer)
            if renderer == "batch":
                img = renderer_of(w).render([cam] * len(poses), states, 0.0,
                                            np.zeros((len(poses), *cam.shape), np.uint8),
                                            seen=states, owners=list(range(len(poses))))
            else:
                img = np.stack([cam.render(w.client, states[r]) for r in range(len(poses))])
        out.append(img.astype(int))
    return out[0], out[1]


def lane_pose(m: object, tile: tuple[int, int], back_m: float = 0.0) -> tuple[float, ...]:
    """A robot in the right lane of a straight tile heading east (or along the tile)."""
    cx, cy = m.tile_center(*tile)  # type: ignore[attr-defined]
    return (cx - back_m, cy - m.lane_offset_m, 0.0)  # type: ignore[attr-defined]


def agreement(tiny: np.ndarray, batch: np.ndarray) -> tuple[float, float]:
    diff = np.abs(tiny - batch)
    return float(diff.mean()), float((diff.max(axis=-1) > 32).mean())


def straight_tile(m: object) -> tuple[int, int]:
    for r, row in enumerate(m.tiles):  # type: ignore[attr-defined]
        for c, t in enumerate(row):
            if t.kind == "straight" and t.rotation_deg == 0:
                return r, c
    raise AssertionError("no east-west straight")


@pytest.mark.parametrize("model", ["pinhole", "duckiebot"])
def test_road_markings_a_robot_and_objects_agree_with_tiny(model: str) -> None:
    m = load_map("big-loop")
    tile = straight_tile(m)
    x, y, _ = lane_pose(m, tile, back_m=0.25)
    cam = Camera.of_model(model, 160, 120)
    # robot 0 looks east along its lane: robot 1 ahead at 0.3 m, robot 2 at 0.8 m in
    # the other lane; objects at several distances
    poses = [(x, y, 0.0), (x + 0.3, y, 0.0), (x + 0.8, y + 2 * m.lane_offset_m, math.pi)]
    objects = (("cone", x + 0.2, y + 0.12, 0.0), ("duckie", x + 0.5, y - 0.12, 2.0),
               ("sign_stop", x + 1.0, y - 0.25, math.pi), ("house", x + 2.0, y + 0.6, 0.3))
    tiny, batch = both(m, poses, cam, objects)
    mean, big = agreement(tiny, batch)
    assert mean < MEAN_BOUND and big < BIG_SHARE_BOUND, (mean, big)
    # and the scene is there: the robot ahead (its blue chassis) and the cone (orange)
    # in both, at about the same place
    for img in (tiny[0], batch[0]):
        blue = (img[..., 2] > img[..., 0] + 60) & (img[..., 2] > 90)
        orange = (img[..., 0] > 150) & (img[..., 1] > 40) & (img[..., 1] < 110) & (
            img[..., 2] < 60)
        assert blue.sum() > 100 and orange.sum() > 20


def test_an_intersection_agrees_with_tiny() -> None:
    m = load_map("grid")
    r, c = next((r, c) for r, row in enumerate(m.tiles) for c, t in enumerate(row)
                if t.kind in ("3way", "4way"))
    cx, cy = m.tile_center(r, c)
    pose = (cx - 0.5, cy - m.lane_offset_m, 0.0)  # half a metre before its centre
    tiny, batch = both(m, [pose], Camera(160, 120))
    mean, big = agreement(tiny, batch)
    assert mean < MEAN_BOUND and big < BIG_SHARE_BOUND, (mean, big)
    red = (batch[0][..., 0] > 120) & (batch[0][..., 1] < 40)  # a stop line in view
    assert red.sum() > 10


def test_a_robot_in_front_of_a_sign_hides_it() -> None:
    m = load_map("big-loop")
    x, y, _ = lane_pose(m, straight_tile(m), back_m=0.3)
    # a stop sign 0.5 m ahead, its red face to us, and a robot 0.3 m ahead
    sign = (("sign_stop", x + 0.5, y - 0.03, math.pi),)
    robots = [(x, y, 0.0), (x + 0.3, y, 0.0)]
    cam = Camera(96, 72)
    empty = both(m, [(x, y, 0.0)], cam)
    sign_only, both_there, robot_only = (both(m, [(x, y, 0.0)], cam, sign),
                                         both(m, robots, cam, sign), both(m, robots, cam))
    for k in range(2):  # tiny, then batch: the same order of depth
        a, b, c, road = sign_only[k][0], both_there[k][0], robot_only[k][0], empty[k][0]
        signed = np.any(a != road, axis=-1)  # where the sign shows alone
        robot = np.any(c != road, axis=-1)  # where the robot shows alone
        overlap = signed & robot
        assert overlap.sum() > 20 and (signed & ~robot).sum() > 5
        # where both would show, the robot (nearer) shows, as it does alone
        assert np.array_equal(b[overlap], c[overlap])
        # and the sign where the robot is not
        assert np.array_equal(b[signed & ~robot], a[signed & ~robot])


def test_the_lens_image_is_straight_after_undistortion() -> None:
    from dmxshm.matrix.lens import undistorter

    m = load_map("big-loop")
    row = m.tiles[1]
    col = next(c for c, t in enumerate(row) if t.kind == "straight" and t.rotation_deg == 0)
    cx, cy = m.tile_center(1, col)
    cam = Camera.duckiebot(renderer="batch")
    with World(m, 1, renderer="batch") as w:
        w.replace_robots([(cx - m.tile_size_m / 2, cy - m.lane_offset_m, 0.0)])
        img = renderer_of(w).render([cam], w.state(), 0.0, np.zeros((1, 480, 640, 3),
                                                                   np.uint8))[0]
    pts = _edge_points(img)
    assert len(pts) > 30
    assert _line_residual_px(*pts.T, 1.0) > 5.0  # the lens bends the straight edge
    rect = undistorter(cam.lens)(img)
    assert _line_residual_px(*_edge_points(rect).T, 1.0) < 1.5  # undistorted: straight


def test_the_same_images_however_the_cameras_are_grouped() -> None:
    with World("loop", 4, seed=2, renderer="batch") as w:
        states = w.state()
        r = BatchRenderer.of_world(w)
        cams = [Camera(48, 36, renderer="batch"), Camera.duckiebot(48, 36, renderer="batch")]
        cams += [cams[0].jittered(0.004, 2.0, 1.0, 30.0), cams[1]]
        together = r.render(cams, states, 0.0, np.zeros((4, 36, 48, 3), np.uint8),
                            seen=states, owners=[0, 1, 2, 3])
        alone = np.stack([
            BatchRenderer.of_world(w).render([cams[j]], states[[j]], 0.0,
                                             np.zeros((1, 36, 48, 3), np.uint8),
                                             seen=states, owners=[j])[0]
            for j in (3, 1, 0, 2)])
    assert np.array_equal(together[[3, 1, 0, 2]], alone)
    assert len({img.tobytes() for img in together}) == 4


def test_sizes_beyond_the_limit_and_mixed_sizes_are_refused() -> None:
    with World("loop", 1, renderer="batch") as w:
        r = BatchRenderer.of_world(w)
        states = w.state()
        with pytest.raises(BatchRenderError, match=f"at most {MAX_IMAGE_PIXELS} pixels"):
            r.render([Camera(2000, 1100)], states, 0.0, np.zeros((1, 1100, 2000, 3), np.uint8))
        r.render([Camera(32, 24)], states, 0.0, np.zeros((1, 24, 32, 3), np.uint8))
        r.render([Camera(16, 12)], states, 0.0, np.zeros((1, 12, 16, 3), np.uint8))
        with pytest.raises(BatchRenderError, match="one image size, not 16x12, 32x24"):
            r.render([Camera(32, 24), Camera(16, 12)], np.concatenate([states, states]), 0.0,
                     np.zeros((2, 24, 32, 3), np.uint8))
        with pytest.raises(BatchRenderError, match="out must be"):
            r.render([Camera(32, 24)], states, 0.0, np.zeros((1, 24, 32), np.uint8))


def test_a_pybullet_render_of_a_batch_camera_is_refused() -> None:
    from dmxshm.matrix.camera import CameraError

    with World("loop", 1, renderer="batch") as w, pytest.raises(CameraError,
                                                                 match="BatchRenderer"):
        Camera(16, 12, renderer="batch").render(w.client, w.state()[0])


def test_a_moving_object_is_drawn_where_it_is_at_the_states_time() -> None:
    m = load_map("big-loop")
    x, y, _ = lane_pose(m, straight_tile(m), back_m=0.4)
    images = {}
    for renderer in ("tiny", "batch"):
        with World(m, 1, seed=0, renderer=renderer) as w:
            w.replace_robots([(x, y, 0.0)])
            # a bus in the lane ahead, driving away from the camera
            w.add_object("bus", x + 0.6, y, 0.0, static=False, speed_m_s=0.2)
            cam = Camera(96, 72, renderer=renderer)
            for t in (0.0, 1.5):
                w.move_objects(t)
                if renderer == "batch":
                    img = renderer_of(w).render([cam], w.state(), t,
                                                np.zeros((1, 72, 96, 3), np.uint8))[0]
                else:
                    img = cam.render(w.client, w.state()[0])
                images[renderer, t] = img.astype(int)
    for t in (0.0, 1.5):
        mean, big = agreement(images["tiny", t][None], images["batch", t][None])
        assert mean < MEAN_BOUND and big < BIG_SHARE_BOUND, (t, mean, big)
    # it moved between the two times, in both renderers' images alike
    assert not np.array_equal(images["batch", 0.0], images["batch", 1.5])
    yellow = ((images["batch", 0.0][..., 0] > 150) & (images["batch", 0.0][..., 2] < 60))
    assert yellow.sum() > 50  # the bus is in view
