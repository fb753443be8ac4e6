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
        "lens_cost"]


def test_to_dict_writes_the_json_names_without_the_images() -> None:
    rows = [RenderRow("tiny", "64x48", 4.0, 5.0, 200.0, 3),
            RenderRow("egl", "64x48", 1.0, 2.0, 500.0, 3)]
    result = RenderResult(rows=rows, differences=[ImageDifference("64x48", 3.5, 0.5, 0.25)],
                          unavailable={}, egl_device="llvmpipe", robots=2, map_name="loop",
                          egl_over_tiny=render.speedups(rows),
                          images={"tiny": {"64x48": np.zeros((48, 64, 3), np.uint8)}})
    d = result.to_dict()
    assert list(d) == KEYS and d["map"] == "loop" and d["egl_over_tiny"] == {"64x48": 2.5}
    assert d["rows"][0] == {"renderer": "tiny", "size": "64x48", "ms_per_frame_p50": 4.0,
                            "ms_per_frame_mean": 5.0, "frames_per_s": 200.0, "frames": 3,
                            "camera": "pinhole"}
    assert d["differences"] == [{"size": "64x48", "mean_abs_difference": 3.5,
                                 "pixels_differing": 0.5, "pixels_differing_over_32": 0.25}]
    assert json.loads(json.dumps(d)) == d  # no array in it


@pytest.mark.timeout(RENDER_TIMEOUT_S)
def test_a_run_gives_its_rows_and_images_typed() -> None:
    result = render.run(((32, 24), (16, 12)), ("tiny",), frames=2)
    assert [(r.renderer, r.size, r.frames) for r in result.rows] == [("tiny", "32x24", 2),
                                                                      ("tiny", "16x12", 2)]
    assert all(r.frames_per_s == pytest.approx(1e3 / r.ms_per_frame_mean) for r in result.rows)
    assert result.images["tiny"]["32x24"].shape == (24, 32, 3)
    # One renderer: nothing to compare, no EGL.
    assert result.differences == [] and result.egl_over_tiny == {}
    assert result.egl_device is None and result.unavailable == {}
    assert (result.robots, result.map_name) == (2, "loop")


@pytest.mark.timeout(120)
def test_the_lens_camera_is_timed_beside_the_pinhole_one() -> None:
    result = render.run(((64, 48),), ("tiny",), frames=2, lens=True)
    assert [(r.camera, r.size) for r in result.rows] == [("pinhole", "64x48"),
                                                         ("duckiebot", "64x48")]
    assert set(result.lens_cost) == {"tiny 64x48"} and result.lens_cost["tiny 64x48"] > 0
    assert result.images["tiny"]["64x48-duckiebot"].shape == (48, 64, 3)


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
