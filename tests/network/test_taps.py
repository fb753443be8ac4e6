"""Taps: added to a run from outside, without touching a role, and called at their
declared points only (dmxshm.network.taps)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from dmxshm.network import Network, NetworkConfig
from dmxshm.network.taps import Tap, Taps
from dmxshm.shm.names import list_entries
from tests.taps import CountStates

RUN_TIMEOUT_S = 120


@pytest.mark.timeout(RUN_TIMEOUT_S)
@pytest.mark.parametrize("robots,agents", [(1, 1), (3, 2)])
def test_a_tap_added_from_outside_sees_every_published_state_once(robots: int,
                                                                  agents: int) -> None:
    cfg = NetworkConfig(robots=robots, agents=agents, camera=(0, 0), steps=25,
                        wait_timeout_s=5.0)
    with Network(cfg, taps=[CountStates()]) as net:
        summary = net.run()
    counted = summary.taps["count"]
    # Once per step for every robot at once, in order: states 0..24, commands 0..24.
    assert counted["states"] == list(range(25))
    assert counted["commands"] == list(range(25))
    assert counted["ended_at"] == summary.steps == 25
    assert summary.to_dict()["start_hook"] == {"count": counted}
    assert not [e for e in list_entries() if e.pid == os.getpid()]


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_a_plain_run_reports_no_given_taps() -> None:
    with Network(NetworkConfig(camera=(0, 0), steps=5, wait_timeout_s=5.0)) as net:
        summary = net.run()
    assert summary.taps == {}
    assert summary.to_dict()["start_hook"] is None


def test_two_given_taps_of_one_name_are_refused() -> None:
    with pytest.raises(ValueError, match="two taps of one name"):
        Network(NetworkConfig(), taps=[CountStates(), CountStates()])


class _StatesOnly(Tap):
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def state(self, step: int, sim_time_s: float, states: np.ndarray) -> None:
        self.log.append(f"state {step}")

    def close(self) -> None:
        self.log.append("closed states")


class _Broken(Tap):
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def close(self) -> None:
        self.log.append("closed broken")
        raise RuntimeError("cannot close")


def test_only_the_points_a_tap_overrides_are_watched() -> None:
    log: list[str] = []
    taps = Taps([_StatesOnly(log), None])
    assert taps.watched("state") and not taps.watched("samples") and not taps.watched("end")
    taps.state(3, 0.1, np.zeros(1))
    taps.samples(3, 0.1, (0,), np.zeros(1), ("imu",))  # nobody watches: nothing happens
    assert log == ["state 3"]


def test_every_tap_is_closed_last_first_even_when_one_fails() -> None:
    log: list[str] = []
    taps = Taps([_StatesOnly(log), _Broken(log)])
    with pytest.raises(RuntimeError, match="cannot close"):
        taps.close()
    assert log == ["closed broken", "closed states"]


def test_a_role_finds_its_built_in_taps_by_type() -> None:
    taps = Taps([_StatesOnly([])])
    assert isinstance(taps.get(_StatesOnly), _StatesOnly)
    assert taps.find(_Broken) is None
    with pytest.raises(LookupError, match="_Broken"):
        taps.get(_Broken)


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_the_readme_s_tap_example_runs_and_reports(tmp_path) -> None:  # noqa: ANN001
    import subprocess
    import sys
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "count_tap.py"
    out = subprocess.run([sys.executable, str(example)], capture_output=True, text=True,
                         timeout=RUN_TIMEOUT_S, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "200 steps; tap 'fastest': {'states': 200, 'fastest_m_s': " in out.stdout
    assert float(out.stdout.split("'fastest_m_s': ")[1].rstrip("}\n")) > 0  # robots moved
