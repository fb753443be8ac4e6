"""Each robot's camera (dmxshm.matrix.cameras): its jitter, appearance and noise."""

from __future__ import annotations

import numpy as np
import pytest

from dmxshm.matrix.camera import Camera
from dmxshm.matrix.cameras import RobotCameras
from dmxshm.matrix.noise import Noise
from dmxshm.world import randomize as rand
from dmxshm.world.renderers import RendererError
from dmxshm.world.world import World


def images(cameras: RobotCameras, robots: int = 2) -> np.ndarray:
    with World("loop", robots, seed=1) as world:
        out = np.zeros((robots, *cameras.shape), np.uint8)
        return cameras.render(world, world.state(), range(robots), 4, out)


def test_without_a_draw_every_robot_has_the_runs_camera() -> None:
    base = Camera(32, 24)
    cams = RobotCameras(base, None, None)
    got = images(cams)
    with World("loop", 2, seed=1) as world:
        for r in range(2):
            assert cams.camera(r) is base
            assert np.array_equal(got[r], base.render(world.client, world.state()[r]))


def test_each_robot_sees_with_its_own_draw_then_its_noise() -> None:
    nominal = dict(rand.NOMINAL)
    bright = {**nominal, "brightness": 40.0}
    tilted = {**nominal, "camera_tilt_deg": 8.0}
    plain = images(RobotCameras(Camera(32, 24), None, [nominal, nominal]))
    drawn = images(RobotCameras(Camera(32, 24), None, [bright, tilted]))
    # brighter by 40 levels where it does not clip; looking further down
    lit = plain[0] < 200
    assert np.all(drawn[0][lit].astype(int) - plain[0][lit] == 40)
    assert not np.array_equal(drawn[1], plain[1])
    noisy = images(RobotCameras(Camera(32, 24), Noise(2), [bright, tilted]))
    again = drawn.copy()
    for r in range(2):
        Noise(2).camera(r, 4, again[r])  # the noise comes after the appearance
    assert np.array_equal(noisy, again)


@pytest.mark.parametrize("renderer", ["tiny", "egl"])
def test_a_robots_road_shade_colours_the_scene_for_it_alone(renderer: str) -> None:
    try:
        world = World("loop", 2, seed=1, renderer=renderer)
    except RendererError as exc:
        pytest.skip(f"EGL does not load here: {exc}")
    with world:
        nominal = dict(rand.NOMINAL)
        cams = RobotCameras(Camera(48, 36, renderer=renderer), None,
                            [{**nominal, "road_shade": 0.5}, nominal])
        out = np.zeros((2, *cams.shape), np.uint8)
        cams.render(world, world.state(), (0, 1), 0, out)
        plain = [Camera(48, 36, renderer=renderer).render(world.client, world.state()[r])
                 for r in range(2)]
    assert np.array_equal(out[1], plain[1])  # robot 1 after robot 0: the road as built
    grey = (np.ptp(plain[0].astype(int), axis=-1) < 6) & (plain[0][..., 0] > 20) & (
        plain[0][..., 0] < 120)
    assert grey.sum() > 50
    assert out[0][grey].mean() == pytest.approx(plain[0][grey].mean() * 0.5, abs=3)
