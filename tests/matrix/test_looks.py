"""The look (``look=``, ``--look``) through every front-end: a camera, a SimSpec, the
envs, the multi-robot batch, a network's config and the drop-in draw the Duckietown
look with the batch renderer, and refuse it, naming why, with tiny or EGL."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import dmxshm  # noqa: F401  (registers the envs)
from dmxshm.cli import main
from dmxshm.matrix.camera import Camera, CameraError
from dmxshm.matrix.renderer_choice import resolve
from dmxshm.network import NetworkConfig
from dmxshm.network.config import ConfigError
from dmxshm.sim.spec import SimSpec, SimSpecError
from dmxshm.world.renderers import RendererError
from tests.cli.common import refused


def test_a_look_other_than_flat_is_the_batch_renderers() -> None:
    assert Camera(8, 6, renderer="batch", look="duckietown").look == "duckietown"
    with pytest.raises(CameraError, match="the duckietown look is drawn by the batch "
                                          "renderer only .* not tiny"):
        Camera(8, 6, renderer="tiny", look="duckietown")
    with pytest.raises(CameraError, match="look must be one of flat, duckietown, not 'photo'"):
        Camera(8, 6, renderer="batch", look="photo")
    cam = Camera.duckiebot(64, 48, renderer="batch", look="duckietown")
    assert cam.jittered(tilt_deg=2.0, focal_scale=1.1).look == "duckietown"
    assert cam.jittered(height_m=0.01).look == "duckietown"
    assert resolve("auto", (64, 48), "pinhole", "duckietown") == "batch"
    assert resolve("auto", None, "pinhole", "duckietown") == "tiny"  # nothing drawn
    with pytest.raises(RendererError, match="renderer 'batch' or 'auto', not 'egl'"):
        resolve("egl", (64, 48), "pinhole", "duckietown")
    with pytest.raises(SimSpecError, match="look 'duckietown' is drawn by the batch"):
        SimSpec(look="duckietown", renderer="tiny")
    with pytest.raises(SimSpecError, match="look must be one of"):
        SimSpec(look="photo")
    with pytest.raises(ConfigError, match="the duckietown look is drawn by the batch"):
        NetworkConfig(look="duckietown", renderer="tiny")


def _v1_image(look: str) -> tuple[np.ndarray, object]:
    env = gymnasium.make("dmxshm/DuckieLane-v1", obs="camera", camera=(64, 48),
                         look=look).unwrapped
    try:
        obs, _ = env.reset(seed=3)
        return obs, env.sim_spec
    finally:
        env.close()


def test_an_env_draws_its_look_and_says_so() -> None:
    flat, flat_spec = _v1_image("flat")
    town, town_spec = _v1_image("duckietown")
    assert (flat_spec.look, town_spec.look) == ("flat", "duckietown")
    assert town.shape == flat.shape and not np.array_equal(town, flat)
    assert np.array_equal(_v1_image("duckietown")[0], town)  # repeats
    # the lens looks over the horizon: the flat look's white there, the sky here
    assert (flat[0] > 225).all(axis=-1).mean() > 0.5  # (v1's camera noise on)
    top = town[0].astype(int)
    assert (top[:, 2] - top[:, 0] > 50).mean() > 0.5  # blue
    with pytest.raises(RendererError, match="drawn by the batch renderer only"):
        gymnasium.make("dmxshm/DuckieLane-v1", obs="camera", camera=(64, 48),
                       look="duckietown", renderer="tiny")


def test_the_multi_robot_batch_and_a_networks_cameras_draw_the_look() -> None:
    from dmxshm.batch.lanes import MultiLane, MultiLaneError

    multi = MultiLane(2, obs="camera", camera=(32, 24), look="duckietown")
    try:
        assert multi.camera.look == "duckietown" and multi.sim_spec.look == "duckietown"
    finally:
        multi.close()
    with pytest.raises(MultiLaneError, match="drawn by the batch renderer only"):
        MultiLane(2, obs="camera", camera=(32, 24), look="duckietown", renderer="tiny")
    config = NetworkConfig(robots=2, camera=(32, 24), look="duckietown")
    assert config.robot_cameras(None).base.look == "duckietown"
    assert config.sim_spec.look == "duckietown"


def test_the_cli_takes_the_look_and_refuses_it_with_tiny(
        capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(["run", "--look", "duckietown", "--renderer", "tiny", "--steps", "1"],
                  capsys)
    assert "the duckietown look is drawn by the batch renderer only" in err
    main(["run", "--help"])
    assert "--look [flat|duckietown]" in capsys.readouterr().out
