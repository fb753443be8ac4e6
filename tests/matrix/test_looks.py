"""The look (``look=``, ``--look``) through every front-end: a camera, a SimSpec, the
envs, the multi-robot batch, a network's config and the drop-in draw the Duckietown
look with the batch renderer, and refuse it, naming why, with tiny or EGL."""

from __future__ import annotations

import functools

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


def test_the_duckietown_looks_dashes_are_the_specifications() -> None:
    """Yellow dashes of 5 cm, 7.5 cm apart as near as a tile allows (8 a straight of
    58.5 cm, 6 on a curve's 45.9 cm centre line); the flat look keeps its 3 a tile."""
    import itertools
    import math

    from dmxshm.matrix.batch_render import MATERIALS, BatchRenderer
    from dmxshm.world.maps import load_map
    from dmxshm.world.scene import SPEC_DASH_M, _tile_markings

    m = load_map("loop")
    kinds = {t.kind: t for row in m.tiles for t in row}
    size = m.tile_size_m
    straight = [q for c, q in _tile_markings(kinds["straight"], size, SPEC_DASH_M)
                if c == "yellow"]
    assert len(straight) == 8
    xs = sorted((min(x for x, _ in q), max(x for x, _ in q)) for q in straight)
    assert all(hi - lo == pytest.approx(0.05) for lo, hi in xs)
    gaps = [b[0] - a[1] for a, b in itertools.pairwise(xs)]
    assert gaps == pytest.approx([size / 8 - 0.05] * 7)  # 2.3 cm
    curve = [q for c, q in _tile_markings(kinds["curve"], size, SPEC_DASH_M) if c == "yellow"]
    assert len(curve) == 2 * round(math.pi / 2 * size / 2 / 0.075)  # two quads a dash
    flat = [q for c, q in _tile_markings(kinds["straight"], size) if c == "yellow"]
    assert len(flat) == 3
    code = MATERIALS.index("yellow")
    yellow = [int((BatchRenderer(m, [], look=look).ground.material == code).sum())
              for look in ("flat", "duckietown")]
    assert yellow[1] > 1.2 * yellow[0]  # more tape: 8 x 5 cm a straight, not 3 x 9.75


def _v1(look: str, randomize: object, seed: int) -> tuple[np.ndarray, dict]:
    env = gymnasium.make("dmxshm/DuckieLane-v1", obs="camera", camera=(64, 48), look=look,
                         randomize=randomize).unwrapped
    try:
        obs, info = env.reset(seed=seed)
        return obs, info.get("randomization", {})
    finally:
        env.close()


def test_the_looks_randomisation_is_drawn_from_its_own_stream() -> None:
    """randomize=True in the Duckietown look draws its grain, grain pattern and sky
    too, from a stream of their own: every other parameter is drawn as in the flat
    look; the draw repeats with the seed and changes the image."""
    town, drawn = _v1("duckietown", True, 1)
    flat, flat_drawn = _v1("flat", True, 1)
    assert set(drawn) - set(flat_drawn) == {"grain_scale", "texture", "sky_shade"}
    assert all(drawn[k] == v for k, v in flat_drawn.items())  # today's draws kept
    again, drawn_again = _v1("duckietown", True, 1)
    assert drawn_again == drawn and np.array_equal(again, town)
    other, drawn_other = _v1("duckietown", True, 2)
    assert drawn_other["texture"] != drawn["texture"] and not np.array_equal(other, town)


def test_a_texture_alone_changes_the_image_and_the_digest() -> None:
    def run(texture: float) -> tuple[np.ndarray, str]:
        envs = dmxshm.make_vec(2, num_workers=0, version="v1", obs="camera", camera=(32, 24),
                               look="duckietown",
                               randomize={"look": {"texture": [texture, texture]}})
        try:
            obs, _ = envs.reset(seed=[4, 5])
            obs, *_ = envs.step(np.zeros((2, 2), np.float32))
            return obs, envs.trajectory_digest
        finally:
            envs.close()

    own, own_digest = run(0.0)  # the look's own pattern
    again, again_digest = run(0.0)
    moved, moved_digest = run(0.37)
    assert own_digest == again_digest and np.array_equal(own, again)
    assert moved_digest != own_digest
    changed = np.any(moved != own, axis=-1).mean()
    assert 0.02 < changed < 0.9  # the ground's grain moved; the sky, the markings did not


MESH_KINDS = ("duckie", "cone", "barrier", "trafficlight", "house", "building", "tree",
              "bus", "truck", "duckiebot")


@functools.lru_cache(maxsize=1)
def _big_loop() -> tuple[object, np.ndarray]:
    """big-loop's map and its one robot's state (a world once: each costs its start)."""
    from dmxshm.world.world import World

    with World("big-loop", 1, seed=0, renderer="batch") as w:
        return w.road_map, w.state()


def _object_frame(kind: str | None, look: str) -> np.ndarray:
    """Robot 0's view of one object of ``kind`` (None: none) ahead of it on big-loop."""
    import math

    from dmxshm.matrix.batch_render import BatchRenderer
    from dmxshm.world.objects import DEFAULT_HEIGHT_M, MapObject
    from dmxshm.world.state import yaw_of

    road_map, states = _big_loop()
    x, y, _ = (float(v) for v in states[0]["pos_m"])
    yaw = float(yaw_of(states[0]["quat_xyzw"]))
    objects = []
    if kind is not None:
        d = max(0.25, 3.2 * DEFAULT_HEIGHT_M[kind])
        objects.append(MapObject("o", kind, x + d * math.cos(yaw), y + d * math.sin(yaw),
                                 yaw + 3.5, height_m=DEFAULT_HEIGHT_M[kind]))
    cam = Camera.duckiebot(96, 72, renderer="batch")
    return BatchRenderer(road_map, objects, look=look).render(
        [cam], states, 0.0, np.zeros((1, *cam.shape), np.uint8), seen=states,
        owners=[0])[0]


def test_objects_have_shapes_of_their_own_where_their_bodies_are() -> None:
    """Every kind's low-polygon shape: convex solids, each around its own centre, all
    within a tenth of the height of the flat look's shape (what the body collides
    with), and drawn: seen in the frame, and unlike the flat look's."""
    from dmxshm.matrix.batch_render import object_shapes
    from dmxshm.world.objects import DEFAULT_HEIGHT_M, MapObject

    empty = _object_frame(None, "duckietown")
    for kind in MESH_KINDS:
        obj = MapObject("o", kind, 0.0, 0.0, height_m=DEFAULT_HEIGHT_M[kind])
        flat = np.concatenate([s.corners for s in object_shapes(obj, "flat")])
        town = object_shapes(obj, "duckietown")
        assert len(town) >= len(object_shapes(obj, "flat")), kind  # no fewer parts
        h = obj.height_m
        for s in town:
            n = s.planes[:, :3]
            assert np.allclose(np.linalg.norm(n, axis=1), 1.0), kind
            assert (n @ s.centre <= s.planes[:, 3] + 1e-12).all(), kind  # centre inside
            low = flat.min(axis=0) - 0.11 * h
            low[2] = min(low[2], 0.0)  # (down to the floor)
            assert (s.corners.min(axis=0) >= low - 1e-12).all(), kind
            high = flat.max(axis=0) + 0.11 * h
            if kind == "duckiebot":  # drawn as the robots are: its duckie rides on top
                high[2] = 0.17
            assert (s.corners.max(axis=0) <= high + 1e-12).all(), kind
        seen = _object_frame(kind, "duckietown")
        assert np.any(seen != empty, axis=-1).sum() > 5, kind  # (a thin light: 9 pixels)
        assert not np.array_equal(seen, _object_frame(kind, "flat")), kind


def _inside(planes: np.ndarray, p: tuple[float, float, float]) -> bool:
    return bool((planes[:, :3] @ np.array(p) <= planes[:, 3]).all())


def test_a_roof_and_a_cone_are_the_solids_they_are_said_to_be() -> None:
    import math

    from dmxshm.matrix.batch_render import frustum_planes, wedge_planes

    e = 1e-6
    roof = wedge_planes(0.5, 0.4, 0.2)  # ridge along x at z 0.2, eaves at y +-0.4, z -0.2
    assert _inside(roof, (0.49, 0.0, 0.2 - e)) and _inside(roof, (-0.49, 0.4 - e, -0.2 + e))
    assert not _inside(roof, (0.0, 0.2 + e, 0.0 + e))  # above the slope: y/0.4 + z/0.4 = 1/2
    assert _inside(roof, (0.0, 0.2 - e, 0.0))
    assert not _inside(roof, (0.0, 0.0, 0.2 + e)) and not _inside(roof, (0.0, 0.0, -0.2 - e))
    cone = frustum_planes(0.3, 0.1, 1.0, 8)  # radius 0.3 at z -0.5, 0.1 at z 0.5
    c = math.cos(math.pi / 8)  # (the faces' middles: the apothem)
    along = (math.cos(math.pi / 8), math.sin(math.pi / 8))
    for z, r in ((-0.5 + e, 0.3), (0.0, 0.2), (0.5 - e, 0.1)):
        assert _inside(cone, (along[0] * (r * c - e), along[1] * (r * c - e), z))
        assert not _inside(cone, (along[0] * (r * c + e), along[1] * (r * c + e), z))


def test_an_objects_parts_culled_together_draw_what_each_alone_draws() -> None:
    """An object's parts are passed over whole when a box around them all is out of a
    camera's view (a moving object's too, its box found again every call); the images
    are those of culling each part alone."""
    import math

    from dmxshm.matrix.batch_render import BatchRenderer, _Table
    from dmxshm.world.state import yaw_of
    from dmxshm.world.world import World

    with World("town", 16, seed=1, renderer="batch") as w:
        x, y, _ = (float(v) for v in w.state()[0]["pos_m"])
        yaw = float(yaw_of(w.state()[0]["quat_xyzw"]))
        w.add_object("bus", x + 0.6 * math.cos(yaw), y + 0.6 * math.sin(yaw), yaw,
                     static=False, speed_m_s=0.2)  # ahead of robot 0, moving
        # beside robot 1, its middle behind robot 1's camera and its front in view: a
        # group passed over by its sphere only if the sphere is whole (in the
        # Duckietown look: in the flat look a bus is one box, culled alone)
        x, y, _ = (float(v) for v in w.state()[1]["pos_m"])
        yaw = float(yaw_of(w.state()[1]["quat_xyzw"]))
        c, s = math.cos(yaw), math.sin(yaw)
        w.add_object("bus", x - 0.11 * c - 0.17 * s, y - 0.11 * s + 0.17 * c, yaw)
        states = w.state()
        lens = Camera.duckiebot(64, 48, renderer="batch", look="duckietown")
        tilt = math.radians(lens.tilt_deg)
        eye = np.array([x + c * lens.mount_m[0], y + s * lens.mount_m[0], lens.mount_m[2]])
        ahead = np.array([c * math.cos(tilt), s * math.cos(tilt), -math.sin(tilt)])
        r = BatchRenderer.of_world(w, look="duckietown")
        centre, radius = r._static.group_bound[-1, :3], r._static.group_bound[-1, 3]
        assert -radius < (centre - eye) @ ahead < -radius / 2  # its middle behind
        # and in view: robot 1's image without it (the last object) differs
        without = BatchRenderer(w.road_map, w.objects[:-1], w.movers, look="duckietown")
        seen = [b.render([lens], states[[1]], 1.0, np.zeros((1, 48, 64, 3), np.uint8),
                         seen=states, owners=[1])[0] for b in (r, without)]
        assert (seen[0] != seen[1]).any(axis=-1).sum() > 50
        for look in ("flat", "duckietown"):
            r = BatchRenderer.of_world(w, look=look)
            assert (r._static.groups[:, 1] > 1).sum() >= 10 and r._mover_shapes
            for cam in (Camera(48, 36, renderer="batch", look=look),
                        Camera.duckiebot(64, 48, renderer="batch", look=look)):
                out = np.zeros((16, *cam.shape), np.uint8)
                grouped = r.render([cam] * 16, states, 1.0, out.copy(), seen=states,
                                   owners=list(range(16)))
                whole, groups = r._static, r._static_groups
                r._static_groups = [1] * len(r._static_shapes)  # each part its own group
                r._static = _Table.of(r._static_shapes)
                alone = r.render([cam] * 16, states, 1.0, out.copy(), seen=states,
                                 owners=list(range(16)))
                r._static, r._static_groups = whole, groups
                assert np.array_equal(grouped, alone), (look, cam.width)


def test_the_duckietown_look_sets_the_map_on_a_room_floor() -> None:
    """Around the map, where the flat look draws its grass apron and then nothing, the
    Duckietown look draws the room's floor the map lies on: gym-duckietown's dark
    ground, grained as the other surfaces where a pixel is narrower than a grain cell
    and plain where it is two cells wide or more (a camera's pixel averages them)."""
    from dmxshm.matrix.batch_render import MATERIALS, ROOM_RGBA, BatchRenderer, ray_set
    from dmxshm.matrix.raycast import GRAIN_CELL_M, GRAINED
    from dmxshm.world.world import World

    assert MATERIALS[:GRAINED] == ("grass", "asphalt", "floor", "room")
    cam = Camera(160, 120, renderer="batch")
    with World("loop", 1, renderer="batch") as w:
        width, height = w.road_map.size_m
        got, depth = {}, {}
        for look in ("flat", "duckietown"):
            r = BatchRenderer.of_world(w, look=look)
            for out_m in (1.0, 8.0):  # in the 5 m apron, and beyond it
                w.replace_robots([(width + out_m, height / 2, 0.0)])  # facing away
                got[look, out_m] = r.render([cam], w.state(), 0.0,
                                            np.zeros((1, 120, 160, 3), np.uint8))[0]
                depth[look, out_m] = r._depth[(1, 120 * 160)][0].reshape(120, 160).copy()
    ground = np.isfinite(depth["flat", 1.0])  # (the sky above: nothing)
    assert ground[60:].all() and ground.sum() < 120 * 160
    flat_apron, flat_beyond = got["flat", 1.0][60:], got["flat", 8.0][ground]
    assert (flat_apron[..., 1] > flat_apron[..., 0] + 20).all()  # grass
    assert (flat_beyond == 255).all()  # nothing there: tiny's white
    room = 255 * ROOM_RGBA[0]
    cells = (depth["duckietown", 1.0] * ray_set(cam).pitch / GRAIN_CELL_M)[ground]
    assert (cells < 1).sum() > 500 and (cells > 2).sum() > 500  # a pixel's width
    for out_m in (1.0, 8.0):
        town = got["duckietown", out_m][ground].astype(int)
        assert (np.ptp(town, axis=-1) <= 2).all()  # grey
        assert 0.6 * room < town.mean() < 1.1 * room
        assert len(np.unique(town[..., 0][cells < 1])) > 5  # grained, near
        assert len(np.unique(town[..., 0][cells > 2])) == 1  # plain, far
        # fading between: less from one cell wide to two
        fading = [town[..., 0][(lo < cells) & (cells < lo + 0.5)].std() for lo in (1.0, 1.5)]
        assert fading[0] > fading[1] > 0


def test_a_ray_sets_pitch_is_a_pixels_width_at_depth_one() -> None:
    """The grain's fade counts a pixel's width by its camera model's pitch: a pinhole's
    is its pixels' spacing, a lens's about its focal length's inverse (wider off the
    centre), one pixel's any width (no grain: the image drawn)."""
    import math

    from dmxshm.matrix.batch_render import BatchRenderer, ray_set
    from dmxshm.world.world import World

    pinhole = Camera(160, 120, renderer="batch")
    assert ray_set(pinhole).pitch == pytest.approx(
        2 * math.tan(math.radians(pinhole.fov_deg) / 2) / 120, rel=1e-6)
    lens = Camera.duckiebot(160, 120, renderer="batch")
    assert 1.0 < ray_set(lens).pitch * lens.lens.fx < 1.5
    dot = Camera(1, 1, renderer="batch", look="duckietown")
    assert ray_set(dot).pitch == math.inf
    with World("loop", 1, renderer="batch") as w:
        out = BatchRenderer.of_world(w, look="duckietown").render(
            [dot], w.state(), 0.0, np.zeros((1, 1, 1, 3), np.uint8))
    assert out.shape == (1, 1, 1, 3)
