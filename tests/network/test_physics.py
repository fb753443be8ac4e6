"""A network under ``physics="db18"``: robots moved by Duckietown's DB18 model, every mode,
the log and its replays, the same digest for any process split."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dmxshm.network import ConfigError, Network, NetworkConfig
from dmxshm.network.config import PHYSICS
from dmxshm.sim.db18 import DB18, DB18Params
from tests.networks import runner

RUN_TIMEOUT_S = 120

run = runner(robots=3, steps=30, camera=(32, 24), agent="random", seed=4,
             wait_timeout_s=10.0, action="pwm", randomize=True, physics="db18")


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_a_db18_run_reports_its_physics_and_splits_alike() -> None:
    one = run(renderers=1, agents=1)
    split = run(renderers=3, agents=2)
    assert one.digests == split.digests
    assert (one.physics, one.renderer) == ("db18", "batch")
    assert one.physics_dt_s == NetworkConfig().dt_s / NetworkConfig().substeps
    assert len(one.start_poses) == 3 and one.start_poses != one.final_poses
    bullet = run(physics="bullet")
    assert bullet.physics == "bullet"
    assert bullet.start_poses == one.start_poses  # the same seed places them alike
    assert bullet.digests["states"] != one.digests["states"]


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_full_speed_is_duty_one_through_the_model() -> None:
    """A wheel-speed run's 27 rad/s is duty 1, integrated ``substeps`` times a step."""
    steps, cfg = 30, NetworkConfig()
    s = run(robots=1, steps=steps, camera=(0, 0), action="wheel-speed", randomize=None,
            agent="tests.agents:full_speed")
    model = DB18([DB18Params.nominal()], [tuple(s.start_poses[0])])
    for _ in range(steps * cfg.substeps):
        model.step(cfg.dt_s / cfg.substeps, np.ones((1, 2)))
    (x0, y0, _), (x1, y1, _) = s.start_poses[0], s.final_poses[0]
    assert (x1, y1) == pytest.approx((model.x[0], model.y[0]), abs=1e-12)
    assert math.hypot(x1 - x0, y1 - y0) > 0.45  # 0.6 m/s less its rise, for 1 s


@pytest.mark.timeout(RUN_TIMEOUT_S)
@pytest.mark.parametrize("mode", ["gym", "realtime", "spine"])
def test_a_db18_log_replays_equal(tmp_path, mode: str) -> None:  # noqa: ANN001
    pytest.importorskip("mcap")
    from dmxshm.network.replay import replay

    path = str(tmp_path / f"{mode}.mcap")
    kw = dict(mode="realtime", duration_s=1.0) if mode == "realtime" else dict(
        steps=20, spine=mode == "spine")
    with Network(NetworkConfig(robots=2, agent="random", camera=(24, 16), log=path,
                               action="pwm" if mode != "spine" else "wheel-speed",
                               randomize=True, physics="db18", wait_timeout_s=10.0,
                               **kw)) as net:
        s = net.run()
    result = replay(path)
    assert result.equal and result.digest_equal, mode
    assert result.replayed.trajectory_digest == s.trajectory_digest  # type: ignore[union-attr]


def test_db18_cameras_are_the_batch_renderers() -> None:
    with pytest.raises(ConfigError, match="batch renderer"):
        NetworkConfig(physics="db18", renderer="tiny")
    assert NetworkConfig(physics="db18", renderer="tiny", camera=(0, 0)).physics == "db18"
    assert NetworkConfig(physics="db18", renderer="auto").renderer_used == "batch"
    with pytest.raises(ConfigError, match="physics must be one of bullet, db18"):
        NetworkConfig(physics="ode")
    assert PHYSICS == ("bullet", "db18")


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_eight_db18_robots_follow_their_routes_on_grid_without_leaving_the_road() -> None:
    s = run(robots=8, steps=900, camera=(0, 0), map="grid", route="seed",
            agent="lane-follow", randomize=None, action="wheel-speed", seed=1)
    assert s.lane["off_road_steps"] == [0] * 8
    assert s.lane["robot_collisions"] == [0] * 8
    turns = s.lane["turns"]
    assert all(sum(turns[t][r] for t in turns) >= 1 for r in range(8))  # all went through
    assert min(s.lane["distance_m"]) > 2.0
