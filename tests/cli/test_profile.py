"""``dmxshm profile``: the profile of a run saved with ``--profile --json``."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from dmxshm.cli import EXIT_USAGE, cli
from tests.cli.common import CLI_TIMEOUT_S

pytestmark = pytest.mark.timeout(CLI_TIMEOUT_S)


def test_a_profiled_run_is_shown_again_from_its_json(tmp_path) -> None:  # noqa: ANN001
    path = tmp_path / "run.json"
    runner = CliRunner()
    ran = runner.invoke(cli, ["run", "--steps", "10", "--camera", "0x0", "--profile",
                              "--profile-interval", "0.1", "--json", str(path)])
    assert ran.exit_code == 0, ran.output
    roles = [p["role"] for p in json.loads(path.read_text())["processes"]]
    assert {"engine", "renderer-0", "agent-0"} <= set(roles)
    shown = runner.invoke(cli, ["profile", str(path)])
    assert shown.exit_code == 0, shown.output
    rows = shown.output[shown.output.index("process"):].splitlines()[1:1 + len(roles)]
    assert [row.split()[0] for row in rows] == roles


def test_a_file_without_a_profile_is_refused_with_the_fix(tmp_path) -> None:  # noqa: ANN001
    path = tmp_path / "plain.json"
    path.write_text(json.dumps({"steps": 5}))
    result = CliRunner().invoke(cli, ["profile", str(path)])
    assert result.exit_code == EXIT_USAGE and "--profile --json" in result.output
