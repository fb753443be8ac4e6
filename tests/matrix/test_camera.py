"""The forward camera: size, content, determinism, mirroring."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest

from dmxshm.matrix.camera import Camera, CameraError
from dmxshm.world.maps import load_map
from dmxshm.world.state import rest_states
from dmxshm.world.tiles import LANE_OFFSET_M
from dmxshm.world.world import World

LOOP = load_map("loop")
LANE_Y_M = LOOP.tile_center(3, 2)[1] - LANE_OFFSET_M  # eastbound, south straight
CAMERA = Camera()


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    with World(LOOP, 2, seed=0) as w:
        yield w


def is_grass(img: np.ndarray) -> np.ndarray:
    r, g, b = (img[..., k].astype(int) for k in range(3))
    return (g > r + 30) & (g > b + 30)


def is_asphalt(img: np.ndarray) -> np.ndarray:
    spread = img.max(axis=2).astype(int) - img.min(axis=2)
    return (img.max(axis=2) < 90) & (spread < 12)


def is_robot_blue(img: np.ndarray) -> np.ndarray:
    r, g, b = (img[..., k].astype(int) for k in range(3))
    return (b > r + 60) & (b > g + 40)


def test_image_shape_and_content(world: World) -> None:
    world.set_state(rest_states([(0.9, LANE_Y_M, 0.0), (3.0, 2.7, 0.0)]))
    img = CAMERA.render(world.client, world.state()[0])
    assert img.shape == (120, 160, 3) and img.dtype == np.uint8
    assert img.flags["C_CONTIGUOUS"]
    assert len(np.unique(img.reshape(-1, 3), axis=0)) > 5
    # Looking along the road: asphalt below, grass at the side.
    assert is_asphalt(img[90:]).mean() > 0.5
    assert is_grass(img).mean() > 0.05


def test_render_is_deterministic_and_mirrors(world: World) -> None:
    poses = [(0.9, LANE_Y_M, 0.1), (1.5, LANE_Y_M, 0.0)]
    world.set_state(rest_states(poses))
    first = CAMERA.render(world.client, world.state()[0])
    assert np.array_equal(first, CAMERA.render(world.client, world.state()[0]))
    with World(LOOP, 2, seed=7) as mirror:  # a renderer's own client
        mirror.set_state(world.state())
        assert np.array_equal(first, CAMERA.render(mirror.client, mirror.state()[0]))


def test_other_robots_are_visible(world: World) -> None:
    world.set_state(rest_states([(0.9, LANE_Y_M, 0.0), (3.0, 2.7, 0.0)]))
    alone = CAMERA.render(world.client, world.state()[0])
    world.set_state(rest_states([(0.9, LANE_Y_M, 0.0), (1.3, LANE_Y_M, 0.0)]))
    ahead = CAMERA.render(world.client, world.state()[0])
    assert is_robot_blue(alone).mean() == 0.0
    assert is_robot_blue(ahead).mean() > 0.02


def test_render_into_buffer_and_small_size(world: World) -> None:
    world.set_state(rest_states([(0.9, LANE_Y_M, 0.0), (3.0, 2.7, -math.pi / 2)]))
    out = np.zeros((120, 160, 3), np.uint8)
    assert CAMERA.render(world.client, world.state()[0], out=out) is out
    assert np.array_equal(out, CAMERA.render(world.client, world.state()[0]))
    small = Camera(64, 64).render(world.client, world.state()[1])
    assert small.shape == (64, 64, 3) and small.std() > 0


@pytest.mark.parametrize("kwargs", [{"width": 0}, {"fov_deg": 180.0}, {"near_m": 2.0,
                                                                        "far_m": 1.0}])
def test_bad_camera_is_refused(kwargs: dict) -> None:
    with pytest.raises(CameraError):
        Camera(**kwargs)


def test_a_jittered_camera_is_a_camera_built_so_and_keeps_the_lens_map() -> None:
    base = Camera.duckiebot(64, 48)
    moved = base.jittered(height_m=0.004, tilt_deg=2.0, light_azimuth_deg=30.0)
    built = Camera.duckiebot(64, 48)
    built = Camera(64, 48, tilt_deg=built.tilt_deg + 2.0,
                   mount_m=(built.mount_m[0], built.mount_m[1], built.mount_m[2] + 0.004),
                   lens=built.lens, light_direction=moved.light_direction)
    assert moved._lens_map is base._lens_map  # noqa: SLF001  (not built again)
    with World("loop", 1, seed=0) as w:
        row = w.state()[0]
        assert np.array_equal(moved.render(w.client, row), built.render(w.client, row))
        assert not np.array_equal(moved.render(w.client, row), base.render(w.client, row))
    zoomed = base.jittered(focal_scale=1.05)
    assert zoomed._lens_map is not base._lens_map  # noqa: SLF001
    assert zoomed.lens.K[0] == base.lens.K[0] * 1.05
