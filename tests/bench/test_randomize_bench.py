"""``dmxshm bench randomize`` measures what it says (not how fast: that is the benchmark's)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from dmxshm.cli import cli

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]


def test_each_case_is_measured_both_ways_and_written(tmp_path) -> None:
    out = tmp_path / "r.json"
    got = CliRunner().invoke(cli, [
        "bench", "randomize", "--num-envs", "2", "--camera", "16x16", "--seconds", "0.2",
        "--repeats", "1", "--resets", "1", "--robots", "2", "--steps", "20",
        "--network-camera", "32x24", "--json", str(out)])
    assert got.exit_code == 0, got.output
    data = json.loads(out.read_text())
    assert [c["obs"] for c in data["cases"]] == ["state", "camera", "network"]
    for case in data["cases"]:
        assert len(case["on"]) == len(case["off"]) == 1 and min(case["on"] + case["off"]) > 0
        assert case["reset_on_s"] and case["reset_off_s"]
    assert "network" in got.output and data["network_camera"] == [32, 24]
