"""The camera renderers: EGL draws the scene as tiny does (within a stated
tolerance), each is deterministic in gym mode, and EGL where it cannot load is
refused with the reason (or, with ``auto``, not chosen)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from dmxshm.cli import cli
from dmxshm.matrix.camera import Camera
from dmxshm.network import Network, NetworkConfig
from dmxshm.world import renderers
from dmxshm.world.renderers import RendererError
from dmxshm.world.world import World

RUN_TIMEOUT_S = 120
# Where the tiny renderer draws nothing it leaves white; EGL its own background.
SKY = (255, 255, 255)


def egl_or_skip() -> None:
    try:
        World("loop", 0, renderer="egl").close()
    except RendererError as exc:
        pytest.skip(f"EGL cannot load here: {exc}")


def behind(world: World, robot: int, distance_m: float = 0.35) -> np.void:
    """A camera pose ``distance_m`` behind ``robot``, looking along its heading."""
    st = world.state()[robot:robot + 1].copy()
    x, y, z = st["pos_m"][0]
    qx, qy, qz, qw = st["quat_xyzw"][0]
    yaw = np.arctan2(2 * (qw * qz + qx * qy), 1 - 2 * (qy * qy + qz * qz))
    st["pos_m"][0] = (x - distance_m * np.cos(yaw), y - distance_m * np.sin(yaw), z)
    return st[0]


def views(renderer: str) -> tuple[np.ndarray, np.ndarray]:
    """The view from behind robot 0, with the robot and with no robot."""
    cam = Camera(160, 120, renderer=renderer)
    with World("loop", 1, seed=0, renderer=renderer) as world:
        pose = behind(world, 0)
        robot = cam.render(world.client, pose)
    with World("loop", 0, seed=0, renderer=renderer) as empty:
        road = cam.render(empty.client, pose)
    return robot, road


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_egl_draws_the_road_the_markings_and_a_robot_as_tiny_does() -> None:
    egl_or_skip()
    tiny, tiny_road = views("tiny")
    egl, egl_road = views("egl")
    for img, road in ((tiny, tiny_road), (egl, egl_road)):
        px = img.reshape(-1, 3).astype(int)
        asphalt = (px.max(axis=1) < 70).mean()
        yellow = ((px[:, 0] > 150) & (px[:, 1] > 120) & (px[:, 2] < 80)).mean()
        assert asphalt > 0.2 and yellow > 0.002, (asphalt, yellow)
        # The robot: the same view without it differs in the middle of the image.
        changed = np.abs(img.astype(int) - road.astype(int)).max(axis=2) > 32
        assert changed[40:100, 50:110].mean() > 0.25
    # Against tiny, on what tiny draws (not its white background): measured
    # 18 levels of mean difference and 19% of pixels beyond 32 on Mesa.
    ground = ~(tiny == SKY).all(axis=2)
    diff = np.abs(tiny.astype(int) - egl.astype(int))
    assert ground.mean() > 0.6
    assert diff[ground].mean() < 30
    assert (diff.max(axis=2)[ground] > 32).mean() < 0.3


@pytest.mark.timeout(RUN_TIMEOUT_S)
@pytest.mark.parametrize("renderer", ["tiny", pytest.param("egl", marks=pytest.mark.slow)])
def test_gym_mode_gives_the_same_images_for_the_same_seed(renderer: str, tmp_path) -> None:
    if renderer == "egl":
        egl_or_skip()

    def frames(name: str, **kw: object) -> tuple[str, list[bytes]]:
        folder = tmp_path / name
        cfg = NetworkConfig(robots=2, steps=12, camera=(48, 36), renderer=renderer,
                            record_dir=str(folder), record_every=4, wait_timeout_s=10.0, **kw)
        with Network(cfg) as net:
            s = net.run()
        assert s.renderer == renderer
        return s.trajectory_digest, [p.read_bytes() for p in sorted(folder.glob("robot*.png"))]

    one, again, split = frames("one"), frames("again"), frames("split", renderers=2)
    assert one == again == split
    assert len(one[1]) == 6


def test_egl_that_cannot_load_is_refused_with_the_reason(monkeypatch) -> None:
    monkeypatch.setattr(renderers, "egl_plugin", lambda: None)
    monkeypatch.setattr(renderers, "_probed", None)
    with pytest.raises(RendererError, match="--renderer tiny"):
        World("loop", 1, renderer="egl")
    cfg = NetworkConfig(renderer="egl", camera=(32, 24))
    with pytest.raises(RendererError, match="--renderer tiny"):
        cfg.preflight()
    r = CliRunner().invoke(cli, ["run", "--renderer", "egl", "--steps", "3"])
    assert r.exit_code == 2 and "--renderer tiny" in r.output
    # auto's candidates: EGL only where a GPU is, with the plugin, on a hardware renderer.
    monkeypatch.setattr(renderers, "gpu_present", lambda: True)
    assert not renderers.hardware_egl()  # no plugin
    monkeypatch.setattr(renderers, "egl_plugin", lambda: "/some/egl.so")
    monkeypatch.setattr(renderers, "probe", lambda: "NVIDIA H200/PCIe/SSE2")
    assert renderers.hardware_egl()
    monkeypatch.setattr(renderers, "probe", lambda: "llvmpipe (LLVM 15.0.6, 256 bits)")
    assert not renderers.hardware_egl()  # Mesa's software OpenGL: not a GPU
    monkeypatch.setattr(renderers, "probe", lambda: "NVIDIA H200/PCIe/SSE2")
    monkeypatch.setattr(renderers, "gpu_present", lambda: False)
    assert not renderers.hardware_egl()
    assert NetworkConfig(renderer="auto", camera=(0, 0)).renderer_used == "tiny"  # no camera
    for bad in ("vulkan", "auto"):  # auto is chosen by a measurement, not here
        with pytest.raises(RendererError, match="renderer must be"):
            renderers.resolve(bad)


def test_bench_render_times_and_compares_the_renderers(tmp_path) -> None:
    out = tmp_path / "render.json"
    r = CliRunner().invoke(cli, ["bench", "render", "--sizes", "32x24,duckiebot",
                                 "--seconds", "0.05", "--cameras", "2", "--robots", "2",
                                 "--no-lens", "--json", str(out), "--images", str(tmp_path)])
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    tiny = [row for row in data["rows"] if row["renderer"] == "tiny"]
    assert [row["size"] for row in tiny] == ["32x24", "640x480"]
    assert all(row["ms_per_frame_p50"] > 0 and row["frames_per_s"] > 0 for row in tiny)
    assert (tmp_path / "render-tiny-32x24.png").exists()
    batch = {(d["renderer"], d["size"]) for d in data["differences"]}
    assert {("batch", "32x24"), ("batch", "640x480")} <= batch
    if "egl" in data["unavailable"]:
        assert "egl: not measured" in r.output
    else:
        assert {("egl", "32x24"), ("egl", "640x480")} <= batch
        assert 0 < data["differences"][0]["mean_abs_difference"] < 255
        assert set(data["egl_over_tiny"]) == {"32x24", "640x480"}


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_make_vec_renders_with_the_renderer_asked_for() -> None:
    import dmxshm

    egl_or_skip()
    got = {}
    for renderer in ("egl", "egl", "tiny"):
        envs = dmxshm.make_vec(2, num_workers=1, obs="camera", camera=(32, 24), seed=0,
                               renderer=renderer)
        try:
            obs, _ = envs.reset(seed=0)
            obs, *_ = envs.step(np.zeros((2, 2), np.float32))
        finally:
            envs.close()
        assert obs.shape == (2, 24, 32, 3) and obs.std() > 0
        if renderer in got:
            assert np.array_equal(got[renderer], obs)  # the same images for the same seed
        got[renderer] = obs
    assert not np.array_equal(got["egl"], got["tiny"])


def test_egl_that_fails_to_start_is_an_error_not_the_end_of_the_process(monkeypatch) -> None:
    # pybullet's plugin exit()s where EGL cannot start: dmxshm tries it in a
    # child process first, and says what the plugin said.
    monkeypatch.setattr(renderers, "_probed", None)
    monkeypatch.setenv("__EGL_VENDOR_LIBRARY_FILENAMES", "/nonexistent.json")
    if renderers.egl_plugin() is None:
        pytest.skip("this pybullet has no EGL plugin")
    with pytest.raises(RendererError, match="cannot start here.*--renderer tiny"):
        World("loop", 0, renderer="egl")
    monkeypatch.setattr(renderers, "gpu_present", lambda: True)
    assert not renderers.hardware_egl()  # a GPU node, but EGL does not start
    monkeypatch.setattr(renderers, "_probed", None)


def test_one_egl_world_at_a_time_in_a_process() -> None:
    egl_or_skip()
    with World("loop", 1, renderer="egl"), \
            pytest.raises(RendererError, match="one EGL world at a time"):
        World("loop", 0, renderer="egl")
    World("loop", 0, renderer="egl").close()  # once the first is closed, another may come


def test_egl_refuses_a_camera_beyond_its_buffer() -> None:
    with pytest.raises(Exception, match="larger than the EGL renderer"):
        NetworkConfig(renderer="egl", camera=(1280, 720))
