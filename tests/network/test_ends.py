"""Every way a run can end reports as truthfully as a normal end: Ctrl-C in
realtime keeps its drops, a spine stopped by a signal sends its stops, a hung
agent fails the run by name, a stopped gym run's rates are those of its steps."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from dmxshm.cli import cli
from dmxshm.network import (
    ConfigError,
    Network,
    NetworkConfig,
    NetworkError,
    NoCommandsError,
    SpineStoppedError,
)
from dmxshm.network.config import DEFAULT_SENSOR_RATES_HZ
from tests.network.test_network import no_entries_of, signal_after, steps_published
from tests.taps import HangTheEngine

RUN_TIMEOUT_S = 120
# How long a run gets to start and make the steps a test waits for.
START_S = 60.0


def ctrl_c_after(args: list[str], steps: int, json_path: Path) -> tuple[int, str, str, dict]:
    """``dmxshm run ARGS --json PATH`` in a session of its own, Ctrl-C'd (SIGINT to the
    whole process group, as a terminal sends it) once its engine published ``steps``
    states; returns the exit code, stdout, stderr and the JSON it wrote."""
    proc = subprocess.Popen([sys.executable, "-m", "dmxshm.cli", "run", *args, "--json",
                             str(json_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + START_S
        while steps_published(proc.pid) < steps:  # it is stepping: stop it now
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=RUN_TIMEOUT_S / 2)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert no_entries_of(proc.pid)
    assert json_path.exists(), f"exit {proc.returncode}; no JSON written:\n{err[-3000:]}"
    return proc.returncode, out, err, json.loads(json_path.read_text())


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_a_ctrl_c_realtime_run_keeps_its_command_drops(tmp_path: Path) -> None:
    # One agent for 3 robots answers every observation: three sensors on grids of
    # nearly 100 Hz make ~300 a second, and the engine takes the newest command
    # 240 times a second (a Bullet step each): the rest are dropped.
    code, out, err, data = ctrl_c_after(
        ["--mode", "realtime", "--robots", "3", "--duration", "60", "--camera", "0x0",
         "--rates", "encoders=99,tof=98"], steps=480, json_path=tmp_path / "run.json")
    assert code == 130, err[-2000:]
    assert data["interrupted"] and data["steps"] >= 479
    assert data["drops"]["commands"] > 0, data["drops"]
    assert "drops: commands 0," not in out
    assert len(data["final_poses"]) == 3 and max(data["lane"]["distance_m"]) > 0


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_ctrl_c_during_a_spine_run_sends_the_shutdown_stops(tmp_path: Path) -> None:
    code, out, err, data = ctrl_c_after(
        ["--mode", "realtime", "--spine", "--robots", "2", "--duration", "60",
         "--camera", "0x0"], steps=30, json_path=tmp_path / "run.json")
    assert code == 130, err[-2000:]
    spine = data["spine"]
    assert spine, "the stopped spine reported nothing"
    timing = spine["timing"]
    # Stopped by the signal: its records end with the SHUTDOWN cycles, stops.
    assert timing["stopped_by"] == "SIGINT"
    assert timing["states"]["SHUTDOWN"] == 5 and timing["states"]["ACT"] > 0
    assert spine["cycles"] == timing["records"] < 60_000
    # The law from the configuration alone, and the measured minus it.
    assert math.isfinite(timing["predicted"]["send_minus_obs_us"])
    assert math.isfinite(timing["minus_predicted_us"]["send_minus_obs_us"]["p50"])
    assert "SHUTDOWN cycles sent stops" in out and "INTERRUPTED" in out


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_a_hung_realtime_agent_fails_the_run_naming_it(capfd: pytest.CaptureFixture) -> None:
    cfg = NetworkConfig(mode="realtime", robots=2, agents=2, duration_s=1.0, camera=(0, 0),
                        agent="tests.agents:NeverAnswers", wait_timeout_s=5.0)
    with Network(cfg) as net, pytest.raises(NoCommandsError) as info:
        net.run()
    err = capfd.readouterr().err
    summary = info.value.summary
    assert summary.unfinished == ["agent-0", "agent-1"]
    assert info.value.robots == [0, 1] and summary.received_commands == [0, 0]
    assert "agent-0" in str(info.value) and "never received a command" in str(info.value)
    assert "agent-0 did not finish" in err and "agent-1 did not finish" in err
    assert no_entries_of(os.getpid())


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_a_hung_realtime_engine_fails_the_run_naming_it() -> None:
    # Realtime: nobody waits for the engine, so no wait times out on it; the
    # supervisor sees its published states stop (before: the run went on for ever).
    cfg = NetworkConfig(mode="realtime", robots=1, duration_s=600.0, camera=(0, 0),
                        wait_timeout_s=1.0)
    with Network(cfg, taps=[HangTheEngine()]) as net, \
            pytest.raises(NetworkError) as info:
        net.run()
    assert info.value.role == "engine"
    assert "published no state for 1 s" in str(info.value)
    assert no_entries_of(os.getpid())


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_a_run_with_a_hung_agent_exits_1_after_its_summary() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "dmxshm.cli", "run", "--mode", "realtime", "--duration", "1",
         "--camera", "0x0", "--agent", "tests.agents:NeverAnswers"],
        capture_output=True, text=True, timeout=RUN_TIMEOUT_S / 2)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "UNFINISHED: agent-0" in proc.stdout
    assert "never received a command" in proc.stderr


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_a_stopped_gym_run_reports_the_rates_of_its_steps() -> None:
    cfg = NetworkConfig(robots=1, steps=10**6, camera=(0, 0), wait_timeout_s=5.0)

    def ctrl_c(step: int) -> None:
        if step >= 20:
            raise KeyboardInterrupt

    with Network(cfg) as net, pytest.raises(KeyboardInterrupt) as info:
        net.run(on_progress=ctrl_c)
    summary = info.value.summary  # type: ignore[attr-defined]
    assert summary.interrupted and summary.steps >= 19
    # In gym mode a sensor reads once a step: 1 / dt_s at most, whatever the stop.
    for name, rate in summary.sensors.items():
        assert rate.achieved_hz <= rate.configured_hz * (1 + 1e-9), name


def test_a_partial_sensor_rates_dict_keeps_the_other_defaults() -> None:
    cfg = NetworkConfig(mode="realtime", sensor_rates_hz={"imu": 200.0})
    assert cfg.sensor_rates_hz == {**DEFAULT_SENSOR_RATES_HZ, "imu": 200.0}
    with pytest.raises(ConfigError, match="unknown sensor 'lidar'"):
        NetworkConfig(mode="realtime", sensor_rates_hz={"lidar": 10.0})
    with pytest.raises(ConfigError, match="above 0"):
        NetworkConfig(mode="realtime", sensor_rates_hz={"imu": float("nan")})


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_a_realtime_run_with_one_sensor_rate_given_runs() -> None:
    cfg = NetworkConfig(mode="realtime", robots=1, duration_s=0.5, camera=(0, 0),
                        sensor_rates_hz={"imu": 200.0}, wait_timeout_s=5.0)
    with Network(cfg) as net:
        summary = net.run()
    assert summary.sensors["imu"].configured_hz == 200.0
    assert summary.sensors["tof"].configured_hz == DEFAULT_SENSOR_RATES_HZ["tof"]
    assert summary.received_commands[0] > 0


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_a_spine_stopped_from_outside_sends_its_stops_and_fails_the_run() -> None:
    cfg = NetworkConfig(mode="realtime", robots=1, duration_s=60.0, spine=True, camera=(0, 0),
                        wait_timeout_s=5.0)
    net = Network(cfg)
    net.start()
    try:
        # Not the run's own stop: a fault.
        pid, progress = signal_after(net, "spine", signal.SIGTERM)
        with pytest.raises(SpineStoppedError) as info:
            net.run(progress)
    finally:
        net.close()
    message = str(info.value)
    assert message.startswith(f"spine (pid {pid}) was stopped by SIGTERM")
    timing = info.value.summary.to_dict()["spine"]["timing"]
    assert timing["stopped_by"] == "SIGTERM" and timing["states"]["SHUTDOWN"] == 5
    assert not info.value.summary.interrupted
    assert no_entries_of(os.getpid())


@pytest.mark.parametrize("args", [["--spine-reply-at", "0.0003"],
                                  ["--mode", "realtime", "--spine-reply-at", "0.0003"]],
                         ids=["gym", "realtime without --spine"])
def test_spine_reply_at_without_a_network_spine_is_refused(args: list[str]) -> None:
    done = CliRunner().invoke(cli, ["run", *args])  # refused before a process starts
    assert done.exit_code == 2 and "--spine-reply-at" in done.stderr
