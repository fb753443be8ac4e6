"""``dmxshm spine``: the typed report printed, and written as the frozen JSON."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from dmxshm.cli import cli
from tests.cli.common import CLI_TIMEOUT_S
from tests.test_json_schema import SPINE_REPORT, mismatches

pytestmark = pytest.mark.timeout(CLI_TIMEOUT_S)


def test_spine_prints_its_report_and_writes_the_frozen_json(tmp_path) -> None:  # noqa: ANN001
    out = tmp_path / "spine.json"
    result = CliRunner().invoke(cli, ["spine", "--duration", "0.2", "--agent", "forward",
                                      "--profile", "--json", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert mismatches(data, SPINE_REPORT) == []
    assert [p["role"] for p in data["processes"]] == ["supervisor", "can-bus", "spine",
                                                      "spine-agent"]
    # What it printed is what it wrote.
    text = result.stdout
    assert text.startswith(f"schedule after-action, 1000 Hz, spine on CPU {data['cpu']} "
                           f"({data['scheduling']}), CAN bus on CPU {data['bus_cpu']}\n")
    assert f"cycles {data['cycles']} (acting {data['acting_cycles']})" in text
    assert (f"agent: {data['agent']['actions']} actions, "
            f"{data['agent']['expired_actions']} expired") in text
    assert "states: " + ", ".join(f"{k} {v}" for k, v in data["states"].items()) in text
    assert "shared memory of the run" in text  # --profile's table
