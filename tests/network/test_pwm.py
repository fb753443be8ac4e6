"""``--action pwm``: commands in duty cycles, through the Duckiebot's motor model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dmxshm.cli import EXIT_USAGE, cli
from tests import procs
from tests.networks import runner

pytestmark = pytest.mark.timeout(120)
CLIENTS = str(Path(__file__).parents[1] / "slot_clients.py")
# Duckietown's constants, written out (not read from dmxshm): the motor constant
# (rad/s at duty 1) and the wheel radius (m) of kinematics_node.py's defaults.
K, RADIUS_M = 27.0, 0.0318


run = runner(mode="gym", robots=2, steps=150, camera=(0, 0), wait_timeout_s=20.0)


def test_built_in_agents_drive_in_pwm_as_in_wheel_speed() -> None:
    rad = run()
    ideal = run(action="pwm", motor_dynamics=False)
    assert ideal.rejected_commands == [0, 0]
    # The same policy, converted by its agent and back by the engine: the same drive
    # to within rounding (not bit-identical: omega / 27 * 27 is not always omega).
    assert ideal.lane["distance_m"] == pytest.approx(rad.lane["distance_m"], rel=1e-3)
    assert ideal.lane["off_road_steps"] == [0, 0]
    assert ideal.motor["lag_s"] == 0.0 and rad.motor == {}
    # With the motors' lag the wheels come up to speed later: a little less distance,
    # still on the road.
    pwm = run(action="pwm")
    assert pwm.motor["lag_s"] == 0.1 and pwm.motor["dead_band"] == 0.05
    assert pwm.lane["off_road_steps"] == [0, 0]
    for lagged, at_once in zip(pwm.lane["distance_m"], rad.lane["distance_m"], strict=True):
        assert 0.9 * at_once < lagged < at_once


def test_an_outside_agents_duties_move_the_robot_as_the_motor_model_says() -> None:
    steps = 90
    proc = subprocess.Popen([sys.executable, CLIENTS, "pwm", "pwm-slot", "30"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    procs.started_pids.add(proc.pid)
    summary = run(robots=1, agents=0, external_agents=1, action="pwm", name="pwm-slot",
                  steps=steps, connect_timeout_s=30.0)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "action pwm 1.0" in out
    # Duty 0.3 on both wheels for every step but one (1.5: rejected, a stop).
    assert summary.rejected_commands == [1]
    assert "PWM duty" in summary.first_rejections[0]
    expected_m = 0.3 * K * RADIUS_M * (steps - 1) / 30.0
    assert summary.lane["distance_m"][0] == pytest.approx(expected_m, rel=0.10)


def test_pwm_with_the_spine_is_refused_before_start() -> None:
    result = CliRunner().invoke(cli, ["run", "--action", "pwm", "--spine", "--mode", "realtime",
                                      "--duration", "1"])
    assert result.exit_code == EXIT_USAGE
    assert "--action pwm with --spine is not supported" in result.output
