"""Traffic in a network run: eight robots with routes through a 4-way whose traffic light
stands on the road, a robot that waits behind an object on its lane, and the summary's
naming of a robot held still for long (issue 42)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dmxshm.network import Network, NetworkConfig
from dmxshm.sim.scoring import HELD_S

RUN_TIMEOUT_S = 90

# The shape of duckietown-world's 4way map (gym-duckietown's format): a 5x5 loop with
# 3-ways on its sides and a 4-way in the middle, and the traffic light standing in the
# 4-way's south-west quarter, where it stands there (0.18 m from the tile's centre each
# way): on the lane of the right turn from the west to the south.
FOUR_WAY = """\
tiles:
  - [curve_left/W, straight/W, 3way_left/W, straight/W, curve_left/N]
  - [straight/S,   asphalt,    straight/N,  asphalt,    straight/N]
  - [3way_left/S,  straight/W, 4way,        straight/E, 3way_left/N]
  - [straight/S,   asphalt,    straight/S,  asphalt,    straight/N]
  - [curve_left/S, straight/E, 3way_left/E, straight/E, curve_left/E]
objects:
  light:
    kind: trafficlight
    place: {tile: [2, 2], relative: {~SE2Transform: {p: [-0.18, -0.18], theta_deg: 135}}}
    height: 0.4
    optional: true
tile_size: 0.585
"""

# Before issue 42, this run's robots jammed from step 380 on: the first to turn right
# from the west pushed into the light's pole for good, holding the 4-way, and the
# queues behind it held the 3-ways; at 600 steps two robots had stood still 11 s.
JAM_STEPS = 600


def _network(tmp_path: Path, name: str, text: str, **kwargs: object) -> NetworkConfig:
    path = tmp_path / name
    path.write_text(text)
    return NetworkConfig(map=str(path), camera=(0, 0), **kwargs)  # type: ignore[arg-type]


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_eight_robots_with_routes_pass_the_4way_and_its_traffic_light(tmp_path: Path) -> None:
    cfg = _network(tmp_path, "4way.yaml", FOUR_WAY, robots=8, route="seed",
                   steps=JAM_STEPS, seed=0)
    with Network(cfg) as net:
        lane = net.run().lane
    assert max(lane["max_still_s"]) <= HELD_S, lane
    assert lane["off_road_steps"] == [0] * 8
    assert lane["object_collisions"] == [0] * 8  # nobody touched the light
    assert lane["held_by"] == [None] * 8
    assert sum(lane["turns"]["right"]) > 0  # right turns were taken, around the pole


# A 3x3 loop, and a cone on the west side's lane (south-bound, its centre at x 0.164 m),
# 0.06 m to the right of its centre: the time of flight's ray passes it, the robot's
# wheel would not. Robot 0 (seed 0) starts on the north-west curve, heading that way.
CONE_ON_LANE = """\
tiles:
  - [curve_left/W, straight/W, curve_left/N]
  - [straight/S,   grass,      straight/N]
  - [curve_left/S, straight/E, curve_left/E]
objects:
  cone:
    kind: cone
    pose: {~SE2Transform: {p: [0.1045, 0.8775], theta_deg: 0}}
    height: 0.08
tile_size: 0.585
"""


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_a_robot_behind_a_cone_on_its_lane_waits_there_and_is_named(tmp_path: Path) -> None:
    steps = 420  # 14 s: it reaches the cone in about 2 s, then waits
    cfg = _network(tmp_path, "cone.yaml", CONE_ON_LANE, robots=1, route="seed",
                   steps=steps, seed=0)
    with Network(cfg) as net:
        summary = net.run()
    lane = summary.lane
    assert lane["object_collisions"] == [0], "it pushed into the cone"
    assert lane["off_road_steps"] == [0] and lane["max_abs_offset_m"][0] < 0.05
    assert HELD_S < lane["max_still_s"][0] <= steps * cfg.dt_s
    assert lane["held_by"][0].startswith("an object (cone) ahead 0.")
    assert summary.held() == [f"robot 0 still {lane['max_still_s'][0]:.1f} s: "
                              f"{lane['held_by'][0]}"]
    assert summary.to_dict()["lane"]["held_by"] == lane["held_by"]
