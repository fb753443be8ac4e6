"""dmxshm's maps as map layers, read by duckietown-sdk's own MapInterpreter."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from dmxshm.duckiematrix.layers import layers, map_position
from dmxshm.world.maps import load_map

if os.environ.get("DMXSHM_REQUIRE_DUCKIEMATRIX"):
    from duckietown.sdk.utils import lane_position
else:
    lane_position = pytest.importorskip("duckietown.sdk.utils.lane_position",
                                        reason="duckietown-sdk is missing")


@pytest.mark.parametrize("name", ["loop", "big-loop", "grid"])
def test_every_start_pose_is_in_its_lane_for_the_sdk(name: str) -> None:
    m = load_map(name)
    frames, tiles, info = layers(m)
    mi = lane_position.MapInterpreter({"frames": {"data": frames}, "tiles": {"data": tiles},
                                       "tile_info": {"data": info}})
    roads = [t for row in m.tiles for t in row if t.is_road]
    # The SDK counts a 4-way as not drivable (its _get_curve has no 4way lanes).
    assert len(mi.drivable_tiles) == sum(t.kind != "4way" for t in roads)
    calc = lane_position.LanePositionCalculator(mi)
    for x, y, yaw in m.start_poses(min(m.capacity, 64), np.random.default_rng(1)):
        pos = np.array(map_position(m, x, y))
        assert abs(calc.get_lane_pos2(pos, yaw).dist) < 0.01  # on the lane centre
        # 6 cm to the robot's left: off the centre (its dist is scaled, not zero).
        left = pos + 0.06 * np.array([-math.sin(yaw), 0.0, -math.cos(yaw)])
        assert abs(calc.get_lane_pos2(left, yaw).dist) > 0.01


@pytest.mark.parametrize("name", ["loop", "grid"])
def test_the_sdk_reads_a_layered_folder_dmxshm_wrote_and_dmxshm_reads_it_back(
        tmp_path, name: str) -> None:  # noqa: ANN001
    import yaml

    from dmxshm.duckiematrix.layers import write_folder

    m = load_map(name)
    write_folder(m, tmp_path)
    data = {k: {"data": yaml.safe_load((tmp_path / f"{k}.yaml").read_text())[k]}
            for k in ("frames", "tiles", "tile_maps")}
    mi = lane_position.MapInterpreter({"frames": data["frames"], "tiles": data["tiles"],
                                       "tile_info": data["tile_maps"]})
    calc = lane_position.LanePositionCalculator(mi)
    back = load_map(tmp_path)
    assert back.tiles == m.tiles
    for x, y, yaw in back.start_poses(min(back.capacity, 32), np.random.default_rng(2)):
        assert abs(calc.get_lane_pos2(np.array(map_position(back, x, y)), yaw).dist) < 0.01
