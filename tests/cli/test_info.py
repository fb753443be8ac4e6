"""``dmxshm info``."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from dmxshm.cli import cli
from tests.cli.common import CLI_TIMEOUT_S

pytestmark = pytest.mark.timeout(CLI_TIMEOUT_S)


def test_info_json_reports_the_machine() -> None:
    result = CliRunner().invoke(cli, ["info", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["cpus_logical"] == os.cpu_count()
    assert 0 < data["shm"]["free_bytes"] <= data["shm"]["total_bytes"]
    assert isinstance(data["realtime_scheduling"]["permitted"], bool)
    assert data["versions"]["numpy"]


def test_info_text() -> None:
    result = CliRunner().invoke(cli, ["info"])
    assert result.exit_code == 0
    assert "/dev/shm" in result.output and "real-time scheduling" in result.output
