"""``dmxshm bench render``'s result is typed (:class:`~dmxshm.bench.render.RenderResult`);
its JSON keeps the names it has always had, without the images."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dmxshm.bench import render
from dmxshm.bench.render import ImageDifference, RenderResult, RenderRow

RENDER_TIMEOUT_S = 120
KEYS = ["rows", "differences", "unavailable", "egl_device", "robots", "map", "egl_over_tiny",
        "lens_cost", "over_tiny", "cameras", "look_cost", "targets"]


def test_to_dict_writes_the_json_names_without_the_images() -> None:
    rows = [RenderRow("tiny", "64x64", 4.0, 5.0, 200.0, 3),
            RenderRow("egl", "64x64", 1.0, 2.0, 500.0, 3),
            RenderRow("batch", "64x64", 0.1, 0.1, 5000.0, 3)]
    diffs = [ImageDifference("64x64", 3.5, 0.5, 0.25, "egl"),
             ImageDifference("64x64", 0.5, 0.05, 0.01, "batch")]
    result = RenderResult(rows=rows, differences=diffs,
                          unavailable={}, egl_device="llvmpipe", robots=2, map_name="loop",
                          egl_over_tiny=render.speedups(rows), over_tiny=render.over_tiny(rows),
                          images={"tiny": {"64x64": np.zeros((1, 64, 64, 3), np.uint8)}})
    d = result.to_dict()
    assert list(d) == KEYS and d["map"] == "loop" and d["egl_over_tiny"] == {"64x64": 2.5}
    assert d["over_tiny"] == {"egl": {"64x64": 2.5}, "batch": {"64x64": 25.0}}
    assert d["rows"][0] == {"renderer": "tiny", "size": "64x64", "ms_per_frame_p50": 4.0,
                            "ms_per_frame_mean": 5.0, "frames_per_s": 200.0, "frames": 3,
                            "camera": "pinhole", "cameras_per_call": 1, "calls": 0,
                            "seconds": 0.0, "look": "flat"}
    assert d["differences"][1] == {"size": "64x64", "mean_abs_difference": 0.5,
                                   "pixels_differing": 0.05, "pixels_differing_over_32": 0.01,
                                   "renderer": "batch", "camera": "pinhole"}
    # the targets: 25x >= 20x met; 0.5 <= 1.5 x 3.5 met
    assert [(t["measured"], t["met"]) for t in d["targets"]] == [(25.0, True),
                                                                  (0.5 / 3.5, True)]
    assert json.loads(json.dumps(d)) == d  # no array in it


@pytest.mark.timeout(RENDER_TIMEOUT_S)
def test_a_run_gives_its_rows_and_images_typed() -> None:
    result = render.run(((32, 24), (16, 12)), ("tiny", "batch"), seconds=0.05, robots=3,
                        cameras=2, lens=False, looks=("flat",))
    assert [(r.renderer, r.size) for r in result.rows] == [
        ("tiny", "32x24"), ("tiny", "16x12"), ("batch", "32x24"), ("batch", "16x12")]
    for r in result.rows:  # whole calls of 2 views, timed for at least the time asked
        assert r.frames == 2 * r.calls and r.seconds >= 0.05
        assert r.frames_per_s == pytest.approx(1e3 / r.ms_per_frame_mean)
    assert result.images["tiny"]["32x24"].shape == (2, 24, 32, 3)
    assert [(d.renderer, d.size) for d in result.differences] == [("batch", "32x24"),
                                                                   ("batch", "16x12")]
    assert all(d.mean_abs_difference < 10 for d in result.differences)
    assert set(result.over_tiny) == {"batch"} and result.egl_over_tiny == {}
    assert result.egl_device is None and result.unavailable == {}
    assert (result.robots, result.map_name, result.cameras) == (3, "town", 2)


@pytest.mark.timeout(120)
def test_the_lens_camera_is_timed_beside_the_pinhole_one() -> None:
    result = render.run(((64, 48),), ("tiny",), seconds=0.05, robots=2, cameras=1)
    assert [(r.camera, r.size) for r in result.rows] == [("pinhole", "64x48"),
                                                         ("duckiebot", "64x48")]
    assert set(result.lens_cost) == {"tiny 64x48"} and result.lens_cost["tiny 64x48"] > 0
    assert result.images["tiny"]["64x48-duckiebot"].shape == (1, 48, 64, 3)


@pytest.mark.timeout(180)
def test_bench_objects_runs_both_maps_with_the_same_tiles() -> None:
    from dmxshm.bench import objects
    from dmxshm.world.dtmaps import parse_gym, read_yaml

    res = objects.run(objects=5, robots=1, steps=20, pairs=1, camera=(0, 0))
    assert len(res.with_steps_per_s) == len(res.without_steps_per_s) == 1
    assert res.ratio > 0 and res.collisions == 0
    import pathlib
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = pathlib.Path(d) / "m.yaml"
        path.write_text(objects.town_yaml(12))
        _, _, objs, _ = parse_gym(read_yaml(path), str(path))
        assert len(objs) == 12 and {o.kind for o in objs} == set(objects.KINDS)


@pytest.mark.timeout(120)
def test_bench_routes_reads_the_summarys_lane_figures() -> None:
    from dmxshm.bench import routes

    res = routes.run(seeds=(0,), robots=2, steps=300)
    (run,) = res.runs
    assert run.off_road_steps == [0, 0] and len(run.max_still_s) == 2
    assert set(run.turns) == {"left", "straight", "right"}
    names = [name for name, _, _ in res.targets()]
    assert len(names) == 3 and res.to_dict()["runs"][0]["seed"] == 0


def test_the_duckietown_look_is_timed_against_the_flat_look_in_the_same_run(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 46's figure: the batch renderer's Duckietown look against its flat look,
    each size and camera, in turns, with a target of 0.8x; tiny and EGL draw the flat
    look only."""
    turns: list[tuple[str, str, str]] = []
    measure = render._Timer.measure

    def recorded(self: render._Timer, seconds: float) -> None:
        turns.append((self.renderer, self.look, self.model))
        measure(self, seconds)

    monkeypatch.setattr(render._Timer, "measure", recorded)
    res = render.run(((16, 12),), ("tiny", "batch"), seconds=0.01, robots=2,
                     map_name="loop", cameras=2)
    assert turns == [("tiny", "flat", "pinhole"), ("tiny", "flat", "duckiebot"),
                     *[("batch", look, "pinhole") for look in ("flat", "duckietown",
                                                               "duckietown", "flat")] * 2,
                     *[("batch", look, "duckiebot") for look in ("flat", "duckietown",
                                                                 "duckietown", "flat")] * 2]
    names = [(r.renderer, r.look, r.camera) for r in res.rows]
    assert names == [("tiny", "flat", "pinhole"), ("tiny", "flat", "duckiebot"),
                     ("batch", "flat", "pinhole"), ("batch", "flat", "duckiebot"),
                     ("batch-duckietown", "duckietown", "pinhole"),
                     ("batch-duckietown", "duckietown", "duckiebot")]
    fps = {(r.renderer, r.camera): r.frames_per_s for r in res.rows}
    assert res.look_cost == {"duckietown": {
        "16x12": fps[("batch-duckietown", "pinhole")] / fps[("batch", "pinhole")],
        "16x12-duckiebot": fps[("batch-duckietown", "duckiebot")] / fps[("batch", "duckiebot")]}}
    looks = [t for t in res.targets() if "duckietown look" in t[0]]
    assert [(m, ok) for _, m, ok in looks] == [(v, v >= 0.8)
                                               for v in res.look_cost["duckietown"].values()]
    # the look's images are its own (a sky where the flat look is white), reported
    assert not np.array_equal(res.images["batch"]["16x12"],
                              res.images["batch-duckietown"]["16x12"])
    diff = {(d.renderer, d.camera): d.mean_abs_difference for d in res.differences}
    # tiny draws the flat look only: the Duckietown look differs from it, but draws the
    # same world from the same place (the road where tiny has it): bounded
    for camera in ("pinhole", "duckiebot"):
        assert diff[("batch", camera)] < diff[("batch-duckietown", camera)] < 45.0
