"""Domain randomisation in a network (``--randomize``): each robot's draw, keyed by
(seed, robot, parameter), reaches the engine's physics and motors, every renderer's
sensing and the summary, whatever the process split; a log replays with it."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from dmxshm.cli import cli
from dmxshm.network import ConfigError, Network, NetworkConfig
from dmxshm.world import randomize as rand
from tests.networks import runner

RUN_TIMEOUT_S = 120
EXIT_USAGE = 2


run = runner(robots=3, steps=25, camera=(32, 24), agent="random", seed=5,
             wait_timeout_s=10.0, action="pwm", randomize=True)


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_every_process_split_draws_and_applies_the_same() -> None:
    one = run(renderers=1, agents=1)
    split = run(renderers=3, agents=2)
    assert one.digests == split.digests
    assert one.randomization["robots"] == NetworkConfig(
        robots=3, seed=5, action="pwm", randomize=True).robot_params
    nominal = run(randomize=None)
    # Every stream changes: the robots' physics and motors (states, so commands of
    # agents that look), every sensor's noise scale, every camera's pose and colours;
    # but a time of flight with nothing in range, which reads 8.0 m either way.
    same = {k for k in one.digests if one.digests[k] == nominal.digests[k]}
    assert same <= {f"robot{r:02d}/tof" for r in range(3)}, same
    assert nominal.randomization == {}


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_a_robots_draw_is_its_own_whatever_the_robot_count() -> None:
    three = NetworkConfig(robots=3, seed=9, randomize=True, action="pwm").robot_params
    five = NetworkConfig(robots=5, seed=9, randomize=True, action="pwm").robot_params
    assert three is not None and five is not None and three == five[:3]
    assert len({p["friction"] for p in five}) == 5
    other = NetworkConfig(robots=3, seed=10, randomize=True, action="pwm").robot_params
    assert other is not None and other[0] != three[0]


def test_the_motors_parameters_need_pwm() -> None:
    # wheel speeds: the defaults leave the motor out, a config naming it is refused
    cfg = NetworkConfig(randomize=True)
    assert cfg.randomize is not None and not set(rand.named(cfg.randomize)) & set(
        rand.MOTOR_PARAMETERS)
    assert cfg.motor_models == cfg.motor
    with pytest.raises(ConfigError, match="--action pwm"):
        NetworkConfig(randomize={"physics": {"motor_trim": [-0.1, 0.1]}})
    pwm = NetworkConfig(robots=2, action="pwm",
                        randomize={"physics": {"motor_trim": [-0.1, 0.1]}})
    models = pwm.motor_models
    assert isinstance(models, list) and models[0].trim != models[1].trim
    assert all(m.gain == 1.0 and m.lag_s == 0.1 for m in models)
    ideal = NetworkConfig(robots=2, action="pwm", motor_dynamics=False,
                          randomize={"physics": {"motor_lag_s": [0.2, 0.3]}})
    assert all(m.lag_s == 0.0 for m in ideal.motor_models)  # type: ignore[union-attr]


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_the_drawn_friction_and_wheels_change_how_far_a_robot_drives() -> None:
    # Two robots, the same duties: one with its wheels 20% larger goes further.
    cfg = {"robots": 2, "steps": 40, "camera": (0, 0), "agent": "tests.agents:forward",
           "action": "wheel-speed"}
    base = run(**cfg, randomize=None)
    big = run(**cfg, randomize={"physics": {"wheel_radius": [1.2, 1.2]}})
    for r in range(2):
        d0 = np.hypot(*np.subtract(base.final_poses[r][:2], _start(r, 5)))
        d1 = np.hypot(*np.subtract(big.final_poses[r][:2], _start(r, 5)))
        assert d1 == pytest.approx(1.2 * d0, rel=0.05)


def _start(robot: int, seed: int) -> list[float]:
    from dmxshm.world.world import World

    with World("loop", 2, seed=seed) as w:
        return list(w.start_poses[robot][:2])


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_a_randomised_realtime_log_replays_sample_for_sample(tmp_path) -> None:
    pytest.importorskip("mcap")
    from dmxshm.network.replay import replay

    path = str(tmp_path / "rt.mcap")
    with Network(NetworkConfig(mode="realtime", robots=2, duration_s=1.0, agent="random",
                               camera=(24, 16), log=path, action="pwm", randomize=True,
                               wait_timeout_s=10.0)) as net:
        s = net.run()
    result = replay(path)
    assert result.equal and result.digest_equal
    assert result.replayed.trajectory_digest == s.trajectory_digest  # type: ignore[union-attr]
    # As a gym network: the logged wheel speeds (motors included) on the same physics.
    again = replay(path, log=str(tmp_path / "again.mcap"))
    assert again.equal and again.replayed.final_poses == s.final_poses


def test_the_cli_refuses_a_bad_config_before_anything_starts(tmp_path) -> None:
    runner = CliRunner()
    motor = tmp_path / "motor.yaml"
    motor.write_text("physics:\n  motor_gain: [0.5, 0.6]\n")
    typo = tmp_path / "typo.json"
    typo.write_text(json.dumps({"physics": {"frction": [0.5, 0.6]}}))
    for args, said in (([str(motor)], "--action pwm"), ([str(typo)], "unknown physics"),
                       ([str(tmp_path / "none.yaml")], "cannot read")):
        got = runner.invoke(cli, ["run", "--steps", "2", "--randomize", *args])
        assert got.exit_code == EXIT_USAGE and said in got.output, got.output
